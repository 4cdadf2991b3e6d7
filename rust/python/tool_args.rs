//! Tool arguments as a Python tool receives them: positional values, and named arguments
//! (a single map or keyword/value pairs) as a dict whose keys lose their `:` and `-`; and a
//! tool's exception as the text the program sees.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::convert::named_clash;
use crate::value::Value;

/// The call shapes of LANGUAGE.md §8.2: a single map or keyword/value pairs are named arguments.
pub fn named_args(args: &[Value]) -> Option<Vec<(Value, Value)>> {
    match args {
        [] => Some(Vec::new()),
        [Value::Map(m)] => Some(m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        _ if args.len() % 2 == 0 && args.chunks(2).all(|p| matches!(p[0], Value::Keyword(_))) => {
            Some(
                args.chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Sets `key` (the Python form of the program's key `k`) in `d`, refusing a key already there
/// from another program key (see [`named_clash`]). `earlier` are the program keys set before;
/// a repeated keyword/value pair (the same key) keeps the last, as in a map.
pub fn set_named<'a, 'py>(
    d: &Bound<'py, PyDict>,
    key: Bound<'py, PyAny>,
    val: Bound<'py, PyAny>,
    k: &Value,
    mut earlier: impl Iterator<Item = &'a Value>,
) -> PyResult<()> {
    if d.contains(&key)? && !earlier.any(|e| e == k) {
        return Err(named_clash(&key, k));
    }
    d.set_item(key, val)
}

pub fn describe_exception(py: Python<'_>, e: &PyErr) -> String {
    let tname = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if msg.is_empty() {
        tname
    } else {
        format!("{tname}: {msg}")
    }
}
