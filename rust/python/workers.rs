//! Worker threads for runs that call tools.
//!
//! A tool is Python code the run cannot interrupt: it may block far past the run's deadline.
//! So a run of a Session that has tools is evaluated on a worker thread (its tools are called
//! there, inline, at full speed), while the thread that called `Session.run` waits and stays in
//! charge: at the deadline, on `cancel()` or on Ctrl-C it stops waiting and returns; the worker
//! finishes in the background (the blocked tool's result is discarded, nothing is committed).
//! The pool grows while workers are busy and keeps its threads: each holds a Python thread
//! state for its whole life (made once, not per tool call), and a thread that re-entered Python
//! to release it while the interpreter shuts down would be torn down by it mid-Rust. So the
//! pool is as large as the most runs that ever called tools at the same time.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Pool {
    queue: Mutex<Queue>,
    work: Condvar,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// Workers waiting for a job.
    idle: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        queue: Mutex::new(Queue {
            jobs: VecDeque::new(),
            idle: 0,
        }),
        work: Condvar::new(),
    })
}

/// Runs `job` on a worker thread. Fails only when no thread can be started.
pub fn spawn(job: Job) -> std::io::Result<()> {
    let p = pool();
    let mut q = lock(&p.queue);
    // every queued job needs a free worker of its own: a run blocked in a tool must not hold
    // up the runs behind it
    if q.jobs.len() < q.idle {
        q.jobs.push_back(job);
        drop(q);
        p.work.notify_one();
        return Ok(());
    }
    drop(q);
    std::thread::Builder::new()
        .name("ptc-run".into())
        .spawn(move || {
            // one Python thread state for the thread's life; released only while it waits
            pyo3::Python::attach(|py| {
                py.detach(|| {
                    job();
                    worker();
                })
            })
        })
        .map(|_| ())
}

fn worker() -> ! {
    let p = pool();
    loop {
        let job = {
            let mut q = lock(&p.queue);
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    break job;
                }
                q.idle += 1;
                q = p.work.wait(q).unwrap_or_else(|e| e.into_inner());
                q.idle -= 1;
            }
        };
        job();
    }
}

/// A value one thread hands to another, with a timed wait.
pub struct Handoff<T> {
    value: Mutex<Option<T>>,
    ready: Condvar,
}

impl<T> Default for Handoff<T> {
    fn default() -> Self {
        Handoff {
            value: Mutex::new(None),
            ready: Condvar::new(),
        }
    }
}

impl<T> Handoff<T> {
    pub fn put(&self, v: T) {
        *lock(&self.value) = Some(v);
        self.ready.notify_all();
    }

    /// The value, if it arrives within `timeout`.
    pub fn take_within(&self, timeout: Duration) -> Option<T> {
        let mut v = lock(&self.value);
        if v.is_none() {
            v = self
                .ready
                .wait_timeout(v, timeout)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        v.take()
    }
}
