//! PTC-Lisp: a small, safe, deterministic Clojure subset for programs written by LLMs.
//!
//! The interpreter is a plain Rust library (reader -> analyzer -> evaluator, plus the printer);
//! `python/` is the only module that knows about PyO3, behind the `python` feature.
//!
//! The crate root reads as the architecture: five groups (`lang`, `data`, `print`, `run`,
//! `memory`), each declaring its modules. The files stay where they are (`#[path = "."]`: a
//! group's modules are the files beside this one, not in a folder of its name). A module is
//! `pub` when something outside the crate reads it (`rust/tests/`, the bench, the fuzz harness)
//! or the bindings alone do (`plan`, `threads`: public, so a build without the bindings does not
//! find them unused); the others are `pub(crate)`. Inside the crate every module keeps its short
//! path (`crate::reader`), imported below.

/// The language: text to forms, forms to the tree the evaluator runs, the evaluator and its
/// builtins, and what an LLM probably meant when it wrote something outside the subset.
#[path = "."]
pub mod lang {
    pub mod analyzer;
    pub mod builtins;
    pub(crate) mod catalogue;
    pub mod eval;
    pub(crate) mod hints;
    pub(crate) mod ir;
    pub(crate) mod liveness;
    pub mod meant;
    pub mod reader;
    pub(crate) mod regex_search;
}

/// Values and their representation: the value type, maps (records and hashed), the one-word
/// text, the thin allocation a map lives in, and the loaders (interning, JSON text).
#[path = "."]
pub mod data {
    pub mod intern;
    pub mod json;
    pub mod text;
    pub(crate) mod thin;
    pub mod value;
    pub use value::map;
}

/// Printing values for an LLM to read: the Clojure printer with truncation, printing within an
/// exact token budget, and the token counts.
#[path = "."]
pub mod print {
    pub mod budget;
    pub mod format;
    pub mod tokens;
}

/// Running programs: a session's runs, what a program names and would call before it runs
/// (`sites`, `plan`), the limits, the one budget per run and its guard, errors, the threads
/// started for all runs.
#[path = "."]
pub mod run {
    pub mod error;
    pub mod guard;
    pub mod limits;
    pub mod plan;
    pub mod session;
    pub mod sites;
    pub mod threads;
}

/// Memory accounting: the counting allocator behind the memory limit, large values freed on a
/// background thread, how much memory the process may still take.
#[path = "."]
pub mod memory {
    pub mod alloc;
    pub use super::data::value::dropper;
    pub(crate) mod sysmem;
}

use data::{intern, map, text, thin, value};
use lang::{analyzer, builtins, catalogue, eval, hints, ir, liveness, meant, reader, regex_search};
use memory::{alloc, sysmem};
use print::{format, tokens};
use run::{error, guard, limits, session, sites, threads};
// read inside the crate by the bindings only
#[cfg(feature = "python")]
use {data::json, print::budget, run::plan};

/// The bindings: the `ptc._core` Python module.
#[cfg(feature = "python")]
mod python;

#[global_allocator]
static ALLOCATOR: alloc::CountingAlloc = alloc::CountingAlloc;

pub use error::{Error, ErrorKind, Pos};
pub use eval::{Host, NoTools};
pub use limits::Limits;
pub use session::{run_source, Outcome, RunResult, SessionState};
pub use value::Value;

/// Evaluates `src` with no data, tools or definitions (a convenience for tests and tools).
pub fn eval_str(src: &str) -> Result<Value, Error> {
    let state = SessionState::new(Value::empty_map());
    let (r, _) = run_source(src, &state, &NoTools, &Limits::default());
    match r.error {
        Some(e) => Err(e),
        None => Ok(r.value),
    }
}
