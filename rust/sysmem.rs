//! How much more memory the process can take, for work that is not bounded by a run's
//! `max_memory` (converting a host's input data, loading JSON).
//!
//! Rust aborts the process when an allocation fails, so input that does not fit must be noticed
//! before the allocator is refused: such work watches its allocations against the headroom
//! (read once the work has allocated 16 MB) and stops with an error while there is still room
//! to report it. Work split across threads shares one allowance ([`Shared`]).

use crate::error::{Error, ErrorKind};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering::Relaxed};
use std::sync::Arc;

/// Bytes the process can still allocate: the least of what its address-space limit, its
/// cgroup's memory limit and the machine's available memory allow. `None` where none of these
/// can be read (the work then runs unwatched).
pub fn headroom() -> Option<u64> {
    let mut best: Option<u64> = None;
    let mut consider = |v: Option<u64>| {
        if let Some(v) = v {
            best = Some(best.map_or(v, |b| b.min(v)));
        }
    };
    consider(address_space_left());
    consider(cgroup_left());
    consider(meminfo_kb("MemAvailable:").map(|kb| kb * 1024));
    best
}

pub fn address_space_left() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0
        || lim.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    let used = status_kb("VmSize:")? * 1024;
    Some(lim.rlim_cur.saturating_sub(used))
}

fn cgroup_left() -> Option<u64> {
    let max = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok()?;
    let max: u64 = max.trim().parse().ok()?; // "max" (no limit) does not parse
    let cur: u64 = std::fs::read_to_string("/sys/fs/cgroup/memory.current")
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(max.saturating_sub(cur))
}

fn field_kb(path: &str, field: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    line[field.len()..].split_whitespace().next()?.parse().ok()
}

fn status_kb(field: &str) -> Option<u64> {
    field_kb("/proc/self/status", field)
}

fn meminfo_kb(field: &str) -> Option<u64> {
    field_kb("/proc/meminfo", field)
}

/// Watches the allocations of one piece of work on this thread against the headroom.
pub struct Watch {
    start: i64,
    /// What the work may allocate, read from the system when the work first passes [`STEP`]
    /// (reading it takes tens of microseconds: small inputs never need it).
    allowed: Option<i64>,
    next: i64,
    /// The allowance of a work split across threads, and what this thread has published to it.
    shared: Option<Arc<Shared>>,
    published: i64,
}

/// One allowance for the watches of a work split across threads: each publishes what its
/// thread allocated (allocations are counted per thread) and checks the sum.
pub struct Shared {
    allowed: i64,
    used: AtomicI64,
    /// Set by the first watch to find the work over its allowance: the others stop at their
    /// next check instead of reading on (what a stopped thread freed may still hold address
    /// space, which an address-space limit counts).
    exceeded: AtomicBool,
}

/// Address space a second thread takes beyond its allocations (its stack, its malloc arena,
/// its allocator's partly used pages), kept out of a shared allowance.
const THREAD_OVERHEAD: i64 = 96 << 20;

impl Shared {
    /// Reads the headroom now (the work has not begun).
    ///
    /// With no room left for a second thread's overhead the work is over its allowance from
    /// the start, and stops at its first check: allocating on until the usual check (after
    /// 16 MB) could find the address space full first, and a refused allocation aborts.
    pub fn new() -> Arc<Shared> {
        let allowed = allowance(0).saturating_sub(THREAD_OVERHEAD);
        Arc::new(Shared {
            allowed,
            used: AtomicI64::new(0),
            exceeded: AtomicBool::new(allowed <= 0),
        })
    }
}

/// What work may allocate given the headroom now: less a tenth (at least 64 MB) kept for
/// Python and everything else, plus `done`, what the work allocated before the reading.
fn allowance(done: i64) -> i64 {
    headroom().map_or(i64::MAX, |h| {
        let keep = (h / 10).max(64 << 20);
        (h.saturating_sub(keep).min(i64::MAX as u64) as i64).saturating_add(done.max(0))
    })
}

/// Checked after this many more bytes were allocated.
const STEP: i64 = 16 << 20;

impl Watch {
    pub fn new() -> Watch {
        let start = crate::alloc::allocated();
        Watch {
            start,
            allowed: None,
            next: start + STEP,
            shared: None,
            published: 0,
        }
    }

    /// A watch of this thread's share of a work split across threads.
    pub fn sharing(shared: Arc<Shared>) -> Watch {
        Watch {
            allowed: Some(shared.allowed),
            shared: Some(shared),
            ..Watch::new()
        }
    }

    /// What the work may allocate (the headroom read now no longer has what it allocated).
    fn allowed(&mut self) -> i64 {
        let start = self.start;
        *self
            .allowed
            .get_or_insert_with(|| allowance(crate::alloc::allocated() - start))
    }

    /// What the whole work has allocated, given this thread's `used` (published first when
    /// the work is shared).
    fn total(&mut self, used: i64) -> i64 {
        match &self.shared {
            None => used,
            Some(s) => {
                let delta = used - self.published;
                self.published = used;
                s.used.fetch_add(delta, Relaxed) + delta
            }
        }
    }

    /// An error once the work has allocated more than the process has room for.
    #[inline]
    pub fn check(&mut self) -> Result<(), Error> {
        let now = crate::alloc::allocated();
        if let Some(s) = &self.shared {
            if s.exceeded.load(Relaxed) {
                return Err(Error::new(
                    ErrorKind::MemoryExceeded,
                    format!(
                        "the input needs more memory than this process has left ({} MB are available)",
                        s.allowed.max(0) >> 20
                    ),
                ));
            }
        }
        if now < self.next {
            return Ok(());
        }
        self.next = now + STEP;
        let total = self.total(now - self.start);
        self.over(total)
    }

    /// Bytes this thread allocated for the work so far.
    pub fn used(&self) -> i64 {
        crate::alloc::allocated() - self.start
    }

    /// Counts `bytes` that another thread of the work allocated (and published) as this
    /// thread's: the values it made are this thread's now.
    pub fn absorb(&mut self, bytes: i64) {
        self.start -= bytes;
        if self.shared.is_some() {
            self.published += bytes;
        }
    }

    /// An error if allocating `extra` more bytes at once would pass what the process has room
    /// for (checked before a large allocation: Rust cannot recover from a refused one).
    pub fn reserve(&mut self, extra: usize) -> Result<(), Error> {
        let now = crate::alloc::allocated();
        if now.saturating_add(i64::try_from(extra).unwrap_or(i64::MAX)) < self.next {
            // within what goes unchecked until the next check anyway (a shared work's sum
            // would otherwise be published for every small list and record)
            return Ok(());
        }
        let total = self.total(crate::alloc::allocated() - self.start);
        self.over(total.saturating_add(i64::try_from(extra).unwrap_or(i64::MAX)))
    }

    fn over(&mut self, used: i64) -> Result<(), Error> {
        if used <= STEP {
            return Ok(()); // as much as goes unchecked between two checks anyway
        }
        let allowed = self.allowed();
        if used > allowed {
            if let Some(s) = &self.shared {
                s.exceeded.store(true, Relaxed);
            }
            return Err(Error::new(
                ErrorKind::MemoryExceeded,
                format!(
                    "the input needs more memory than this process has left (it would use {} MB; {} MB are available)",
                    used >> 20,
                    allowed >> 20
                ),
            ));
        }
        Ok(())
    }
}

impl Default for Watch {
    fn default() -> Self {
        Watch::new()
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // a shared work's sum follows what this thread still holds (its frees included)
        if self.shared.is_some() {
            let used = crate::alloc::allocated() - self.start;
            self.total(used);
        }
    }
}
