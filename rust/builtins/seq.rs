//! Sequence access, subsequences and ordering (§7.1, §7.2). Ordered operations take vectors
//! and strings (as characters); sets and maps are refused with a hint, nil is empty.

use std::cmp::Ordering;

use super::coll::{chars, coll_len, each, entry, nth_of, rest_items, unordered};
use super::{
    alloc_output, call1, call2, expect_callable, expect_int, type_error, Builtin, ENTRY_BYTES,
    SET_ITEM_BYTES, VARIADIC,
};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::guard;
use crate::value::{identical, natural_cmp, Value, ValueSet};

/// The elements of an ordered collection (vector, string, nil); sets and maps are refused.
pub(super) fn ordered_items(fname: &str, v: &Value) -> Result<Vec<Value>, Error> {
    Ok(match v {
        Value::Nil => Vec::new(),
        Value::Vector(xs) => {
            crate::guard::reserve(crate::guard::values_bytes(xs.len()));
            guard::charged(xs.iter()).cloned().collect()
        }
        Value::Str(s) => chars(s).collect(),
        Value::Map(_) | Value::Set(_) => return Err(unordered(fname, v)),
        other => return Err(type_error(fname, "a vector or string", other)),
    })
}

fn vec_of(items: Vec<Value>) -> EvalResult {
    Ok(Value::vector(items))
}

fn ffirst(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let f = nth_of("ffirst", &a[0], 0)?;
    Ok(nth_of("ffirst", &f, 0)?)
}

fn fnext(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(nth_of("fnext", &a[0], 1)?)
}

fn nfirst(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let f = nth_of("nfirst", &a[0], 0)?;
    let r = rest_items("nfirst", &f)?;
    Ok(if r.is_empty() {
        Value::Nil
    } else {
        Value::vector(r)
    })
}

fn nnext(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let items = rest_items("nnext", &a[0])?;
    Ok(if items.len() <= 1 {
        Value::Nil
    } else {
        Value::vector(items[1..].to_vec())
    })
}

fn not_empty(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let empty = match &a[0] {
        Value::Str(s) => s.is_empty(),
        other => coll_len("not-empty", other)? == 0,
    };
    Ok(if empty {
        Value::Nil
    } else {
        std::mem::take(&mut a[0])
    })
}

fn seq(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Set(s) => alloc_output(it, s.len(), 16)?,
        Value::Map(m) => alloc_output(it, m.len(), ENTRY_BYTES)?,
        _ => {}
    }
    let items: Vec<Value> = match &a[0] {
        Value::Nil => return Ok(Value::Nil),
        Value::Vector(xs) => {
            return Ok(if xs.is_empty() {
                Value::Nil
            } else {
                std::mem::take(&mut a[0])
            })
        }
        Value::Str(s) => chars(s).collect(),
        Value::Set(s) => s.iter().cloned().collect(),
        Value::Map(m) => m.iter().map(|(k, v)| entry(k, v)).collect(),
        other => return Err(type_error("seq", "a collection", other).into()),
    };
    Ok(if items.is_empty() {
        Value::Nil
    } else {
        Value::vector(items)
    })
}

fn count_arg(fname: &str, v: &Value) -> Result<i64, Error> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(type_error(fname, "an integer count", other)),
    }
}

fn take(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let n = count_arg("take", &a[0])?;
    let items = ordered_items("take", &a[1])?;
    vec_of(items.into_iter().take(n.max(0) as usize).collect())
}

fn drop(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let n = count_arg("drop", &a[0])?;
    let items = ordered_items("drop", &a[1])?;
    vec_of(items.into_iter().skip(n.max(0) as usize).collect())
}

fn take_drop_while(fname: &str, it: &mut Interp, a: &mut [Value], take: bool) -> EvalResult {
    expect_callable(fname, &a[0])?;
    let items = ordered_items(fname, &a[1])?;
    let mut n = 0;
    for x in &items {
        if !call1(it, &a[0], x.clone())?.truthy() {
            break;
        }
        n += 1;
    }
    let mut items = items;
    Ok(Value::vector(if take {
        items.truncate(n);
        items
    } else {
        items.split_off(n)
    }))
}

