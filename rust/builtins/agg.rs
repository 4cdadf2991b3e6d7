//! Aggregation over collections of records (§7.5): sums, averages, extremes, grouping.
//! Group and count results keep first-occurrence order.

use std::cmp::Ordering;

use indexmap::map::Entry;

use super::ordering::{expect_key, key_of};
use super::{call1, expect_callable, type_error, Builtin, VARIADIC};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::{natural_cmp, Value, ValueMap, ValueSet};

/// Calls `f` on each element of the collection in place (no copy of it: a copy would touch
/// every record once more), charging one unit each.
fn each_of(
    fname: &str,
    it: &mut Interp,
    v: &Value,
    mut f: impl FnMut(&mut Interp, Value) -> EvalResult<()>,
) -> EvalResult<()> {
    if let Value::Map(_) = v {
        return Err(type_error(fname, "a vector of maps", v)
            .with_hint("use (vals m) to aggregate a map's values")
            .into());
    }
    super::items::each(fname, v, |x| {
        it.charge(1)?;
        f(it, x)
    })
}

fn sum_values(fname: &str, it: &mut Interp, a: &[Value]) -> EvalResult<(Option<Value>, usize)> {
    let key = &a[0];
    expect_key(fname, key)?;
    let mut int_sum: i64 = 0;
    let mut float_sum: f64 = 0.0;
    let mut is_float = false;
    let mut n = 0usize;
    each_of(fname, it, &a[1], |it, x| {
        let v = key_of(it, key, &x)?;
        match v {
            Value::Nil => return Ok(()),
            Value::Int(i) => {
                if is_float {
                    float_sum += i as f64;
                } else {
                    match int_sum.checked_add(i) {
                        Some(s) => int_sum = s,
                        None => {
                            return Err(Error::arith(format!("integer overflow in {fname}")).into())
                        }
                    }
                }
            }
            Value::Float(f) => {
                if !is_float {
                    is_float = true;
                    float_sum = int_sum as f64;
                }
                float_sum += f;
            }
            other => {
                return Err(Error::type_err(format!(
                    "{fname}: expected numeric values, got {}",
                    other.describe()
                ))
                .with_hint("convert text with parse-long / parse-double first")
                .into())
            }
        }
        n += 1;
        Ok(())
    })?;
    let total = if is_float {
        Value::Float(float_sum)
    } else {
        Value::Int(int_sum)
    };
    Ok((Some(total), n))
}

fn sum_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(sum_values("sum-by", it, a)?.0.unwrap_or(Value::Int(0)))
}

fn avg_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (total, n) = sum_values("avg-by", it, a)?;
    if n == 0 {
        return Ok(Value::Nil);
    }
    let t = match total {
        Some(Value::Int(i)) => i as f64,
        Some(Value::Float(f)) => f,
        _ => 0.0,
    };
    Ok(Value::Float(t / n as f64))
}

fn extreme_by(fname: &str, it: &mut Interp, a: &[Value], want: Ordering) -> EvalResult {
    let key = &a[0];
    expect_key(fname, key)?;
    let mut best: Option<(Value, Value)> = None;
    each_of(fname, it, &a[1], |it, x| {
        let k = key_of(it, key, &x)?;
        if k.is_nil() {
            return Ok(());
        }
        let better = match &best {
            None => true,
            Some((bk, _)) => natural_cmp(&k, bk)? == want,
        };
        if better {
            best = Some((k, x));
        }
        Ok(())
    })?;
    Ok(best.map(|(_, x)| x).unwrap_or(Value::Nil))
}

fn min_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    extreme_by("min-by", it, a, Ordering::Less)
}

fn max_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    extreme_by("max-by", it, a, Ordering::Greater)
}

fn distinct_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let key = a[0].clone();
    expect_key("distinct-by", &key)?;
    let mut seen = ValueSet::default();
    let mut out = Vec::new();
    each_of("distinct-by", it, &a[1], |it, x| {
        if seen.insert(key_of(it, &key, &x)?) {
            out.push(x);
        }
        Ok(())
    })?;
    Ok(Value::vector(out))
}

fn group_by(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let key = a[0].clone();
    expect_key("group-by", &key)?;
    let mut groups = Groups::default();
    let coll = std::mem::take(&mut a[1]);
    if let (Value::Keyword(_), Value::Vector(xs)) = (&key, &coll) {
        // every element lands in one group: at most one group and one slot each
        it.reserve(xs.len().saturating_mul(super::SET_ITEM_BYTES + 16))?;
        for x in crate::value::prefetching(xs) {
            it.charge(1)?;
            let k = crate::eval::keyword_field(&key, x);
            groups.push(k, x.clone());
        }
    } else {
        each_of("group-by", it, &coll, |it, x| {
            let k = key_of(it, &key, &x)?;
            groups.push(k, x);
            Ok(())
        })?;
    }
    Ok(groups.into_value())
}

