#![no_main]
//! Read + analyze + evaluate: raw programs and structure-aware generated ones (deep, long, shared values).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ptc_fuzz::catch_stack_overflow();
    ptc_fuzz::run_program(data);
});
