//! One budget per run, shared by every thread the run uses, and the guard every walk over values
//! goes through.
//!
//! A run has one [`Budget`]: its deadline, fuel, memory, threads and cancellation, whatever number
//! of threads (`pmap`/`pcalls` branches, tool workers) it is split across. Evaluation checks the
//! budget on its own path and returns errors. Walks that run inside std traits (`Hash`,
//! `PartialEq`, sort comparators) or deep inside the printer and the converters cannot return an
//! error, so they [`charge`] the thread's current budget; once the budget is spent the walk unwinds
//! with [`Abort`] (through `resume_unwind`, so no panic message is printed) and the run's boundary
//! ([`catch`]) turns it into the error the budget recorded. Values with shared structure
//! (`[x x]` doubled 60 times) are charged for their expanded size wherever they are walked
//! expanded, so equality, hashing, printing and conversion end at the run's limits.
//!
//! Every recursive walk also goes through [`deeper`], which grows the native stack on the heap
//! when it runs low and counts the new segment as memory of the run.
//!
//! Why one file over 600 lines: the budget and the guard are one mechanism; every charge,
//! reservation and stack check refers to the same shared counters.

use std::cell::Cell;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, ErrorKind, LimitName};
use crate::limits::Limits;

/// What a run needs from its host beyond tools: a chance to notice a pending interruption
/// (Ctrl-C reaches a Python host only when it looks). Called about every [`POLL_EVERY`].
pub trait Poll: Send + Sync {
    /// True when the host wants the run to stop now.
    fn interrupted(&self) -> bool {
        false
    }
    /// Whether the current thread is the one that can notice an interruption.
    fn here(&self) -> bool {
        false
    }
}

/// A host that is never interrupted.
pub struct NeverInterrupted;
impl Poll for NeverInterrupted {}

/// How often a long run asks its host whether it was interrupted.
pub const POLL_EVERY: Duration = Duration::from_millis(20);

/// Walk units (collection elements visited) between two checks of the budget.
const WALK_CHUNK: u64 = 4096;

/// Native stack left below which a walk continues on a new heap segment, and that segment's size.
const RED_ZONE: usize = 256 * 1024;
const SEGMENT: usize = 2 * 1024 * 1024;

/// A cancellation flag a host can set from any thread.
pub type CancelFlag = Arc<AtomicBool>;

/// The budget of one run.
pub struct Budget {
    pub limits: Limits,
    pub started: Instant,
    pub deadline: Instant,
    /// Steps charged by every part of the run (published in chunks).
    fuel: AtomicU64,
    /// Net bytes allocated by the run's threads (published in chunks).
    memory: AtomicI64,
    /// Extra threads the run is using now (the thread that started the run is not counted).
    threads: AtomicUsize,
    pub max_threads: usize,
    cancel: Option<CancelFlag>,
    poll: Arc<dyn Poll>,
    /// Set once the run must end; `error` then holds why.
    stopped: AtomicBool,
    error: Mutex<Option<Error>>,
    next_poll: Mutex<Instant>,
    /// The most the run may hold given what the process has left (see `memory_limit`).
    process_cap: std::sync::OnceLock<i64>,
    /// What the background thread frees for the run (`dropper`), credited to its memory; made
    /// by the run's first hand-off (most runs have none).
    freeing: std::sync::OnceLock<Arc<Freeing>>,
    /// Tool calls admitted so far, every branch of the run included.
    tool_calls: AtomicU64,
    /// Calls admitted per tool that caps its own (`max_calls`); few tools, so a list.
    capped_calls: Mutex<Vec<(String, u64)>>,
}

/// The run's large values handed to the background thread to free, and the bytes freed so far.
/// The memory check settles these before it fails a run, so whether a run fits its
/// `max_memory` does not depend on how far the background thread has got: the verdict is the
/// one freeing at once would have given.
#[derive(Default)]
pub struct Freeing {
    /// Net bytes the background thread freed for the run (zero or negative).
    freed: AtomicI64,
    /// Hand-offs begun and ended so far.
    counts: Mutex<(u64, u64)>,
    ended: Condvar,
}

