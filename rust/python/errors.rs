//! Core errors as Python exceptions (the classes generated from the core's error kinds) and as
//! records.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

use super::result::{LazyValue, RunOutcome};
use crate::error::Error;
use crate::limits::Limits;
use crate::session::{Outcome, RunResult};
use crate::value::Value;

pub(super) static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

pub(super) fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ERRORS_MODULE
        .get_or_try_init(py, || Ok(py.import("ptc.errors")?.unbind()))
        .map(|m| m.bind(py))
}

/// The Python exception for a core error (`ptc.errors.error_from_core`).
pub(super) fn lisp_error(py: Python<'_>, e: &Error) -> PyErr {
    let made = errors_module(py).and_then(|m| {
        let exc = m
            .getattr("error_from_core")?
            .call1((error_tuple(py, e)?,))?;
        Ok(PyErr::from_value(exc))
    });
    made.unwrap_or_else(|err| err)
}

/// `ptc.Cancelled`: the run was stopped by `Session.cancel()`.
pub(super) fn cancelled(py: Python<'_>) -> PyErr {
    let made = errors_module(py).and_then(|m| {
        let cls = m.getattr("Cancelled")?;
        let cls = cls.cast::<PyType>()?;
        Ok(PyErr::from_type(cls.clone(), "the run was cancelled"))
    });
    made.unwrap_or_else(|err| err)
}

pub(super) fn error_tuple<'py>(py: Python<'py>, e: &Error) -> PyResult<Bound<'py, PyTuple>> {
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

/// The result of a run whose result could not be converted within its budget: the limit
/// error and the prints, nothing else.
pub(super) fn limit_outcome(
    py: Python<'_>,
    r: &RunResult,
    e: &Error,
    limits: Limits,
) -> PyResult<RunOutcome> {
    Ok(RunOutcome::new(
        Outcome::Error,
        Py::new(py, LazyValue::converted(py, Value::Nil, limits, py.None()))?,
        Some(e.clone()),
        r.prints.clone(),
        Vec::new(),
        Vec::new(),
        r.duration.as_secs_f64() * 1000.0,
        r.steps,
    )
    .with_warnings(r.warnings.clone()))
}
