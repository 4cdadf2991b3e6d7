//! Type and numeric predicates (§7.14, §7.15).

use super::{type_error, Builtin};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::Value;

macro_rules! type_pred {
    ($fname:ident, $pat:pat) => {
        fn $fname(_: &mut Interp, a: &mut [Value]) -> EvalResult {
            Ok(Value::Bool(matches!(a[0], $pat)))
        }
    };
}

type_pred!(is_boolean, Value::Bool(_));
type_pred!(is_number, Value::Int(_) | Value::Float(_));
type_pred!(is_string, Value::Str(_));
type_pred!(is_keyword, Value::Keyword(_));
type_pred!(is_vector, Value::Vector(_));
type_pred!(is_map, Value::Map(_));
type_pred!(is_set, Value::Set(_));
type_pred!(is_coll, Value::Vector(_));

fn is_char(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(match &a[0] {
        Value::Str(s) => !s.is_empty() && crate::format::grapheme_prefix_len(s, 1) == s.len(),
        _ => false,
    }))
}

fn sign_test(a: &Value, test: fn(f64) -> bool) -> bool {
    match a {
        Value::Int(i) => test(*i as f64),
        Value::Float(f) => !f.is_nan() && test(*f),
        _ => false,
    }
}

fn is_zero(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(sign_test(&a[0], |x| x == 0.0)))
}

fn is_pos(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(sign_test(&a[0], |x| x > 0.0)))
}

fn is_neg(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(sign_test(&a[0], |x| x < 0.0)))
}

fn parity(fname: &str, v: &Value) -> Result<Option<bool>, Error> {
    match v {
        Value::Int(i) => Ok(Some(i % 2 == 0)),
        Value::Float(_) => {
            Err(type_error(fname, "an integer", v).with_hint("convert with (int x) first"))
        }
        _ => Ok(None),
    }
}

fn is_even(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(parity("even?", &a[0])? == Some(true)))
}

fn is_odd(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(parity("odd?", &a[0])? == Some(false)))
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new("boolean?", 1, 1, is_boolean, "true for true and false."),
    Builtin::new("number?", 1, 1, is_number, "true for integers and floats."),
    Builtin::new(
        "string?",
        1,
        1,
        is_string,
        "true for strings (characters included).",
    ),
    Builtin::new(
        "char?",
        1,
        1,
        is_char,
        "true for a string of exactly one character.",
    ),
    Builtin::new("keyword?", 1, 1, is_keyword, "true for keywords."),
    Builtin::new("vector?", 1, 1, is_vector, "true for vectors."),
    Builtin::new("map?", 1, 1, is_map, "true for maps."),
    Builtin::new("set?", 1, 1, is_set, "true for sets."),
    Builtin::new("coll?", 1, 1, is_coll, "true for vectors."),
    Builtin::new("zero?", 1, 1, is_zero, "true for 0 and 0.0."),
    Builtin::new("pos?", 1, 1, is_pos, "true for numbers above zero."),
    Builtin::new("neg?", 1, 1, is_neg, "true for numbers below zero."),
    Builtin::new("even?", 1, 1, is_even, "true for even integers."),
    Builtin::new("odd?", 1, 1, is_odd, "true for odd integers."),
];
