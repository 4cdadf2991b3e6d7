//! Worker threads for runs that call tools.
//!
//! A tool is Python code the run cannot interrupt: it may block far past the run's deadline.
//! So a run of a Session that has tools is evaluated on a worker thread (its tools are called
//! there, inline, at full speed), while the thread that called `Session.run` waits and stays in
//! charge: at the deadline, on `cancel()` or on Ctrl-C it stops waiting and returns; the worker
//! finishes in the background (the blocked tool's result is discarded, nothing is committed).
//!
//! The pool is bounded. Each worker holds a Python thread state for its life (made once, not
//! per tool call) and costs address space: its stack, and the per-thread heaps of mimalloc
//! (a 32 MiB segment) and of glibc's malloc (a 64 MiB arena, for the first 8 × CPUs threads).
//! Under an address-space limit a pool that grows with every abandoned call ends in an
//! allocation failure, which aborts the process. So:
//! - at most [`MAX_WORKERS`] workers, and a new one only while the address space left under
//!   `RLIMIT_AS` has room for it (`crate::threads`, which bounds branch threads the same way);
//!   otherwise a run waits in a queue for a worker, until its deadline ([`Ticket::withdraw`]
//!   takes it back out);
//! - a worker idle for [`IDLE_EXIT`] exits, so the pool shrinks after a burst;
//! - workers have [`STACK_SIZE`] stacks (the evaluator continues deep recursion on heap
//!   segments, `guard::deeper`; the rest is room for the tools' own Python code).
//!
//! A worker never keeps the interpreter from exiting: see `host::call_tool_hanging_at_exit`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// The most worker threads at once.
pub const MAX_WORKERS: usize = 64;
/// A worker waiting this long for a job exits.
pub const IDLE_EXIT: Duration = Duration::from_secs(5);
/// A worker's stack.
pub const STACK_SIZE: usize = 2 << 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

struct Pool {
    queue: Mutex<Queue>,
    work: Condvar,
}

struct Queue {
    jobs: VecDeque<(u64, Job)>,
    next_id: u64,
    /// Worker threads alive.
    workers: usize,
    /// Workers waiting for a job.
    idle: usize,
}

fn pool() -> &'static Pool {
    static POOL: OnceLock<Pool> = OnceLock::new();
    POOL.get_or_init(|| Pool {
        queue: Mutex::new(Queue {
            jobs: VecDeque::new(),
            next_id: 0,
            workers: 0,
            idle: 0,
        }),
        work: Condvar::new(),
    })
}

/// Set at interpreter exit: idle workers then stay parked instead of exiting (an exit would
/// re-enter Python to drop their thread state while it shuts down).
pub static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// A submitted job, until a worker takes it.
pub struct Ticket(u64);

impl Ticket {
    /// Takes the job back out of the queue. `false`: a worker has taken it already.
    pub fn withdraw(&self) -> bool {
        let mut q = lock(&pool().queue);
        match q.jobs.iter().position(|(id, _)| *id == self.0) {
            Some(i) => {
                let job = q.jobs.remove(i);
                drop(q);
                drop(job); // outside the lock: dropping the run's state may take a while
                true
            }
            None => false,
        }
    }
}

/// What the pool holds now, for a message about a run that found no worker.
pub struct Load {
    pub workers: usize,
    pub queued: usize,
}

pub fn load() -> Load {
    let q = lock(&pool().queue);
    Load {
        workers: q.workers,
        queued: q.jobs.len(),
    }
}

/// Queues `job` for a worker, starting one when none is free and the bounds allow.
pub fn submit(job: Job) -> Ticket {
    let p = pool();
    let mut q = lock(&p.queue);
    let id = q.next_id;
    q.next_id += 1;
    q.jobs.push_back((id, job));
    // every queued job needs a free worker of its own: a run blocked in a tool must not hold
    // up the runs behind it
    let room = if q.jobs.len() <= q.idle || q.workers >= MAX_WORKERS {
        None
    } else if q.workers == 0 {
        Some(crate::threads::Starting::forced())
    } else {
        crate::threads::Starting::claim()
    };
    let claimed = room.is_some();
    if claimed {
        q.workers += 1;
    }
    drop(q);
    let started = room.is_some_and(|r| start_worker(r).is_ok());
    if claimed && !started {
        lock(&p.queue).workers -= 1;
    }
    if !started {
        p.work.notify_one();
    }
    Ticket(id)
}

fn start_worker(room: crate::threads::Starting) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ptc-run".into())
        .stack_size(STACK_SIZE)
        .spawn(move || {
            // one Python thread state for the thread's life; released only while it waits
            pyo3::Python::attach(|py| {
                // the thread state and a first allocation exist: no longer counted as to come
                room.started();
                py.detach(worker)
            })
        })
        .map(|_| ())
}

fn worker() {
    let p = pool();
    loop {
        let job = {
            let mut q = lock(&p.queue);
            loop {
                if let Some((_, job)) = q.jobs.pop_front() {
                    break job;
                }
                q.idle += 1;
                let (guard, waited) = p
                    .work
                    .wait_timeout(q, IDLE_EXIT)
                    .unwrap_or_else(|e| e.into_inner());
                q = guard;
                q.idle -= 1;
                if waited.timed_out() && q.jobs.is_empty() && !SHUTTING_DOWN.load(Ordering::SeqCst)
                {
                    q.workers -= 1;
                    return; // the thread state is dropped as the thread ends
                }
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
