//! Host tools implemented by Python callables. The interpreter runs with the GIL released;
//! each tool call attaches, converts the arguments, calls, and converts the result back, on the
//! thread that evaluates the run (see `workers` for why that is not the caller's thread).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::convert::{GcPause, ToPy, ToValue};
use crate::eval::{Host, ToolCtx, ToolFailure};
use crate::guard::{self, interrupted_error, Poll};
use crate::value::Value;

pub struct PyHost {
    /// (Lisp name, adapter) in registration order. The adapter (`ptc._tools.ToolAdapter`) is
    /// called as `adapter(positional_args, named_args_or_None)`.
    tools: Vec<(String, Py<PyAny>)>,
}

impl PyHost {
    pub fn new(tools: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let mut out = Vec::new();
        if let Some(t) = tools {
            for (k, v) in t.iter() {
                out.push((k.extract::<String>()?, v.unbind()));
            }
        }
        Ok(PyHost { tools: out })
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

/// The call shapes of LANGUAGE.md §8.2: a single map or keyword/value pairs are named arguments.
fn named_args(args: &[Value]) -> Option<Vec<(Value, Value)>> {
    match args {
        [] => Some(Vec::new()),
        [Value::Map(m)] => Some(m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()),
        _ if args.len() % 2 == 0 && args.chunks(2).all(|p| matches!(p[0], Value::Keyword(_))) => {
            Some(
                args.chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// Named-argument values: keyword keys become strings with `-` replaced by `_`, recursively.
/// Like every conversion, bounded: nesting as for results, elements and memory charged.
fn named_value<'py>(
    conv: &mut ToPy<'py>,
    py: Python<'py>,
    v: &Value,
    depth: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if depth >= super::convert::MAX_OUTPUT_DEPTH {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a tool argument is nested more than {} levels deep",
            super::convert::MAX_OUTPUT_DEPTH
        )));
    }
    match v {
        Value::Map(m) => {
            guard::charge_bytes(216 + 48 * m.len());
            let d = PyDict::new(py);
            for (k, val) in guard::charged(m.iter()) {
                let val = guard::deeper(|| named_value(conv, py, val, depth + 1))?;
                d.set_item(named_key(conv, k)?, val)?;
            }
            Ok(d.into_any())
        }
        Value::Vector(xs) => {
            guard::charge_bytes(72 + 8 * xs.len());
            let l = PyList::empty(py);
            for x in guard::charged(xs.iter()) {
                l.append(guard::deeper(|| named_value(conv, py, x, depth + 1))?)?;
            }
            Ok(l.into_any())
        }
        other => conv.convert(other),
    }
}

fn named_key<'py>(conv: &mut ToPy<'py>, k: &Value) -> PyResult<Bound<'py, PyAny>> {
    match k {
        Value::Keyword(s) => {
            Ok(pyo3::types::PyString::new(conv.py(), &s.replace('-', "_")).into_any())
        }
        other => conv.convert(other),
    }
}

fn describe_exception(py: Python<'_>, e: &PyErr) -> String {
    let tname = e
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if msg.is_empty() {
        tname
    } else {
        format!("{tname}: {msg}")
    }
}

