//! What the Python tests reach into, in builds with the `test-hooks` feature only (builds from a
//! clone; release wheels leave it out): which path a conversion took, and deliberate panics
//! inside a run and at the boundary, which must reach Python as `ptc.InternalError`.

use pyo3::prelude::*;

use super::control::guarded;
use super::core_session::run_outcome;
use super::result::RunOutcome;
use crate::limits::Limits;
use crate::session::{run_source, SessionState};
use crate::value::Value;

/// How many lists of host input were split between two threads, how many items were converted
/// in blocks there (not left to the one-thread paths), and how many of those by the helper
/// thread: the tests see which path large input took (`test-hooks` builds only).
#[pyfunction]
pub(super) fn _split_conversions() -> (usize, usize, usize) {
    let get = |i: usize| super::convert::SPLIT_COUNTS[i].load(std::sync::atomic::Ordering::Relaxed);
    (get(0), get(1), get(2))
}

/// Panics inside the interpreter boundary, to prove that panics become internal errors
/// (`test-hooks` builds only).
#[pyfunction]
pub(super) fn _panic_for_tests(py: Python<'_>) -> PyResult<RunOutcome> {
    let state = SessionState::new(Value::empty_map());
    let (r, ns) = py.detach(|| run_source("(__panic__)", &state, &PanicHost, &Limits::default()));
    Ok(run_outcome(py, &r, &ns.unwrap_or_default(), Limits::default(), false)?.0)
}

/// Panics at the Python boundary (outside any run), to prove that it reaches Python as
/// `ptc.InternalError`, not as a `PanicException` (`test-hooks` builds only).
#[pyfunction]
pub(super) fn _boundary_panic_for_tests(py: Python<'_>) -> PyResult<()> {
    #[allow(clippy::panic)]
    guarded(py, || panic!("deliberate panic at the boundary"))
}

/// A host whose only tool panics: proves that a panic becomes an internal error.
struct PanicHost;

impl crate::eval::Host for PanicHost {
    fn has_tool(&self, name: &str) -> bool {
        name == "__panic__"
    }
    fn tool_names(&self) -> Vec<String> {
        vec!["__panic__".into()]
    }
    #[allow(clippy::panic)]
    fn call_tool(
        &self,
        _: &str,
        _: &[Value],
        _: &crate::eval::ToolCtx<'_>,
    ) -> Result<Value, crate::eval::ToolFailure> {
        panic!("deliberate panic for tests")
    }
}
