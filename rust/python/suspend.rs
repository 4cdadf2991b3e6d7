//! Runs that stop and go on: the record of a run as JSON-ready Python data (for
//! `ptc.Continuation`), read back into the core's `Tape`, the `PendingCall` class, and the
//! host's gate. Values in a record are written by `recorded.rs`.

use std::collections::HashMap;

use super::convert::ToPy;
use super::convert::ToValue;
use super::recorded::{decode, encode};
use crate::eval::{Entry, Gate, How, PendingCall as CorePending, Recorded, Tape, ToolCallRecord};
use crate::limits::Limits;
use crate::value::{Str, Value};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList};

/// A call the run stopped at, waiting for the host: approve it, reject it, or answer it
/// (`Session.resume`). `id` is stable across replays of the run.
#[pyclass(module = "ptc", name = "PendingCall", frozen)]
pub struct PendingCall {
    #[pyo3(get)]
    id: String,
    #[pyo3(get)]
    tool: String,
    args: Vec<Value>,
    /// Where the call is written (None through a tool value passed around).
    #[pyo3(get)]
    line: Option<u32>,
    #[pyo3(get)]
    column: Option<u32>,
    /// Started by an earlier run that ended before the tool returned: whether it took effect
    /// is unknown.
    #[pyo3(get)]
    interrupted: bool,
    limits: Limits,
    args_py: PyOnceLock<Py<PyList>>,
}

impl PendingCall {
    pub fn new(p: &CorePending, limits: Limits) -> PendingCall {
        PendingCall {
            id: p.id.to_string(),
            tool: p.name.to_string(),
            args: p.args.clone(),
            line: p.pos.map(|p| p.line),
            column: p.pos.map(|p| p.col),
            interrupted: p.interrupted,
            limits,
            args_py: PyOnceLock::new(),
        }
    }
}

#[pymethods]
impl PendingCall {
    /// A pending call read back from a continuation's record.
    #[staticmethod]
    fn _restore(
        id: String,
        tool: String,
        args: &Bound<'_, PyAny>,
        line: Option<u32>,
        column: Option<u32>,
        interrupted: bool,
    ) -> PyResult<PendingCall> {
        let args = match decode(args, "pending.args", 0)
            .map_err(pyo3::exceptions::PyValueError::new_err)?
        {
            Value::Vector(xs) => xs.to_vec(),
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "pending.args: expected a list",
                ))
            }
        };
        Ok(PendingCall {
            id,
            tool,
            args,
            line,
            column,
            interrupted,
            limits: Limits::default(),
            args_py: PyOnceLock::new(),
        })
    }

    /// The arguments as Python values, as the tool would receive them positionally.
    #[getter]
    fn args<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = self.args_py.get_or_try_init(py, || {
            super::control::bounded(py, self.limits, || {
                let mut conv = ToPy::new(py)?;
                let out = PyList::empty(py);
                for a in &self.args {
                    out.append(conv.convert(a)?)?;
                }
                Ok(out.unbind())
            })
        })?;
        Ok(list.bind(py).clone())
    }

    /// The call as the program wrote it, e.g. `(tool/refund "o-7" 120)`.
    fn describe(&self) -> String {
        let (args, _) =
            crate::format::to_clojure(&Value::vector(self.args.clone()), Some(10), Some(300));
        let inner = args.trim_start_matches('[').trim_end_matches(']');
        if inner.is_empty() {
            format!("(tool/{})", self.tool)
        } else {
            format!("(tool/{} {inner})", self.tool)
        }
    }

    fn __repr__(&self) -> String {
        format!("PendingCall(id={:?}, {})", self.id, self.describe())
    }
}

/// What a pending run leaves for its continuation: the program, its limits, the fingerprint
/// of the state it started from, the record of its calls (with the entries of its own record
/// it did not reach: a call of a branch that raced a failing one, kept so no tool is ever
/// called twice) and its clock readings, JSON-ready.
pub struct Suspended {
    pub source: String,
    pub limits: Limits,
    pub state: String,
    pub calls: Py<PyList>,
    pub clock: Py<PyList>,
}

fn outcome_tree<'py>(py: Python<'py>, d: &Bound<'py, PyDict>, outcome: &Recorded) -> PyResult<()> {
    match outcome {
        Recorded::Returned(v) => d.set_item("result", encode(py, v, 0)?),
        Recorded::Failed(m) => d.set_item("error", m.as_str()),
        Recorded::Rejected(r) => d.set_item("rejected", r.as_str()),
        Recorded::Approved => d.set_item("approved", true),
        Recorded::Interrupted => d.set_item("interrupted", true),
    }
}

