//! Host tools implemented by Python callables. The interpreter runs with the GIL released;
//! each tool call attaches, converts the arguments, calls, and converts the result back, on the
//! thread that evaluates the run (see `workers` for why that is not the caller's thread).
//!
//! Why one file over 600 lines: `PyHost` (the tools) and `RunHost` (one run's view of them:
//! call log, gate, lineage, speculation) implement one `Host` whose methods share that state.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::{ConvError, GcPause, ToPy, ToValue};
use super::tool_args::{describe_exception, named_args};
use super::workers::SHUTTING_DOWN;
use crate::error::Pos;
use crate::eval::{Gate, Host, ToolCtx, ToolFailure};
use crate::guard::{self, interrupted_error, Poll};
use crate::value::{Str, Value};

pub struct PyHost {
    /// (Lisp name, adapter) in registration order. The adapter (`ptc._tools.ToolAdapter`) is
    /// called as `adapter(positional_args, named_args_or_None)`.
    tools: Vec<(String, Py<PyAny>)>,
    /// The tools that cap their own calls per run (`Tool(max_calls=...)`).
    caps: Vec<(String, u64)>,
    /// The tools whose calls wait for the host's decision: approval tools (called once
    /// allowed) and deferred ones (never called: the host answers them).
    gated: Vec<(String, GateKind)>,
    /// The clock programs read (`Session(clock=...)`): a callable returning milliseconds.
    clock: Option<Py<PyAny>>,
    /// The tools declared `idempotent=True`.
    idempotent: Vec<String>,
    /// What `(tools "query")` and `(doc tool/name)` read, made on first need.
    pub catalogue: super::catalogue::CatalogueSource,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum GateKind {
    Approval,
    Deferred,
}

impl PyHost {
    pub fn new(tools: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut out = Vec::new();
        if let Some(t) = tools {
            for (k, v) in t.iter() {
                out.push((k.extract::<String>()?, v.unbind()));
            }
        }
        Ok(PyHost {
            tools: out,
            caps: Vec::new(),
            gated: Vec::new(),
            clock: None,
            idempotent: Vec::new(),
            catalogue: Default::default(),
        })
    }

    /// Takes the tools that wait for decisions (name -> "approval" | "deferred").
    pub fn set_gated(&mut self, gated: &Bound<'_, PyDict>) -> PyResult<()> {
        for (k, v) in gated.iter() {
            let name: String = k.extract()?;
            if self.find(&name).is_none() {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "tool_gates names {name:?}, which is not a tool of this session"
                )));
            }
            let kind = match v.extract::<String>()?.as_str() {
                "approval" => GateKind::Approval,
                "deferred" => GateKind::Deferred,
                other => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "tool_gates: {other:?} is not 'approval' or 'deferred'"
                    )))
                }
            };
            self.gated.push((name, kind));
        }
        Ok(())
    }

    pub fn set_idempotent(&mut self, names: Vec<String>) {
        self.idempotent = names;
    }

    pub fn set_clock(&mut self, clock: Py<PyAny>) {
        self.clock = Some(clock);
    }

    pub fn gate_kind(&self, name: &str) -> Option<GateKind> {
        self.gated.iter().find(|(n, _)| n == name).map(|(_, k)| *k)
    }

    pub fn has_gates(&self) -> bool {
        !self.gated.is_empty()
    }

    /// Takes the tools' own caps (name -> calls per run); a name must be one of the tools.
    pub fn set_caps(&mut self, caps: &Bound<'_, PyDict>) -> PyResult<()> {
        for (k, v) in caps.iter() {
            let name: String = k.extract()?;
            if self.find(&name).is_none() {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "tool_caps names {name:?}, which is not a tool of this session"
                )));
            }
            let cap: u64 = v.extract().map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "the max_calls of tool {name:?} must be a non-negative integer"
                ))
            })?;
            self.caps.push((name, cap));
        }
        Ok(())
    }

    /// The tool's own cap on calls per run, if it has one.
    pub fn cap(&self, name: &str) -> Option<u64> {
        self.caps.iter().find(|(n, _)| n == name).map(|(_, c)| *c)
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(n, _)| n.clone()).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn find(&self, name: &str) -> Option<&Py<PyAny>> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }
}

