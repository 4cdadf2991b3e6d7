//! `CoreSession`, the Rust class `ptc.Session` subclasses: a Session's core (its state, tools'
//! host and program cache: `Core`, made by `__init__`), `run` called straight from Python, and
//! the machinery of running programs in it (on a worker thread when tools may block).
//!
//! Why one file over 600 lines: a Session's methods are one `#[pymethods]` block (PyO3 needs
//! them together) plus the run machinery they share.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use super::control::{bounded, convert_within, guarded, CancelToken, RunGate};
use super::convert::{ToPy, ToValue};
use super::errors::{cancelled, limit_outcome};
use super::host::{PyHost, RunHost};
use super::result::{Definition, LazyValue, RunOutcome, ToolCall};
use super::{host, recorded, result, suspend, workers};
use crate::error::ErrorKind;
use crate::eval::UserNs;
use crate::format::{print, PrintOpts, SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT};
use crate::guard::{self, Budget, CancelFlag, NeverInterrupted};
use crate::limits::Limits;
use crate::session::{self, commit, Outcome, RunResult, SessionState};
use crate::value::{Str, Value};

/// A prepared program and the reading limits it was prepared under.
pub(super) type CachedProgram = ([usize; 3], Arc<crate::ir::Program>);

/// What a run hands back: its result and the namespace to commit.
pub(super) type RunOutput = (RunResult, Option<UserNs>);

pub(super) fn limits_from(base: Limits, d: Option<&Bound<'_, PyDict>>) -> PyResult<Limits> {
    let mut l = base;
    let Some(d) = d else { return Ok(l) };
    for (k, v) in d.iter() {
        let key: String = k.extract()?;
        if v.is_none() {
            continue;
        }
        let Some(name) = crate::error::LimitName::named(&key) else {
            return Err(PyValueError::new_err(format!("unknown limit {key:?}")));
        };
        let n: u64 = v.extract().map_err(|_| bad_limit(&key, name, &v))?;
        if let Some(cap) = crate::limits::cap(name) {
            if n > cap.max {
                return Err(PyValueError::new_err(format!(
                    "limit {key} may be at most {}: {}",
                    cap.max, cap.why
                )));
            }
        }
        l.set(name, n);
    }
    Ok(l)
}

/// Why a limit's value is refused: too large for the limit, negative, or not an integer.
fn bad_limit(key: &str, name: crate::error::LimitName, v: &Bound<'_, PyAny>) -> PyErr {
    let shown = v
        .repr()
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_default();
    let shown: String = if shown.chars().count() > 40 {
        shown.chars().take(40).chain("...".chars()).collect()
    } else {
        shown
    };
    let is_int =
        v.is_instance_of::<pyo3::types::PyInt>() && !v.is_instance_of::<pyo3::types::PyBool>();
    let positive = is_int && v.gt(0).unwrap_or(false);
    if positive {
        let max = crate::limits::cap(name).map_or(u64::MAX, |c| c.max);
        return PyValueError::new_err(format!("limit {key} is too large: {shown} (at most {max})"));
    }
    PyValueError::new_err(format!(
        "limit {key} must be a non-negative integer, got {shown}"
    ))
}