impl Freeing {
    /// A value is about to be handed off.
    pub fn begin(&self) {
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).0 += 1;
    }

    /// A handed-off value is freed (or was not handed off after all: `bytes` 0); `bytes` is
    /// the change in allocated memory the freeing made.
    pub fn end(&self, bytes: i64) {
        self.freed.fetch_add(bytes, Relaxed);
        self.counts.lock().unwrap_or_else(|p| p.into_inner()).1 += 1;
        self.ended.notify_all();
    }

    fn freed(&self) -> i64 {
        self.freed.load(Relaxed)
    }

    /// Waits until the values handed off so far are freed (not those other threads of the
    /// run hand off meanwhile), or until `deadline`; whether there were any.
    fn settle(&self, deadline: Instant) -> bool {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let target = counts.0;
        if counts.1 >= target {
            return false;
        }
        while counts.1 < target {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            counts = self
                .ended
                .wait_timeout(counts, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        true
    }
}

/// What to do when a cap on tool calls is reached.
const TOOL_CAP_HINT: &str =
    "make fewer calls: pass many items to one call where the tool takes them, or work on fewer items";

impl Budget {
    pub fn new(limits: Limits, poll: Arc<dyn Poll>, cancel: Option<CancelFlag>) -> Self {
        let started = Instant::now();
        Budget {
            limits,
            started,
            deadline: started + Duration::from_millis(limits.timeout_ms),
            fuel: AtomicU64::new(0),
            memory: AtomicI64::new(0),
            threads: AtomicUsize::new(0),
            // LANGUAGE.md §11: parallel branches run at most 2 × CPUs at once, for the whole run
            max_threads: (2 * cpus()).saturating_sub(1),
            cancel,
            poll,
            stopped: AtomicBool::new(false),
            error: Mutex::new(None),
            next_poll: Mutex::new(started + POLL_EVERY),
            process_cap: std::sync::OnceLock::new(),
            freeing: std::sync::OnceLock::new(),
            tool_calls: AtomicU64::new(0),
            capped_calls: Mutex::new(Vec::new()),
        }
    }

    /// Admits one call of tool `name` (whose own cap is `own_cap`) or refuses it: past
    /// `max_tool_calls` for the run, or past the tool's cap. A refused call is not made and
    /// not counted; the error names the tool, the cap and the calls that ran.
    pub fn admit_tool_call(&self, name: &str, own_cap: Option<u64>) -> Result<(), Error> {
        let cap = self.limits.max_tool_calls;
        // counted first, taken back if refused: two branches cannot both take the last call
        let made = self.tool_calls.fetch_add(1, Relaxed);
        if made >= cap {
            self.tool_calls.fetch_sub(1, Relaxed);
            return Err(Error::limit(
                ErrorKind::Tool,
                LimitName::ToolCalls,
                format!(
                    "tool call limit reached: a run may make {cap} tool calls (max_tool_calls), \
                     {made} were made; tool/{name} was not called"
                ),
            )
            .with_hint(TOOL_CAP_HINT));
        }
        let Some(own) = own_cap else { return Ok(()) };
        let mut counts = self.capped_calls.lock().unwrap_or_else(|p| p.into_inner());
        let i = match counts.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                counts.push((name.to_string(), 0));
                counts.len() - 1
            }
        };
        let calls = counts[i].1;
        if calls >= own {
            drop(counts);
            self.tool_calls.fetch_sub(1, Relaxed);
            let message = match own {
                0 => format!(
                    "tool call limit reached: tool/{name} may not be called (its max_calls is 0)"
                ),
                1 => format!(
                    "tool call limit reached: tool/{name} may be called once per run (its \
                     max_calls), and 1 call of it was made"
                ),
                _ => format!(
                    "tool call limit reached: tool/{name} may be called {own} times per run \
                     (its max_calls), and {calls} calls of it were made"
                ),
            };
            return Err(
                Error::limit(ErrorKind::Tool, LimitName::ToolMaxCalls, message)
                    .with_hint(TOOL_CAP_HINT),
            );
        }
        counts[i].1 += 1;
        Ok(())
    }

    /// Tool calls admitted so far in the run.
    pub fn tool_calls_made(&self) -> u64 {
        self.tool_calls.load(Relaxed)
    }

    /// Adds `n` steps; returns the run's total.
    #[inline]
    pub fn add_fuel(&self, n: u64) -> u64 {
        self.fuel.fetch_add(n, Relaxed).saturating_add(n)
    }

    pub fn fuel_used(&self) -> u64 {
        self.fuel.load(Relaxed)
    }

    pub fn fuel_left(&self) -> u64 {
        self.limits.fuel.saturating_sub(self.fuel_used())
    }

    /// Records why the run must end (the first reason wins) and returns that first reason.
    #[cold]
    pub fn stop(&self, e: Error) -> Error {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        self.stopped.store(true, Relaxed);
        slot.get_or_insert(e).clone()
    }

    /// The reason the run was stopped, if it was.
    pub fn stop_reason(&self) -> Option<Error> {
        if !self.stopped.load(Relaxed) {
            return None;
        }
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(|c| c.load(Relaxed))
    }

    /// The checks every part of the run makes from time to time: stopped elsewhere, cancelled,
    /// interrupted by the host, past the deadline, out of fuel.
    pub fn check(&self, deadline: Instant) -> Result<(), Error> {
        self.check_at(deadline, Instant::now())
    }

    /// [`Budget::check`] at `now`, read by the caller (the end of a run reads the clock once
    /// for this check and for the run's duration).
    pub fn check_at(&self, deadline: Instant, now: Instant) -> Result<(), Error> {
        if let Some(e) = self.stop_reason() {
            return Err(e);
        }
        if self.is_cancelled() {
            return Err(self.stop(cancelled_error()));
        }
        if now >= deadline {
            return Err(if deadline < self.deadline {
                branch_timeout_error() // a parallel branch's own time ran out, not the run's
            } else {
                self.stop(timeout_error(self.limits.timeout_ms))
            });
        }
        if self.fuel_used() >= self.limits.fuel {
            return Err(self.stop(fuel_error(self.limits.fuel)));
        }
        self.poll_host(now)
    }

    fn poll_host(&self, now: Instant) -> Result<(), Error> {
        if !self.poll.here() {
            return Ok(());
        }
        {
            let Ok(mut next) = self.next_poll.try_lock() else {
                return Ok(()); // another thread is polling right now
            };
            if now < *next {
                return Ok(());
            }
            *next = now + POLL_EVERY;
        }
        if self.poll.interrupted() {
            return Err(self.stop(interrupted_error()));
        }
        Ok(())
    }

    /// Net bytes the background thread freed for the run so far (zero or negative).
    fn freed(&self) -> i64 {
        self.freeing.get().map_or(0, |f| f.freed())
    }

    /// Bytes the run has allocated, counting this thread's unpublished share.
    pub fn memory_used(&self) -> i64 {
        self.memory.load(Relaxed) + LOCAL.with(|l| l.unpublished()) + self.freed()
    }

    /// Fails when the run's memory plus `extra` bytes about to be allocated pass `max_memory`.
    ///
    /// `extra` is a reservation: the thread counts as using at least its current memory plus
    /// `extra` until it really allocates that much, and the reservation is published at once, so
    /// threads reserving at the same time see each other's.
    ///
    /// A reservation replaces the thread's previous one and ends once the thread has allocated
    /// that much, so reservations never add up over a run: at worst one stale reservation (made,
    /// allocated and freed between two checks) is counted until the next.
    pub fn check_memory(&self, extra: usize) -> Result<(), Error> {
        let extra = i64::try_from(extra).unwrap_or(i64::MAX / 2);
        let mut used = LOCAL.with(|l| {
            if extra > 0 {
                l.floor.set(l.own().saturating_add(extra));
            }
            let d = l.unpublished();
            if d.unsigned_abs() < 64 * 1024 && extra == 0 {
                return self.memory.load(Relaxed) + d;
            }
            l.published.set(l.published.get() + d);
            self.memory.fetch_add(d, Relaxed).saturating_add(d)
        }) + self.freed();
        let mut limit = self.memory_limit(used);
        if used > limit && self.freeing.get().is_some_and(|f| f.settle(self.deadline)) {
            // over only while frees handed to the background are under way: count them done
            used = self.memory_used();
            limit = self.memory_limit(used);
        }
        if used > limit {
            if extra > 0 {
                // not allocated after all: take the reservation back
                LOCAL.with(|l| {
                    l.floor.set(i64::MIN);
                    let d = l.unpublished();
                    l.published.set(l.published.get() + d);
                    self.memory.fetch_add(d, Relaxed);
                });
            }
            let e = if limit < self.limits.max_memory as i64 {
                process_memory_error(self.limits.max_memory, used, limit)
            } else {
                memory_error(self.limits.max_memory, used)
            };
            return Err(self.stop(e));
        }
        Ok(())
    }

    /// `max_memory`, or less when the process has less left: Rust aborts the process when an
    /// allocation is refused, so the run must stop before that. What the process can still take
    /// is read once, when the run first holds 64 MB.
    fn memory_limit(&self, used: i64) -> i64 {
        let max = i64::try_from(self.limits.max_memory).unwrap_or(i64::MAX);
        if used < 64 << 20 {
            return max;
        }
        let cap = *self
            .process_cap
            .get_or_init(|| match crate::sysmem::headroom() {
                Some(h) => {
                    let keep = (h / 10).max(64 << 20);
                    used.saturating_add(h.saturating_sub(keep).min(i64::MAX as u64) as i64)
                }
                None => i64::MAX,
            });
        max.min(cap)
    }

    /// Takes up to `wanted` extra threads from the run's allowance; returns how many it got.
    pub fn take_threads(&self, wanted: usize) -> usize {
        let mut got = 0;
        let _ = self.threads.fetch_update(Relaxed, Relaxed, |t| {
            got = wanted.min(self.max_threads.saturating_sub(t));
            Some(t + got)
        });
        got
    }

    pub fn return_threads(&self, n: usize) {
        self.threads.fetch_sub(n, Relaxed);
    }

    /// Time left before the run's deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }
}

