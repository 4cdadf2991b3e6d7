//! `fn`, `def` and `defn`: parameter lists, arities and docstrings.

use std::sync::Arc;

use super::bindings::simple_slots;
use super::names::split_ns;
use super::scope::FnScope;
use super::{err_at, Analyzer, ParsedFn, SPECIAL_FORMS};
use crate::builtins;
use crate::error::{Error, ErrorKind, Pos, Result};
use crate::ir::{CaptureSrc, Def, Lambda, Node, Pattern};
use crate::liveness;
use crate::reader::{Form, FormKind};
use crate::value::Str;

/// Whether a list after a function's name is one arity (`([x] body)`) rather than a parameter
/// list written with parentheses (`(x y)`).
pub(super) fn is_arity(l: &[Form]) -> bool {
    matches!(l.first().map(|f| &f.kind), Some(FormKind::Vector(_)))
}

/// The names of a parameter list written as a list, for the hint that shows it as a vector.
pub(super) fn names_of(l: &[Form]) -> String {
    let names: Vec<&str> = l.iter().filter_map(Form::symbol_name).collect();
    if names.is_empty() {
        "x".to_string()
    } else {
        names.join(" ")
    }
}

pub(super) fn param_name(f: &Form) -> String {
    match &f.kind {
        FormKind::Symbol(s) => s.to_string(),
        _ => "_".to_string(),
    }
}

impl Analyzer {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish_lambda(
        &mut self,
        name: Option<Str>,
        params: Vec<Pattern>,
        rest: Option<Pattern>,
        param_names: Vec<String>,
        scope: FnScope,
        mut body: Node,
        pos: Pos,
    ) -> Result<Node> {
        liveness::optimize_lambda(&mut body, scope.next_slot);
        let plain_params = rest.is_none()
            && params
                .iter()
                .enumerate()
                .all(|(i, p)| matches!(p, Pattern::Bind(s) if *s as usize == i));
        let lambda = Lambda {
            name,
            params,
            rest,
            param_names,
            frame_size: scope.next_slot,
            plain_params,
            body,
            pos,
        };
        let caps: Vec<CaptureSrc> = scope.captures.iter().map(|(_, c)| *c).collect();
        Ok(Node::MakeFn(Arc::new(lambda), caps.into_boxed_slice()))
    }

    pub(super) fn params(
        &mut self,
        pv: &[Form],
    ) -> Result<(Vec<Pattern>, Option<Pattern>, Vec<String>)> {
        let mut params = Vec::new();
        let mut rest = None;
        let mut names = Vec::new();
        let mut i = 0;
        while i < pv.len() {
            let p = &pv[i];
            if p.symbol_name() == Some("&") {
                if i + 2 != pv.len() {
                    return Err(err_at(p.pos, "& must be followed by exactly one parameter")
                        .with_hint("[a b & more]"));
                }
                names.push("&".to_string());
                names.push(param_name(&pv[i + 1]));
                rest = Some(self.pattern(&pv[i + 1])?);
                break;
            }
            names.push(param_name(p));
            params.push(self.pattern(p)?);
            i += 1;
        }
        Ok((params, rest, names))
    }

    pub(super) fn fn_form(&mut self, name: Option<Str>, args: &[Form], pos: Pos) -> Result<Node> {
        let pv = match args.first().map(|f| &f.kind) {
            Some(FormKind::Vector(v)) => v,
            Some(FormKind::Symbol(_)) => {
                return Err(
                    err_at(pos, "named fn forms (fn name [x] ...) are not supported")
                        .with_hint("write (fn [x] ...), or use defn to define a named function"),
                )
            }
            Some(FormKind::List(l)) if !is_arity(l) => {
                return Err(err_at(pos, "fn parameters go in a vector, not a list")
                    .with_hint(format!("(fn [{}] body)", names_of(l))))
            }
            Some(FormKind::List(_)) => {
                return Err(
                    err_at(pos, "multi-arity functions are not supported").with_hint(
                        "use separate defn forms, or one variadic [a & more] parameter list",
                    ),
                )
            }
            _ => {
                return Err(err_at(pos, "fn needs a parameter vector").with_hint("(fn [x y] body)"))
            }
        };
        if args.len() < 2 {
            let what = name
                .as_ref()
                .map_or_else(|| "fn".to_string(), |n| format!("defn {n}"));
            return Err(err_at(
                pos,
                format!("{what} needs a body after the parameter vector"),
            )
            .with_hint("(fn [x] (* x 2)); return nil explicitly if that is what you mean"));
        }
        self.scopes.push(FnScope::default());
        let result = (|| -> Result<ParsedFn> {
            let (params, rest, names) = self.params(pv)?;
            let slots = if rest.is_some() {
                None
            } else {
                simple_slots(params.iter())
            };
            self.recur_targets
                .push((params.len() + usize::from(rest.is_some()), slots));
            let body = self.body(&args[1..], true);
            self.recur_targets.pop();
            Ok((params, rest, names, body?))
        })();
        let scope = self.scopes.pop().unwrap_or_default();
        let (params, rest, names, body) = result?;
        self.finish_lambda(name, params, rest, names, scope, body, pos)
    }

