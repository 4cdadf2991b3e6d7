//! A large list of host input converted by two threads at once: the thread holding the GIL
//! takes blocks of items from the front, a helper thread takes blocks from the back, and each
//! converts its items all the way (reads the objects and builds the values). The walker
//! decides: any exact list or tuple of host input at least [`SPLIT_MIN`] long, at any depth.
//!
//! While the blocks convert, neither thread writes to any Python object or runs Python code:
//! both read exact `dict`s, `list`s, `tuple`s, `str`s, `int`s and `float`s, `None` and bools,
//! and the text of a str subclass used as a dict key (raw reads, and `PyDict_Next` and
//! `PyLong_AsLongLongAndOverflow`, which for these types only read), and touch no reference
//! count. The thread holding the GIL keeps it, so no other
//! Python thread runs either: nothing changes or frees what the helper reads without holding
//! the GIL. An item holding anything else (a set, a subclass, a container referenced from
//! elsewhere too, a big int, a key that is none of these) is a hole. Once the helper is joined, the
//! thread holding the GIL fills the holes in order with the one-thread paths, so errors and
//! sharing come as on one thread, and so does Python code (a subclass's methods, Ctrl-C's
//! handler), which runs only then: what it changes in items converted already is not seen,
//! and a list it shortens ends at the first item it no longer holds.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use pyo3::ffi as py;

use super::ffi;
use super::held::Held;
use super::walk::{Side, Stop, Walker};
use super::{ConvError, Seg};
use crate::sysmem::{Shared, Watch};
use crate::value::Value;

/// Lists at least this long are split: below it, starting the thread costs more than it saves.
pub(super) const SPLIT_MIN: usize = 2_048;

/// Lists split between two threads so far, items converted in blocks (by either thread; the
/// holes not counted) and those of them the helper converted: the tests see which path large
/// input took (`_core._split_conversions`, in builds with the `test-hooks` feature).
#[cfg(feature = "test-hooks")]
pub static COUNTS: [std::sync::atomic::AtomicUsize; 3] =
    [const { std::sync::atomic::AtomicUsize::new(0) }; 3];
const SPLITS: usize = 0;
const BLOCK_ITEMS: usize = 1;
const HELPER_ITEMS: usize = 2;

/// Adds to a counter of the `test-hooks` build; nothing in the others.
#[inline(always)]
fn count(_counter: usize, _n: usize) {
    #[cfg(feature = "test-hooks")]
    COUNTS[_counter].fetch_add(_n, Ordering::Relaxed);
}

/// Items a thread takes at a time: small enough that neither waits long for the other at the
/// end, large enough that taking them is rare.
const BLOCK: usize = 512;

/// Blocks one thread converted: where each starts, its values, and its holes (items left to
/// the GIL-holding thread's one-thread paths, `nil` in the values until filled).
#[derive(Default)]
struct Blocks(Vec<(usize, Vec<Value>, Vec<usize>)>);

/// Which end of the list a thread takes its blocks from.
#[derive(Clone, Copy)]
enum End {
    Front,
    Back,
}

/// Whether a list this long is worth a second thread.
pub(super) fn worth_it(len: usize) -> bool {
    len >= SPLIT_MIN && crate::guard::cpus() >= 2
}