/// CPUs this process may use (asked once: the answer reads cgroup files).
pub fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |c| c.get()))
}

// ---- the errors a budget ends a run with ----

pub fn fuel_error(fuel: u64) -> Error {
    Error::limit(
        ErrorKind::Execution,
        LimitName::Fuel,
        format!("evaluation step limit (fuel) of {fuel} exceeded"),
    )
    .with_hint("the program does too much work; process less data per turn or simplify the loop")
}

pub fn timeout_error(timeout_ms: u64) -> Error {
    Error::limit(
        ErrorKind::Timeout,
        LimitName::Timeout,
        format!("execution exceeded {timeout_ms}ms limit"),
    )
}

pub fn branch_timeout_error() -> Error {
    Error::limit(
        ErrorKind::Timeout,
        LimitName::Timeout,
        format!(
            "a parallel branch exceeded its {}ms limit (each pmap/pcalls branch may run {}ms)",
            crate::limits::BRANCH_TIMEOUT_MS,
            crate::limits::BRANCH_TIMEOUT_MS
        ),
    )
    .with_hint("split the work into smaller branches, or do less in each")
}

pub fn memory_error(max_memory: usize, used: i64) -> Error {
    Error::limit(
        ErrorKind::MemoryExceeded,
        LimitName::Memory,
        format!(
            "memory limit of {} MB exceeded (max_memory): the program needed {} MB",
            max_memory / (1024 * 1024),
            used.max(0) / (1024 * 1024)
        ),
    )
    .with_hint("work on less data at once: filter early, take a sample, or aggregate")
}

