//! The typed boundary: what a run hands to Python. Results, tool-call records and definitions
//! are classes whose values stay core values until read; their text (previews, argument text,
//! samples) is rendered in Rust from the core values, O(shown).

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyString};

use super::control::bounded;
use super::convert::{scalar_to_python, ToPy};
use super::errors::lisp_error;
use super::lazy::render;
pub use super::lazy::LazyValue;
use super::suspend::{PendingCall, Suspended};
use crate::error::Error;
use crate::format::{
    MENTION_LIMIT, MENTION_PRINTABLE_LIMIT, PREVIEW_LIMIT, PREVIEW_PRINTABLE_LIMIT,
    TOOL_ARGS_LIMIT, TOOL_ARGS_PRINTABLE_LIMIT,
};
use crate::limits::Limits;
use crate::session::Outcome;
use crate::value::Value;

/// How a value Python cannot hold (too deep, keys that collide in Python, a date out of
/// Python's range) is reported.
fn unconvertible(message: String) -> Error {
    Error::exec(message).with_hint("return a flatter value, e.g. (flatten v) or a summary")
}

/// Converts `v` to Python. `Ok(Err(..))`: Python cannot hold it (the explained error);
/// `Err`: an exception to raise as it is (Ctrl-C during the conversion).
pub fn try_to_python<'py>(
    py: Python<'py>,
    v: &Value,
) -> PyResult<Result<Bound<'py, PyAny>, Error>> {
    if let Some((o, bytes)) = scalar_to_python(py, v) {
        if bytes > 0 {
            crate::guard::charge_bytes(bytes);
        }
        return Ok(Ok(o));
    }
    match ToPy::new(py)?.convert(v) {
        Ok(o) => Ok(Ok(o)),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyException>(py) => {
            Ok(Err(unconvertible(e.value(py).to_string())))
        }
        Err(e) => Err(e),
    }
}

/// Converts `v` to Python; a value Python cannot hold raises its `ExecutionError`.
pub fn to_python<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    try_to_python(py, v)?.map_err(|e| lisp_error(py, &e))
}

/// Python's `repr` of a text (or `None`), for the classes' reprs.
fn text_repr(py: Python<'_>, s: Option<&str>) -> String {
    match s {
        None => "None".into(),
        Some(s) => PyString::new(py, s)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| format!("{s:?}")),
    }
}

/// One tool call made by a run: the arguments as the program passed them, the result or the
/// error. Arguments and result convert on first access.
#[pyclass(module = "ptc", name = "ToolCall", frozen)]
pub struct ToolCall {
    #[pyo3(get)]
    name: String,
    args: Vec<Value>,
    result: Option<Value>,
    #[pyo3(get)]
    error: Option<String>,
    #[pyo3(get)]
    duration_ms: f64,
    /// Still running when the run ended (deadline, cancel, Ctrl-C): its result is discarded.
    #[pyo3(get)]
    abandoned: bool,
    /// Where in the run the call happened: the same id in every replay of the run.
    id: crate::value::Str,
    /// None for a call that needed no decision; else "approved", "answered" (the host gave
    /// its value) or "rejected" (not called: the program got a `rejected` error).
    #[pyo3(get)]
    decision: Option<&'static str>,
    /// Answered from the record of an earlier run of the program (a resume): not called again.
    #[pyo3(get)]
    replayed: bool,
    limits: Limits,
    args_py: PyOnceLock<Py<PyList>>,
    result_py: PyOnceLock<Py<PyAny>>,
}

impl ToolCall {
    pub fn new(
        name: String,
        args: Vec<Value>,
        result: Option<Value>,
        error: Option<String>,
        duration_ms: f64,
        abandoned: bool,
        limits: Limits,
    ) -> Self {
        ToolCall {
            name,
            args,
            result,
            error,
            duration_ms,
            abandoned,
            id: crate::value::Str::default(),
            decision: None,
            replayed: false,
            limits,
            args_py: PyOnceLock::new(),
            result_py: PyOnceLock::new(),
        }
    }
}

