//! Keywords used as functions: field reads on maps, and their type errors.

use crate::error::Error;
use crate::value::{flex_get, Value};

/// `(:k m)`: the value under `k` (flexible lookup, §4.4), `None` when it is absent or `m` is nil;
/// anything else is an error.
#[inline]
pub fn keyword_lookup<'m>(k: &Value, m: &'m Value) -> Result<Option<&'m Value>, Error> {
    match m {
        Value::Map(map) => Ok(flex_get(map, k)),
        Value::Nil => Ok(None),
        other => Err(keyword_type_error(k, other)),
    }
}

/// `(:k m default?)`: the value under `k`, or the default (nil without one).
#[inline]
pub fn keyword_get(k: &Value, m: &Value, default: Option<Value>) -> Result<Value, Error> {
    Ok(match keyword_lookup(k, m)? {
        Some(v) => v.clone(),
        None => default.unwrap_or_default(),
    })
}

/// `(:k m)` borrowed from the map: for chains of field reads, whose maps in between need no
/// clone.
#[inline]
pub fn keyword_ref<'m>(k: &Value, m: &'m Value) -> Result<&'m Value, Error> {
    static NIL: Value = Value::Nil;
    Ok(keyword_lookup(k, m)?.unwrap_or(&NIL))
}

/// A keyword used as the function of a collection builtin: nil for non-map elements (§7.0).
#[inline]
pub fn keyword_field(k: &Value, m: &Value) -> Value {
    match m {
        Value::Map(map) => match flex_get(map, k) {
            Some(v) => v.clone(),
            None => Value::Nil,
        },
        _ => Value::Nil,
    }
}

#[cold]
pub(super) fn keyword_type_error(k: &Value, other: &Value) -> Error {
    let name = match k {
        Value::Keyword(s) => s.to_string(),
        _ => String::new(),
    };
    let e = Error::type_err(format!(
        "(:{name} ...) expects a map, got {}",
        other.describe()
    ));
    if matches!(other, Value::Vector(_)) {
        e.with_hint(format!(
            "to get :{name} from every map in a list use (map :{name} coll) or (pluck :{name} coll)"
        ))
    } else {
        e
    }
}