/// The host of one run: the Session's tools, called inline on the thread that evaluates the
/// run, plus what the run must hand back to Python when it ends — an exception that is not an
/// `Exception` (KeyboardInterrupt, SystemExit, ...) raised by a tool or by Python's signal
/// handler — and a log of the calls, from which the caller reports the calls of a run it had
/// to abandon (deadline, cancel or Ctrl-C while a tool was blocked).
pub struct RunHost {
    tools: Arc<PyHost>,
    /// The thread that called `Session.run`, if it is Python's main thread: only there can
    /// Ctrl-C be noticed.
    main: Option<std::thread::ThreadId>,
    pending: Mutex<Option<PyErr>>,
    log: Mutex<Vec<CallLog>>,
    /// The Sessions of the runs this run is nested in (a tool of each started the next),
    /// then this run's own: one entry for a run started outside any tool.
    lineage: std::sync::OnceLock<Arc<[usize]>>,
    /// The runs this one is nested in (see [`outer_lineage`]), and its Session.
    outer: Option<Arc<[usize]>>,
    session: usize,
    /// Decides the calls of gated tools that the record does not (a policy, an approved
    /// plan): called with a `PendingCall`, it returns None (wait), True (call),
    /// `("reject", reason)` or `("answer", value)`. None: every such call waits.
    gate: Option<Py<PyAny>>,
    limits: crate::limits::Limits,
    /// A speculative run's tools that may be called (the others' calls wait); `None`: all.
    only: Option<Arc<ahash::AHashSet<String>>>,
}

/// One tool call as the caller may need to report it.
pub struct CallLog {
    pub name: String,
    pub args: Vec<Value>,
    pub started: Instant,
    /// `None` while the call runs.
    pub outcome: Option<Result<Value, String>>,
}

thread_local! {
    /// The lineage of the run whose tool this thread is running now (`None`: no tool).
    static TOOL_LINEAGE: std::cell::RefCell<Option<Arc<[usize]>>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs started by tools inside runs started by tools...: at most this many runs inside one
/// another, of any Sessions (each level holds a worker thread while it waits for the next).
pub const MAX_NESTED_RUNS: usize = 16;

/// The error of a run started `depth` runs deep.
pub fn nested_too_deep(depth: usize) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::ErrorKind::Execution,
        format!(
            "runs nested too deeply: a tool started this run inside {} runs started by tools \
             (at most {MAX_NESTED_RUNS} runs inside one another)",
            depth - 1
        ),
    )
    .with_hint("a tool that runs a program should not make that program call the tool again")
}

/// The lineage of the runs a run started here would be nested in: that of the tool this thread
/// is running, or else the one carried by the context (`_core._LINEAGE`: an `async def` tool's
/// coroutine and the `arun()` it awaits run on other threads than the tool call).
pub fn outer_lineage(py: Python<'_>) -> Option<Arc<[usize]>> {
    if let Some(l) = TOOL_LINEAGE.with(|c| c.borrow().clone()) {
        return Some(l);
    }
    if LINEAGES.load(Ordering::SeqCst) == 0 {
        return None; // no context can hold one
    }
    let var = LINEAGE_VAR.get(py)?;
    let mut out: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
    // SAFETY: the GIL is held; `var` is a live ContextVar; `out` receives a new reference (or
    // stays null: no value and no default).
    if unsafe { pyo3::ffi::PyContextVar_Get(var.as_ptr(), std::ptr::null_mut(), &mut out) } < 0 {
        let _ = PyErr::take(py);
        return None;
    }
    if out.is_null() {
        return None;
    }
    // SAFETY: a new reference, owned from here
    let value = unsafe { Bound::from_owned_ptr(py, out) };
    let lineage = value.cast::<Lineage>().ok()?;
    Some(lineage.get().0.clone())
}

/// Runs a tool's runs are nested in, carried across threads by a context variable.
#[pyclass(frozen, module = "ptc._core")]
pub struct Lineage(Arc<[usize]>);

/// `Lineage` objects alive: while there are none, no context holds one, and a run need not
/// look (a context variable read on every run's fast path otherwise).
static LINEAGES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Lineage {
    fn new(l: Arc<[usize]>) -> Lineage {
        LINEAGES.fetch_add(1, Ordering::SeqCst);
        Lineage(l)
    }
}

