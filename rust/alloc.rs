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

#[cfg(test)]
mod tests {
    //! What the count relies on: each block counted once when made and once when freed (grown,
    //! shrunk, or moved between the two allocators), by the thread that does it; contents and
    //! alignment kept across a move; a refused block, or one never asked for, not counted.
    //! Run under Miri by `scripts/miri.sh` (the system allocator under the counting one).

    use super::*;
    use std::hint::black_box;
    use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
    use std::sync::Arc;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    /// The byte written at `i` by [`fill`].
    fn pattern(i: usize) -> u8 {
        (i % 251) as u8 ^ 0x5a
    }

    /// Writes the pattern to the first `n` bytes at `p` (at most 4096: enough to see a copy
    /// that drops or shifts bytes, and quick under Miri).
    ///
    /// # Safety
    /// `p` is a live block of at least `n` bytes.
    unsafe fn fill(p: *mut u8, n: usize) {
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts_mut(p, n.min(4096)) };
        for (i, b) in bytes.iter_mut().enumerate() {
            *b = pattern(i);
        }
    }

    /// Whether the first `n` bytes at `p` (at most 4096) still hold the pattern.
    ///
    /// # Safety
    /// As [`fill`], and those bytes were written.
    unsafe fn holds_pattern(p: *const u8, n: usize) -> bool {
        // SAFETY: the caller's contract.
        let bytes = unsafe { std::slice::from_raw_parts(p, n.min(4096)) };
        bytes.iter().enumerate().all(|(i, &b)| b == pattern(i))
    }

    /// `CountingAlloc::alloc`, or `alloc_zeroed` when `zeroed`.
    ///
    /// # Safety
    /// As `GlobalAlloc::alloc`.
    unsafe fn take_for_test(l: Layout, zeroed: bool) -> *mut u8 {
        if zeroed {
            // SAFETY: the caller's contract.
            unsafe { CountingAlloc.alloc_zeroed(l) }
        } else {
            // SAFETY: the caller's contract.
            unsafe { CountingAlloc.alloc(l) }
        }
    }

    fn aligned(p: *const u8, align: usize) -> bool {
        p as usize % align == 0
    }

    #[test]
    fn the_cost_is_at_least_the_size_and_never_falls_as_the_size_grows() {
        let mut last = 0;
        for size in (1..=2048).chain([LARGE - 1, LARGE, LARGE + 1, 4 * LARGE]) {
            let c = cost(size);
            assert!(c >= size as i64, "{size} bytes cost {c}");
            assert!(
                c >= last,
                "{size} bytes cost {c}, less than a smaller block's {last}"
            );
            last = c;
        }
    }

    #[test]
    fn a_large_block_costs_a_system_allocator_chunk() {
        // an 8-byte header, rounded up to 16: with or without mimalloc, these come from glibc
        let large = LARGE as i64;
        assert_eq!(cost(LARGE), large + 16);
        assert_eq!(cost(LARGE + 8), large + 16);
        assert_eq!(cost(LARGE + 9), large + 32);
    }

    #[cfg(not(feature = "mimalloc"))]
    #[test]
    fn over_the_system_allocator_a_small_block_costs_at_least_its_minimum_chunk() {
        assert_eq!(cost(1), 32);
        assert_eq!(cost(24), 32);
        assert_eq!(cost(25), 48);
        assert_eq!(cost(40), 48);
        assert_eq!(cost(41), 64);
    }

    #[test]
    fn a_block_is_counted_when_made_and_uncounted_when_freed() {
        for size in [1, 24, 100, 4096, LARGE - 1, LARGE, LARGE + 100] {
            let l = layout(size, 8);
            let before = allocated();
            // SAFETY: `l` has a non-zero size.
            let p = unsafe { CountingAlloc.alloc(l) };
            assert!(!p.is_null() && aligned(p, 8));
            assert_eq!(allocated() - before, cost(size), "{size} bytes");
            // SAFETY: `p` is a live block of `size` bytes, written then read.
            assert!(unsafe {
                fill(p, size);
                holds_pattern(p, size)
            });
            // SAFETY: `p` was made just above with `l`, and is freed once.
            unsafe { CountingAlloc.dealloc(p, l) };
            assert_eq!(allocated(), before, "{size} bytes");
        }
    }

    #[test]
    fn a_zeroed_block_is_zero_and_counted_alike() {
        for (size, align) in [(1, 1), (1000, 16), (LARGE + 1, 256)] {
            let l = layout(size, align);
            let before = allocated();
            // SAFETY: `l` has a non-zero size.
            let p = unsafe { CountingAlloc.alloc_zeroed(l) };
            assert!(!p.is_null() && aligned(p, align));
            assert_eq!(allocated() - before, cost(size));
            // SAFETY: `p` is a live, initialized block of `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(p, size) };
            // every 61st byte (a prime stride) and the last: the whole block is slow under Miri
            assert!(bytes.iter().step_by(61).all(|&b| b == 0) && bytes[size - 1] == 0);
            // SAFETY: made just above with `l`, freed once.
            unsafe { CountingAlloc.dealloc(p, l) };
            assert_eq!(allocated(), before);
        }
    }

    #[test]
    fn realloc_counts_the_difference_and_keeps_the_contents() {
        let before = allocated();
        let l = layout(64, 8);
        // SAFETY: `l` has a non-zero size.
        let p = unsafe { CountingAlloc.alloc(l) };
        assert!(!p.is_null());
        // SAFETY: `p` is a live block of 64 bytes.
        unsafe { fill(p, 64) };
        // SAFETY: `p` was made with `l`; 200 bytes at alignment 8 is a valid layout.
        let q = unsafe { CountingAlloc.realloc(p, l, 200) };
        assert!(!q.is_null());
        assert_eq!(allocated() - before, cost(200));
        // SAFETY: `q` holds `p`'s 64 bytes (`realloc` copies them).
        assert!(unsafe { holds_pattern(q, 64) });
        // SAFETY: `q` was made with 200 bytes at alignment 8.
        let r = unsafe { CountingAlloc.realloc(q, layout(200, 8), 16) };
        assert!(!r.is_null());
        assert_eq!(allocated() - before, cost(16));
        // SAFETY: shrinking keeps the first 16 bytes.
        assert!(unsafe { holds_pattern(r, 16) });
        // SAFETY: `r` was made with 16 bytes at alignment 8, freed once.
        unsafe { CountingAlloc.dealloc(r, layout(16, 8)) };
        assert_eq!(allocated(), before);
    }

    #[test]
    fn a_block_moved_between_the_allocators_keeps_its_contents_and_alignment() {
        // across `LARGE` each way, and from just under it to exactly it (the boundary's owner)
        for (small, align) in [(1000, 8), (1000, 64), (100, 4096), (LARGE - 1, 16)] {
            let big = if small == LARGE - 1 {
                LARGE
            } else {
                LARGE + 1000
            };
            let before = allocated();
            let l = layout(small, align);
            // SAFETY: `l` has a non-zero size.
            let p = unsafe { CountingAlloc.alloc(l) };
            assert!(!p.is_null() && aligned(p, align));
            // SAFETY: `p` is a live block of `small` bytes.
            unsafe { fill(p, small) };
            // SAFETY: `p` was made with `l`; `big` at `align` is a valid layout.
            let q = unsafe { CountingAlloc.realloc(p, l, big) };
            assert!(
                !q.is_null() && aligned(q, align),
                "{small} -> {big} at {align}"
            );
            assert_eq!(allocated() - before, cost(big));
            // SAFETY: `q` holds `p`'s bytes.
            assert!(unsafe { holds_pattern(q, small) });
            // SAFETY: `q` was made with `big` bytes at `align`.
            let r = unsafe { CountingAlloc.realloc(q, layout(big, align), small / 2) };
            assert!(
                !r.is_null() && aligned(r, align),
                "{big} -> {} at {align}",
                small / 2
            );
            assert_eq!(allocated() - before, cost(small / 2));
            // SAFETY: `r` holds the first half of the bytes.
            assert!(unsafe { holds_pattern(r, small / 2) });
            // SAFETY: `r` was made with `small / 2` bytes at `align`, freed once.
            unsafe { CountingAlloc.dealloc(r, layout(small / 2, align)) };
            assert_eq!(allocated(), before);
        }
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri ends the program when an allocation is too large instead of returning null"
    )]
    fn a_refused_block_is_not_counted_and_a_refused_realloc_keeps_the_old_one() {
        // more than the address space: refused (null), never an abort
        let huge = 1usize << 62;
        let before = allocated();
        for zeroed in [false, true] {
            let l = layout(huge, 16);
            // SAFETY: `l` has a non-zero size. `black_box`: the block must look used, or the
            // optimizer drops the call and assumes it succeeded.
            let p = black_box(unsafe { take_for_test(l, zeroed) });
            if !p.is_null() {
                // SAFETY: made just above with `l` (the test fails next: no leak meanwhile).
                unsafe { CountingAlloc.dealloc(p, l) };
            }
            assert!(p.is_null(), "{huge} bytes (zeroed: {zeroed}) were given");
        }
        assert_eq!(allocated(), before);
        for size in [100, LARGE + 100] {
            let l = layout(size, 16);
            // SAFETY: `l` has a non-zero size.
            let p = unsafe { CountingAlloc.alloc(l) };
            assert!(!p.is_null());
            // SAFETY: `p` is a live block of `size` bytes.
            unsafe { fill(p, size) };
            // SAFETY: `p` was made with `l`; `huge` at 16 is a valid layout.
            let q = black_box(unsafe { CountingAlloc.realloc(p, l, huge) });
            assert!(q.is_null());
            assert_eq!(allocated() - before, cost(size));
            // SAFETY: a refused realloc leaves `p` live and unchanged.
            assert!(unsafe { holds_pattern(p, size) });
            // SAFETY: `p` is still the block made with `l`, freed once.
            unsafe { CountingAlloc.dealloc(p, l) };
            assert_eq!(allocated(), before);
        }
    }

    #[test]
    fn the_global_allocator_counts_a_vectors_growth_and_shrinking() {
        let before = allocated();
        let mut v: Vec<u64> = Vec::with_capacity(10);
        assert_eq!(allocated() - before, cost(80));
        v.push(1);
        v.reserve_exact(100); // at least 101 elements: a realloc
        let grown = v.capacity() * 8;
        assert_eq!(allocated() - before, cost(grown));
        v.shrink_to(20);
        assert_eq!(v.capacity(), 20);
        assert_eq!(allocated() - before, cost(160));
        drop(v);
        assert_eq!(allocated(), before);
    }

    #[test]
    fn what_never_reaches_the_allocator_is_not_counted() {
        let before = allocated();
        let units = vec![(); 1000]; // zero-sized elements: no block at all
        let unit = Box::new(());
        let empty: Vec<u64> = Vec::new();
        let text = String::new();
        assert_eq!(allocated(), before);
        drop((units, unit, empty, text));
        assert_eq!(allocated(), before);
    }

    #[test]
    fn a_block_counts_to_the_thread_that_made_it_and_off_the_one_that_frees_it() {
        let (block, made) = std::thread::spawn(|| {
            let before = allocated();
            let b = Box::new([7u8; 100]);
            (b, allocated() - before)
        })
        .join()
        .unwrap();
        assert_eq!(made, cost(100));
        let freed = std::thread::spawn(move || {
            let before = allocated();
            drop(block);
            allocated() - before
        })
        .join()
        .unwrap();
        assert_eq!(freed, -cost(100));
    }

    #[test]
    fn threads_allocating_at_once_each_balance_their_own_count() {
        let rounds = if cfg!(miri) { 20 } else { 2000 };
        let threads: Vec<_> = (0..4)
            .map(|t| {
                std::thread::spawn(move || {
                    let before = allocated();
                    for i in 0..rounds {
                        let size = 1 + (i * 37 + t * 101) % 3000;
                        let mut v = Vec::<u8>::with_capacity(size);
                        v.push(1);
                        v.reserve_exact(2 * size); // grown: in place or moved
                        drop(v);
                        if i % 100 == 0 {
                            drop(vec![0u8; LARGE + i]); // a block of the system allocator
                        }
                    }
                    allocated() - before
                })
            })
            .collect();
        let nets: Vec<i64> = threads.into_iter().map(|h| h.join().unwrap()).collect();
        assert_eq!(nets, [0; 4]);
    }

    #[test]
    fn allocations_while_a_thread_shuts_down_are_still_counted() {
        // the counter has no destructor, so it outlives every other thread-local's: what their
        // destructors allocate and free is counted, never lost or a panic
        struct Probe(Arc<AtomicI64>, Arc<AtomicI64>);
        impl Drop for Probe {
            fn drop(&mut self) {
                let before = allocated();
                let v = Vec::<u8>::with_capacity(100);
                self.0.store(allocated() - before, SeqCst);
                drop(v);
                self.1.store(allocated() - before, SeqCst);
            }
        }
        thread_local! {
            static PROBE: std::cell::RefCell<Option<Probe>> = const { std::cell::RefCell::new(None) };
        }
        let (during, after) = (Arc::new(AtomicI64::new(-1)), Arc::new(AtomicI64::new(-1)));
        let probe = Probe(during.clone(), after.clone());
        std::thread::spawn(move || PROBE.with(|p| *p.borrow_mut() = Some(probe)))
            .join()
            .unwrap();
        assert_eq!(during.load(SeqCst), cost(100));
        assert_eq!(after.load(SeqCst), 0);
    }
}
