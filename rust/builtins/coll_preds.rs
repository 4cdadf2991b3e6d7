//! Collection predicates (§7.6): some, every?, not-any?, contains?.

use super::items::ordered_items;
use super::{call1, expect_callable, type_error, Builtin};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::{identical, Value};

pub(super) fn some(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("some", &a[0])?;
    for x in ordered_or_set("some", &a[1])? {
        let r = call1(it, &a[0], x)?;
        if r.truthy() {
            return Ok(r);
        }
    }
    Ok(Value::Nil)
}

pub(super) fn ordered_or_set(fname: &str, v: &Value) -> Result<Vec<Value>, Error> {
    ordered_items(fname, v)
}

pub(super) fn every(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("every?", &a[0])?;
    for x in ordered_or_set("every?", &a[1])? {
        if !call1(it, &a[0], x)?.truthy() {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

pub(super) fn not_any(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("not-any?", &a[0])?;
    for x in ordered_or_set("not-any?", &a[1])? {
        if call1(it, &a[0], x)?.truthy() {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

pub(super) fn contains(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(match &a[0] {
        Value::Nil => false,
        Value::Map(m) => crate::value::flex_key(m, &a[1]).is_some(),
        Value::Set(s) => s.contains(&a[1]),
        Value::Vector(xs) => xs.iter().any(|x| identical(x, &a[1])),
        Value::Str(_) => {
            return Err(type_error("contains?", "a map, set or vector", &a[0])
                .with_hint("for substrings use (includes? s sub)")
                .into())
        }
        other => return Err(type_error("contains?", "a map, set or vector", other).into()),
    }))
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new("some", 2, 2, some, "The first truthy (pred x), or nil."),
    Builtin::new(
        "every?",
        2,
        2,
        every,
        "true if pred holds for every element.",
    ),
    Builtin::new(
        "not-any?",
        2,
        2,
        not_any,
        "true if pred holds for no element.",
    ),
    Builtin::new(
        "contains?",
        2,
        2,
        contains,
        "Map: key present; set: member; vector: value present.",
    ),
];
