//! Which tools a program can call, from where, with what and how often (issue 31, `plan`),
//! found without running it. The answer is sound: every call a run makes is covered.
//!
//! PTC-Lisp has no `eval`, and functions come only from the program (or from an earlier turn's
//! program, kept in the session): input data and tool results never hold one. So a tool can be
//! called only (1) where a call `(tool/x ...)` or `(x ...)` is written, or (2) by calling a value
//! that a written `tool/x` (or bare `x`) put into the program. Each place is a *site*.
//!
//! How often a site can run is counted by *units*: the top level runs once; every function
//! value (a `fn`, a `defn`, a let-bound function, a tool value) is a unit whose count is the sum,
//! over the places that call it, of how often each place runs times how often it calls it (once
//! for `(f x)`, `n` for `(map f coll)` when `coll` has at most `n` elements). A function that
//! escapes (stored in a map, returned, passed to one of the program's own functions) or recurses
//! has no count: its sites get no bound, but are still listed.
//!
//! Why one file: the walk, the lengths it reads, the names it follows and the counting of units
//! are one analysis over one state (`Walker`); split, each part would reach into the others'.

use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Pos;
use crate::eval::Definition;
use crate::ir::{CaptureSrc, Lambda, Node, Pattern, Program};
use crate::limits::Limits;
use crate::session::SessionState;
use crate::sites::{arg_with, Arg};
use crate::value::{Closure, Native, Str, Value};

/// The most calls, when known.
pub type Bound = Option<u64>;

/// What the plan is computed against.
pub struct Known<'a> {
    /// Whether a name is a tool (a bare name resolves to one when nothing is defined by it).
    pub is_tool: &'a (dyn Fn(&str) -> bool + Sync),
    /// The inputs' element counts by name (None: the input is not known; a name absent from a
    /// known map is nil). Counts of a vector, map, set or string; None for a scalar.
    pub data: Option<&'a HashMap<String, Option<u64>>>,
    /// Definitions from earlier turns.
    pub user: Option<&'a indexmap::IndexMap<Str, Definition, ahash::RandomState>>,
    /// `*1`, `*2`, `*3`.
    pub history: &'a [Value],
}

/// One place a tool can be called from.
#[derive(Debug, Clone)]
pub struct PlannedSite {
    pub tool: Str,
    /// The written arguments; None for a tool used as a value (even their number is unknown).
    pub args: Option<Vec<Arg>>,
    /// Where it is written (0:0 for a tool value kept from an earlier turn).
    pub pos: Pos,
    pub conditional: bool,
    pub bound: Bound,
    /// The earlier turn's definition (or `*1`..) whose body holds the site.
    pub via: Option<Str>,
}

#[derive(Debug, Default)]
pub struct Plan {
    pub sites: Vec<PlannedSite>,
    /// Some value could hold a tool the walk did not look into (a session value too large to walk).
    pub any_tool: bool,
}

/// Builtins whose value depends on their arguments alone and takes no function: a call of one
/// on known arguments gives a known argument.
const PURE: &[&str] = &[
    "str",
    "inc",
    "dec",
    "+",
    "-",
    "*",
    "/",
    "mod",
    "rem",
    "abs",
    "max",
    "min",
    "round",
    "floor",
    "ceil",
    "int",
    "double",
    "vector",
    "vec",
    "get",
    "get-in",
    "first",
    "second",
    "last",
    "nth",
    "rest",
    "count",
    "upper-case",
    "lower-case",
    "upcase",
    "downcase",
    "trim",
    "subs",
    "join",
    "split",
    "replace",
    "concat",
    "conj",
    "assoc",
    "assoc-in",
    "dissoc",
    "merge",
    "select-keys",
    "keys",
    "vals",
    "take",
    "drop",
    "reverse",
    "distinct",
    "into",
    "not",
    "=",
    "not=",
    "parse-long",
    "parse-double",
    "starts-with?",
    "ends-with?",
    "includes?",
    "set",
    "union",
    "intersection",
    "difference",
    "zip",
    "interleave",
    "interpose",
    "flatten",
    "contains?",
    "empty?",
    "nil?",
    "some?",
    "range",
];

/// The longest text of a builtin call worked out for an argument.
const FOLD_TEXT: usize = 4096;

/// Whether a value is plain data written the same way it reads back (what a program's
/// literals are): nil, booleans, integers, finite floats, strings, keywords and collections
/// of them.
fn literal(v: &Value) -> bool {
    crate::guard::deeper(|| match v {
        Value::Nil | Value::Bool(_) | Value::Int(_) | Value::Str(_) | Value::Keyword(_) => true,
        Value::Float(x) => x.is_finite(),
        Value::Vector(items) => items.iter().all(literal),
        Value::Set(items) => items.iter().all(literal),
        Value::Map(m) => m.iter().all(|(k, x)| literal(k) && literal(x)),
        _ => false,
    })
}

/// Values of earlier turns walked before the plan gives up and says `any_tool`.
const VALUE_BUDGET: usize = 5_000_000;

type UnitId = usize;
const TOP: UnitId = 0;
/// Called from places the walk cannot count: no bound, maybe not at all.
const ESCAPE: UnitId = 1;

/// A place that calls a unit: which unit it is in, how many calls per run of that unit, and
/// whether it surely calls it when that unit runs.
#[derive(Clone, Copy, Debug)]
struct Use {
    unit: UnitId,
    rel: Bound,
    sure: bool,
}

const ESCAPED: Use = Use {
    unit: ESCAPE,
    rel: None,
    sure: false,
};

/// Where a node is evaluated: its unit, how often per run of the unit, whether surely.
#[derive(Clone, Debug)]
struct Ctx {
    unit: UnitId,
    rel: Bound,
    sure: bool,
    via: Option<Str>,
}

/// At most `max` elements, at least `min`.
#[derive(Clone, Copy, Debug)]
struct Len {
    max: u64,
    min: u64,
}

