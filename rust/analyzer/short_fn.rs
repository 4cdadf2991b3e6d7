//! `#(...)` functions and their `%`, `%1`..., `%&` placeholders.

use super::scope::FnScope;
use super::{err_at, Analyzer};
use crate::error::{Pos, Result};
use crate::ir::{Node, Pattern, Slot};
use crate::reader::{Form, FormKind};
use crate::value::{Str, Value};

pub(super) struct ShortFnCtx {
    pub(super) max_index: usize,
}

pub(super) fn is_placeholder(s: &str) -> Option<usize> {
    if s == "%" {
        return Some(1);
    }
    let rest = s.strip_prefix('%')?;
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse::<usize>().ok()
}

/// The highest placeholder index used in a `#()` body (nested `fn` bodies included).
pub(super) fn max_placeholder(forms: &[Form]) -> usize {
    let mut max = 0;
    let mut stack: Vec<&Form> = forms.iter().collect();
    while let Some(f) = stack.pop() {
        match &f.kind {
            FormKind::Symbol(s) => {
                if let Some(i) = is_placeholder(s) {
                    max = max.max(i);
                }
            }
            FormKind::List(v) | FormKind::Vector(v) | FormKind::Map(v) | FormKind::Set(v) => {
                stack.extend(v.iter())
            }
            _ => {}
        }
    }
    max
}

impl Analyzer {
    pub(super) fn placeholder(&mut self, s: &str, idx: usize, pos: Pos) -> Result<Node> {
        let Some(ctx) = self.short_fn.as_mut() else {
            return Err(
                err_at(pos, format!("{s} is only meaningful inside #( ... )")).with_hint(
                    if s == "%" {
                        "for a remainder use (mod a b); to name parameters use (fn [x] ...)"
                    } else {
                        "use (fn [x] ...) to name parameters"
                    },
                ),
            );
        };
        if idx == 0 {
            return Err(err_at(
                pos,
                "%0 is not a valid placeholder; the first argument is % or %1",
            ));
        }
        if idx > 20 {
            return Err(err_at(
                pos,
                format!("{s}: at most 20 placeholders are supported"),
            ));
        }
        ctx.max_index = ctx.max_index.max(idx);
        // Resolved by name so that a `fn` nested in `#()` captures the placeholder.
        let name = format!("%{idx}");
        self.resolve_local(&name)
            .ok_or_else(|| err_at(pos, format!("{s} is only meaningful inside #( ... )")))
    }

    pub(super) fn short_fn(&mut self, body: &[Form], pos: Pos) -> Result<Node> {
        if self.short_fn.is_some() {
            return Err(err_at(pos, "nested #( ) forms are not supported")
                .with_hint("use (fn [x] ...) for the inner function"));
        }
        self.scopes.push(FnScope::default());
        // Parameters %1..%k, k the highest placeholder written (an unused lower one still counts).
        let arity = max_placeholder(body).min(20);
        for i in 0..arity {
            self.bind(&Str::from(format!("%{}", i + 1)));
        }
        self.short_fn = Some(ShortFnCtx { max_index: 0 });
        // `#()` is a `fn`, so `recur` re-enters it with one value per placeholder
        self.recur_targets
            .push((arity, Some((0..arity as Slot).collect())));
        let result = self.short_fn_body(body, pos);
        self.recur_targets.pop();
        let ctx = self.short_fn.take();
        let scope = self.scopes.pop().unwrap_or_default();
        let body_node = result?;
        let arity = ctx.map_or(0, |c| c.max_index);
        let params: Vec<Pattern> = (0..arity as u32).map(Pattern::Bind).collect();
        let param_names = (1..=arity).map(|i| format!("%{i}")).collect();
        self.finish_lambda(None, params, None, param_names, scope, body_node, pos)
    }

    pub(super) fn short_fn_body(&mut self, body: &[Form], pos: Pos) -> Result<Node> {
        match body.len() {
            0 => Ok(Node::Const(Value::Nil)),
            1 => match &body[0].kind {
                FormKind::Symbol(s) if is_placeholder(s).is_none() => {
                    self.list(&body[..1], body[0].pos, true)
                }
                _ => self.expr(&body[0], true),
            },
            _ => self.list(body, pos, true),
        }
    }
}
