//! The PyO3 boundary: the `ptc._core` module. Nothing outside this folder knows about Python.
//! Every entry point runs the interpreter with the GIL released (`py.detach`); tool calls take
//! it back (`Python::attach`) and no Session lock is held while Python code runs.

mod convert;
mod host;
mod printable;
mod result;
mod workers;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::error::{Error, ErrorKind};
use crate::eval::UserNs;
use crate::format::{print, PrintOpts};
use crate::format::{SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT};
use crate::guard::{self, Budget, CancelFlag, NeverInterrupted};
use crate::limits::Limits;
use crate::session::{self, commit, run_source, Outcome, RunResult, SessionState};
use crate::value::Value;

#[allow(unused_imports)]
use crate::value::Str;
use convert::{ToPy, ToValue};
use host::{PyHost, RunHost};
use result::{Definition, LazyValue, RunOutcome, ToolCall};

// ---- exceptions and the panic boundary ----

static ERRORS_MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn errors_module(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    ERRORS_MODULE
        .get_or_try_init(py, || Ok(py.import("ptc.errors")?.unbind()))
        .map(|m| m.bind(py))
}

/// The Python exception for a core error (`ptc.errors.error_from_core`).
fn lisp_error(py: Python<'_>, e: &Error) -> PyErr {
    let made = errors_module(py).and_then(|m| {
        let exc = m
            .getattr("error_from_core")?
            .call1((error_tuple(py, e)?,))?;
        Ok(PyErr::from_value(exc))
    });
    made.unwrap_or_else(|err| err)
}

/// `ptc.Cancelled`: the run was stopped by `Session.cancel()`.
fn cancelled(py: Python<'_>) -> PyErr {
    let made = errors_module(py).and_then(|m| {
        let cls = m.getattr("Cancelled")?;
        let cls = cls.cast::<PyType>()?;
        Ok(PyErr::from_type(cls.clone(), "the run was cancelled"))
    });
    made.unwrap_or_else(|err| err)
}

/// Runs an entry point so that no Rust panic reaches Python as a `PanicException` (a
/// `BaseException` that `except Exception` would miss): it becomes `ptc.InternalError`.
fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) if payload.is::<guard::Abort>() => Err(lisp_error(
            py,
            &Error::new(
                ErrorKind::Internal,
                "internal error: a limit stopped a walk outside the run it belongs to",
            ),
        )),
        Err(payload) => Err(lisp_error(py, &guard::panic_error(&payload))),
    }
}

/// Runs `f` (which converts values for Python) within `budget`: its time, fuel and memory
/// count toward the run, and a spent budget ends it with the limit error instead of a hang.
fn convert_within<T>(
    py: Python<'_>,
    budget: &Budget,
    f: impl FnOnce() -> PyResult<T>,
) -> Result<PyResult<T>, Error> {
    let _gc = convert::GcPause::new(py);
    guard::with_budget(budget, || guard::catch(budget, f))
}

/// Notices Ctrl-C during work done on the calling thread outside a run (printing or
/// converting a large value): Python's handler runs, and its exception is kept to be raised.
#[derive(Default)]
struct SignalPoll {
    pending: Mutex<Option<PyErr>>,
}

impl guard::Poll for SignalPoll {
    fn interrupted(&self) -> bool {
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => false,
            Err(e) => {
                *self.pending.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                true
            }
        }
    }
    fn here(&self) -> bool {
        true
    }
}

/// Runs work over values outside a run (printing, converting) within `limits` — time, fuel,
/// memory — so that a value built from shared parts ends in a `LimitError` instead of holding
/// the GIL for ever; Ctrl-C raises as usual. Panics become `ptc.InternalError`.
fn bounded<T>(py: Python<'_>, limits: Limits, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    guarded(py, || {
        let poll = Arc::new(SignalPoll::default());
        let budget = Budget::new(limits, poll.clone(), None);
        match convert_within(py, &budget, f) {
            Ok(r) => r,
            Err(e) => {
                let pending = poll
                    .pending
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .take();
                Err(pending.unwrap_or_else(|| lisp_error(py, &e)))
            }
        }
    })
}

