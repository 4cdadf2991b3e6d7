//! Building and combining (§7.4): conj, concat, into, flatten, zip, partition, range, vector, vec,
//! set.

use super::items::{chars, entry, ordered_items, seq_items, unordered, vec_of};
use super::{alloc_output, expect_int, type_error, Builtin, ENTRY_BYTES, SET_ITEM_BYTES, VARIADIC};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::guard;
use crate::value::{Value, ValueMap, ValueSet};

pub(super) fn range(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let all_int = args.iter().all(|a| matches!(a, Value::Int(_)));
    let all_num = args
        .iter()
        .all(|a| matches!(a, Value::Int(_) | Value::Float(_)));
    if !all_num {
        return Ok(Value::vector(Vec::new()));
    }
    if all_int {
        let g = |i: usize| match &args[i] {
            Value::Int(x) => *x,
            _ => 0,
        };
        let (start, end, step) = match args.len() {
            1 => (0, g(0), 1),
            2 => (g(0), g(1), 1),
            _ => (g(0), g(1), g(2)),
        };
        if step == 0 {
            return Ok(Value::vector(Vec::new()));
        }
        let span = end as i128 - start as i128;
        let n = if (span > 0) == (step > 0) && span != 0 {
            ((span.abs() + step.unsigned_abs() as i128 - 1) / step.unsigned_abs() as i128) as u128
        } else {
            0
        };
        it.alloc_values(usize::try_from(n).unwrap_or(usize::MAX))?;
        it.charge(n as usize)?;
        let out: Vec<Value> = (0..n as i64)
            .map(|k| Value::Int(start + k * step))
            .collect();
        return Ok(Value::vector(out));
    }
    let g = |i: usize| match &args[i] {
        Value::Int(x) => *x as f64,
        Value::Float(x) => *x,
        _ => 0.0,
    };
    let (start, end, step) = match args.len() {
        1 => (0.0, g(0), 1.0),
        2 => (g(0), g(1), 1.0),
        _ => (g(0), g(1), g(2)),
    };
    if step == 0.0 || !step.is_finite() || start.is_nan() || end.is_nan() {
        return Ok(Value::vector(Vec::new()));
    }
    let n = ((end - start) / step).ceil();
    let n = if n.is_finite() && n > 0.0 {
        n
    } else if n > 0.0 {
        f64::MAX
    } else {
        0.0
    };
    let n = if n >= usize::MAX as f64 {
        usize::MAX
    } else {
        n as usize
    };
    it.alloc_values(n)?;
    it.charge(n)?;
    let out: Vec<Value> = (0..n)
        .map(|k| Value::Float(start + k as f64 * step))
        .collect();
    Ok(Value::vector(out))
}

pub(super) fn map_entry_parts(fname: &str, v: &Value) -> Result<(Value, Value), Error> {
    match v {
        Value::Vector(xs) if xs.len() == 2 => Ok((xs[0].clone(), xs[1].clone())),
        other => Err(Error::type_err(format!(
            "{fname}: invalid map entry {}: expected a [key value] vector",
            other.describe()
        ))),
    }
}

pub(super) fn conj(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    conj_impl("conj", it, args)
}

pub(super) fn conj_impl(fname: &str, it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let mut coll = std::mem::take(&mut args[0]);
    let items = &mut args[1..];
    if items.is_empty() {
        return Ok(coll); // (conj c) is c, (conj nil) is nil
    }
    match &mut coll {
        Value::Nil => {
            return Ok(Value::vector(
                items.iter_mut().map(std::mem::take).collect(),
            ));
        }
        Value::Vector(xs) => {
            it.check_coll_size(xs.len() + items.len())?;
            let v = crate::value::unshare_vec(xs);
            v.extend(items.iter_mut().map(std::mem::take));
        }
        Value::Set(s) => {
            it.check_coll_size(s.len() + items.len())?;
            let s = crate::value::unshare_set(s);
            for x in items.iter_mut() {
                s.insert(std::mem::take(x));
            }
        }
        Value::Map(m) => {
            it.check_coll_size(m.len() + items.len())?;
            let m = crate::value::unshare_map(m);
            for x in items.iter() {
                match x {
                    Value::Map(other) => {
                        for (k, v) in other.iter() {
                            m.insert(k.clone(), v.clone());
                        }
                    }
                    other => {
                        let (k, v) = map_entry_parts(fname, other)?;
                        m.insert(k, v);
                    }
                }
            }
        }
        other => return Err(type_error(fname, "a vector, set, map or nil", other).into()),
    }
    Ok(coll)
}

