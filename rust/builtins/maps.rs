//! Maps and sets (§7.7, §7.8). Reads are flexible (keyword/string spellings); writes use the
//! exact key, except that path updates write back under the key they found.

use super::items::entry;
use super::{call1, type_error, Builtin, VARIADIC};
use crate::error::{Error, ErrorKind};
use crate::eval::{EvalResult, Interp};
use crate::value::{flex_get, flex_key, Value, ValueMap, ValueSet};

/// `get-in` semantics for one path: maps flexibly, vectors by non-negative index, else nil.
pub(super) fn get_path(v: &Value, path: &[Value]) -> Value {
    let mut cur = v;
    for k in path {
        cur = match (cur, k) {
            (Value::Map(m), _) => match flex_get(m, k) {
                Some(x) => x,
                None => return Value::Nil,
            },
            (Value::Vector(xs), Value::Int(i)) if *i >= 0 => match xs.get(*i as usize) {
                Some(x) => x,
                None => return Value::Nil,
            },
            _ => return Value::Nil,
        };
    }
    cur.clone()
}

fn get_in(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let r = match &a[1] {
        Value::Vector(path) => get_path(&a[0], path),
        _ => Value::Nil,
    };
    Ok(match (r, a.get(2)) {
        (Value::Nil, Some(d)) => d.clone(),
        (r, _) => r,
    })
}

fn path_of<'v>(fname: &str, v: &'v Value) -> Result<&'v [Value], Error> {
    match v {
        Value::Vector(p) => Ok(p),
        other => Err(type_error(fname, "a vector path", other)),
    }
}

/// Rewrites the value at `path` inside `root` with `f(old)`, creating maps for missing keys
/// and nil values. Vectors accept an index up to their length (`assoc-in`) or below it.
fn update_path(
    fname: &str,
    it: &mut Interp,
    root: Value,
    path: &[Value],
    allow_append: bool,
    f: &mut dyn FnMut(&mut Interp, Value) -> EvalResult,
) -> EvalResult {
    let Some((k, rest)) = path.split_first() else {
        return f(it, root);
    };
    // one level per path element: paths as long as the program likes must not overflow
    it.charge(1)?;
    crate::guard::deeper(|| update_level(fname, it, root, k, rest, allow_append, f))
}

fn update_level(
    fname: &str,
    it: &mut Interp,
    root: Value,
    k: &Value,
    rest: &[Value],
    allow_append: bool,
    f: &mut dyn FnMut(&mut Interp, Value) -> EvalResult,
) -> EvalResult {
    match root {
        Value::Nil => {
            let inner = update_path(fname, it, Value::Nil, rest, allow_append, f)?;
            let mut m = ValueMap::default();
            m.insert(k.clone(), inner);
            Ok(Value::map(m))
        }
        Value::Map(mut m) => {
            let key = flex_key(&m, k).unwrap_or_else(|| k.clone());
            let old = crate::value::unshare_map(&mut m)
                .get_mut(&key)
                .map(std::mem::take)
                .unwrap_or(Value::Nil);
            let inner = update_path(fname, it, old, rest, allow_append, f)?;
            it.check_coll_size(m.len() + 1)?;
            crate::value::unshare_map(&mut m).insert(key, inner);
            Ok(Value::Map(m))
        }
        Value::Vector(mut xs) => {
            let len = xs.len();
            let i = match k {
                Value::Int(i)
                    if *i >= 0 && ((*i as usize) < len || (allow_append && *i as usize == len)) =>
                {
                    *i as usize
                }
                Value::Int(i) => {
                    return Err(Error::exec(format!(
                        "{fname}: index {i} out of bounds for vector of length {len}"
                    ))
                    .into())
                }
                other => {
                    return Err(Error::exec(format!(
                        "{fname}: a vector is indexed by integers, got {}",
                        other.describe()
                    ))
                    .into())
                }
            };
            let v = crate::value::unshare_vec(&mut xs);
            let old = if i < v.len() {
                std::mem::take(&mut v[i])
            } else {
                Value::Nil
            };
            let inner = update_path(fname, it, old, rest, allow_append, f)?;
            let v = crate::value::unshare_vec(&mut xs);
            if i < v.len() {
                v[i] = inner;
            } else {
                v.push(inner);
            }
            Ok(Value::Vector(xs))
        }
        other => Err(Error::exec(format!(
            "{fname}: cannot step into {} with key {}",
            other.describe(),
            k.describe()
        ))
        .into()),
    }
}

fn assoc_in(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let path = path_of("assoc-in", &a[1])?.to_vec();
    let root = std::mem::take(&mut a[0]);
    let mut val = Some(std::mem::take(&mut a[2]));
    update_path("assoc-in", it, root, &path, true, &mut |_, _| {
        Ok(val.take().unwrap_or(Value::Nil))
    })
}

