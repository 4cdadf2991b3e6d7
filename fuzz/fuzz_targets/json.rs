#![no_main]
//! JSON loading on raw bytes and on generated deep/long/odd JSON.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ptc_fuzz::catch_stack_overflow();
    ptc_fuzz::run_json(data);
});
