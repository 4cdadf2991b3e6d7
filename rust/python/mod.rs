//! The PyO3 boundary: the `ptc._core` module. Nothing outside this folder knows about Python.
//! Every entry point runs the interpreter with the GIL released (`py.detach`); tool calls take
//! it back (`Python::attach`) and no Session lock is held while Python code runs.

mod convert;
mod host;
mod printable;

use std::sync::{Arc, Mutex, MutexGuard};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyTuple};

use crate::error::Error;
use crate::eval::UserNs;
use crate::format::{print, PrintOpts};
use crate::limits::Limits;
use crate::session::{commit, run_source, Outcome, RunResult, SessionState};
use crate::value::Value;

#[allow(unused_imports)]
use crate::value::Str;
use convert::{ToPy, ToValue};
use host::PyHost;

fn limits_from(base: Limits, d: Option<&Bound<'_, PyDict>>) -> PyResult<Limits> {
    let mut l = base;
    let Some(d) = d else { return Ok(l) };
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        let n: u64 = v.extract().map_err(|_| {
            PyValueError::new_err(format!("limit {key} must be a non-negative integer"))
        })?;
        let nz = usize::try_from(n).unwrap_or(usize::MAX);
        match key.as_str() {
            "fuel" => l.fuel = n,
            "timeout_ms" => l.timeout_ms = n,
            "max_depth" => l.max_depth = nz,
            "max_collection_size" => l.max_collection_size = nz,
            "max_string_size" => l.max_string_size = nz,
            "max_output" => l.max_output = nz,
            "max_memory" => l.max_memory = nz,
            "loop_limit" => l.loop_limit = n,
            "max_nesting" => l.max_nesting = nz,
            "max_symbols" => l.max_symbols = nz,
            other => return Err(PyValueError::new_err(format!("unknown limit {other:?}"))),
        }
    }
    Ok(l)
}

fn error_tuple<'py>(py: Python<'py>, e: &Error) -> PyResult<Bound<'py, PyTuple>> {
    let (line, col) = match e.pos {
        Some(p) => (Some(p.line), Some(p.col)),
        None => (None, None),
    };
    PyTuple::new(
        py,
        [
            e.kind.as_str().into_pyobject(py)?.into_any(),
            e.message.clone().into_pyobject(py)?.into_any(),
            e.hint.clone().into_pyobject(py)?.into_any(),
            line.into_pyobject(py)?.into_any(),
            col.into_pyobject(py)?.into_any(),
            e.limit.map(|l| l.as_str()).into_pyobject(py)?.into_any(),
        ],
    )
}

/// The sample shown next to a type label (seed 000): the first element of a vector or set,
/// the value itself otherwise; none for nil, empty collections and functions.
fn sample(v: &Value, limit: Option<usize>, plimit: Option<usize>) -> (Option<String>, bool) {
    let opts = PrintOpts {
        limit,
        printable_limit: plimit,
        hide_private: true,
    };
    let target = match v {
        Value::Nil | crate::fn_pat!() => return (None, false),
        Value::Vector(xs) => match xs.first() {
            Some(x) => x,
            None => return (None, false),
        },
        Value::Set(s) => match s.first() {
            Some(x) => x,
            None => return (None, false),
        },
        Value::Map(m) if m.is_empty() => return (None, false),
        other => other,
    };
    let (text, truncated) = print(&target, opts);
    (Some(text), truncated)
}

fn describe_tuple<'py>(
    py: Python<'py>,
    v: &Value,
    limit: Option<usize>,
    plimit: Option<usize>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (s, truncated) = sample(v, limit, plimit);
    (v.type_label(), s, truncated).into_pyobject(py)
}

fn definition_tuple<'py>(
    py: Python<'py>,
    name: &str,
    v: &Value,
    doc: Option<&str>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (kind, params, ret) = match v {
        Value::Closure(c) => (
            "function",
            Some(c.lambda.param_names.clone()),
            c.return_label(),
        ),
        Value::Builtin(_) | Value::Native(_) | Value::Tool(_) => ("function", None, None),
        _ => ("value", None, None),
    };
    let (s, _) = sample(v, Some(3), Some(80));
    (name, kind, doc, params, ret, v.type_label(), s).into_pyobject(py)
}

#[pyclass(module = "ptc._core", frozen, name = "CoreSession")]
pub struct CoreSession {
    state: Mutex<SessionState>,
    host: Arc<PyHost>,
    limits: Limits,
}

impl CoreSession {
    fn lock(&self) -> MutexGuard<'_, SessionState> {
        // A poisoned lock only means a panic was caught while it was held; the state is still valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A tool argument or result too deep for Python is recorded as its (truncated) printed text.
fn convert_or_text<'py>(conv: &mut ToPy<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    match conv.convert(v) {
        Ok(o) => Ok(o),
        Err(_) => {
            let (text, _) = crate::format::to_clojure(v, Some(10), Some(200));
            Ok(pyo3::types::PyString::new(conv.py(), &text).into_any())
        }
    }
}