/// Calls the update function with `old` and the extra arguments, explaining the common mistake
/// of passing a default value.
fn call_updater(
    it: &mut Interp,
    fname: &str,
    f: &Value,
    old: Value,
    extra: &[Value],
) -> EvalResult {
    let mut args: Vec<Value> = Vec::with_capacity(1 + extra.len());
    args.push(old);
    args.extend(extra.iter().cloned());
    match it.apply(f, &mut args) {
        Err(mut f) => {
            if let Some(e) = f.error_mut() {
                if e.kind == ErrorKind::Arity && !extra.is_empty() {
                    e.hint = Some(format!(
                        "{fname} passes extra arguments to the function; for a default value use fnil, e.g. ({fname} m k (fnil inc 0))"
                    ));
                }
            }
            Err(f)
        }
        ok => ok,
    }
}

fn update(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let f = a[2].clone();
    let extra: Vec<Value> = a[3..].to_vec();
    let k = a[1].clone();
    let root = match std::mem::take(&mut a[0]) {
        Value::Nil => Value::empty_map(),
        other => other,
    };
    match root {
        Value::Map(mut m) => {
            let old = crate::value::unshare_map(&mut m)
                .get_mut(&k)
                .map(std::mem::take)
                .unwrap_or(Value::Nil);
            let new = call_updater(it, "update", &f, old, &extra)?;
            crate::value::unshare_map(&mut m).insert(k, new);
            Ok(Value::Map(m))
        }
        v @ Value::Vector(_) => {
            let path = [k];
            update_path("update", it, v, &path, false, &mut |it, old| {
                call_updater(it, "update", &f, old, &extra)
            })
        }
        other => Err(type_error("update", "a map, vector or nil", &other).into()),
    }
}

fn update_in(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let path = path_of("update-in", &a[1])?.to_vec();
    let f = a[2].clone();
    let extra: Vec<Value> = a[3..].to_vec();
    let root = std::mem::take(&mut a[0]);
    update_path("update-in", it, root, &path, false, &mut |it, old| {
        call_updater(it, "update-in", &f, old, &extra)
    })
}

fn dissoc(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    match std::mem::take(&mut a[0]) {
        Value::Nil => Ok(Value::Nil),
        Value::Map(mut m) => {
            if a[1..].iter().any(|k| m.contains_key(k)) {
                let mm = crate::value::unshare_map(&mut m);
                for k in &a[1..] {
                    mm.hashed_mut().shift_remove(k);
                }
            }
            Ok(Value::Map(m))
        }
        other => Err(type_error("dissoc", "a map", &other).into()),
    }
}

fn merge(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let mut acc: Option<Value> = None;
    for v in a.iter_mut() {
        match std::mem::take(v) {
            Value::Nil => {}
            Value::Map(m) => match &mut acc {
                None => acc = Some(Value::Map(m)),
                Some(Value::Map(base)) => {
                    it.check_coll_size(base.len() + m.len())?;
                    let b = crate::value::unshare_map(base);
                    for (k, x) in m.iter() {
                        b.insert(k.clone(), x.clone());
                    }
                }
                Some(_) => {}
            },
            other => return Err(type_error("merge", "maps", &other).into()),
        }
    }
    Ok(match acc {
        Some(v) => v,
        None if a.is_empty() => Value::empty_map(),
        None => Value::Nil,
    })
}

fn select_keys(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let ks: Vec<Value> = match &a[1] {
        Value::Vector(ks) => ks.to_vec(),
        Value::Set(s) => s.iter().cloned().collect(),
        Value::Nil => Vec::new(),
        other => return Err(type_error("select-keys", "a vector of keys", other).into()),
    };
    let mut out = ValueMap::default();
    match &a[0] {
        Value::Nil => {}
        Value::Map(m) => {
            for k in ks {
                if let Some(v) = flex_get(m, &k) {
                    out.insert(k, v.clone());
                }
            }
        }
        other => return Err(type_error("select-keys", "a map", other).into()),
    }
    Ok(Value::map(out))
}

fn entries(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Nil => Ok(Value::vector(Vec::new())),
        Value::Map(m) => {
            super::alloc_output(it, m.len(), super::ENTRY_BYTES)?;
            let out = crate::guard::charged(m.iter())
                .map(|(k, v)| entry(k, v))
                .collect();
            Ok(Value::vector(out))
        }
        other => Err(type_error("entries", "a map", other).into()),
    }
}

fn pair_part(fname: &str, v: &Value, i: usize) -> EvalResult {
    match v {
        Value::Vector(xs) if xs.len() == 2 => Ok(xs[i].clone()),
        other => Err(type_error(fname, "a map entry (a [key value] vector)", other).into()),
    }
}

fn key_fn(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    pair_part("key", &a[0], 0)
}

