//! Why a nil is nil: a lookup, an item of a sequence, a path or a search, read again after the
//! error without evaluating anything (`nil_hints` decides which node to ask about).

use std::borrow::Cow;

use smallvec::SmallVec;
use unicode_segmentation::UnicodeSegmentation;

use super::nil_hints::{key_text, printed};
use super::{Ctx, Interp};
use crate::ir::{Let, Node, Pattern, Slot};
use crate::value::{flex_get, Value};

/// Nested lookups a hint reads through at most.
const MAX_READ: u8 = 16;

static NIL: Value = Value::Nil;

/// How far a hint may go explaining a node.
#[derive(Clone, Copy)]
pub(super) struct Look {
    /// The node is known to be the nil (so a `find` over items that are not nil found none).
    pub(super) known: bool,
    /// A key no map in the input has may be named when the map cannot be read again.
    pub(super) guess: bool,
    pub(super) depth: u8,
}

impl Look {
    /// For an argument of the call that failed, or the value a local was bound to.
    pub(super) fn top(known: bool) -> Look {
        Look {
            known,
            guess: true,
            depth: 0,
        }
    }

    /// For the node a lookup reads: only what can be read again.
    fn inner(self) -> Look {
        Look {
            known: false,
            guess: false,
            depth: self.depth + 1,
        }
    }
}

/// What a hint reads again: the frame, the locals whose values were moved out since the node
/// was evaluated (they read nil now), and in a `let` being explained, the bindings made before,
/// through which a moved local is read as the value it was bound to.
pub(super) struct Reader<'r, 'c> {
    ctx: &'r Ctx<'c>,
    moved: SmallVec<[Slot; 8]>,
    made: &'r [(Pattern, Node)],
    lets: Option<(&'r Let, usize)>,
}

impl<'r, 'c> Reader<'r, 'c> {
    /// For the arguments of a call.
    pub(super) fn call<'n>(ctx: &'r Ctx<'c>, args: impl IntoIterator<Item = &'n Node>) -> Self {
        Reader {
            ctx,
            moved: moved_slots(args),
            made: &[],
            lets: None,
        }
    }

    /// For the value of binding `j` of `l`, whose bindings up to `done` (and its body, if
    /// `done` is all of them) ran.
    pub(super) fn binding(ctx: &'r Ctx<'c>, l: &'r Let, j: usize, done: usize) -> Self {
        let n = l.bindings.len();
        let after = l.bindings[j..(done + 1).min(n)]
            .iter()
            .map(|(_, init)| init)
            .chain((done >= n).then_some(&l.body));
        Reader {
            ctx,
            moved: moved_slots(after),
            made: &l.bindings[..j],
            lets: Some((l, done)),
        }
    }

    /// The binding among those made before that binds `s` to a plain name.
    pub(super) fn bound(&self, s: Slot) -> Option<usize> {
        bound_in(self.made, s)
    }

    /// Whether local `s`'s value was moved out since (it reads nil, whatever it held).
    pub(super) fn moved(&self, s: Slot) -> bool {
        self.moved.contains(&s)
    }
}

/// The binding that binds `s` to a plain name.
pub(super) fn bound_in(bindings: &[(Pattern, Node)], s: Slot) -> Option<usize> {
    bindings
        .iter()
        .position(|(p, _)| matches!(p, Pattern::Bind(b) if *b == s))
}

