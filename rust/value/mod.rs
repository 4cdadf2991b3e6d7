//! The core value type.
//!
//! Collections are shared by reference count and copy-on-write: a run reads input data and
//! earlier definitions in place, and the evaluator moves a local on its last use so that
//! `(conj acc x)` in a loop mutates in place instead of copying. Maps and sets keep insertion
//! order (IndexMap), so printing never leaks hash order.
//!
//! Why one file over 600 lines: the value type and the relations every value has (equality,
//! hashing, ordering, dropping without recursion) are one contract; splitting it would scatter
//! the invariants `Eq` and `Hash` must keep together.

use std::cmp::Ordering;
use std::hash::{Hash, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

use indexmap::{IndexMap, IndexSet};

pub mod dropper;
pub mod map;

use crate::error::{Error, Result};
use crate::guard;

pub type RandomState = ahash::RandomState;

/// Strings, keywords and names: one word (short texts in place, long ones shared), so `Value`
/// stays 16 bytes and evaluation results fit in two registers.
pub use crate::text::Str;

/// Matches any function value (builtin, closure, combinator-built or tool).
#[macro_export]
macro_rules! fn_pat {
    () => {
        $crate::value::Value::Builtin(_)
            | $crate::value::Value::Closure(_)
            | $crate::value::Value::Native(_)
            | $crate::value::Value::Tool(_)
    };
}
const _: () = assert!(std::mem::size_of::<Value>() == guard::VALUE_BYTES);

pub type ValueMap = IndexMap<Value, Value, RandomState>;
pub type ValueSet = IndexSet<Value, RandomState>;

/// `repr(C, u64)`: the tag fills the first word and every payload the second. A value is then
/// written and moved as two whole words: with a one-byte tag the compiler copied bytes 1..7 in
/// pieces that straddled the tag's one-byte store, and each such load stalled on it (store
/// forwarding fails on a partial overlap). The tag's unused values still give `Option<Value>`
/// and `Result<Value, Flow>` their 16-byte niche layout.
#[derive(Default)]
#[repr(C, u64)]
pub enum Value {
    #[default]
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Str),
    Keyword(Str),
    Vector(Shared<VecData>),
    Map(MapData),
    Set(Shared<SetData>),
    Builtin(BuiltinId),
    Closure(Arc<Closure>),
    /// Functions built by builtins (`where`, `juxt`, `fnil`, ...).
    Native(Arc<Native>),
    /// A host tool used as a function value.
    Tool(Str),
    Regex(Arc<RegexValue>),
    Var(Str),
    /// Days since 1970-01-01.
    Date(i32),
    /// Milliseconds since the Unix epoch, UTC.
    DateTime(i64),
}

impl Clone for Value {
    // Written out (not derived) so it inlines: cloning is on every hot path.
    #[inline(always)]
    fn clone(&self) -> Value {
        match self {
            Value::Nil => Value::Nil,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Float(f) => Value::Float(*f),
            Value::Str(s) => Value::Str(s.clone()),
            Value::Keyword(s) => Value::Keyword(s.clone()),
            Value::Vector(v) => Value::Vector(v.clone()),
            Value::Map(m) => Value::Map(m.clone()),
            Value::Set(s) => Value::Set(s.clone()),
            Value::Builtin(b) => Value::Builtin(*b),
            Value::Closure(c) => Value::Closure(c.clone()),
            Value::Native(n) => Value::Native(n.clone()),
            Value::Tool(t) => Value::Tool(t.clone()),
            Value::Regex(r) => Value::Regex(r.clone()),
            Value::Var(v) => Value::Var(v.clone()),
            Value::Date(d) => Value::Date(*d),
            Value::DateTime(d) => Value::DateTime(*d),
        }
    }
}

/// A builtin function, as a value and as a call's target: its place in the evaluator's table.
/// Opaque here, so the value model does not depend on the function library: `crate::builtins`
/// resolves it (`Deref` to the table's entry).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct BuiltinId(u16);