pub fn process_memory_error(max_memory: usize, used: i64, cap: i64) -> Error {
    Error::limit(
        ErrorKind::MemoryExceeded,
        LimitName::Memory,
        format!(
            "memory limit exceeded: the program needed {} MB but the process has only {} MB left for it (max_memory is {} MB)",
            used.max(0) / (1024 * 1024),
            cap.max(0) / (1024 * 1024),
            max_memory / (1024 * 1024)
        ),
    )
    .with_hint("work on less data at once: filter early, take a sample, or aggregate")
}

pub fn cancelled_error() -> Error {
    Error::new(ErrorKind::Cancelled, "the run was cancelled by the host")
}

pub fn interrupted_error() -> Error {
    Error::new(ErrorKind::Cancelled, "the run was interrupted by the host")
}

// ---- the thread's part in a run ----

struct Local {
    budget: Cell<*const Budget>,
    /// Walk units since the last check.
    walked: Cell<u64>,
    /// This thread's allocation counter when it joined the run.
    alloc_base: Cell<i64>,
    /// Bytes of this thread already added to the budget's memory.
    published: Cell<i64>,
    /// Bytes counted by hand (stack segments, Python objects being built) on top of allocations.
    extra: Cell<i64>,
    /// Memory this thread reserved for an allocation about to happen: it counts as using at
    /// least this much (see `Budget::check_memory`).
    floor: Cell<i64>,
    /// Nesting of speculative passes (`eval/stages.rs`) on this thread, and the walk units
    /// they have held back from the budget: a pass that fails is discarded with its walks.
    holding: Cell<u32>,
    held: Cell<u64>,
}

