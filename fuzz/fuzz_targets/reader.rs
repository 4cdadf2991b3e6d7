#![no_main]
//! The reader on raw text and on generated text (deep brackets, long tokens, odd bytes).

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ptc_fuzz::catch_stack_overflow();
    ptc_fuzz::run_reader(data);
});