fn take_while(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    take_drop_while("take-while", it, a, true)
}

fn drop_while(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    take_drop_while("drop-while", it, a, false)
}

fn distinct(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let items = ordered_items("distinct", &a[0])?;
    // the set of seen elements and the output, each up to the input's size
    it.reserve(items.len().saturating_mul(SET_ITEM_BYTES + 16))?;
    let mut seen = ValueSet::default();
    let mut out = Vec::new();
    for x in items {
        it.charge(1)?;
        if seen.insert(x.clone()) {
            out.push(x);
        }
    }
    vec_of(out)
}

fn reverse(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let mut items = ordered_items("reverse", &a[0])?;
    items.reverse();
    vec_of(items)
}

/// A comparator argument: `:asc`, `:desc`, or a two-argument callable (§7.2).
pub(super) enum Comparator {
    Asc,
    Desc,
    Func(Value),
}

pub(super) fn comparator(fname: &str, v: &Value) -> Result<Comparator, Error> {
    match v {
        Value::Keyword(k) if k.as_str() == "asc" => Ok(Comparator::Asc),
        Value::Keyword(k) if k.as_str() == "desc" => Ok(Comparator::Desc),
        Value::Keyword(k) => Err(Error::type_err(format!(
            "{fname}: invalid comparator :{k}; use :asc, :desc or a two-argument function"
        ))),
        crate::fn_pat!() | Value::Map(_) | Value::Set(_) => Ok(Comparator::Func(v.clone())),
        other => Err(type_error(
            fname,
            "a comparator (:asc, :desc or a function)",
            other,
        )),
    }
}

/// Applies a comparator; a numeric answer orders by sign, anything else as a "less than" test
/// (truthy: a first; else the swapped call decides).
pub(super) fn compare_with(
    it: &mut Interp,
    c: &Comparator,
    a: &Value,
    b: &Value,
) -> EvalResult<Ordering> {
    match c {
        Comparator::Asc => Ok(natural_cmp(a, b)?),
        Comparator::Desc => Ok(natural_cmp(b, a)?),
        Comparator::Func(f) => {
            let r = call2(it, f, a.clone(), b.clone())?;
            match r {
                Value::Int(i) => Ok(i.cmp(&0)),
                Value::Float(x) => Ok(x.partial_cmp(&0.0).unwrap_or(Ordering::Equal)),
                other if other.truthy() => Ok(Ordering::Less),
                _ => {
                    if call2(it, f, b.clone(), a.clone())?.truthy() {
                        Ok(Ordering::Greater)
                    } else {
                        Ok(Ordering::Equal)
                    }
                }
            }
        }
    }
}

/// Stable sort of `keyed` (key, item) pairs with a fallible comparator.
/// Sorts with a comparator that can fail (a user function raising, the deadline). The first
/// failure ends the sort at once: sorting millions of elements would otherwise go on calling
/// the comparator (which then only says "equal") for as long as a whole sort takes.
fn sort_fallible<T>(
    it: &mut Interp,
    items: &mut [T],
    mut cmp: impl FnMut(&mut Interp, &T, &T) -> EvalResult<Ordering>,
) -> EvalResult<()> {
    struct Stop;
    let mut failure: Option<crate::eval::Flow> = None;
    let sorted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        items.sort_by(|x, y| {
            // every comparison is work: a long sort must notice the deadline
            let r = it.charge(1).and_then(|()| cmp(it, x, y));
            match r {
                Ok(o) => o,
                Err(e) => {
                    failure = Some(e);
                    // slice sorting is panic-safe: the slice keeps all its elements
                    std::panic::resume_unwind(Box::new(Stop))
                }
            }
        })
    }));
    match (sorted, failure) {
        (_, Some(f)) => Err(f),
        (Ok(()), None) => Ok(()),
        (Err(payload), None) => std::panic::resume_unwind(payload),
    }
}