impl BuiltinId {
    /// Only the function library makes ids, one per entry of its table.
    pub(crate) const fn new(index: u16) -> Self {
        BuiltinId(index)
    }
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// Vectors and sets are shared without weak references: a count of one word, so a vector's
/// handle takes 32 bytes (the count and the `Vec`), not `std::sync::Arc`'s 40 (a 48-byte block).
pub type Shared<T> = triomphe::Arc<T>;

/// Vector storage. The newtype exists for its iterative `Drop`: a program can build a value nested
/// a million levels deep, and the default recursive drop would overflow the stack.
#[derive(Clone, Default)]
pub struct VecData(pub Vec<Value>);

pub use map::MapData;

#[derive(Clone, Default)]
pub struct SetData(pub ValueSet);

pub struct RegexValue {
    pub source: String,
    pub regex: crate::regex_search::Pattern,
    /// `^(?:source)$`, compiled on first use by `re-matches`.
    pub anchored: std::sync::OnceLock<crate::regex_search::Pattern>,
}

macro_rules! deref_newtype {
    ($t:ty, $inner:ty) => {
        impl Deref for $t {
            type Target = $inner;
            fn deref(&self) -> &$inner {
                &self.0
            }
        }
        impl DerefMut for $t {
            fn deref_mut(&mut self) -> &mut $inner {
                &mut self.0
            }
        }
    };
}
deref_newtype!(VecData, Vec<Value>);
deref_newtype!(SetData, ValueSet);

/// Drops values with a heap worklist instead of recursion, so dropping any value uses constant
/// stack. The worklist holds iterators over the collections being taken apart (not their
/// elements), so it never allocates more than a few words per nesting level: a drop must not
/// need memory the value did not already have. Each value is looked at in turn: one that this
/// drop holds the last reference to is taken apart, a shared one only loses a reference.
/// Taking values in turn matters for a parent holding the same child twice (`(juxt f f)` in a
/// loop): the first reference is released before the second is looked at, which then is the
/// last one.
pub(crate) fn drop_iteratively(first: Vec<Value>) {
    drain(vec![Pending::Values(first.into_iter())]);
}

/// `drop_iteratively` for a map this holds the last reference to.
pub(crate) fn drop_map_iteratively(m: MapData) {
    if let Some(first) = map_pending(m) {
        drain(vec![first]);
    }
}

/// The values of a map to take apart, if this is its last reference.
fn map_pending(mut m: MapData) -> Option<Pending> {
    if !m.is_unique() {
        return None;
    }
    if m.is_record() {
        // the keys live in the shared shape; only the values can nest
        return Some(Pending::Record(m, 0));
    }
    let entries = kept(&mut m.take_entries()?)?;
    Some(Pending::Pairs(entries.into_iter(), None))
}

/// The contents of a last reference's storage to take apart here, unless they went to the
/// background thread (`dropper`).
fn kept<T: dropper::Contents>(items: &mut T) -> Option<T> {
    (!dropper::release_contents(items)).then(|| std::mem::take(items))
}

fn drain(mut stack: Vec<Pending>) {
    while let Some(top) = stack.last_mut() {
        let next = top.next();
        if top.is_empty() {
            stack.pop(); // before descending: a long chain keeps the worklist one deep
        }
        let Some(v) = next else { continue };
        let pending = match v {
            // large collections go to the background thread when it has room (`dropper`)
            Value::Vector(a) => match Shared::try_unwrap(a).ok().and_then(|mut d| kept(&mut d.0)) {
                Some(items) => Pending::Values(items.into_iter()),
                None => continue,
            },
            Value::Map(a) => match map_pending(a) {
                Some(p) => p,
                None => continue,
            },
            Value::Set(a) => match Shared::try_unwrap(a).ok().and_then(|mut d| kept(&mut d.0)) {
                Some(items) => Pending::Members(items.into_iter()),
                None => continue,
            },
            Value::Closure(a) => match Arc::try_unwrap(a) {
                Ok(mut inner) => {
                    Pending::Values(std::mem::take(&mut inner.captures).into_vec().into_iter())
                }
                Err(_) => continue,
            },
            Value::Native(a) => match Arc::try_unwrap(a) {
                Ok(inner) => {
                    let mut values = Vec::new();
                    inner.into_values(&mut values);
                    Pending::Values(values.into_iter())
                }
                Err(_) => continue,
            },
            _ => continue, // dropped here: it holds nothing that could recurse
        };
        if !pending.is_empty() {
            stack.push(pending);
        }
    }
}

/// A collection being taken apart by `drop_iteratively`.
enum Pending {
    Values(std::vec::IntoIter<Value>),
    /// A map's entries; the value of the entry whose key was just handed out.
    Pairs(indexmap::map::IntoIter<Value, Value>, Option<Value>),
    Members(indexmap::set::IntoIter<Value>),
    /// A record this holds the last reference to, and the next value's index.
    Record(MapData, usize),
}

impl Pending {
    fn next(&mut self) -> Option<Value> {
        match self {
            Pending::Values(it) => {
                // the releases touch records all over the heap: start the loads early
                if let Some(ahead) = it.as_slice().get(PREFETCH_AHEAD) {
                    prefetch(ahead);
                }
                it.next()
            }
            Pending::Pairs(it, held) => match held.take() {
                Some(v) => Some(v),
                None => it.next().map(|(k, v)| {
                    *held = Some(v);
                    k
                }),
            },
            Pending::Members(it) => it.next(),
            Pending::Record(m, i) => {
                let v = m.take_value(*i);
                *i += 1;
                v
            }
        }
    }
    fn is_empty(&self) -> bool {
        match self {
            Pending::Values(it) => it.len() == 0,
            Pending::Pairs(it, held) => it.len() == 0 && held.is_none(),
            Pending::Members(it) => it.len() == 0,
            Pending::Record(m, i) => *i >= m.len(),
        }
    }
}

/// Copy-on-write access for builtins: a shared collection is copied before it is changed, and
/// that copy (as large as the collection) is reserved and charged first.
pub fn unshare_vec(a: &mut Shared<VecData>) -> &mut VecData {
    if Shared::strong_count(a) > 1 {
        guard::charge(a.len());
        guard::reserve(guard::values_bytes(a.len()));
    }
    Shared::make_mut(a)
}

pub fn unshare_map(a: &mut MapData) -> &mut MapData {
    if !a.is_unique() {
        guard::charge(a.len());
        // entries (hash, key, value) and the index table
        guard::reserve(guard::values_bytes(a.len()).saturating_mul(3));
    }
    a // its changing methods copy it first when shared
}

pub fn unshare_set(a: &mut Shared<SetData>) -> &mut SetData {
    if Shared::strong_count(a) > 1 {
        guard::charge(a.len());
        guard::reserve(guard::values_bytes(a.len()).saturating_mul(2));
    }
    Shared::make_mut(a)
}

/// Whether dropping `v` could recurse: a value that holds other values.
pub(crate) fn is_nested(v: &Value) -> bool {
    match v {
        Value::Vector(a) => !a.0.is_empty(),
        Value::Map(a) => !a.is_empty(),
        Value::Set(a) => !a.0.is_empty(),
        Value::Closure(a) => !a.captures.is_empty(),
        Value::Native(_) => true,
        _ => false,
    }
}

impl Drop for VecData {
    fn drop(&mut self) {
        if dropper::release_contents(&mut self.0) {
            return;
        }
        if self.0.iter().any(is_nested) {
            drop_iteratively(std::mem::take(&mut self.0));
        }
    }
}

impl Drop for SetData {
    fn drop(&mut self) {
        if dropper::release_contents(&mut self.0) {
            return;
        }
        if self.0.iter().any(is_nested) {
            let s = std::mem::take(&mut self.0);
            drop_iteratively(vec![Value::Set(Shared::new(SetData(s)))]);
        }
    }
}

/// What a closure runs: the evaluator's compiled function (`crate::ir::Lambda`), opaque here so
/// the value model does not depend on the evaluator; `Closure::lambda` (in `crate::ir`) gives it
/// back.
pub trait Code: std::any::Any + Send + Sync {
    /// The parameters as written (`x y & more`), for the label `#fn[x y & more]`.
    fn params_text(&self) -> String;
}

pub struct Closure {
    /// Private: `code_ptr` and `code_type` describe it (`Closure::code` reads it).
    code: Arc<dyn Code>,
    /// `code`'s data and concrete type, read once when the closure is made: a call finds its
    /// function without a virtual call or the `dyn` pointer's offset (`Closure::code_as`).
    code_ptr: *const (),
    code_type: std::any::TypeId,
    pub captures: Box<[Value]>,
    /// The type of the last value this function returned (packed `TypeTag`), for host summaries.
    pub last_return: AtomicU64,
}

impl Drop for Closure {
    fn drop(&mut self) {
        if self.captures.iter().any(is_nested) {
            drop_iteratively(std::mem::take(&mut self.captures).into_vec());
        }
    }
}

impl Drop for Native {
    fn drop(&mut self) {
        let nested = match &*self {
            Native::Where { path, value, .. } => path.iter().any(is_nested) || is_nested(value),
            Native::AllOf(v) | Native::AnyOf(v) | Native::NoneOf(v) | Native::Juxt(v) => {
                v.iter().any(is_nested)
            }
            Native::Fnil(f, d) => is_nested(f) || is_nested(d),
        };
        if nested {
            let mut stack = Vec::new();
            self.take_values(&mut stack);
            drop_iteratively(stack);
        }
    }
}

impl Native {
    /// Moves the values this function holds into `out` (leaving it empty).
    fn take_values(&mut self, out: &mut Vec<Value>) {
        match self {
            Native::Where { path, value, .. } => {
                out.append(path);
                out.push(std::mem::take(value));
            }
            Native::AllOf(v) | Native::AnyOf(v) | Native::NoneOf(v) | Native::Juxt(v) => {
                out.append(v)
            }
            Native::Fnil(f, d) => {
                out.push(std::mem::take(f));
                out.push(std::mem::take(d));
            }
        }
    }
    fn into_values(mut self, out: &mut Vec<Value>) {
        self.take_values(out);
    }
}

// SAFETY: `code_ptr` points into `code`, which is `Send + Sync` and lives as long as the closure.
unsafe impl Send for Closure {}
// SAFETY: as above.
unsafe impl Sync for Closure {}

impl Closure {
    pub fn new<C: Code>(code: Arc<C>, captures: Box<[Value]>) -> Self {
        Closure {
            code_ptr: Arc::as_ptr(&code).cast(),
            code_type: std::any::TypeId::of::<C>(),
            code,
            captures,
            last_return: AtomicU64::new(0),
        }
    }
    pub fn code(&self) -> &dyn Code {
        &*self.code
    }
    /// The code as the `C` it was made from; `None` for another type.
    #[inline]
    pub fn code_as<C: Code>(&self) -> Option<&C> {
        // SAFETY: `code_ptr` is the data of the `Arc` in `code`, alive while `self` is, and a
        // `C` when the type recorded at construction is `C`'s.
        (self.code_type == std::any::TypeId::of::<C>())
            .then(|| unsafe { &*self.code_ptr.cast::<C>() })
    }
    pub fn record_return(&self, tag: TypeTag) {
        self.last_return.store(tag.pack(), AtomicOrdering::Relaxed);
    }
    pub fn return_label(&self) -> Option<String> {
        TypeTag::unpack(self.last_return.load(AtomicOrdering::Relaxed)).map(|t| t.label())
    }
}

/// Function values built by builtins (predicate builders, combinators).
pub enum Native {
    Where {
        path: Vec<Value>,
        op: WhereOp,
        value: Value,
    },
    AllOf(Vec<Value>),
    AnyOf(Vec<Value>),
    NoneOf(Vec<Value>),
    Juxt(Vec<Value>),
    Fnil(Value, Value),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhereOp {
    Truthy,
    Eq,
    NotEq,
    Gt,
    Lt,
    Ge,
    Le,
    In,
    Includes,
}

/// A compact description of a value's type, cheap enough to record on every function return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeTag {
    Nil,
    Bool,
    Int,
    Float,
    Str,
    Keyword,
    List(u64),
    Map(u64),
    Set(u64),
    Fn,
    Regex,
    Var,
    Date,
    DateTime,
}

impl TypeTag {
    pub fn of(v: &Value) -> TypeTag {
        match v {
            Value::Nil => TypeTag::Nil,
            Value::Bool(_) => TypeTag::Bool,
            Value::Int(_) => TypeTag::Int,
            Value::Float(_) => TypeTag::Float,
            Value::Str(_) => TypeTag::Str,
            Value::Keyword(_) => TypeTag::Keyword,
            Value::Vector(v) => TypeTag::List(v.len() as u64),
            Value::Map(m) => TypeTag::Map(m.len() as u64),
            Value::Set(s) => TypeTag::Set(s.len() as u64),
            fn_pat!() => TypeTag::Fn,
            Value::Regex(_) => TypeTag::Regex,
            Value::Var(_) => TypeTag::Var,
            Value::Date(_) => TypeTag::Date,
            Value::DateTime(_) => TypeTag::DateTime,
        }
    }
    fn pack(self) -> u64 {
        const LEN: u64 = (1 << 56) - 1;
        let (tag, n) = match self {
            TypeTag::Nil => (1, 0),
            TypeTag::Bool => (2, 0),
            TypeTag::Int => (3, 0),
            TypeTag::Float => (4, 0),
            TypeTag::Str => (5, 0),
            TypeTag::Keyword => (6, 0),
            TypeTag::List(n) => (7, n.min(LEN)),
            TypeTag::Map(n) => (8, n.min(LEN)),
            TypeTag::Set(n) => (9, n.min(LEN)),
            TypeTag::Fn => (10, 0),
            TypeTag::Regex => (11, 0),
            TypeTag::Var => (12, 0),
            TypeTag::Date => (13, 0),
            TypeTag::DateTime => (14, 0),
        };
        (tag << 56) | n
    }
    fn unpack(p: u64) -> Option<TypeTag> {
        let n = p & ((1 << 56) - 1);
        Some(match p >> 56 {
            1 => TypeTag::Nil,
            2 => TypeTag::Bool,
            3 => TypeTag::Int,
            4 => TypeTag::Float,
            5 => TypeTag::Str,
            6 => TypeTag::Keyword,
            7 => TypeTag::List(n),
            8 => TypeTag::Map(n),
            9 => TypeTag::Set(n),
            10 => TypeTag::Fn,
            11 => TypeTag::Regex,
            12 => TypeTag::Var,
            13 => TypeTag::Date,
            14 => TypeTag::DateTime,
            _ => return None,
        })
    }
    pub fn label(self) -> String {
        match self {
            TypeTag::Nil => "nil".into(),
            TypeTag::Bool => "boolean".into(),
            TypeTag::Int => "integer".into(),
            TypeTag::Float => "float".into(),
            TypeTag::Str => "string".into(),
            TypeTag::Keyword => "keyword".into(),
            TypeTag::List(n) => format!("list[{n}]"),
            TypeTag::Map(n) => format!("map[{n}]"),
            TypeTag::Set(n) => format!("set[{n}]"),
            TypeTag::Fn => "#fn[...]".into(),
            TypeTag::Regex => "regex".into(),
            TypeTag::Var => "var".into(),
            TypeTag::Date => "date".into(),
            TypeTag::DateTime => "datetime".into(),
        }
    }
}

impl Value {
    pub fn str(s: &str) -> Value {
        Value::Str(Str::from(s))
    }
    pub fn string(s: String) -> Value {
        Value::Str(Str::from(s))
    }
    pub fn kw(s: &str) -> Value {
        Value::Keyword(intern_keyword(s))
    }
    pub fn vector(items: Vec<Value>) -> Value {
        Value::Vector(Shared::new(VecData(items)))
    }
    pub fn map(m: ValueMap) -> Value {
        Value::Map(MapData::from(m))
    }
    pub fn set(s: ValueSet) -> Value {
        Value::Set(Shared::new(SetData(s)))
    }
    pub fn empty_map() -> Value {
        Value::map(ValueMap::default())
    }