impl Local {
    /// Bytes this thread allocated since it joined the run.
    fn own(&self) -> i64 {
        crate::alloc::allocated() - self.alloc_base.get() + self.extra.get()
    }
    /// What the thread counts as using: its allocations, or its reservation while that is
    /// larger (a reservation ends once the allocations reach it).
    fn counted(&self) -> i64 {
        let own = self.own();
        let floor = self.floor.get();
        if own >= floor {
            if floor != i64::MIN {
                self.floor.set(i64::MIN);
            }
            own
        } else {
            floor
        }
    }
    fn unpublished(&self) -> i64 {
        if self.budget.get().is_null() {
            return 0;
        }
        self.counted() - self.published.get()
    }
}

thread_local! {
    static LOCAL: Local = const {
        Local {
            budget: Cell::new(std::ptr::null()),
            walked: Cell::new(0),
            alloc_base: Cell::new(0),
            published: Cell::new(0),
            extra: Cell::new(0),
            floor: Cell::new(i64::MIN),
            holding: Cell::new(0),
            held: Cell::new(0),
        }
    };
}

/// The payload a walk unwinds with when the run's budget is spent.
pub struct Abort;

/// Runs `f` with this thread taking part in `budget`'s run: allocations count toward its memory
/// and walks charge it. Nested calls (a tool that starts another run) restore the outer state.
pub fn with_budget<R>(budget: &Budget, f: impl FnOnce() -> R) -> R {
    struct Restore {
        saved: (*const Budget, u64, i64, i64, i64, i64),
    }
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = LOCAL.try_with(|l| {
                let b = l.budget.get();
                if !b.is_null() {
                    // what the thread leaves allocated stays the run's (a branch's result)
                    let d = l.own() - l.published.get();
                    // SAFETY: `b` is the budget set below, which outlives this guard.
                    unsafe { (*b).memory.fetch_add(d, Relaxed) };
                }
                let (budget, walked, base, published, extra, floor) = self.saved;
                l.budget.set(budget);
                l.walked.set(walked);
                l.alloc_base.set(base);
                l.published.set(published);
                l.extra.set(extra);
                l.floor.set(floor);
            });
        }
    }
    let ptr: *const Budget = budget;
    let _restore = LOCAL.with(|l| {
        let saved = (
            l.budget.get(),
            l.walked.get(),
            l.alloc_base.get(),
            l.published.get(),
            l.extra.get(),
            l.floor.get(),
        );
        l.budget.set(ptr);
        l.walked.set(0);
        l.alloc_base.set(crate::alloc::allocated());
        l.published.set(0);
        l.extra.set(0);
        l.floor.set(i64::MIN);
        Restore { saved }
    });
    f()
}

/// Runs `f` with this thread working for no run: host code (a tool's Python) that calls back
/// into the interpreter must not be charged to, or stopped by, the run that called it.
pub fn without_budget<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(*const Budget);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = LOCAL.try_with(|l| l.budget.set(self.0));
        }
    }
    let _restore = LOCAL.with(|l| Restore(l.budget.replace(std::ptr::null())));
    f()
}

/// The budget this thread is working for, if any, for the duration of `f`.
fn current<R>(f: impl FnOnce(Option<&Budget>) -> R) -> R {
    let p = LOCAL.with(|l| l.budget.get());
    // SAFETY: the pointer is set only by `with_budget`, which clears it before the budget it
    // borrows can be dropped.
    f(unsafe { p.as_ref() })
}

/// Time left before the current run's deadline, and its `timeout_ms` (`None` outside a run).
pub fn time_left() -> Option<(Duration, u64)> {
    current(|b| b.map(|b| (b.remaining(), b.limits.timeout_ms)))
}

/// Whether a run's budget is current on this thread: its checks may poll the host, which can
/// run Python's signal handlers.
pub fn in_budget() -> bool {
    LOCAL
        .try_with(|l| !l.budget.get().is_null())
        .unwrap_or(false)
}

/// The current run's account of background frees (`None` outside a run, or while this
/// thread's locals are being torn down).
pub fn freeing() -> Option<Arc<Freeing>> {
    LOCAL
        .try_with(|l| l.budget.get())
        .ok()
        // SAFETY: as in `current`.
        .and_then(|p| unsafe { p.as_ref() })
        .map(|b| b.freeing.get_or_init(Arc::default).clone())
}

