//! Per-thread allocation accounting for the memory limit.
//!
//! Every allocation made by this library's Rust code goes through `CountingAlloc`, which keeps a
//! running byte count per thread. A run records the count when it starts; the evaluator checks
//! the difference against `max_memory`, so the limit counts what the program allocates — not
//! the input data or earlier definitions, which existed before the run. Python's own objects
//! are not affected (they use Python's allocator).
//!
//! Underneath, small and medium blocks come from mimalloc (feature `mimalloc`, on by default):
//! the loaders and the evaluator make millions of small allocations, and freeing them on the
//! background thread (`dropper.rs`) is where glibc's malloc spent its time consolidating and
//! locking arenas. Blocks of [`LARGE`] bytes or more come from the system allocator as before:
//! mimalloc grows a huge block by copying it (a vector doubling to 128 MB held 192 MB at once,
//! and the hostile tests' peak-memory bounds caught it) and keeps freed memory a while, where
//! glibc remaps its mmapped blocks and unmaps them when freed. Which allocator owns a
//! block follows from its size alone, so `dealloc` and `realloc` find it again. Sanitizer builds
//! (fuzz/) use the system allocator throughout, whose calls AddressSanitizer checks.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

#[cfg(feature = "mimalloc")]
use mimalloc::MiMalloc as Small;
#[cfg(not(feature = "mimalloc"))]
use std::alloc::System as Small;

pub struct CountingAlloc;

thread_local! {
    static ALLOCATED: Cell<i64> = const { Cell::new(0) };
}

/// Blocks at least this large come from the system allocator.
const LARGE: usize = 256 * 1024;

/// What an allocation of `size` bytes really takes from the process. Counting requested sizes
/// instead would undercount programs made of many small values (a million one-character
/// strings).
#[inline]
fn cost(size: usize) -> i64 {
    #[cfg(feature = "mimalloc")]
    if size < LARGE {
        // the size class mimalloc serves it from
        // SAFETY: a pure function of its argument; no memory is touched.
        return unsafe { libmimalloc_sys::mi_good_size(size) } as i64;
    }
    // glibc: an 8-byte header, 16-byte alignment, a 32-byte minimum chunk
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

/// mimalloc's `mi_option_arena_reserve` (its place in `mi_option_t`; the Rust bindings do not
/// name it) and its default, 1 GiB in KiB.
#[cfg(feature = "mimalloc")]
const ARENA_RESERVE: (libmimalloc_sys::mi_option_t, std::ffi::c_long) = (23, 1 << 20);

/// Before mimalloc's first allocation: reserve address space 64 MB at a time instead of 1 GB,
/// which under an address-space limit (`RLIMIT_AS`) would leave the large blocks, and the
/// memory check's idea of what the process has left, 1 GB short. Set only when the option
/// reads as that default, so a renumbered option is left alone.
#[cfg(feature = "mimalloc")]
#[inline]
fn configure() {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    static DONE: AtomicBool = AtomicBool::new(false);
    if DONE.load(Relaxed) {
        return;
    }
    let (option, default) = ARENA_RESERVE;
    // SAFETY: reading and setting an option touch only mimalloc's static option table.
    unsafe {
        if libmimalloc_sys::mi_option_get(option) == default {
            libmimalloc_sys::mi_option_set(option, 64 << 10);
        }
    }
    DONE.store(true, Relaxed); // after: a racing first allocation sets it too, never skips it
}

/// A block from the allocator `layout`'s size selects.
///
/// # Safety
/// As `GlobalAlloc::alloc`.
#[inline]
unsafe fn take(layout: Layout, zeroed: bool) -> *mut u8 {
    #[cfg(feature = "mimalloc")]
    if layout.size() < LARGE {
        configure();
    }
    // SAFETY (each arm): the caller holds `GlobalAlloc::alloc`'s contract for `layout`, which
    // is what each allocator asks; the size alone picks the allocator, as `give_back` does.
    match (layout.size() < LARGE, zeroed) {
        // SAFETY: as above.
        (true, false) => unsafe { Small.alloc(layout) },
        // SAFETY: as above.
        (true, true) => unsafe { Small.alloc_zeroed(layout) },
        // SAFETY: as above.
        (false, false) => unsafe { System.alloc(layout) },
        // SAFETY: as above.
        (false, true) => unsafe { System.alloc_zeroed(layout) },
    }
}

/// Frees a block [`take`] made with `layout`.
///
/// # Safety
/// As `GlobalAlloc::dealloc`.
#[inline]
unsafe fn give_back(ptr: *mut u8, layout: Layout) {
    if layout.size() < LARGE {
        // SAFETY: `ptr` came from `take` with this `layout`, whose size chose `Small` then too.
        unsafe { Small.dealloc(ptr, layout) }
    } else {
        // SAFETY: `ptr` came from `take` with this `layout`, whose size chose `System` then too.
        unsafe { System.dealloc(ptr, layout) }
    }
}

// SAFETY: every block is allocated, grown and freed by the one allocator its size selects (a
// block whose new size selects the other is moved); the counter is bookkeeping only.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `take` asks what this method's caller guarantees.
        let p = unsafe { take(layout, false) };
        if !p.is_null() {
            add(cost(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `take` asks what this method's caller guarantees.
        let p = unsafe { take(layout, true) };
        if !p.is_null() {
            add(cost(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller passes a block this allocator made with `layout`, i.e. by `take`.
        unsafe { give_back(ptr, layout) };
        add(-cost(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = match (layout.size() < LARGE, new_size < LARGE) {
            // SAFETY: old and new sizes both choose `Small`, which made `ptr` (see `take`).
            (true, true) => unsafe { Small.realloc(ptr, layout, new_size) },
            // SAFETY: old and new sizes both choose `System`, which made `ptr` (see `take`).
            (false, false) => unsafe { System.realloc(ptr, layout, new_size) },
            _ => {
                // SAFETY: the caller guarantees `new_size` with this alignment is a valid layout.
                let to = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
                // SAFETY: `to` is a valid layout of non-zero size (`realloc`'s contract).
                let q = unsafe { take(to, false) };
                if !q.is_null() {
                    // SAFETY: both blocks are live and distinct; the old one is freed once.
                    unsafe {
                        std::ptr::copy_nonoverlapping(ptr, q, layout.size().min(new_size));
                        give_back(ptr, layout);
                    }
                }
                q
            }
        };
        if !p.is_null() {
            add(cost(new_size) - cost(layout.size()));
        }
        p
    }
}
