//! Runs that stop and go on: the record of a run as JSON-ready Python data (for
//! `ptc.Continuation`), read back into the core's `Tape`, the `PendingCall` class, and the
//! fingerprint of the state a run started from.
//!
//! Values are written losslessly as JSON-ready trees: nil, booleans, integers, strings and
//! vectors as themselves; `{"f": "1.5"}` a float (its exact shortest text, also `NaN`, `inf`);
//! `{"k": "name"}` a keyword; `{"m": [[k, v], ...]}` a map in its order; `{"s": [...]}` a set;
//! `{"date": days}`, `{"inst": ms}`; `{"tool": name}` a tool value; `{"fn": label}` a function
//! or regex, read back as its label (a record compares it so: `eval::recordable`).

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString};
use sha2::{Digest, Sha256};

use super::convert::ToPy;
use super::convert::ToValue;
use crate::eval::{Entry, Gate, How, PendingCall as CorePending, Recorded, Tape, ToolCallRecord};
use crate::limits::Limits;
use crate::value::{Str, Value};

/// Nesting a record holds, as for values converted to Python.
const MAX_DEPTH: usize = super::convert::MAX_OUTPUT_DEPTH;

/// `v` as a JSON-ready tree (see the module's comment).
pub fn encode<'py>(py: Python<'py>, v: &Value, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a value of the run is nested more than {MAX_DEPTH} levels deep and cannot be recorded"
        )));
    }
    let tagged = |k: &str, inner: Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
        let d = PyDict::new(py);
        d.set_item(k, inner)?;
        Ok(d.into_any())
    };
    let seq = |xs: &mut dyn Iterator<Item = &Value>| -> PyResult<Bound<'py, PyAny>> {
        let l = PyList::empty(py);
        for x in xs {
            l.append(crate::guard::deeper(|| encode(py, x, depth + 1))?)?;
        }
        Ok(l.into_any())
    };
    Ok(match v {
        Value::Nil => py.None().into_bound(py),
        Value::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => tagged("f", PyString::new(py, &format!("{f:?}")).into_any())?,
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Keyword(k) => tagged("k", PyString::new(py, k).into_any())?,
        Value::Vector(xs) => seq(&mut xs.iter())?,
        Value::Set(s) => tagged("s", seq(&mut s.0.iter())?)?,
        Value::Map(m) => {
            let l = PyList::empty(py);
            for (k, val) in m.iter() {
                let pair = PyList::empty(py);
                pair.append(crate::guard::deeper(|| encode(py, k, depth + 1))?)?;
                pair.append(crate::guard::deeper(|| encode(py, val, depth + 1))?)?;
                l.append(pair)?;
            }
            tagged("m", l.into_any())?
        }
        Value::Date(d) => tagged("date", d.into_pyobject(py)?.into_any())?,
        Value::DateTime(ms) => tagged("inst", ms.into_pyobject(py)?.into_any())?,
        Value::Tool(name) => tagged("tool", PyString::new(py, name).into_any())?,
        other => match crate::eval::recordable(other) {
            Value::Str(label) => tagged("fn", PyString::new(py, &label).into_any())?,
            _ => tagged("fn", PyString::new(py, "#fn").into_any())?,
        },
    })
}