    pub fn truthy(&self) -> bool {
        !matches!(self, Value::Nil | Value::Bool(false))
    }
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// A one-word category used in error messages ("expected a number, got string").
    pub fn kind_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Keyword(_) => "keyword",
            Value::Vector(_) => "vector",
            Value::Map(_) => "map",
            Value::Set(_) => "set",
            fn_pat!() => "function",
            Value::Regex(_) => "regex",
            Value::Var(_) => "var",
            Value::Date(_) => "date",
            Value::DateTime(_) => "date-time",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Length of a counted collection (vector, map, set), if this is one.
    pub fn coll_len(&self) -> Option<usize> {
        match self {
            Value::Vector(v) => Some(v.len()),
            Value::Map(m) => Some(m.len()),
            Value::Set(s) => Some(s.len()),
            _ => None,
        }
    }
}

// ---- identity equality and hashing (map keys, sets, distinct, frequencies; §4.3) ----

fn norm_float_bits(f: f64) -> u64 {
    if f == 0.0 {
        0
    } else if f.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        f.to_bits()
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        identical(self, other)
    }
}
impl Eq for Value {}

/// Identity equality: like `=` except that integers and floats are never equal.
pub fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => norm_float_bits(*x) == norm_float_bits(*y),
        (Value::Str(x), Value::Str(y)) | (Value::Keyword(x), Value::Keyword(y)) => {
            Str::ptr_eq(x, y) || x == y
        }
        (Value::Vector(_), Value::Vector(_))
        | (Value::Map(_), Value::Map(_))
        | (Value::Set(_), Value::Set(_)) => guard::deeper(|| identical_coll(a, b)),
        (Value::Builtin(x), Value::Builtin(y)) => x == y,
        (Value::Closure(x), Value::Closure(y)) => Arc::ptr_eq(x, y),
        (Value::Native(x), Value::Native(y)) => Arc::ptr_eq(x, y),
        (Value::Tool(x), Value::Tool(y)) => x == y,
        (Value::Regex(x), Value::Regex(y)) => x.source == y.source,
        (Value::Var(x), Value::Var(y)) => x == y,
        (Value::Date(x), Value::Date(y)) => x == y,
        (Value::DateTime(x), Value::DateTime(y)) => x == y,
        _ => false,
    }
}

