//! The PyO3 boundary: the `ptc._core` module. Nothing outside this folder knows about Python.
//! Every entry point runs the interpreter with the GIL released (`py.detach`); tool calls take
//! it back (`Python::attach`) and no Session lock is held while Python code runs.

mod catalogue;
mod convert;
mod hang;
mod host;
mod lazy;
mod printable;
mod recorded;
mod result;
mod suspend;
mod tool_args;
mod workers;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::format::{SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT};
use crate::limits::Limits;

mod control;
mod core_session;
mod errors;
mod functions;

use control::CancelToken;
use core_session::CoreSession;
#[cfg(feature = "test-hooks")]
mod test_hooks;
use functions::{
    _at_exit, _refused, _tool_call_id, _tool_lineage, _tool_sites, _tool_time_left, _unknown_tool,
    builtin_names, builtins, complete_prefix, count_tokens, error_kinds, prompt_functions,
    record_main_thread, run_once, special_forms, to_clojure, type_label,
};

// the walk over Python data borrows objects on the promise that no other thread runs Python
// meanwhile: the module needs the GIL, also on free-threaded builds
#[pymodule(gil_used = true)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    convert::check_layout(m.py())?;
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
    m.add_function(wrap_pyfunction!(complete_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(_unknown_tool, m)?)?;
    m.add_function(wrap_pyfunction!(prompt_functions, m)?)?;
    m.add_function(wrap_pyfunction!(special_forms, m)?)?;
    m.add_function(wrap_pyfunction!(error_kinds, m)?)?;
    // what the tests reach in: not in release wheels
    #[cfg(feature = "test-hooks")]
    for hook in [
        wrap_pyfunction!(test_hooks::_panic_for_tests, m)?,
        wrap_pyfunction!(test_hooks::_boundary_panic_for_tests, m)?,
        wrap_pyfunction!(test_hooks::_split_conversions, m)?,
    ] {
        m.add_function(hook)?;
    }
    m.add_function(wrap_pyfunction!(_at_exit, m)?)?;
    m.add_function(wrap_pyfunction!(_tool_time_left, m)?)?;
    m.add_function(wrap_pyfunction!(_tool_call_id, m)?)?;
    m.add_function(wrap_pyfunction!(_tool_lineage, m)?)?;
    m.add_function(wrap_pyfunction!(_tool_sites, m)?)?;
    m.add_function(wrap_pyfunction!(_refused, m)?)?;
    m.add_function(wrap_pyfunction!(suspend::_record_value, m)?)?;
    m.add_function(wrap_pyfunction!(suspend::_check_tape, m)?)?;
    m.add_class::<host::Lineage>()?;
    m.add_class::<functions::Planner>()?;
    let py = m.py();
    let var = py
        .import("contextvars")?
        .getattr("ContextVar")?
        .call1(("ptc_tool_lineage",))?;
    m.add("_LINEAGE", &var)?;
    let _ = host::LINEAGE_VAR.set(py, var.unbind());
    record_main_thread(m.py())?;
    quiet_sort_panics();
    let defaults = Limits::default();
    let d = PyDict::new(m.py());
    for name in crate::error::LimitName::ALL {
        d.set_item(name.as_str(), defaults.get(name))?;
    }
    m.add("DEFAULT_LIMITS", d)?;
    m.add("SAMPLE_LIMIT", SAMPLE_LIMIT)?;
    m.add("SAMPLE_PRINTABLE_LIMIT", SAMPLE_PRINTABLE_LIMIT)?;
    m.add("TOOL_ARGS_LIMIT", crate::format::TOOL_ARGS_LIMIT)?;
    m.add(
        "TOOL_ARGS_PRINTABLE_LIMIT",
        crate::format::TOOL_ARGS_PRINTABLE_LIMIT,
    )?;
    m.add("PRINT_ENTRY_CHARS", crate::limits::PRINT_ENTRY_CHARS)?;
    Ok(())
}

/// The standard sort panics when a program's comparator contradicts itself; `sort_fallible`
/// turns that into the program's `execution_error`, so its message is not printed on the
/// host's stderr. Every other panic still is (this hook is this module's copy of std's only).
fn quiet_sort_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let in_sort = info
            .location()
            .is_some_and(|l| l.file().contains("slice/sort"));
        if !(in_sort && text.contains("total order")) {
            previous(info);
        }
    }));
}