/// Charges `units` of walk work (elements visited) to the current run. Unwinds with [`Abort`]
/// when the run must end; does nothing outside a run.
#[inline]
pub fn charge(units: usize) {
    let over = LOCAL.with(|l| {
        let w = l.walked.get() + units as u64;
        l.walked.set(w);
        w >= WALK_CHUNK
    });
    if over {
        charge_slow();
    }
}

#[cold]
fn charge_slow() {
    let walked = LOCAL.with(|l| {
        let w = l.walked.replace(0);
        if l.holding.get() > 0 {
            // held for the speculative pass, whose own checks count them against the fuel
            l.held.set(l.held.get() + w);
            return 0;
        }
        w
    });
    charge_walks(walked);
}

/// Adds walk units to the run's fuel and checks the run (time, fuel, memory); unwinds with
/// [`Abort`] when it must end.
fn charge_walks(units: u64) {
    let failed = current(|b| {
        let b = b?;
        b.add_fuel(units);
        b.check(b.deadline).and_then(|()| b.check_memory(0)).err()
    });
    if failed.is_some() {
        resume_unwind(Box::new(Abort));
    }
}

/// A speculative pass's hold on this thread's walk charges (see `hold_walks`). Dropped without
/// `release` (the run unwound), it ends as a failed pass: the walks are forgotten.
pub struct WalkHold {
    walked: u64,
    held: u64,
    open: bool,
}

/// Starts holding this thread's walk charges back from the budget, for a speculative pass.
pub fn hold_walks() -> WalkHold {
    LOCAL.with(|l| {
        l.holding.set(l.holding.get() + 1);
        WalkHold {
            walked: l.walked.get(),
            held: l.held.get(),
            open: true,
        }
    })
}

/// Walk units held back by the speculative passes under way on this thread.
pub fn held_walks() -> u64 {
    LOCAL.with(|l| l.held.get())
}

impl WalkHold {
    /// Ends the pass. A failed pass's walks are forgotten; a successful outermost pass's are
    /// charged to the budget now and checked as a walk's charge is (unwinds with [`Abort`]
    /// when the run must end, as the calls as written would have).
    pub fn release(mut self, succeeded: bool) {
        self.open = false;
        let publish = self.end(succeeded);
        if publish > 0 {
            charge_walks(publish);
        }
    }

    /// The walk units to charge now.
    fn end(&self, succeeded: bool) -> u64 {
        LOCAL
            .try_with(|l| {
                l.holding.set(l.holding.get().saturating_sub(1));
                if !succeeded {
                    l.walked.set(self.walked);
                    l.held.set(self.held);
                    return 0;
                }
                if l.holding.get() == 0 {
                    return l.held.replace(0);
                }
                0
            })
            .unwrap_or(0)
    }
}

impl Drop for WalkHold {
    fn drop(&mut self) {
        if self.open {
            self.end(false);
        }
    }
}

/// Counts `bytes` the run holds outside Rust's allocator (Python objects being built) and checks
/// the memory limit; unwinds with [`Abort`] when it is passed.
pub fn charge_bytes(bytes: usize) {
    let failed = current(|b| {
        let b = b?;
        LOCAL.with(|l| l.extra.set(l.extra.get() + bytes as i64));
        b.check_memory(0).err()
    });
    if failed.is_some() {
        resume_unwind(Box::new(Abort));
    }
}

/// Ends the current walk if the run was stopped elsewhere (another branch, a cancel).
pub fn check_now() {
    let failed = current(|b| b.and_then(|b| b.check(b.deadline).err()));
    if failed.is_some() {
        resume_unwind(Box::new(Abort));
    }
}

/// Runs one level of a recursive walk, continuing on a new heap-allocated stack segment when
/// the native stack runs low. The segment counts as memory of the current run.
#[inline]
pub fn deeper<R>(f: impl FnOnce() -> R) -> R {
    match stacker::remaining_stack() {
        Some(left) if left < RED_ZONE => grow(f),
        _ => f(), // plenty left, or a platform where it cannot be known
    }
}