fn exact(n: u64) -> Option<Len> {
    Some(Len { max: n, min: n })
}

/// A let-bound value or a capture, as far as the walk follows it.
#[derive(Clone)]
enum Held {
    /// Calls of it are counted into this unit.
    Fn(UnitId, Option<Len>),
    /// A value from an earlier turn, captured by a closure of that turn.
    Value(Value),
    /// A value of known length that is not followed as a function.
    Len(Option<Len>),
}

#[derive(Default)]
struct Frame {
    slots: HashMap<u32, Held>,
    caps: Vec<Option<Held>>,
}

struct RawSite {
    tool: Str,
    args: Option<Vec<Arg>>,
    pos: Pos,
    unit: UnitId,
    rel: Bound,
    sure: bool,
    via: Option<Str>,
}

struct Walker<'a> {
    known: &'a Known<'a>,
    /// `(def name value)` forms written at the top level: name -> (statement index, value).
    top_defs: HashMap<Str, Vec<(usize, &'a Node)>>,
    /// The top-level statement being walked when it is a `def` (taken by that `def`).
    top_def: Option<usize>,
    /// How many `def`s of each name the program holds, function bodies included.
    def_counts: HashMap<Str, usize>,
    /// Names defined inside earlier turns' functions (None: too much to look through).
    session_def_names: Option<Option<std::collections::HashSet<Str>>>,
    /// The top-level statement being walked.
    top_index: usize,
    callers: Vec<Vec<Use>>,
    sites: Vec<RawSite>,
    frames: Vec<Frame>,
    /// Function definitions of this program by name: the unit of each `(defn name ...)`.
    defs: HashMap<Str, Vec<(UnitId, Option<usize>)>>,
    /// Every use of a name defined (or maybe defined) by the user, resolved after the walk.
    name_uses: Vec<(Str, Use, Option<usize>)>,
    /// Units of earlier turns' definitions by name, walked when first named.
    session_units: HashMap<Str, Vec<UnitId>>,
    /// Closures of earlier turns already walked, by address.
    closures: HashMap<usize, UnitId>,
    value_steps: usize,
    any_tool: bool,
}

fn mul(a: Bound, b: Bound) -> Bound {
    match (a, b) {
        (Some(0), _) | (_, Some(0)) => Some(0),
        (Some(x), Some(y)) => Some(x.saturating_mul(y)),
        _ => None,
    }
}

fn add(a: Bound, b: Bound) -> Bound {
    Some(a?.saturating_add(b?))
}

/// The elements of an input the way a loop over it counts them (characters of a string, at
/// most; 0 for nil); None for a scalar.
pub fn count(v: &Value) -> Option<u64> {
    value_len(v).map(|l| l.max)
}

fn value_len(v: &Value) -> Option<Len> {
    match v {
        Value::Nil => exact(0),
        Value::Str(s) => {
            let n = s.chars().count() as u64;
            Some(Len {
                max: n,
                min: n.min(1),
            })
        }
        other => other.coll_len().and_then(|n| exact(n as u64)),
    }
}

/// The arguments of a builtin that it calls as functions, and how many times per call of the
/// builtin (from the length of its collection argument): `(index, calls, sure)`.
fn called_args(name: &str, lens: &[Option<Len>]) -> Vec<(usize, Bound, bool)> {
    let n = lens.len();
    let last = |i: usize| lens.get(i).copied().flatten();
    let each = |l: Option<Len>| (l.map(|l| l.max), l.is_some_and(|l| l.min >= 1));
    match name {
        "map" | "mapv" if n >= 2 => {
            let colls = &lens[1..];
            let max = colls.iter().filter_map(|l| l.map(|l| l.max)).min();
            let sure = colls.iter().all(|l| l.is_some_and(|l| l.min >= 1));
            vec![(0, max, sure)]
        }
        "pmap" | "map-indexed" | "filter" | "remove" | "find" | "some" | "every?" | "not-any?"
        | "take-while" | "drop-while" | "group-by" | "sum-by" | "avg-by" | "min-by" | "max-by"
        | "distinct-by" | "pluck"
            if n == 2 =>
        {
            let (b, s) = each(last(1));
            vec![(0, b, s)]
        }
        // `(reduce f coll)` starts from the first element: one call fewer
        "reduce" if n == 2 => {
            let l = last(1);
            vec![(
                0,
                l.map(|l| l.max.saturating_sub(1)),
                l.is_some_and(|l| l.min >= 2),
            )]
        }
        "reduce" if n == 3 => {
            let (b, s) = each(last(2));
            vec![(0, b, s)]
        }
        // a comparator may be asked about each pair more than once
        "sort" if n == 2 => vec![(0, None, false)],
        "sort-by" if n == 2 => {
            let (b, s) = each(last(1));
            vec![(0, b, s)]
        }
        "sort-by" if n == 3 => {
            let (b, s) = each(last(2));
            vec![(0, b, s), (1, None, false)]
        }
        "update-vals" if n == 2 => {
            let (b, s) = each(last(0));
            vec![(1, b, s)]
        }
        "update" | "update-in" if n >= 3 => vec![(2, Some(1), true)],
        "apply" if n >= 2 => vec![(0, Some(1), true)],
        "max-key" | "min-key" if n >= 2 => vec![(0, Some(n as u64 - 1), true)],
        "pcalls" => (0..n).map(|i| (i, Some(1), true)).collect(),
        _ => Vec::new(),
    }
}

/// Builtins that build a function from functions: each is called at most once per call of
/// the result (`all-of` and the like may stop early).
fn wraps(name: &str) -> Option<(usize, bool)> {
    match name {
        "juxt" => Some((usize::MAX, true)),
        "fnil" => Some((1, true)),
        "all-of" | "any-of" | "none-of" => Some((usize::MAX, false)),
        _ => None,
    }
}