/// Collections compared element by element: charged to the run, since shared structure can
/// make the walk far longer than the values' size in memory.
fn identical_coll(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Vector(x), Value::Vector(y)) => {
            Shared::ptr_eq(x, y)
                || (x.len() == y.len()
                    && guard::charged(x.iter().zip(y.iter())).all(|(p, q)| identical(p, q)))
        }
        (Value::Map(x), Value::Map(y)) => {
            MapData::ptr_eq(x, y)
                || (x.len() == y.len()
                    && guard::charged(x.iter())
                        .all(|(k, v)| y.get(k).is_some_and(|w| identical(v, w))))
        }
        (Value::Set(x), Value::Set(y)) => {
            Shared::ptr_eq(x, y)
                || (x.len() == y.len() && guard::charged(x.iter()).all(|k| y.contains(k)))
        }
        _ => false,
    }
}

fn hash_one(v: &Value) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

impl Hash for Value {
    fn hash<H: Hasher>(&self, state: &mut H) {
        guard::deeper(|| match self {
            Value::Nil => state.write_u8(0),
            Value::Bool(b) => {
                state.write_u8(1);
                b.hash(state)
            }
            Value::Int(i) => {
                state.write_u8(2);
                i.hash(state)
            }
            Value::Float(f) => {
                state.write_u8(3);
                norm_float_bits(*f).hash(state)
            }
            Value::Str(s) => {
                state.write_u8(4);
                s.hash(state)
            }
            Value::Keyword(s) => {
                state.write_u8(5);
                s.hash(state)
            }
            Value::Vector(v) => {
                state.write_u8(6);
                state.write_usize(v.len());
                for x in guard::charged(v.iter()) {
                    x.hash(state);
                }
            }
            Value::Map(m) => {
                // Order-independent, because map equality ignores order.
                state.write_u8(7);
                let mut acc: u64 = 0;
                for (k, v) in guard::charged(m.iter()) {
                    acc = acc.wrapping_add(hash_one(k).rotate_left(17) ^ hash_one(v));
                }
                state.write_u64(acc);
            }
            Value::Set(s) => {
                state.write_u8(8);
                let mut acc: u64 = 0;
                for k in guard::charged(s.iter()) {
                    acc = acc.wrapping_add(hash_one(k));
                }
                state.write_u64(acc);
            }
            Value::Builtin(b) => {
                state.write_u8(9);
                b.hash(state)
            }
            Value::Closure(c) => {
                state.write_u8(9);
                (Arc::as_ptr(c) as usize).hash(state)
            }
            Value::Native(n) => {
                state.write_u8(9);
                (Arc::as_ptr(n) as usize).hash(state)
            }
            Value::Tool(t) => {
                state.write_u8(9);
                t.hash(state)
            }
            Value::Regex(r) => {
                state.write_u8(10);
                r.source.hash(state)
            }
            Value::Var(n) => {
                state.write_u8(11);
                n.hash(state)
            }
            Value::Date(d) => {
                state.write_u8(12);
                d.hash(state)
            }
            Value::DateTime(d) => {
                state.write_u8(13);
                d.hash(state)
            }
        })
    }
}

