//! Calling functions: builtins (with their errors explained), closures and their frames, `apply`.

use std::sync::Arc;

use super::keywords::keyword_get;
use super::{Args, Ctx, EvalResult, Interp};
use crate::error::{Error, ErrorKind, LimitName};
use crate::guard;
use crate::ir::Lambda;
use crate::value::{flex_get, Closure, TypeTag, Value};

impl<'a> Interp<'a> {
    pub fn call_builtin(&mut self, b: crate::value::BuiltinId, args: &mut [Value]) -> EvalResult {
        if args.len() < b.min || args.len() > b.max {
            let mut e = Error::arity(format!(
                "{} expects {} argument(s), got {}",
                b.name,
                b.arity_text(),
                args.len()
            ));
            if let Some(h) = crate::meant::builtin_arity_hint(b.name, args.len()) {
                e = e.with_hint(h);
            }
            return Err(e.into());
        }
        match (b.f)(self, args) {
            Err(mut flow) => {
                if let Some(e) = flow.error_mut() {
                    self.explain(b.name, args, e);
                }
                Err(flow)
            }
            ok => ok,
        }
    }

    /// Adds what the LLM probably meant to an error a builtin raised itself (no position and
    /// no hint yet: errors from deeper calls already carry theirs).
    #[cold]
    pub(super) fn explain(&self, builtin: &str, args: &[Value], e: &mut Error) {
        if e.pos.is_some() || e.hint.is_some() {
            return;
        }
        e.hint = match e.kind {
            ErrorKind::Arity => crate::meant::callback_arity_hint(builtin),
            ErrorKind::Type => crate::meant::type_shape_hint(builtin, args, &e.message),
            _ => None,
        };
    }

    /// Calls any callable value with owned arguments.
    pub fn apply(&mut self, f: &Value, args: &mut [Value]) -> EvalResult {
        // counts as a step: builtins looping over collections reach fuel and time checks too
        self.tick()?;
        match f {
            Value::Builtin(b) => self.call_builtin(*b, args),
            Value::Closure(c) => self.call_closure(c, args),
            Value::Tool(name) => self.call_tool(name, args),
            Value::Native(n) => {
                // juxt/fnil/all-of chains nest calls without evaluating a node: they count as
                // call depth and check the native stack like closures do
                self.enter_call()?;
                self.depth += 1;
                let r = guard::deeper(|| crate::builtins::call_native(self, n, args));
                self.depth -= 1;
                r
            }
            Value::Keyword(k) => {
                if args.is_empty() || args.len() > 2 {
                    return Err(Error::arity(format!("keyword :{k} called with {} argument(s); expected 1 or 2 (a map and an optional default)", args.len())).into());
                }
                let default = if args.len() == 2 {
                    Some(std::mem::take(&mut args[1]))
                } else {
                    None
                };
                Ok(keyword_get(f, &args[0], default)?)
            }
            Value::Map(m) => {
                if args.is_empty() || args.len() > 2 {
                    return Err(Error::arity(format!(
                        "a map called as a function takes 1 or 2 arguments (key, default), got {}",
                        args.len()
                    ))
                    .into());
                }
                let default = if args.len() == 2 {
                    std::mem::take(&mut args[1])
                } else {
                    Value::Nil
                };
                Ok(flex_get(m, &args[0]).cloned().unwrap_or(default))
            }
            Value::Set(s) => {
                if args.len() != 1 {
                    return Err(Error::arity(format!(
                        "a set called as a function takes 1 argument, got {}",
                        args.len()
                    ))
                    .into());
                }
                Ok(if s.contains(&args[0]) {
                    std::mem::take(&mut args[0])
                } else {
                    Value::Nil
                })
            }
            other => Err(Error::new(
                ErrorKind::NotCallable,
                format!(
                    "{} is not a function and cannot be called",
                    other.describe()
                ),
            )
            .with_hint(match other {
                Value::Vector(_) => "to read an element use (nth v i) or (get v i); (f x) calls f",
                Value::Str(_) => "strings are not callable; to build text use (str ...)",
                _ => "the first element of a list is called; check your parentheses",
            })
            .into()),
        }
    }

