//! Strings (§7.9): `str` and the display forms.

use super::Builtin;
use super::VARIADIC;
use crate::eval::{EvalResult, Interp};
use crate::format::{date_text, datetime_text, float_display, print_capped, PrintEnd};
use crate::value::Value;

/// Display form used by `str` and `join`: nil is empty, strings raw, others printed.
/// Appends the display form of `v`; an error when the text would pass `cap` bytes or the value
/// is too deeply nested to print.
pub fn display_into(out: &mut String, v: &Value, cap: usize) -> Result<(), Error> {
    match v {
        Value::Nil => {}
        Value::Str(s) => out.push_str(s),
        Value::Int(i) => out.push_str(&i.to_string()),
        Value::Float(f) => out.push_str(&float_display(*f)),
        Value::Date(d) => out.push_str(&date_text(*d)),
        Value::DateTime(ms) => out.push_str(&datetime_text(*ms)),
        other => match print_capped(out, other, false, cap) {
            PrintEnd::Complete => {}
            PrintEnd::TooLong => return Err(too_long(out.len().max(cap + 1), cap)),
            PrintEnd::TooDeep => {
                return Err(Error::limit(
                    crate::error::ErrorKind::Execution,
                    crate::error::LimitName::Depth,
                    format!(
                        "cannot make a string of a value nested more than {} levels deep",
                        crate::format::MAX_PRINT_DEPTH
                    ),
                ))
            }
        },
    }
    if out.len() > cap {
        return Err(too_long(out.len(), cap));
    }
    Ok(())
}

fn too_long(n: usize, cap: usize) -> Error {
    Error::limit(
        crate::error::ErrorKind::MemoryExceeded,
        crate::error::LimitName::StringSize,
        format!("string of {n} bytes exceeds the limit of {cap} bytes (max_string_size)"),
    )
}

/// Bytes the display form of `v` is likely to take (exact for strings; for the rest enough
/// that `room` charges a growth before the text is appended).
fn display_len(v: &Value) -> usize {
    match v {
        Value::Nil => 0,
        Value::Str(s) => s.len(),
        _ => 32,
    }
}

/// Room in `out` for `more` bytes, a large growth charged to the run before it is allocated:
/// strings built on several threads at once (parallel branches) double in steps of many
/// megabytes, each of which would otherwise pass `max_memory` before the next check saw it.
pub fn room(it: &Interp, out: &mut String, more: usize) -> EvalResult<()> {
    let need = out.len().saturating_add(more);
    if need <= out.capacity() {
        return Ok(());
    }
    let grown = need.max(out.capacity().saturating_mul(2)).max(64);
    if grown >= 1 << 16 {
        // the whole new block: growing may copy into it while the old one is still held
        it.reserve(grown)?;
    }
    out.reserve_exact(grown - out.len());
    Ok(())
}

fn str_fn(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    if args.len() == 1 {
        if let Value::Str(_) = &args[0] {
            return Ok(std::mem::take(&mut args[0]));
        }
    }
    let mut out = String::new();
    for a in args.iter() {
        it.charge(1)?;
        room(it, &mut out, display_len(a))?;
        display_into(&mut out, a, it.limits().max_string_size)?;
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

// ---- string functions (§7.9) and parsing (§7.10) ----

use unicode_segmentation::UnicodeSegmentation;

use super::{expect_int, expect_str, type_error};
use crate::error::Error;

fn s_arg<'v>(fname: &str, v: &'v Value) -> Result<&'v str, Error> {
    expect_str(fname, v)
}

/// Byte offset of the `n`th grapheme (clamped to the end).
fn grapheme_offset(s: &str, n: usize) -> usize {
    if super::items::one_byte_chars(s) {
        return n.min(s.len());
    }
    match s
        .grapheme_indices(true)
        .inspect(|_| crate::guard::charge(1))
        .nth(n)
    {
        Some((i, _)) => i,
        None => s.len(),
    }
}

fn subs(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = s_arg("subs", &a[0])?;
    let start = expect_int("subs", &a[1])?.max(0) as usize;
    let from = grapheme_offset(s, start);
    let to = match a.get(2) {
        Some(e) => {
            let end = expect_int("subs", e)?;
            if end <= start as i64 {
                return Ok(Value::str(""));
            }
            grapheme_offset(s, end as usize)
        }
        None => s.len(),
    };
    Ok(Value::str(&s[from..to.max(from)]))
}