/// One run of a Session at a time. Waiting happens with the GIL released; Ctrl-C while
/// waiting on the main thread raises as usual.
#[derive(Default)]
struct RunGate {
    busy: Mutex<bool>,
    free: Condvar,
    /// Threads waiting for the gate: waking nobody would still cost a system call per run.
    waiting: AtomicUsize,
}

struct GateGuard<'g>(&'g RunGate);

impl Drop for GateGuard<'_> {
    fn drop(&mut self) {
        *self.0.busy.lock().unwrap_or_else(|p| p.into_inner()) = false;
        if self.0.waiting.load(SeqCst) > 0 {
            self.0.free.notify_one();
        }
    }
}

impl RunGate {
    /// Waits for the Session to be free; `None` when `cancel` was set while waiting.
    fn enter(&self, py: Python<'_>, cancel: &AtomicBool) -> PyResult<Option<GateGuard<'_>>> {
        {
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            if !*busy {
                *busy = true;
                return Ok(Some(GateGuard(self)));
            }
        }
        let main = host::is_main_thread();
        self.waiting.fetch_add(1, SeqCst);
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, SeqCst);
            }
        }
        let _waiting = Waiting(&self.waiting);
        py.detach(|| {
            let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
            while *busy {
                busy = self
                    .free
                    .wait_timeout(busy, Duration::from_millis(20))
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
                if cancel.load(Relaxed) {
                    return Ok(None);
                }
                if main && *busy {
                    drop(busy);
                    Python::attach(|py| py.check_signals())?;
                    busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
                }
            }
            *busy = true;
            Ok(Some(GateGuard(self)))
        })
    }
}

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
        if let Some(cap) = crate::limits::cap(&key) {
            if n > cap.max {
                return Err(PyValueError::new_err(format!(
                    "limit {key} may be at most {}: {}",
                    cap.max, cap.why
                )));
            }
        }
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

/// `pending` holds return types a run recorded that are not committed yet (they are applied to
/// the functions only when the run commits).
fn definition(
    name: &str,
    v: &Value,
    doc: Option<&str>,
    pending: &[(Arc<crate::value::Closure>, crate::value::TypeTag)],
) -> Definition {
    let (kind, params, ret) = match v {
        Value::Closure(c) => (
            "function",
            Some(c.lambda.param_names.clone()),
            pending
                .iter()
                .find(|(p, _)| Arc::ptr_eq(p, c))
                .map(|(_, tag)| tag.label())
                .or_else(|| c.return_label()),
        ),
        Value::Builtin(_) | Value::Native(_) | Value::Tool(_) => ("function", None, None),
        _ => ("value", None, None),
    };
    let (sample, _) = sample(v, Some(SAMPLE_LIMIT), Some(SAMPLE_PRINTABLE_LIMIT));
    Definition {
        name: name.to_string(),
        kind,
        doc: doc.map(str::to_string),
        params,
        return_type: ret,
        type_label: v.type_label(),
        sample,
    }
}

/// Programs this Session ran, by source and the limits reading depends on: running the same
/// text again skips reading and analysis (analysis does not depend on the Session's state).
#[derive(Default)]
struct ProgramCache {
    entries: Mutex<ahash::AHashMap<Box<str>, CachedProgram>>,
}

/// A prepared program and the reading limits it was prepared under.
type CachedProgram = ([usize; 3], Arc<crate::ir::Program>);

impl ProgramCache {
    const MAX_ENTRIES: usize = 64;
    const MAX_SOURCE: usize = 16 * 1024;

    fn key(limits: &Limits) -> [usize; 3] {
        [
            limits.max_nesting,
            limits.max_symbols,
            limits.max_string_size,
        ]
    }

    fn get(&self, source: &str, limits: &Limits) -> Option<Arc<crate::ir::Program>> {
        if source.len() > Self::MAX_SOURCE {
            return None;
        }
        let entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        match entries.get(source) {
            Some((k, p)) if *k == Self::key(limits) => Some(p.clone()),
            _ => None,
        }
    }

