//! Fuzzing the PTC-Lisp core. All logic lives in `harness` (std + the core only), which the
//! main crate's regression test includes by path, so both run exactly the same code.

pub mod harness;

pub use harness::{run_json, run_printer, run_program, run_reader};

/// Makes a native stack overflow on the fuzzing thread a reported crash without a sanitizer.
///
/// libFuzzer (not Rust's runtime) owns `main` here, so Rust's stack-overflow handler and its
/// alternate signal stack are never set up, and libFuzzer's SIGSEGV handler cannot run on the
/// overflowed stack: the process would just die, with no crash artifact. This gives the
/// calling thread an alternate signal stack and re-registers the current SIGSEGV/SIGBUS
/// handlers with `SA_ONSTACK`, so libFuzzer reports "deadly signal" and saves the input.
/// AddressSanitizer does this by itself (for every thread); call this once per input, it
/// only acts the first time.
pub fn catch_stack_overflow() {
    use std::sync::Once;
    static ONCE: Once = Once::new();
    ONCE.call_once(|| unsafe {
        let mut current: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut current) == 0
            && current.ss_flags & libc::SS_DISABLE == 0
        {
            return; // a sanitizer already set one up
        }
        const SIZE: usize = 256 * 1024;
        let stack = libc::mmap(
            std::ptr::null_mut(),
            SIZE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return;
        }
        let ss = libc::stack_t {
            ss_sp: stack,
            ss_flags: 0,
            ss_size: SIZE,
        };
        if libc::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
            return;
        }
        for sig in [libc::SIGSEGV, libc::SIGBUS] {
            let mut act: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut act) == 0
                && act.sa_sigaction != libc::SIG_DFL
                && act.sa_sigaction != libc::SIG_IGN
            {
                act.sa_flags |= libc::SA_ONSTACK;
                libc::sigaction(sig, &act, std::ptr::null_mut());
            }
        }
    });
}
