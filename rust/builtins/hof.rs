//! Higher-order functions and combinators (§6.2, §7.13): apply, fnil, juxt, predicate
//! combinators, and the parallel forms pmap/pcalls.
//!
//! pmap/pcalls run their branches in parallel threads within the run's thread allowance; each
//! branch sees a snapshot of the user namespace, its `def`s and `println`s are discarded, and its
//! tool calls are made and recorded, so the result is the same however many threads run them.

use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Condvar, Mutex};

use super::items::entry;
use super::{expect_callable, type_error, Builtin, VARIADIC};
use crate::error::{Error, ErrorKind};
use crate::eval::{EvalResult, Interp, ToolCallRecord};
use crate::guard;
use crate::value::{Native, Value};

fn apply(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let n = a.len();
    let spread = match &a[n - 1] {
        Value::Vector(xs) => xs.len(),
        Value::Set(s) => s.len(),
        // the reference keeps maps out (§7.13); Clojure programs spread one's entries
        Value::Map(_) => {
            return Err(
                type_error("apply", "a vector or set as its last argument", &a[n - 1])
                    .with_hint("a map is spread as its [k v] pairs with (apply f (entries m))")
                    .into(),
            )
        }
        other => {
            return Err(
                type_error("apply", "a vector or set as its last argument", other)
                    .with_hint("(apply f coll), e.g. (apply max [3 1 2])")
                    .into(),
            )
        }
    };
    // the arguments are a copy of the collection: its size and memory are checked (and the
    // memory charged) before it is made, as parallel branches may be making theirs too
    let total = spread + (n - 2);
    it.check_coll_size(total)?;
    it.reserve(total.saturating_mul(std::mem::size_of::<Value>()))?;
    let mut args: Vec<Value> = Vec::with_capacity(total);
    args.extend(a[1..n - 1].iter_mut().map(std::mem::take));
    match &a[n - 1] {
        Value::Vector(xs) => args.extend(xs.iter().cloned()),
        Value::Set(s) => args.extend(s.iter().cloned()),
        _ => {}
    }
    let f = std::mem::take(&mut a[0]);
    it.apply(&f, &mut args)
}

fn fnil(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("fnil", &a[0])?;
    Ok(Value::Native(Arc::new(Native::Fnil(
        std::mem::take(&mut a[0]),
        std::mem::take(&mut a[1]),
    ))))
}

fn callables(fname: &str, a: &mut [Value]) -> Result<Vec<Value>, Error> {
    for f in a.iter() {
        expect_callable(fname, f)?;
    }
    Ok(a.iter_mut().map(std::mem::take).collect())
}

fn juxt(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Native(Arc::new(Native::Juxt(callables("juxt", a)?))))
}

fn all_of(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Native(Arc::new(Native::AllOf(callables(
        "all-of", a,
    )?))))
}

fn any_of(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Native(Arc::new(Native::AnyOf(callables(
        "any-of", a,
    )?))))
}

fn none_of(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Native(Arc::new(Native::NoneOf(callables(
        "none-of", a,
    )?))))
}

/// Maps an outcome that may not leave a branch (`return`, `fail`, `recur`) to its error.
fn branch_result(kind: ErrorKind, label: &str, r: EvalResult) -> EvalResult {
    match r {
        Err(f) if f.is_return_or_fail() => Err(Error::new(
            kind,
            format!("{label}: return and fail cannot be used inside a parallel branch"),
        )
        .into()),
        Err(f) if f.is_recur() => {
            Err(Error::new(kind, format!("{label}: recur escaped its branch")).into())
        }
        other => other,
    }
}