pub(super) fn sort_keyed(
    it: &mut Interp,
    keyed: &mut [(Value, Value)],
    c: &Comparator,
) -> EvalResult<()> {
    // the merge sort's buffer (half the pairs) and the sorted output vector
    it.reserve(guard::values_bytes(keyed.len()) * 2)?;
    sort_fallible(it, keyed, |it, x, y| compare_with(it, c, &x.0, &y.0))
}

fn sort(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (c, coll) = if a.len() == 2 {
        (comparator("sort", &a[0])?, &a[1])
    } else {
        (Comparator::Asc, &a[0])
    };
    let mut items = ordered_items("sort", coll)?;
    // the merge sort's buffer: half the elements
    it.reserve(guard::values_bytes(items.len()) / 2)?;
    sort_fallible(it, &mut items, |it, x, y| compare_with(it, &c, x, y))?;
    vec_of(items)
}

/// A key argument (§7.0): keyword or string (flexible field), vector path, or callable.
pub(super) fn key_of(it: &mut Interp, key: &Value, item: &Value) -> EvalResult {
    match key {
        Value::Keyword(_) | Value::Str(_) => Ok(match item {
            Value::Map(m) => crate::value::flex_get(m, key)
                .cloned()
                .unwrap_or(Value::Nil),
            _ => Value::Nil,
        }),
        Value::Vector(path) => Ok(super::maps::get_path(item, path)),
        Value::Int(i) => Ok(match item {
            Value::Vector(xs) if *i >= 0 => xs.get(*i as usize).cloned().unwrap_or(Value::Nil),
            _ => Value::Nil,
        }),
        f => call1(it, f, item.clone()),
    }
}

pub(super) fn expect_key(fname: &str, key: &Value) -> Result<(), Error> {
    match key {
        Value::Keyword(_)
        | Value::Str(_)
        | Value::Vector(_)
        | crate::fn_pat!()
        | Value::Map(_)
        | Value::Set(_) => Ok(()),
        other => Err(type_error(
            fname,
            "a key (keyword, string, vector path or function)",
            other,
        )),
    }
}

fn sort_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let key = a[0].clone();
    expect_key("sort-by", &key)?;
    let (c, coll) = if a.len() == 3 {
        let last_is_cmp = matches!(a[2], crate::fn_pat!() | Value::Keyword(_));
        let middle_is_coll = matches!(
            a[1],
            Value::Vector(_) | Value::Map(_) | Value::Set(_) | Value::Nil
        );
        if last_is_cmp && middle_is_coll {
            return Err(
                Error::type_err("sort-by: the comparator goes before the collection")
                    .with_hint("(sort-by key cmp coll), e.g. (sort-by :price > items)")
                    .into(),
            );
        }
        (comparator("sort-by", &a[1])?, &a[2])
    } else {
        (Comparator::Asc, &a[1])
    };
    let items: Vec<Value> = match coll {
        Value::Map(m) => m.iter().map(|(k, v)| entry(k, v)).collect(),
        Value::Str(_) if a.len() == 3 => {
            return Err(type_error("sort-by", "a vector or map", coll).into())
        }
        other => ordered_items("sort-by", other)?,
    };
    it.reserve(guard::values_bytes(items.len()) * 2)?;
    let mut keyed = Vec::with_capacity(items.len());
    for x in items {
        keyed.push((key_of(it, &key, &x)?, x));
    }
    sort_keyed(it, &mut keyed, &c)?;
    vec_of(keyed.into_iter().map(|(_, x)| x).collect())
}

