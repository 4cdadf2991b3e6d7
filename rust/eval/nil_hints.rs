//! Errors that say where a value came from: a nil reaching a builtin (why it is nil is found
//! in `nil_sources`), a `data/` name that is not in the input, an undefined name.

use smallvec::SmallVec;

use super::nil_sources::{bound_in, read_of, Look, Reader};
use super::{Ctx, EvalResult, Flow, Interp};
use crate::builtins::Builtin;
use crate::error::{Error, ErrorData, ErrorKind, Pos};
use crate::hints;
use crate::ir::{GlobalRef, Let, Node, Slot};
use crate::value::Value;

/// Warnings a run keeps at most (one per missing `data/` name).
const MAX_WARNINGS: usize = 16;

/// Builtins whose "got nil" is always about one of their own arguments, never about an item
/// inside one or a value returned by a function they call: when every other argument is read
/// again as something else, the nil is the one left. (Not `compare`: it compares the items of
/// vectors.)
const DIRECT: &[&str] = &[
    "+",
    "-",
    "*",
    "/",
    "inc",
    "dec",
    "mod",
    "rem",
    "abs",
    "max",
    "min",
    "<",
    ">",
    "<=",
    ">=",
    "upper-case",
    "lower-case",
    "upcase",
    "downcase",
    "subs",
    "trim",
    "starts-with?",
    "ends-with?",
    "includes?",
    "split",
    "parse-long",
    "parse-double",
];

/// Locals a nil may have come from, noted by `explain_nil` for the `let` that bound them
/// (`explain_nil_local`): the error they belong to (its address), the frame, each slot with
/// whether it is known to hold the nil, and whether the error's hint is only "the map it reads
/// is itself nil" (the `let` may say why).
pub(super) struct NilLocals {
    error: usize,
    base: usize,
    slots: SmallVec<[(Slot, bool); 4]>,
    replace: bool,
}

/// Whether a type error is about a nil argument.
fn about_nil(e: &Error) -> bool {
    let m = e.message.as_str();
    m.ends_with("got nil")
        || m.starts_with("cannot compare nil with ")
        || (m.starts_with("cannot compare ") && m.contains(" with nil: "))
}

/// Whether `b` raised this error about one of its own arguments (see `DIRECT`).
fn is_direct(b: &Builtin, e: &Error) -> bool {
    DIRECT.contains(&b.name)
        && e.message
            .strip_prefix(b.name)
            .is_some_and(|m| m.starts_with(" expected "))
}

