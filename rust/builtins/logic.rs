//! Equality, comparison and logic (§4, §7.12, §7.13).

use super::{type_error, Builtin};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::{lisp_eq, natural_cmp, num_cmp, Value};

fn eq(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(lisp_eq(&args[0], &args[1])))
}

fn not_eq(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!lisp_eq(&args[0], &args[1])))
}

fn compare_nums(fname: &str, args: &[Value], test: fn(std::cmp::Ordering) -> bool) -> EvalResult {
    for a in &args[..2] {
        if !matches!(a, Value::Int(_) | Value::Float(_)) {
            let mut e = type_error(fname, "numbers", a);
            if matches!(a, Value::Str(_)) {
                e = e.with_hint("compare strings with (compare a b), e.g. (neg? (compare a b))");
            }
            return Err(e.into());
        }
    }
    Ok(Value::Bool(num_cmp(&args[0], &args[1]).is_some_and(test)))
}

fn lt(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    compare_nums("<", args, |o| o.is_lt())
}
fn gt(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    compare_nums(">", args, |o| o.is_gt())
}
fn le(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    compare_nums("<=", args, |o| o.is_le())
}
fn ge(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    compare_nums(">=", args, |o| o.is_ge())
}

fn compare(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    let o = natural_cmp(&args[0], &args[1]).map_err(|e: Error| e)?;
    Ok(Value::Int(o as i64))
}

fn not(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!args[0].truthy()))
}

fn identity(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(std::mem::take(&mut args[0]))
}

fn is_nil(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(args[0].is_nil()))
}

fn is_some(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(!args[0].is_nil()))
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new("=", 2, 2, eq, "Structural equality; (= 3 3.0) is true."),
    Builtin::new("not=", 2, 2, not_eq, "Negation of =."),
    Builtin::new("<", 2, 2, lt, "Numeric less-than of exactly two numbers."),
    Builtin::new(
        ">",
        2,
        2,
        gt,
        "Numeric greater-than of exactly two numbers.",
    ),
    Builtin::new(
        "<=",
        2,
        2,
        le,
        "Numeric less-or-equal of exactly two numbers.",
    ),
    Builtin::new(
        ">=",
        2,
        2,
        ge,
        "Numeric greater-or-equal of exactly two numbers.",
    ),
    Builtin::new("compare", 2, 2, compare, "-1, 0 or 1 by natural order."),
    Builtin::new("not", 1, 1, not, "true if the argument is nil or false."),
    Builtin::new("identity", 1, 1, identity, "Its argument."),
    Builtin::new("nil?", 1, 1, is_nil, "true for nil."),
    Builtin::new("some?", 1, 1, is_some, "true for anything but nil."),
];