/// A JSON-ready tree read back as a value; the error says what was wrong and where (`at`).
pub fn decode(obj: &Bound<'_, PyAny>, at: &str, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("{at}: nested more than {MAX_DEPTH} levels deep"));
    }
    if obj.is_none() {
        return Ok(Value::Nil);
    }
    if let Ok(b) = obj.cast::<pyo3::types::PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<pyo3::types::PyInt>() {
        return obj
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| format!("{at}: an integer out of range"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s
            .to_str()
            .map_err(|_| format!("{at}: text that is not valid Unicode"))?;
        return Ok(Value::string(s.to_string()));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for (i, x) in l.iter().enumerate() {
            out.push(crate::guard::deeper(|| {
                decode(&x, &format!("{at}[{i}]"), depth + 1)
            })?);
        }
        return Ok(Value::vector(out));
    }
    let Ok(d) = obj.cast::<PyDict>() else {
        return Err(format!(
            "{at}: expected a recorded value, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ));
    };
    if d.len() != 1 {
        return Err(format!("{at}: a tagged value has exactly one key"));
    }
    let Some((tag, inner)) = d.iter().next() else {
        return Err(format!("{at}: an empty tagged value"));
    };
    let tag: String = tag
        .extract()
        .map_err(|_| format!("{at}: a tag that is not text"))?;
    let text = |what: &str| -> Result<String, String> {
        inner
            .extract::<String>()
            .map_err(|_| format!("{at}.{tag}: expected {what}"))
    };
    let int = |what: &str| -> Result<i64, String> {
        inner
            .extract::<i64>()
            .map_err(|_| format!("{at}.{tag}: expected {what}"))
    };
    let items = || -> Result<Bound<'_, PyList>, String> {
        inner
            .cast::<PyList>()
            .cloned()
            .map_err(|_| format!("{at}.{tag}: expected a list"))
    };
    Ok(match tag.as_str() {
        "f" => {
            let t = text("a number's text")?;
            Value::Float(
                t.parse::<f64>()
                    .map_err(|_| format!("{at}.f: {t:?} is not a number"))?,
            )
        }
        "k" => Value::Keyword(Str::from(text("a keyword's name")?.as_str())),
        "tool" => Value::Tool(Str::from(text("a tool's name")?.as_str())),
        "fn" => Value::string(text("a function's label")?),
        "date" => Value::Date(
            i32::try_from(int("a day number")?).map_err(|_| format!("{at}.date: out of range"))?,
        ),
        "inst" => Value::DateTime(int("milliseconds")?),
        "s" => {
            let mut set = crate::value::ValueSet::default();
            for (i, x) in items()?.iter().enumerate() {
                set.insert(crate::guard::deeper(|| {
                    decode(&x, &format!("{at}.s[{i}]"), depth + 1)
                })?);
            }
            Value::Set(crate::value::Shared::new(crate::value::SetData(set)))
        }
        "m" => {
            let mut map = crate::value::ValueMap::default();
            for (i, pair) in items()?.iter().enumerate() {
                let at = format!("{at}.m[{i}]");
                let pair = pair
                    .cast::<PyList>()
                    .ok()
                    .filter(|p| p.len() == 2)
                    .ok_or_else(|| format!("{at}: expected a [key, value] pair"))?
                    .clone();
                let k = crate::guard::deeper(|| {
                    decode(
                        &pair.get_item(0).map_err(|e| e.to_string())?,
                        &at,
                        depth + 1,
                    )
                })?;
                let v = crate::guard::deeper(|| {
                    decode(
                        &pair.get_item(1).map_err(|e| e.to_string())?,
                        &at,
                        depth + 1,
                    )
                })?;
                map.insert(k, v);
            }
            Value::map(map)
        }
        other => return Err(format!("{at}: unknown tag {other:?}")),
    })
}

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

    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn tool(&self) -> &str {
        &self.tool
    }
    pub fn line(&self) -> Option<u32> {
        self.line
    }
    pub fn column(&self) -> Option<u32> {
        self.column
    }
    pub fn is_interrupted(&self) -> bool {
        self.interrupted
    }
    pub fn encoded<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        encode(py, &Value::vector(self.args.clone()), 0)
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
            super::bounded(py, self.limits, || {
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

/// A stable digest of a value (the same in every process and version of this format): its
/// kind and content, fed to SHA-256 in order.
pub fn digest_into(h: &mut Sha256, v: &Value) {
    match v {
        Value::Nil => h.update([0]),
        Value::Bool(b) => h.update([1, *b as u8]),
        Value::Int(i) => {
            h.update([2]);
            h.update(i.to_le_bytes());
        }
        Value::Float(f) => {
            h.update([3]);
            h.update(f.to_bits().to_le_bytes());
        }
        Value::Str(s) => text(h, 4, s),
        Value::Keyword(s) => text(h, 5, s),
        Value::Vector(xs) => {
            h.update([6]);
            h.update((xs.len() as u64).to_le_bytes());
            for x in xs.iter() {
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        Value::Map(m) => {
            h.update([7]);
            h.update((m.len() as u64).to_le_bytes());
            for (k, x) in m.iter() {
                crate::guard::deeper(|| digest_into(h, k));
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        Value::Set(s) => {
            h.update([8]);
            h.update((s.0.len() as u64).to_le_bytes());
            for x in s.0.iter() {
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        Value::Date(d) => {
            h.update([9]);
            h.update(d.to_le_bytes());
        }
        Value::DateTime(ms) => {
            h.update([10]);
            h.update(ms.to_le_bytes());
        }
        Value::Tool(name) => text(h, 11, name),
        Value::Closure(c) => {
            // a function by where it is written, its parameters and what it closed over
            h.update([12]);
            h.update(c.lambda.pos.line.to_le_bytes());
            h.update(c.lambda.pos.col.to_le_bytes());
            text(h, 4, &c.lambda.param_display());
            for x in c.captures.iter() {
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        other => text(h, 13, &crate::format::fn_label(other)),
    }
}

fn text(h: &mut Sha256, tag: u8, s: &str) {
    h.update([tag]);
    h.update((s.len() as u64).to_le_bytes());
    h.update(s.as_bytes());
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
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
