//! Reading and updating maps with get, assoc, keys and vals (§7.7; the rest of §7.7 and §7.8 is in
//! `maps`).

use super::{type_error, Builtin, VARIADIC};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::{flex_get, Value, VecData};

pub(super) fn get(_: &mut Interp, args: &mut [Value]) -> EvalResult {
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

pub(super) fn assoc(it: &mut Interp, args: &mut [Value]) -> EvalResult {
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

pub(super) fn keys_vals(it: &mut Interp, fname: &str, v: &Value, keys: bool) -> EvalResult {
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

pub(super) fn keys(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    keys_vals(it, "keys", &args[0], true)
}

pub(super) fn vals(it: &mut Interp, args: &mut [Value]) -> EvalResult {
    keys_vals(it, "vals", &args[0], false)
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "get",
        2,
        3,
        get,
        "(get m k) / (get m k default): map key (flexible), vector index or set member.",
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
];
