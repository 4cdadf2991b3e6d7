//! Reduction (§7.5): reduce (the aggregations of §7.5 are in `agg`).

use super::items::each;
use super::{call2, expect_callable, Builtin};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::Value;

pub(super) fn reduce(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    expect_callable("reduce", &f)?;
    let (mut acc, coll) = if args.len() == 3 {
        (
            Some(std::mem::take(&mut args[1])),
            std::mem::take(&mut args[2]),
        )
    } else {
        (None, std::mem::take(&mut args[1]))
    };
    if let (Value::Builtin(b), Value::Vector(xs)) = (&f, &coll) {
        it.charge(xs.len())?;
        if b.name == "+" {
            if let Some(sum) = sum_numbers(acc.as_ref(), xs)? {
                return Ok(sum);
            }
        }
    }
    each("reduce", &coll, |x| {
        acc = Some(match acc.take() {
            None => x,
            Some(a) => call2(it, &f, a, x)?,
        });
        Ok(())
    })?;
    Ok(acc.unwrap_or(Value::Nil))
}

/// `(reduce + ...)` over numbers without a call per element; `None` when something is not a
/// number (the generic path then reports the error exactly as `+` would).
pub(super) fn sum_numbers(init: Option<&Value>, xs: &[Value]) -> Result<Option<Value>, Error> {
    let mut int_acc: i64 = 0;
    let mut float_acc: f64 = 0.0;
    let mut is_float = false;
    let mut any = false;
    for x in init.into_iter().chain(xs.iter()) {
        any = true;
        match x {
            Value::Int(i) if !is_float => match int_acc.checked_add(*i) {
                Some(s) => int_acc = s,
                None => return Ok(None),
            },
            Value::Int(i) => float_acc += *i as f64,
            Value::Float(f) => {
                if !is_float {
                    is_float = true;
                    float_acc = int_acc as f64;
                }
                let before = float_acc;
                float_acc += f;
                if !float_acc.is_finite() && before.is_finite() && f.is_finite() {
                    return Ok(None);
                }
            }
            _ => return Ok(None),
        }
    }
    if !any {
        return Ok(None); // (reduce + []) is nil: the generic path says so
    }
    Ok(Some(if is_float {
        Value::Float(float_acc)
    } else {
        Value::Int(int_acc)
    }))
}

pub const BUILTINS: &[Builtin] = &[Builtin::new(
    "reduce",
    2,
    3,
    reduce,
    "(reduce f init coll) folds (f acc item) over coll.",
)];