/// Whether `node` holds a `recur` back to the innermost enclosing `loop` or `fn` (one inside
/// a nested `loop` or `fn` goes back to that one).
fn has_recur(node: &Node) -> bool {
    crate::guard::deeper(|| match node {
        Node::Recur(_) | Node::RecurTo(..) => true,
        Node::Loop(l) => l.bindings.iter().any(|(_, init)| has_recur(init)),
        Node::MakeFn(..) => false,
        other => {
            let mut found = false;
            other.for_each_child(|c| found = found || has_recur(c));
            found
        }
    })
}

/// Counts the `def`s of each name in `node`, function bodies included.
fn count_defs(node: &Node, counts: &mut HashMap<Str, usize>) {
    crate::guard::deeper(|| match node {
        Node::Def(d) => {
            *counts.entry(d.name.clone()).or_default() += 1;
            count_defs(&d.value, counts);
        }
        Node::MakeFn(lambda, _) => count_defs(&lambda.body, counts),
        other => other.for_each_child(|c| count_defs(c, counts)),
    })
}

/// The names defined by functions of earlier turns (which this run may call): their values
/// and `*1..*3`, closures captured by them included. None when there is too much to look at.
fn session_defined(known: &Known) -> Option<std::collections::HashSet<Str>> {
    let mut counts = HashMap::new();
    let mut stack: Vec<Value> = known.history.to_vec();
    if let Some(user) = known.user {
        stack.extend(user.values().map(|d| d.value.clone()));
    }
    let mut seen = std::collections::HashSet::new();
    let mut steps = 0usize;
    while let Some(v) = stack.pop() {
        steps += 1;
        if steps > VALUE_BUDGET {
            return None;
        }
        match v {
            Value::Closure(c) if seen.insert(Arc::as_ptr(&c) as usize) => {
                if let Some(l) = c.lambda() {
                    count_defs(&l.body, &mut counts);
                }
                stack.extend(c.captures.iter().cloned());
            }
            Value::Native(n) => match &*n {
                Native::Juxt(fs) | Native::AllOf(fs) | Native::AnyOf(fs) | Native::NoneOf(fs) => {
                    stack.extend(fs.iter().cloned())
                }
                Native::Fnil(f, _) => stack.push(f.clone()),
                Native::Where { .. } => {}
            },
            Value::Vector(items) => stack.extend(items.iter().cloned()),
            Value::Set(items) => stack.extend(items.iter().cloned()),
            Value::Map(m) => stack.extend(m.iter().flat_map(|(k, v)| [k.clone(), v.clone()])),
            _ => {}
        }
    }
    Some(counts.into_keys().collect())
}

/// Whether `node` may stop the run (`return`, `fail`) outside a function it makes.
fn has_stop(node: &Node) -> bool {
    crate::guard::deeper(|| match node {
        Node::Return(_) | Node::Fail(_) => true,
        Node::MakeFn(..) => false,
        other => {
            let mut found = false;
            other.for_each_child(|c| found = found || has_stop(c));
            found
        }
    })
}

impl<'a> Walker<'a> {
    fn new(known: &'a Known<'a>) -> Self {
        Walker {
            known,
            top_defs: HashMap::new(),
            top_def: None,
            def_counts: HashMap::new(),
            session_def_names: None,
            top_index: 0,
            callers: vec![Vec::new(), Vec::new()],
            sites: Vec::new(),
            frames: vec![Frame::default()],
            defs: HashMap::new(),
            name_uses: Vec::new(),
            session_units: HashMap::new(),
            closures: HashMap::new(),
            value_steps: 0,
            any_tool: false,
        }
    }

    fn unit(&mut self, caller: Use) -> UnitId {
        self.callers.push(vec![caller]);
        self.callers.len() - 1
    }

    fn frame(&mut self) -> &mut Frame {
        // pushes and pops pair up; an empty stack gets a frame rather than a panic
        if self.frames.is_empty() {
            self.frames.push(Frame::default());
        }
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    /// Forgets what was known of the slots a pattern binds (a slot is reused once its scope ends).
    fn unbind(&mut self, pat: &Pattern) {
        match pat {
            Pattern::Bind(s) => {
                self.frame().slots.remove(s);
            }
            Pattern::Vector { items, rest, .. } => {
                for p in items {
                    self.unbind(p);
                }
                if let Some(r) = rest {
                    self.unbind(r);
                }
            }
            Pattern::Map {
                entries, as_slot, ..
            } => {
                for e in entries {
                    self.unbind(&e.pattern);
                }
                if let Some(s) = as_slot {
                    self.frame().slots.remove(s);
                }
            }
        }
    }

    fn held(&self, node: &Node) -> Option<Held> {
        let f = self.frames.last()?;
        match node {
            Node::Local(s) | Node::MoveLocal(s) => f.slots.get(s).cloned(),
            Node::Capture(i) => f.caps.get(*i as usize).cloned().flatten(),
            _ => None,
        }
    }

    fn site(&mut self, tool: &Str, args: Option<Vec<Arg>>, pos: Pos, at: Use, via: &Option<Str>) {
        self.sites.push(RawSite {
            tool: tool.clone(),
            args,
            pos,
            unit: at.unit,
            rel: at.rel,
            sure: at.sure,
            via: via.clone(),
        });
    }

    fn here(ctx: &Ctx) -> Use {
        Use {
            unit: ctx.unit,
            rel: ctx.rel,
            sure: ctx.sure,
        }
    }

    /// Whether every `def` of `name` that this run can make is a statement of the program's
    /// top level (none in a function, of this program or of an earlier turn): then a statement
    /// reads the value of the last such `def` before it, or, when there is none, what the name
    /// meant before the run.
    fn pinned(&mut self, name: &str) -> bool {
        let top = self.top_defs.get(name).map_or(0, Vec::len);
        if self.def_counts.get(name).copied().unwrap_or(0) != top {
            return false;
        }
        let names = self
            .session_def_names
            .get_or_insert_with(|| session_defined(self.known));
        names.as_ref().is_some_and(|n| !n.contains(name))
    }

    /// The top-level statement whose `def` of `name` a top-level read in `ctx` sees, when the
    /// name is pinned: `Some(None)` when no `def` ran yet. None when not known.
    fn seen_def(&mut self, name: &str, ctx: &Ctx) -> Option<Option<(usize, &'a Node)>> {
        if !self.pinned(name) {
            return None;
        }
        let Some(defs) = self.top_defs.get(name) else {
            return Some(None); // never defined in this run: anywhere, what it meant before
        };
        if ctx.unit != TOP || ctx.via.is_some() {
            return None;
        }
        let at = self.top_index;
        Some(defs.iter().rev().find(|(i, _)| *i < at).copied())
    }

    /// The value a bare name surely has where `ctx` reads it: a `def` at the top level that
    /// ran before this statement, when the name is pinned. None when that is not sure.
    fn stable(&mut self, name: &str, ctx: &Ctx) -> Option<&'a Node> {
        self.seen_def(name, ctx).flatten().map(|(_, value)| value)
    }

