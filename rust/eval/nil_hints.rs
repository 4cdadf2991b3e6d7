//! Errors that say where a value came from: a nil from a missing key or input, an undefined name.

use super::*;

/// Warnings a run keeps at most (one per missing `data/` name).
const MAX_WARNINGS: usize = 16;

#[cold]
pub(super) fn undefined_user(name: &str, pos: Pos) -> Flow {
    Error::new(
        ErrorKind::UndefinedVariable,
        format!("user/{name} is not defined"),
    )
    .at(pos)
    .into()
}

/// Gives an error of `kind` the hint `explain` finds, if it finds one.
pub(super) fn with_hint_if(
    r: EvalResult,
    kind: ErrorKind,
    explain: impl FnOnce(&Error) -> Option<String>,
) -> EvalResult {
    r.map_err(|mut flow| {
        if let Some(e) = flow.error_mut() {
            if e.kind == kind {
                if let Some(h) = explain(e) {
                    e.hint = Some(h);
                }
            }
        }
        flow
    })
}

/// A short printed form of a key, for hints.
pub(super) fn printed(v: &Value) -> String {
    crate::format::mention(v)
}

/// The text of a keyword or string map key.
pub(super) fn key_text(k: &Value) -> Option<&str> {
    match k {
        Value::Keyword(s) | Value::Str(s) => Some(s),
        _ => None,
    }
}

impl<'a> Interp<'a> {
    pub(super) fn undefined(&self, g: &GlobalRef) -> Error {
        let mut candidates: Vec<String> = Vec::new();
        candidates.extend(g.locals.iter().map(|s| s.to_string()));
        candidates.extend(self.user.keys().map(|s| s.to_string()));
        // interop names (java.util.Date., Double/NaN, ...) only add noise to suggestions
        candidates.extend(
            crate::builtins::names()
                .filter(|n| {
                    !n.contains('/')
                        && !n.contains('.')
                        && !n.chars().all(|c| c.is_ascii_uppercase() || c == '_')
                })
                .map(str::to_string),
        );
        candidates.extend(
            self.host
                .tool_names()
                .into_iter()
                .map(|t| format!("tool/{t}")),
        );
        if let Value::Map(m) = self.data {
            for k in m.keys() {
                if let Value::Keyword(s) | Value::Str(s) = k {
                    candidates.push(format!("data/{s}"));
                }
            }
        }
        let mut e = Error::new(
            ErrorKind::UndefinedVariable,
            format!("{} is not defined", g.name),
        )
        .at(g.pos);
        if let Some(h) = hints::undefined_hint(&g.name, &candidates) {
            e = e.with_hint(h);
        }
        e
    }

    /// A builtin that got nil where it needed a value: says where the nil came from when an
    /// argument is a lookup that can be re-read without evaluating anything (a key missing from a
    /// local map or from the input data, a `data/` name that does not exist), with the nearest
    /// existing keys. Costs nothing unless such an error happened.
    #[cold]
    pub(super) fn explain_nil<'n>(
        &self,
        r: EvalResult,
        args: impl IntoIterator<Item = &'n Node>,
        ctx: &Ctx,
    ) -> EvalResult {
        with_hint_if(r, ErrorKind::Type, |e| {
            (e.hint.is_none() && e.message.ends_with("got nil"))
                .then(|| args.into_iter().find_map(|a| self.nil_source(a, ctx)))
                .flatten()
        })
    }

    /// Calling nil: a `data/` name that is a tool, or any lookup whose nil can be explained.
    #[cold]
    pub(super) fn explain_nil_call(&self, r: EvalResult, callee: &Node, ctx: &Ctx) -> EvalResult {
        with_hint_if(r, ErrorKind::NotCallable, |_| {
            match callee {
            Node::DataRef(name) if self.host.has_tool(name) => Some(format!(
                "data/{name} is input data, and there is none by that name; {name} is a tool: (tool/{name} ...)"
            )),
            _ => self.nil_source(callee, ctx),
        }
        })
    }

    /// Why `data/{name}` is nil (it is not in the input), with the nearest input names.
    #[cold]
    pub(super) fn no_such_input(&self, name: &str) -> String {
        let inputs: Vec<String> = match self.data {
            Value::Map(m) => m
                .keys()
                .filter_map(key_text)
                .map(|k| format!("data/{k}"))
                .collect(),
            _ => Vec::new(),
        };
        let near =
            crate::hints::closest(&format!("data/{name}"), inputs.iter().map(String::as_str));
        match near {
            Some(n) => format!("data/{name} is nil: there is no such input; did you mean {n}?"),
            None if inputs.is_empty() => format!("data/{name} is nil: this run has no input data"),
            None => format!(
                "data/{name} is nil: there is no such input; inputs: {}",
                inputs
                    .iter()
                    .take(8)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Notes a `data/` name read that is not in the input (nil by the language's rule) as a
    /// warning for the host, once per name and at most `MAX_WARNINGS` in all.
    #[cold]
    pub(super) fn missing_data(&mut self, name: &str) {
        if self.warnings.len() >= MAX_WARNINGS {
            return;
        }
        let text = self.no_such_input(name);
        if !self.warnings.contains(&text) {
            self.warnings.push(text);
        }
    }

    /// Why `node` is nil, if it is a lookup whose source can be read again.
    pub(super) fn nil_source(&self, node: &Node, ctx: &Ctx) -> Option<String> {
        let (key, src, shown) = match node {
            Node::DataRef(name) => {
                if self.data_get(name).is_some() {
                    return None;
                }
                return Some(self.no_such_input(name));
            }
            Node::KwGet(k, a, _) if a.len() == 1 => (k, &a[0], format!("({} ...)", printed(k))),
            Node::CallBuiltin(b, a, _) if b.name == "get" && a.len() == 2 => match &a[1] {
                Node::Const(k) => (k, &a[0], format!("(get ... {})", printed(k))),
                _ => return None,
            },
            _ => return None,
        };
        // `(:k m)` reads a local in place; any other call has moved a last-use local out
        let in_place = matches!(node, Node::KwGet(..));
        let m = match src {
            Node::Local(slot) => self.stack.get(ctx.base + *slot as usize),
            Node::MoveLocal(slot) if in_place => self.stack.get(ctx.base + *slot as usize),
            Node::Capture(i) => ctx.caps.get(*i as usize),
            Node::DataRef(name) => match self.data_get(name) {
                Some(v) => Some(v),
                None => return self.nil_source(src, ctx), // the input itself is missing
            },
            Node::Const(v) => Some(v),
            _ => None,
        };
        let Some(m) = m else {
            return self.key_in_data(key, &shown);
        };
        let Value::Map(map) = m else {
            return match m {
                Value::Nil => Some(format!("{shown} is nil: the map it reads is itself nil")),
                _ => None,
            };
        };
        if let Some(v) = flex_get(map, key) {
            if !matches!(v, Value::Nil) {
                return None; // not the nil
            }
            return Some(format!(
                "{shown} is nil: the key is there and holds nil; give a default with (get m k default) or (or x default)"
            ));
        }
        let keys: Vec<String> = map
            .keys()
            .filter_map(key_text)
            .map(|k| format!(":{k}"))
            .collect();
        let wanted = printed(key);
        let near = crate::hints::closest(&wanted, keys.iter().map(String::as_str));
        let listed = keys.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
        Some(match near {
            Some(n) => format!(
                "{shown} is nil: the map has no key {wanted}; did you mean {n}? Its keys: {listed}"
            ),
            None => format!("{shown} is nil: the map has no key {wanted}; its keys: {listed}"),
        })
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
