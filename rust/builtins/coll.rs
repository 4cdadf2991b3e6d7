//! Collections (§7.1-§7.7): access, transformation, reduction, building and maps.
//! Sequence results are vectors; strings are sequences of characters (grapheme clusters).

use unicode_segmentation::UnicodeSegmentation;

use super::{call1, call2, expect_callable, type_error, Builtin, VARIADIC};
use crate::error::Error;
use crate::eval::{keyword_field, EvalResult, Interp};
use crate::value::{flex_get, Value, ValueMap, VecData};

pub(super) fn unordered(fname: &str, v: &Value) -> Error {
    let hint = match v {
        Value::Map(_) => "maps are unordered here; use (keys m), (vals m) or (entries m) first",
        _ => "sets are unordered; convert with (vec s) first",
    };
    type_error(fname, "a vector or string", v).with_hint(hint)
}

/// The characters (grapheme clusters) of `s`, each charged to the run as it is found: a
/// 16 MB string takes long enough to segment that the deadline must be able to stop it.
pub fn graphemes(s: &str) -> impl Iterator<Item = &str> + '_ {
    crate::guard::charged(s.graphemes(true))
}

/// Whether every byte of `s` is a character of its own (ASCII without `\r`, which pairs with a
/// following `\n`): then counting and offsets need no segmentation.
pub fn one_byte_chars(s: &str) -> bool {
    s.is_ascii() && !s.as_bytes().contains(&b'\r')
}

/// The characters of `s` as values, after checking the run can hold them all.
pub fn chars(s: &str) -> impl Iterator<Item = Value> + '_ {
    reserve_chars(s);
    graphemes(s).map(Value::str)
}

/// Memory for one value per character of `s` (a small string each), checked before it is
/// allocated: a 16 MB string has 16 million characters.
fn reserve_chars(s: &str) {
    const PER_CHAR: usize = std::mem::size_of::<Value>() + 32;
    if s.len() < 4096 {
        return;
    }
    // bytes bound the number of characters; count them only when that bound is too high
    let mut n = s.len();
    if n.saturating_mul(PER_CHAR) > 1 << 24 && !s.is_ascii() {
        n = graphemes(s).count();
    }
    crate::guard::check_size(n);
    crate::guard::reserve(n.saturating_mul(PER_CHAR));
}

pub(super) fn entry(k: &Value, v: &Value) -> Value {
    Value::vector(vec![k.clone(), v.clone()])
}

/// Elements of V, S (characters), St (members), M (`[k v]` entries) or nil (none).
pub fn seq_items(v: &Value) -> Result<Vec<Value>, Error> {
    if let Some(n) = v.coll_len() {
        crate::guard::reserve(crate::guard::values_bytes(n));
    }
    Ok(match v {
        Value::Nil => Vec::new(),
        Value::Vector(xs) => xs.to_vec(),
        Value::Str(s) => chars(s).collect(),
        Value::Set(s) => s.iter().cloned().collect(),
        Value::Map(m) => m.iter().map(|(k, v)| entry(k, v)).collect(),
        other => return Err(type_error("this operation", "a collection", other)),
    })
}

/// Calls `f` on each element of any collection without copying the collection.
pub(super) fn each(
    fname: &str,
    coll: &Value,
    mut f: impl FnMut(Value) -> EvalResult<()>,
) -> EvalResult<()> {
    match coll {
        Value::Nil => Ok(()),
        Value::Vector(xs) => xs.iter().try_for_each(|x| f(x.clone())),
        Value::Str(s) => chars(s).try_for_each(f),
        Value::Set(s) => s.iter().try_for_each(|x| f(x.clone())),
        Value::Map(m) => m.iter().try_for_each(|(k, v)| f(entry(k, v))),
        other => Err(type_error(fname, "a collection", other).into()),
    }
}

pub(super) fn coll_len(fname: &str, v: &Value) -> Result<usize, Error> {
    Ok(match v {
        Value::Nil => 0,
        Value::Vector(xs) => xs.len(),
        Value::Str(s) if one_byte_chars(s) => s.len(),
        Value::Str(s) => graphemes(s).count(),
        Value::Set(s) => s.len(),
        Value::Map(m) => m.len(),
        other => return Err(type_error(fname, "a collection", other)),
    })
}

fn count(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Int(coll_len("count", &args[0])? as i64))
}

fn empty_q(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(match &args[0] {
        Value::Str(s) => s.is_empty(),
        other => coll_len("empty?", other)? == 0,
    }))
}

pub(super) fn nth_of(fname: &str, v: &Value, i: usize) -> Result<Value, Error> {
    Ok(match v {
        Value::Nil => Value::Nil,
        Value::Vector(xs) => xs.get(i).cloned().unwrap_or(Value::Nil),
        Value::Str(s) => graphemes(s).nth(i).map(Value::str).unwrap_or(Value::Nil),
        Value::Map(_) | Value::Set(_) => return Err(unordered(fname, v)),
        other => return Err(type_error(fname, "a vector or string", other)),
    })
}

fn first(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(nth_of("first", &args[0], 0)?)
}

fn second(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(nth_of("second", &args[0], 1)?)
}