    fn put(&self, source: &str, limits: &Limits, program: Arc<crate::ir::Program>) {
        if source.len() > Self::MAX_SOURCE {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        if entries.len() >= Self::MAX_ENTRIES {
            entries.clear(); // bounded, and cheap: a workload that repeats refills it at once
        }
        entries.insert(source.into(), (Self::key(limits), program));
    }
}

/// Cancels the one run it is given to (`Session.run(..., cancel=token)`), from any thread.
#[pyclass(module = "ptc._core", frozen, name = "CancelToken")]
pub struct CancelToken {
    flag: CancelFlag,
}

#[pymethods]
impl CancelToken {
    #[new]
    fn new() -> Self {
        CancelToken {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Stops the run this token was given to (it raises `ptc.Cancelled`), or the run it will
    /// be given to, before it starts.
    fn cancel(&self) {
        self.flag.store(true, Relaxed);
    }

    #[getter]
    fn cancelled(&self) -> bool {
        self.flag.load(Relaxed)
    }

    fn __repr__(&self) -> String {
        format!("CancelToken(cancelled={})", self.cancelled())
    }
}

#[pyclass(module = "ptc._core", frozen, name = "CoreSession")]
pub struct CoreSession {
    state: Mutex<SessionState>,
    host: Arc<PyHost>,
    limits: Limits,
    /// Runs of this Session happen one at a time (a run from inside one of its own tools is
    /// the exception: it runs nested, and both commit only the names they defined).
    gate: RunGate,
    /// Cancel flags of the runs in progress (nested runs included), for `cancel()`.
    running: Mutex<Vec<CancelFlag>>,
    programs: ProgramCache,
}

impl CoreSession {
    fn lock(&self) -> MutexGuard<'_, SessionState> {
        // A poisoned lock only means a panic was caught while it was held; the state is still valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn id(&self) -> usize {
        self as *const CoreSession as usize
    }

    /// A budget for converting one of this Session's values outside a run (`get`).
    fn convert_budget(&self) -> Budget {
        Budget::new(self.limits, Arc::new(NeverInterrupted), None)
    }

    fn create(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyDict>>,
        limits: Option<&Bound<'_, PyDict>>,
        data_json: Option<&str>,
    ) -> PyResult<Self> {
        let data_value = match (data, data_json) {
            (_, Some(text)) => {
                // parsed straight into core values, with the GIL released
                let v = py
                    .detach(move || crate::json::from_json(text))
                    .map_err(|e| match e.kind {
                        ErrorKind::MemoryExceeded => {
                            pyo3::exceptions::PyMemoryError::new_err(e.message.clone())
                        }
                        _ => PyValueError::new_err(e.message.clone()),
                    })?;
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
                let mut conv = ToValue::for_input(py)?;
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
            gate: RunGate::default(),
            running: Mutex::new(Vec::new()),
            programs: ProgramCache::default(),
        })
    }

    fn run_inner<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        limits: Limits,
        cancel: CancelFlag,
        lazy: bool,
    ) -> PyResult<RunOutcome> {
        if cancel.load(Relaxed) {
            return Err(cancelled(py)); // cancelled before it started
        }
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(cancel.clone());
        struct Unregister<'s>(&'s CoreSession, CancelFlag);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                let mut running = self.0.running.lock().unwrap_or_else(|p| p.into_inner());
                running.retain(|c| !Arc::ptr_eq(c, &self.1));
            }
        }
        let _unregister = Unregister(self, cancel.clone());
        let nested = host::in_tool(self.id());
        let _gate = if nested {
            None
        } else {
            match self.gate.enter(py, &cancel)? {
                Some(g) => Some(g),
                None => return Err(cancelled(py)),
            }
        };

        let snapshot = self.lock().clone();
        let host = Arc::new(RunHost::new(self.host.clone(), self.id()));
        let budget = Arc::new(Budget::new(limits, host.clone(), Some(cancel.clone())));
        let prepared = match self.programs.get(source, &limits) {
            Some(program) => Ok(program),
            None => py.detach(|| session::prepare(source, &budget)).map(|p| {
                let p = Arc::new(p);
                self.programs.put(source, &limits, p.clone());
                p
            }),
        };
        let finished = match prepared {
            Err(failed) => Some((*failed, None)),
            // a program that cannot call a tool cannot block outside the evaluator's own
            // checks: it runs on this thread
            Ok(program) if self.host.is_empty() || !program.reaches_host => {
                let r = py.detach(|| session::execute(&program, &snapshot, host.as_ref(), &budget));
                drop(snapshot); // so the commit updates the namespace in place
                Some(r)
            }
            Ok(program) => self.run_on_worker(py, program, snapshot, &host, &budget, &cancel)?,
        };
        // the host's own exceptions (Ctrl-C, SystemExit from a tool) and cancellation are not
        // program errors: they propagate, and the Session stays as it was
        if let Some(e) = host.take_pending() {
            return Err(e);
        }
        let user_cancelled = cancel.load(Relaxed);
        let Some((result, ns)) = finished else {
            if user_cancelled {
                return Err(cancelled(py));
            }
            return self.abandoned_outcome(py, &host, &budget);
        };
        if user_cancelled
            && result
                .error
                .as_ref()
                .is_some_and(|e| e.kind == ErrorKind::Cancelled)
        {
            return Err(cancelled(py));
        }
        let view_ns = ns.clone().unwrap_or_default();
        // the result converts within the run's budget; a run that already ended on a limit
        // has its records converted within the Session's limits instead
        let fresh;
        let conversion_budget = if budget.stop_reason().is_some() {
            fresh = self.convert_budget();
            &fresh
        } else {
            budget.as_ref()
        };
        let converted = convert_within(py, conversion_budget, || {
            run_outcome(py, &result, &view_ns, self.limits, lazy)
        });
        if let Some(e) = host.take_pending() {
            return Err(e);
        }
        match converted {
            Ok(Ok((t, true))) => {
                commit(&mut self.lock(), &result, ns);
                Ok(t)
            }
            Ok(Ok((t, false))) => Ok(t),
            Ok(Err(e)) => Err(e),
            Err(e) if e.kind == ErrorKind::Cancelled && cancel.load(Relaxed) => Err(cancelled(py)),
            Err(e) => limit_outcome(py, &result, &e, self.limits),
        }
    }

    /// Evaluates the run on a worker thread (its tools are called there) while this thread
    /// waits, so that the deadline, `cancel()` and Ctrl-C end the wait even when a tool blocks.
    /// `None`: the run was abandoned (the worker finishes in the background; nothing it does
    /// is committed).
    fn run_on_worker(
        &self,
        py: Python<'_>,
        program: Arc<crate::ir::Program>,
        snapshot: SessionState,
        host: &Arc<RunHost>,
        budget: &Arc<Budget>,
        cancel: &CancelFlag,
    ) -> PyResult<Option<RunOutput>> {
        let done: Arc<workers::Handoff<RunOutput>> = Arc::default();
        let job = {
            let (host, budget, done) = (host.clone(), budget.clone(), done.clone());
            Box::new(move || {
                // the worker keeps a Python thread state, so its tool calls attach cheaply
                let r = session::execute(&program, &snapshot, host.as_ref(), &budget);
                done.put(r);
            })
        };
        workers::spawn(job).map_err(|e| {
            pyo3::exceptions::PyRuntimeError::new_err(format!(
                "could not start a thread for the run: {e}"
            ))
        })?;
        let main = host.called_from_main();
        Ok(py.detach(|| loop {
            if let Some(r) = done.take_within(WAIT_STEP) {
                return Some(r);
            }
            if main && host.check_signals() {
                budget.stop(guard::interrupted_error());
                return None;
            }
            // the run stops at its next check by itself, unless a tool blocks it
            let stop = if cancel.load(Relaxed) {
                Some(guard::cancelled_error())
            } else if Instant::now() >= budget.deadline {
                Some(guard::timeout_error(budget.limits.timeout_ms))
            } else {
                None
            };
            if let Some(e) = stop {
                if let Some(r) = done.take_within(STOP_GRACE) {
                    return Some(r);
                }
                budget.stop(e);
                return None;
            }
        }))
    }

    /// The result of a run abandoned at its deadline: the timeout, and the tool calls made so
    /// far (the one still running marked abandoned).
    fn abandoned_outcome(
        &self,
        py: Python<'_>,
        host: &RunHost,
        budget: &Budget,
    ) -> PyResult<RunOutcome> {
        let error = budget
            .stop_reason()
            .unwrap_or_else(|| guard::timeout_error(budget.limits.timeout_ms));
        let calls = host
            .take_log()
            .into_iter()
            .map(|c| {
                let abandoned = c.outcome.is_none();
                let (result, err) = match c.outcome {
                    Some(Ok(v)) => (Some(v), None),
                    Some(Err(m)) => (None, Some(m)),
                    None => (None, Some(format!("abandoned: {}", error.message))),
                };
                let duration = c.started.elapsed().as_secs_f64() * 1000.0;
                Py::new(
                    py,
                    ToolCall::new(
                        c.name,
                        c.args,
                        result,
                        err,
                        duration,
                        abandoned,
                        self.limits,
                    ),
                )
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok(RunOutcome::new(
            Outcome::Error,
            Py::new(
                py,
                LazyValue::converted(py, Value::Nil, self.limits, py.None()),
            )?,
            Some(error),
            Vec::new(),
            calls,
            Vec::new(),
            budget.started.elapsed().as_secs_f64() * 1000.0,
            budget.fuel_used(),
        ))
    }
}

/// What a run hands back: its result and the namespace to commit.
type RunOutput = (RunResult, Option<UserNs>);

/// How often the thread waiting for a run looks at Ctrl-C, `cancel()` and the deadline.
const WAIT_STEP: Duration = Duration::from_millis(10);
/// How long it then gives the run to stop by itself (with its own records) before abandoning it.
const STOP_GRACE: Duration = Duration::from_millis(20);

/// The `Result` of a finished run, and whether it may be committed (a value that must be
/// converted now and cannot be turns the run into an error, so it must not be committed).
/// With `lazy`, a last value (not a `return`/`fail` answer) stays a core value until read.
fn run_outcome(
    py: Python<'_>,
    r: &RunResult,
    ns: &UserNs,
    limits: Limits,
    lazy: bool,
) -> PyResult<(RunOutcome, bool)> {
    let defer = lazy && r.outcome == Outcome::Value;
    let converted = if defer || r.outcome == Outcome::Error {
        Ok(None)
    } else {
        result::try_to_python(py, &r.value)?.map(|o| Some(o.unbind()))
    };
    let (outcome, value, error, commit) = match converted {
        Ok(obj) => {
            let v = match obj {
                Some(o) => LazyValue::converted(py, r.value.clone(), limits, o),
                None => LazyValue::new(r.value.clone(), limits),
            };
            (r.outcome, v, r.error.clone(), true)
        }
        // A result Python cannot hold is reported as the run's error, not raised.
        Err(e) => {
            let v = LazyValue::converted(py, Value::Nil, limits, py.None());
            (Outcome::Error, v, Some(e), false)
        }
    };
    let calls = r
        .tool_calls
        .iter()
        .map(|c| {
            Py::new(
                py,
                ToolCall::new(
                    c.name.to_string(),
                    c.args.clone(),
                    c.result.clone(),
                    c.error.clone(),
                    c.duration.as_secs_f64() * 1000.0,
                    c.abandoned,
                    limits,
                ),
            )
        })
        .collect::<PyResult<Vec<_>>>()?;
    let mut defined = Vec::new();
    if commit {
        for name in &r.defined {
            if let Some(d) = ns.get(name) {
                let def = definition(name, &d.value, d.doc.as_deref(), &r.returns);
                defined.push(Py::new(py, def)?);
            }
        }
    }
    let out = RunOutcome::new(
        outcome,
        Py::new(py, value)?,
        error,
        r.prints.clone(),
        calls,
        defined,
        r.duration.as_secs_f64() * 1000.0,
        r.steps,
    );
    Ok((out, commit))
}

/// The result of a run whose result could not be converted within its budget: the limit
/// error and the prints, nothing else.
fn limit_outcome(py: Python<'_>, r: &RunResult, e: &Error, limits: Limits) -> PyResult<RunOutcome> {
    Ok(RunOutcome::new(
        Outcome::Error,
        Py::new(py, LazyValue::converted(py, Value::Nil, limits, py.None()))?,
        Some(e.clone()),
        r.prints.clone(),
        Vec::new(),
        Vec::new(),
        r.duration.as_secs_f64() * 1000.0,
        r.steps,
    ))
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
        data_json: Option<&str>,
    ) -> PyResult<Self> {
        guarded(py, || Self::create(py, data, tools, limits, data_json))
    }

    /// Runs a program; returns its `ptc.Result`.
    #[pyo3(signature = (source, limits=None, cancel=None, lazy=false))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        limits: Option<&Bound<'py, PyDict>>,
        cancel: Option<&CancelToken>,
        lazy: bool,
    ) -> PyResult<RunOutcome> {
        guarded(py, || {
            let limits = limits_from(self.limits, limits)?;
            let flag = match cancel {
                Some(t) => t.flag.clone(),
                None => Arc::new(AtomicBool::new(false)),
            };
            self.run_inner(py, source, limits, flag, lazy)
        })
    }

    /// Stops the runs of this Session in progress (they raise `ptc.Cancelled`); true if any.
    fn cancel(&self) -> bool {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        for c in running.iter() {
            c.store(true, Relaxed);
        }
        !running.is_empty()
    }

    /// User definitions in first-definition order.
    fn definitions(&self, py: Python<'_>) -> PyResult<Vec<Definition>> {
        bounded(py, self.limits, || {
            let ns = self.lock().user.clone();
            Ok(ns
                .iter()
                .map(|(name, d)| definition(name, &d.value, d.doc.as_deref(), &[]))
                .collect())
        })
    }

    fn names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        guarded(py, || {
            Ok(self.lock().user.keys().map(|k| k.to_string()).collect())
        })
    }

    /// A definition converted to Python, within the Session's limits (time, fuel, memory).
    fn get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let v = self.lock().user.get(name).map(|d| d.value.clone());
        let Some(v) = v else {
            return Err(PyKeyError::new_err(name.to_string()));
        };
        bounded(py, self.limits, || ToPy::new(py)?.convert(&v))
    }

    fn has(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        guarded(py, || Ok(self.lock().user.contains_key(name)))
    }

    #[pyo3(signature = (name, limit=Some(SAMPLE_LIMIT), printable_limit=Some(SAMPLE_PRINTABLE_LIMIT)))]
    fn describe<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        limit: Option<usize>,
        printable_limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let v = self.lock().user.get(name).map(|d| d.value.clone());
        match v {
            Some(v) => bounded(py, self.limits, || {
                describe_tuple(py, &v, limit, printable_limit)
            }),
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    #[pyo3(signature = (key, limit=Some(SAMPLE_LIMIT), printable_limit=Some(SAMPLE_PRINTABLE_LIMIT)))]
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
            Some(v) => bounded(py, self.limits, || {
                describe_tuple(py, &v, limit, printable_limit)
            }),
            None => Err(PyKeyError::new_err(key.to_string())),
        }
    }

    fn data_keys(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        guarded(py, || {
            Ok(match &self.lock().data {
                Value::Map(m) => m
                    .keys()
                    .filter_map(|k| match k {
                        Value::Keyword(s) | Value::Str(s) => Some(s.to_string()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            })
        })
    }

    fn tool_names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        guarded(py, || Ok(self.host.names()))
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
    let py = value.py();
    // within the default limits: a value built from shared parts ends in a LimitError
    bounded(py, Limits::default(), || {
        let kw = convert::keyword_type(py)?.clone();
        let node = printable::PyNode::new(value.clone(), kw);
        Ok(print(
            &node,
            PrintOpts {
                limit,
                printable_limit,
                hide_private,
            },
        ))
    })
}

#[pyfunction]
fn type_label(value: &Bound<'_, PyAny>) -> PyResult<String> {
    guarded(value.py(), || {
        let kw = convert::keyword_type(value.py())?.clone();
        Ok(printable::PyNode::new(value.clone(), kw).type_label())
    })
}

/// Evaluates a program with no session state.
#[pyfunction]
#[pyo3(signature = (source, data=None, tools=None, limits=None))]
fn run_once<'py>(
    py: Python<'py>,
    source: &str,
    data: Option<&Bound<'py, PyAny>>,
    tools: Option<&Bound<'py, PyDict>>,
    limits: Option<&Bound<'py, PyDict>>,
) -> PyResult<RunOutcome> {
    let s = CoreSession::new(py, data, tools, limits, None)?;
    s.run(py, source, None, None, false)
}

/// Registered with `atexit` by the Python package: waits for tool calls still running.
#[pyfunction]
fn _wait_for_tools(py: Python<'_>) -> PyResult<()> {
    host::wait_for_tools(py)
}

/// `threading.main_thread().ident`: only that thread can notice Ctrl-C during a run.
fn record_main_thread(py: Python<'_>) -> PyResult<()> {
    let ident: u64 = py
        .import("threading")?
        .call_method0("main_thread")?
        .getattr("ident")?
        .extract()?;
    let _ = host::MAIN_THREAD.set(ident);
    Ok(())
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
    guarded(py, || {
        Ok(py.detach(move || crate::tokens::count_tokens(&text, &enc).unwrap_or(0)))
    })
}

/// Names of every builtin function and constant, in table order.
#[pyfunction]
fn builtin_names() -> Vec<&'static str> {
    crate::builtins::names().collect()
}

