//! Bare and namespaced names: locals, builtins, `tool/`, `data/`, dropped prefixes and definitions.

use std::sync::Arc;

use super::short_fn::is_placeholder;
use super::{err_at, Analyzer, SPECIAL_FORMS};
use crate::builtins;
use crate::error::{Error, ErrorKind, Pos, Result};
use crate::ir::{GlobalRef, Node};
use crate::reader::{Form, FormKind};
use crate::value::{BuiltinId, Str, Value};

/// Namespace prefixes that are simply dropped before a builtin lookup (§7.17).
pub(super) const DROPPED_PREFIXES: &[&str] = &[
    "clojure.core",
    "core",
    "clojure.string",
    "str",
    "string",
    "clojure.set",
    "set",
    "regex",
    "Math",
    "Interop",
    "System",
    "Double",
    "java.time.LocalDate",
    "LocalDate",
];

pub(super) enum NsRef {
    Data(Str),
    Tool(Str),
    User(Str),
    Builtin(BuiltinId),
}

pub(super) fn builtin_value(b: BuiltinId) -> Node {
    match b.constant {
        Some(c) => Node::Const(c()),
        None => Node::Const(Value::Builtin(b)),
    }
}

pub(super) fn check_bindable(s: &str, pos: Pos) -> Result<()> {
    if split_ns(s).is_some() {
        return Err(err_at(pos, format!("cannot bind the namespaced name {s}"))
            .with_hint("local names have no namespace"));
    }
    if SPECIAL_FORMS.contains(&s) {
        return Err(
            err_at(pos, format!("cannot bind {s}: it is a special form"))
                .with_hint("choose another name"),
        );
    }
    if is_placeholder(s).is_some() {
        return Err(err_at(
            pos,
            format!("cannot bind {s}: % names are placeholders of #( )"),
        ));
    }
    Ok(())
}

/// `ns/name` -> `(ns, name)`. `/` alone and names like `java.util.Date.` are not namespaced.
pub fn split_ns(s: &str) -> Option<(&str, &str)> {
    if s == "/" {
        return None;
    }
    let i = s.find('/')?;
    if i == 0 {
        return None;
    }
    Some((&s[..i], &s[i + 1..]))
}

/// `(doc tool/x)` names the tool, it does not use it: the argument becomes the tool as a
/// constant, so `check` and the plan see no tool used as a value (and no host is reached).
pub(super) fn doc_of_tool(b: BuiltinId, args: &[Form], pos: Pos) -> Option<Node> {
    let [arg] = args else { return None };
    let FormKind::Symbol(s) = &arg.kind else {
        return None;
    };
    match split_ns(s) {
        Some(("tool", name)) if b.name == "doc" && !name.is_empty() => Some(Node::CallBuiltin(
            b,
            Box::new([Node::Const(Value::Tool(Str::from(name)))]),
            pos,
        )),
        _ => None,
    }
}

impl Analyzer {
    pub(super) fn symbol(&mut self, s: &Str, pos: Pos) -> Result<Node> {
        if let Some(idx) = is_placeholder(s) {
            return self.placeholder(s, idx, pos);
        }
        if let Some(n) = self.resolve_local(s) {
            return Ok(n);
        }
        if SPECIAL_FORMS.contains(&s.as_ref()) {
            return Err(Error::new(
                ErrorKind::UndefinedVariable,
                format!("{s} is a special form, not a value"),
            )
            .at(pos)
            .with_hint(format!("it is a special form; write ({s} ...)")));
        }
        if let Some(b) = builtins::lookup(s) {
            return Ok(builtin_value(b));
        }
        if let Some(n) = s.strip_prefix('*') {
            if let Ok(i @ 1..=3) = n.parse::<usize>() {
                self.reaches_host = true; // an earlier result may hold a tool
                return Ok(Node::History(i));
            }
        }
        if let Some((ns, name)) = split_ns(s) {
            return self.namespaced(ns, name, pos).map(|r| match r {
                NsRef::Data(k) => Node::DataRef(k),
                NsRef::Tool(t) => Node::ToolFn(t, pos),
                NsRef::User(u) => Node::UserRef(u, pos),
                NsRef::Builtin(b) => builtin_value(b),
            });
        }
        self.reaches_host = true; // a definition, a tool or data: known only when it runs
        Ok(Node::Global(Arc::new(GlobalRef {
            name: s.clone(),
            pos,
            locals: self.visible_locals(),
        })))
    }

    pub(super) fn namespaced(&mut self, ns: &str, name: &str, pos: Pos) -> Result<NsRef> {
        if name.is_empty() {
            return Err(err_at(pos, format!("{ns}/ needs a name after the slash")));
        }
        match ns {
            "data" => Ok(NsRef::Data(Str::from(name))),
            "tool" | "user" => {
                // a tool, or a definition that may call one
                self.reaches_host = true;
                Ok(if ns == "tool" {
                    NsRef::Tool(Str::from(name))
                } else {
                    NsRef::User(Str::from(name))
                })
            }
            _ if DROPPED_PREFIXES.contains(&ns) => match builtins::lookup(name) {
                Some(b) => Ok(NsRef::Builtin(b)),
                None => Err(err_at(
                    pos,
                    format!("{name} is not available. {}", crate::meant::family_hint(ns)),
                )
                .with_hint(crate::hints::absent_hint(name).unwrap_or_else(|| {
                    format!("{ns}/ prefixes only reach builtins; {ns}/{name} is not one")
                }))),
            },
            _ => {
                Err(err_at(pos, format!("unknown namespace {ns}/"))
                    .with_hint(crate::hints::absent_hint(name).unwrap_or_else(|| {
                    "use tool/ for tools, data/ for input data; your own definitions need no prefix"
                        .to_string()
                })))
            }
        }
    }
}
