//! Tool arguments as a Python tool receives them: positional values, and named arguments
//! (a single map or keyword/value pairs) as a dict whose keys lose their `:` and `-`; and a
//! tool's exception as the text the program sees.

use pyo3::prelude::*;

use crate::value::{Value, ValueMap};

/// The call shapes of LANGUAGE.md §8.2: a single map or keyword/value pairs are named arguments,
/// as one map (a repeated keyword keeps its last value, as in a map literal).
pub fn named_args(args: &[Value]) -> Option<Value> {
    match args {
        [Value::Map(_)] => Some(args[0].clone()),
        _ if args.len() % 2 == 0 && args.chunks(2).all(|p| matches!(p[0], Value::Keyword(_))) => {
            let mut m = ValueMap::with_capacity_and_hasher(args.len() / 2, Default::default());
            m.extend(args.chunks(2).map(|p| (p[0].clone(), p[1].clone())));
            Some(Value::map(m))
        }
        _ => None,
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