/// `group-by`'s groups in first-seen order, as plain vectors until done (no shared-vector check
/// per element). The last few string keys are compared by address before hashing: the strings
/// of loaded data are shared, so a field with few values (a status, a tier) rarely hashes.
#[derive(Default)]
struct Groups {
    /// The keys, in order (values filled in at the end: the keys are hashed once).
    keys: ValueMap,
    members: Vec<Vec<Value>>,
    /// (address of a key held by `keys`, whether a keyword, its group), most recent first.
    recent: [(usize, bool, usize); 4],
}

impl Groups {
    fn push(&mut self, k: Value, x: Value) {
        let addr = match &k {
            Value::Str(s) | Value::Keyword(s) => {
                Some((s.identity(), matches!(k, Value::Keyword(_))))
            }
            _ => None,
        };
        if let Some((p, kw)) = addr {
            if let Some(&(_, _, i)) = self.recent.iter().find(|r| r.0 == p && r.1 == kw) {
                self.members[i].push(x);
                return;
            }
        }
        let i = match self.keys.entry(k) {
            Entry::Occupied(e) => e.index(),
            Entry::Vacant(e) => {
                let i = e.index();
                e.insert(Value::Nil);
                self.members.push(Vec::new());
                i
            }
        };
        self.members[i].push(x);
        // remember the address of the key the map holds (a key only looked up may be freed),
        // once: equal strings at other addresses would otherwise fill every slot with it
        if let (Some((_, kw)), Some((Value::Str(s) | Value::Keyword(s), _))) =
            (addr, self.keys.get_index(i))
        {
            let held = s.identity();
            if !self.recent.iter().any(|r| r.0 == held && r.1 == kw) {
                self.recent.rotate_right(1);
                self.recent[0] = (held, kw, i);
            }
        }
    }

    fn into_value(mut self) -> Value {
        for (slot, members) in self.keys.values_mut().zip(self.members) {
            *slot = Value::vector(members);
        }
        Value::map(self.keys)
    }
}

fn frequencies(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let mut counts: ValueMap = ValueMap::default();
    let items = super::items::ordered_items("frequencies", &a[0])?;
    for x in items {
        it.charge(1)?;
        match counts.entry(x) {
            Entry::Occupied(mut e) => {
                if let Value::Int(n) = e.get_mut() {
                    *n += 1;
                }
            }
            Entry::Vacant(e) => {
                e.insert(Value::Int(1));
            }
        }
    }
    Ok(Value::map(counts))
}

fn extreme_key(fname: &str, it: &mut Interp, a: &mut [Value], want: Ordering) -> EvalResult {
    let f = a[0].clone();
    expect_callable(fname, &f)?;
    let mut best: Option<(Value, usize)> = None;
    for (i, x) in a.iter().enumerate().skip(1) {
        let k = call1(it, &f, x.clone())?;
        let better = match &best {
            None => true,
            Some((bk, _)) => natural_cmp(&k, bk)? == want,
        };
        if better {
            best = Some((k, i));
        }
    }
    Ok(best
        .map(|(_, i)| std::mem::take(&mut a[i]))
        .unwrap_or(Value::Nil))
}

fn max_key(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    extreme_key("max-key", it, a, Ordering::Greater)
}

fn min_key(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    extreme_key("min-key", it, a, Ordering::Less)
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "sum-by",
        2,
        2,
        sum_by,
        "(sum-by :k coll): sum of the non-nil key values.",
    ),
    Builtin::new(
        "avg-by",
        2,
        2,
        avg_by,
        "(avg-by :k coll): mean of the non-nil key values (float), nil if none.",
    ),
    Builtin::new(
        "min-by",
        2,
        2,
        min_by,
        "(min-by :k coll): the element with the least key.",
    ),
    Builtin::new(
        "max-by",
        2,
        2,
        max_by,
        "(max-by :k coll): the element with the greatest key.",
    ),
    Builtin::new(
        "distinct-by",
        2,
        2,
        distinct_by,
        "Elements whose key was not seen before.",
    ),
    Builtin::new(
        "group-by",
        2,
        2,
        group_by,
        "Map of key value -> vector of elements, first-occurrence order.",
    ),
    Builtin::new(
        "frequencies",
        1,
        1,
        frequencies,
        "Map of element -> count, first-occurrence order.",
    ),
    Builtin::new(
        "max-key",
        2,
        VARIADIC,
        max_key,
        "(max-key f a b ...): the argument with the greatest (f x).",
    ),
    Builtin::new(
        "min-key",
        2,
        VARIADIC,
        min_key,
        "(min-key f a b ...): the argument with the least (f x).",
    ),
];
