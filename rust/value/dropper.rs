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

use super::{Value, ValueMap, ValueSet};
use crate::guard::Freeing;

/// Collections with at least this many elements are freed in the background. Under Miri,
/// which runs the tests below a hundred times slower, fewer: the same paths in seconds.
const LARGE: usize = if cfg!(miri) { 64 } else { 4096 };

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
            Job::Elements(v) => super::drop_iteratively(v),
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

#[cfg(test)]
mod tests {
    //! What handing values off relies on: every value freed exactly once, here or on the
    //! background thread, deep ones without recursion; a hand-off's credit ended whether it was
    //! freed, refused or dropped; the queue bounded. A value's drop is seen through a witness: a
    //! vector every element holds a reference to, whose count falls back to one. Run under Miri
    //! by `scripts/miri.sh`.

    use super::*;
    use crate::guard::{with_budget, Budget, NeverInterrupted};
    use crate::value::{Shared, VecData};
    use std::sync::{Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    /// The tests that use the background thread take turns: one of them fills its queue (no
    /// other test in this binary hands anything off).
    fn one_at_a_time() -> MutexGuard<'static, ()> {
        static TURN: Mutex<()> = Mutex::new(());
        TURN.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn witness() -> Shared<VecData> {
        Shared::new(VecData(Vec::new()))
    }

    /// `n` values that each hold a reference to `w`.
    fn holding(w: &Shared<VecData>, n: usize) -> Vec<Value> {
        (0..n).map(|_| Value::Vector(w.clone())).collect()
    }

    fn refs(w: &Shared<VecData>) -> usize {
        Shared::strong_count(w)
    }

    /// Waits (a minute at most: a hang fails the test) until `done`.
    fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(Instant::now() < deadline, "waited a minute for {what}");
            std::thread::yield_now();
        }
    }

    fn budget() -> Budget {
        Budget::new(Default::default(), Arc::new(NeverInterrupted), None)
    }

    #[test]
    fn only_a_large_collection_held_once_is_worth_the_background_thread() {
        let w = witness();
        let big = Value::vector(holding(&w, LARGE));
        assert!(large_and_unique(&big));
        let other = big.clone();
        assert!(!large_and_unique(&big) && !large_and_unique(&other));
        drop(other);
        assert!(large_and_unique(&big));
        assert!(!large_and_unique(&Value::vector(holding(&w, LARGE - 1))));
        let n = LARGE as i64;
        assert!(large_and_unique(&Value::set(
            (0..n).map(Value::Int).collect()
        )));
        let entries = (0..n).map(|i| (Value::Int(i), Value::Nil));
        assert!(large_and_unique(&Value::map(entries.collect())));
        assert!(!large_and_unique(&Value::Int(1)));
        assert!(!large_and_unique(&Value::str(&"x".repeat(LARGE))));
    }

    #[test]
    fn a_small_value_released_is_freed_before_release_returns() {
        let w = witness();
        release(Value::vector(holding(&w, 10)));
        assert_eq!(refs(&w), 1);
    }

    #[test]
    fn releasing_one_reference_to_a_shared_large_value_frees_nothing() {
        let w = witness();
        let big = Value::vector(holding(&w, LARGE));
        release(big.clone());
        assert_eq!(refs(&w), LARGE + 1);
        drop(big);
        assert_eq!(refs(&w), 1);
    }

    #[test]
    fn a_large_value_released_is_freed_on_the_background_thread() {
        let _turn = one_at_a_time();
        let before = freed_in_background();
        let w = witness();
        release(Value::vector(holding(&w, LARGE)));
        wait_until("the value's elements to be dropped", || refs(&w) == 1);
        wait_until("the free to be counted", || freed_in_background() > before);
    }

    #[test]
    fn contents_dropped_in_a_run_are_freed_in_the_background_and_credited_to_it() {
        let _turn = one_at_a_time();
        let b = budget();
        let w = witness();
        with_budget(&b, || {
            let start = crate::alloc::allocated();
            let items = holding(&w, LARGE);
            let buffer = crate::alloc::allocated() - start;
            let v = Value::vector(items);
            drop(v); // its storage's drop hands the elements off
            let credit = crate::guard::freeing().expect("a run's account of frees");
            wait_until("the hand-off to end", || credit.tally().1 == 1);
            // one hand-off, credited with exactly the buffer the background thread freed
            assert_eq!(credit.tally(), (1, 1, -buffer));
            assert_eq!(refs(&w), 1);
        });
    }

    /// What `build` returns, and the bytes it left allocated on this thread.
    fn with_bytes<T>(build: impl FnOnce() -> T) -> (T, i64) {
        let before = crate::alloc::allocated();
        let made = build();
        (made, crate::alloc::allocated() - before)
    }

    #[test]
    fn freeing_a_hand_off_credits_each_kind_of_job_with_exactly_what_it_held() {
        let w = witness();
        // the hashers made outside the count: the first one allocates ahash's seeds for good
        let (mut set, mut map) = (ValueSet::default(), ValueMap::default());
        let (elements, e) = with_bytes(|| holding(&w, 100));
        let ((), s) = with_bytes(|| set.extend((0..100).map(Value::Int)));
        let ((), m) = with_bytes(|| {
            map.extend(
                holding(&w, 100)
                    .into_iter()
                    .zip(0..)
                    .map(|(v, i)| (Value::Int(i), v)),
            )
        });
        let jobs = [
            (Job::Elements(elements), e),
            (Job::Members(set), s),
            (Job::Entries(map), m),
        ];
        for (job, bytes) in jobs {
            assert!(bytes > 0);
            let credit = Arc::new(Freeing::default());
            credit.begin();
            let handoff = Handoff {
                job,
                credit: Some(credit.clone()),
            };
            handoff.free(); // here, as the background thread would: ended once, not again on drop
            assert_eq!(credit.tally(), (1, 1, -bytes));
        }
        assert_eq!(refs(&w), 1);
    }

    #[test]
    fn a_hand_off_dropped_unfreed_still_ends_its_credit() {
        let w = witness();
        let credit = Arc::new(Freeing::default());
        credit.begin();
        drop(Handoff {
            job: Job::Elements(holding(&w, 3)),
            credit: Some(credit.clone()),
        });
        assert_eq!(credit.tally(), (1, 1, 0));
        assert_eq!(refs(&w), 1);
    }

    #[test]
    fn the_background_thread_never_hands_off_again() {
        std::thread::spawn(|| {
            IN_DROPPER.with(|d| d.set(true));
            let w = witness();
            let credit = Arc::new(Freeing::default());
            match hand_off(Job::Elements(holding(&w, 5)), Some(credit.clone())) {
                Err(Job::Elements(v)) => assert_eq!(v.len(), 5),
                _ => panic!("handed off from the background thread"),
            }
            // refused before it began: nothing for the memory check to wait for
            assert_eq!(credit.tally(), (0, 0, 0));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn when_the_thread_is_behind_values_are_freed_where_they_are_dropped() {
        let _turn = one_at_a_time();
        let tx = queue().expect("the background thread");
        // keep the thread inside the first job's `end`, so the queue fills up behind it
        let blocker = Arc::new(Freeing::default());
        let hold = blocker.hold_ends();
        let first = Handoff {
            job: Job::Elements(Vec::new()),
            credit: Some(blocker.clone()),
        };
        assert!(tx.try_send(first).is_ok());
        let w = witness();
        let credit = Arc::new(Freeing::default());
        let mut queued = 0;
        let mut kept = Vec::new();
        for _ in 0..BACKLOG + 2 {
            match hand_off(Job::Elements(holding(&w, 1)), Some(credit.clone())) {
                Ok(()) => queued += 1,
                Err(job) => kept.push(job),
            }
        }
        // the queue holds `BACKLOG`; the thread takes at most the first job off it
        assert!(
            queued == BACKLOG - 1 || queued == BACKLOG,
            "{queued} values queued"
        );
        // a refused hand-off comes back whole, its credit ended at once
        let back = BACKLOG + 2 - queued;
        assert_eq!(kept.len(), back);
        assert!(kept
            .iter()
            .all(|j| matches!(j, Job::Elements(v) if v.len() == 1)));
        let (begun, ended, _) = credit.tally();
        assert_eq!((begun, ended), ((BACKLOG + 2) as u64, back as u64));
        drop(kept);
        drop(hold);
        wait_until("the queued values to be freed", || {
            credit.tally().1 == (BACKLOG + 2) as u64
        });
        assert_eq!(refs(&w), 1);
    }

    #[test]
    fn release_contents_keeps_what_must_be_freed_here() {
        let w = witness();
        // outside a run: whoever drops a value expects its memory back at once
        let mut items = holding(&w, LARGE);
        assert!(!release_contents(&mut items));
        assert_eq!(items.len(), LARGE);
        // inside one, but small
        let b = budget();
        with_budget(&b, || {
            let mut few = holding(&w, LARGE - 1);
            assert!(!release_contents(&mut few));
            assert_eq!(few.len(), LARGE - 1);
        });
        drop(items);
        assert_eq!(refs(&w), 1);
    }

    #[test]
    fn contents_go_into_a_job_and_come_back_unchanged() {
        let items: Vec<Value> = (0..3).map(Value::Int).collect();
        let back = Vec::<Value>::from_job(items.clone().into_job());
        assert_eq!(back, items);
        let set: ValueSet = (0..3).map(Value::Int).collect();
        assert_eq!(set.count(), 3);
        assert_eq!(ValueSet::from_job(set.clone().into_job()), set);
        let map: ValueMap = (0..3).map(|i| (Value::Int(i), Value::Nil)).collect();
        assert_eq!(ValueMap::from_job(map.clone().into_job()), map);
        // another kind of job gives empty storage, never another's contents
        assert!(ValueSet::from_job(items.into_job()).is_empty());
        assert!(Vec::<Value>::from_job(map.into_job()).is_empty());
    }

    /// A chain of one-element vectors `depth` deep around a reference to `w`.
    fn chain(w: &Shared<VecData>, depth: usize) -> Value {
        (0..depth).fold(Value::Vector(w.clone()), |v, _| Value::vector(vec![v]))
    }

    #[test]
    fn a_deep_chain_is_dropped_on_a_small_stack() {
        let depth = if cfg!(miri) { 200 } else { 200_000 };
        let w = witness();
        let deep = chain(&w, depth);
        // recursion would need tens of megabytes of stack here
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || drop(deep))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(refs(&w), 1);
    }

    #[test]
    fn a_deep_chain_inside_a_released_value_is_freed_in_the_background() {
        let _turn = one_at_a_time();
        let depth = if cfg!(miri) { 200 } else { 200_000 };
        let w = witness();
        let mut items = holding(&w, LARGE - 1);
        items.push(chain(&w, depth));
        release(Value::vector(items));
        wait_until("the chain to be dropped", || refs(&w) == 1);
    }
}