/// One lookup, as the builtin makes it.
enum Pick<'p> {
    /// `(:k m)`
    Key(&'p Value),
    /// `(get m k)`
    Get(&'p Value),
    /// `(get-in m path)`
    Path(&'p [Value]),
    /// `(nth xs i)`, `first`, `second`
    Nth(i64),
    Last,
}

impl Pick<'_> {
    /// The value picked from `v`; `None` where the builtin would fail, or it is not worth it.
    fn from<'v>(&self, v: &'v Value) -> Option<Cow<'v, Value>> {
        let found = |x: Option<&'v Value>| Some(Cow::Borrowed(x.unwrap_or(&NIL)));
        match (self, v) {
            (Pick::Key(k) | Pick::Get(k), Value::Map(m)) => found(flex_get(m, k)),
            (Pick::Key(_) | Pick::Get(_), Value::Nil) => found(None),
            (Pick::Get(Value::Int(i)), Value::Vector(xs)) if *i >= 0 => found(xs.get(*i as usize)),
            (Pick::Get(_), Value::Vector(_)) => found(None),
            (Pick::Path(path), _) => {
                let mut cur = v;
                for k in path.iter() {
                    let next = match (cur, k) {
                        (Value::Map(m), _) => flex_get(m, k),
                        (Value::Vector(xs), Value::Int(i)) if *i >= 0 => xs.get(*i as usize),
                        _ => None,
                    };
                    let Some(next) = next else {
                        return found(None);
                    };
                    cur = next;
                }
                found(Some(cur))
            }
            (Pick::Nth(_) | Pick::Last, Value::Nil) => found(None),
            (Pick::Nth(i), _) if *i < 0 => found(None),
            (Pick::Nth(i), Value::Vector(xs)) => found(xs.get(*i as usize)),
            (Pick::Last, Value::Vector(xs)) => found(xs.last()),
            (Pick::Nth(_) | Pick::Last, Value::Str(s)) if s.len() <= 4096 => {
                let mut g = s.graphemes(true);
                let c = match self {
                    Pick::Nth(i) => g.nth(*i as usize),
                    _ => g.next_back(),
                };
                Some(c.map_or(Cow::Borrowed(&NIL), |c| Cow::Owned(Value::str(c))))
            }
            _ => None,
        }
    }
}

/// The node a lookup reads (`m` of `(:k m)`, `xs` of `(first xs)`, `coll` of `(find p coll)`).
pub(super) fn read_of(node: &Node) -> Option<&Node> {
    match node {
        Node::KwGet(_, a, _) if a.len() == 1 => Some(&a[0]),
        Node::CallBuiltin(b, a, _) => match (b.name, &a[..]) {
            ("get" | "get-in" | "nth", [m, Node::Const(_)]) => Some(m),
            ("first" | "second" | "fnext" | "last", [xs]) => Some(xs),
            ("find", [_, coll]) => Some(coll),
            _ => None,
        },
        _ => None,
    }
}

/// The locals whose values `nodes` move out (a last use; `(:k m)` reads `m` in place). Walked
/// with a list, not recursion: a program may nest deeply.
fn moved_slots<'n>(nodes: impl IntoIterator<Item = &'n Node>) -> SmallVec<[Slot; 8]> {
    let mut out = SmallVec::new();
    let mut todo: Vec<&Node> = nodes.into_iter().collect();
    while let Some(n) = todo.pop() {
        match n {
            Node::MoveLocal(s) => {
                if !out.contains(s) {
                    out.push(*s);
                }
            }
            Node::KwGet(_, a, _) if matches!(&a[..], [Node::MoveLocal(_)]) => {}
            _ => n.for_each_child(|c| todo.push(c)),
        }
    }
    out
}

/// "`shown` is nil: `the_map` has no key `key`", with the nearest key and the first keys.
fn no_key(shown: &str, the_map: &str, key: &Value, map: &crate::value::MapData) -> String {
    if map.is_empty() {
        return format!("{shown} is nil: {the_map} is empty");
    }
    let keys: Vec<String> = map
        .keys()
        .take(1000)
        .map(|k| match key_text(k) {
            Some(t) => format!(":{t}"),
            None => printed(k),
        })
        .collect();
    let wanted = printed(key);
    let near = crate::hints::closest(&wanted, keys.iter().map(String::as_str));
    let listed = keys.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    match near {
        Some(n) => {
            format!("{shown} is nil: {the_map} has no key {wanted}; did you mean {n}? Its keys: {listed}")
        }
        None => format!("{shown} is nil: {the_map} has no key {wanted}; its keys: {listed}"),
    }
}

/// "3 items", "1 item".
fn counted(n: usize, unit: &str) -> String {
    match n {
        1 => format!("1 {unit}"),
        _ => format!("{n} {unit}s"),
    }
}