/// One record entry as a JSON-ready dict.
fn entry_tree<'py>(py: Python<'py>, id: &str, e: &Entry) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("id", id)?;
    d.set_item("tool", e.name.as_str())?;
    if let Some(args) = &e.args {
        d.set_item("args", encode(py, &Value::vector(args.clone()), 0)?)?;
    }
    d.set_item("how", e.how.as_str())?;
    outcome_tree(py, &d, &e.outcome)?;
    Ok(d)
}

/// The record of a run's tool calls (not the abandoned ones: their outcome is unknown).
pub fn calls_tree<'py>(
    py: Python<'py>,
    calls: &[ToolCallRecord],
    carried: &[(Str, Entry)],
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for c in calls.iter().filter(|c| !c.abandoned) {
        let outcome = match (&c.result, &c.error, c.how) {
            (_, Some(r), How::Rejected) => Recorded::Rejected(r.clone()),
            (_, Some(m), _) => Recorded::Failed(m.clone()),
            (Some(v), None, _) => Recorded::Returned(v.clone()),
            (None, None, _) => Recorded::Returned(Value::Nil),
        };
        let e = Entry {
            name: c.name.clone(),
            args: Some(c.args.iter().map(crate::eval::recordable).collect()),
            outcome,
            how: c.how,
            decision: false,
        };
        out.append(entry_tree(py, &c.id, &e)?)?;
    }
    for (id, e) in carried {
        out.append(entry_tree(py, id, e)?)?;
    }
    Ok(out)
}

pub fn clock_tree<'py>(py: Python<'py>, clock: &[(Str, i64)]) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (id, ms) in clock {
        out.append((id.as_str(), *ms))?;
    }
    Ok(out)
}

/// A record read back from its JSON-ready form: `calls` as written by [`calls_tree`] (plus
/// the host's decisions, as entries marked `decision`), `clock` as pairs.
pub fn read_tape(tape: &Bound<'_, PyDict>) -> PyResult<Tape> {
    let bad = |m: String| pyo3::exceptions::PyValueError::new_err(m);
    let mut calls = HashMap::new();
    if let Some(list) = tape.get_item("calls")? {
        let list = list
            .cast::<PyList>()
            .map_err(|_| bad("the record's calls must be a list".into()))?;
        for (i, item) in list.iter().enumerate() {
            let at = format!("calls[{i}]");
            let d = item
                .cast::<PyDict>()
                .map_err(|_| bad(format!("{at}: expected an object")))?;
            let field = |k: &str| -> PyResult<Bound<'_, PyAny>> {
                d.get_item(k)?.ok_or_else(|| bad(format!("{at}: no {k:?}")))
            };
            let id: String = field("id")?
                .extract()
                .map_err(|_| bad(format!("{at}.id: expected text")))?;
            let name: String = field("tool")?
                .extract()
                .map_err(|_| bad(format!("{at}.tool: expected text")))?;
            // a call recorded as it started (by an agent's checkpoint) has no arguments
            let args = match d.get_item("args")? {
                None => None,
                Some(a) => match decode(&a, &format!("{at}.args"), 0).map_err(bad)? {
                    Value::Vector(xs) => Some(xs.to_vec()),
                    _ => return Err(bad(format!("{at}.args: expected a list"))),
                },
            };
            let how_text: String = field("how")?
                .extract()
                .map_err(|_| bad(format!("{at}.how: expected text")))?;
            let how = How::parse(&how_text)
                .ok_or_else(|| bad(format!("{at}.how: unknown {how_text:?}")))?;
            let outcome = if let Some(v) = d.get_item("result")? {
                Recorded::Returned(decode(&v, &format!("{at}.result"), 0).map_err(bad)?)
            } else if let Some(m) = d.get_item("error")? {
                Recorded::Failed(
                    m.extract()
                        .map_err(|_| bad(format!("{at}.error: expected text")))?,
                )
            } else if let Some(r) = d.get_item("rejected")? {
                Recorded::Rejected(
                    r.extract()
                        .map_err(|_| bad(format!("{at}.rejected: expected text")))?,
                )
            } else if d.get_item("approved")?.is_some() {
                Recorded::Approved
            } else if d.get_item("interrupted")?.is_some() {
                Recorded::Interrupted
            } else {
                return Err(bad(format!(
                    "{at}: no result, error, rejected, approved or interrupted"
                )));
            };
            let decision = d
                .get_item("decision")?
                .map(|b| b.is_truthy())
                .transpose()?
                .unwrap_or(false);
            let entry = Entry {
                name: Str::from(name.as_str()),
                args,
                outcome,
                how,
                decision,
            };
            if calls.insert(Str::from(id.as_str()), entry).is_some() {
                return Err(bad(format!("{at}: a second entry for call {id}")));
            }
        }
    }
    let mut clock = HashMap::new();
    if let Some(list) = tape.get_item("clock")? {
        let list = list
            .cast::<PyList>()
            .map_err(|_| bad("the record's clock must be a list".into()))?;
        for (i, item) in list.iter().enumerate() {
            let pair: Option<(String, i64)> = item
                .extract::<Vec<Bound<'_, PyAny>>>()
                .ok()
                .filter(|p| p.len() == 2)
                .and_then(|p| Some((p[0].extract().ok()?, p[1].extract().ok()?)));
            let (id, ms) =
                pair.ok_or_else(|| bad(format!("clock[{i}]: expected [id, milliseconds]")))?;
            clock.insert(Str::from(id.as_str()), ms);
        }
    }
    Ok(Tape::new(calls, clock))
}