    /// Refuses a call one level beyond `max_depth`.
    pub(super) fn enter_call(&self) -> EvalResult<()> {
        if self.depth >= self.limits.max_depth {
            return Err(Error::limit(
                ErrorKind::Execution,
                LimitName::Depth,
                format!(
                    "call depth limit of {} exceeded (max_depth)",
                    self.limits.max_depth
                ),
            )
            .with_hint("the recursion does not end soon enough; use loop/recur or reduce instead")
            .into());
        }
        Ok(())
    }

    pub fn call_closure(&mut self, c: &Arc<Closure>, args: &mut [Value]) -> EvalResult {
        let Some(lambda) = c.lambda() else {
            return Err(Error::exec("a function this evaluator did not make").into());
        };
        let fixed = lambda.params.len();
        let ok = if lambda.rest.is_some() {
            args.len() >= fixed
        } else {
            args.len() == fixed
        };
        if !ok {
            let name = lambda
                .name
                .as_deref()
                .map_or_else(|| "fn".to_string(), |n| n.to_string());
            return Err(Error::arity(format!(
                "{name} expects {} argument(s), got {}",
                lambda.arity_text(),
                args.len()
            ))
            .into());
        }
        self.enter_call()?;
        self.depth += 1;
        let base = self.stack.len();
        let frame = lambda.frame_size as usize;
        let bound = if lambda.plain_params {
            // the arguments are the frame's first slots, in order: moved, not bound one by one
            self.stack.extend(args.iter_mut().map(std::mem::take));
            self.stack.resize_with(base + frame, Value::default);
            Ok(())
        } else {
            self.stack.resize_with(base + frame, Value::default);
            self.bind_params(lambda, args, base)
        };
        let mut ctx = Ctx {
            base,
            caps: &c.captures,
            loops: 0,
        };
        let result = (|| {
            bound?;
            loop {
                match self.ev(&lambda.body, &mut ctx) {
                    Err(f) if f.is_recur() && self.recur_bound => {
                        self.recur_bound = false;
                        self.count_loop(&mut ctx)?;
                    }
                    Err(f) if f.is_recur() => {
                        let mut vals = std::mem::take(&mut self.recur_args);
                        self.count_loop(&mut ctx)?;
                        if lambda.rest.is_some() {
                            // recur passes the rest parameter as one collection
                            let rest = vals.pop().unwrap_or_default();
                            let mut items: Args = vals;
                            match rest {
                                Value::Nil => {}
                                Value::Vector(v) => items.extend(v.iter().cloned()),
                                other => {
                                    return Err(Error::type_err(format!(
                                        "recur's last argument fills the rest parameter and must be a vector, got {}",
                                        other.describe()
                                    ))
                                    .into())
                                }
                            }
                            self.bind_params(lambda, &mut items, base)?;
                        } else {
                            self.bind_params(lambda, &mut vals, base)?;
                        }
                    }
                    other => return other,
                }
            }
        })();
        self.stack.truncate(base);
        self.depth -= 1;
        if let (Ok(v), Some(_)) = (&result, &lambda.name) {
            // kept per run and applied on commit, so a failed run changes nothing
            let entry = (Arc::as_ptr(c) as usize, (c.clone(), TypeTag::of(v)));
            self.record_return(entry);
        }
        result
    }

    pub(super) fn bind_params(
        &mut self,
        lambda: &Lambda,
        args: &mut [Value],
        base: usize,
    ) -> EvalResult<()> {
        let fixed = lambda.params.len();
        for (p, a) in lambda.params.iter().zip(args.iter_mut()) {
            self.bind(p, std::mem::take(a), base)?;
        }
        if let Some(rest) = &lambda.rest {
            let from = fixed.min(args.len());
            let extra: Vec<Value> = args[from..].iter_mut().map(std::mem::take).collect();
            self.bind(rest, Value::vector(extra), base)?;
        }
        Ok(())
    }
}