impl ToolCall {
    /// The call's id and how it came to its outcome.
    pub fn with_place(
        mut self,
        id: &crate::value::Str,
        how: crate::eval::How,
        replayed: bool,
    ) -> Self {
        self.id = id.clone();
        self.decision = (how != crate::eval::How::Called).then(|| how.as_str());
        self.replayed = replayed;
        self
    }
}

/// A tool argument or result too deep for Python is shown as its (truncated) printed text.
fn convert_or_text<'py>(conv: &mut ToPy<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    match conv.convert(v) {
        Ok(o) => Ok(o),
        Err(e) if !e.is_instance_of::<pyo3::exceptions::PyException>(conv.py()) => Err(e),
        Err(_) => {
            let (text, _) = crate::format::to_clojure(v, Some(10), Some(200));
            Ok(PyString::new(conv.py(), &text).into_any())
        }
    }
}

#[pymethods]
impl ToolCall {
    /// Where in the run the call happened: the same id in every replay of the run.
    #[getter]
    fn id(&self) -> &str {
        &self.id
    }

    /// The arguments as Python objects (converted on first access).
    #[getter]
    fn args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = self.args_py.get_or_try_init(py, || {
            bounded(py, self.limits, || {
                let mut conv = ToPy::new(py)?;
                let out = PyList::empty(py);
                for a in &self.args {
                    out.append(convert_or_text(&mut conv, a)?)?;
                }
                Ok(out.unbind())
            })
        })?;
        Ok(list.bind(py).clone())
    }

    /// The tool's result as Python objects (None when it failed or was abandoned).
    #[getter]
    fn result<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let Some(v) = &self.result else {
            return Ok(py.None().into_bound(py));
        };
        let obj = self.result_py.get_or_try_init(py, || {
            bounded(py, self.limits, || {
                Ok(convert_or_text(&mut ToPy::new(py)?, v)?.unbind())
            })
        })?;
        Ok(obj.bind(py).clone())
    }

    /// The arguments as one unconverted vector (`get()` converts them).
    #[getter]
    fn lazy_args(&self, py: Python<'_>) -> PyResult<Py<LazyValue>> {
        Py::new(
            py,
            LazyValue::new(Value::vector(self.args.clone()), self.limits),
        )
    }

    /// The result unconverted (nil when the call failed or was abandoned).
    #[getter]
    fn lazy_result(&self, py: Python<'_>) -> PyResult<Py<LazyValue>> {
        let v = self.result.clone().unwrap_or(Value::Nil);
        Py::new(py, LazyValue::new(v, self.limits))
    }

    /// The arguments in Clojure syntax separated by spaces, rendered from the core values.
    #[pyo3(signature = (limit=Some(TOOL_ARGS_LIMIT), printable_limit=Some(TOOL_ARGS_PRINTABLE_LIMIT)))]
    fn args_text(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
        printable_limit: Option<usize>,
    ) -> PyResult<String> {
        bounded(py, self.limits, || {
            let parts = self
                .args
                .iter()
                .map(|a| render(a, (limit, printable_limit, true), (None, "", None)))
                .collect::<PyResult<Vec<String>>>()?;
            Ok(parts.join(" "))
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ToolCall(name={}, args=[{}], error={}, duration_ms={:.3}, abandoned={})",
            text_repr(py, Some(&self.name)),
            self.args_text(py, Some(MENTION_LIMIT), Some(MENTION_PRINTABLE_LIMIT))?,
            text_repr(py, self.error.as_deref()),
            self.duration_ms,
            if self.abandoned { "True" } else { "False" },
        ))
    }
}