    /// Whether a bare name can be the tool of that name when it is read: None when it cannot
    /// (not a tool, or defined by an earlier turn: a definition comes first), else whether
    /// surely (nothing this run can call defines it first).
    fn bare_tool(&mut self, name: &str, ctx: &Ctx) -> Option<bool> {
        if !(self.known.is_tool)(name) || self.known.user.is_some_and(|u| u.contains_key(name)) {
            return None;
        }
        match self.seen_def(name, ctx) {
            Some(Some(_)) => None, // a `def` before this statement comes first
            Some(None) => Some(true),
            None => {
                let names = self
                    .session_def_names
                    .get_or_insert_with(|| session_defined(self.known));
                let defined = self.def_counts.contains_key(name)
                    || names.as_ref().map_or(true, |n| n.contains(name));
                Some(!defined)
            }
        }
    }

    fn top_of(&self, ctx: &Ctx) -> Option<usize> {
        (ctx.unit == TOP && ctx.via.is_none()).then_some(self.top_index)
    }

    /// An argument as far as the source shows it, with names whose values are known and
    /// calls of pure builtins on known values worked out (`(str "order-" 7)`).
    fn arg_of(&mut self, node: &Node, ctx: &Ctx) -> Arg {
        arg_with(node, &mut |n| match n {
            Node::Local(_) | Node::MoveLocal(_) | Node::Capture(_) => match self.held(n)? {
                Held::Value(v) => Some(Arg::Known(v)),
                _ => None,
            },
            Node::Global(g) => {
                let value = self.stable(&g.name, ctx)?;
                // a value written at the top level sees no locals: nothing stale is read
                Some(self.arg_of(value, ctx))
            }
            Node::CallBuiltin(b, args, _) if PURE.contains(&b.name) => self.fold(b.name, args, ctx),
            Node::Compare(b, xy, _) => self.fold(b.name, &[&xy.0, &xy.1], ctx),
            _ => None,
        })
    }

    /// A pure builtin's value on known arguments, worked out by running the call in a
    /// throwaway run with small limits (no tools, no data): None when an argument is not known
    /// or the call fails.
    fn fold<N: std::borrow::Borrow<Node>>(
        &mut self,
        name: &str,
        args: &[N],
        ctx: &Ctx,
    ) -> Option<Arg> {
        let mut text = format!("({name}");
        for a in args {
            let Arg::Known(v) = self.arg_of(a.borrow(), ctx) else {
                return None;
            };
            if !literal(&v) {
                return None;
            }
            let (shown, cut) = crate::format::to_clojure(&v, None, None);
            if cut || text.len() + shown.len() > FOLD_TEXT {
                return None;
            }
            text.push(' ');
            text.push_str(&shown);
        }
        text.push(')');
        let limits = Limits {
            fuel: 10_000,
            timeout_ms: 100,
            max_collection_size: 10_000,
            max_string_size: FOLD_TEXT * 4,
            max_memory: 4 << 20,
            ..Limits::default()
        };
        let state = SessionState::new(Value::empty_map());
        let (r, _) = crate::session::run_source(&text, &state, &crate::NoTools, &limits);
        match (r.error, r.outcome) {
            (None, crate::session::Outcome::Value) if literal(&r.value) => {
                Some(Arg::Known(r.value))
            }
            _ => None,
        }
    }

    fn len_of(&mut self, node: &Node, ctx: &Ctx) -> Option<Len> {
        match node {
            Node::Const(v) => value_len(v),
            Node::VecLit(items) => exact(items.len() as u64),
            Node::SetLit(items) => Some(Len {
                max: items.len() as u64,
                min: (items.len() as u64).min(1),
            }),
            Node::MapLit(pairs, ..) => Some(Len {
                max: pairs.len() as u64,
                min: (pairs.len() as u64).min(1),
            }),
            Node::DataRef(name) => {
                let data = self.known.data?;
                match data.get(&**name) {
                    Some(n) => n.map(|n| Len { max: n, min: n }),
                    None => exact(0),
                }
            }
            // a bare name may be defined by a function this run calls before it is read (in
            // this program or an earlier one): only `data/x` is surely the input, and a name
            // defined once, at the top level, is surely its value after that statement
            Node::Global(g) => match self.seen_def(&g.name, ctx)? {
                Some((_, value)) => self.len_of(value, ctx),
                // what the name meant before the run: a definition, a tool, or the input
                None => match self.known.user.and_then(|u| u.get(&g.name)) {
                    Some(d) => value_len(&d.value),
                    None if (self.known.is_tool)(&g.name) => None,
                    None => match self.known.data?.get(&*g.name) {
                        Some(n) => n.map(|n| Len { max: n, min: n }),
                        None => exact(0),
                    },
                },
            },
            Node::Local(_) | Node::MoveLocal(_) | Node::Capture(_) => match self.held(node)? {
                Held::Fn(_, l) | Held::Len(l) => l,
                Held::Value(v) => value_len(&v),
            },
            Node::CallBuiltin(b, args, _) => self.builtin_len(b.name, args, ctx),
            Node::Stages(st) => self.builtin_len(st.builtin.name, &st.args, ctx),
            _ => None,
        }
    }