fn run_result_tuple<'py>(
    py: Python<'py>,
    r: &RunResult,
    ns: &UserNs,
) -> PyResult<Bound<'py, PyTuple>> {
    let mut conv = ToPy::new(py)?;
    let outcome = match r.outcome {
        Outcome::Value => "value",
        Outcome::Return => "return",
        Outcome::Fail => "fail",
        Outcome::Error => "error",
    };
    let (outcome, value, error) = match conv.convert(&r.value) {
        Ok(v) => {
            let error = match &r.error {
                Some(e) => error_tuple(py, e)?.into_any(),
                None => py.None().into_bound(py),
            };
            (outcome, v, error)
        }
        // A result too deep for Python is reported as the run's error, not raised.
        Err(e) => {
            let err = Error::exec(e.value(py).to_string())
                .with_hint("return a flatter value, e.g. (flatten v) or a summary");
            (
                "error",
                py.None().into_bound(py),
                error_tuple(py, &err)?.into_any(),
            )
        }
    };
    let prints = PyList::new(py, &r.prints)?;
    let calls = PyList::empty(py);
    for c in &r.tool_calls {
        let args = PyList::empty(py);
        for a in &c.args {
            args.append(convert_or_text(&mut conv, a)?)?;
        }
        let result = match &c.result {
            Some(v) => convert_or_text(&mut conv, v)?,
            None => py.None().into_bound(py),
        };
        calls.append(
            (
                c.name.as_str(),
                args,
                result,
                c.error.clone(),
                c.duration.as_secs_f64() * 1000.0,
            )
                .into_pyobject(py)?,
        )?;
    }
    let defined = PyList::empty(py);
    for name in &r.defined {
        if let Some(d) = ns.get(name) {
            defined.append(definition_tuple(py, name, &d.value, d.doc.as_deref())?)?;
        }
    }
    (
        outcome,
        value,
        error,
        prints,
        calls,
        defined,
        r.duration.as_secs_f64() * 1000.0,
        r.steps,
    )
        .into_pyobject(py)
}

