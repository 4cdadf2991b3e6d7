//! Effects: `println` (§9.3).

use super::{Builtin, VARIADIC};
use crate::eval::{EvalResult, Interp};
use crate::format::print_capped;
use crate::limits::PRINT_ENTRY_CHARS;
use crate::value::Value;

/// One println entry: strings raw, a vector of one-character strings as its characters, other
/// values in printer form with private keys hidden.
pub fn println_text(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match a {
            Value::Str(s) => out.push_str(s),
            Value::Vector(xs)
                if !xs.is_empty()
                    && xs.iter().all(|x| matches!(x, Value::Str(s) if crate::format::grapheme_prefix_len(s, 1) == s.len() && !s.is_empty())) =>
            {
                for x in xs.iter() {
                    if let Value::Str(s) = x {
                        out.push_str(s);
                    }
                }
            }
            // the entry is cut to 2,000 characters anyway: stop printing soon after
            other => {
                print_capped(&mut out, other, true, 4 * PRINT_ENTRY_CHARS + 16);
            }
        }
    }
    out
}

fn println(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let line = println_text(args);
    it.print_line(line)?;
    Ok(Value::Nil)
}

pub const BUILTINS: &[Builtin] = &[Builtin::new(
    "println",
    0,
    VARIADIC,
    println,
    "Appends one line to the output (arguments joined by spaces) and returns nil.",
)];
