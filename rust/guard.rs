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
//! reservation and stack check refers to the same shared counters. The unit tests beside it
//! (run under Miri by `scripts/miri.sh`) are two fifths of the file: they read the thread's
//! private state, which a separate module could not.

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

/// Bytes one value takes (`crate::value` asserts it at compile time: this module lies below it).
pub const VALUE_BYTES: usize = 16;

/// Bytes a vector of `n` values takes.
pub const fn values_bytes(n: usize) -> usize {
    n.saturating_mul(VALUE_BYTES)
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

#[cfg(test)]
impl Freeing {
    /// Hand-offs begun and ended, and the bytes freed so far (for `dropper.rs`'s tests).
    pub(crate) fn tally(&self) -> (u64, u64, i64) {
        let (begun, ended) = *self.counts.lock().unwrap_or_else(|p| p.into_inner());
        (begun, ended, self.freed())
    }

    /// Holds the lock `end` takes: whoever ends a hand-off waits until this is dropped (how
    /// `dropper.rs`'s tests keep the background thread busy).
    pub(crate) fn hold_ends(&self) -> std::sync::MutexGuard<'_, (u64, u64)> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    //! What the budget and the thread's part in it rely on: each limit ends the run with its
    //! own error, the first reason stands, refused calls and reservations are taken back, a
    //! nested or host-side call restores the thread's state (the raw budget pointer included),
    //! walk charges are batched and held exactly as documented, and the stack grows on the heap
    //! as memory of the run. Run under Miri by `scripts/miri.sh` (Miri has no native stack
    //! limit, so the tests of a stack running low are native only).

    use super::*;
    use std::sync::atomic::Ordering::SeqCst;

    fn budget(set: impl FnOnce(&mut Limits)) -> Budget {
        let mut limits = Limits::default();
        set(&mut limits);
        Budget::new(limits, Arc::new(NeverInterrupted), None)
    }

    /// Runs `f` as a run on `b` would, returning the error it ended with.
    fn run_err<R>(b: &Budget, f: impl FnOnce() -> R) -> Error {
        match catch(b, || with_budget(b, f)) {
            Ok(_) => panic!("the run was not stopped"),
            Err(e) => e,
        }
    }

    fn walked() -> u64 {
        LOCAL.with(|l| l.walked.get())
    }

    #[test]
    fn past_max_tool_calls_a_call_is_refused_and_not_counted() {
        let b = budget(|l| l.max_tool_calls = 2);
        assert!(b.admit_tool_call("fetch", None).is_ok());
        assert!(b.admit_tool_call("fetch", None).is_ok());
        let e = b.admit_tool_call("fetch", None).unwrap_err();
        assert_eq!(
            (e.kind, e.limit),
            (ErrorKind::Tool, Some(LimitName::ToolCalls))
        );
        assert_eq!(
            e.message,
            "tool call limit reached: a run may make 2 tool calls (max_tool_calls), 2 were made; \
             tool/fetch was not called"
        );
        assert_eq!(e.hint.as_deref(), Some(TOOL_CAP_HINT));
        assert_eq!(b.tool_calls_made(), 2);
        // a refused call is the run's to handle, not the end of it
        assert_eq!(b.stop_reason(), None);
    }

    #[test]
    fn a_tools_own_cap_counts_its_calls_only() {
        let b = budget(|_| {});
        assert!(b.admit_tool_call("search", Some(1)).is_ok());
        let e = b.admit_tool_call("search", Some(1)).unwrap_err();
        assert_eq!(e.limit, Some(LimitName::ToolMaxCalls));
        assert_eq!(
            e.message,
            "tool call limit reached: tool/search may be called once per run (its max_calls), \
             and 1 call of it was made"
        );
        assert!(b.admit_tool_call("lookup", Some(2)).is_ok());
        assert!(b.admit_tool_call("lookup", Some(2)).is_ok());
        let e = b.admit_tool_call("lookup", Some(2)).unwrap_err();
        assert_eq!(
            e.message,
            "tool call limit reached: tool/lookup may be called 2 times per run (its max_calls), \
             and 2 calls of it were made"
        );
        let e = b.admit_tool_call("never", Some(0)).unwrap_err();
        assert_eq!(
            e.message,
            "tool call limit reached: tool/never may not be called (its max_calls is 0)"
        );
        assert!(b.admit_tool_call("other", None).is_ok());
        // three refused, taken back from the run's count
        assert_eq!(b.tool_calls_made(), 4);
    }

    #[test]
    fn branches_calling_at_once_never_pass_either_cap() {
        let b = budget(|l| l.max_tool_calls = 50);
        let admitted = |name: &'static str, own: Option<u64>| {
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| {
                        s.spawn(|| {
                            (0..40)
                                .filter(|_| b.admit_tool_call(name, own).is_ok())
                                .count()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .sum::<usize>()
            })
        };
        assert_eq!(admitted("capped", Some(30)), 30);
        assert_eq!(admitted("free", None), 20);
        assert_eq!(b.tool_calls_made(), 50);
    }

    #[test]
    fn out_of_fuel_the_run_stops_and_the_first_reason_stands() {
        let b = budget(|l| l.fuel = 100);
        assert_eq!(b.add_fuel(60), 60);
        assert_eq!(b.fuel_left(), 40);
        assert!(b.check(b.deadline).is_ok());
        assert_eq!(b.add_fuel(40), 100);
        let e = b.check(b.deadline).unwrap_err();
        assert_eq!(
            (e.kind, e.limit),
            (ErrorKind::Execution, Some(LimitName::Fuel))
        );
        assert_eq!(e.message, "evaluation step limit (fuel) of 100 exceeded");
        assert_eq!(b.stop_reason(), Some(e.clone()));
        // a later reason does not replace it
        assert_eq!(b.stop(cancelled_error()), e);
        assert_eq!(b.check(b.deadline).unwrap_err(), e);
    }

    #[test]
    fn a_branchs_deadline_ends_the_branch_and_the_runs_ends_the_run() {
        let b = budget(|l| l.timeout_ms = 1000);
        let branch = b.started + Duration::from_millis(10);
        let e = b.check_at(branch, branch).unwrap_err();
        assert_eq!(
            (e.kind, e.limit),
            (ErrorKind::Timeout, Some(LimitName::Timeout))
        );
        assert!(e
            .message
            .starts_with("a parallel branch exceeded its 5000ms limit"));
        assert_eq!(b.stop_reason(), None);
        assert!(b.check_at(b.deadline, branch).is_ok());
        let e = b.check_at(b.deadline, b.deadline).unwrap_err();
        assert_eq!(e.message, "execution exceeded 1000ms limit");
        assert_eq!(b.stop_reason(), Some(e.clone()));
        // stopped: every later check ends, whatever the time
        assert_eq!(b.check_at(b.deadline, b.started).unwrap_err(), e);
    }

    #[test]
    fn a_cancel_from_another_thread_stops_the_run() {
        let flag: CancelFlag = Arc::default();
        let b = Budget::new(
            Limits::default(),
            Arc::new(NeverInterrupted),
            Some(flag.clone()),
        );
        assert!(b.check(b.deadline).is_ok() && !b.is_cancelled());
        std::thread::spawn(move || flag.store(true, Relaxed))
            .join()
            .unwrap();
        let e = b.check(b.deadline).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Cancelled);
        assert_eq!(e.message, "the run was cancelled by the host");
        assert_eq!(b.stop_reason(), Some(e));
    }

    struct Host {
        here: bool,
        interrupted: bool,
        asked: AtomicUsize,
    }

    impl Poll for Host {
        fn interrupted(&self) -> bool {
            self.asked.fetch_add(1, SeqCst);
            self.interrupted
        }
        fn here(&self) -> bool {
            self.here
        }
    }

    fn polled(here: bool, interrupted: bool) -> (Arc<Host>, Budget) {
        let host = Arc::new(Host {
            here,
            interrupted,
            asked: AtomicUsize::new(0),
        });
        (host.clone(), Budget::new(Limits::default(), host, None))
    }

    #[test]
    fn the_host_is_asked_once_per_poll_interval_and_only_on_its_thread() {
        let (away, b) = polled(false, true);
        assert!(b.check_at(b.deadline, b.started + 2 * POLL_EVERY).is_ok());
        assert_eq!(away.asked.load(SeqCst), 0);

        let (host, b) = polled(true, false);
        let at = |ms| b.started + Duration::from_millis(ms);
        let poll_ms = POLL_EVERY.as_millis() as u64;
        for (ms, asked) in [(1, 0), (poll_ms, 1), (poll_ms + 1, 1), (2 * poll_ms, 2)] {
            assert!(b.check_at(b.deadline, at(ms)).is_ok());
            assert_eq!(host.asked.load(SeqCst), asked, "at {ms}ms");
        }

        let (host, b) = polled(true, true);
        assert!(b.check_at(b.deadline, b.started).is_ok());
        let e = b.check_at(b.deadline, b.started + POLL_EVERY).unwrap_err();
        assert_eq!(host.asked.load(SeqCst), 1);
        assert_eq!(e.kind, ErrorKind::Cancelled);
        assert_eq!(e.message, "the run was interrupted by the host");
        assert_eq!(b.stop_reason(), Some(e));
    }

    #[test]
    fn a_reservation_counts_until_it_is_allocated_and_a_refused_one_is_taken_back() {
        let b = budget(|l| l.max_memory = 1 << 20);
        with_budget(&b, || {
            let start = b.memory_used();
            b.check_memory(600_000).unwrap();
            assert_eq!(b.memory_used() - start, 600_000);
            // a new reservation replaces the last: they never add up
            b.check_memory(500_000).unwrap();
            assert_eq!(b.memory_used() - start, 500_000);
            // once allocated, what counts is the allocation
            let before = crate::alloc::allocated();
            let v = Vec::<u8>::with_capacity(700_000);
            let made = crate::alloc::allocated() - before;
            assert_eq!(b.memory_used() - start, made);
            drop(v);
            assert_eq!(b.memory_used(), start);
            let before = crate::alloc::allocated();
            let e = b.check_memory(2 << 20).unwrap_err();
            let error_bytes = crate::alloc::allocated() - before; // the error, and its copy kept
            assert_eq!(
                (e.kind, e.limit),
                (ErrorKind::MemoryExceeded, Some(LimitName::Memory))
            );
            assert_eq!(
                e.message,
                "memory limit of 1 MB exceeded (max_memory): the program needed 2 MB"
            );
            // the 2 MB were never allocated: only what was is counted
            assert_eq!(b.memory_used(), start + error_bytes);
            assert_eq!(b.stop_reason(), Some(e));
        });
    }

    #[test]
    fn a_memory_check_counts_frees_under_way_as_done_before_it_fails_a_run() {
        let b = budget(|l| l.max_memory = 1 << 20);
        with_budget(&b, || {
            let held = vec![0u8; 800_000];
            let credit = freeing().expect("the run's account of frees");
            credit.begin(); // a hand-off under way that will free 600,000 of the run's bytes
            std::thread::scope(|s| {
                s.spawn(|| {
                    std::thread::sleep(Duration::from_millis(10));
                    credit.end(-600_000);
                });
                // 800,000 + 400,000 pass 1 MB only until that free is counted
                b.check_memory(400_000).unwrap();
            });
            assert_eq!(credit.freed(), -600_000);
            // nothing under way: 800,000 + 900,000 - 600,000 passes it
            let e = b.check_memory(900_000).unwrap_err();
            assert_eq!(e.limit, Some(LimitName::Memory));
            drop(held);
        });
    }

    #[test]
    fn settling_waits_for_the_hand_offs_begun_so_far_until_the_deadline() {
        let f = Freeing::default();
        let far = Instant::now() + Duration::from_secs(60);
        assert!(!f.settle(far), "nothing was handed off");
        f.begin();
        f.end(-100);
        assert!(!f.settle(far), "all ended");
        f.begin();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(10));
                f.end(-50);
            });
            f.settle(far);
            // whether it waited or the end came first, it returns only once that one ended
            assert_eq!(*f.counts.lock().unwrap(), (2, 2));
        });
        assert_eq!(f.freed(), -150);
        f.begin();
        assert!(f.settle(Instant::now()), "one under way, not waited for");
        assert_eq!(*f.counts.lock().unwrap(), (3, 2));
    }

    #[test]
    fn what_a_run_leaves_allocated_stays_its_own() {
        let b = budget(|_| {});
        let before = crate::alloc::allocated();
        let kept = with_budget(&b, || vec![1u8; 5000]);
        let made = crate::alloc::allocated() - before;
        assert!(made >= 5000);
        assert_eq!(b.memory_used(), made);
        drop(kept); // after the run: no longer its concern
        assert_eq!(b.memory_used(), made);
    }

    #[test]
    fn a_nested_run_counts_its_own_and_restores_the_outer_one() {
        let outer = budget(|l| l.timeout_ms = 7_000);
        let inner = budget(|l| l.timeout_ms = 3_000);
        let (x_bytes, y_bytes, kept) = with_budget(&outer, || {
            assert_eq!(time_left().map(|t| t.1), Some(7_000));
            let a = crate::alloc::allocated();
            let x = vec![1u8; 5000];
            let x_bytes = crate::alloc::allocated() - a;
            let a = crate::alloc::allocated();
            let y = with_budget(&inner, || {
                assert_eq!(time_left().map(|t| t.1), Some(3_000));
                vec![2u8; 3000]
            });
            let y_bytes = crate::alloc::allocated() - a;
            assert_eq!(time_left().map(|t| t.1), Some(7_000));
            (x_bytes, y_bytes, (x, y))
        });
        assert!(!in_budget() && time_left().is_none());
        // the inner run's result is its own, and the outer's too, which holds it
        assert_eq!(inner.memory_used(), y_bytes);
        assert_eq!(outer.memory_used(), x_bytes + y_bytes);
        drop(kept);
    }

    #[test]
    fn branches_on_other_threads_share_the_run_and_leave_their_results_to_it() {
        let b = budget(|_| {});
        let b = &b;
        let kept: Vec<(Vec<u8>, i64)> = std::thread::scope(|s| {
            let branches: Vec<_> = (1..=3)
                .map(|i| {
                    s.spawn(move || {
                        with_budget(b, || {
                            let before = crate::alloc::allocated();
                            let v = vec![i as u8; 1000 * i];
                            charge(WALK_CHUNK as usize); // a full chunk: published at once
                            (v, crate::alloc::allocated() - before)
                        })
                    })
                })
                .collect();
            branches.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(b.fuel_used(), 3 * WALK_CHUNK);
        assert_eq!(b.memory_used(), kept.iter().map(|k| k.1).sum::<i64>());
    }

    #[test]
    fn host_code_called_from_a_run_is_neither_charged_nor_stopped_by_it() {
        let b = budget(|l| l.max_collection_size = 10);
        b.stop(cancelled_error());
        let e = run_err(&b, || {
            assert!(in_budget());
            let inside = without_budget(|| {
                check_now();
                check_size(1000);
                reserve(1 << 40);
                charge_bytes(1 << 40);
                charge(1 << 20);
                in_budget()
            });
            assert!(!inside && in_budget());
            assert_eq!(LOCAL.with(|l| l.extra.get()), 0);
            check_now(); // the run's own walk ends here
        });
        assert_eq!(e.kind, ErrorKind::Cancelled);
        assert!(!in_budget());
    }

    #[test]
    fn walk_charges_reach_the_budget_a_chunk_at_a_time() {
        let b = budget(|l| l.fuel = 5000);
        let e = run_err(&b, || {
            charge(WALK_CHUNK as usize - 1);
            assert_eq!(b.fuel_used(), 0);
            charge(1); // the chunk is full: published, and checked (under the fuel)
            assert_eq!((b.fuel_used(), walked()), (WALK_CHUNK, 0));
            charge(WALK_CHUNK as usize); // 8192 steps: over
        });
        assert_eq!(e.limit, Some(LimitName::Fuel));
        assert_eq!(b.fuel_used(), 2 * WALK_CHUNK);
        // outside a run: counted, never charged or stopped
        charge(10 * WALK_CHUNK as usize);
        assert_eq!(walked(), 0);
    }

    #[test]
    fn a_speculative_pass_holds_its_walks_and_charges_them_only_if_it_succeeds() {
        let b = budget(|l| l.fuel = 1 << 20);
        let chunk = WALK_CHUNK as usize;
        with_budget(&b, || {
            charge(100);
            let pass = hold_walks();
            charge(chunk);
            assert_eq!((held_walks(), b.fuel_used()), (WALK_CHUNK + 100, 0));
            pass.release(false); // failed: forgotten, the walks before it kept
            assert_eq!((held_walks(), walked(), b.fuel_used()), (0, 100, 0));

            let pass = hold_walks();
            charge(chunk);
            pass.release(true);
            assert_eq!((held_walks(), b.fuel_used()), (0, WALK_CHUNK + 100));

            // only the outermost pass charges; an inner failure drops its own share only
            let outer = hold_walks();
            charge(chunk);
            let inner = hold_walks();
            charge(chunk);
            assert_eq!(held_walks(), 2 * WALK_CHUNK);
            inner.release(false);
            assert_eq!(held_walks(), WALK_CHUNK);
            let inner = hold_walks();
            charge(chunk);
            inner.release(true);
            assert_eq!(
                (held_walks(), b.fuel_used()),
                (2 * WALK_CHUNK, WALK_CHUNK + 100)
            );
            outer.release(true);
            assert_eq!((held_walks(), b.fuel_used()), (0, 3 * WALK_CHUNK + 100));

            // dropped unreleased (the run unwound): a failed pass
            {
                let _pass = hold_walks();
                charge(chunk);
            }
            assert_eq!((held_walks(), b.fuel_used()), (0, 3 * WALK_CHUNK + 100));
            assert_eq!(LOCAL.with(|l| l.holding.get()), 0);
        });
    }

    #[test]
    fn a_pass_that_succeeds_past_the_fuel_ends_the_run() {
        let b = budget(|l| l.fuel = WALK_CHUNK);
        let e = run_err(&b, || {
            let pass = hold_walks();
            charge(WALK_CHUNK as usize);
            assert_eq!(b.fuel_used(), 0);
            pass.release(true);
        });
        assert_eq!(e.limit, Some(LimitName::Fuel));
        // the hold ended though the release unwound
        assert_eq!(LOCAL.with(|l| (l.holding.get(), l.held.get())), (0, 0));
    }

    #[test]
    fn a_charged_walk_ends_exactly_where_its_chunk_passes_the_fuel() {
        let b = budget(|l| l.fuel = 5000);
        let mut seen = 0;
        let e = run_err(&b, || {
            for _ in charged(0..10_000) {
                seen += 1;
            }
        });
        assert_eq!(e.limit, Some(LimitName::Fuel));
        // 1 for the start, then 256 per group: the 16th group's charge fills the first chunk
        // (4097 steps, under 5000); the 32nd fills the second, before its last item is handed out
        assert_eq!(seen, 32 * CHARGE_GROUP as usize - 1);
        assert_eq!(b.fuel_used(), 2 * WALK_CHUNK + 1);
    }

    #[test]
    fn an_unfinished_charged_walk_counts_its_last_items_when_dropped() {
        let b = budget(|_| {});
        with_budget(&b, || {
            let mut walk = charged(0..1000);
            for _ in 0..100 {
                walk.next();
            }
            drop(walk);
            assert_eq!(walked(), 101);
            assert_eq!(b.fuel_used(), 0);
        });
    }

    #[test]
    fn sizes_and_bytes_past_their_limits_end_the_run_with_their_errors() {
        let b = budget(|l| l.max_collection_size = 10);
        let e = run_err(&b, || {
            check_size(10);
            check_size(11);
        });
        assert_eq!(
            (e.kind, e.limit),
            (ErrorKind::MemoryExceeded, Some(LimitName::CollectionSize))
        );
        assert_eq!(
            e.message,
            "collection of 11 elements exceeds the limit of 10 (max_collection_size)"
        );

        let b = budget(|l| l.max_memory = 1 << 20);
        let e = run_err(&b, || reserve(2 << 20));
        assert_eq!(
            e.message,
            "memory limit of 1 MB exceeded (max_memory): the program needed 2 MB"
        );

        let b = budget(|l| l.max_memory = 1 << 20);
        let e = run_err(&b, || {
            charge_bytes(600_000);
            assert!(b.memory_used() >= 600_000);
            charge_bytes(600_000);
        });
        assert_eq!(e.limit, Some(LimitName::Memory));
    }

    #[test]
    fn the_run_boundary_turns_each_unwind_into_its_error() {
        let b = budget(|_| {});
        assert_eq!(catch(&b, || 7).unwrap(), 7);
        let internal = |payload: Box<dyn std::any::Any + Send>| {
            let e = catch(&b, || -> () { resume_unwind(payload) }).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Internal);
            e.message.clone()
        };
        assert_eq!(internal(Box::new("boom")), "internal error: boom");
        assert_eq!(
            internal(Box::new(String::from("bang"))),
            "internal error: bang"
        );
        assert_eq!(internal(Box::new(42u8)), "internal error: unknown panic");
        assert_eq!(
            internal(Box::new(Abort)),
            "internal error: a walk ended without a reason"
        );
        // once the budget has a reason, an abort is that reason
        let fuel = b.stop(fuel_error(9));
        let e = catch(&b, || -> () { resume_unwind(Box::new(Abort)) }).unwrap_err();
        assert_eq!(e, fuel);
    }

    #[test]
    fn a_run_never_holds_more_than_its_threads() {
        let b = budget(|_| {});
        let max = b.max_threads;
        assert_eq!(max, 2 * cpus() - 1);
        assert_eq!(b.take_threads(usize::MAX), max);
        assert_eq!(b.take_threads(1), 0);
        b.return_threads(1);
        assert_eq!(b.take_threads(5), 1);
        b.return_threads(max);
        let got: usize = std::thread::scope(|s| {
            let hs: Vec<_> = (0..8).map(|_| s.spawn(|| b.take_threads(1))).collect();
            hs.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(got, max.min(8));
    }

    fn depth(n: usize) -> usize {
        if n == 0 {
            0
        } else {
            deeper(|| depth(n - 1)) + 1
        }
    }

    /// Runs `f` on a thread whose stack is already inside the red zone.
    fn on_a_small_stack<R: Send>(f: impl FnOnce() -> R + Send) -> R {
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn_scoped(s, f)
                .unwrap()
                .join()
                .unwrap()
        })
    }

    #[test]
    fn deep_recursion_through_deeper_never_overflows() {
        let n = if cfg!(miri) { 100 } else { 100_000 };
        let b = budget(|_| {});
        assert_eq!(on_a_small_stack(|| with_budget(&b, || depth(n))), n);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri has no native stack limit: the stack never runs low"
    )]
    fn a_new_stack_segment_is_memory_of_the_run_while_it_is_in_use() {
        let b = budget(|_| {});
        on_a_small_stack(|| {
            with_budget(&b, || {
                let start = b.memory_used();
                let inside = deeper(|| b.memory_used());
                assert_eq!(inside - start, SEGMENT as i64);
                assert_eq!(b.memory_used(), start);
            })
        });
        let b = budget(|l| l.max_memory = 1 << 20);
        let e = on_a_small_stack(|| run_err(&b, || deeper(|| 1)));
        assert_eq!(
            e.message,
            "memory limit of 1 MB exceeded (max_memory): the program needed 2 MB"
        );
    }

    #[test]
    fn with_stack_to_spare_a_value_is_dropped_where_it_is() {
        let mut v = Some(Box::new(5));
        drop_on_fresh_stack(&mut v, None);
        assert_eq!(v, Some(Box::new(5)));
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri has no native stack limit: the stack never runs low"
    )]
    fn low_on_stack_a_value_is_moved_out_and_dropped_on_a_new_segment() {
        let w = Arc::new(());
        let held = w.clone();
        let left = on_a_small_stack(move || {
            let mut v = Some(held);
            drop_on_fresh_stack(&mut v, None);
            v.is_none()
        });
        assert!(left);
        assert_eq!(Arc::strong_count(&w), 1);
    }
}