fn join(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (sep, coll) = if a.len() == 2 {
        (s_arg("join", &a[0])?.to_string(), &a[1])
    } else {
        (String::new(), &a[0])
    };
    let items: &[Value] = match coll {
        Value::Nil => &[],
        Value::Vector(xs) => xs,
        Value::Str(_) if a.len() == 2 => {
            return Err(type_error("join", "a vector as its last argument", coll)
                .with_hint("the separator comes first: (join sep coll)")
                .into())
        }
        other => return Err(type_error("join", "a vector", other).into()),
    };
    let mut out = String::new();
    for (i, x) in items.iter().enumerate() {
        it.charge(1)?;
        room(it, &mut out, sep.len() + display_len(x))?;
        if i > 0 {
            out.push_str(&sep);
        }
        display_into(&mut out, x, it.limits().max_string_size)?;
        if out.len() > it.limits().max_string_size {
            it.check_str_size(out.len())?;
        }
    }
    Ok(Value::string(out))
}

fn split(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = s_arg("split", &a[0])?;
    let sep = match &a[1] {
        Value::Str(sep) => sep,
        Value::Regex(_) => {
            return Err(
                Error::type_err("split takes a literal string separator, got a regex")
                    .with_hint("use (re-split re s) to split on a regex")
                    .into(),
            )
        }
        other => return Err(type_error("split", "a string separator", other).into()),
    };
    let mut parts = Vec::new();
    if sep.is_empty() {
        // one part per character: their number is known at once for plain text
        if super::items::one_byte_chars(s) {
            it.alloc_values(s.len())?;
        }
        for g in super::items::graphemes(s) {
            it.push_value(&mut parts, Value::str(g))?;
        }
    } else {
        for p in s.split(sep.as_str()) {
            it.push_value(&mut parts, Value::str(p))?;
        }
    }
    Ok(Value::vector(parts))
}

fn split_lines(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = s_arg("split-lines", &a[0])?;
    let mut lines = Vec::new();
    for l in s.split('\n') {
        it.push_value(&mut lines, Value::str(l.strip_suffix('\r').unwrap_or(l)))?;
    }
    while lines
        .last()
        .is_some_and(|l| matches!(l, Value::Str(x) if x.is_empty()))
    {
        lines.pop();
    }
    Ok(Value::vector(lines))
}

fn trim(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::str(s_arg("trim", &a[0])?.trim()))
}

fn replace(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let s = s_arg("replace", &a[0])?;
    let m = match &a[1] {
        Value::Str(m) => m,
        Value::Regex(_) => {
            return Err(
                Error::type_err("replace takes a literal string to match, got a regex").into(),
            )
        }
        other => return Err(type_error("replace", "a string to match", other).into()),
    };
    let r = s_arg("replace", &a[2])?;
    let out = if m.is_empty() {
        let mut out = String::from(r);
        for g in super::items::graphemes(s) {
            out.push_str(g);
            out.push_str(r);
            it.check_str_size(out.len())?;
        }
        out
    } else {
        let mut out = String::with_capacity(s.len());
        let mut last = 0;
        for (n, (i, _)) in s.match_indices(m.as_str()).enumerate() {
            out.push_str(&s[last..i]);
            out.push_str(r);
            last = i + m.len();
            if n % 4096 == 4095 {
                it.check_str_size(out.len() + s.len() - last)?;
                it.charge(4096)?;
            }
        }
        out.push_str(&s[last..]);
        it.check_str_size(out.len())?;
        out
    };
    Ok(Value::string(out))
}

