//! Strings (§7.9): `str` and the display forms.

use super::Builtin;
use super::VARIADIC;
use crate::eval::{EvalResult, Interp};
use crate::format::{date_text, datetime_text, float_display, print_full};
use crate::value::Value;

/// Display form used by `str` and `join`: nil is empty, strings raw, others printed.
pub fn display_into(out: &mut String, v: &Value) {
    match v {
        Value::Nil => {}
        Value::Str(s) => out.push_str(s),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&float_display(*f)),
        Value::Date(d) => out.push_str(&date_text(*d)),
        Value::DateTime(ms) => out.push_str(&datetime_text(*ms)),
        other => out.push_str(&print_full(other, false)),
    }
}

fn str_fn(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    if args.len() == 1 {
        if let Value::Str(_) = &args[0] {
            return Ok(std::mem::take(&mut args[0]));
        }
    }
    let mut out = String::new();
    for a in args.iter() {
        display_into(&mut out, a);
        it.check_str_size(out.len())?;
    }
    Ok(Value::string(out))
}

pub const BUILTINS: &[Builtin] = &[Builtin::new(
    "str",
    0,
    VARIADIC,
    str_fn,
    "Concatenation of the display forms of the arguments; nil is empty.",
)];
