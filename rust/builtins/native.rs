//! Calling function values built by builtins: `where` predicates and combinators.

use super::call1;
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::{flex_get, lisp_eq, num_cmp, Native, Value, WhereOp};

fn coerce(v: &Value) -> Value {
    match v {
        Value::Keyword(k) => Value::Str(k.clone()),
        other => other.clone(),
    }
}

fn where_test(path: &[Value], op: WhereOp, value: &Value, item: &Value) -> bool {
    let mut f = item;
    for k in path {
        f = match f {
            Value::Map(m) => match flex_get(m, k) {
                Some(v) => v,
                None => return where_nil(op, value),
            },
            _ => return where_nil(op, value),
        };
    }
    where_apply(op, f, value)
}

fn where_nil(op: WhereOp, value: &Value) -> bool {
    where_apply(op, &Value::Nil, value)
}

fn where_apply(op: WhereOp, f: &Value, value: &Value) -> bool {
    match op {
        WhereOp::Truthy => f.truthy(),
        WhereOp::Eq => lisp_eq(&coerce(f), &coerce(value)),
        WhereOp::NotEq => !lisp_eq(&coerce(f), &coerce(value)),
        WhereOp::Gt | WhereOp::Lt | WhereOp::Ge | WhereOp::Le => {
            let o = match (f, value) {
                (Value::Str(a), Value::Str(b)) => Some(a.as_str().cmp(b.as_str())),
                _ => num_cmp(f, value),
            };
            match o {
                None => false,
                Some(o) => match op {
                    WhereOp::Gt => o.is_gt(),
                    WhereOp::Lt => o.is_lt(),
                    WhereOp::Ge => o.is_ge(),
                    _ => o.is_le(),
                },
            }
        }
        WhereOp::In => {
            if f.is_nil() {
                return false;
            }
            let cf = coerce(f);
            match value {
                Value::Vector(xs) => xs.iter().any(|x| lisp_eq(&coerce(x), &cf)),
                Value::Set(s) => s.iter().any(|x| lisp_eq(&coerce(x), &cf)),
                _ => false,
            }
        }
        WhereOp::Includes => {
            let cv = coerce(value);
            match f {
                Value::Vector(xs) => xs.iter().any(|x| lisp_eq(&coerce(x), &cv)),
                Value::Set(s) => s.iter().any(|x| lisp_eq(&coerce(x), &cv)),
                Value::Str(s) => match &cv {
                    Value::Str(sub) => s.contains(sub.as_str()),
                    _ => false,
                },
                _ => false,
            }
        }
    }
}

pub fn call_native(it: &mut Interp, n: &Native, args: &mut [Value]) -> EvalResult {
    let one = |args: &mut [Value], what: &str| -> Result<Value, Error> {
        if args.len() != 1 {
            return Err(Error::arity(format!(
                "{what} expects 1 argument, got {}",
                args.len()
            )));
        }
        Ok(std::mem::take(&mut args[0]))
    };
    match n {
        Native::Where { path, op, value } => {
            let item = one(args, "a where predicate")?;
            Ok(Value::Bool(where_test(path, *op, value, &item)))
        }
        Native::AllOf(fs) | Native::AnyOf(fs) | Native::NoneOf(fs) => {
            let item = one(args, "a combined predicate")?;
            let want_any = !matches!(n, Native::AllOf(_));
            for f in fs {
                let t = call1(it, f, item.clone())?.truthy();
                if t == want_any {
                    return Ok(Value::Bool(matches!(n, Native::AnyOf(_))));
                }
            }
            Ok(Value::Bool(!matches!(n, Native::AnyOf(_))))
        }
        Native::Juxt(fs) => {
            let item = one(args, "a juxt function")?;
            let mut out = Vec::with_capacity(fs.len());
            for f in fs {
                out.push(call1(it, f, item.clone())?);
            }
            Ok(Value::vector(out))
        }
        Native::Fnil(f, d) => {
            if let Some(first) = args.first_mut() {
                if first.is_nil() {
                    *first = d.clone();
                }
            }
            it.apply(f, args)
        }
    }
}
