//! Transforming and filtering (§7.3): map, filter, remove, find, pluck.

use super::{call1, call2, expect_callable, type_error, Builtin};
use super::{items::*, ordering::*};
use crate::error::Error;
use crate::eval::{keyword_field, EvalResult, Interp};
use crate::value::Value;

pub(super) fn keyword_on_map_error(fname: &str, f: &Value, coll: &Value) -> EvalResult<()> {
    if let (Value::Keyword(k), Value::Map(_)) = (f, coll) {
        return Err(Error::type_err(format!(
            "({fname} :{k} ...) was given a single map: keyword accessor requires a list of maps"
        ))
        .with_hint(format!("to read one field write (:{k} m)"))
        .into());
    }
    Ok(())
}

pub(super) fn map(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    map_impl("map", it, args)
}

pub(super) fn mapv(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    map_impl("mapv", it, args)
}

pub(super) fn map_impl(fname: &str, it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    expect_callable(fname, &f)?;
    if args.len() == 2 {
        let coll = std::mem::take(&mut args[1]);
        keyword_on_map_error(fname, &f, &coll)?;
        let mut out = Vec::with_capacity(coll.coll_len().unwrap_or(0));
        if let (Value::Keyword(_), Value::Vector(xs)) = (&f, &coll) {
            it.charge(xs.len())?;
            // field access reads each record in place: no clone of the record
            for x in crate::value::prefetching(xs) {
                out.push(keyword_field(&f, x));
            }
            return Ok(Value::vector(out));
        }
        each(fname, &coll, |x| {
            out.push(call1(it, &f, x)?);
            Ok(())
        })?;
        return Ok(Value::vector(out));
    }
    let colls: Vec<Vec<Value>> = args[1..]
        .iter()
        .map(|c| match c {
            Value::Vector(_) | Value::Str(_) | Value::Nil => seq_items(c),
            other => Err(type_error(fname, "vectors", other)),
        })
        .collect::<Result<_, _>>()?;
    let n = colls.iter().map(Vec::len).min().unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut call_args: Vec<Value> = colls.iter().map(|c| c[i].clone()).collect();
        out.push(it.apply(&f, &mut call_args)?);
    }
    Ok(Value::vector(out))
}

pub(super) fn filter_impl(
    fname: &str,
    it: &mut Interp,
    args: &mut [Value],
    keep: bool,
) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    expect_callable(fname, &f)?;
    let coll = std::mem::take(&mut args[1]);
    keyword_on_map_error(fname, &f, &coll)?;
    let mut out = Vec::new();
    if let (Value::Keyword(_), Value::Vector(xs)) = (&f, &coll) {
        it.charge(xs.len())?;
        for x in crate::value::prefetching(xs) {
            if keyword_field(&f, x).truthy() == keep {
                out.push(x.clone());
            }
        }
        return Ok(Value::vector(out));
    }
    if let Value::Vector(xs) = &coll {
        // one clone per call, a second only for the elements kept
        for x in crate::value::prefetching(xs) {
            if call1(it, &f, x.clone())?.truthy() == keep {
                out.push(x.clone());
            }
        }
        return Ok(Value::vector(out));
    }
    each(fname, &coll, |x| {
        if call1(it, &f, x.clone())?.truthy() == keep {
            out.push(x);
        }
        Ok(())
    })?;
    Ok(Value::vector(out))
}

pub(super) fn filter(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    filter_impl("filter", it, args, true)
}

pub(super) fn remove(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    filter_impl("remove", it, args, false)
}

pub(super) fn map_indexed(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let f = a[0].clone();
    expect_callable("map-indexed", &f)?;
    let mut out = Vec::new();
    let mut i = 0i64;
    each("map-indexed", &a[1], |x| {
        out.push(call2(it, &f, Value::Int(i), x)?);
        i += 1;
        Ok(())
    })?;
    vec_of(out)
}

pub(super) fn find(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("find", &a[0])?;
    for x in ordered_items("find", &a[1])? {
        if call1(it, &a[0], x.clone())?.truthy() {
            return Ok(x);
        }
    }
    Ok(Value::Nil)
}

pub(super) fn pluck(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let key = a[0].clone();
    match &a[1] {
        Value::Map(_) => {
            return Err(
                Error::type_err("pluck expects a vector of maps, got a single map")
                    .with_hint("to read one field write (:k m) or (get m k)")
                    .into(),
            )
        }
        Value::Nil | Value::Vector(_) => {}
        other => return Err(type_error("pluck", "a vector of maps", other).into()),
    }
    let items = ordered_items("pluck", &a[1])?;
    let mut out = Vec::with_capacity(items.len());
    for x in &items {
        out.push(key_of(it, &key, x)?);
    }
    vec_of(out)
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "map",
        2,
        4,
        map,
        "(map f coll): f applied to each element; with several vectors, to parallel elements.",
    ),
    Builtin::new("mapv", 2, 4, mapv, "Same as map."),
    Builtin::new(
        "filter",
        2,
        2,
        filter,
        "Elements for which the predicate is truthy.",
    ),
    Builtin::new(
        "remove",
        2,
        2,
        remove,
        "Elements for which the predicate is falsy.",
    ),
    Builtin::new(
        "map-indexed",
        2,
        2,
        map_indexed,
        "(map-indexed (fn [i x] ...) coll)",
    ),
    Builtin::new(
        "find",
        2,
        2,
        find,
        "(find pred coll): the first element satisfying pred, or nil.",
    ),
    Builtin::new(
        "pluck",
        2,
        2,
        pluck,
        "(pluck :k maps): the value of :k in each map.",
    ),
];
