//! `SessionBase`, the base class of `ptc.Session`: its `run` is called straight from Python.
//! A Python method in front of the core's run cost about 150 ns per call (a frame, the checks,
//! the arguments passed on), a sixth of a tiny program's whole run; here the common call (a
//! `str` program, no `limits`) goes to the core directly and anything else takes the Python
//! path, `Session._run_checked`, which checks and normalizes the arguments as before.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple};

use super::control::CancelToken;
use super::core_session::CoreSession;

#[pyclass(module = "ptc._core", frozen, subclass, name = "SessionBase")]
pub struct SessionBase {
    core: PyOnceLock<Py<CoreSession>>,
}

#[pymethods]
impl SessionBase {
    /// Made empty (a subclass's `__init__` attaches its core); takes any arguments, which are
    /// the subclass's.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        SessionBase {
            core: PyOnceLock::new(),
        }
    }

    /// Attaches the Session's core, once.
    fn _attach(&self, py: Python<'_>, core: Py<CoreSession>) -> PyResult<()> {
        self.core.set(py, core).map_err(|_| {
            pyo3::exceptions::PyRuntimeError::new_err("the Session already has its core")
        })
    }

    /// The Session's core.
    #[getter]
    fn _core(&self, py: Python<'_>) -> PyResult<Py<CoreSession>> {
        Ok(self.core(py)?.clone_ref(py))
    }

    /// Runs one program. Never raises for program errors: see ``Result.error``.
    ///
    /// ``source`` is the program text; ``limits`` a ``Limits`` or a mapping of overrides for
    /// this run; ``cancel`` a ``CancelToken`` that stops this run.
    ///
    /// The result's value is converted to Python when the run ends, so a value Python cannot
    /// hold makes the run an error and it commits nothing. With ``lazy=True`` a last value
    /// (not a ``return`` or ``fail`` value) stays in the core until ``Result.value`` is read;
    /// ``Result.preview()`` and ``Result.lazy_value`` show it without converting it.
    ///
    /// Runs of one Session happen one at a time (a call from another thread waits). Raises
    /// `Cancelled` when `cancel()` or the given `CancelToken` stops the run, and lets
    /// ``KeyboardInterrupt`` (Ctrl-C) and other exceptions that are not ``Exception`` — from a
    /// tool or a signal handler — propagate; in all these cases the Session is left unchanged.
    ///
    /// With `check=True` the program is checked first (`Session.check`): one with errors is
    /// not run, and the Result carries the first error (its tool calls never happen).
    ///
    /// With `approved=plan` (a `ptc.Plan`, possibly edited by the host) the calls of approval
    /// tools the plan covers run without stopping; any other stops the run as pending.
    #[pyo3(signature = (source, *, limits=None, cancel=None, lazy=false, check=false, approved=None))]
    fn run<'py>(
        slf: &Bound<'py, Self>,
        source: &Bound<'py, PyAny>,
        limits: Option<&Bound<'py, PyAny>>,
        cancel: Option<&Bound<'py, PyAny>>,
        lazy: bool,
        check: bool,
        approved: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if check || approved.is_some() {
            return slf.call_method1(
                "_run_checked",
                (source, limits, cancel, lazy, check, approved),
            );
        }
        let py = slf.py();
        let token = match cancel {
            None => Some(None),
            Some(c) => c.cast::<CancelToken>().ok().map(Some),
        };
        let text = source.cast::<PyString>().ok().and_then(|s| s.to_str().ok());
        if let (None, Some(text), Some(token)) = (limits, text, token) {
            let core = slf.get().core(py)?.get();
            let token = token.map(|t| t.get());
            return Ok(
                Bound::new(py, core.run(py, text, None, token, lazy, None, None, None)?)?
                    .into_any(),
            );
        }
        // the checks and their messages live in Python: not a str, a text that is not valid
        // Unicode, limits to normalize, a cancel that is not a token
        slf.call_method1("_run_checked", (source, limits, cancel, lazy))
    }
}

impl SessionBase {
    fn core<'a>(&'a self, py: Python<'_>) -> PyResult<&'a Py<CoreSession>> {
        self.core.get(py).ok_or_else(|| {
            pyo3::exceptions::PyRuntimeError::new_err(
                "the Session has no core: its __init__ did not run",
            )
        })
    }
}