    fn builtin_len(&mut self, name: &str, args: &[Node], ctx: &Ctx) -> Option<Len> {
        let lens: Vec<Option<Len>> = args.iter().map(|a| self.len_of(a, ctx)).collect();
        let of = |i: usize| lens.get(i).copied().flatten();
        let int = |i: usize| match args.get(i) {
            Some(Node::Const(Value::Int(n))) => Some(*n),
            _ => None,
        };
        let shrink = |l: Option<Len>| l.map(|l| Len { max: l.max, min: 0 });
        match (name, args.len()) {
            ("range", 1..=3) => {
                let (start, end, step) = match args.len() {
                    1 => (0, int(0)?, 1),
                    2 => (int(0)?, int(1)?, 1),
                    _ => (int(0)?, int(1)?, int(2)?),
                };
                let span = end as i128 - start as i128;
                let n = if step != 0 && (span > 0) == (step > 0) && span != 0 {
                    let s = step.unsigned_abs() as i128;
                    ((span.abs() + s - 1) / s) as u64
                } else {
                    0
                };
                exact(n)
            }
            ("take", 2) => {
                let n = int(0)?.max(0) as u64;
                match of(1) {
                    Some(l) => Some(Len {
                        max: l.max.min(n),
                        min: l.min.min(n),
                    }),
                    None => Some(Len { max: n, min: 0 }),
                }
            }
            ("drop", 2) => {
                let n = int(0)?.max(0) as u64;
                of(1).map(|l| Len {
                    max: l.max.saturating_sub(n),
                    min: l.min.saturating_sub(n),
                })
            }
            ("rest" | "next", 1) => of(0).map(|l| Len {
                max: l.max.saturating_sub(1),
                min: l.min.saturating_sub(1),
            }),
            ("map" | "mapv", n) if n >= 2 => {
                let lens: Vec<Option<Len>> = (1..n).map(of).collect();
                if lens.iter().all(|l| l.is_some()) {
                    let max = lens.iter().flatten().map(|l| l.max).min()?;
                    let min = lens.iter().flatten().map(|l| l.min).min()?;
                    Some(Len { max, min })
                } else {
                    lens.iter()
                        .flatten()
                        .map(|l| l.max)
                        .min()
                        .map(|max| Len { max, min: 0 })
                }
            }
            ("pmap" | "map-indexed" | "sort-by", 2) => of(1),
            ("sort", 2) => of(1),
            ("sort-by", 3) => of(2),
            ("sort" | "reverse" | "vec" | "seq" | "keys" | "vals" | "entries", 1) => of(0),
            ("filter" | "remove" | "take-while" | "drop-while" | "distinct-by", 2) => shrink(of(1)),
            ("distinct" | "set" | "frequencies", 1) => of(0).map(|l| Len {
                max: l.max,
                min: l.min.min(1),
            }),
            ("group-by", 2) => of(1).map(|l| Len {
                max: l.max,
                min: l.min.min(1),
            }),
            ("concat", _) => {
                let mut max = 0u64;
                let mut min = 0u64;
                for i in 0..args.len() {
                    let l = of(i)?;
                    max = max.saturating_add(l.max);
                    min = min.saturating_add(l.min);
                }
                Some(Len { max, min })
            }
            ("conj", n) if n >= 1 => of(0).map(|l| Len {
                max: l.max.saturating_add(n as u64 - 1),
                min: l.min,
            }),
            ("into", 2) => {
                let (a, b) = (of(0)?, of(1)?);
                Some(Len {
                    max: a.max.saturating_add(b.max),
                    min: a.min,
                })
            }
            _ => None,
        }
    }

    // ---- the walk ----

    /// Evaluated for its value: a function it makes escapes.
    fn walk(&mut self, node: &Node, ctx: &Ctx) {
        crate::guard::deeper(|| self.walk_inner(node, ctx))
    }

