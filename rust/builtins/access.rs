//! Sequence access (LANGUAGE.md §7.1): first, rest, nth, count, seq and their kin.

use unicode_segmentation::UnicodeSegmentation;

use super::items::{chars, entry, graphemes, one_byte_chars, unordered};
use super::{alloc_output, type_error, Builtin, ENTRY_BYTES};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::Value;

pub(super) fn coll_len(fname: &str, v: &Value) -> Result<usize, Error> {
    Ok(match v {
        Value::Nil => 0,
        Value::Vector(xs) => xs.len(),
        Value::Str(s) if one_byte_chars(s) => s.len(),
        Value::Str(s) => graphemes(s).count(),
        Value::Set(s) => s.len(),
        Value::Map(m) => m.len(),
        other => return Err(type_error(fname, "a collection", other)),
    })
}

pub(super) fn count(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Int(coll_len("count", &args[0])? as i64))
}

pub(super) fn empty_q(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(match &args[0] {
        Value::Str(s) => s.is_empty(),
        other => coll_len("empty?", other)? == 0,
    }))
}

pub(super) fn nth_of(fname: &str, v: &Value, i: usize) -> Result<Value, Error> {
    Ok(match v {
        Value::Nil => Value::Nil,
        Value::Vector(xs) => xs.get(i).cloned().unwrap_or(Value::Nil),
        Value::Str(s) => graphemes(s).nth(i).map(Value::str).unwrap_or(Value::Nil),
        Value::Map(_) | Value::Set(_) => return Err(unordered(fname, v)),
        other => return Err(type_error(fname, "a vector or string", other)),
    })
}

pub(super) fn first(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(nth_of("first", &args[0], 0)?)
}

pub(super) fn second(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(nth_of("second", &args[0], 1)?)
}

pub(super) fn last(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(match &args[0] {
        Value::Vector(xs) => xs.last().cloned().unwrap_or(Value::Nil),
        Value::Str(s) => s
            .graphemes(true)
            .next_back()
            .map(Value::str)
            .unwrap_or(Value::Nil),
        other => nth_of("last", other, usize::MAX)?,
    })
}

pub(super) fn nth(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    let i = super::expect_int("nth", &args[1])?;
    if i < 0 {
        return Ok(Value::Nil);
    }
    Ok(nth_of("nth", &args[0], i as usize)?)
}

pub(super) fn rest_items(fname: &str, v: &Value) -> Result<Vec<Value>, Error> {
    Ok(match v {
        Value::Nil => Vec::new(),
        Value::Vector(xs) => {
            crate::guard::reserve(crate::guard::values_bytes(xs.len()));
            xs.get(1..).map_or_else(Vec::new, |s| s.to_vec())
        }
        Value::Str(s) => chars(s).skip(1).collect(),
        Value::Map(_) | Value::Set(_) => return Err(unordered(fname, v)),
        other => return Err(type_error(fname, "a vector or string", other)),
    })
}

pub(super) fn rest(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::vector(rest_items("rest", &args[0])?))
}

pub(super) fn next(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    let r = rest_items("next", &args[0])?;
    Ok(if r.is_empty() {
        Value::Nil
    } else {
        Value::vector(r)
    })
}

pub(super) fn ffirst(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let f = nth_of("ffirst", &a[0], 0)?;
    Ok(nth_of("ffirst", &f, 0)?)
}

pub(super) fn fnext(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(nth_of("fnext", &a[0], 1)?)
}

pub(super) fn nfirst(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let f = nth_of("nfirst", &a[0], 0)?;
    let r = rest_items("nfirst", &f)?;
    Ok(if r.is_empty() {
        Value::Nil
    } else {
        Value::vector(r)
    })
}

pub(super) fn nnext(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let items = rest_items("nnext", &a[0])?;
    Ok(if items.len() <= 1 {
        Value::Nil
    } else {
        Value::vector(items[1..].to_vec())
    })
}

pub(super) fn not_empty(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let empty = match &a[0] {
        Value::Str(s) => s.is_empty(),
        other => coll_len("not-empty", other)? == 0,
    };
    Ok(if empty {
        Value::Nil
    } else {
        std::mem::take(&mut a[0])
    })
}

pub(super) fn seq(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Set(s) => alloc_output(it, s.len(), 16)?,
        Value::Map(m) => alloc_output(it, m.len(), ENTRY_BYTES)?,
        _ => {}
    }
    let items: Vec<Value> = match &a[0] {
        Value::Nil => return Ok(Value::Nil),
        Value::Vector(xs) => {
            return Ok(if xs.is_empty() {
                Value::Nil
            } else {
                std::mem::take(&mut a[0])
            })
        }
        Value::Str(s) => chars(s).collect(),
        Value::Set(s) => s.iter().cloned().collect(),
        Value::Map(m) => m.iter().map(|(k, v)| entry(k, v)).collect(),
        other => return Err(type_error("seq", "a collection", other).into()),
    };
    Ok(if items.is_empty() {
        Value::Nil
    } else {
        Value::vector(items)
    })
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "count",
        1,
        1,
        count,
        "Number of elements (characters of a string); nil is 0.",
    ),
    Builtin::new(
        "empty?",
        1,
        1,
        empty_q,
        "true when there are no elements; nil is empty.",
    ),
    Builtin::new(
        "first",
        1,
        1,
        first,
        "First element of a vector or string, or nil.",
    ),
    Builtin::new("second", 1, 1, second, "Second element, or nil."),
    Builtin::new("last", 1, 1, last, "Last element, or nil."),
    Builtin::new(
        "nth",
        2,
        2,
        nth,
        "Element at an index, nil when out of range.",
    ),
    Builtin::new(
        "rest",
        1,
        1,
        rest,
        "All but the first element, as a vector.",
    ),
    Builtin::new(
        "next",
        1,
        1,
        next,
        "Like rest, but nil when nothing remains.",
    ),
    Builtin::new("ffirst", 1, 1, ffirst, "(first (first c))"),
    Builtin::new("fnext", 1, 1, fnext, "(first (next c))"),
    Builtin::new("nfirst", 1, 1, nfirst, "(next (first c))"),
    Builtin::new("nnext", 1, 1, nnext, "(next (next c))"),
    Builtin::new(
        "not-empty",
        1,
        1,
        not_empty,
        "The argument if non-empty, else nil.",
    ),
    Builtin::new(
        "seq",
        1,
        1,
        seq,
        "Elements as a vector (characters, members, [k v] entries); nil when empty.",
    ),
];