// ---- structural equality `=` (§4.2) ----

fn int_float_eq(i: i64, f: f64) -> bool {
    f.fract() == 0.0
        && (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f)
        && f as i64 == i
}

pub fn lisp_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Float(y)) | (Value::Float(y), Value::Int(x)) => int_float_eq(*x, *y),
        (Value::Float(x), Value::Float(y)) => x == y,
        (Value::Vector(x), Value::Vector(y)) => {
            Shared::ptr_eq(x, y)
                || (x.len() == y.len()
                    && guard::deeper(|| {
                        guard::charged(x.iter().zip(y.iter())).all(|(p, q)| lisp_eq(p, q))
                    }))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.len() == y.len()
                && guard::deeper(|| {
                    guard::charged(x.iter()).all(|(k, v)| y.get(k).is_some_and(|w| lisp_eq(v, w)))
                })
        }
        _ => identical(a, b),
    }
}

// ---- natural order (§3) ----

pub fn natural_cmp(a: &Value, b: &Value) -> Result<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x.cmp(y)),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => num_cmp(a, b)
            .ok_or_else(|| Error::type_err("cannot compare NaN: NaN is not ordered")),
        (Value::Str(x), Value::Str(y)) => Ok(x.as_str().cmp(y.as_str())),
        (Value::Keyword(x), Value::Keyword(y)) => Ok(x.as_str().cmp(y.as_str())),
        (Value::Bool(x), Value::Bool(y)) => Ok(x.cmp(y)),
        (Value::Vector(x), Value::Vector(y)) => {
            guard::deeper(|| {
                for (p, q) in guard::charged(x.iter().zip(y.iter())) {
                    let o = natural_cmp(p, q)?;
                    if o != Ordering::Equal {
                        return Ok(o);
                    }
                }
                Ok(x.len().cmp(&y.len()))
            })
        }
        _ => Err(Error::type_err(format!(
            "cannot compare {} with {}: only numbers, strings, keywords, booleans and vectors are ordered",
            a.describe(),
            b.describe()
        ))),
    }
}

