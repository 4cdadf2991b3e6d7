//! With the Python bindings: the `Py_3_x` cfgs of the CPython being built for (PyO3's own), so
//! the conversion's direct reads can follow each version's str layout, and that version's
//! number for the import-time layout check's message.

fn main() {
    #[cfg(feature = "python")]
    {
        pyo3_build_config::use_pyo3_cfgs();
        let v = pyo3_build_config::get().version();
        println!(
            "cargo:rustc-env=PTC_PYTHON_BUILT_FOR={}.{}",
            v.major, v.minor
        );
    }
}
