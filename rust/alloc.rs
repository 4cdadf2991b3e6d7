//! Per-thread allocation accounting for the memory limit.
//!
//! Every allocation made by this library's Rust code goes through `CountingAlloc`, which keeps a
//! running byte count per thread. A run records the count when it starts; the evaluator checks
//! the difference against `max_memory`, so the limit counts what the program allocates — not
//! the input data or earlier definitions, which existed before the run. Python's own objects
//! are not affected (they use Python's allocator).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

pub struct CountingAlloc;

thread_local! {
    static ALLOCATED: Cell<i64> = const { Cell::new(0) };
}

/// What an allocation of `size` bytes really takes from the process: malloc's 8-byte header,
/// 16-byte alignment and 32-byte minimum chunk (glibc). Counting requested sizes instead would
/// undercount programs made of many small values (a million one-character strings) by half.
#[inline]
fn cost(size: usize) -> i64 {
    (((size + 8 + 15) & !15).max(32)) as i64
}

#[inline]
fn add(delta: i64) {
    // try_with: the thread-local may already be gone while a thread shuts down
    let _ = ALLOCATED.try_with(|c| c.set(c.get().wrapping_add(delta)));
}

/// Net bytes allocated by this thread so far (may be negative if it freed others' memory).
pub fn allocated() -> i64 {
    ALLOCATED.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every method forwards to the system allocator unchanged and only updates a counter.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            add(cost(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            add(cost(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        add(-cost(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            add(cost(new_size) - cost(layout.size()));
        }
        p
    }
}
