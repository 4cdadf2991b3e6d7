//! Calling a tool whose call may outlive the interpreter (a call abandoned at its run's
//! deadline that returns while Python shuts down).

use pyo3::prelude::*;

/// CPython's `PyObject_Vectorcall` (exported from 3.11), as a function that may unwind.
type VectorcallMayUnwind = unsafe extern "C-unwind" fn(
    *mut pyo3::ffi::PyObject,
    *const *mut pyo3::ffi::PyObject,
    usize,
    *mut pyo3::ffi::PyObject,
) -> *mut pyo3::ffi::PyObject;

/// `PyObject_Vectorcall`, called through a pointer the optimizer cannot see through. A second
/// declaration of the symbol with the `"C-unwind"` ABI is not enough: in a codegen unit that
/// also uses PyO3's plain `"C"` declaration (any `call1`), the two become one, the first's
/// attributes win, and this call was then `nounwind`: the forced unwind aborted the process
/// (2026-11-30, when a `call1` was added in an unrelated file).
fn vectorcall_may_unwind() -> VectorcallMayUnwind {
    let plain: unsafe extern "C" fn(
        *mut pyo3::ffi::PyObject,
        *const *mut pyo3::ffi::PyObject,
        usize,
        *mut pyo3::ffi::PyObject,
    ) -> *mut pyo3::ffi::PyObject = pyo3::ffi::PyObject_Vectorcall;
    // SAFETY: the same C function, signature and calling convention; `"C-unwind"` only says
    // that an unwind may come out of it, which is what CPython's `pthread_exit` does.
    let may_unwind: VectorcallMayUnwind = unsafe { std::mem::transmute(plain) };
    std::hint::black_box(may_unwind)
}

/// Blocks its thread forever when dropped; forgotten when the call it guards returns.
struct HangThread;

impl Drop for HangThread {
    fn drop(&mut self) {
        loop {
            std::thread::park();
        }
    }
}

/// `f(a, b)`, for a tool whose call may outlive the interpreter.
///
/// A tool abandoned at its run's deadline goes on in its worker thread, and the interpreter
/// may shut down under it. On Python 3.11-3.13 a thread that takes the GIL back after that
/// point (a tool returning from a blocking call) is ended with `pthread_exit`: a forced unwind
/// through the thread's frames. Through a Rust frame that called Python by a plain `"C"`
/// declaration (no unwinding expected) that aborts the process. So the call goes through a
/// `"C-unwind"` function pointer, and the unwind runs the one destructor in this frame, which parks
/// the thread for good, as Python 3.14 itself does: the process exits normally, the thread
/// never runs again. (PyO3 does the same for its own `PyGILState_Ensure` and
/// `PyEval_RestoreThread`, the other places a worker takes the GIL back.)
pub fn call_hanging_at_exit<'py>(
    f: &Bound<'py, PyAny>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = f.py();
    let args = [a.as_ptr(), b.as_ptr()];
    let guard = HangThread;
    // SAFETY: the GIL is held (`py`); `f`, `a` and `b` are live objects borrowed for the call;
    // `args` holds 2 borrowed references, as nargsf says, and no keyword names. The only
    // unwind that can come out of CPython is the forced one described above.
    let out =
        unsafe { vectorcall_may_unwind()(f.as_ptr(), args.as_ptr(), 2, std::ptr::null_mut()) };
    std::mem::forget(guard);
    // SAFETY: a new reference, or null with the exception set
    unsafe { Bound::from_owned_ptr_or_err(py, out) }
}