/// A user definition (`def`/`defn`) with the metadata host summaries need; its sample is
/// rendered from the core value.
#[pyclass(module = "ptc", name = "Definition", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash, Clone)]
pub struct Definition {
    #[pyo3(get)]
    pub name: String,
    /// "function" or "value".
    #[pyo3(get)]
    pub kind: &'static str,
    #[pyo3(get)]
    pub doc: Option<String>,
    #[pyo3(get)]
    pub params: Option<Vec<String>>,
    #[pyo3(get)]
    pub return_type: Option<String>,
    #[pyo3(get, name = "type")]
    pub type_label: String,
    #[pyo3(get)]
    pub sample: Option<String>,
}

#[pymethods]
impl Definition {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "Definition(name={}, kind={}, type={}, sample={})",
            text_repr(py, Some(&self.name)),
            text_repr(py, Some(self.kind)),
            text_repr(py, Some(&self.type_label)),
            text_repr(py, self.sample.as_deref()),
        )
    }
}

/// What one run produced. `ok` is true when the program finished without an error and
/// without `(fail ...)`; `value` is the last value, the returned value or the fail reason;
/// `warnings` are notes for the host the program never sees (a `data/` name not in the input).
#[pyclass(module = "ptc", name = "Result", frozen)]
pub struct RunOutcome {
    pub outcome: Outcome,
    pub value: Py<LazyValue>,
    pub error: Option<Error>,
    pub prints: Vec<String>,
    /// Notes for the host, not the program (a `data/` name read that is not in the input).
    pub warnings: Vec<String>,
    pub tool_calls: Vec<Py<ToolCall>>,
    pub defined: Vec<Py<Definition>>,
    pub duration_ms: f64,
    pub steps: u64,
    /// The calls the run stopped at (outcome "pending").
    pub pending: Vec<Py<PendingCall>>,
    /// What a pending run leaves for its continuation.
    pub suspended: Option<Box<Suspended>>,
    error_py: PyOnceLock<Py<PyAny>>,
    prints_py: PyOnceLock<Py<PyList>>,
    continuation: PyOnceLock<Py<PyAny>>,
}

impl RunOutcome {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        outcome: Outcome,
        value: Py<LazyValue>,
        error: Option<Error>,
        prints: Vec<String>,
        tool_calls: Vec<Py<ToolCall>>,
        defined: Vec<Py<Definition>>,
        duration_ms: f64,
        steps: u64,
    ) -> Self {
        RunOutcome {
            outcome,
            value,
            error,
            prints,
            warnings: Vec::new(),
            tool_calls,
            defined,
            duration_ms,
            steps,
            pending: Vec::new(),
            suspended: None,
            error_py: PyOnceLock::new(),
            prints_py: PyOnceLock::new(),
            continuation: PyOnceLock::new(),
        }
    }

    /// The same outcome stopped at `pending`, with what its continuation needs.
    pub fn with_pending(mut self, pending: Vec<Py<PendingCall>>, suspended: Suspended) -> Self {
        self.pending = pending;
        self.suspended = Some(Box::new(suspended));
        self
    }

    /// The same outcome with the run's warnings.
    pub fn with_warnings(mut self, warnings: Vec<String>) -> Self {
        self.warnings = warnings;
        self
    }
}

#[pymethods]
impl RunOutcome {
    #[getter]
    fn ok(&self) -> bool {
        matches!(self.outcome, Outcome::Value | Outcome::Return)
    }

    /// True when the run stopped at calls waiting for the host (see `pending`).
    #[getter]
    fn is_pending(&self) -> bool {
        self.outcome == Outcome::Pending
    }

