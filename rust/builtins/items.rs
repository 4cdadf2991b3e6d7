//! How builtins see collections: elements, characters (grapheme clusters), entries, and the errors
//! for unordered ones.

use unicode_segmentation::UnicodeSegmentation;

use super::type_error;
use crate::error::Error;
use crate::eval::EvalResult;
use crate::guard;
use crate::value::Value;

pub(super) fn unordered(fname: &str, v: &Value) -> Error {
    let hint = match v {
        Value::Map(_) => "maps are unordered here; use (keys m), (vals m) or (entries m) first",
        _ => "sets are unordered; convert with (vec s) first",
    };
    type_error(fname, "a vector or string", v).with_hint(hint)
}

/// The characters (grapheme clusters) of `s`, each charged to the run as it is found: a
/// 16 MB string takes long enough to segment that the deadline must be able to stop it.
pub fn graphemes(s: &str) -> impl Iterator<Item = &str> + '_ {
    crate::guard::charged(s.graphemes(true))
}

/// Whether every byte of `s` is a character of its own (ASCII without `\r`, which pairs with a
/// following `\n`): then counting and offsets need no segmentation.
pub fn one_byte_chars(s: &str) -> bool {
    s.is_ascii() && !s.as_bytes().contains(&b'\r')
}

/// The characters of `s` as values, after checking the run can hold them all.
pub fn chars(s: &str) -> impl Iterator<Item = Value> + '_ {
    reserve_chars(s);
    graphemes(s).map(Value::str)
}

/// Memory for one value per character of `s` (a small string each), checked before it is
/// allocated: a 16 MB string has 16 million characters.
pub(super) fn reserve_chars(s: &str) {
    const PER_CHAR: usize = std::mem::size_of::<Value>() + 32;
    if s.len() < 4096 {
        return;
    }
    // bytes bound the number of characters; count them only when that bound is too high
    let mut n = s.len();
    if n.saturating_mul(PER_CHAR) > 1 << 24 && !s.is_ascii() {
        n = graphemes(s).count();
    }
    crate::guard::check_size(n);
    crate::guard::reserve(n.saturating_mul(PER_CHAR));
}

pub(super) fn entry(k: &Value, v: &Value) -> Value {
    Value::vector(vec![k.clone(), v.clone()])
}

/// Elements of V, S (characters), St (members), M (`[k v]` entries) or nil (none).
pub fn seq_items(v: &Value) -> Result<Vec<Value>, Error> {
    if let Some(n) = v.coll_len() {
        crate::guard::reserve(crate::guard::values_bytes(n));
    }
    Ok(match v {
        Value::Nil => Vec::new(),
        Value::Vector(xs) => xs.to_vec(),
        Value::Str(s) => chars(s).collect(),
        Value::Set(s) => s.iter().cloned().collect(),
        Value::Map(m) => m.iter().map(|(k, v)| entry(k, v)).collect(),
        other => return Err(type_error("this operation", "a collection", other)),
    })
}

/// Calls `f` on each element of any collection without copying the collection.
pub(super) fn each(
    fname: &str,
    coll: &Value,
    mut f: impl FnMut(Value) -> EvalResult<()>,
) -> EvalResult<()> {
    match coll {
        Value::Nil => Ok(()),
        Value::Vector(xs) => crate::value::prefetching(xs).try_for_each(|x| f(x.clone())),
        Value::Str(s) => chars(s).try_for_each(f),
        Value::Set(s) => s.iter().try_for_each(|x| f(x.clone())),
        Value::Map(m) => m.iter().try_for_each(|(k, v)| f(entry(k, v))),
        other => Err(type_error(fname, "a collection", other).into()),
    }
}

/// The elements of an ordered collection (vector, string, nil); sets and maps are refused.
pub(super) fn ordered_items(fname: &str, v: &Value) -> Result<Vec<Value>, Error> {
    Ok(match v {
        Value::Nil => Vec::new(),
        Value::Vector(xs) => {
            crate::guard::reserve(crate::guard::values_bytes(xs.len()));
            guard::charged(xs.iter()).cloned().collect()
        }
        Value::Str(s) => chars(s).collect(),
        Value::Map(_) | Value::Set(_) => return Err(unordered(fname, v)),
        other => return Err(type_error(fname, "a vector or string", other)),
    })
}

pub(super) fn vec_of(items: Vec<Value>) -> EvalResult {
    Ok(Value::vector(items))
}