/// Numeric comparison across ints and floats; `None` when a NaN is involved.
pub fn num_cmp(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Some(x.cmp(y)),
        (Value::Int(x), Value::Float(y)) => cmp_int_float(*x, *y),
        (Value::Float(x), Value::Int(y)) => cmp_int_float(*y, *x).map(Ordering::reverse),
        (Value::Float(x), Value::Float(y)) => x.partial_cmp(y),
        _ => None,
    }
}

fn cmp_int_float(i: i64, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f >= 9.223_372_036_854_776e18 {
        return Some(Ordering::Less);
    }
    if f < -9.223_372_036_854_776e18 {
        return Some(Ordering::Greater);
    }
    let t = f.trunc();
    match i.cmp(&(t as i64)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(f - t)),
        o => Some(o),
    }
}

/// How many elements ahead [`prefetching`] asks for: far enough to hide a memory load behind
/// the work on the elements between, near enough that the line is still cached when reached.
const PREFETCH_AHEAD: usize = 6;

/// The elements of `xs`, asking the CPU to load the allocation of the one a few places ahead:
/// records of large data lie all over the heap, and a loop over them otherwise waits for each
/// load in turn.
///
/// Halfway there, the collections a record holds are asked for too (the record itself has
/// arrived by then): `(:tier (:customer o))` reads a second allocation per element.
#[inline]
pub fn prefetching(xs: &[Value]) -> impl Iterator<Item = &Value> {
    xs.iter().enumerate().map(move |(i, x)| {
        if let Some(ahead) = xs.get(i + PREFETCH_AHEAD) {
            prefetch(ahead);
        }
        if let Some(Value::Map(m)) = xs.get(i + PREFETCH_AHEAD / 2) {
            if let Some((_, vals)) = m.record_parts() {
                vals.iter().take(PREFETCH_FIELDS).for_each(prefetch);
            }
        }
        x
    })
}