#[cold]
#[inline(never)]
fn grow<R>(f: impl FnOnce() -> R) -> R {
    struct Segment;
    impl Drop for Segment {
        fn drop(&mut self) {
            let _ = LOCAL.try_with(|l| l.extra.set(l.extra.get() - SEGMENT as i64));
        }
    }
    LOCAL.with(|l| l.extra.set(l.extra.get() + SEGMENT as i64));
    let _segment = Segment;
    let failed = current(|b| b.and_then(|b| b.check_memory(0).err()));
    if failed.is_some() {
        resume_unwind(Box::new(Abort));
    }
    stacker::grow(SEGMENT, f)
}

/// Runs `f`, turning an [`Abort`] into the error the budget recorded and any other panic into
/// an `internal_error`. The boundary of every run and of every thread a run starts.
pub fn catch<R>(budget: &Budget, f: impl FnOnce() -> R) -> Result<R, Error> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => Ok(r),
        Err(payload) => Err(payload_error(budget, payload)),
    }
}

/// The error for a caught unwind payload.
pub fn payload_error(budget: &Budget, payload: Box<dyn std::any::Any + Send>) -> Error {
    if payload.is::<Abort>() {
        return budget.stop_reason().unwrap_or_else(|| {
            Error::new(
                ErrorKind::Internal,
                "internal error: a walk ended without a reason",
            )
        });
    }
    panic_error(&payload)
}

pub fn panic_error(payload: &Box<dyn std::any::Any + Send>) -> Error {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    Error::new(ErrorKind::Internal, format!("internal error: {msg}"))
}

/// For the `Drop` of recursive types (forms, IR nodes) with children: when the native stack runs
/// low, moves the value out (leaving `placeholder`, which must be a leaf) and drops it on a new
/// stack segment, so dropping any depth never overflows.
#[inline]
pub fn drop_on_fresh_stack<T>(v: &mut T, placeholder: T) {
    if !matches!(stacker::remaining_stack(), Some(left) if left < RED_ZONE) {
        return;
    }
    let taken = std::mem::replace(v, placeholder);
    stacker::grow(SEGMENT, move || drop(taken));
}

/// Checks, before a builtin allocates `bytes` at once, that the current run can afford them;
/// unwinds with [`Abort`] when it cannot. Does nothing outside a run.
pub fn reserve(bytes: usize) {
    let failed = current(|b| b.and_then(|b| b.check_memory(bytes).err()));
    if failed.is_some() {
        resume_unwind(Box::new(Abort));
    }
}

/// Checks a collection of `n` elements a builtin is about to build against
/// `max_collection_size`; unwinds with [`Abort`] when it is over. Does nothing outside a run.
pub fn check_size(n: usize) {
    let failed = current(|b| {
        let b = b?;
        (n > b.limits.max_collection_size)
            .then(|| b.stop(size_error(n, b.limits.max_collection_size)))
    });
    if failed.is_some() {
        resume_unwind(Box::new(Abort));
    }
}

pub fn size_error(n: usize, max: usize) -> Error {
    Error::limit(
        ErrorKind::MemoryExceeded,
        LimitName::CollectionSize,
        format!("collection of {n} elements exceeds the limit of {max} (max_collection_size)"),
    )
}

/// Bytes a vector of `n` values takes.
pub const fn values_bytes(n: usize) -> usize {
    n.saturating_mul(std::mem::size_of::<crate::value::Value>())
}

/// Iterates `iter`, charging the current run for the items as they are visited (in groups, so
/// the thread-local is touched once per group): a long flat walk notices the deadline while
/// it goes, not only before it starts.
///
/// Starting the walk is charged and checked too: a value built from shared parts is mostly
/// small collections, each walked many times over.
pub fn charged<I: IntoIterator>(iter: I) -> Charged<I::IntoIter> {
    charge(1);
    Charged {
        inner: iter.into_iter(),
        n: 0,
    }
}

pub struct Charged<I> {
    inner: I,
    n: u32,
}

const CHARGE_GROUP: u32 = 256;

impl<I: Iterator> Iterator for Charged<I> {
    type Item = I::Item;
    #[inline]
    fn next(&mut self) -> Option<I::Item> {
        self.n += 1;
        if self.n == CHARGE_GROUP {
            self.n = 0;
            charge(CHARGE_GROUP as usize);
        }
        self.inner.next()
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl<I> Drop for Charged<I> {
    fn drop(&mut self) {
        // the items of an unfinished group; counted only: a drop must never unwind
        let n = u64::from(self.n);
        let _ = LOCAL.try_with(|l| l.walked.set(l.walked.get() + n));
    }
}
