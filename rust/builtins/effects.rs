//! Effects: `println` (§9.3).

use super::{Builtin, VARIADIC};
use crate::eval::{EvalResult, Interp};
use crate::format::print_capped;
use crate::limits::PRINT_ENTRY_CHARS;
use crate::value::Value;

/// One println entry: strings raw, a vector of one-character strings as its characters, other
/// values in printer form with private keys hidden.
pub fn println_text(args: &[Value]) -> String {
    // the entry is cut to 2,000 characters (graphemes, up to a few dozen bytes each): build
    // only what that can need, whatever the size of the arguments
    const CAP: usize = 16 * PRINT_ENTRY_CHARS;
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if out.len() > CAP {
            break;
        }
        if i > 0 {
            out.push(' ');
        }
        match a {
            Value::Str(s) => out.push_str(prefix(s, CAP + 1 - out.len().min(CAP))),
            Value::Vector(xs)
                if !xs.is_empty()
                    && xs.iter().all(|x| matches!(x, Value::Str(s) if crate::format::grapheme_prefix_len(s, 1) == s.len() && !s.is_empty())) =>
            {
                for x in xs.iter() {
                    if let Value::Str(s) = x {
                        if out.len() > CAP {
                            break;
                        }
                        out.push_str(s);
                    }
                }
            }
            // the entry is cut to 2,000 characters anyway: stop printing soon after
            other => {
                print_capped(&mut out, other, true, CAP);
            }
        }
    }
    out
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn prefix(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
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
