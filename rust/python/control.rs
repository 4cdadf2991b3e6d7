//! The host stays in charge: panics stopped at the boundary, Ctrl-C and cancel tokens polled, one
//! run at a time per Session.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

use super::errors::lisp_error;
use super::{convert, host};
use crate::error::{Error, ErrorKind};
use crate::guard::{self, Budget, CancelFlag};
use crate::limits::Limits;

/// Runs an entry point so that no Rust panic reaches Python as a `PanicException` (a
/// `BaseException` that `except Exception` would miss): it becomes `ptc.InternalError`.
pub(super) fn guarded<T>(py: Python<'_>, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
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
pub(super) fn convert_within<T>(
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
pub(super) struct SignalPoll {
    pub(super) pending: Mutex<Option<PyErr>>,
}

/// Runs work over values outside a run (printing, converting) within `limits` — time, fuel,
/// memory — so that a value built from shared parts ends in a `LimitError` instead of holding
/// the GIL for ever; Ctrl-C raises as usual. Panics become `ptc.InternalError`.
pub(super) fn bounded<T>(
    py: Python<'_>,
    limits: Limits,
    f: impl FnOnce() -> PyResult<T>,
) -> PyResult<T> {
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
pub(super) struct RunGate {
    pub(super) busy: Mutex<bool>,
    pub(super) free: Condvar,
    /// Threads waiting for the gate: waking nobody would still cost a system call per run.
    pub(super) waiting: AtomicUsize,
}

pub(super) struct GateGuard<'g>(&'g RunGate);

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
    pub(super) fn enter(
        &self,
        py: Python<'_>,
        cancel: &AtomicBool,
    ) -> PyResult<Option<GateGuard<'_>>> {
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

/// Cancels the one run it is given to (`Session.run(..., cancel=token)`), from any thread.
#[pyclass(module = "ptc._core", frozen, name = "CancelToken")]
pub struct CancelToken {
    pub(super) flag: CancelFlag,
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