/// Runs `n` branches, each in its own interpreter (namespace snapshot; its `def`s and
/// `println`s are discarded; its tool calls are made and recorded). Results come back in input
/// order; the first failing branch in input order decides the error, and branches after it are
/// not started.
///
/// Branches share the run's budget. The run may use at most 2 × CPUs threads at once across all
/// its `pmap`/`pcalls` calls, nested ones included: a call takes what threads are free (none is
/// fine: the calling thread works through the branches itself), so nesting and recursion never
/// multiply threads, and a thread that cannot be started is simply not used.
fn run_branches(
    it: &mut Interp,
    n: usize,
    kind: ErrorKind,
    name: &str,
    body: impl Fn(&mut Interp, usize) -> EvalResult + Sync,
) -> EvalResult<Vec<Value>> {
    type Done = (EvalResult, Vec<ToolCallRecord>);
    let env = it.branch_env();
    let budget = env.budget;
    let next = AtomicUsize::new(0);
    let first_failed = AtomicUsize::new(usize::MAX);
    let done: Mutex<Vec<Option<Done>>> = Mutex::new((0..n).map(|_| None).collect());
    let work = || loop {
        let i = next.fetch_add(1, Relaxed);
        if i >= n || i > first_failed.load(Relaxed) {
            break;
        }
        // a branch is work too: millions of short branches still meet the deadline
        guard::charge(1);
        let mut child = env.interp(i);
        let r = match guard::catch(budget, || body(&mut child, i)) {
            Ok(r) => r,
            Err(e) => Err(e.into()),
        };
        let r = branch_result(kind, &format!("{name} branch {i}"), r);
        child.publish_steps();
        // a branch stopped at a call waiting for the host does not stop the others: they run
        // to their own waiting calls, so one stop asks for every decision it can
        if r.as_ref().is_err_and(|f| !f.is_pending()) {
            first_failed.fetch_min(i, Relaxed);
        }
        let calls = child.take_tool_calls();
        drop(child);
        done.lock().unwrap_or_else(|p| p.into_inner())[i] = Some((r, calls));
    };
    let helpers = budget.take_threads(n.saturating_sub(1));
    // helpers still working; the calling thread waits for them without going deaf to the
    // budget (it is the thread that notices Ctrl-C)
    let running = (Mutex::new(0usize), Condvar::new());
    let started = std::thread::scope(|s| {
        let mut started = 0;
        for _ in 0..helpers {
            // threads left blocked in tools by abandoned runs count too: past the process's
            // bound the calling thread does the work
            let Some(mut place) = crate::threads::Branch::claim() else {
                break;
            };
            *running.0.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            let (running, env, work) = (&running, &env, &work);
            let spawned = std::thread::Builder::new()
                .name(format!("ptc-{name}"))
                .stack_size(BRANCH_STACK)
                .spawn_scoped(s, move || {
                    place.started();
                    guard::with_budget(budget, || {
                        env.host().thread_scope(&mut || {
                            let _ = guard::catch(budget, work);
                        })
                    });
                    *running.0.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
                    running.1.notify_all();
                });
            if spawned.is_err() {
                *running.0.lock().unwrap_or_else(|p| p.into_inner()) -= 1;
                break; // the calling thread and the started ones do the work
            }
            started += 1;
        }
        budget.return_threads(helpers - started);
        work();
        let mut left = running.0.lock().unwrap_or_else(|p| p.into_inner());
        while *left > 0 {
            left = running
                .1
                .wait_timeout(left, std::time::Duration::from_millis(10))
                .unwrap_or_else(|e| e.into_inner())
                .0;
            if *left > 0 {
                drop(left);
                // a deadline, a cancel or Ctrl-C stops the helpers at their next check
                let _ = budget.check(env.deadline());
                left = running.0.lock().unwrap_or_else(|p| p.into_inner());
            }
        }
        // joined when the scope ends; a branch's panic was caught inside `work`
        started
    });
    budget.return_threads(started);
    let done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut out = Vec::with_capacity(n);
    let mut first_error = None;
    let mut gap = false;
    for slot in done {
        let Some((r, calls)) = slot else {
            gap = true;
            continue;
        };
        // every call any branch made is recorded, also those of branches after a failed one
        // (they raced it): a tool that ran is never left out of the run's calls
        it.absorb_branch(calls)?;
        match r {
            Ok(v) if first_error.is_none() && !gap => out.push(v),
            Ok(_) => {}
            Err(e) => {
                if first_error.is_none() && !gap {
                    first_error = Some(e);
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None if out.len() == n => Ok(out),
        // a branch was never run: the run was stopped meanwhile
        None => Err(budget
            .stop_reason()
            .unwrap_or_else(|| Error::new(kind, format!("{name}: a branch did not finish")))
            .into()),
    }
}

/// Stack of a branch thread; deeper recursion continues on heap segments (`guard::deeper`).
const BRANCH_STACK: usize = 8 * 1024 * 1024;

fn pmap(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    // branches are threads of their own: not run inside a speculative pass
    it.refuse_effect()?;
    let f = std::mem::take(&mut a[0]);
    expect_callable("pmap", &f)?;
    if let Some(n) = a[1].coll_len() {
        // the items, a result slot per branch and the output, before any branch starts
        super::alloc_output(it, n, 3 * 16 + 48)?;
    }
    let items: Vec<Value> = match &a[1] {
        Value::Nil => Vec::new(),
        Value::Vector(xs) => xs.to_vec(),
        Value::Set(s) => s.iter().cloned().collect(),
        Value::Map(m) => {
            if let Value::Keyword(k) = &f {
                return Err(Error::type_err(format!("(pmap :{k} ...) was given a single map: keyword accessor requires a list of maps")).into());
            }
            m.iter().map(|(k, v)| entry(k, v)).collect()
        }
        other => return Err(type_error("pmap", "a vector, set or map", other).into()),
    };
    let out = run_branches(it, items.len(), ErrorKind::Pmap, "pmap", |child, i| {
        child.apply(&f, &mut [items[i].clone()])
    })?;
    Ok(Value::vector(out))
}

fn pcalls(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    it.refuse_effect()?;
    for (i, f) in a.iter().enumerate() {
        let ok = match f {
            Value::Closure(c) => c.lambda().is_some_and(|l| l.params.is_empty()),
            Value::Tool(_) => true,
            Value::Builtin(b) => b.min == 0,
            _ => false,
        };
        if !ok {
            return Err(Error::new(
                ErrorKind::Pcalls,
                format!(
                    "pcalls argument {i} must be a function of no arguments, got {}",
                    f.describe()
                ),
            )
            .with_hint("wrap each call: (pcalls #(tool/a) #(tool/b))")
            .into());
        }
    }
    let fs: Vec<Value> = a.to_vec();
    let out = run_branches(it, fs.len(), ErrorKind::Pcalls, "pcalls", |child, i| {
        child.apply(&fs[i], &mut []).map_err(|mut f| {
            if let Some(e) = f.error_mut() {
                if !e.message.starts_with("pcalls branch") {
                    e.message = format!("pcalls branch {i}: {}", e.message);
                }
            }
            f
        })
    })?;
    Ok(Value::vector(out))
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "apply",
        2,
        VARIADIC,
        apply,
        "(apply f a b coll): call f with a, b and the elements of coll.",
    ),
    Builtin::new(
        "fnil",
        2,
        2,
        fnil,
        "(fnil f d): like f, but a nil first argument becomes d.",
    ),
    Builtin::new(
        "juxt",
        0,
        VARIADIC,
        juxt,
        "(juxt f g): a function returning [(f x) (g x)].",
    ),
    Builtin::new(
        "all-of",
        0,
        VARIADIC,
        all_of,
        "A predicate true when every given predicate holds.",
    ),
    Builtin::new(
        "any-of",
        0,
        VARIADIC,
        any_of,
        "A predicate true when some given predicate holds.",
    ),
    Builtin::new(
        "none-of",
        0,
        VARIADIC,
        none_of,
        "A predicate true when no given predicate holds.",
    ),
    Builtin::new(
        "pmap",
        2,
        2,
        pmap,
        "(pmap f coll): like map; branches isolated (defs and printlns discarded).",
    ),
    Builtin::new(
        "pcalls",
        0,
        VARIADIC,
        pcalls,
        "(pcalls f g ...): call zero-argument functions; vector of results.",
    ),
];
