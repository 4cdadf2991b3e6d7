use _core::print::format::to_clojure;
use _core::{eval_str, Error};

/// Evaluates and prints the result in Clojure syntax.
pub fn ev(src: &str) -> String {
    match eval_str(src) {
        Ok(v) => to_clojure(&v, None, None).0,
        Err(e) => panic!("{src} failed: {} ({})", e.message, e.kind.as_str()),
    }
}

pub fn err(src: &str) -> Error {
    match eval_str(src) {
        Ok(v) => panic!("{src} should fail, got {}", to_clojure(&v, None, None).0),
        Err(e) => e,
    }
}