fn val_fn(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    pair_part("val", &a[0], 1)
}

fn update_vals(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    if matches!(a[0], crate::fn_pat!()) && matches!(a[1], Value::Map(_)) {
        return Err(
            Error::type_err("update-vals takes the map first: (update-vals m f)")
                .with_hint("with threading use ->, e.g. (-> m (update-vals f))")
                .into(),
        );
    }
    let f = a[1].clone();
    match std::mem::take(&mut a[0]) {
        Value::Nil => Ok(Value::Nil),
        Value::Map(m) => {
            let mut out = ValueMap::with_capacity_and_hasher(m.len(), Default::default());
            for (k, v) in m.iter() {
                out.insert(k.clone(), call1(it, &f, v.clone())?);
            }
            Ok(Value::map(out))
        }
        other => Err(type_error("update-vals", "a map", &other).into()),
    }
}

fn set_arg<'v>(fname: &str, v: &'v Value) -> Result<Option<&'v ValueSet>, Error> {
    match v {
        Value::Set(s) => Ok(Some(s)),
        Value::Nil => Ok(None),
        other => Err(type_error(fname, "sets", other).with_hint("convert a vector with (set v)")),
    }
}

fn union(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let mut total = 0usize;
    for v in a.iter() {
        if let Some(s) = set_arg("union", v)? {
            total = total.saturating_add(s.len());
        }
    }
    it.reserve(total.saturating_mul(super::SET_ITEM_BYTES))?;
    let mut out = ValueSet::default();
    for v in a.iter() {
        if let Some(s) = set_arg("union", v)? {
            out.extend(crate::guard::charged(s.iter()).cloned());
            it.check_coll_size(out.len())?;
        }
    }
    Ok(Value::set(out))
}

fn intersection(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let sets: Vec<Option<&ValueSet>> = a
        .iter()
        .map(|v| set_arg("intersection", v))
        .collect::<Result<_, _>>()?;
    let Some(first) = sets[0] else {
        return Ok(Value::set(ValueSet::default()));
    };
    it.reserve(first.len().saturating_mul(super::SET_ITEM_BYTES))?;
    let out: ValueSet = crate::guard::charged(first.iter())
        .filter(|x| sets[1..].iter().all(|s| s.is_some_and(|s| s.contains(*x))))
        .cloned()
        .collect();
    Ok(Value::set(out))
}

fn difference(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let sets: Vec<Option<&ValueSet>> = a
        .iter()
        .map(|v| set_arg("difference", v))
        .collect::<Result<_, _>>()?;
    let Some(first) = sets[0] else {
        return Ok(Value::set(ValueSet::default()));
    };
    it.reserve(first.len().saturating_mul(super::SET_ITEM_BYTES))?;
    let out: ValueSet = crate::guard::charged(first.iter())
        .filter(|x| !sets[1..].iter().any(|s| s.is_some_and(|s| s.contains(*x))))
        .cloned()
        .collect();
    Ok(Value::set(out))
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "get-in",
        2,
        3,
        get_in,
        "(get-in m [k1 k2] default?): follow a path of keys and indices.",
    ),
    Builtin::new(
        "assoc-in",
        3,
        3,
        assoc_in,
        "(assoc-in m [k1 k2] v): set a value at a path, creating maps.",
    ),
    Builtin::new(
        "update",
        3,
        VARIADIC,
        update,
        "(update m k f & args): store (f old args...) under k.",
    ),
    Builtin::new(
        "update-in",
        3,
        VARIADIC,
        update_in,
        "(update-in m [k1 k2] f & args): update at a path.",
    ),
    Builtin::new(
        "dissoc",
        1,
        VARIADIC,
        dissoc,
        "(dissoc m k ...): the map without those keys.",
    ),
    Builtin::new(
        "merge",
        0,
        VARIADIC,
        merge,
        "Maps merged left to right; later values win.",
    ),
    Builtin::new(
        "select-keys",
        2,
        2,
        select_keys,
        "(select-keys m [k ...]): only the requested keys that are present.",
    ),
    Builtin::new("entries", 1, 1, entries, "[k v] pairs of a map in order."),
    Builtin::new("key", 1, 1, key_fn, "The key of a [k v] entry."),
    Builtin::new("val", 1, 1, val_fn, "The value of a [k v] entry."),
    Builtin::new(
        "update-vals",
        2,
        2,
        update_vals,
        "(update-vals m f): same keys, values (f v).",
    ),
    Builtin::new("union", 0, VARIADIC, union, "All members of the sets."),
    Builtin::new(
        "intersection",
        1,
        VARIADIC,
        intersection,
        "Members present in every set.",
    ),
    Builtin::new(
        "difference",
        1,
        VARIADIC,
        difference,
        "Members of the first set absent from the others.",
    ),
];