/// The builtins the system prompt lists, in its order (a subset of the table).
#[pyfunction]
fn prompt_functions() -> Vec<&'static str> {
    crate::builtins::PROMPT_ESSENTIALS.to_vec()
}

/// The builtins table: (name, min arity, max arity or None when variadic, doc, is a constant).
#[pyfunction]
fn builtins() -> Vec<(&'static str, usize, Option<usize>, &'static str, bool)> {
    crate::builtins::all()
        .map(|b| {
            let max = (b.max != usize::MAX).then_some(b.max);
            (b.name, b.min, max, b.doc, b.constant.is_some())
        })
        .collect()
}

/// Every error kind with its Python class: (type, class name, base class name, docstring).
#[pyfunction]
fn error_kinds() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    ErrorKind::ALL
        .iter()
        .map(|k| {
            let (class, base, doc) = k.python_class();
            (k.as_str(), class, base, doc)
        })
        .collect()
}

/// Names of the special forms.
#[pyfunction]
fn special_forms() -> Vec<&'static str> {
    crate::analyzer::SPECIAL_FORMS.to_vec()
}

/// Panics inside the interpreter boundary, to prove that panics become internal errors.
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<RunOutcome> {
    let state = SessionState::new(Value::empty_map());
    let (r, ns) =
        py.detach(|| run_source("(__panic__)", &state, &host::PanicHost, &Limits::default()));
    Ok(run_outcome(py, &r, &ns.unwrap_or_default(), Limits::default(), false)?.0)
}

