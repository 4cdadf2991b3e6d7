//! Large values are freed on a background thread: releasing a result of a million elements
//! (a few tens of milliseconds of reference-count traffic) must not add to the latency of
//! whoever lets go of it — the next agent turn, or Python's garbage collector.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use crate::value::Value;

/// Collections with at least this many elements are freed in the background.
const LARGE: usize = 4096;

static QUEUE: OnceLock<Option<Mutex<Sender<Value>>>> = OnceLock::new();
static FREED: AtomicU64 = AtomicU64::new(0);

/// How many values the background thread has freed so far (for tests and diagnostics).
pub fn freed_in_background() -> u64 {
    FREED.load(Ordering::Relaxed)
}

fn queue() -> Option<&'static Mutex<Sender<Value>>> {
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = channel::<Value>();
            std::thread::Builder::new()
                .name("ptc-drop".into())
                .spawn(move || {
                    for v in rx {
                        drop(v);
                        FREED.fetch_add(1, Ordering::Relaxed);
                    }
                })
                .ok()
                .map(|_| Mutex::new(tx))
        })
        .as_ref()
}

/// Whether freeing `v` now would walk many values: a large collection only this owner holds.
fn large_and_unique(v: &Value) -> bool {
    match v {
        Value::Vector(a) => a.len() >= LARGE && Arc::strong_count(a) == 1,
        Value::Map(a) => a.len() >= LARGE && a.is_unique(),
        Value::Set(a) => a.len() >= LARGE && Arc::strong_count(a) == 1,
        _ => false,
    }
}

/// Lets go of `v`: at once when that is cheap, else on the background thread (if it cannot
/// be started, at once).
pub fn release(v: Value) {
    if !large_and_unique(&v) {
        return;
    }
    if let Some(q) = queue() {
        let tx = q.lock().unwrap_or_else(|p| p.into_inner());
        if let Err(back) = tx.send(v) {
            drop(tx);
            drop(back.0);
        }
    }
}
