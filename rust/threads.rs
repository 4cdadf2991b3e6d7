//! Threads the runtime starts for all runs together: worker threads (runs that call tools) and
//! `pmap`/`pcalls` branch threads.
//!
//! A run bounds its own branches (2 × CPUs at once), but a run abandoned at its deadline leaves
//! behind whatever blocks in a tool: a worker and its branch threads, for as long as the tool
//! does. Each such thread keeps its stack and the allocators' per-thread heaps (mimalloc's
//! segment, glibc's arena), so under an address-space limit (`RLIMIT_AS`) enough of them take
//! the address space the process needs, and the next allocation that fails aborts it. So every
//! one of these threads is started only while the address space left keeps [`THREAD_COST`] for
//! it and each thread being started, and [`SPARE`] for the host and its runs besides.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

/// Address space a new thread may come to take (its stack, mimalloc's 32 MiB segment, a glibc
/// arena of 64 MiB for the first 8 × CPUs threads).
pub const THREAD_COST: u64 = 128 << 20;
/// Address space left to the host and its runs whatever the threads take.
pub const SPARE: u64 = 256 << 20;
/// Branch threads alive at once, in all runs.
pub const MAX_BRANCH_THREADS: usize = 64;

/// Threads claimed that have not yet made their allocator heaps (counted as to come).
static STARTING: AtomicUsize = AtomicUsize::new(0);
static BRANCHES: AtomicUsize = AtomicUsize::new(0);

/// Whether the address space has room for one more thread (`None` limit: always).
pub fn address_space_allows() -> bool {
    let need = SPARE + THREAD_COST * (STARTING.load(SeqCst) as u64 + 1);
    crate::sysmem::address_space_left().map_or(true, |left| left >= need)
}

/// A thread being started, counted against the address space until [`Starting::started`].
pub struct Starting(bool);

impl Starting {
    /// Claims room for a thread, or `None` when the address space has none left.
    pub fn claim() -> Option<Starting> {
        if !address_space_allows() {
            return None;
        }
        STARTING.fetch_add(1, SeqCst);
        Some(Starting(true))
    }

    /// Room for a thread counted as to come, claimed whatever the address space (the one
    /// thread without which the work cannot be done at all).
    pub fn forced() -> Starting {
        STARTING.fetch_add(1, SeqCst);
        Starting(true)
    }

    /// Called by the new thread once it has allocated (its heaps now show in the address
    /// space the next claim reads).
    pub fn started(mut self) {
        drop(std::hint::black_box(Box::new(0u64)));
        self.release();
    }

    fn release(&mut self) {
        if std::mem::take(&mut self.0) {
            STARTING.fetch_sub(1, SeqCst);
        }
    }
}

impl Drop for Starting {
    fn drop(&mut self) {
        self.release();
    }
}

/// A branch thread's place among [`MAX_BRANCH_THREADS`], given back when dropped.
pub struct Branch(Starting);

impl Branch {
    /// A place for one more branch thread, or `None` (the calling thread then does the work).
    pub fn claim() -> Option<Branch> {
        if BRANCHES.fetch_add(1, SeqCst) >= MAX_BRANCH_THREADS {
            BRANCHES.fetch_sub(1, SeqCst);
            return None;
        }
        match Starting::claim() {
            Some(s) => Some(Branch(s)),
            None => {
                BRANCHES.fetch_sub(1, SeqCst);
                None
            }
        }
    }

    /// On the new thread, once it runs: its address space now shows.
    pub fn started(&mut self) {
        drop(std::hint::black_box(Box::new(0u64)));
        self.0.release();
    }
}

impl Drop for Branch {
    fn drop(&mut self) {
        BRANCHES.fetch_sub(1, SeqCst);
    }
}