/// Panics at the Python boundary (outside any run), to prove that it reaches Python as
/// `ptc.InternalError`, not as a `PanicException`.
#[pyfunction]
fn _boundary_panic_for_tests(py: Python<'_>) -> PyResult<()> {
    #[allow(clippy::panic)]
    guarded(py, || panic!("deliberate panic at the boundary"))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<CoreSession>()?;
    m.add_class::<CancelToken>()?;
    result::register(m)?;
    m.add_function(wrap_pyfunction!(to_clojure, m)?)?;
    m.add_function(wrap_pyfunction!(type_label, m)?)?;
    m.add_function(wrap_pyfunction!(run_once, m)?)?;
    m.add_function(wrap_pyfunction!(builtin_names, m)?)?;
    m.add_function(wrap_pyfunction!(builtins, m)?)?;
    m.add_function(wrap_pyfunction!(count_tokens, m)?)?;
    m.add_function(wrap_pyfunction!(prompt_functions, m)?)?;
    m.add_function(wrap_pyfunction!(special_forms, m)?)?;
    m.add_function(wrap_pyfunction!(error_kinds, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(_boundary_panic_for_tests, m)?)?;
    m.add_function(wrap_pyfunction!(_wait_for_tools, m)?)?;
    record_main_thread(m.py())?;
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
    m.add("SAMPLE_LIMIT", SAMPLE_LIMIT)?;
    m.add("SAMPLE_PRINTABLE_LIMIT", SAMPLE_PRINTABLE_LIMIT)?;
    Ok(())
}