#[pymethods]
impl CoreSession {
    #[new]
    #[pyo3(signature = (data=None, tools=None, limits=None, data_json=None))]
    fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyDict>>,
        limits: Option<&Bound<'_, PyDict>>,
        data_json: Option<String>,
    ) -> PyResult<Self> {
        let data_value = match (data, data_json) {
            (_, Some(text)) => {
                // parsed straight into core values, with the GIL released
                let v = py
                    .detach(move || crate::json::from_json(&text))
                    .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.message.clone()))?;
                if !matches!(v, Value::Map(_)) {
                    return Err(pyo3::exceptions::PyValueError::new_err(
                        "JSON data must be an object whose keys become data/... names",
                    ));
                }
                v
            }
            (None, None) => Value::empty_map(),
            (Some(d), None) if d.is_none() => Value::empty_map(),
            (Some(d), None) => {
                let dict = d.cast::<PyDict>().map_err(|_| {
                    pyo3::exceptions::PyTypeError::new_err("data must be a dict of name -> value")
                })?;
                let mut conv = ToValue::new(py)?;
                // Data keys are names (data/name), so they are always looked up as keywords.
                let mut m = crate::value::ValueMap::default();
                for (k, v) in dict.iter() {
                    let key: String = k.extract().map_err(|_| {
                        pyo3::exceptions::PyTypeError::new_err("data keys must be strings")
                    })?;
                    let val = conv
                        .convert(&v)
                        .map_err(|e| e.into_pyerr(&format!("data.{key}")))?;
                    let kv = if crate::value::is_keyword_text(&key) {
                        Value::Keyword(Str::from(key.as_str()))
                    } else {
                        Value::Str(Str::from(key.as_str()))
                    };
                    m.insert(kv, val);
                }
                Value::map(m)
            }
        };
        let host = PyHost::new(tools)?;
        Ok(CoreSession {
            state: Mutex::new(SessionState::new(data_value)),
            host: Arc::new(host),
            limits: limits_from(Limits::default(), limits)?,
        })
    }

    /// Runs a program; returns a raw result tuple that `ptc.Result` wraps.
    #[pyo3(signature = (source, limits=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        limits: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let limits = limits_from(self.limits, limits)?;
        let snapshot = self.lock().clone();
        let host = self.host.clone();
        let src = source.to_string();
        let (result, ns) = py.detach(move || {
            let (r, ns) = run_source(&src, &snapshot, host.as_ref(), &limits);
            (r, ns)
        });
        let view_ns = ns.clone().unwrap_or_default();
        {
            let mut st = self.lock();
            commit(&mut st, &result, ns);
        }
        run_result_tuple(py, &result, &view_ns)
    }

    /// User definitions in first-definition order, as tuples
    /// (name, kind, doc, params, return_type, type_label, sample).
    fn definitions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ns = self.lock().user.clone();
        let out = PyList::empty(py);
        for (name, d) in ns.iter() {
            out.append(definition_tuple(py, name, &d.value, d.doc.as_deref())?)?;
        }
        Ok(out)
    }

    fn names(&self) -> Vec<String> {
        self.lock().user.keys().map(|k| k.to_string()).collect()
    }

    fn get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let v = self.lock().user.get(name).map(|d| d.value.clone());
        match v {
            Some(v) => ToPy::new(py)?.convert(&v),
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    fn has(&self, name: &str) -> bool {
        self.lock().user.contains_key(name)
    }

    #[pyo3(signature = (name, limit=Some(3), printable_limit=Some(80)))]
    fn describe<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        limit: Option<usize>,
        printable_limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.lock().user.get(name).map(|d| d.value.clone());
        match v {
            Some(v) => describe_tuple(py, &v, limit, printable_limit),
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    #[pyo3(signature = (key, limit=Some(3), printable_limit=Some(80)))]
    fn describe_data<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        limit: Option<usize>,
        printable_limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let data = self.lock().data.clone();
        let v = match &data {
            Value::Map(m) => crate::value::flex_get(m, &Value::Keyword(Str::from(key))).cloned(),
            _ => None,
        };
        match v {
            Some(v) => describe_tuple(py, &v, limit, printable_limit),
            None => Err(PyKeyError::new_err(key.to_string())),
        }
    }

    fn data_keys(&self) -> Vec<String> {
        match &self.lock().data {
            Value::Map(m) => m
                .keys()
                .filter_map(|k| match k {
                    Value::Keyword(s) | Value::Str(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    fn tool_names(&self) -> Vec<String> {
        self.host.names()
    }
}

/// `to_clojure(value, limit=None, printable_limit=None, hide_private=False) -> (text, truncated)`,
/// printing Python objects in place (O(output), the list is never walked past `limit`).
#[pyfunction]
#[pyo3(signature = (value, limit=None, printable_limit=None, hide_private=false))]
fn to_clojure(
    value: &Bound<'_, PyAny>,
    limit: Option<usize>,
    printable_limit: Option<usize>,
    hide_private: bool,
) -> PyResult<(String, bool)> {
    let kw = convert::keyword_type(value.py())?.clone();
    let node = printable::PyNode::new(value.clone(), kw);
    Ok(print(
        &node,
        PrintOpts {
            limit,
            printable_limit,
            hide_private,
        },
    ))
}

#[pyfunction]
fn type_label(value: &Bound<'_, PyAny>) -> PyResult<String> {
    let kw = convert::keyword_type(value.py())?.clone();
    Ok(printable::PyNode::new(value.clone(), kw).type_label())
}

/// Evaluates a program with no session state; returns the raw result tuple.
#[pyfunction]
#[pyo3(signature = (source, data=None, tools=None, limits=None))]
fn run_once<'py>(
    py: Python<'py>,
    source: &str,
    data: Option<&Bound<'py, PyAny>>,
    tools: Option<&Bound<'py, PyDict>>,
    limits: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let s = CoreSession::new(py, data, tools, limits, None)?;
    s.run(py, source, None)
}

/// Exact token count of `text` in an OpenAI encoding ("cl100k_base", "o200k_base").
#[pyfunction]
fn count_tokens(py: Python<'_>, text: &str, encoding: &str) -> PyResult<usize> {
    if !crate::tokens::ENCODINGS.contains(&encoding) {
        return Err(PyValueError::new_err(format!(
            "unknown encoding {encoding:?}; exact counts exist for {}",
            crate::tokens::ENCODINGS.join(", ")
        )));
    }
    let text = text.to_string();
    let enc = encoding.to_string();
    Ok(py.detach(move || crate::tokens::count_tokens(&text, &enc).unwrap_or(0)))
}

/// Names of every builtin function and constant, in table order.
#[pyfunction]
fn builtin_names() -> Vec<&'static str> {
    crate::builtins::names().collect()
}

/// Names of the special forms.
#[pyfunction]
fn special_forms() -> Vec<&'static str> {
    crate::analyzer::SPECIAL_FORMS.to_vec()
}

/// Panics inside the interpreter boundary, to prove that panics become internal errors.
#[pyfunction]
fn _panic_for_tests<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
    let state = SessionState::new(Value::empty_map());
    let (r, ns) =
        py.detach(|| run_source("(__panic__)", &state, &host::PanicHost, &Limits::default()));
    run_result_tuple(py, &r, &ns.unwrap_or_default())
}

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<CoreSession>()?;
    m.add_function(wrap_pyfunction!(to_clojure, m)?)?;
    m.add_function(wrap_pyfunction!(type_label, m)?)?;
    m.add_function(wrap_pyfunction!(run_once, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_names, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(special_forms, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    let defaults = Limits::default();
    let d = PyDict::new(m.py());
    d.set_item("fuel", defaults.fuel)?;
    d.set_item("timeout_ms", defaults.timeout_ms)?;
    d.set_item("max_depth", defaults.max_depth)?;
    d.set_item("max_collection_size", defaults.max_collection_size)?;
    d.set_item("max_string_size", defaults.max_string_size)?;
    d.set_item("max_output", defaults.max_output)?;
    d.set_item("max_memory", defaults.max_memory)?;
    d.set_item("loop_limit", defaults.loop_limit)?;
    d.set_item("max_nesting", defaults.max_nesting)?;
    d.set_item("max_symbols", defaults.max_symbols)?;
    m.add("DEFAULT_LIMITS", d)?;
    Ok(())
}