/// An error's identity while it unwinds.
fn address(e: &Error) -> usize {
    &**e as *const ErrorData as usize
}

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
    /// local map or from the input data, a `data/` name that does not exist, the first item of
    /// an empty vector, a path `get-in` did not find, a `find` that found nothing), with the
    /// nearest existing keys. An argument that is a local is left to the `let` that bound it
    /// (`explain_nil_local`). Costs nothing unless such an error happened.
    #[cold]
    #[inline(never)]
    pub(super) fn explain_nil<'n>(
        &mut self,
        mut r: EvalResult,
        b: &Builtin,
        args: impl IntoIterator<Item = &'n Node>,
        ctx: &Ctx,
    ) -> EvalResult {
        let Err(flow) = &mut r else { return r };
        let Some(e) = flow.error_mut() else { return r };
        // only an error this call raised: one from evaluating an argument has its place already
        if e.kind != ErrorKind::Type || e.hint.is_some() || e.pos.is_some() || !about_nil(e) {
            return r;
        }
        let args: SmallVec<[&Node; 4]> = args.into_iter().collect();
        let rd = &Reader::call(ctx, args.iter().copied());
        // the argument that must be the nil: the only one not read again as something else
        let known = if is_direct(b, e) {
            let mut maybe = args.iter().enumerate().filter(|(_, a)| {
                !self
                    .reread(a, rd, 0)
                    .is_some_and(|v| !matches!(*v, Value::Nil))
            });
            match (maybe.next(), maybe.next()) {
                (Some((i, _)), None) => Some(i),
                _ => None,
            }
        } else {
            None
        };
        let mut hint = None;
        let mut replace = false;
        let mut slots: SmallVec<[(Slot, bool); 4]> = SmallVec::new();
        for (i, a) in args.iter().enumerate() {
            let look = Look::top(known == Some(i));
            let local = self.nil_local(a, rd, look.known);
            if hint.is_none() {
                hint = self.nil_source(a, rd, look);
                replace = hint.is_some() && local.is_some_and(|(_, _, under)| under);
            }
            if let Some((s, k, _)) = local {
                slots.push((s, k));
            }
        }
        self.nil_locals = (!slots.is_empty() && (hint.is_none() || replace)).then(|| {
            Box::new(NilLocals {
                error: address(e),
                base: ctx.base,
                slots,
                replace,
            })
        });
        if hint.is_some() {
            e.hint = hint;
        }
        r
    }

    /// The local an argument is (unless it holds something else than nil), or the local a
    /// lookup argument reads when that holds nil: its slot, whether it is known to be the nil,
    /// and whether it is under a lookup.
    fn nil_local(&self, a: &Node, rd: &Reader, known: bool) -> Option<(Slot, bool, bool)> {
        match a {
            Node::Local(s) | Node::MoveLocal(s) => match self.reads_nil(*s, rd) {
                true => Some((*s, true, false)),
                false if rd.moved(*s) => Some((*s, known, false)),
                false => None,
            },
            _ => match read_of(a)? {
                Node::Local(s) | Node::MoveLocal(s) if self.reads_nil(*s, rd) => {
                    Some((*s, true, true))
                }
                _ => None,
            },
        }
    }

    /// A `let` an error passes through: when the error's nil is a local this `let` binds (as
    /// noted by `explain_nil`) and its value came from a lookup that can be read again, the hint
    /// says why that lookup is nil. `failed` is the binding's value or the body that failed.
    #[cold]
    #[inline(never)]
    pub(super) fn explain_nil_local(
        &mut self,
        flow: Flow,
        l: &Let,
        failed: &Node,
        ctx: &Ctx,
    ) -> EvalResult {
        let mut r = Err(flow);
        let Some(mut marks) = self.nil_locals.take() else {
            return r;
        };
        // the bindings made before the error
        let done = l
            .bindings
            .iter()
            .position(|(_, init)| std::ptr::eq(init, failed))
            .unwrap_or(l.bindings.len());
        let Err(flow) = &mut r else {
            self.nil_locals = Some(marks);
            return r;
        };
        let Some(e) = flow.error_mut() else {
            // `recur` or `return` passing through: the note waits for its error
            self.nil_locals = Some(marks);
            return r;
        };
        // a note of another error, or of a frame this one has left: no use any more
        if marks.error != address(e) || marks.base != ctx.base {
            return r;
        }
        let made = &l.bindings[..done.min(l.bindings.len())];
        let mut hint = None;
        let mut i = 0;
        // each alias (let [y x]) adds one slot, bound earlier; each step reads the bindings
        // after it for moves, so a long chain is followed only so far
        let mut budget = 32;
        while i < marks.slots.len() && hint.is_none() && budget > 0 {
            budget -= 1;
            let (slot, known) = marks.slots[i];
            let Some(j) = bound_in(made, slot) else {
                i += 1;
                continue;
            };
            marks.slots.remove(i);
            let rd = &Reader::binding(ctx, l, j, done);
            let known = known || self.reads_nil(slot, rd);
            match &l.bindings[j].1 {
                Node::Local(s) | Node::MoveLocal(s) => marks.slots.push((*s, known)),
                init => {
                    // no guess from the input's keys for a local that may not be the nil
                    let look = Look {
                        guess: known,
                        ..Look::top(known)
                    };
                    hint = self.nil_source(init, rd, look);
                }
            }
        }
        match hint {
            Some(h) if e.hint.is_none() || marks.replace => e.hint = Some(h),
            Some(_) => {}
            None if !marks.slots.is_empty() => self.nil_locals = Some(marks),
            None => {}
        }
        r
    }

    /// Calling nil: a `data/` name that is a tool, or any lookup whose nil can be explained.
    #[cold]
    #[inline(never)]
    pub(super) fn explain_nil_call(
        &self,
        r: EvalResult,
        callee: &Node,
        args: &[Node],
        ctx: &Ctx,
    ) -> EvalResult {
        with_hint_if(r, ErrorKind::NotCallable, |_| {
            match callee {
            Node::DataRef(name) if self.host.has_tool(name) => Some(format!(
                "data/{name} is input data, and there is none by that name; {name} is a tool: (tool/{name} ...)"
            )),
            _ => {
                let rd = &Reader::call(ctx, std::iter::once(callee).chain(args));
                let look = Look::top(false);
                self.nil_source(callee, rd, look)
            }
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
}