fn items(n: usize) -> String {
    counted(n, "item")
}

impl<'a> Interp<'a> {
    /// Whether local `s` holds nil (and not because its value was moved out).
    pub(super) fn reads_nil(&self, s: Slot, rd: &Reader) -> bool {
        !rd.moved(s) && matches!(self.stack.get(rd.ctx.base + s as usize), Some(Value::Nil))
    }

    /// Why `node` is nil, if it is a lookup whose source can be read again (or, with
    /// `look.guess`, whose key no map in the input has).
    pub(super) fn nil_source(&self, node: &Node, rd: &Reader, look: Look) -> Option<String> {
        if look.depth > MAX_READ {
            return None;
        }
        match node {
            Node::DataRef(name) => {
                if self.data_get(name).is_some() {
                    return None;
                }
                Some(self.no_such_input(name))
            }
            Node::KwGet(k, a, _) if a.len() == 1 => {
                self.missing_key(k, &a[0], &format!("({} ...)", printed(k)), rd, look)
            }
            Node::CallBuiltin(b, a, _) => match (b.name, &a[..]) {
                ("get", [m, Node::Const(k)]) => {
                    let shown = format!("(get ... {})", printed(k));
                    self.missing_key(k, m, &shown, rd, look)
                }
                ("get-in", [m, Node::Const(p @ Value::Vector(path))]) => {
                    let shown = format!("(get-in ... {})", printed(p));
                    self.missing_path(m, path, &shown, rd, look)
                }
                ("first", [xs]) => self.no_item(xs, Some(0), "(first ...)", rd, look),
                ("second" | "fnext", [xs]) => {
                    let shown = format!("({} ...)", b.name);
                    self.no_item(xs, Some(1), &shown, rd, look)
                }
                ("last", [xs]) => self.no_item(xs, None, "(last ...)", rd, look),
                ("nth", [xs, Node::Const(Value::Int(i))]) => {
                    let shown = format!("(nth ... {i})");
                    match usize::try_from(*i) {
                        Ok(i) => self.no_item(xs, Some(i), &shown, rd, look),
                        Err(_) => Some(format!("{shown} is nil: the index is negative")),
                    }
                }
                ("find", [_, coll]) => self.nothing_found(coll, rd, look),
                _ => None,
            },
            _ => None,
        }
    }

    /// `src` is nil itself: why, if that can be told, else that it is.
    fn nil_inside(&self, src: &Node, shown: &str, what: &str, rd: &Reader, look: Look) -> String {
        self.nil_source(src, rd, look.inner())
            .unwrap_or_else(|| format!("{shown} is nil: the {what} it reads is itself nil"))
    }

    /// `(:k m)` or `(get m k)` is nil: the key is missing, holds nil, or `m` is nil.
    fn missing_key(
        &self,
        key: &Value,
        src: &Node,
        shown: &str,
        rd: &Reader,
        look: Look,
    ) -> Option<String> {
        let Some(m) = self.reread(src, rd, look.depth + 1) else {
            // (:k (find p xs)) when every item has k: find found nothing
            if let Node::CallBuiltin(b, a, _) = src {
                if let ("find", [_, coll]) = (b.name, &a[..]) {
                    let every =
                        self.reread(coll, rd, look.depth + 1)
                            .is_some_and(|xs| match &*xs {
                                Value::Vector(items) => items.iter().all(|x| match x {
                                    Value::Map(m) => flex_get(m, key).is_some_and(|v| !v.is_nil()),
                                    _ => false,
                                }),
                                _ => false,
                            });
                    if every {
                        let found = Look {
                            known: true,
                            ..look.inner()
                        };
                        return self.nil_source(src, rd, found);
                    }
                }
            }
            return match self.nil_source(src, rd, look.inner()) {
                Some(h) => Some(h),
                None if look.guess => self.key_in_data(key, shown),
                None => None,
            };
        };
        let map = match &*m {
            Value::Map(map) => map,
            Value::Nil => return Some(self.nil_inside(src, shown, "map", rd, look)),
            _ => return None,
        };
        if let Some(v) = flex_get(map, key) {
            if !matches!(v, Value::Nil) {
                return None; // not the nil
            }
            return Some(format!(
                "{shown} is nil: the key is there and holds nil; give a default with (get m k default) or (or x default)"
            ));
        }
        Some(no_key(shown, "the map", key, map))
    }