/// The host of one run: the Session's tools, called inline on the thread that evaluates the
/// run, plus what the run must hand back to Python when it ends — an exception that is not an
/// `Exception` (KeyboardInterrupt, SystemExit, ...) raised by a tool or by Python's signal
/// handler — and a log of the calls, from which the caller reports the calls of a run it had
/// to abandon (deadline, cancel or Ctrl-C while a tool was blocked).
pub struct RunHost {
    tools: Arc<PyHost>,
    session: usize,
    /// The thread that called `Session.run`, if it is Python's main thread: only there can
    /// Ctrl-C be noticed.
    main: Option<std::thread::ThreadId>,
    pending: Mutex<Option<PyErr>>,
    log: Mutex<Vec<CallLog>>,
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
    /// The Session whose tool this thread is running now (0: none).
    static IN_TOOL: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Whether this thread is running a tool of the Session `session` (whose run is in progress):
/// a run started there is nested in that run.
pub fn in_tool(session: usize) -> bool {
    IN_TOOL.with(|c| c.get()) == session
}

impl RunHost {
    pub fn new(tools: Arc<PyHost>, session: usize) -> Self {
        RunHost {
            tools,
            session,
            main: is_main_thread().then(|| std::thread::current().id()),
            pending: Mutex::new(None),
            log: Mutex::new(Vec::new()),
        }
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
        let positional = PyList::empty(py);
        for a in args {
            positional
                .append(conv.convert(a).map_err(fail)?)
                .map_err(fail)?;
        }
        let named = match named_args(args) {
            Some(pairs) => {
                let d = PyDict::new(py);
                for (k, v) in &pairs {
                    d.set_item(
                        named_key(&mut conv, k).map_err(fail)?,
                        named_value(&mut conv, py, v, 0).map_err(fail)?,
                    )
                    .map_err(fail)?;
                }
                d.into_any()
            }
            None => py.None().into_bound(py),
        };
        drop(gc); // the tool's own code runs with the collector as it was
        if SHUTTING_DOWN.load(Ordering::SeqCst) {
            return Err(ToolFailure::Stopped(ctx.budget.stop(interrupted_error())));
        }
        let result = {
            let _in_tool = InTool::enter(self.session);
            // the tool's own code (which may call ptc again) is not part of this run's budget
            guard::without_budget(|| f.bind(py).call1((positional, named)))
        };
        let result = match result {
            Ok(r) => r,
            Err(e) if !e.is_instance_of::<PyException>(py) => {
                // KeyboardInterrupt, SystemExit, ...: not the tool's failure but the host's
                // decision; the run ends and `run()` raises it
                self.set_pending(e);
                return Err(ToolFailure::Stopped(ctx.budget.stop(interrupted_error())));
            }
            Err(e) => {
                // ptc's own check of the arguments against the tool's signature (python/ptc/
                // _tools.py) marks its exception with the hint to show
                let value = e.value(py);
                if let Ok(hint) = value
                    .getattr("ptc_hint")
                    .and_then(|h| h.extract::<String>())
                {
                    let message = value.str().map(|s| s.to_string()).unwrap_or_default();
                    return Err(ToolFailure::Misused { message, hint });
                }
                return Err(fail(e));
            }
        };
        if let Some(v) = crate::python::convert::scalar_value(&result) {
            return Ok(v);
        }
        let mut back = ToValue::new(py).map_err(fail)?;
        back.convert(&result).map_err(|e| {
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
}

/// Marks the thread as running a tool of `session` for as long as it lives (restored however the
/// call ends).
struct InTool {
    outer: usize,
}

impl InTool {
    fn enter(session: usize) -> InTool {
        TOOLS_RUNNING.fetch_add(1, Ordering::SeqCst);
        InTool {
            outer: IN_TOOL.with(|c| c.replace(session)),
        }
    }
}

impl Drop for InTool {
    fn drop(&mut self) {
        let _ = IN_TOOL.try_with(|c| c.set(self.outer));
        TOOLS_RUNNING.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tool calls in progress on any thread, abandoned ones included.
static TOOLS_RUNNING: AtomicUsize = AtomicUsize::new(0);
/// Set at interpreter exit: no tool call starts after it.
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// At interpreter exit (an `atexit` hook): waits until no tool call is in progress, as Python
/// waits for its executors' threads, and lets none start afterwards.
///
/// A tool call abandoned at a run's deadline goes on in a worker thread. Were the interpreter
/// to shut down while it runs, the thread would be torn down from inside Python
/// (`pthread_exit`, Python 3.11-3.13) straight through the Rust frames that called the tool,
/// which aborts the process. So exit waits for it (Ctrl-C ends the wait).
pub fn wait_for_tools(py: Python<'_>) -> PyResult<()> {
    SHUTTING_DOWN.store(true, Ordering::SeqCst);
    while TOOLS_RUNNING.load(Ordering::SeqCst) > 0 {
        py.detach(|| std::thread::sleep(std::time::Duration::from_millis(10)));
        py.check_signals()?;
    }
    Ok(())
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

/// A host whose only tool panics: proves that a panic becomes an internal error.
pub struct PanicHost;

impl Host for PanicHost {
    fn has_tool(&self, name: &str) -> bool {
        name == "__panic__"
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["__panic__".into()]
    }
    #[allow(clippy::panic)]
    fn call_tool(&self, _: &str, _: &[Value], _: &ToolCtx<'_>) -> Result<Value, ToolFailure> {
        panic!("deliberate panic for tests")
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Arc<PyHost>>();
}