fn last(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(match &args[0] {
        Value::Vector(xs) => xs.last().cloned().unwrap_or(Value::Nil),
        Value::Str(s) => s
            .graphemes(true)
            .next_back()
            .map(Value::str)
            .unwrap_or(Value::Nil),
        other => nth_of("last", other, usize::MAX)?,
    })
}

fn nth(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    let i = super::expect_int("nth", &args[1])?;
    if i < 0 {
        return Ok(Value::Nil);
    }
    Ok(nth_of("nth", &args[0], i as usize)?)
}

pub(super) fn rest_items(fname: &str, v: &Value) -> Result<Vec<Value>, Error> {
    Ok(match v {
        Value::Nil => Vec::new(),
        Value::Vector(xs) => {
            crate::guard::reserve(crate::guard::values_bytes(xs.len()));
            xs.get(1..).map_or_else(Vec::new, |s| s.to_vec())
        }
        Value::Str(s) => chars(s).skip(1).collect(),
        Value::Map(_) | Value::Set(_) => return Err(unordered(fname, v)),
        other => return Err(type_error(fname, "a vector or string", other)),
    })
}

fn rest(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::vector(rest_items("rest", &args[0])?))
}

fn next(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    let r = rest_items("next", &args[0])?;
    Ok(if r.is_empty() {
        Value::Nil
    } else {
        Value::vector(r)
    })
}

fn get(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    let default = args.get(2).cloned().unwrap_or(Value::Nil);
    Ok(match &args[0] {
        Value::Nil => default,
        Value::Map(m) => flex_get(m, &args[1]).cloned().unwrap_or(default),
        Value::Vector(xs) => match &args[1] {
            Value::Int(i) if *i >= 0 => xs.get(*i as usize).cloned().unwrap_or(default),
            _ => default,
        },
        Value::Set(s) => {
            if s.contains(&args[1]) {
                args[1].clone()
            } else {
                default
            }
        }
        other => return Err(type_error("get", "a map, vector, set or nil", other).into()),
    })
}

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

fn map(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    map_impl("map", it, args)
}

fn mapv(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    map_impl("mapv", it, args)
}