    /// `(get-in m path)` is nil: the first step of `path` that finds nothing.
    fn missing_path(
        &self,
        src: &Node,
        path: &[Value],
        shown: &str,
        rd: &Reader,
        look: Look,
    ) -> Option<String> {
        let Some(root) = self.reread(src, rd, look.depth + 1) else {
            return self.nil_source(src, rd, look.inner());
        };
        if matches!(*root, Value::Nil) {
            return Some(self.nil_inside(src, shown, "map", rd, look));
        }
        let at = |i: usize| printed(&Value::vector(path[..i].to_vec()));
        let mut cur: &Value = &root;
        for (i, k) in path.iter().enumerate() {
            let place = |what: &str| match i {
                0 => format!("the {what}"),
                _ => format!("the {what} at {}", at(i)),
            };
            cur = match (cur, k) {
                (Value::Map(m), _) => match flex_get(m, k) {
                    Some(v) => v,
                    None => return Some(no_key(shown, &place("map"), k, m)),
                },
                (Value::Vector(xs), Value::Int(n)) if *n >= 0 => match xs.get(*n as usize) {
                    Some(v) => v,
                    None => {
                        return Some(format!(
                            "{shown} is nil: {} has no index {n}; it has {}",
                            place("vector"),
                            items(xs.len())
                        ))
                    }
                },
                (Value::Nil, _) => {
                    return Some(format!("{shown} is nil: {} is nil", place("value")))
                }
                (other, _) => {
                    return Some(format!(
                        "{shown} is nil: {} is {}, not a map",
                        place("value"),
                        other.describe()
                    ))
                }
            };
        }
        match cur {
            Value::Nil if !path.is_empty() => Some(format!(
                "{shown} is nil: the key is there and holds nil; give a default with (get-in m ks default) or (or x default)"
            )),
            _ => None,
        }
    }

    /// `(first xs)`, `(nth xs i)`, `(last xs)` (`index` none) is nil: `xs` has no such item.
    fn no_item(
        &self,
        src: &Node,
        index: Option<usize>,
        shown: &str,
        rd: &Reader,
        look: Look,
    ) -> Option<String> {
        let Some(xs) = self.reread(src, rd, look.depth + 1) else {
            return self.nil_source(src, rd, look.inner());
        };
        let (len, what, unit) = match &*xs {
            Value::Nil => return Some(self.nil_inside(src, shown, "sequence", rd, look)),
            Value::Vector(items) => (items.len(), "sequence", "item"),
            Value::Str(s) if s.is_empty() => (0, "string", "character"),
            // counting a long string's characters costs more than a hint is worth
            Value::Str(s) if s.len() <= 4096 => (s.graphemes(true).count(), "string", "character"),
            _ => return None,
        };
        if len == 0 {
            return Some(format!("{shown} is nil: the {what} was empty"));
        }
        match index {
            Some(i) if i >= len => Some(format!(
                "{shown} is nil: the {what} has only {}",
                counted(len, unit)
            )),
            _ => None, // the item is there (and is the nil itself, or not the nil)
        }
    }

    /// `(find pred coll)` is nil: `coll` is empty or nil, or (when this call is known to be
    /// the nil) no item satisfied `pred`.
    fn nothing_found(&self, coll: &Node, rd: &Reader, look: Look) -> Option<String> {
        let shown = "(find ...)";
        let none = || format!("{shown} is nil: no item satisfied the predicate");
        let Some(xs) = self.reread(coll, rd, look.depth + 1) else {
            return match self.nil_source(coll, rd, look.inner()) {
                Some(h) => Some(h),
                None => look.known.then(none),
            };
        };
        match &*xs {
            Value::Nil => Some(self.nil_inside(coll, shown, "sequence", rd, look)),
            Value::Vector(items) if items.is_empty() => {
                Some(format!("{shown} is nil: the sequence was empty"))
            }
            Value::Str(s) if s.is_empty() => Some(format!("{shown} is nil: the string was empty")),
            // an item that is nil itself may have been the one found
            Value::Vector(items) if look.known && !items.iter().any(Value::is_nil) => Some(none()),
            Value::Str(_) if look.known => Some(none()),
            _ => None,
        }
    }