    fn walk_inner(&mut self, node: &Node, ctx: &Ctx) {
        match node {
            Node::CallTool(name, args, pos) => {
                for a in args.iter() {
                    self.walk(a, ctx);
                }
                let written = args.iter().map(|a| self.arg_of(a, ctx)).collect();
                self.site(name, Some(written), *pos, Self::here(ctx), &ctx.via);
            }
            Node::ToolFn(..)
            | Node::MakeFn(..)
            | Node::Global(_)
            | Node::UserRef(..)
            | Node::History(_)
            | Node::Local(_)
            | Node::MoveLocal(_)
            | Node::Capture(_) => self.call_fn(node, ctx, ESCAPED),
            Node::CallGlobal(g, args) => {
                for a in args.iter() {
                    self.walk(a, ctx);
                }
                let top = self.top_of(ctx);
                self.name_uses.push((g.name.clone(), Self::here(ctx), top));
                if let Some(sure) = self.bare_tool(&g.name, ctx) {
                    let written = args.iter().map(|a| self.arg_of(a, ctx)).collect();
                    let at = Use {
                        sure: ctx.sure && sure,
                        ..Self::here(ctx)
                    };
                    self.site(&g.name, Some(written), g.pos, at, &ctx.via);
                }
            }
            Node::Call(c) => {
                for a in c.args.iter() {
                    self.walk(a, ctx);
                }
                self.call_fn(&c.f, ctx, Self::here(ctx));
            }
            // the function `juxt`/`fnil`/... build escapes: what they wrap is called as often
            Node::CallBuiltin(b, ..) if wraps(b.name).is_some() => self.call_fn(node, ctx, ESCAPED),
            Node::CallBuiltin(b, args, _) => self.builtin(b.name, args, ctx),
            Node::Stages(st) => self.builtin(st.builtin.name, &st.args, ctx),
            Node::If(b) => {
                self.walk(&b.0, ctx);
                let branch = Ctx {
                    sure: false,
                    ..ctx.clone()
                };
                self.walk(&b.1, &branch);
                self.walk(&b.2, &branch);
            }
            Node::And(items) | Node::Or(items) => {
                for (i, item) in items.iter().enumerate() {
                    let c = Ctx {
                        sure: ctx.sure && i == 0,
                        ..ctx.clone()
                    };
                    self.walk(item, &c);
                }
            }
            Node::Do(items) => self.sequence(items, ctx),
            Node::Let(l) => self.let_form(&l.bindings, &l.body, ctx, None),
            Node::Loop(l) => {
                for (pat, init) in l.bindings.iter() {
                    self.walk(init, ctx);
                    self.unbind(pat);
                }
                self.looping(&l.body, ctx);
            }
            Node::Doseq(d) => {
                let mut inner = ctx.clone();
                for (pat, coll) in d.bindings.iter() {
                    self.walk(coll, &inner);
                    self.unbind(pat);
                    let l = self.len_of(coll, &inner);
                    inner.rel = mul(inner.rel, l.map(|l| l.max));
                    inner.sure = inner.sure && l.is_some_and(|l| l.min >= 1);
                }
                self.walk(&d.body, &inner);
            }
            Node::Def(d) => {
                let top = self.top_def.take();
                // a function (or tool) defined by name is counted by the calls of that name
                if matches!(
                    d.value,
                    Node::MakeFn(..) | Node::ToolFn(..) | Node::Global(_)
                ) {
                    self.callers.push(Vec::new());
                    let u = self.callers.len() - 1;
                    self.defs.entry(d.name.clone()).or_default().push((u, top));
                    let at = Use {
                        unit: u,
                        rel: Some(1),
                        sure: true,
                    };
                    self.call_fn(&d.value, ctx, at);
                } else {
                    self.walk(&d.value, ctx);
                }
            }
            _ => node.for_each_child(|c| self.walk(c, ctx)),
        }
    }

    /// Forms evaluated one after another: once one may stop the run (`return`, `fail`), the
    /// ones after it may not run.
    pub(crate) fn sequence(&mut self, items: &[Node], ctx: &Ctx) {
        let mut c = ctx.clone();
        for item in items {
            self.walk(item, &c);
            if c.sure && has_stop(item) {
                c.sure = false;
            }
        }
    }

    /// The body of a `loop` (or of a `fn` that `recur`s) entered once in `ctx`: what runs on
    /// every pass has no bound; a branch in tail position without `recur` ends the loop, so it
    /// runs at most once per entry.
    fn looping(&mut self, body: &Node, ctx: &Ctx) {
        let again = Ctx {
            rel: None,
            ..ctx.clone()
        };
        let last = Ctx {
            sure: false,
            ..ctx.clone()
        };
        self.tail(body, &again, &last);
    }

    fn tail(&mut self, node: &Node, again: &Ctx, last: &Ctx) {
        crate::guard::deeper(|| {
            if !has_recur(node) {
                return self.walk(node, last);
            }
            match node {
                Node::If(b) => {
                    self.walk(&b.0, again);
                    let branch = Ctx {
                        sure: false,
                        ..again.clone()
                    };
                    self.tail(&b.1, &branch, last);
                    self.tail(&b.2, &branch, last);
                }
                Node::Do(items) | Node::And(items) | Node::Or(items) if !items.is_empty() => {
                    // after the first operand of `and`/`or`, the others may not run
                    let maybe = Ctx {
                        sure: again.sure && matches!(node, Node::Do(_)),
                        ..again.clone()
                    };
                    let n = items.len() - 1;
                    for (i, item) in items[..n].iter().enumerate() {
                        self.walk(item, if i == 0 { again } else { &maybe });
                    }
                    self.tail(&items[n], if n == 0 { again } else { &maybe }, last);
                }
                Node::Let(l) => self.let_form(&l.bindings, &l.body, again, Some(last)),
                _ => self.walk(node, again),
            }
        })
    }

    fn builtin(&mut self, name: &str, args: &[Node], ctx: &Ctx) {
        let lens: Vec<Option<Len>> = args.iter().map(|a| self.len_of(a, ctx)).collect();
        let called = called_args(name, &lens);
        for (i, a) in args.iter().enumerate() {
            match called.iter().find(|(j, ..)| *j == i) {
                Some(&(_, calls, sure)) => {
                    let u = Use {
                        unit: ctx.unit,
                        rel: mul(ctx.rel, calls),
                        sure: ctx.sure && sure,
                    };
                    self.call_fn(a, ctx, u);
                }
                None => self.walk(a, ctx),
            }
        }
    }