/// How many of a record's fields [`prefetching`] looks at for nested collections.
const PREFETCH_FIELDS: usize = 8;

#[inline(always)]
fn prefetch(v: &Value) {
    match v {
        Value::Map(m) => {
            // a record of more than three fields reaches into the next line
            prefetch_lines(m.heap_ptr(), 2);
        }
        Value::Vector(a) => prefetch_lines(Shared::as_ptr(a).cast(), 1),
        _ => {}
    }
}

/// Asks the CPU to load `lines` cache lines from `p` (any address: a prefetch never faults).
#[inline]
pub fn prefetch_lines(p: *const u8, lines: usize) {
    #[cfg(target_arch = "x86_64")]
    for i in 0..lines {
        // SAFETY: a prefetch is a hint: it never faults, whatever the address, and reads
        // nothing the program sees.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * i).cast());
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, lines);
}

/// Flexible key lookup (§4.4): the exact key, then the keyword/string spelling of the same name.
pub fn flex_get<'a>(m: &'a MapData, key: &Value) -> Option<&'a Value> {
    if let Some((shape, vals)) = m.record_parts() {
        let i = shape.position(key).or_else(|| match key {
            Value::Keyword(k) => shape.position(&Value::Str(k.clone())),
            Value::Str(s) => shape.position(&Value::Keyword(s.clone())),
            _ => None,
        });
        return i.map(|i| &vals[i]);
    }
    // Records are small maps: a linear scan (pointer-equal interned keywords first) beats hashing.
    if m.len() <= 8 {
        if let Value::Keyword(k) | Value::Str(k) = key {
            let mut alt = None;
            for (mk, v) in m.iter() {
                match mk {
                    Value::Keyword(x) | Value::Str(x) if Str::ptr_eq(x, k) || x == k => {
                        if std::mem::discriminant(mk) == std::mem::discriminant(key) {
                            return Some(v);
                        }
                        alt.get_or_insert(v);
                    }
                    _ => {}
                }
            }
            return alt;
        }
    }
    if let Some(v) = m.get(key) {
        return Some(v);
    }
    match key {
        Value::Keyword(k) => m.get(&Value::Str(k.clone())),
        Value::Str(s) => m.get(&Value::Keyword(s.clone())),
        _ => None,
    }
}