fn map_impl(fname: &str, it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    expect_callable(fname, &f)?;
    if args.len() == 2 {
        let coll = std::mem::take(&mut args[1]);
        keyword_on_map_error(fname, &f, &coll)?;
        let mut out = Vec::with_capacity(coll.coll_len().unwrap_or(0));
        if let (Value::Keyword(_), Value::Vector(xs)) = (&f, &coll) {
            it.charge(xs.len())?;
            // field access reads each record in place: no clone of the record
            for x in xs.iter() {
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

fn filter_impl(fname: &str, it: &mut Interp, args: &mut [Value], keep: bool) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    expect_callable(fname, &f)?;
    let coll = std::mem::take(&mut args[1]);
    keyword_on_map_error(fname, &f, &coll)?;
    let mut out = Vec::new();
    if let (Value::Keyword(_), Value::Vector(xs)) = (&f, &coll) {
        it.charge(xs.len())?;
        for x in xs.iter() {
            if keyword_field(&f, x).truthy() == keep {
                out.push(x.clone());
            }
        }
        return Ok(Value::vector(out));
    }
    if let Value::Vector(xs) = &coll {
        // one clone per call, a second only for the elements kept
        for x in xs.iter() {
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

fn filter(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    filter_impl("filter", it, args, true)
}

fn remove(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    filter_impl("remove", it, args, false)
}

fn reduce(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    let f = std::mem::take(&mut args[0]);
    expect_callable("reduce", &f)?;
    let (mut acc, coll) = if args.len() == 3 {
        (
            Some(std::mem::take(&mut args[1])),
            std::mem::take(&mut args[2]),
        )
    } else {
        (None, std::mem::take(&mut args[1]))
    };
    if let (Value::Builtin(b), Value::Vector(xs)) = (&f, &coll) {
        it.charge(xs.len())?;
        if b.name == "+" {
            if let Some(sum) = sum_numbers(acc.as_ref(), xs)? {
                return Ok(sum);
            }
        }
    }
    each("reduce", &coll, |x| {
        acc = Some(match acc.take() {
            None => x,
            Some(a) => call2(it, &f, a, x)?,
        });
        Ok(())
    })?;
    Ok(acc.unwrap_or(Value::Nil))
}

/// `(reduce + ...)` over numbers without a call per element; `None` when something is not a
/// number (the generic path then reports the error exactly as `+` would).
fn sum_numbers(init: Option<&Value>, xs: &[Value]) -> Result<Option<Value>, Error> {
    let mut int_acc: i64 = 0;
    let mut float_acc: f64 = 0.0;
    let mut is_float = false;
    let mut any = false;
    for x in init.into_iter().chain(xs.iter()) {
        any = true;
        match x {
            Value::Int(i) if !is_float => match int_acc.checked_add(*i) {
                Some(s) => int_acc = s,
                None => return Ok(None),
            },
            Value::Int(i) => float_acc += *i as f64,
            Value::Float(f) => {
                if !is_float {
                    is_float = true;
                    float_acc = int_acc as f64;
                }
                let before = float_acc;
                float_acc += f;
                if !float_acc.is_finite() && before.is_finite() && f.is_finite() {
                    return Ok(None);
                }
            }
            _ => return Ok(None),
        }
    }
    if !any {
        return Ok(None); // (reduce + []) is nil: the generic path says so
    }
    Ok(Some(if is_float {
        Value::Float(float_acc)
    } else {
        Value::Int(int_acc)
    }))
}

fn range(it: &mut Interp, args: &mut [Value]) -> EvalResult {
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

fn conj_impl(fname: &str, it: &mut Interp, args: &mut [Value]) -> EvalResult {
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

fn assoc(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    if args.len() % 2 == 0 {
        return Err(Error::arity(format!(
            "assoc expects a collection followed by key value pairs, got {} argument(s)",
            args.len()
        ))
        .into());
    }
    let mut coll = std::mem::take(&mut args[0]);
    if coll.is_nil() {
        coll = Value::empty_map();
    }
    match &mut coll {
        Value::Map(m) => {
            it.check_coll_size(m.len() + args.len() / 2)?;
            let m = crate::value::unshare_map(m);
            for pair in args[1..].chunks_mut(2) {
                m.insert(std::mem::take(&mut pair[0]), std::mem::take(&mut pair[1]));
            }
        }
        Value::Vector(xs) => {
            let v: &mut VecData = crate::value::unshare_vec(xs);
            for pair in args[1..].chunks_mut(2) {
                let i = match &pair[0] {
                    Value::Int(i) if *i >= 0 && (*i as usize) <= v.len() => *i as usize,
                    Value::Int(i) => {
                        return Err(Error::exec(format!(
                            "index {i} out of bounds for vector of length {}",
                            v.len()
                        ))
                        .into())
                    }
                    other => {
                        return Err(
                            type_error("assoc", "an integer index for a vector", other).into()
                        )
                    }
                };
                let val = std::mem::take(&mut pair[1]);
                if i == v.len() {
                    v.push(val);
                } else {
                    v[i] = val;
                }
            }
        }
        other => return Err(type_error("assoc", "a map, vector or nil", other).into()),
    }
    Ok(coll)
}

fn keys_vals(it: &mut Interp, fname: &str, v: &Value, keys: bool) -> EvalResult {
    match v {
        Value::Nil => Ok(Value::vector(Vec::new())),
        Value::Map(m) => {
            super::alloc_output(it, m.len(), 16)?;
            Ok(Value::vector(
                crate::guard::charged(m.iter())
                    .map(|(k, v)| if keys { k.clone() } else { v.clone() })
                    .collect(),
            ))
        }
        other => Err(type_error(fname, "a map", other).into()),
    }
}

fn keys(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    keys_vals(it, "keys", &args[0], true)
}

fn vals(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    keys_vals(it, "vals", &args[0], false)
}

fn vector(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    Ok(Value::vector(args.iter_mut().map(std::mem::take).collect()))
}

fn hash_map_from_pairs(it: &mut Interp, pairs: &[Value]) -> EvalResult {
    it.check_coll_size(pairs.len())?;
    let mut m = ValueMap::default();
    for p in pairs {
        let (k, v) = map_entry_parts("into", p)?;
        m.insert(k, v);
    }
    Ok(Value::map(m))
}

fn into(it: &mut Interp, args: &mut [Value]) -> EvalResult {
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

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "count",
        1,
        1,
        count,
        "Number of elements (characters of a string); nil is 0.",
    ),
    Builtin::new(
        "empty?",
        1,
        1,
        empty_q,
        "true when there are no elements; nil is empty.",
    ),
    Builtin::new(
        "first",
        1,
        1,
        first,
        "First element of a vector or string, or nil.",
    ),
    Builtin::new("second", 1, 1, second, "Second element, or nil."),
    Builtin::new("last", 1, 1, last, "Last element, or nil."),
    Builtin::new(
        "nth",
        2,
        2,
        nth,
        "Element at an index, nil when out of range.",
    ),
    Builtin::new(
        "rest",
        1,
        1,
        rest,
        "All but the first element, as a vector.",
    ),
    Builtin::new(
        "next",
        1,
        1,
        next,
        "Like rest, but nil when nothing remains.",
    ),
    Builtin::new(
        "get",
        2,
        3,
        get,
        "(get m k) / (get m k default): map key (flexible), vector index or set member.",
    ),
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
        "reduce",
        2,
        3,
        reduce,
        "(reduce f init coll) folds (f acc item) over coll.",
    ),
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
    Builtin::new(
        "assoc",
        3,
        VARIADIC,
        assoc,
        "(assoc m k v ...) sets keys of a map or indices of a vector.",
    ),
    Builtin::new("keys", 1, 1, keys, "Keys of a map in order."),
    Builtin::new("vals", 1, 1, vals, "Values of a map in order."),
    Builtin::new("vector", 0, VARIADIC, vector, "A vector of the arguments."),
    Builtin::new(
        "into",
        2,
        2,
        into,
        "(into to from): adds the elements of from to to.",
    ),
];