fn map_indexed(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn find(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("find", &a[0])?;
    for x in ordered_items("find", &a[1])? {
        if call1(it, &a[0], x.clone())?.truthy() {
            return Ok(x);
        }
    }
    Ok(Value::Nil)
}

fn pluck(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn concat(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn flatten(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn two_vectors(fname: &str, a: &[Value]) -> Result<(Vec<Value>, Vec<Value>), Error> {
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

fn zip(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = two_vectors("zip", a)?;
    alloc_output(it, x.len().min(y.len()), ENTRY_BYTES)?;
    vec_of(
        x.into_iter()
            .zip(y)
            .map(|(p, q)| Value::vector(vec![p, q]))
            .collect(),
    )
}

fn interleave(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = two_vectors("interleave", a)?;
    it.alloc_values(2 * x.len().min(y.len()))?;
    vec_of(x.into_iter().zip(y).flat_map(|(p, q)| [p, q]).collect())
}

fn interpose(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn partition(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn vec_fn(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn set_fn(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

fn some(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("some", &a[0])?;
    for x in ordered_or_set("some", &a[1])? {
        let r = call1(it, &a[0], x)?;
        if r.truthy() {
            return Ok(r);
        }
    }
    Ok(Value::Nil)
}

fn ordered_or_set(fname: &str, v: &Value) -> Result<Vec<Value>, Error> {
    ordered_items(fname, v)
}

fn every(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("every?", &a[0])?;
    for x in ordered_or_set("every?", &a[1])? {
        if !call1(it, &a[0], x)?.truthy() {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn not_any(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    expect_callable("not-any?", &a[0])?;
    for x in ordered_or_set("not-any?", &a[1])? {
        if call1(it, &a[0], x)?.truthy() {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

fn contains(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(match &a[0] {
        Value::Nil => false,
        Value::Map(m) => crate::value::flex_key(m, &a[1]).is_some(),
        Value::Set(s) => s.contains(&a[1]),
        Value::Vector(xs) => xs.iter().any(|x| identical(x, &a[1])),
        Value::Str(_) => {
            return Err(type_error("contains?", "a map, set or vector", &a[0])
                .with_hint("for substrings use (includes? s sub)")
                .into())
        }
        other => return Err(type_error("contains?", "a map, set or vector", other).into()),
    }))
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new("ffirst", 1, 1, ffirst, "(first (first c))"),
    Builtin::new("fnext", 1, 1, fnext, "(first (next c))"),
    Builtin::new("nfirst", 1, 1, nfirst, "(next (first c))"),
    Builtin::new("nnext", 1, 1, nnext, "(next (next c))"),
    Builtin::new(
        "not-empty",
        1,
        1,
        not_empty,
        "The argument if non-empty, else nil.",
    ),
    Builtin::new(
        "seq",
        1,
        1,
        seq,
        "Elements as a vector (characters, members, [k v] entries); nil when empty.",
    ),
    Builtin::new("take", 2, 2, take, "(take n coll): the first n elements."),
    Builtin::new(
        "drop",
        2,
        2,
        drop,
        "(drop n coll): all but the first n elements.",
    ),
    Builtin::new(
        "take-while",
        2,
        2,
        take_while,
        "Longest prefix whose elements satisfy the predicate.",
    ),
    Builtin::new(
        "drop-while",
        2,
        2,
        drop_while,
        "What follows the longest prefix satisfying the predicate.",
    ),
    Builtin::new(
        "distinct",
        1,
        1,
        distinct,
        "Elements without repeats, first occurrence kept.",
    ),
    Builtin::new("reverse", 1, 1, reverse, "Elements in reverse order."),
    Builtin::new(
        "sort",
        1,
        2,
        sort,
        "(sort coll) or (sort cmp coll): stable sort, natural order by default.",
    ),
    Builtin::new(
        "sort-by",
        2,
        3,
        sort_by,
        "(sort-by key coll) or (sort-by key cmp coll); cmp may be :asc, :desc or a function.",
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
    Builtin::new("some", 2, 2, some, "The first truthy (pred x), or nil."),
    Builtin::new(
        "every?",
        2,
        2,
        every,
        "true if pred holds for every element.",
    ),
    Builtin::new(
        "not-any?",
        2,
        2,
        not_any,
        "true if pred holds for no element.",
    ),
    Builtin::new(
        "contains?",
        2,
        2,
        contains,
        "Map: key present; set: member; vector: value present.",
    ),
];