/// The key actually present under flexible lookup (for write-back in `assoc-in`/`update-in`).
pub fn flex_key(m: &MapData, key: &Value) -> Option<Value> {
    if m.contains_key(key) {
        return Some(key.clone());
    }
    let alt = match key {
        Value::Keyword(k) => Value::Str(k.clone()),
        Value::Str(s) => Value::Keyword(s.clone()),
        _ => return None,
    };
    if m.contains_key(&alt) {
        Some(alt)
    } else {
        None
    }
}

/// Interns keyword names process-wide, so equal keywords usually share one allocation and
/// compare by pointer. Bounded: past the cap, names are simply not interned.
pub fn intern_keyword(s: &str) -> Str {
    use std::sync::{Mutex, OnceLock};
    if s.len() <= crate::text::INLINE_MAX {
        return Str::from(s); // held in place: equal by identity already
    }
    static TABLE: OnceLock<Mutex<ahash::AHashSet<Str>>> = OnceLock::new();
    const CAP: usize = 200_000;
    let table = TABLE.get_or_init(|| Mutex::new(ahash::AHashSet::new()));
    let mut t = table.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(k) = t.get(s) {
        return k.clone();
    }
    let k: Str = Str::from(s);
    if t.len() < CAP {
        t.insert(k.clone());
    }
    k
}

/// Whether `s` is valid keyword text (§2.6): ASCII letters, digits, `-`, `_`, `?`, `!`.
pub fn is_keyword_text(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'?' | b'!'))
}

#[cfg(test)]
mod closure_tests {
    use super::*;

    struct Square(u64);
    struct Other;
    impl Code for Square {
        fn params_text(&self) -> String {
            format!("x{}", self.0)
        }
    }
    impl Code for Other {
        fn params_text(&self) -> String {
            String::new()
        }
    }

    #[test]
    fn code_as_gives_the_code_back_as_the_type_it_was_made_from() {
        let c = Closure::new(Arc::new(Square(7)), Box::new([]));
        assert_eq!(c.code_as::<Square>().map(|s| s.0), Some(7));
        assert!(c.code_as::<Other>().is_none());
        assert_eq!(c.code().params_text(), "x7");
    }

    #[test]
    fn code_as_reads_the_shared_code_while_other_owners_come_and_go() {
        let code = Arc::new(Square(3));
        let c = Arc::new(Closure::new(
            code.clone(),
            vec![Value::Int(1)].into_boxed_slice(),
        ));
        drop(code); // the closure's own reference keeps it
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let c = c.clone();
                std::thread::spawn(move || c.code_as::<Square>().map(|s| s.0))
            })
            .collect();
        for h in handles {
            assert_eq!(h.join().unwrap(), Some(3));
        }
        assert_eq!(Arc::strong_count(&c), 1);
    }
}
