#![no_main]
//! The printer on values built from bytes (deep, shared, wide, odd atoms) with random limits.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ptc_fuzz::catch_stack_overflow();
    ptc_fuzz::run_printer(data);
});
