//! A core value handed to Python unconverted (`Result.lazy_value`, a tool call's lazy
//! arguments and result): converted on first `get()`, previewed from the core value.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use super::control::bounded;
use super::result::to_python;
use crate::format::{
    PrintOpts, MENTION_LIMIT, MENTION_PRINTABLE_LIMIT, PREVIEW_LIMIT, PREVIEW_PRINTABLE_LIMIT,
};
use crate::limits::Limits;
use crate::value::Value;

pub(super) fn render(
    v: &Value,
    opts: (Option<usize>, Option<usize>, bool),
    tokens: (Option<usize>, &str, Option<&str>),
) -> PyResult<String> {
    let (limit, printable_limit, hide_private) = opts;
    let opts = PrintOpts {
        limit,
        printable_limit,
        hide_private,
    };
    let (max_tokens, encoding, root) = tokens;
    Ok(super::functions::within(&v, opts, max_tokens, encoding, root)?.0)
}

/// A core value handed to Python unconverted: `get()` converts it on first call (within the
/// Session's limits) and keeps the Python object; `preview()` renders it without converting.
#[pyclass(module = "ptc", name = "LazyValue", frozen)]
pub struct LazyValue {
    value: Value,
    limits: Limits,
    converted: PyOnceLock<Py<PyAny>>,
}

impl LazyValue {
    pub fn new(value: Value, limits: Limits) -> Self {
        LazyValue {
            value,
            limits,
            converted: PyOnceLock::new(),
        }
    }

    /// A value already converted (the run converted it within its own budget).
    pub fn converted(py: Python<'_>, value: Value, limits: Limits, obj: Py<PyAny>) -> Self {
        let v = LazyValue::new(value, limits);
        let _ = v.converted.set(py, obj);
        v
    }

    pub fn core(&self) -> &Value {
        &self.value
    }

    pub fn get_bound<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(o) = self.converted.get(py) {
            return Ok(o.bind(py).clone());
        }
        let o = bounded(py, self.limits, || to_python(py, &self.value))?;
        // another thread may have converted it meanwhile: keep the first
        let kept = self.converted.get_or_init(py, || o.unbind());
        Ok(kept.bind(py).clone())
    }
}

impl Drop for LazyValue {
    fn drop(&mut self) {
        crate::memory::dropper::release(std::mem::take(&mut self.value));
    }
}

#[pymethods]
impl LazyValue {
    /// The value as Python objects (converted once; raises an `ExecutionError` for a value
    /// Python cannot hold and a `LimitError` when converting it exceeds the Session's limits).
    fn get<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.get_bound(py)
    }

    /// Whether `get()` has converted the value already.
    #[getter]
    fn is_converted(&self, py: Python<'_>) -> bool {
        self.converted.get(py).is_some()
    }

    /// The value in Clojure syntax, at most `limit` elements per collection and
    /// `printable_limit` characters per string (`None`: no bound); map entries whose key
    /// starts with `_` are hidden unless `hide_private=False`.
    /// With `max_tokens` the text counts at most that many tokens in `encoding`, its elision
    /// markers naming `root` as the way to the value (`ptc.to_clojure`).
    #[pyo3(signature = (limit=Some(PREVIEW_LIMIT), printable_limit=Some(PREVIEW_PRINTABLE_LIMIT), hide_private=true, *, max_tokens=None, encoding="o200k_base", root=None))]
    #[allow(clippy::too_many_arguments)]
    pub fn preview(
        &self,
        py: Python<'_>,
        limit: Option<usize>,
        printable_limit: Option<usize>,
        hide_private: bool,
        max_tokens: Option<usize>,
        encoding: &str,
        root: Option<&str>,
    ) -> PyResult<String> {
        bounded(py, self.limits, || {
            render(
                &self.value,
                (limit, printable_limit, hide_private),
                (max_tokens, encoding, root),
            )
        })
    }

    /// The value's type label as shown to the LLM (`vector[3]`, `map`, `string`, ...).
    #[getter]
    fn type_label(&self) -> String {
        self.value.type_label()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "LazyValue({})",
            self.preview(
                py,
                Some(MENTION_LIMIT),
                Some(MENTION_PRINTABLE_LIMIT),
                true,
                None,
                "",
                None,
            )?
        ))
    }
}