    /// The value as Python objects. Converted when the run ended, unless the run was made
    /// with `lazy=True`: then on first access.
    #[getter]
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.value.get().get_bound(py)
    }

    /// The value without converting it: `preview()`, `type_label`, `get()`.
    #[getter]
    fn lazy_value<'py>(&self, py: Python<'py>) -> Bound<'py, LazyValue> {
        self.value.bind(py).clone()
    }

    #[getter]
    fn returned(&self) -> bool {
        self.outcome == Outcome::Return
    }

    #[getter]
    fn failed(&self) -> bool {
        self.outcome == Outcome::Fail
    }

    /// The program error (a `ptc.LispError` subclass), or None.
    #[getter]
    fn error<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let Some(e) = &self.error else {
            return Ok(py.None().into_bound(py));
        };
        let obj = self
            .error_py
            .get_or_init(py, || lisp_error(py, e).into_value(py).into_any());
        Ok(obj.bind(py).clone())
    }

    #[getter]
    fn prints<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = self
            .prints_py
            .get_or_try_init(py, || PyList::new(py, &self.prints).map(Bound::unbind))?;
        Ok(list.bind(py).clone())
    }

    /// Notes for the host about this run, never shown to the program: each `data/` name the
    /// run read that is not in the input (nil by the language's rule), with the nearest names.
    #[getter]
    fn warnings<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, &self.warnings)
    }

    #[getter]
    fn tool_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.tool_calls.iter().map(|c| c.clone_ref(py)))
    }

    #[getter]
    fn defined<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.defined.iter().map(|d| d.clone_ref(py)))
    }

    #[getter]
    fn duration_ms(&self) -> f64 {
        self.duration_ms
    }

    #[getter]
    fn steps(&self) -> u64 {
        self.steps
    }

    /// "value", "return", "fail" or "error".
    #[getter]
    fn outcome(&self) -> &'static str {
        match self.outcome {
            Outcome::Value => "value",
            Outcome::Return => "return",
            Outcome::Fail => "fail",
            Outcome::Error => "error",
            Outcome::Pending => "pending",
        }
    }

    /// The calls the run stopped at, waiting for the host (empty unless `outcome` is
    /// "pending"): decide them and continue with `Session.resume`.
    #[getter]
    fn pending<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.pending.iter().map(|c| c.clone_ref(py)))
    }

    /// Everything needed to continue a pending run, in this process or another
    /// (`ptc.Continuation`); None for a run that finished.
    #[getter]
    fn continuation<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let me = slf.get();
        if me.suspended.is_none() {
            return Ok(py.None().into_bound(py));
        }
        let obj = me.continuation.get_or_try_init(py, || {
            py.import("ptc.approvals")?
                .getattr("Continuation")?
                .call_method1("_of", (slf,))
                .map(Bound::unbind)
        })?;
        Ok(obj.bind(py).clone())
    }

    /// The record of a pending run, JSON-ready (for `ptc.Continuation`).
    fn _suspended<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match &self.suspended {
            Some(s) => super::suspend::suspended_tree(py, s, &self.pending),
            None => Ok(py.None().into_bound(py)),
        }
    }

    /// The value in Clojure syntax, rendered from the core value without converting it (as
    /// `LazyValue.preview`).
    #[pyo3(signature = (limit=Some(PREVIEW_LIMIT), printable_limit=Some(PREVIEW_PRINTABLE_LIMIT), hide_private=true, *, max_tokens=None, encoding="o200k_base", root=None))]
    #[allow(clippy::too_many_arguments)]
    fn preview(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
        printable_limit: Option<usize>,
        hide_private: bool,
        max_tokens: Option<usize>,
        encoding: &str,
        root: Option<&str>,
    ) -> PyResult<String> {
        self.value.get().preview(
            py,
            limit,
            printable_limit,
            hide_private,
            max_tokens,
            encoding,
            root,
        )
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let head = match &self.error {
            Some(e) => format!("error={}", text_repr(py, Some(&e.message))),
            None => format!(
                "value={}",
                self.preview(
                    py,
                    Some(MENTION_LIMIT),
                    Some(MENTION_PRINTABLE_LIMIT),
                    true,
                    None,
                    "",
                    None,
                )?
            ),
        };
        Ok(format!(
            "Result(outcome={}, {head})",
            text_repr(py, Some(self.outcome()))
        ))
    }
}

/// The Python classes of this module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RunOutcome>()?;
    m.add_class::<LazyValue>()?;
    m.add_class::<ToolCall>()?;
    m.add_class::<Definition>()?;
    m.add_class::<PendingCall>()?;
    Ok(())
}