/// The items of a long exact list or tuple of host input, on two threads (see the module's
/// comment).
pub(super) fn split_list(
    w: &mut Walker<Held<'_>>,
    l: *mut py::PyObject,
    depth: usize,
) -> Result<Value, ConvError> {
    // SAFETY: the GIL is held and `l` is a live exact list or tuple.
    let len = unsafe { ffi::items(l) }.1;
    Held::tick(w, len)?;
    Held::reserve(w, crate::guard::values_bytes(len))?;
    let mut out: Vec<Value> = Vec::with_capacity(len);
    // the first item the one-thread way: both threads then start with its keys and shapes
    w.items(l, 1, depth, &mut out)?;
    // read after everything that may run Python code (Ctrl-C's handler, the first item's
    // methods), which may have changed the list: from here to the join nothing can
    // SAFETY: as above.
    let len = unsafe { ffi::items(l) }.1;
    let claims = Mutex::new((out.len(), len));
    let shared = Shared::new();
    let stop = AtomicBool::new(false);
    let mut mine = Free::walker(w.tables.for_helper(), Watch::sharing(shared.clone()));
    let theirs_tables = w.tables.for_helper();
    let list = Items(l);
    let ran = std::thread::scope(|scope| {
        let (claims, stop) = (&claims, &stop);
        let spawned = std::thread::Builder::new()
            .name("ptc-convert".into())
            .spawn_scoped(scope, move || {
                // its watch made here: allocations are counted per thread
                let mut theirs = Free::walker(theirs_tables, Watch::sharing(shared));
                // SAFETY: the GIL-holding thread runs no Python code until it has joined this
                // one (below), and the list and its items outlive the scope
                let blocks = unsafe { blocks(&mut theirs, list, claims, stop, End::Back, depth) };
                let used = theirs.watch.as_ref().map_or(0, Watch::used);
                (blocks, theirs.side.failed, used)
            });
        if spawned.is_ok() {
            count(SPLITS, 1);
        }
        // a panic here must still stop the helper before the scope joins it
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // SAFETY: as above; this thread holds the GIL and runs no Python code here
            let blocks = unsafe { blocks(&mut mine, list, claims, stop, End::Front, depth) };
            (blocks, mine.side.failed.take())
        }));
        stop.store(true, Ordering::Release);
        let theirs = spawned.map(|h| h.join());
        let mine = mine.unwrap_or_else(|p| std::panic::resume_unwind(p));
        (mine, theirs)
    });
    let ((mut done, mut failed), theirs) = ran;
    let converted = |b: &Blocks| b.0.iter().map(|b| b.1.len() - b.2.len()).sum::<usize>();
    count(BLOCK_ITEMS, converted(&done));
    // no second thread (it could not start): this one took every block
    if let Ok(joined) = theirs {
        // a panic on the helper is raised here, where the entry point makes it InternalError
        let (more, their_failure, used) = joined.unwrap_or_else(|p| std::panic::resume_unwind(p));
        count(BLOCK_ITEMS, converted(&more));
        count(HELPER_ITEMS, converted(&more));
        done.0.extend(more.0);
        failed = failed.or(their_failure);
        if let Some(watch) = &mut w.watch {
            watch.absorb(used);
        }
    }
    if let Some(e) = failed {
        return Err(ConvError::memory(e));
    }
    // Ctrl-C waited for the threads
    w.side.seen = 1 << 16;
    Held::tick(w, 0)?;
    // in order: the gaps (blocks a thread did not finish), the blocks and their holes. As on
    // one thread, the items are those the list holds when each is reached: Python code run
    // meanwhile (a handler, a hole's methods) that shortens it ends the vector there
    done.0.sort_by_key(|b| b.0);
    for (start, values, holes) in done.0 {
        if !w.items(l, start, depth, &mut out)? {
            return Ok(Value::vector(out));
        }
        let mut holes = holes.into_iter().peekable();
        for (i, v) in (start..).zip(values) {
            if holes.next_if_eq(&i).is_none() {
                out.push(v);
            } else if !w.items(l, i + 1, depth, &mut out)? {
                return Ok(Value::vector(out));
            }
        }
    }
    // and what is left: an unfinished tail, or items added meanwhile
    w.items(l, usize::MAX, depth, &mut out)?;
    Ok(Value::vector(out))
}

/// The list's address, handed to the helper.
#[derive(Clone, Copy)]
struct Items(*mut py::PyObject);
// SAFETY: the helper reads the list only while no Python code runs (see the module's comment).
unsafe impl Send for Items {}