/// Maps `s` piece by piece, so a long string is checked against the deadline and the size
/// limit as it goes (case mapping can make text longer: `ß` becomes `SS`). Pieces end after
/// ASCII whitespace where there is some, so that context rules (a final `Σ` lowercases to
/// `ς`) see whole words.
fn map_pieces(it: &mut Interp, s: &str, f: impl Fn(&str) -> String) -> EvalResult {
    const PIECE: usize = 64 * 1024;
    if s.len() <= PIECE {
        let out = f(s);
        it.check_str_size(out.len())?;
        return Ok(Value::string(out));
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while !rest.is_empty() {
        let mut end = PIECE.min(rest.len());
        if end < rest.len() {
            let window = &rest.as_bytes()[end..(end + 4096).min(rest.len())];
            match window.iter().position(|b| b.is_ascii_whitespace()) {
                Some(i) => end += i + 1,
                None => {
                    while !rest.is_char_boundary(end) {
                        end += 1;
                    }
                }
            }
        }
        out.push_str(&f(&rest[..end]));
        it.check_str_size(out.len())?;
        it.charge(end / 64)?;
        rest = &rest[end..];
    }
    Ok(Value::string(out))
}

fn upper(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    map_pieces(it, s_arg("upper-case", &a[0])?, str::to_uppercase)
}

fn lower(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    map_pieces(it, s_arg("lower-case", &a[0])?, str::to_lowercase)
}

fn starts_with(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(
        s_arg("starts-with?", &a[0])?.starts_with(s_arg("starts-with?", &a[1])?),
    ))
}

fn ends_with(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(
        s_arg("ends-with?", &a[0])?.ends_with(s_arg("ends-with?", &a[1])?),
    ))
}

fn includes(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    if matches!(a[0], Value::Vector(_) | Value::Set(_) | Value::Map(_)) {
        return Err(type_error("includes?", "a string", &a[0])
            .with_hint("for collections use (contains? coll x) or (some #(= x %) coll)")
            .into());
    }
    Ok(Value::Bool(
        s_arg("includes?", &a[0])?.contains(s_arg("includes?", &a[1])?),
    ))
}

fn parse_long(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let Value::Str(s) = &a[0] else {
        return Ok(Value::Nil);
    };
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if body.is_empty() || !body.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(Value::Nil);
    }
    let t = s.strip_prefix('+').unwrap_or(s);
    Ok(t.parse::<i64>().map(Value::Int).unwrap_or(Value::Nil))
}

fn parse_double(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let Value::Str(s) = &a[0] else {
        return Ok(Value::Nil);
    };
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    match unsigned {
        "Infinity" => {
            return Ok(Value::Float(if s.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }))
        }
        "NaN" if s.len() == 3 => return Ok(Value::Float(f64::NAN)),
        _ => {}
    }
    let b = unsigned.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if i == 0 {
        return Ok(Value::Nil);
    }
    if i < b.len() && b[i] == b'.' {
        let j = i + 1;
        i = j;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == j {
            return Ok(Value::Nil);
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let d = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == d {
            return Ok(Value::Nil);
        }
    }
    if i != b.len() {
        return Ok(Value::Nil);
    }
    Ok(s.parse::<f64>().map(Value::Float).unwrap_or(Value::Nil))
}

pub const STRING_FNS: &[Builtin] = &[
    Builtin::new(
        "subs",
        2,
        3,
        subs,
        "(subs s start end?): characters start..end-1, indices clamped.",
    ),
    Builtin::new(
        "join",
        1,
        2,
        join,
        "(join sep coll): display forms of the elements separated by sep.",
    ),
    Builtin::new(
        "split",
        2,
        2,
        split,
        "(split s sep): split on every literal occurrence of sep.",
    ),
    Builtin::new(
        "split-lines",
        1,
        1,
        split_lines,
        "Lines of a string; trailing empty lines removed.",
    ),
    Builtin::new(
        "trim",
        1,
        1,
        trim,
        "Without leading and trailing whitespace.",
    ),
    Builtin::new(
        "replace",
        3,
        3,
        replace,
        "(replace s match repl): replace every literal occurrence.",
    ),
    Builtin::new("upcase", 1, 1, upper, "Upper case."),
    Builtin::new("upper-case", 1, 1, upper, "Upper case."),
    Builtin::new("downcase", 1, 1, lower, "Lower case."),
    Builtin::new("lower-case", 1, 1, lower, "Lower case."),
    Builtin::new("starts-with?", 2, 2, starts_with, "Prefix test."),
    Builtin::new("ends-with?", 2, 2, ends_with, "Suffix test."),
    Builtin::new("includes?", 2, 2, includes, "Substring test."),
    Builtin::new(
        "parse-long",
        1,
        1,
        parse_long,
        "The integer the whole string writes, else nil.",
    ),
    Builtin::new(
        "parse-double",
        1,
        1,
        parse_double,
        "The float the whole string writes, else nil.",
    ),
];
