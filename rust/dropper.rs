//! Large values are freed on a background thread: releasing a collection of a million elements
//! (a few tens of milliseconds of reference-count traffic, mostly cache misses) must not add to
//! the latency of whoever lets go of it — the next agent turn, Python's garbage collector, or the
//! rest of the run that dropped an intermediate (`(count (filter ...))`).
//!
//! Collections a run drops are handed off by their own `Drop`; outside a run only results are
//! (`release`): a host that lets go of a Session expects its memory back at once.
//! Inside a run, the bytes the background thread frees are credited to that run's memory
//! ([`crate::guard::Freeing`]); the memory check settles outstanding frees before it fails a run,
//! so `max_memory`'s verdict does not depend on how far this thread has got. The queue is bounded: when the
//! thread is behind, values are freed where they are dropped, so at most [`BACKLOG`] large values
//! wait to be freed at any time.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::sync::{Arc, OnceLock};

use crate::guard::Freeing;
use crate::value::{Value, ValueMap, ValueSet};

/// Collections with at least this many elements are freed in the background.
const LARGE: usize = 4096;

/// Large values waiting for the background thread, at most.
const BACKLOG: usize = 8;

/// What the background thread frees: a whole value, or the contents of a collection whose
/// own drop handed them off.
pub(crate) enum Job {
    #[allow(dead_code)] // held only to be dropped there
    Value(Value),
    Elements(Vec<Value>),
    Members(ValueSet),
    Entries(ValueMap),
}

struct Handoff {
    job: Job,
    /// The run the memory was counted to, if the value was dropped inside one.
    credit: Option<Arc<Freeing>>,
}

impl Handoff {
    /// Frees the job, crediting the bytes freed.
    fn free(mut self) {
        let before = crate::alloc::allocated();
        match std::mem::replace(&mut self.job, Job::Elements(Vec::new())) {
            // with the worklist's prefetching: the elements lie all over the heap
            Job::Elements(v) => crate::value::drop_iteratively(v),
            other => drop(other),
        }
        FREED.fetch_add(1, Ordering::Relaxed);
        if let Some(c) = self.credit.take() {
            c.end(crate::alloc::allocated() - before);
        }
    }
}

impl Drop for Handoff {
    /// A hand-off dropped unfreed (a panic while freeing it, or the queue's end) still ends,
    /// so the run's memory check never waits for it.
    fn drop(&mut self) {
        if let Some(c) = self.credit.take() {
            c.end(0);
        }
    }
}

/// The queue to the background thread, and the process that started it: a child made by
/// `fork` inherits the queue but not the thread, and frees its values itself.
static QUEUE: OnceLock<Option<(SyncSender<Handoff>, u32)>> = OnceLock::new();
static FREED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the background thread: what it drops is freed there, never handed off again.
    static IN_DROPPER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How many values the background thread has freed so far (for tests and diagnostics).
pub fn freed_in_background() -> u64 {
    FREED.load(Ordering::Relaxed)
}

fn queue() -> Option<&'static SyncSender<Handoff>> {
    let (tx, pid) = QUEUE
        .get_or_init(|| {
            let (tx, rx) = sync_channel::<Handoff>(BACKLOG);
            std::thread::Builder::new()
                .name("ptc-drop".into())
                .spawn(move || {
                    IN_DROPPER.with(|d| d.set(true));
                    for h in rx {
                        // a panic while freeing (a stack segment refused) loses one value's
                        // memory, not the thread
                        let _ = catch_unwind(AssertUnwindSafe(|| h.free()));
                    }
                })
                .ok()
                .map(|_| (tx, std::process::id()))
        })
        .as_ref()?;
    (*pid == std::process::id()).then_some(tx)
}

/// Hands `job` to the background thread, crediting what it frees to `credit`'s run; gives it
/// back when it must be freed here (this is the background thread, the queue is full, or the
/// thread could not be started).
fn hand_off(job: Job, credit: Option<Arc<Freeing>>) -> Result<(), Job> {
    if IN_DROPPER.try_with(|d| d.get()).unwrap_or(true) {
        return Err(job);
    }
    let Some(tx) = queue() else {
        return Err(job);
    };
    if let Some(c) = &credit {
        c.begin();
    }
    match tx.try_send(Handoff { job, credit }) {
        Ok(()) => Ok(()),
        Err(TrySendError::Full(mut back) | TrySendError::Disconnected(mut back)) => {
            // the credit ends as `back` drops
            Err(std::mem::replace(&mut back.job, Job::Elements(Vec::new())))
        }
    }
}

/// Whether freeing `v` now would walk many values: a large collection only this owner holds.
fn large_and_unique(v: &Value) -> bool {
    match v {
        Value::Vector(a) => a.len() >= LARGE && a.is_unique(),
        Value::Map(a) => a.len() >= LARGE && a.is_unique(),
        Value::Set(a) => a.len() >= LARGE && a.is_unique(),
        _ => false,
    }
}

/// Lets go of `v`: at once when that is cheap, else on the background thread (if it cannot
/// take it, at once).
pub fn release(v: Value) {
    if large_and_unique(&v) {
        let _ = hand_off(Job::Value(v), crate::guard::freeing());
    }
}

/// The storage of a collection whose drop may hand its contents to the background thread.
pub(crate) trait Contents: Default {
    fn count(&self) -> usize;
    fn into_job(self) -> Job;
    /// The contents back from a hand-off that failed (always the variant `into_job` made).
    fn from_job(job: Job) -> Self;
}

macro_rules! contents {
    ($t:ty, $variant:ident) => {
        impl Contents for $t {
            fn count(&self) -> usize {
                self.len()
            }
            fn into_job(self) -> Job {
                Job::$variant(self)
            }
            fn from_job(job: Job) -> Self {
                match job {
                    Job::$variant(v) => v,
                    _ => Self::default(),
                }
            }
        }
    };
}
contents!(Vec<Value>, Elements);
contents!(ValueSet, Members);
contents!(ValueMap, Entries);

/// For the drop of a collection's storage inside a run: hands large contents to the background
/// thread, leaving `items` empty. False (and `items` unchanged) when they must be freed here;
/// always outside a run, where whoever drops a value (`del session`) expects its memory back
/// when the drop returns.
pub(crate) fn release_contents<T: Contents>(items: &mut T) -> bool {
    if items.count() < LARGE {
        return false;
    }
    let Some(credit) = crate::guard::freeing() else {
        return false;
    };
    match hand_off(std::mem::take(items).into_job(), Some(credit)) {
        Ok(()) => true,
        Err(j) => {
            *items = T::from_job(j);
            false
        }
    }
}
