//! Host tools implemented by Python callables. The interpreter runs with the GIL released;
//! each tool call attaches, converts the arguments, calls, and converts the result back.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::{ToPy, ToValue};
use crate::eval::{Host, ToolFailure};
use crate::value::Value;

pub struct PyHost {
    /// (Lisp name, adapter) in registration order. The adapter (`ptc._tools.ToolAdapter`) is
    /// called as `adapter(positional_args, named_args_or_None)`.
    tools: Vec<(String, Py<PyAny>)>,
}

impl PyHost {
    pub fn new(tools: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut out = Vec::new();
        if let Some(t) = tools {
            for (k, v) in t.iter() {
                out.push((k.extract::<String>()?, v.unbind()));
            }
        }
        Ok(PyHost { tools: out })
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(n, _)| n.clone()).collect()
    }

    fn find(&self, name: &str) -> Option<&Py<PyAny>> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
}

/// The call shapes of LANGUAGE.md §8.2: a single map or keyword/value pairs are named arguments.
fn named_args(args: &[Value]) -> Option<Vec<(Value, Value)>> {
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
fn named_value<'py>(
    conv: &mut ToPy<'py>,
    py: Python<'py>,
    v: &Value,
) -> PyResult<Bound<'py, PyAny>> {
    match v {
        Value::Map(m) => {
            let d = PyDict::new(py);
            for (k, val) in m.iter() {
                d.set_item(named_key(conv, k)?, named_value(conv, py, val)?)?;
            }
            Ok(d.into_any())
        }
        Value::Vector(xs) => {
            let l = PyList::empty(py);
            for x in xs.iter() {
                l.append(named_value(conv, py, x)?)?;
            }
            Ok(l.into_any())
        }
        other => conv.convert(other),
    }
}

fn named_key<'py>(conv: &mut ToPy<'py>, k: &Value) -> PyResult<Bound<'py, PyAny>> {
    match k {
        Value::Keyword(s) => {
            Ok(pyo3::types::PyString::new(conv.py(), &s.replace('-', "_")).into_any())
        }
        other => conv.convert(other),
    }
}

fn describe_exception(py: Python<'_>, e: &PyErr) -> String {
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

impl Host for PyHost {
    fn has_tool(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    fn tool_names(&self) -> Vec<String> {
        self.names()
    }

    fn call_tool(&self, name: &str, args: &[Value]) -> Result<Value, ToolFailure> {
        let Some(f) = self.find(name) else {
            return Err(ToolFailure {
                message: format!("no tool {name}"),
            });
        };
        Python::attach(|py| {
            let fail = |e: PyErr| ToolFailure {
                message: describe_exception(py, &e),
            };
            let mut conv = ToPy::new(py).map_err(fail)?;
            let positional = PyList::empty(py);
            for a in args {
                positional
                    .append(conv.convert(a).map_err(fail)?)
                    .map_err(fail)?;
            }
            let named = match named_args(args) {
                Some(pairs) => {
                    let d = PyDict::new(py);
                    for (k, v) in &pairs {
                        d.set_item(
                            named_key(&mut conv, k).map_err(fail)?,
                            named_value(&mut conv, py, v).map_err(fail)?,
                        )
                        .map_err(fail)?;
                    }
                    d.into_any()
                }
                None => py.None().into_bound(py),
            };
            let result = f.bind(py).call1((positional, named)).map_err(fail)?;
            let mut back = ToValue::new(py).map_err(fail)?;
            back.convert(&result).map_err(|e| {
                let err = e.into_pyerr("result");
                ToolFailure {
                    message: format!(
                        "returned a value that cannot be used: {}",
                        describe_exception(py, &err)
                    ),
                }
            })
        })
    }
}

/// A host whose only tool panics: proves that a panic becomes an internal error.
pub struct PanicHost;

impl Host for PanicHost {
    fn has_tool(&self, name: &str) -> bool {
        name == "__panic__"
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["__panic__".into()]
    }
    #[allow(clippy::panic)]
    fn call_tool(&self, _: &str, _: &[Value]) -> Result<Value, ToolFailure> {
        panic!("deliberate panic for tests")
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Arc<PyHost>>();
}
