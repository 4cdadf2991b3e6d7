//! The function library: one module per family, all registered in one table. The same table
//! answers name lookups, arity checks, the catalogue test and the prompt's function list.

use std::sync::OnceLock;

use ahash::AHashMap;

use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::{BuiltinId, Value};

mod access;
mod agg;
mod building;
mod catalogue;
mod coll_preds;
mod effects;
mod hof;
mod items;
mod logic;
mod map_access;
mod maps;
mod math;
mod native;
mod ordering;
mod preds;
mod reduce;
mod regex;
mod strings;
mod time;
mod transform;

pub use items::seq_items;
pub use native::call_native;

pub type BuiltinFn = fn(&mut Interp, &mut [Value]) -> EvalResult;

pub const VARIADIC: usize = usize::MAX;

pub struct Builtin {
    pub name: &'static str,
    pub min: usize,
    pub max: usize,
    pub f: BuiltinFn,
    pub doc: &'static str,
    /// Constants (`Double/NaN`) evaluate to this value instead of a function.
    pub constant: Option<fn() -> Value>,
}

impl Builtin {
    pub const fn new(
        name: &'static str,
        min: usize,
        max: usize,
        f: BuiltinFn,
        doc: &'static str,
    ) -> Builtin {
        Builtin {
            name,
            min,
            max,
            f,
            doc,
            constant: None,
        }
    }

    pub fn arity_text(&self) -> String {
        if self.max == VARIADIC {
            format!("{}+", self.min)
        } else if self.min == self.max {
            self.min.to_string()
        } else if self.max == self.min + 1 {
            format!("{} or {}", self.min, self.max)
        } else {
            format!("{} to {}", self.min, self.max)
        }
    }
}

const FAMILIES: &[&[Builtin]] = &[
    // in the order of LANGUAGE.md §7
    access::BUILTINS,
    ordering::BUILTINS,
    transform::BUILTINS,
    building::BUILTINS,
    reduce::BUILTINS,
    agg::BUILTINS,
    coll_preds::BUILTINS,
    map_access::BUILTINS,
    maps::BUILTINS,
    strings::BUILTINS,
    strings::STRING_FNS,
    regex::BUILTINS,
    math::BUILTINS,
    math::MATH_FNS,
    logic::BUILTINS,
    preds::BUILTINS,
    hof::BUILTINS,
    effects::BUILTINS,
    time::BUILTINS,
    // not in the reference: the tools' catalogue of issue 33 (docs/AGENT.md)
    catalogue::BUILTINS,
];

/// How many builtins there are.
const COUNT: usize = {
    let (mut n, mut i) = (0, 0);
    while i < FAMILIES.len() {
        n += FAMILIES[i].len();
        i += 1;
    }
    n
};
const _: () = assert!(COUNT <= u16::MAX as usize);

/// Every builtin in table order, in one array made at compile time: a `BuiltinId` is an index
/// into it, so resolving one is a load.
static ALL: [&Builtin; COUNT] = {
    let mut out = [&FAMILIES[0][0]; COUNT];
    let (mut k, mut i) = (0, 0);
    while i < FAMILIES.len() {
        let mut j = 0;
        while j < FAMILIES[i].len() {
            out[k] = &FAMILIES[i][j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
};

/// What an id no table entry has resolves to (none is ever made: ids come from this table).
static UNKNOWN: Builtin = Builtin::new("unknown", 0, VARIADIC, unknown, "");

fn unknown(_: &mut Interp, _: &mut [Value]) -> EvalResult {
    Err(Error::exec("a builtin id outside the table").into())
}

impl BuiltinId {
    /// The table's entry.
    pub fn get(self) -> &'static Builtin {
        ALL.get(self.index()).copied().unwrap_or(&UNKNOWN)
    }
}

impl std::ops::Deref for BuiltinId {
    type Target = Builtin;
    fn deref(&self) -> &Builtin {
        self.get()
    }
}

fn table() -> &'static AHashMap<&'static str, BuiltinId> {
    static TABLE: OnceLock<AHashMap<&'static str, BuiltinId>> = OnceLock::new();
    TABLE.get_or_init(|| {
        (0..COUNT as u16)
            .map(BuiltinId::new)
            .map(|id| (id.name, id))
            .collect()
    })
}

pub fn lookup(name: &str) -> Option<BuiltinId> {
    table().get(name).copied()
}

/// Every builtin, in table order.
pub fn all() -> impl Iterator<Item = &'static Builtin> {
    ALL.iter().copied()
}

pub fn names() -> impl Iterator<Item = &'static str> {
    all().map(|b| b.name)
}