/// Takes blocks from its end of the list until the threads meet (or `stop`).
///
/// # Safety
/// `list` is a live exact list or tuple that no code changes while this runs, nor its items.
unsafe fn blocks(
    w: &mut Walker<Free>,
    list: Items,
    claims: &Mutex<(usize, usize)>,
    stop: &AtomicBool,
    end: End,
    depth: usize,
) -> Blocks {
    let mut done = Blocks::default();
    // SAFETY: as the function's contract; the list does not change, so neither does this.
    let items = unsafe { ffi::items(list.0) }.0;
    while !stop.load(Ordering::Acquire) && w.side.failed.is_none() {
        if Free::tick(w, 0).is_err() {
            break;
        }
        let (from, to) = {
            let Ok(mut c) = claims.lock() else { break };
            if c.0 >= c.1 {
                break;
            }
            let range = match end {
                End::Front => (c.0, (c.0 + BLOCK).min(c.1)),
                End::Back => (c.0.max(c.1.saturating_sub(BLOCK)), c.1),
            };
            match end {
                End::Front => c.0 = range.1,
                End::Back => c.1 = range.0,
            }
            range
        };
        let mut values = Vec::with_capacity(to - from);
        let mut holes = Vec::new();
        for i in from..to {
            // SAFETY: `i` is below the list's length, which does not change.
            let v = unsafe {
                ffi::prefetch_ahead(items, i, to);
                w.value(*items.add(i), depth + 1)
            };
            if w.side.failed.is_some() {
                break; // the rest of the block is a gap, left to the one-thread paths
            }
            values.push(v.unwrap_or_else(|Hole| {
                holes.push(i);
                Value::Nil
            }));
        }
        done.0.push((from, values, holes));
    }
    done
}

/// Either thread's side while the list's blocks convert: exact JSON-like objects only, no
/// reference count touched, no Python code run; anything else is a hole.
pub(super) struct Free {
    /// Memory ran out: the thread stops (the other hears of it through the allowance).
    failed: Option<crate::error::Error>,
}

/// What stops the helper: an item left to the walker on the GIL-holding thread.
pub(super) struct Hole;

impl Stop for Hole {
    fn under(self, _: impl FnOnce() -> Seg) -> Self {
        self
    }
}

impl Free {
    /// A walker of this side with tables made by the walker (whose objects it holds).
    fn walker(tables: super::Tables, watch: Watch) -> Walker<Free> {
        Walker {
            tables,
            watch: Some(watch),
            pending: Vec::new(),
            pending_held: 0,
            side: Free { failed: None },
        }
    }
}

impl Side for Free {
    type Stop = Hole;
    /// Deeper items are left to the walker (its depth limit and error).
    const MAX_DEPTH: usize = 100;

    fn hole() -> Hole {
        Hole
    }
    fn memory(w: &mut Walker<Free>, e: crate::error::Error) -> Hole {
        w.side.failed = Some(e);
        Hole
    }
    fn container(
        w: &mut Walker<Free>,
        o: *mut py::PyObject,
        convert: impl FnOnce(&mut Walker<Free>) -> Result<Value, Hole>,
    ) -> Result<Value, Hole> {
        // containers referenced from elsewhere too are converted once, by the walker
        // SAFETY: `o` is alive and no thread changes its count meanwhile.
        if unsafe { ffi::shared(o) } {
            return Err(Hole);
        }
        convert(w)
    }
    fn tick(w: &mut Walker<Free>, _: usize) -> Result<(), Hole> {
        let checked = w.watch.as_mut().map_or(Ok(()), Watch::check);
        checked.map_err(|e| Self::memory(w, e))
    }
    fn reserve(w: &mut Walker<Free>, bytes: usize) -> Result<(), Hole> {
        let reserved = w
            .watch
            .as_mut()
            .map_or(Ok(()), |watch| watch.reserve(bytes));
        reserved.map_err(|e| Self::memory(w, e))
    }
}