pub(super) fn vector(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::vector(args.iter_mut().map(std::mem::take).collect()))
}

pub(super) fn hash_map_from_pairs(it: &mut Interp, pairs: &[Value]) -> EvalResult {
    it.check_coll_size(pairs.len())?;
    let mut m = ValueMap::default();
    for p in pairs {
        let (k, v) = map_entry_parts("into", p)?;
        m.insert(k, v);
    }
    Ok(Value::map(m))
}

pub(super) fn into(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let from = std::mem::take(&mut args[1]);
    let to = std::mem::take(&mut args[0]);
    let items = seq_items(&from)
        .map_err(|_| type_error("into", "a collection to take elements from", &from))?;
    match to {
        Value::Nil => Ok(Value::vector(items)),
        Value::Map(_) if items.is_empty() => Ok(to),
        Value::Map(m) => {
            let base = Value::Map(m);
            let added = hash_map_from_pairs(it, &items)?;
            let mut args2 = [base, added];
            conj_impl("into", it, &mut args2)
        }
        other @ (Value::Vector(_) | Value::Set(_)) => {
            let mut args2: Vec<Value> = std::iter::once(other).chain(items).collect();
            conj_impl("into", it, &mut args2)
        }
        other => Err(type_error("into", "a vector, set, map or nil to add to", &other).into()),
    }
}

pub(super) fn concat(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let mut total = 0usize;
    for c in a.iter() {
        match c {
            Value::Nil | Value::Vector(_) | Value::Set(_) | Value::Map(_) => {
                total = total.saturating_add(c.coll_len().unwrap_or(0))
            }
            other => return Err(type_error("concat", "vectors, sets or maps", other).into()),
        }
    }
    alloc_output(it, total, 16)?;
    let mut out = Vec::with_capacity(total);
    for c in a.iter() {
        match c {
            Value::Vector(xs) => out.extend(guard::charged(xs.iter()).cloned()),
            Value::Set(s) => out.extend(guard::charged(s.iter()).cloned()),
            Value::Map(m) => {
                it.reserve(m.len().saturating_mul(ENTRY_BYTES))?;
                out.extend(guard::charged(m.iter()).map(|(k, v)| entry(k, v)))
            }
            _ => {}
        }
    }
    vec_of(out)
}

pub(super) fn flatten(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let mut out = Vec::new();
    let mut stack: Vec<std::slice::Iter<'_, Value>> = Vec::new();
    match &a[0] {
        Value::Vector(xs) => stack.push(xs.iter()),
        Value::Nil => {}
        other => return Err(type_error("flatten", "a vector", other).into()),
    }
    while let Some(top) = stack.last_mut() {
        match top.next() {
            None => {
                stack.pop();
            }
            Some(Value::Vector(inner)) => stack.push(inner.iter()),
            Some(x) => it.push_value(&mut out, x.clone())?,
        }
    }
    vec_of(out)
}

pub(super) fn two_vectors(fname: &str, a: &[Value]) -> Result<(Vec<Value>, Vec<Value>), Error> {
    let get = |v: &Value| match v {
        Value::Nil => Ok(Vec::new()),
        Value::Vector(xs) => {
            guard::reserve(guard::values_bytes(xs.len()));
            Ok(guard::charged(xs.iter()).cloned().collect())
        }
        Value::Map(_) | Value::Set(_) => Err(unordered(fname, v)),
        other => Err(type_error(fname, "vectors", other)),
    };
    Ok((get(&a[0])?, get(&a[1])?))
}

pub(super) fn zip(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = two_vectors("zip", a)?;
    alloc_output(it, x.len().min(y.len()), ENTRY_BYTES)?;
    vec_of(
        x.into_iter()
            .zip(y)
            .map(|(p, q)| Value::vector(vec![p, q]))
            .collect(),
    )
}

