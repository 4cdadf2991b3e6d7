//! Keywords used as functions: field reads on maps, and their type errors.

use super::*;

/// `(:k m default?)`: flexible lookup in a map; nil gives the default; anything else is an error.
#[inline]
pub fn keyword_get(k: &Value, m: &Value, default: Option<Value>) -> Result<Value, Error> {
    match m {
        Value::Map(map) => match flex_get(map, k) {
            Some(v) => Ok(v.clone()),
            None => Ok(default.unwrap_or_default()),
        },
        Value::Nil => Ok(default.unwrap_or_default()),
        other => Err(keyword_type_error(k, other)),
    }
}

/// `(:k m)` without a default, borrowed from the map: for chains of field reads, whose maps in
/// between need no clone.
#[inline]
pub fn keyword_ref<'m>(k: &Value, m: &'m Value) -> Result<&'m Value, Error> {
    static NIL: Value = Value::Nil;
    match m {
        Value::Map(map) => Ok(flex_get(map, k).unwrap_or(&NIL)),
        Value::Nil => Ok(&NIL),
        other => Err(keyword_type_error(k, other)),
    }
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
