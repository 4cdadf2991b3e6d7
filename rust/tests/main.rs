//! Integration tests of the interpreter core (no Python involved).

mod budget_tests;
mod common;
mod eval_tests;
mod format_tests;
mod fuzz_regressions;
mod intern_tests;
mod json_tests;
mod lang_cases;
mod limits_tests;
mod map_tests;
mod meant_tests;
mod reader_tests;
mod stages_tests;
mod tape_tests;
mod text_tests;
