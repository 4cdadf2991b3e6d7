//! Tool arguments as a Python tool receives them: positional values, and named arguments
//! (a single map or keyword/value pairs) as a dict whose keys lose their `:` and `-`; and a
//! tool's exception as the text the program sees.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::ToPy;
use crate::guard;
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

/// Named-argument values: keyword keys become strings with `-` replaced by `_`, recursively.
/// Like every conversion, bounded: nesting as for results, elements and memory charged.
pub fn named_value<'py>(
    conv: &mut ToPy<'py>,
    py: Python<'py>,
    v: &Value,
    depth: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if depth >= super::convert::MAX_OUTPUT_DEPTH {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a tool argument is nested more than {} levels deep",
            super::convert::MAX_OUTPUT_DEPTH
        )));
    }
    match v {
        Value::Map(m) => {
            guard::charge_bytes(216 + 48 * m.len());
            let d = PyDict::new(py);
            for (k, val) in guard::charged(m.iter()) {
                let val = guard::deeper(|| named_value(conv, py, val, depth + 1))?;
                // a map's keys are different in the program: any clash is a collision
                set_named(&d, named_key(conv, k)?, val, k, std::iter::empty())?;
            }
            Ok(d.into_any())
        }
        Value::Vector(xs) => {
            guard::charge_bytes(72 + 8 * xs.len());
            let l = PyList::empty(py);
            for x in guard::charged(xs.iter()) {
                l.append(guard::deeper(|| named_value(conv, py, x, depth + 1))?)?;
            }
            Ok(l.into_any())
        }
        other => conv.convert(other),
    }
}

/// Sets `key` (the Python form of the program's key `k`) in `d`, refusing a key already there
/// from another program key: `:a-b` and `:a_b` (or `:a` and `"a"`) are different keys in the
/// program and one in Python, which would keep only the last. `earlier` are the program keys
/// set before; a repeated keyword/value pair (the same key) keeps the last, as in a map.
pub fn set_named<'a, 'py>(
    d: &Bound<'py, PyDict>,
    key: Bound<'py, PyAny>,
    val: Bound<'py, PyAny>,
    k: &Value,
    mut earlier: impl Iterator<Item = &'a Value>,
) -> PyResult<()> {
    if d.contains(&key)? && !earlier.any(|e| e == k) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "two named arguments become the one Python key {}, which would keep only one: {} \
             and an earlier key (a keyword's `-` becomes `_`; a keyword equals a string of its \
             text)",
            key.repr()?,
            crate::format::mention(k)
        )));
    }
    d.set_item(key, val)
}

pub fn named_key<'py>(conv: &mut ToPy<'py>, k: &Value) -> PyResult<Bound<'py, PyAny>> {
    match k {
        Value::Keyword(s) => {
            Ok(pyo3::types::PyString::new(conv.py(), &s.replace('-', "_")).into_any())
        }
        other => conv.convert(other),
    }
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