    pub(super) fn def_name(&self, f: Option<&Form>, what: &str, pos: Pos) -> Result<Str> {
        match f.map(|f| &f.kind) {
            Some(FormKind::Symbol(s)) => {
                if split_ns(s).is_some() {
                    return Err(err_at(pos, format!("{what} needs a plain name, got {s}"))
                        .with_hint("definitions live in the user namespace: (def total 3)"));
                }
                if SPECIAL_FORMS.contains(&s.as_ref())
                    || builtins::lookup(s).is_some()
                    || matches!(s.as_ref(), "nil" | "true" | "false")
                {
                    return Err(Error::new(
                        ErrorKind::CannotShadowBuiltin,
                        format!("cannot define {s}: it is a builtin"),
                    )
                    .at(pos)
                    .with_hint(format!("choose another name, e.g. my-{s}")));
                }
                Ok(s.clone())
            }
            Some(FormKind::Vector(_) | FormKind::Map(_)) => Err(err_at(
                pos,
                format!("{what} names one value; it cannot destructure"),
            )
            .with_hint("def the whole value, or destructure with let: (let [[a b] v] body)")),
            _ => Err(err_at(pos, format!("{what} needs a name first"))
                .with_hint(format!("({what} name ...)"))),
        }
    }

    pub(super) fn def_form(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
        let name = self.def_name(args.first(), "def", pos)?;
        let (doc, value) = match args.len() {
            2 => (None, &args[1]),
            3 => match &args[1].kind {
                FormKind::Str(d) => (Some(d.clone()), &args[2]),
                _ => {
                    return Err(err_at(
                        pos,
                        "def takes a name, an optional docstring and one value",
                    )
                    .with_hint("(def name \"doc\" value)"))
                }
            },
            1 => {
                return Err(err_at(pos, format!("def of {name} is missing its value"))
                    .with_hint(format!("(def {name} value)")))
            }
            _ => {
                return Err(err_at(
                    pos,
                    format!(
                        "def takes a name, an optional docstring and one value; got {} forms",
                        args.len()
                    ),
                )
                .with_hint("(def name \"doc\" value)"))
            }
        };
        let value = self.expr(value, false)?;
        Ok(Node::Def(Box::new(Def { name, doc, value })))
    }

    pub(super) fn defn_form(&mut self, args: &[Form], pos: Pos) -> Result<Node> {
        let name = self.def_name(args.first(), "defn", pos)?;
        let mut rest = &args[1..];
        let mut doc = None;
        if let Some(Form {
            kind: FormKind::Str(d),
            ..
        }) = rest.first()
        {
            if rest.len() > 1 {
                doc = Some(d.clone());
                rest = &rest[1..];
            }
        }
        match rest.first().map(|f| &f.kind) {
            Some(FormKind::Vector(_)) => {}
            Some(FormKind::List(l)) if !is_arity(l) => {
                return Err(err_at(pos, format!("defn {name}: parameters go in a vector, not a list"))
                    .with_hint(format!("(defn {name} [{}] body)", names_of(l))))
            }
            Some(FormKind::List(_)) => {
                return Err(err_at(pos, format!("multi-arity defn of {name} is not supported"))
                    .with_hint("use separate defn forms with different names, or one variadic [a & more] parameter list"))
            }
            Some(FormKind::Map(_)) => {
                return Err(err_at(pos, "attribute maps and pre/post conditions in defn are not supported"))
            }
            _ => {
                return Err(err_at(pos, format!("defn {name} needs a parameter vector"))
                    .with_hint(format!("(defn {name} \"doc\" [x] body)")))
            }
        }
        let f = self.fn_form(Some(name.clone()), rest, pos)?;
        Ok(Node::Def(Box::new(Def {
            name,
            doc,
            value: f,
        })))
    }
}