/// The sample shown next to a type label (seed 000): the first element of a vector or set,
/// the value itself otherwise; none for nil, empty collections and functions.
pub(super) fn sample(
    v: &Value,
    limit: Option<usize>,
    plimit: Option<usize>,
) -> (Option<String>, bool) {
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

pub(super) fn describe_tuple<'py>(
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
pub(super) fn definition(
    name: &str,
    v: &Value,
    doc: Option<&str>,
    pending: &[(Arc<crate::value::Closure>, crate::value::TypeTag)],
) -> Definition {
    let (kind, params, ret) = match v {
        Value::Closure(c) => (
            "function",
            c.lambda().map(|l| l.param_names.clone()),
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
pub(super) struct ProgramCache {
    pub(super) entries: Mutex<ahash::AHashMap<Box<str>, CachedProgram>>,
}

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

/// A Session's core: its state, its tools' host and its program cache, made by
/// `CoreSession.__init__` (or by `run_once`, without a Python object).
pub(super) struct Core {
    state: Mutex<SessionState>,
    host: Arc<PyHost>,
    limits: Limits,
    /// Runs of this Session happen one at a time (a run from inside one of its own tools is
    /// the exception: it runs nested, and both commit only the names they defined).
    gate: RunGate,
    /// Cancel flags of the runs in progress (nested runs included), for `cancel()`.
    running: Mutex<Vec<CancelFlag>>,
    programs: ProgramCache,
    /// Decides calls of approval and deferred tools for every run (`Session(approve=...)`,
    /// wrapped by Python); a run may be given its own (an approved plan, a resume).
    policy: Option<Py<PyAny>>,
    /// The digest of the data (it never changes), made when a run first stops.
    data_digest: std::sync::OnceLock<[u8; 32]>,
}

/// How one run goes besides its program and limits: a lazy last value, its own gate for calls
/// of approval and deferred tools, the record it is answered from (a resume).
#[derive(Default)]
pub(super) struct RunOpts {
    pub lazy: bool,
    pub gate: Option<Py<PyAny>>,
    pub tape: Option<crate::eval::Tape>,
    /// A speculative run: nothing is committed, only these tools may be called (the others'
    /// calls wait), and its record (calls, clock) is kept whatever its outcome.
    pub only: Option<Arc<ahash::AHashSet<String>>>,
}

/// A run handed to a worker thread.
pub(super) struct WorkerRun {
    program: Arc<crate::ir::Program>,
    snapshot: SessionState,
    tape: Option<Arc<crate::eval::Tape>>,
}

/// How often the thread waiting for a run looks at Ctrl-C, `cancel()` and the deadline.
pub(super) const WAIT_STEP: Duration = Duration::from_millis(10);

/// How long it then gives the run to stop by itself (with its own records) before abandoning it.
pub(super) const STOP_GRACE: Duration = Duration::from_millis(20);

/// The `Result` of a finished run, and whether it may be committed (a value that must be
/// converted now and cannot be turns the run into an error, so it must not be committed).
/// With `lazy`, a last value (not a `return`/`fail` answer) stays a core value until read.
pub(super) fn run_outcome(
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
                )
                .with_place(&c.id, c.how, c.replayed),
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
    )
    .with_warnings(r.warnings.clone());
    Ok((out, commit))
}

impl Core {
    pub(super) fn lock(&self) -> MutexGuard<'_, SessionState> {
        // A poisoned lock only means a panic was caught while it was held; the state is still valid.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn id(&self) -> usize {
        self as *const Core as usize
    }

    /// A budget for converting one of this Session's values outside a run (`get`).
    pub(super) fn convert_budget(&self) -> Budget {
        Budget::new(self.limits, Arc::new(NeverInterrupted), None)
    }

    pub(super) fn create(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyDict>>,
        limits: Option<&Bound<'_, PyDict>>,
        data_json: Option<&str>,
    ) -> PyResult<Self> {
        let data_value = match (data, data_json) {
            (_, Some(text)) => {
                // parsed straight into core values, with the GIL released; on the main thread
                // Ctrl-C is looked at now and then (Python's handlers need the GIL)
                let interrupted: Mutex<Option<PyErr>> = Mutex::new(None);
                let main = host::is_main_thread();
                let poll = || {
                    main && Python::attach(|py| match py.check_signals() {
                        Ok(()) => false,
                        Err(e) => {
                            *interrupted.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                            true
                        }
                    })
                };
                let parsed = py.detach(|| {
                    crate::json::from_json_polled(text, "data", crate::json::PARALLEL_MIN, &poll)
                });
                if let Some(e) = interrupted.into_inner().unwrap_or_else(|p| p.into_inner()) {
                    return Err(e);
                }
                let v = parsed.map_err(|e| match e.kind {
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
                    let key: String =
                        k.extract()
                            .map_err(|_| match k.cast::<pyo3::types::PyString>() {
                                // a str that is not valid Unicode text: a lone surrogate
                                Ok(s) => pyo3::exceptions::PyTypeError::new_err(format!(
                            "data key {}: not valid Unicode text (it holds a lone surrogate); \
                             decode the key's bytes as UTF-8 without 'surrogateescape', or \
                             remove the character",
                            s.repr().map(|r| r.to_string()).unwrap_or_default()
                        )),
                                Err(_) => pyo3::exceptions::PyTypeError::new_err(format!(
                                    "data keys must be strings, got {}",
                                    k.get_type()
                                        .name()
                                        .map(|n| n.to_string())
                                        .unwrap_or_else(|_| "an object".into())
                                )),
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
        Ok(Core {
            state: Mutex::new(SessionState::new(data_value)),
            host: Arc::new(host),
            limits: limits_from(Limits::default(), limits)?,
            gate: RunGate::default(),
            running: Mutex::new(Vec::new()),
            programs: ProgramCache::default(),
            policy: None,
            data_digest: std::sync::OnceLock::new(),
        })
    }

    /// The fingerprint of the state a run starts from: the data, the definitions and
    /// `*1`..`*3`. A continuation resumes only against the state it stopped in.
    pub(super) fn state_fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let state = self.lock().clone();
        let data = *self.data_digest.get_or_init(|| {
            let mut h = Sha256::new();
            recorded::digest_into(&mut h, &state.data);
            h.finalize().into()
        });
        let mut h = Sha256::new();
        h.update(data);
        h.update((state.user.len() as u64).to_le_bytes());
        for (name, d) in state.user.iter() {
            h.update((name.len() as u64).to_le_bytes());
            h.update(name.as_bytes());
            recorded::digest_into(&mut h, &d.value);
        }
        for v in &state.history {
            recorded::digest_into(&mut h, v);
        }
        recorded::hex(&h.finalize())
    }

    pub(super) fn run_inner<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        limits: Limits,
        cancel: CancelFlag,
        opts: RunOpts,
    ) -> PyResult<RunOutcome> {
        let RunOpts {
            lazy,
            gate,
            tape,
            only,
        } = opts;
        let speculative = only.is_some();
        if cancel.load(Relaxed) {
            return Err(cancelled(py)); // cancelled before it started
        }
        self.running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(cancel.clone());
        struct Unregister<'s>(&'s Core, CancelFlag);
        impl Drop for Unregister<'_> {
            fn drop(&mut self) {
                let mut running = self.0.running.lock().unwrap_or_else(|p| p.into_inner());
                running.retain(|c| !Arc::ptr_eq(c, &self.1));
            }
        }
        let _unregister = Unregister(self, cancel.clone());
        // a run started by a tool of a run of this Session (or of one nested in it) does not
        // wait for that run: it runs nested in it
        let outer = host::outer_lineage(py);
        let nested = outer.as_deref().is_some_and(|l| l.contains(&self.id()));
        let _gate = if nested {
            None
        } else {
            match self.gate.enter(py, &cancel)? {
                Some(g) => Some(g),
                None => return Err(cancelled(py)),
            }
        };

        let snapshot = self.lock().clone();
        // `tools` and `doc` read the tools' catalogue, and so may a function of an earlier
        // run: it is made before the first run that may (a program naming them has their
        // names in its text), and before that run's budget starts, so describing the tools
        // does not count in its time
        let earlier = !snapshot.user.is_empty() || snapshot.history.iter().any(|v| !v.is_nil());
        if earlier || source.contains("tools") || source.contains("doc") {
            self.host.catalogue.load(py)?;
        }
        let gate = gate.or_else(|| self.policy.as_ref().map(|p| p.clone_ref(py)));
        let host = Arc::new(
            RunHost::new(self.host.clone(), self.id(), outer).with_gate(gate, limits, only),
        );
        // a run records where its calls happen when it can stop at one, or is a resume
        let tape = match tape {
            Some(t) => Some(Arc::new(t)),
            None if self.host.has_gates() || speculative => {
                Some(Arc::new(crate::eval::Tape::default()))
            }
            None => None,
        };
        let budget = Arc::new(Budget::new(limits, host.clone(), Some(cancel.clone())));
        let prepared = if host.depth() > host::MAX_NESTED_RUNS {
            Err(Box::new(session::error_result(host::nested_too_deep(
                host.depth(),
            ))))
        } else {
            match self.programs.get(source, &limits) {
                Some(program) => Ok(program),
                None => py.detach(|| session::prepare(source, &budget)).map(|p| {
                    let p = Arc::new(p);
                    self.programs.put(source, &limits, p.clone());
                    p
                }),
            }
        };
        let finished = match prepared {
            Err(failed) => Some((*failed, None)),
            // a program that cannot call a tool cannot block outside the evaluator's own
            // checks: it runs on this thread
            Ok(program) if self.host.is_empty() || !program.reaches_host => {
                let r = py.detach(|| {
                    session::execute_taped(
                        &program,
                        &snapshot,
                        host.as_ref(),
                        &budget,
                        tape.as_deref(),
                    )
                });
                drop(snapshot); // so the commit updates the namespace in place
                Some(r)
            }
            Ok(program) => {
                let job = WorkerRun {
                    program,
                    snapshot,
                    tape: tape.clone(),
                };
                self.run_on_worker(py, job, &host, &budget, &cancel)?
            }
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
        let converted = match converted {
            Ok(Ok((t, c))) if result.outcome == Outcome::Pending || speculative => {
                match self.suspended(py, source, limits, &result, tape.as_deref()) {
                    Ok((pending, suspended)) => Ok(Ok((t.with_pending(pending, suspended), c))),
                    Err(e) => Ok(Err(e)),
                }
            }
            other => other,
        };
        match converted {
            // a cancel that arrived while the result converted still wins: nothing committed
            Ok(Ok(_)) if cancel.load(Relaxed) => Err(cancelled(py)),
            Ok(Ok((t, true))) if !speculative => {
                commit(&mut self.lock(), &result, ns);
                Ok(t)
            }
            Ok(Ok((t, _))) => Ok(t),
            Ok(Err(e)) => Err(e),
            Err(e) if e.kind == ErrorKind::Cancelled && cancel.load(Relaxed) => Err(cancelled(py)),
            Err(e) => limit_outcome(py, &result, &e, self.limits),
        }
    }

    /// Evaluates the run on a worker thread (its tools are called there) while this thread
    /// waits, so that the deadline, `cancel()` and Ctrl-C end the wait even when a tool blocks.
    /// `None`: the run was abandoned (the worker finishes in the background; nothing it does
    /// is committed).
    pub(super) fn run_on_worker(
        &self,
        py: Python<'_>,
        run: WorkerRun,
        host: &Arc<RunHost>,
        budget: &Arc<Budget>,
        cancel: &CancelFlag,
    ) -> PyResult<Option<RunOutput>> {
        let WorkerRun {
            program,
            snapshot,
            tape,
        } = run;
        let done: Arc<workers::Handoff<RunOutput>> = Arc::default();
        let job = {
            let (host, budget, done) = (host.clone(), budget.clone(), done.clone());
            Box::new(move || {
                // the worker keeps a Python thread state, so its tool calls attach cheaply
                let r = session::execute_taped(
                    &program,
                    &snapshot,
                    host.as_ref(),
                    &budget,
                    tape.as_deref(),
                );
                done.put(r);
            })
        };
        let ticket = workers::submit(job);
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
                if ticket.withdraw() {
                    // no worker took the run before it had to stop: it never started
                    budget.stop(no_worker_error(e));
                    return None;
                }
                if let Some(r) = done.take_within(STOP_GRACE) {
                    return Some(r);
                }
                budget.stop(e);
                return None;
            }
        }))
    }

    /// The pending calls of a run that stopped, and what its continuation needs.
    fn suspended(
        &self,
        py: Python<'_>,
        source: &str,
        limits: Limits,
        result: &RunResult,
        tape: Option<&crate::eval::Tape>,
    ) -> PyResult<(Vec<Py<suspend::PendingCall>>, suspend::Suspended)> {
        let pending = result
            .pending
            .iter()
            .map(|p| Py::new(py, suspend::PendingCall::new(p, self.limits)))
            .collect::<PyResult<Vec<_>>>()?;
        let reached: Vec<&str> = result
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .chain(result.pending.iter().map(|p| p.id.as_str()))
            .collect();
        let carried: Vec<_> = tape
            .map(|t| {
                t.unreached(&reached)
                    .into_iter()
                    .map(|(id, e)| (id.clone(), e.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let state = py.detach(|| self.state_fingerprint());
        let suspended = suspend::Suspended {
            source: source.to_string(),
            limits,
            state,
            calls: suspend::calls_tree(py, &result.tool_calls, &carried)?.unbind(),
            clock: suspend::clock_tree(py, &result.clock)?.unbind(),
        };
        Ok((pending, suspended))
    }

    /// The result of a run abandoned at its deadline: the timeout, and the tool calls made so
    /// far (the one still running marked abandoned).
    pub(super) fn abandoned_outcome(
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

impl Core {
    /// A core from `CoreSession.__init__`'s arguments (see there).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyDict>>,
        limits: Option<&Bound<'_, PyDict>>,
        data_json: Option<&str>,
        tool_caps: Option<&Bound<'_, PyDict>>,
        tool_gates: Option<&Bound<'_, PyDict>>,
        policy: Option<Py<PyAny>>,
        clock: Option<Py<PyAny>>,
        idempotent: Option<Vec<String>>,
        catalogue: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        guarded(py, || {
            let mut s = Self::create(py, data, tools, limits, data_json)?;
            // a new session's host has no other owner yet
            let Some(host) = Arc::get_mut(&mut s.host) else {
                return Err(pyo3::exceptions::PyRuntimeError::new_err(
                    "the session's host is shared already",
                ));
            };
            if let Some(caps) = tool_caps {
                host.set_caps(caps)?;
            }
            if let Some(gates) = tool_gates {
                host.set_gated(gates)?;
            }
            if let Some(clock) = clock {
                host.set_clock(clock);
            }
            if let Some(names) = idempotent {
                host.set_idempotent(names);
            }
            if let Some(source) = catalogue {
                host.catalogue = super::catalogue::CatalogueSource::new(source);
            }
            s.policy = policy;
            Ok(s)
        })
    }

    /// Runs a program; returns its `ptc.Result`. `gate` decides the calls of approval and
    /// deferred tools for this run (instead of the Session's policy); `tape` is the record a
    /// resumed run is answered from (`ptc.approvals`).
    ///
    /// `only` makes the run speculative (`ptc.eager`): nothing is committed, only the tools
    /// named may be called (the others' calls wait), and its record is kept as a pending
    /// run's is (`Result._suspended()`), so a later real run can be answered from it.
    ///
    /// The `Result` is made inside the panic boundary, where the run's outcome is: the outcome
    /// (hundreds of bytes) is moved once, into the Python object.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        limits: Option<&Bound<'py, PyDict>>,
        cancel: Option<&CancelToken>,
        lazy: bool,
        gate: Option<Py<PyAny>>,
        tape: Option<&Bound<'py, PyDict>>,
        only: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, RunOutcome>> {
        guarded(py, || {
            let limits = limits_from(self.limits, limits)?;
            let flag = match cancel {
                Some(t) => t.flag.clone(),
                None => Arc::new(AtomicBool::new(false)),
            };
            let tape = tape.map(suspend::read_tape).transpose()?;
            let only = only.map(|names| Arc::new(names.into_iter().collect()));
            let opts = RunOpts {
                lazy,
                gate,
                tape,
                only,
            };
            Bound::new(py, self.run_inner(py, source, limits, flag, opts)?)
        })
    }

    /// Stops the runs of this Session in progress (they raise `ptc.Cancelled`); true if any.
    pub(super) fn cancel(&self) -> bool {
        let running = self.running.lock().unwrap_or_else(|p| p.into_inner());
        for c in running.iter() {
            c.store(true, Relaxed);
        }
        !running.is_empty()
    }
}

/// The Rust class `ptc.Session` subclasses (the Python face: tools, checks, approvals): its
/// methods read and run the core directly. Made empty by `__new__` (which takes a subclass's
/// arguments, whatever they are); `__init__` makes the core, once. A method called before
/// then (a subclass whose `__init__` did not call `Session.__init__`) raises RuntimeError.
#[pyclass(module = "ptc._core", frozen, subclass, name = "CoreSession")]
pub struct CoreSession {
    core: OnceLock<Core>,
}

impl CoreSession {
    fn core(&self) -> PyResult<&Core> {
        self.core.get().ok_or_else(|| {
            PyRuntimeError::new_err("the Session has no core: its __init__ did not run")
        })
    }
}

fn has_core_already() -> PyErr {
    PyRuntimeError::new_err("the Session already has its core")
}

#[pymethods]
impl CoreSession {
    #[new]
    #[pyo3(
        signature = (*_args, **_kwargs),
        text_signature = "(data=None, tools=None, limits=None, data_json=None, tool_caps=None, tool_gates=None, policy=None, clock=None, idempotent=None, catalogue=None)"
    )]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        CoreSession {
            core: OnceLock::new(),
        }
    }

    /// Makes the core, once: `data` a dict of inputs (or `data_json`, a JSON object's text),
    /// `tools` name -> adapter (called with the positional and named arguments), `limits`
    /// overrides of the defaults; the rest is how `ptc.Session` describes its tools (their
    /// capabilities, approval gates, idempotence, catalogue), its approval policy and clock.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (data=None, tools=None, limits=None, data_json=None, tool_caps=None, tool_gates=None, policy=None, clock=None, idempotent=None, catalogue=None))]
    fn __init__(
        &self,
        py: Python<'_>,
        data: Option<&Bound<'_, PyAny>>,
        tools: Option<&Bound<'_, PyDict>>,
        limits: Option<&Bound<'_, PyDict>>,
        data_json: Option<&str>,
        tool_caps: Option<&Bound<'_, PyDict>>,
        tool_gates: Option<&Bound<'_, PyDict>>,
        policy: Option<Py<PyAny>>,
        clock: Option<Py<PyAny>>,
        idempotent: Option<Vec<String>>,
        catalogue: Option<Py<PyAny>>,
    ) -> PyResult<()> {
        if self.core.get().is_some() {
            return Err(has_core_already());
        }
        let core = Core::new(
            py, data, tools, limits, data_json, tool_caps, tool_gates, policy, clock, idempotent,
            catalogue,
        )?;
        self.core.set(core).map_err(|_| has_core_already())
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
        // the common call (a `str` program, no limits, no check or approved plan) goes to the
        // core here: a Python method in front of it cost about 150 ns, a sixth of a tiny
        // program's whole run
        if check || approved.is_some() {
            return checked_path(slf)?.call1((source, limits, cancel, lazy, check, approved));
        }
        let py = slf.py();
        let token = match cancel {
            None => Some(None),
            Some(c) => c.cast::<CancelToken>().ok().map(Some),
        };
        let text = source.cast::<PyString>().ok().and_then(|s| s.to_str().ok());
        if let (None, Some(text), Some(token)) = (limits, text, token) {
            let core = slf.get().core()?;
            let token = token.map(|t| t.get());
            return Ok(core
                .run(py, text, None, token, lazy, None, None, None)?
                .into_any());
        }
        // the checks and their messages live in Python (`Session._run_checked`): not a str, a
        // text that is not valid Unicode, limits to normalize, a cancel that is not a token
        checked_path(slf)?.call1((source, limits, cancel, lazy))
    }

    /// Runs a program as `Core::run` does (limits already a dict of overrides, cancel a token
    /// or None): the checked path of `run`, resumes, replays and speculative runs.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (source, limits=None, cancel=None, lazy=false, gate=None, tape=None, only=None))]
    fn _run<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        limits: Option<&Bound<'py, PyDict>>,
        cancel: Option<&CancelToken>,
        lazy: bool,
        gate: Option<Py<PyAny>>,
        tape: Option<&Bound<'py, PyDict>>,
        only: Option<Vec<String>>,
    ) -> PyResult<Bound<'py, RunOutcome>> {
        self.core()?
            .run(py, source, limits, cancel, lazy, gate, tape, only)
    }

    /// The fingerprint of the state a run would start from now (data, definitions, `*1`..).
    fn _state_fingerprint(&self, py: Python<'_>) -> PyResult<String> {
        let core = self.core()?;
        Ok(py.detach(|| core.state_fingerprint()))
    }

    /// Stops every run of this Session in progress, from any thread, within milliseconds;
    /// they raise `Cancelled`. Returns whether a run was in progress. To stop one particular
    /// run, give it a `CancelToken`.
    fn cancel(&self) -> PyResult<bool> {
        Ok(self.core()?.cancel())
    }

    /// User definitions in first-definition order.
    fn _definitions(&self, py: Python<'_>) -> PyResult<Vec<Definition>> {
        let core = self.core()?;
        bounded(py, core.limits, || {
            let ns = core.lock().user.clone();
            Ok(ns
                .iter()
                .map(|(name, d)| definition(name, &d.value, d.doc.as_deref(), &[]))
                .collect())
        })
    }

    fn _names(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let core = self.core()?;
        guarded(py, || {
            Ok(core.lock().user.keys().map(|k| k.to_string()).collect())
        })
    }

    /// A definition converted to Python, within the Session's limits (time, fuel, memory).
    fn _get<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        let core = self.core()?;
        let v = core.lock().user.get(name).map(|d| d.value.clone());
        let Some(v) = v else {
            return Err(PyKeyError::new_err(name.to_string()));
        };
        bounded(py, core.limits, || ToPy::new(py)?.convert(&v))
    }

    fn _has(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let core = self.core()?;
        guarded(py, || Ok(core.lock().user.contains_key(name)))
    }

    #[pyo3(signature = (name, limit=Some(SAMPLE_LIMIT), printable_limit=Some(SAMPLE_PRINTABLE_LIMIT)))]
    fn _describe<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        limit: Option<usize>,
        printable_limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let core = self.core()?;
        let v = core.lock().user.get(name).map(|d| d.value.clone());
        match v {
            Some(v) => bounded(py, core.limits, || {
                describe_tuple(py, &v, limit, printable_limit)
            }),
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    #[pyo3(signature = (key, limit=Some(SAMPLE_LIMIT), printable_limit=Some(SAMPLE_PRINTABLE_LIMIT)))]
    fn _describe_data<'py>(
        &self,
        py: Python<'py>,
        key: &str,
        limit: Option<usize>,
        printable_limit: Option<usize>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let core = self.core()?;
        let data = core.lock().data.clone();
        let v = match &data {
            Value::Map(m) => crate::value::flex_get(m, &Value::Keyword(Str::from(key))).cloned(),
            _ => None,
        };
        match v {
            Some(v) => bounded(py, core.limits, || {
                describe_tuple(py, &v, limit, printable_limit)
            }),
            None => Err(PyKeyError::new_err(key.to_string())),
        }
    }

    fn _data_keys(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let core = self.core()?;
        guarded(py, || {
            Ok(match &core.lock().data {
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

    /// `_tool_sites` against this session: its tools, its inputs' lengths, the definitions of
    /// earlier turns and `*1..*3` (the plan follows calls into them).
    #[pyo3(signature = (source, unknown, limits=None, keys=false))]
    fn _tool_sites<'py>(
        &self,
        py: Python<'py>,
        source: &str,
        unknown: &Bound<'py, PyAny>,
        limits: Option<&Bound<'py, PyDict>>,
        keys: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let core = self.core()?;
        guarded(py, || {
            let limits = limits_from(core.limits, limits)?;
            let (data, user, history) = {
                let state = core.lock();
                let mut lens = std::collections::HashMap::new();
                if let Value::Map(m) = &state.data {
                    for (k, v) in m.iter() {
                        if let Value::Keyword(k) | Value::Str(k) = k {
                            lens.insert(k.to_string(), crate::plan::count(v));
                        }
                    }
                }
                (lens, state.user.clone(), state.history.clone())
            };
            let inputs = super::functions::PlanInputs {
                tools: core.host.names().into_iter().collect(),
                data: Some(data),
                user: Some(user),
                history: history.to_vec(),
            };
            super::functions::sites_tuple(py, source, unknown, limits, keys, inputs)
        })
    }

    /// For each input that is a list of maps (records): the keys its first `sample` records
    /// have, in first-seen order (for `check`'s warnings on keys no record has).
    #[pyo3(signature = (sample=100))]
    fn _record_keys(&self, py: Python<'_>, sample: usize) -> PyResult<Vec<(String, Vec<String>)>> {
        let core = self.core()?;
        guarded(py, || {
            let state = core.lock();
            let Value::Map(m) = &state.data else {
                return Ok(Vec::new());
            };
            let mut out = Vec::new();
            for (name, value) in m.iter() {
                let (Value::Keyword(name) | Value::Str(name)) = name else {
                    continue;
                };
                let Value::Vector(items) = value else {
                    continue;
                };
                let mut keys: Vec<String> = Vec::new();
                for item in items.iter().take(sample) {
                    let Value::Map(record) = item else { continue };
                    for k in record.keys() {
                        if let Value::Keyword(k) | Value::Str(k) = k {
                            if !keys.iter().any(|seen| seen.as_str() == &**k) {
                                keys.push(k.to_string());
                            }
                        }
                    }
                }
                if !keys.is_empty() {
                    out.push((name.to_string(), keys));
                }
            }
            Ok(out)
        })
    }
}

/// The error of a run that waited for a worker until it had to stop (its deadline, or a
/// cancel): the pool was full of runs, or of tool calls abandoned by earlier runs.
fn no_worker_error(stop: crate::error::Error) -> crate::error::Error {
    if stop.kind != ErrorKind::Timeout {
        return stop;
    }
    let load = workers::load();
    let mut e = stop;
    e.message = format!(
        "{} before a worker thread was free to run it: all {} tool workers are busy (at most \
         {}; runs still going on, or tool calls that never returned after their runs ended); \
         runs waiting: {}",
        e.message,
        load.workers,
        workers::MAX_WORKERS,
        load.queued + 1
    );
    e.with_hint(
        "tools that block forever hold a worker each; give them their own timeouts so they \
         return, or run fewer tool-calling runs at once",
    )
}

/// `Session._run_checked`, the checked path of `run`; a bare `CoreSession` has none (it was an
/// `AttributeError` naming a private method).
fn checked_path<'py>(slf: &Bound<'py, CoreSession>) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    slf.getattr(pyo3::intern!(py, "_run_checked")).map_err(|e| {
        if !e.is_instance_of::<pyo3::exceptions::PyAttributeError>(py) {
            return e;
        }
        pyo3::exceptions::PyTypeError::new_err(
            "a bare CoreSession runs a str program with no limits, check or approved plan, and a \
             CancelToken or None as cancel; ptc.Session checks the rest (use it)",
        )
    })
}