    /// `node` is evaluated in `ctx` and the value called as `caller` says (ESCAPED: an
    /// unknown number of times, from anywhere).
    fn call_fn(&mut self, node: &Node, ctx: &Ctx, caller: Use) {
        match node {
            Node::MakeFn(lambda, caps) => {
                let u = self.unit(caller);
                self.lambda(lambda, caps, u, &ctx.via);
            }
            Node::ToolFn(name, pos) => self.site(name, None, *pos, caller, &ctx.via),
            Node::Global(g) => {
                let top = self.top_of(ctx);
                self.name_uses.push((g.name.clone(), caller, top));
                if let Some(sure) = self.bare_tool(&g.name, ctx) {
                    let at = Use {
                        sure: caller.sure && sure,
                        ..caller
                    };
                    self.site(&g.name, None, g.pos, at, &ctx.via);
                }
            }
            Node::UserRef(name, _) => {
                let top = self.top_of(ctx);
                self.name_uses.push((name.clone(), caller, top));
            }
            Node::History(i) => {
                if let Some(v) = self.known.history.get(i - 1) {
                    let via = Some(Str::from(format!("*{i}")));
                    self.value_fn(&v.clone(), caller, &via);
                }
            }
            Node::Local(_) | Node::MoveLocal(_) | Node::Capture(_) => match self.held(node) {
                Some(Held::Fn(u, _)) => self.callers[u].push(caller),
                Some(Held::Value(v)) => self.value_fn(&v, caller, &ctx.via),
                // a parameter or a value that is not a function of this program: whatever
                // function it holds was counted as escaping where it was made
                _ => {}
            },
            Node::If(b) => {
                self.walk(&b.0, ctx);
                let branch = Use {
                    sure: false,
                    ..caller
                };
                let c = Ctx {
                    sure: false,
                    ..ctx.clone()
                };
                self.call_fn(&b.1, &c, branch);
                self.call_fn(&b.2, &c, branch);
            }
            Node::CallBuiltin(b, args, _) if wraps(b.name).is_some() => {
                let (from, sure) = wraps(b.name).unwrap_or((0, false));
                for (i, a) in args.iter().enumerate() {
                    if from == usize::MAX || i < from {
                        let u = Use {
                            sure: caller.sure && sure,
                            ..caller
                        };
                        self.call_fn(a, ctx, u);
                    } else {
                        self.walk(a, ctx);
                    }
                }
            }
            other => self.walk(other, ctx),
        }
    }

    /// Walks a function's body as unit `u`, in a frame of its own.
    fn lambda(&mut self, lambda: &Arc<Lambda>, caps: &[CaptureSrc], u: UnitId, via: &Option<Str>) {
        let parent = self.frames.last();
        let held: Vec<Option<Held>> = caps
            .iter()
            .map(|c| match c {
                CaptureSrc::Local(s) => parent.and_then(|f| f.slots.get(s).cloned()),
                CaptureSrc::Capture(i) => {
                    parent.and_then(|f| f.caps.get(*i as usize).cloned().flatten())
                }
            })
            .collect();
        self.frames.push(Frame {
            slots: HashMap::new(),
            caps: held,
        });
        let ctx = Ctx {
            unit: u,
            rel: Some(1),
            sure: true,
            via: via.clone(),
        };
        self.body(&lambda.body, &ctx);
        self.frames.pop();
    }

    /// A function's body, run once per call unless it `recur`s.
    fn body(&mut self, body: &Node, ctx: &Ctx) {
        if has_recur(body) {
            self.looping(body, ctx);
        } else {
            self.walk(body, ctx);
        }
    }

    /// A `let`; `last` when it is the tail of a loop's body (see `tail`).
    fn let_form(
        &mut self,
        bindings: &[(Pattern, Node)],
        body: &Node,
        ctx: &Ctx,
        last: Option<&Ctx>,
    ) {
        // a function bound to a plain name is counted by the calls of that name in the body
        let mut later: Vec<(&Node, UnitId)> = Vec::new();
        for (pat, init) in bindings {
            match (pat, init) {
                (Pattern::Bind(s), Node::MakeFn(..) | Node::ToolFn(..) | Node::Global(_)) => {
                    self.callers.push(Vec::new());
                    let u = self.callers.len() - 1;
                    let len = self.len_of(init, ctx);
                    self.frame().slots.insert(*s, Held::Fn(u, len));
                    later.push((init, u));
                }
                (Pattern::Bind(s), _) => {
                    self.walk(init, ctx);
                    let h = match self.held(init) {
                        Some(h) => h,
                        None => match self.arg_of(init, ctx) {
                            Arg::Known(v) => Held::Value(v),
                            _ => Held::Len(self.len_of(init, ctx)),
                        },
                    };
                    self.frame().slots.insert(*s, h);
                }
                (pat, _) => {
                    self.walk(init, ctx);
                    self.unbind(pat);
                }
            }
        }
        match last {
            Some(last) => self.tail(body, ctx, last),
            None => self.walk(body, ctx),
        }
        for (init, u) in later {
            let caller = Use {
                unit: u,
                rel: Some(1),
                sure: true,
            };
            self.call_fn(init, ctx, caller);
        }
    }

    // ---- values of earlier turns ----

    /// A value of an earlier turn called as `caller` says: the tools it can reach.
    fn value_fn(&mut self, v: &Value, caller: Use, via: &Option<Str>) {
        self.value_steps += 1;
        if self.value_steps > VALUE_BUDGET {
            self.any_tool = true;
            return;
        }
        match v {
            Value::Tool(name) => self.site(name, None, Pos { line: 0, col: 0 }, caller, via),
            Value::Closure(c) => self.closure(c, caller, via),
            Value::Native(n) => match &**n {
                Native::Juxt(fs) => {
                    for f in fs {
                        self.value_fn(f, caller, via);
                    }
                }
                Native::AllOf(fs) | Native::AnyOf(fs) | Native::NoneOf(fs) => {
                    let c = Use {
                        sure: false,
                        ..caller
                    };
                    for f in fs {
                        self.value_fn(f, c, via);
                    }
                }
                Native::Fnil(f, _) => self.value_fn(f, caller, via),
                Native::Where { .. } => {}
            },
            Value::Vector(items) => {
                for x in items.iter() {
                    self.value_fn(x, ESCAPED, via);
                    if self.any_tool {
                        return;
                    }
                }
            }
            Value::Set(items) => {
                for x in items.iter() {
                    self.value_fn(x, ESCAPED, via);
                    if self.any_tool {
                        return;
                    }
                }
            }
            Value::Map(m) => {
                for (k, x) in m.iter() {
                    self.value_fn(k, ESCAPED, via);
                    self.value_fn(x, ESCAPED, via);
                    if self.any_tool {
                        return;
                    }
                }
            }
            _ => {}
        }
    }

