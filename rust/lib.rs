//! PTC-Lisp: a small, safe, deterministic Clojure subset for programs written by LLMs.
//!
//! The interpreter is a plain Rust library (reader -> analyzer -> evaluator, plus the printer);
//! `python/` is the only module that knows about PyO3, behind the `python` feature.

pub mod alloc;
pub mod analyzer;
pub mod budget;
pub mod builtins;
pub mod catalogue;
pub mod dropper;
pub mod error;
pub mod eval;
pub mod format;
pub mod guard;
pub mod hints;
pub mod intern;
pub mod ir;
pub mod json;
pub mod limits;
pub mod map;

mod liveness;
pub mod meant;
pub mod plan;
pub mod reader;
pub mod regex_search;
pub mod session;
pub mod sites;
pub mod sysmem;
pub mod text;
mod thin;
pub mod threads;
pub mod tokens;
pub mod value;

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
