//! Higher-order functions and combinators (§6.2, §7.13): apply, fnil, juxt, predicate
//! combinators, and the parallel forms pmap/pcalls.
//!
//! pmap/pcalls run their branches one after another here (the reference allows "possibly in
//! parallel"); each branch sees a snapshot of the user namespace, its `def`s and `println`s are
//! discarded, and its tool calls are made and recorded, so the result is the same either way.

use std::sync::Arc;

use super::coll::entry;
use super::{expect_callable, type_error, Builtin, VARIADIC};
use crate::error::{Error, ErrorKind};
use crate::eval::{EvalResult, Interp, ToolCallRecord};
use crate::value::{Native, Value};

fn apply(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let n = a.len();
    let mut args: Vec<Value> = a[1..n - 1].iter_mut().map(std::mem::take).collect();
    match &a[n - 1] {
        Value::Vector(xs) => args.extend(xs.iter().cloned()),
        Value::Set(s) => args.extend(s.iter().cloned()),
        other => {
            return Err(
                type_error("apply", "a vector or set as its last argument", other)
                    .with_hint("(apply f coll), e.g. (apply max [3 1 2])")
                    .into(),
            )
        }
    }
    it.check_coll_size(args.len())?;
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

/// Runs `n` branches, in parallel on up to 2 × CPUs threads, each in its own interpreter
/// (namespace snapshot; its `def`s and `println`s are discarded; its tool calls are made and
/// recorded). Results come back in input order; the first failing branch in input order
/// decides the error.
fn run_branches(
    it: &mut Interp,
    n: usize,
    kind: ErrorKind,
    name: &str,
    body: impl Fn(&mut Interp, usize) -> EvalResult + Sync,
) -> EvalResult<Vec<Value>> {
    type Done = (usize, EvalResult, Vec<ToolCallRecord>, u64);
    let env = it.branch_env();
    let run_one = |i: usize| -> Done {
        let mut child = env.interp();
        let r = branch_result(kind, &format!("{name} branch {i}"), body(&mut child, i));
        let steps = child.steps();
        (i, r, std::mem::take(&mut child.tool_calls), steps)
    };
    let cpus = std::thread::available_parallelism().map_or(1, |c| c.get());
    let workers = n.min(2 * cpus);
    let mut done: Vec<Done> = if workers <= 1 {
        (0..n).map(run_one).collect()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers)
                .map(|w| {
                    let run_one = &run_one;
                    s.spawn(move || (w..n).step_by(workers).map(run_one).collect::<Vec<Done>>())
                })
                .collect();
            let mut all = Vec::with_capacity(n);
            for h in handles {
                match h.join() {
                    Ok(part) => all.extend(part),
                    Err(_) => {
                        let e = Error::new(
                            ErrorKind::Internal,
                            format!("internal error: a {name} branch panicked"),
                        );
                        all.push((usize::MAX, Err(e.into()), Vec::new(), 0));
                    }
                }
            }
            all
        })
    };
    done.sort_by_key(|d| d.0);
    let mut out = Vec::with_capacity(n);
    let mut first_error = None;
    for (_, r, calls, steps) in done {
        it.absorb_branch(calls, steps)?;
        match r {
            Ok(v) => out.push(v),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

fn pmap(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut a[0]);
    expect_callable("pmap", &f)?;
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
    for (i, f) in a.iter().enumerate() {
        let ok = match f {
            Value::Closure(c) => c.lambda.params.is_empty(),
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