    fn closure(&mut self, c: &Arc<Closure>, caller: Use, via: &Option<Str>) {
        let key = Arc::as_ptr(c) as usize;
        if let Some(&u) = self.closures.get(&key) {
            self.callers[u].push(caller);
            return;
        }
        let u = self.unit(caller);
        self.closures.insert(key, u);
        let caps = c
            .captures
            .iter()
            .map(|v| Some(Held::Value(v.clone())))
            .collect();
        self.frames.push(Frame {
            slots: HashMap::new(),
            caps,
        });
        let ctx = Ctx {
            unit: u,
            rel: Some(1),
            sure: true,
            via: via.clone(),
        };
        if let Some(l) = c.lambda() {
            crate::guard::deeper(|| self.body(&l.body, &ctx));
        }
        self.frames.pop();
    }

    /// Earlier turns' definitions named by the program (and by those definitions), walked once.
    fn session_defs(&mut self) {
        let Some(user) = self.known.user else { return };
        let mut i = 0;
        while i < self.name_uses.len() {
            let name = self.name_uses[i].0.clone();
            i += 1;
            if self.session_units.contains_key(&name) {
                continue;
            }
            self.session_units.insert(name.clone(), Vec::new());
            let Some(def) = user.get(&name) else { continue };
            let via = Some(name.clone());
            // one unit stands for the definition; its callers are the name's uses
            self.callers.push(Vec::new());
            let u = self.callers.len() - 1;
            self.session_units.insert(name.clone(), vec![u]);
            let value = def.value.clone();
            let at = Use {
                unit: u,
                rel: Some(1),
                sure: true,
            };
            // a top frame for the value's walk: it has no locals of this program
            self.frames.push(Frame::default());
            self.value_fn(&value, at, &via);
            self.frames.pop();
        }
    }

    fn finish(mut self) -> Plan {
        self.session_defs();
        for (name, at, top) in std::mem::take(&mut self.name_uses) {
            // a top-level statement reading a pinned name sees the last `def` before it, or
            // what the name meant before the run; anywhere else, any of them
            let seen = match top {
                Some(i) if self.pinned(&name) => Some(
                    self.top_defs
                        .get(&name)
                        .and_then(|d| d.iter().rev().find(|(j, _)| *j < i).map(|(j, _)| *j)),
                ),
                _ => None,
            };
            let program = self.defs.get(&name).into_iter().flatten();
            let mut units: Vec<UnitId> = match seen {
                Some(j) => program
                    .filter(|(_, at)| *at == j && j.is_some())
                    .map(|(u, _)| *u)
                    .collect(),
                None => program.map(|(u, _)| *u).collect(),
            };
            if !matches!(seen, Some(Some(_))) {
                units.extend(self.session_units.get(&name).into_iter().flatten().copied());
            }
            for u in units {
                self.callers[u].push(at);
            }
        }
        let n = self.callers.len();
        let mut counts: Vec<Option<(Bound, bool)>> = vec![None; n];
        let mut sites = Vec::with_capacity(self.sites.len());
        for s in std::mem::take(&mut self.sites) {
            let (m, unit_sure) = self.resolve(s.unit, &mut counts);
            let bound = mul(m, s.rel);
            if bound == Some(0) {
                continue; // in a function this run never calls
            }
            sites.push(PlannedSite {
                tool: s.tool,
                args: s.args,
                pos: s.pos,
                conditional: !(unit_sure && s.sure),
                bound,
                via: s.via,
            });
        }
        sites.sort_by_key(|s| (s.via.is_some(), s.pos.line, s.pos.col));
        Plan {
            sites,
            any_tool: self.any_tool,
        }
    }

    /// How often unit `u` runs in one run, and whether surely. Explicit stack: call chains
    /// may be long; a unit met again on its own chain recurses and has no bound.
    fn resolve(&self, u: UnitId, memo: &mut [Option<(Bound, bool)>]) -> (Bound, bool) {
        const ON_STACK: (Bound, bool) = (None, false);
        memo[TOP] = Some((Some(1), true));
        memo[ESCAPE] = Some((None, false));
        if let Some(r) = memo[u] {
            return r;
        }
        let mut stack: Vec<(UnitId, usize)> = vec![(u, 0)];
        let mut in_progress = vec![false; memo.len()];
        in_progress[u] = true;
        while let Some(&(v, i)) = stack.last() {
            if memo[v].is_some() && !in_progress[v] {
                stack.pop();
                continue;
            }
            let callers = &self.callers[v];
            if i < callers.len() {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                let w = callers[i].unit;
                if memo[w].is_none() && !in_progress[w] {
                    in_progress[w] = true;
                    stack.push((w, 0));
                } else if in_progress[w] && memo[w].is_none() {
                    // recursion: every unit on the cycle is unbounded
                    memo[w] = Some(ON_STACK);
                }
                continue;
            }
            let mut total: Bound = Some(0);
            let mut sure = false;
            for c in callers {
                let (m, s) = memo[c.unit].unwrap_or(ON_STACK);
                total = add(total, mul(m, c.rel));
                sure = sure || (s && c.sure);
            }
            if memo[v] == Some(ON_STACK) {
                total = None;
            }
            memo[v] = Some((total, sure));
            in_progress[v] = false;
            stack.pop();
        }
        memo[u].unwrap_or(ON_STACK)
    }
}

/// The plan of a program against what is known of the session that would run it.
pub fn plan(program: &Program, known: &Known) -> Plan {
    let mut w = Walker::new(known);
    let top = Ctx {
        unit: TOP,
        rel: Some(1),
        sure: true,
        via: None,
    };
    for (i, node) in program.body.iter().enumerate() {
        if let Node::Def(d) = node {
            w.top_defs
                .entry(d.name.clone())
                .or_default()
                .push((i, &d.value));
        }
        count_defs(node, &mut w.def_counts);
    }
    let mut ctx = top;
    for (i, node) in program.body.iter().enumerate() {
        w.top_index = i;
        w.top_def = matches!(node, Node::Def(_)).then_some(i);
        w.walk(node, &ctx);
        if ctx.sure && has_stop(node) {
            ctx.sure = false;
        }
    }
    w.finish()
}