pub(super) fn interleave(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = two_vectors("interleave", a)?;
    it.alloc_values(2 * x.len().min(y.len()))?;
    vec_of(x.into_iter().zip(y).flat_map(|(p, q)| [p, q]).collect())
}

pub(super) fn interpose(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let sep = a[0].clone();
    let items = ordered_items("interpose", &a[1])?;
    it.alloc_values((2 * items.len()).saturating_sub(1))?;
    let mut out = Vec::with_capacity(items.len() * 2);
    for (i, x) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(sep.clone());
        }
        out.push(x);
    }
    vec_of(out)
}

pub(super) fn partition(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let n = expect_int("partition", &a[0])?;
    let (step, coll) = if a.len() == 3 {
        (expect_int("partition", &a[1])?, &a[2])
    } else {
        (n, &a[1])
    };
    if n <= 0 || step <= 0 {
        return Err(Error::type_err(format!(
            "partition: n and step must be positive integers, got {n} and {step}"
        ))
        .into());
    }
    let items = ordered_items("partition", coll)?;
    it.charge(items.len())?;
    let (n, step) = (n as usize, step as usize);
    let mut out = Vec::new();
    let mut i = 0;
    while i + n <= items.len() {
        out.push(Value::vector(items[i..i + n].to_vec()));
        i += step;
        it.check_coll_size(out.len())?;
    }
    vec_of(out)
}

pub(super) fn vec_fn(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Set(s) => alloc_output(it, s.len(), 16)?,
        Value::Map(m) => alloc_output(it, m.len(), ENTRY_BYTES)?,
        _ => {}
    }
    Ok(match &a[0] {
        Value::Nil => Value::Nil,
        Value::Vector(_) => std::mem::take(&mut a[0]),
        Value::Str(s) => Value::vector(chars(s).collect()),
        Value::Set(s) => Value::vector(s.iter().cloned().collect()),
        Value::Map(m) => Value::vector(m.iter().map(|(k, v)| entry(k, v)).collect()),
        other => return Err(type_error("vec", "a collection", other).into()),
    })
}

pub(super) fn set_fn(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    if let Value::Vector(xs) = &a[0] {
        alloc_output(it, xs.len(), SET_ITEM_BYTES)?;
    }
    Ok(match &a[0] {
        Value::Nil => Value::set(ValueSet::default()),
        Value::Set(_) => std::mem::take(&mut a[0]),
        Value::Vector(xs) => Value::set(guard::charged(xs.iter()).cloned().collect()),
        other => return Err(type_error("set", "a vector or set", other).into()),
    })
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "range",
        1,
        3,
        range,
        "(range end), (range start end), (range start end step).",
    ),
    Builtin::new(
        "conj",
        1,
        VARIADIC,
        conj,
        "Adds items: appended to a vector, added to a set, [k v] entries to a map.",
    ),
    Builtin::new("vector", 0, VARIADIC, vector, "A vector of the arguments."),
    Builtin::new(
        "into",
        2,
        2,
        into,
        "(into to from): adds the elements of from to to.",
    ),
    Builtin::new(
        "concat",
        0,
        VARIADIC,
        concat,
        "Elements of all collections in order, as one vector.",
    ),
    Builtin::new(
        "flatten",
        1,
        1,
        flatten,
        "Non-vector leaves of nested vectors, in order.",
    ),
    Builtin::new("zip", 2, 2, zip, "[[a0 b0] [a1 b1] ...] of two vectors."),
    Builtin::new(
        "interleave",
        2,
        2,
        interleave,
        "[a0 b0 a1 b1 ...] of two vectors.",
    ),
    Builtin::new(
        "interpose",
        2,
        2,
        interpose,
        "(interpose sep coll): sep between consecutive elements.",
    ),
    Builtin::new(
        "partition",
        2,
        3,
        partition,
        "(partition n coll) or (partition n step coll): complete chunks of n.",
    ),
    Builtin::new(
        "vec",
        1,
        1,
        vec_fn,
        "A vector of the elements (characters of a string, [k v] entries of a map).",
    ),
    Builtin::new("set", 1, 1, set_fn, "A set of the elements."),
];