/// The builtins the system prompt lists as "useful functions", in the order it lists them: the
/// everyday subset an LLM reaches for first (the rest is in the language reference). Every
/// name is a row of the table above (checked by a test).
pub const PROMPT_ESSENTIALS: &[&str] = &[
    "map",
    "filter",
    "remove",
    "reduce",
    "first",
    "last",
    "count",
    "take",
    "drop",
    "sort",
    "sort-by",
    "group-by",
    "frequencies",
    "distinct",
    "keys",
    "vals",
    "assoc",
    "dissoc",
    "update",
    "merge",
    "select-keys",
    "conj",
    "into",
    "concat",
    "range",
    "some",
    "every?",
    "contains?",
    "empty?",
    "str",
    "join",
    "split",
    "split-lines",
    "includes?",
    "upper-case",
    "lower-case",
    "trim",
    "subs",
    "parse-long",
    "parse-double",
    "+",
    "-",
    "*",
    "/",
    "mod",
    "inc",
    "dec",
    "max",
    "min",
    "abs",
    "round",
    "sum-by",
    "avg-by",
    "min-by",
    "max-by",
    "pluck",
];

/// Bytes one new `[k v]` entry vector takes: its slot in the output and its own allocation.
pub const ENTRY_BYTES: usize = 112;
/// Bytes one element of a new set or map takes (entry with its hash, and the index table).
pub const SET_ITEM_BYTES: usize = 40;

/// Checks an output of `n` values before it is built (size limit, memory), and charges it.
pub fn alloc_output(it: &mut Interp, n: usize, bytes_each: usize) -> EvalResult<()> {
    it.check_coll_size(n)?;
    it.reserve(n.saturating_mul(bytes_each))?;
    it.charge(n)
}

// ---- argument helpers shared by the families ----

pub fn type_error(fname: &str, expected: &str, got: &Value) -> Error {
    Error::type_err(format!(
        "{fname} expected {expected}, got {}",
        got.describe()
    ))
}

pub fn expect_int(fname: &str, v: &Value) -> Result<i64, Error> {
    match v {
        Value::Int(i) => Ok(*i),
        other => Err(type_error(fname, "an integer", other)),
    }
}

pub fn expect_str<'v>(fname: &str, v: &'v Value) -> Result<&'v str, Error> {
    match v {
        Value::Str(s) => Ok(s),
        other => Err(type_error(fname, "a string", other)),
    }
}

/// Checks that `v` can be called by a collection builtin (function, keyword, map or set).
pub fn expect_callable(fname: &str, v: &Value) -> Result<(), Error> {
    match v {
        crate::fn_pat!() | Value::Keyword(_) | Value::Map(_) | Value::Set(_) => Ok(()),
        Value::Vector(items) => {
            let mut e = type_error(fname, "a function", v);
            if let Some(Value::Keyword(k)) = items.first() {
                e = e.with_hint(format!("use :{k} instead of [:{k}]"));
            }
            Err(e)
        }
        other => Err(type_error(fname, "a function", other)),
    }
}

/// Calls `f` with one argument.
/// A keyword as the function of a collection builtin yields nil for non-map elements (§7.0).
#[inline]
pub fn call1(it: &mut Interp, f: &Value, a: Value) -> EvalResult {
    if let Value::Keyword(_) = f {
        return Ok(crate::eval::keyword_field(f, &a));
    }
    it.apply(f, &mut [a])
}

#[inline]
pub fn call2(it: &mut Interp, f: &Value, a: Value, b: Value) -> EvalResult {
    it.apply(f, &mut [a, b])
}

#[cfg(test)]
mod prompt_tests {
    #[test]
    fn every_prompt_essential_is_a_builtin() {
        let names: Vec<_> = super::names().collect();
        for n in super::PROMPT_ESSENTIALS {
            assert!(
                names.contains(n),
                "{n} is listed for the prompt but is not a builtin"
            );
        }
    }
}