/// A Python value as a record holds it (a deferred tool's answer): converted as a tool's
/// result is, then written JSON-ready.
#[pyfunction]
pub fn _record_value<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let v = super::convert::ToValue::new(py)?
        .convert(value)
        .map_err(|e| e.into_pyerr("answer"))?;
    encode(py, &v, 0)
}

/// Checks a record as a resume would read it; `ValueError` saying what is wrong and where.
#[pyfunction]
pub fn _check_tape(tape: &Bound<'_, PyDict>) -> PyResult<()> {
    read_tape(tape).map(|_| ())
}

/// What `gate` (a Python callable given the `PendingCall`) decides for `call`.
pub fn decide(
    py: Python<'_>,
    gate: &Py<PyAny>,
    call: &crate::eval::PendingCall,
    limits: Limits,
) -> PyResult<Gate> {
    let pending = Py::new(py, PendingCall::new(call, limits))?;
    let out = gate.call1(py, (pending,))?;
    let out = out.bind(py);
    if out.is_none() {
        return Ok(Gate::Pending);
    }
    if out.is_truthy()? && out.cast::<pyo3::types::PyBool>().is_ok() {
        return Ok(Gate::Call);
    }
    let (what, arg): (String, Bound<'_, PyAny>) = out.extract().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "a gate returns None, True, ('reject', reason) or ('answer', value)",
        )
    })?;
    match what.as_str() {
        "reject" => Ok(Gate::Reject(arg.str()?.to_string())),
        "answer" => {
            let v = ToValue::new(py)?
                .convert(&arg)
                .map_err(|e| e.into_pyerr("answer"))?;
            Ok(Gate::Answer(v))
        }
        _ => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a gate returned ({what:?}, ...): expected 'reject' or 'answer'"
        ))),
    }
}

/// A pending run's record, JSON-ready (what `ptc.Continuation` is made of).
pub fn suspended_tree<'py>(
    py: Python<'py>,
    s: &Suspended,
    pending: &[Py<PendingCall>],
) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    d.set_item("program", &s.source)?;
    let limits = PyDict::new(py);
    for name in crate::error::LimitName::ALL {
        limits.set_item(name.as_str(), s.limits.get(name))?;
    }
    d.set_item("limits", limits)?;
    d.set_item("state", &s.state)?;
    d.set_item("calls", s.calls.bind(py))?;
    d.set_item("clock", s.clock.bind(py))?;
    let out = PyList::empty(py);
    for p in pending {
        let p = p.get();
        let e = PyDict::new(py);
        e.set_item("id", &p.id)?;
        e.set_item("tool", &p.tool)?;
        e.set_item("args", encode(py, &Value::vector(p.args.clone()), 0)?)?;
        e.set_item("line", p.line)?;
        e.set_item("column", p.column)?;
        e.set_item("interrupted", p.interrupted)?;
        out.append(e)?;
    }
    d.set_item("pending", out)?;
    Ok(d.into_any())
}