    /// What `node` evaluated to, when reading it again evaluates nothing: a constant, a local
    /// whose value was not moved out since, a capture, an input, and the lookups of these
    /// (`(:k m)`, `get` and `get-in` with constant keys, `first`, `second`, `last`, `nth`).
    pub(super) fn reread<'s>(
        &'s self,
        node: &'s Node,
        rd: &Reader<'s, '_>,
        depth: u8,
    ) -> Option<Cow<'s, Value>> {
        if depth > MAX_READ {
            return None;
        }
        let (src, pick) = match node {
            Node::Const(v) => return Some(Cow::Borrowed(v)),
            Node::Local(s) | Node::MoveLocal(s) => {
                if !rd.moved.contains(s) {
                    return self.stack.get(rd.ctx.base + *s as usize).map(Cow::Borrowed);
                }
                // it reads nil now, not what it held: read what it was bound to, if that can be
                let (l, j) = (rd.lets?, rd.bound(*s)?);
                let before = Reader::binding(rd.ctx, l.0, j, l.1);
                return self.reread(&l.0.bindings[j].1, &before, depth + 1);
            }
            Node::Capture(i) => return rd.ctx.caps.get(*i as usize).map(Cow::Borrowed),
            Node::DataRef(name) => return Some(Cow::Borrowed(self.data_get(name).unwrap_or(&NIL))),
            // a bare name that is an input (a definition may have changed since it was read)
            Node::Global(g) if self.user.get(&g.name).is_none() && !self.host.has_tool(&g.name) => {
                return self.data_get(&g.name).map(Cow::Borrowed);
            }
            Node::KwGet(k, a, _) if a.len() == 1 => (&a[0], Pick::Key(k)),
            Node::CallBuiltin(b, a, _) => match (b.name, &a[..]) {
                ("get", [m, Node::Const(k)]) => (m, Pick::Get(k)),
                ("get-in", [m, Node::Const(Value::Vector(p))]) => (m, Pick::Path(p)),
                ("first", [xs]) => (xs, Pick::Nth(0)),
                ("second" | "fnext", [xs]) => (xs, Pick::Nth(1)),
                ("last", [xs]) => (xs, Pick::Last),
                ("nth", [xs, Node::Const(Value::Int(i))]) => (xs, Pick::Nth(*i)),
                _ => return None,
            },
            _ => return None,
        };
        match self.reread(src, rd, depth + 1)? {
            Cow::Borrowed(v) => pick.from(v),
            Cow::Owned(v) => pick.from(&v).map(|x| Cow::Owned(x.into_owned())),
        }
    }

    /// For a lookup whose map cannot be read again: whether the key exists anywhere in the
    /// input data (its top-level maps and the first 100 maps of each top-level vector), and the
    /// nearest key that does.
    pub(super) fn key_in_data(&self, key: &Value, shown: &str) -> Option<String> {
        let Value::Map(data) = self.data else {
            return None;
        };
        let mut keys: Vec<&str> = Vec::new();
        let mut add = |m: &'a crate::value::MapData| {
            for k in m.keys().filter_map(key_text) {
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
        };
        for v in data.values() {
            match v {
                Value::Map(m) => add(m),
                Value::Vector(items) => {
                    for item in items.iter().take(100) {
                        if let Value::Map(m) = item {
                            add(m);
                        }
                    }
                }
                _ => {}
            }
        }
        let wanted = key_text(key)?;
        if keys.contains(&wanted) {
            return None;
        }
        let near = crate::hints::closest(wanted, keys.iter().copied())?;
        Some(format!(
            "{shown} is nil: no map in the input data has the key {}; did you mean :{near}?",
            printed(key)
        ))
    }
}
