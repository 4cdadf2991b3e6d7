//! Subsequences and ordering (§7.2): take, drop, distinct, reverse, sort, sort-by and comparators.

use std::cmp::Ordering;

use super::items::{entry, ordered_items, vec_of};
use super::{call1, call2, expect_callable, type_error, Builtin, SET_ITEM_BYTES};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::guard;
use crate::value::{natural_cmp, Value, ValueSet};

pub(super) fn count_arg(fname: &str, v: &Value) -> Result<i64, Error> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(type_error(fname, "an integer count", other)),
    }
}

pub(super) fn take(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let n = count_arg("take", &a[0])?;
    let items = ordered_items("take", &a[1])?;
    vec_of(items.into_iter().take(n.max(0) as usize).collect())
}

pub(super) fn drop(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let n = count_arg("drop", &a[0])?;
    let items = ordered_items("drop", &a[1])?;
    vec_of(items.into_iter().skip(n.max(0) as usize).collect())
}

pub(super) fn take_drop_while(
    fname: &str,
    it: &mut Interp,
    a: &mut [Value],
    take: bool,
) -> EvalResult {
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

pub(super) fn take_while(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    take_drop_while("take-while", it, a, true)
}

pub(super) fn drop_while(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    take_drop_while("drop-while", it, a, false)
}

pub(super) fn distinct(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

pub(super) fn reverse(_: &mut Interp, a: &mut [Value]) -> EvalResult {
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
pub(super) fn sort_fallible<T>(
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
        // the standard sort stops when it sees answers that contradict each other (a < b and
        // b < a): the program's comparator is wrong, which is the program's error
        (Err(payload), None) if is_total_order_panic(&*payload) => Err(Error::new(
            crate::error::ErrorKind::Execution,
            "sort: the comparator's answers contradict each other (it says a comes before b \
             and b before a, or depends on more than its two arguments)",
        )
        .with_hint("a comparator answers from its two arguments alone, the same way each time: (compare a b) or (< a b)")
        .into()),
        (Err(payload), None) => std::panic::resume_unwind(payload),
    }
}

/// Whether a panic is the standard sort's "does not implement a total order" check.
fn is_total_order_panic(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    text.contains("total order")
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

pub(super) fn sort(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

pub(super) fn sort_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
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

pub const BUILTINS: &[Builtin] = &[
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
];