impl Drop for Lineage {
    fn drop(&mut self) {
        LINEAGES.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `_core._LINEAGE`, made once at import.
pub static LINEAGE_VAR: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// The lineage of the tool this thread is running, as a value for `_core._LINEAGE`.
pub fn current_lineage() -> Option<Lineage> {
    TOOL_LINEAGE.with(|c| c.borrow().clone()).map(Lineage::new)
}

impl RunHost {
    /// A run of `session` nested in the runs of `outer` (see [`outer_lineage`]).
    pub fn new(tools: Arc<PyHost>, session: usize, outer: Option<Arc<[usize]>>) -> Self {
        RunHost {
            tools,
            main: is_main_thread().then(|| std::thread::current().id()),
            pending: Mutex::new(None),
            log: Mutex::new(Vec::new()),
            lineage: std::sync::OnceLock::new(),
            outer,
            session,
            gate: None,
            limits: crate::limits::Limits::default(),
            only: None,
        }
    }

    fn held(&self, name: &str) -> bool {
        self.only.as_ref().is_some_and(|o| !o.contains(name))
    }

    /// The same host deciding gated calls with `gate` (converting within `limits`), calling
    /// only the tools of `only` when given (a speculative run: the others' calls wait).
    pub fn with_gate(
        mut self,
        gate: Option<Py<PyAny>>,
        limits: crate::limits::Limits,
        only: Option<Arc<ahash::AHashSet<String>>>,
    ) -> Self {
        self.gate = gate;
        self.limits = limits;
        self.only = only;
        self
    }

    /// How many runs this one is nested in, itself included.
    pub fn depth(&self) -> usize {
        self.outer.as_deref().map_or(0, <[usize]>::len) + 1
    }

    /// The Sessions of the runs this run is nested in, then its own (made when a tool is first
    /// called: most runs call none).
    fn lineage(&self) -> &Arc<[usize]> {
        self.lineage.get_or_init(|| {
            let outer: &[usize] = self.outer.as_deref().unwrap_or(&[]);
            outer.iter().copied().chain([self.session]).collect()
        })
    }

    /// The exception to raise instead of returning a result, if any.
    pub fn take_pending(&self) -> Option<PyErr> {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    pub fn set_pending(&self, e: PyErr) {
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert(e);
    }

    /// Runs Python's signal handlers (the GIL is taken for it); true when one raised, the
    /// exception then pending.
    pub fn check_signals(&self) -> bool {
        match Python::attach(|py| py.check_signals()) {
            Ok(()) => false,
            Err(e) => {
                self.set_pending(e);
                true
            }
        }
    }

    pub fn called_from_main(&self) -> bool {
        self.main.is_some()
    }

    /// The calls made so far, for a run that was abandoned.
    pub fn take_log(&self) -> Vec<CallLog> {
        std::mem::take(&mut *self.log.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn log_start(&self, name: &str, args: &[Value]) -> usize {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        log.push(CallLog {
            name: name.to_string(),
            args: args.to_vec(),
            started: Instant::now(),
            outcome: None,
        });
        log.len() - 1
    }

    fn log_end(&self, i: usize, outcome: Result<Value, String>) {
        let mut log = self.log.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(entry) = log.get_mut(i) {
            entry.outcome = Some(outcome);
        }
    }

    fn call(
        &self,
        py: Python<'_>,
        f: &Py<PyAny>,
        args: &[Value],
        ctx: &ToolCtx<'_>,
    ) -> Result<Value, ToolFailure> {
        let fail = |e: PyErr| ToolFailure::Failed(describe_exception(py, &e));
        let gc = GcPause::new(py);
        let mut conv = ToPy::new(py).map_err(fail)?;
        // decided here, converted once: a call with named arguments (a single map or keyword/
        // value pairs) gets them as a dict and no positional list, any other call the list
        let positional = PyList::empty(py);
        let named = match named_args(args) {
            Some(map) => conv.named(&map).map_err(fail)?,
            None => {
                for a in args {
                    positional
                        .append(conv.convert(a).map_err(fail)?)
                        .map_err(fail)?;
                }
                py.None().into_bound(py)
            }
        };
        drop(gc); // the tool's own code runs with the collector as it was
        if SHUTTING_DOWN.load(Ordering::SeqCst) {
            return Err(ToolFailure::Stopped(ctx.budget.stop(interrupted_error())));
        }
        let result = {
            let _in_tool = InTool::enter(self.lineage(), ctx.budget, ctx.id);
            // the tool's own code (which may call ptc again) is not part of this run's budget
            guard::without_budget(|| {
                super::hang::call_hanging_at_exit(f.bind(py), &positional, &named)
            })
        };
        let result = result.map_err(|e| self.tool_error(py, e, ctx))?;
        if let Some(v) = crate::python::convert::scalar_value(&result) {
            return Ok(v);
        }
        let mut converted = ToValue::new(py).map_err(fail)?.convert(&result);
        if converted.as_ref().is_err_and(ConvError::is_unsupported) {
            // a date, a model, an enum...: made data in Python (only now: plain data, most
            // results, is walked once, by the core) and converted again
            let data = guard::without_budget(|| {
                TO_DATA
                    .import(py, "ptc.tools.rich_types", "to_data")?
                    .call1((&result,))
            })
            .map_err(|e| self.tool_error(py, e, ctx))?;
            converted = ToValue::new(py).map_err(fail)?.convert(&data);
        }
        converted.map_err(|e| {
            let err = e.into_pyerr("result");
            if !err.is_instance_of::<PyException>(py) {
                // Ctrl-C while a large result was being converted
                self.set_pending(err);
                return ToolFailure::Stopped(ctx.budget.stop(interrupted_error()));
            }
            ToolFailure::Failed(format!(
                "returned a value that cannot be used: {}",
                describe_exception(py, &err)
            ))
        })
    }

    /// What a tool's exception (raised by its code, or by making its result data) does to the run.
    fn tool_error(&self, py: Python<'_>, e: PyErr, ctx: &ToolCtx<'_>) -> ToolFailure {
        if !e.is_instance_of::<PyException>(py) {
            // KeyboardInterrupt, SystemExit, ...: not the tool's failure but the host's
            // decision; the run ends and `run()` raises it
            self.set_pending(e);
            return ToolFailure::Stopped(ctx.budget.stop(interrupted_error()));
        }
        // ptc's own check of the arguments against the tool's signature (python/ptc/
        // tools/adapter.py) marks its exception with the hint to show
        let value = e.value(py);
        if let Ok(hint) = value
            .getattr("ptc_hint")
            .and_then(|h| h.extract::<String>())
        {
            let message = value.str().map(|s| s.to_string()).unwrap_or_default();
            return ToolFailure::Misused { message, hint };
        }
        ToolFailure::Failed(describe_exception(py, &e))
    }
}

static TO_DATA: pyo3::sync::PyOnceLock<Py<PyAny>> = pyo3::sync::PyOnceLock::new();

/// Marks the thread as running a tool of `session` for `budget`'s run for as long as it lives
/// (restored however the call ends).
struct InTool {
    outer: Option<Arc<[usize]>>,
    outer_budget: *const guard::Budget,
    outer_call: Option<Str>,
}

impl InTool {
    fn enter(lineage: &Arc<[usize]>, budget: &guard::Budget, call: &Str) -> InTool {
        InTool {
            outer: TOOL_LINEAGE.with(|c| c.replace(Some(lineage.clone()))),
            outer_budget: TOOL_BUDGET.with(|c| c.replace(budget as *const guard::Budget)),
            outer_call: TOOL_CALL.with(|c| c.replace(Some(call.clone()))),
        }
    }
}

impl Drop for InTool {
    fn drop(&mut self) {
        let outer = self.outer.take();
        let _ = TOOL_LINEAGE.try_with(|c| *c.borrow_mut() = outer);
        let _ = TOOL_BUDGET.try_with(|c| c.set(self.outer_budget));
        let call = self.outer_call.take();
        let _ = TOOL_CALL.try_with(|c| *c.borrow_mut() = call);
    }
}

thread_local! {
    /// The id in its run of the tool call this thread is making (`None`: no tool call).
    static TOOL_CALL: std::cell::RefCell<Option<Str>> = const { std::cell::RefCell::new(None) };
}

/// The id of the tool call running on this thread (for a host recording calls as they start).
pub fn tool_call_id() -> Option<String> {
    TOOL_CALL.with(|c| c.borrow().as_ref().map(|s| s.to_string()))
}

thread_local! {
    /// The budget of the run whose tool this thread is calling; null outside tool calls. Set
    /// only by [`InTool`], which lives inside the call that borrows the budget and restores
    /// the outer value as it ends, so a non-null pointer always points at a live budget.
    static TOOL_BUDGET: std::cell::Cell<*const guard::Budget> =
        const { std::cell::Cell::new(std::ptr::null()) };
}

/// For the tool running on this thread: seconds until its run must stop (0 once the run has
/// stopped: its deadline passed, it was cancelled, a sibling branch failed). `None` outside a
/// tool call. An `async def` tool awaited on a loop of its own is cancelled when it reaches 0.
pub fn tool_time_left() -> Option<f64> {
    let budget = TOOL_BUDGET.with(|c| c.get());
    if budget.is_null() {
        return None;
    }
    // SAFETY: non-null only while an `InTool` on this thread lives, i.e. within the tool call
    // that borrows this budget (see TOOL_BUDGET); this function runs on that same thread.
    let budget = unsafe { &*budget };
    if budget.stop_reason().is_some() {
        return Some(0.0);
    }
    Some(
        budget
            .deadline
            .saturating_duration_since(Instant::now())
            .as_secs_f64(),
    )
}

/// At interpreter exit (an `atexit` hook): no tool call starts afterwards. Calls still running
/// (abandoned at their runs' deadlines) do not delay the exit: see [`super::hang::call_hanging_at_exit`].
pub fn at_exit() {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
}

/// Whether the current thread is Python's main thread (the one signal handlers run on).
pub fn is_main_thread() -> bool {
    // SAFETY: pthread_self has no preconditions.
    let me = unsafe { libc::pthread_self() } as u64;
    MAIN_THREAD.get().is_some_and(|m| *m == me)
}

/// `threading.main_thread().ident`, recorded when the module is imported.
pub static MAIN_THREAD: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

impl Poll for RunHost {
    fn interrupted(&self) -> bool {
        // Python's C-level handler only set a flag; run the Python-level handler now, which
        // raises KeyboardInterrupt (or whatever the program installed)
        self.check_signals()
    }
    fn here(&self) -> bool {
        self.main == Some(std::thread::current().id())
    }
}

impl Host for RunHost {
    fn thread_scope(&self, work: &mut (dyn FnMut() + Send)) {
        // one Python thread state for the branch's whole life, not one per tool call
        Python::attach(|py| py.detach(work))
    }

    fn has_tool(&self, name: &str) -> bool {
        self.tools.find(name).is_some()
    }

    fn tool_names(&self) -> Vec<String> {
        self.tools.names()
    }

    fn max_calls(&self, name: &str) -> Option<u64> {
        self.tools.cap(name)
    }

    fn gated(&self, name: &str) -> bool {
        self.held(name) || self.tools.gate_kind(name).is_some()
    }

    fn gate(&self, id: &str, name: &str, args: &[Value], pos: Option<Pos>) -> Gate {
        if self.held(name) {
            return Gate::Pending; // a speculative run does not ask: it waits for the real one
        }
        let Some(gate) = &self.gate else {
            return Gate::Pending;
        };
        let call = crate::eval::PendingCall {
            id: id.into(),
            name: name.into(),
            args: args.to_vec(),
            pos,
            interrupted: false,
        };
        let decided = Python::attach(|py| {
            super::suspend::decide(py, gate, &call, self.limits).unwrap_or_else(|e| {
                // the host's own failure, raised by `run()` once the run has stopped here
                self.set_pending(e);
                Gate::Pending
            })
        });
        match decided {
            // a deferred tool is never called by ptc, whatever a policy says
            Gate::Call if self.tools.gate_kind(name) == Some(GateKind::Deferred) => Gate::Pending,
            other => other,
        }
    }

    fn idempotent(&self, name: &str) -> bool {
        self.tools.idempotent.iter().any(|n| n == name)
    }

    fn catalogue(&self) -> Option<&crate::catalogue::Catalogue> {
        self.tools.catalogue.get()
    }

    fn now_ms(&self) -> i64 {
        let Some(clock) = &self.tools.clock else {
            return crate::eval::system_now_ms();
        };
        Python::attach(
            |py| match clock.call0(py).and_then(|v| v.extract::<i64>(py)) {
                Ok(ms) => ms,
                Err(e) => {
                    self.set_pending(e);
                    crate::eval::system_now_ms()
                }
            },
        )
    }

    fn call_tool(
        &self,
        name: &str,
        args: &[Value],
        ctx: &ToolCtx<'_>,
    ) -> Result<Value, ToolFailure> {
        let Some(f) = self.tools.find(name) else {
            return Err(ToolFailure::failed(format!("no tool {name}")));
        };
        let i = self.log_start(name, args);
        let r = Python::attach(|py| self.call(py, f, args, ctx));
        self.log_end(
            i,
            match &r {
                Ok(v) => Ok(v.clone()),
                Err(ToolFailure::Failed(m) | ToolFailure::Misused { message: m, .. }) => {
                    Err(m.clone())
                }
                Err(ToolFailure::Stopped(e)) => Err(e.message.clone()),
            },
        );
        r
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Arc<PyHost>>();
}
