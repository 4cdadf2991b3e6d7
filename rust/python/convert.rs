//! Python <-> core value conversion. Dispatches on exact types first (the common JSON shapes),
//! interns map keys, and builds the error path (`data.orders[3].created`) only when failing.
//!
//! Why one file over 600 lines: both directions share the type dispatch, the budget charges and
//! the error paths, and the two must stay mirror images of each other.

use ahash::AHashMap;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple, PyType,
};
use pyo3::Borrowed;

use crate::text::INLINE_MAX;
#[allow(unused_imports)]
use crate::value::Str;
use std::borrow::Cow;
use std::sync::Arc;

use crate::map::{MapData, Shape, ShapeCache};
use crate::value::{is_keyword_text, Value, ValueMap, ValueSet};
use smallvec::SmallVec;

mod split;
mod tape;

/// Conversions made on two threads so far (`_core._two_thread_conversions`, for the tests).
pub static TWO_THREAD_CONVERSIONS: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(0);

/// Lists split between two threads, items converted in blocks there (by either thread), and
/// those the helper thread converted (`_core._split_conversions`).
pub fn split_conversions() -> (usize, usize, usize) {
    use std::sync::atomic::Ordering::Relaxed;
    (
        split::SPLIT_CONVERSIONS.load(Relaxed),
        split::BLOCK_ITEMS.load(Relaxed),
        split::HELPER_ITEMS.load(Relaxed),
    )
}

pub const MAX_INPUT_DEPTH: usize = 1_000;

const NAN_KEYS: &str = "this dict has more than one NaN key: Python keeps them apart (NaN equals \
                        nothing), here they would be one key and the others lost; use keys that \
                        are not NaN";
const NAN_MEMBERS: &str = "this set has more than one NaN: Python keeps them apart (NaN equals \
                           nothing), here they would be one member and the others lost";
/// Values nested deeper than this are not converted to Python objects (Python itself could
/// not print or compare them without overflowing its recursion limit).
pub const MAX_OUTPUT_DEPTH: usize = 900;

static KEYWORD_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATETIME_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UTC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub fn keyword_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    KEYWORD_TYPE.import(py, "ptc._keyword", "Keyword")
}

enum Seg {
    Key(String),
    Index(usize),
}

pub struct ConvError {
    path: Vec<Seg>,
    message: String,
    /// An exception to raise as it is (Ctrl-C arrived during the conversion).
    raise: Option<PyErr>,
}

impl ConvError {
    fn new(message: impl Into<String>) -> Self {
        ConvError {
            path: Vec::new(),
            message: message.into(),
            raise: None,
        }
    }
    fn raise(e: PyErr) -> Self {
        ConvError {
            path: Vec::new(),
            message: String::new(),
            raise: Some(e),
        }
    }
    fn memory(message: String) -> Self {
        ConvError::raise(pyo3::exceptions::PyMemoryError::new_err(message))
    }
    fn under(mut self, seg: Seg) -> Self {
        self.path.push(seg);
        self
    }
    pub fn into_pyerr(self, root: &str) -> PyErr {
        if let Some(e) = self.raise {
            return e;
        }
        let mut p = root.to_string();
        // a path thousands of levels long says no more than its ends and its length
        let n = self.path.len();
        for (i, seg) in self.path.iter().rev().enumerate() {
            if n > 12 && (4..n - 4).contains(&i) {
                if i == 4 {
                    p.push_str(&format!("...({} levels)...", n - 8));
                }
                continue;
            }
            match seg {
                Seg::Key(k) => {
                    if is_keyword_text(k) && !root.is_empty() {
                        p.push('.');
                        p.push_str(k);
                    } else {
                        p.push_str(&format!("[{k:?}]"));
                    }
                }
                Seg::Index(i) => p.push_str(&format!("[{i}]")),
            }
        }
        if p.is_empty() {
            PyTypeError::new_err(self.message)
        } else {
            PyTypeError::new_err(format!("{p}: {}", self.message))
        }
    }
}

/// An empty map with this thread's hash seeds: making fresh random ones for each of a
/// converter's maps cost more than converting a tool call's arguments.
fn fresh_map<K, V>() -> AHashMap<K, V> {
    thread_local! {
        static SEEDS: ahash::RandomState = ahash::RandomState::new();
    }
    AHashMap::with_hasher(SEEDS.with(Clone::clone))
}

/// A plain scalar (None, a bool, an int that fits, a float) without a converter; `None` for
/// anything else, which takes the general path (and its errors).
pub fn scalar_value(obj: &Bound<'_, PyAny>) -> Option<Value> {
    if obj.is_none() {
        Some(Value::Nil)
    } else if obj.is_exact_instance_of::<PyBool>() {
        Some(Value::Bool(obj.is_truthy().unwrap_or(false)))
    } else if obj.is_exact_instance_of::<PyInt>() {
        obj.extract::<i64>().ok().map(Value::Int)
    } else {
        obj.cast_exact::<PyFloat>()
            .ok()
            .map(|f| Value::Float(f.value()))
    }
}

/// Converts Python data to core values, interning strings used as map keys.
pub struct ToValue<'py> {
    interner: crate::intern::Interner,
    key_objects: AHashMap<usize, Value>,
    /// Long strings already converted, by object: a list holding one big string many times
    /// becomes many references to one core string, not many copies.
    long_strings: AHashMap<usize, Str>,
    kw_type: Bound<'py, PyType>,
    /// Objects converted so far, for the periodic Ctrl-C check.
    seen: usize,
    /// Containers referenced from more than one place, converted once: input that shares
    /// structure (`x = [x, x]` sixty times) converts to the same sharing, not to 2^60 nodes.
    shared: AHashMap<usize, Value>,
    /// Host input is not bounded by a run: it is bounded by the memory the process has left.
    watch: Option<crate::sysmem::Watch>,
    /// The objects the caches above are keyed by (their addresses), kept alive for the whole
    /// conversion: Python code run during it (a set subclass's `__iter__`) may make temporary
    /// objects, whose addresses could otherwise be reused by others.
    pinned: Vec<Bound<'py, PyAny>>,
    /// Record shapes by the key objects of their dicts (all pinned in `key_objects`).
    shapes: ShapeCache,
    /// Short string values by object, for objects referenced from several places (pinned).
    string_objects: AHashMap<usize, Str>,
    /// The containers being converted, outermost first. The walk borrows the objects it
    /// reaches from their parents (a reference count written for each object of a large input
    /// cost a tenth of the conversion); they stay alive as long as no Python code runs.
    ancestors: Vec<usize>,
    /// How many of `ancestors` (from the outermost) are held in `pinned`.
    ancestors_held: usize,
    /// The values of the records being converted, borrowed from their dicts (addresses).
    pending: Vec<usize>,
    /// How many of `pending` (from the first) are held in `pinned`.
    pending_held: usize,
    /// Where the walk writes when another thread builds the values (`convert_input`).
    tape: Option<tape::Tape>,
    /// A run's budget is current (a tool's result): its charges may run Python's signal
    /// handlers, so the walk holds what it borrowed before each.
    polls: bool,
    /// Host input: a large list may be converted by two threads (`split.rs`).
    split: bool,
}

/// Strings at least this long are shared by identity when converted.
pub(super) const LONG_STRING: usize = 256;

/// The error path's segment for a map key.
fn key_seg(key: &Value) -> Seg {
    match key {
        Value::Str(s) | Value::Keyword(s) => Seg::Key(s.to_string()),
        other => Seg::Key(format!("{other:?}")),
    }
}

/// A string converted ([`ToValue::string`]): its value, or a text to copy.
enum Text<'s> {
    Done(Value),
    Copy(Cow<'s, str>),
}

impl<'py> ToValue<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(ToValue {
            interner: Default::default(),
            key_objects: fresh_map(),
            long_strings: fresh_map(),
            kw_type: keyword_type(py)?.clone(),
            seen: 0,
            shared: fresh_map(),
            watch: None,
            pinned: Vec::new(),
            shapes: ShapeCache::default(),
            string_objects: fresh_map(),
            ancestors: Vec::new(),
            ancestors_held: 0,
            pending: Vec::new(),
            pending_held: 0,
            tape: None,
            polls: crate::guard::in_budget(),
            split: false,
        })
    }

    /// A converter for a host's input data (outside any run).
    pub fn for_input(py: Python<'py>) -> PyResult<Self> {
        let mut c = ToValue::new(py)?;
        c.watch = Some(crate::sysmem::Watch::new());
        Ok(c)
    }

    /// Converts a container, once per object when it is referenced from elsewhere too.
    fn container(
        &mut self,
        obj: &Bound<'py, PyAny>,
        convert: impl FnOnce(&mut Self) -> Result<Value, ConvError>,
    ) -> Result<Value, ConvError> {
        // the walk borrows its objects: more than the parent's one reference means shared (an
        // object the slow paths hold for themselves counts as shared too, which only caches it)
        // SAFETY: reading the reference count of a live object while holding the GIL.
        if unsafe { pyo3::ffi::Py_REFCNT(obj.as_ptr()) } <= 1 {
            return self.inside(obj, convert);
        }
        let ptr = obj.as_ptr() as usize;
        if let Some(v) = self.shared.get(&ptr) {
            return Ok(v.clone());
        }
        let v = self.inside(obj, convert)?;
        self.shared.insert(ptr, v.clone());
        self.pinned.push(obj.clone());
        Ok(v)
    }

    /// Converts a container's contents, refusing one that contains itself (a cycle would
    /// otherwise be reported as a thousand levels of nesting). Data is shallow, so the scan
    /// of the containers being converted is short.
    fn inside<T>(
        &mut self,
        obj: &Bound<'py, PyAny>,
        convert: impl FnOnce(&mut Self) -> Result<T, ConvError>,
    ) -> Result<T, ConvError> {
        let ptr = obj.as_ptr() as usize;
        if self.ancestors.contains(&ptr) {
            self.before_python(); // the type's name is asked of Python
            let kind = obj
                .get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "container".into());
            return Err(ConvError::new(format!(
                "this {kind} contains itself (a cycle); data must be a tree, so pass a copy without the back-reference"
            )));
        }
        self.ancestors.push(ptr);
        // a tool's result converts on a worker thread, whose stack is smaller than the main
        // thread's: a nest of 1,000 levels continues on a heap segment when it runs low
        let r = crate::guard::deeper(|| convert(self));
        self.ancestors.pop();
        self.ancestors_held = self.ancestors_held.min(self.ancestors.len());
        r
    }

    /// Before code that may run Python (a signal handler, a subclass's method), which could
    /// change or free what the walk borrowed: the containers being walked and the values of
    /// the records being converted are held from here on (so a record's values convert as
    /// they were when its walk began).
    #[inline(never)]
    fn before_python(&mut self) {
        let py = self.kw_type.py();
        let ancestors = &self.ancestors[self.ancestors_held..];
        let values = &self.pending[self.pending_held..];
        for &p in ancestors.iter().chain(values) {
            // SAFETY: the GIL is held. What is not held yet was borrowed from its live parent
            // after the last moment Python code could run (that moment held everything
            // borrowed then), so it is still alive.
            let held = unsafe { Bound::from_borrowed_ptr(py, p as *mut pyo3::ffi::PyObject) };
            self.pinned.push(held);
        }
        self.ancestors_held = self.ancestors.len();
        self.pending_held = self.pending.len();
    }

    /// A str's text, read from its characters (compact ASCII in place) without a call into
    /// Python, which would cache a UTF-8 copy in the object; Python's conversion only for text
    /// UTF-8 cannot hold, to say what is wrong with it.
    #[inline]
    fn text<'s>(&mut self, s: &'s Bound<'py, PyString>) -> Result<Cow<'s, str>, ConvError> {
        // SAFETY: the GIL is held and `s` is a live str, alive as long as the borrow; no
        // Python code runs while the text is read.
        if let Some(text) = unsafe { split::pure_text(s.as_ptr()) } {
            return Ok(text);
        }
        self.before_python(); // an error is made (and may be collected)
        self.pinned.push(s.clone().into_any());
        s.to_str()
            .map(Cow::Borrowed)
            .map_err(|e| ConvError::new(e.to_string()))
    }

    /// A string value: short ones held in place, shared ones found by object identity.
    fn string_value(&mut self, s: &Bound<'py, PyString>) -> Result<Value, ConvError> {
        Ok(match self.string(s)? {
            Text::Done(v) => v,
            Text::Copy(text) => Value::Str(Str::from(&*text)),
        })
    }

    /// A string's value, or its text when it is a copy to make (the copy is made by the caller:
    /// here, or on the thread that builds the values).
    /// The input holds every object alive for the whole conversion, so pointers are stable.
    fn string<'s>(&mut self, s: &'s Bound<'py, PyString>) -> Result<Text<'s>, ConvError> {
        let mut text = None;
        // SAFETY: the length of a live string object while holding the GIL.
        if unsafe { pyo3::ffi::PyUnicode_GET_LENGTH(s.as_ptr()) } <= INLINE_MAX as isize {
            // maybe short enough to hold in place (its UTF-8 may be longer than its characters)
            let t = self.text(s)?;
            if t.len() <= INLINE_MAX {
                return Ok(Text::Done(Value::Str(Str::from(&*t))));
            }
            text = Some(t);
        }
        // a string object referenced from elsewhere too (a category literal, an interned
        // status) is usually referenced many times: found by its address, not its text (the
        // walk borrows it, so its parent's is the one reference of an unshared string), before
        // its text is read
        // SAFETY: reading the reference count of a live object while holding the GIL.
        let shared = unsafe { pyo3::ffi::Py_REFCNT(s.as_ptr()) } > 1;
        let ptr = s.as_ptr() as usize;
        if shared {
            if let Some(k) = self
                .string_objects
                .get(&ptr)
                .or_else(|| self.long_strings.get(&ptr))
            {
                return Ok(Text::Done(Value::Str(k.clone())));
            }
        }
        let text = match text {
            Some(t) => t,
            None => self.text(s)?,
        };
        if text.len() < LONG_STRING {
            // copied, not interned by text: each Python string is an object of its own already,
            // so the copy keeps memory under the input's, and a lookup in a table of thousands
            // of names cost a fifth of the conversion in cache misses
            if !shared {
                return Ok(Text::Copy(text));
            }
            let k = Str::from(&*text);
            if self.string_objects.len() < 65_536 {
                self.string_objects.insert(ptr, k.clone());
                self.pinned.push(s.clone().into_any());
            }
            return Ok(Text::Done(Value::Str(k)));
        }
        self.reserve(text.len())?;
        let k = Str::from(&*text);
        self.long_strings.insert(ptr, k.clone());
        self.pinned.push(s.clone().into_any());
        Ok(Text::Done(Value::Str(k)))
    }

    /// Every 64K objects: Ctrl-C (the GIL is held, so Python's handler can run) and the run's
    /// budget when converting inside a run (a tool's result).
    #[inline]
    fn tick(&mut self, py: Python<'py>, n: usize) -> Result<(), ConvError> {
        if self.polls {
            self.before_python();
        }
        crate::guard::charge(n);
        self.seen += n;
        if self.seen >= 1 << 16 {
            self.seen = 0;
            self.before_python();
            py.check_signals().map_err(ConvError::raise)?;
        }
        if let Some(w) = &mut self.watch {
            w.check()
                .map_err(|e| ConvError::memory(e.message.clone()))?;
        }
        Ok(())
    }

    /// Before allocating `bytes` at once: room in the process (input, outside a run) or in the
    /// run's budget (a tool's result).
    fn reserve(&mut self, bytes: usize) -> Result<(), ConvError> {
        if let Some(w) = &mut self.watch {
            w.reserve(bytes)
                .map_err(|e| ConvError::memory(e.message.clone()))?;
        }
        crate::guard::reserve(bytes);
        Ok(())
    }

    pub fn convert(&mut self, obj: &Bound<'py, PyAny>) -> Result<Value, ConvError> {
        self.value(obj, 0)
    }

    fn value(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> Result<Value, ConvError> {
        if depth > MAX_INPUT_DEPTH {
            return Err(ConvError::new(format!(
                "nested more than {MAX_INPUT_DEPTH} levels deep"
            )));
        }
        if obj.is_none() {
            return Ok(Value::Nil);
        }
        if let Ok(s) = obj.cast_exact::<PyString>() {
            return self.string_value(s);
        }
        if let Ok(d) = obj.cast_exact::<PyDict>() {
            return self.container(obj, |c| c.dict(d, depth));
        }
        if let Ok(l) = obj.cast_exact::<PyList>() {
            return self.container(obj, |c| {
                if c.splits(l.len()) {
                    return c.split_list(l, depth);
                }
                c.items(l.len(), ListItems { list: l, i: 0 }, depth)
            });
        }
        if obj.is_exact_instance_of::<PyBool>() {
            return Ok(Value::Bool(obj.is_truthy().unwrap_or(false)));
        }
        if obj.is_exact_instance_of::<PyInt>() {
            return self.int(obj);
        }
        if let Ok(f) = obj.cast_exact::<PyFloat>() {
            return Ok(Value::Float(f.value()));
        }
        self.slow(obj, depth)
    }

    /// A list or tuple: a vector, with the index of a failing element in the error path.
    fn items<T: AsBound<'py>>(
        &mut self,
        len: usize,
        mut iter: impl Iterator<Item = T>,
        depth: usize,
    ) -> Result<Value, ConvError> {
        self.tick(self.kw_type.py(), len)?;
        self.reserve(crate::guard::values_bytes(len))?;
        let mut out = Vec::with_capacity(len);
        self.push_items(&mut iter, usize::MAX, depth, &mut out)?;
        Ok(Value::vector(out))
    }

    /// Converts items of a sequence (the next is item `out.len()`) onto `out` until it holds
    /// `to`; `false` when the items ended first.
    fn push_items<T: AsBound<'py>>(
        &mut self,
        iter: &mut impl Iterator<Item = T>,
        to: usize,
        depth: usize,
        out: &mut Vec<Value>,
    ) -> Result<bool, ConvError> {
        while out.len() < to {
            let i = out.len();
            if i % 256 == 255 && iter.size_hint().1 != Some(0) {
                // charged in groups, as `guard::charged` does, while items remain. Before the
                // next item is taken: a signal handler run here may free the list's items, and
                // a borrowed item taken before it would be read freed
                self.tick(self.kw_type.py(), 256)?;
            }
            let Some(item) = iter.next() else {
                return Ok(false);
            };
            out.push(
                self.value(item.bound(), depth + 1)
                    .map_err(|e| e.under(Seg::Index(i)))?,
            );
        }
        Ok(true)
    }

    #[inline(never)]
    fn slow(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> Result<Value, ConvError> {
        // a subclass's methods or `__class__` may run Python code from here on
        self.before_python();
        self.pinned.push(obj.clone());
        if obj.is_instance(&self.kw_type).unwrap_or(false) {
            let s: String = obj
                .extract()
                .map_err(|e: PyErr| ConvError::new(e.to_string()))?;
            return Ok(Value::Keyword(crate::value::intern_keyword(&s)));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return self.string_value(s);
        }
        if obj.is_instance_of::<PyBool>() {
            return Ok(Value::Bool(obj.is_truthy().unwrap_or(false)));
        }
        if obj.is_instance_of::<PyInt>() {
            return self.int(obj);
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(Value::Float(f.value()));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            return self.container(obj, |c| c.dict(d, depth));
        }
        if let Ok(l) = obj.cast::<PyList>() {
            return self.container(obj, |c| c.items(l.len(), l.iter(), depth));
        }
        if let Ok(t) = obj.cast::<PyTuple>() {
            return self.container(obj, |c| c.items(t.len(), t.iter(), depth));
        }
        if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() {
            let mut out = ValueSet::default();
            let iter = obj.try_iter().map_err(|e| ConvError::new(e.to_string()))?;
            for item in iter {
                let item = item.map_err(|e| ConvError::new(e.to_string()))?;
                self.tick(obj.py(), 1)?;
                let member = self.value(&item, depth + 1)?;
                if !out.insert(member) {
                    // members Python keeps apart that are one value here (NaNs)
                    return Err(ConvError::new(NAN_MEMBERS));
                }
            }
            return Ok(Value::set(out));
        }
        let tname = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "object".into());
        Err(ConvError::new(format!(
            "{tname} is not supported (use None, bool, int, float, str, list, tuple, dict, set)"
        )))
    }

    fn dict(&mut self, d: &Bound<'py, PyDict>, depth: usize) -> Result<Value, ConvError> {
        let len = d.len();
        self.tick(d.py(), len)?;
        if (1..=crate::map::MAX_SHAPED_KEYS).contains(&len) {
            if let Some(v) = self.record(d, len, depth)? {
                return Ok(v);
            }
        }
        self.reserve(crate::guard::values_bytes(len).saturating_mul(3))?;
        let mut m = ValueMap::with_capacity_and_hasher(len, Default::default());
        self.map_walk(d, depth, |c, key, v| {
            let val = c.value(v, depth + 1)?;
            m.insert(key.clone(), val);
            Ok(())
        })?;
        Ok(Value::map(m))
    }

    /// Walks a dict as map entries: each key converted, then `each` with it and the value;
    /// an error is placed under its key.
    pub(super) fn map_walk(
        &mut self,
        d: &Bound<'py, PyDict>,
        depth: usize,
        mut each: impl FnMut(&mut Self, &Value, &Bound<'py, PyAny>) -> Result<(), ConvError>,
    ) -> Result<(), ConvError> {
        // Python keeps NaN keys apart (NaN equals nothing); here they are one key: a second
        // one would be lost
        let mut nan_keys = 0;
        let mut entries = 0usize;
        dict_items(d, |k, v| {
            // one dict can hold millions of entries: Ctrl-C is looked at every 65,536 of them
            // (the dict was charged for all of them at once)
            entries += 1;
            if entries % (1 << 16) == 0 {
                self.before_python();
                d.py().check_signals().map_err(ConvError::raise)?;
            }
            // a key that is not a string may run Python code, which could free the value
            let owned;
            let v: &Bound<'py, PyAny> = if k.is_exact_instance_of::<PyString>() {
                &v
            } else {
                owned = v.to_owned();
                &owned
            };
            let key = self.key(&k, depth)?.0;
            if matches!(key, Value::Float(f) if f.is_nan()) {
                nan_keys += 1;
                if nan_keys > 1 {
                    return Err(ConvError::new(NAN_KEYS));
                }
            }
            each(self, &key, v).map_err(|e| e.under(key_seg(&key)))
        })
    }

    /// A dict whose keys are all strings, as a record sharing its shape (key list) with the
    /// other dicts that have the same key objects in the same order. `None`: not a record
    /// (a key is not a string, or too many distinct keys to cache).
    fn record(
        &mut self,
        d: &Bound<'py, PyDict>,
        len: usize,
        depth: usize,
    ) -> Result<Option<Value>, ConvError> {
        // on the stack for common widths: the record's one allocation is its only one (drained,
        // not moved: moving the SmallVec into an iterator copied its whole inline buffer)
        let mut vals: SmallVec<[Value; 16]> = SmallVec::new();
        let shape = self.record_walk(
            d,
            len,
            depth,
            &mut vals,
            |c, _, _| c.reserve(crate::guard::values_bytes(len)),
            |c, vals, v| {
                vals.push(c.value(v, depth + 1)?);
                Ok(())
            },
        )?;
        Ok(shape.map(|shape| Value::Map(MapData::record(shape, vals.drain(..)))))
    }

    /// Walks a dict as a record (see [`ToValue::record`]): `begin` once its shape is known,
    /// then `each` of its values in order. `None`: not a record, and nothing was called.
    pub(super) fn record_walk<S>(
        &mut self,
        d: &Bound<'py, PyDict>,
        len: usize,
        depth: usize,
        state: &mut S,
        begin: impl FnOnce(&mut Self, &mut S, &Arc<Shape>) -> Result<(), ConvError>,
        each: impl FnMut(&mut Self, &mut S, &Bound<'py, PyAny>) -> Result<(), ConvError>,
    ) -> Result<Option<Arc<Shape>>, ConvError> {
        let base = self.pending.len();
        let r = self.record_values(d, len, depth, base, state, begin, each);
        self.pending.truncate(base);
        self.pending_held = self.pending_held.min(base);
        r
    }

    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn record_values<S>(
        &mut self,
        d: &Bound<'py, PyDict>,
        len: usize,
        depth: usize,
        base: usize,
        state: &mut S,
        begin: impl FnOnce(&mut Self, &mut S, &Arc<Shape>) -> Result<(), ConvError>,
        mut each: impl FnMut(&mut Self, &mut S, &Bound<'py, PyAny>) -> Result<(), ConvError>,
    ) -> Result<Option<Arc<Shape>>, ConvError> {
        // one walk of the dict: key addresses, and the values, borrowed on `pending` (held
        // there if Python code runs while one converts, so the others convert as they were)
        // `new`, not `with_capacity`: that one returns the vector by value, a copy of its whole
        // inline buffer per record (`perf`: a tenth of the conversion); past 16 keys they grow
        let mut ptrs: SmallVec<[usize; 16]> = SmallVec::new();
        let pending = &mut self.pending;
        dict_items(d, |k, v| {
            ptrs.push(k.as_ptr() as usize);
            pending.push(v.as_ptr() as usize);
            Ok(())
        })?;
        let shape = match self.shapes.find(&ptrs) {
            // the addresses are of pinned key objects (a shape is only made from those)
            Some(found) => found,
            None => self.new_shape(d, &ptrs, depth)?,
        };
        let Some(shape) = shape else {
            return Ok(None);
        };
        begin(self, state, &shape)?;
        for i in 0..ptrs.len() {
            // nested records push above `base + len` and truncate back to it
            let p = self.pending.get(base + i).copied().unwrap_or(0) as *mut pyo3::ffi::PyObject;
            // SAFETY: the GIL is held. The value was borrowed from the live dict, and either no
            // Python code ran since or `before_python` held it first (a null is refused).
            let Some(v) = (unsafe { Borrowed::from_ptr_or_opt(d.py(), p) }) else {
                return Err(ConvError::new("a dict's value is missing"));
            };
            each(self, state, &v).map_err(|e| e.under(key_seg(&shape.keys()[i])))?;
        }
        if d.len() != len {
            return Err(ConvError::new(
                "the dict changed size while it was being converted",
            ));
        }
        Ok(Some(shape))
    }

    /// The shape of a dict whose key objects were not seen together before: every key must be
    /// a string cached (so pinned) by object.
    #[inline(never)]
    fn new_shape(
        &mut self,
        d: &Bound<'py, PyDict>,
        ptrs: &[usize],
        depth: usize,
    ) -> Result<Option<Arc<Shape>>, ConvError> {
        for &p in ptrs {
            if self.key_objects.contains_key(&p) {
                continue;
            }
            // SAFETY: `p` is a key of `d`, which is alive and unchanged since it was read
            // (no Python code ran in between); the reference is borrowed for this check only.
            let k = unsafe { Bound::from_borrowed_ptr(d.py(), p as *mut pyo3::ffi::PyObject) };
            if !k.is_instance_of::<PyString>() || !self.key(&k, depth)?.1 {
                return Ok(None);
            }
        }
        let key_objects = &self.key_objects;
        // keys equal once converted ("a" and :a) make no shape: a map decides
        Ok(self.shapes.get(ptrs, || {
            ptrs.iter().map(|p| key_objects[p].clone()).collect()
        }))
    }

    /// A `str` key that is valid keyword text becomes a keyword, so JSON-shaped data reads and
    /// prints as idiomatic Clojure (`{:name "Ada"}`, `(:name p)`).
    /// The key's value, and whether it is cached by object (so its pointer stays valid).
    fn key(&mut self, k: &Bound<'py, PyAny>, depth: usize) -> Result<(Value, bool), ConvError> {
        if let Ok(s) = k.cast::<PyString>() {
            // Records repeat the same key objects: a pointer lookup skips hashing the text.
            // Cached keys are pinned, so their pointers are stable for the whole conversion.
            let ptr = k.as_ptr() as usize;
            if let Some(v) = self.key_objects.get(&ptr) {
                return Ok((v.clone(), true));
            }
            let text = self.text(s)?;
            let v = self.interner.key(&text);
            let cached = self.key_objects.len() < 65_536;
            if cached {
                self.key_objects.insert(ptr, v.clone());
                self.pinned.push(k.clone());
            }
            return Ok((v, cached));
        }
        Ok((self.value(k, depth + 1)?, false))
    }
}

/// An item of a sequence being converted: borrowed from an exact list, or held (a tuple's or a
/// subclass's items, handed out by PyO3's iterators).
trait AsBound<'py> {
    fn bound(&self) -> &Bound<'py, PyAny>;
}
impl<'py> AsBound<'py> for Bound<'py, PyAny> {
    #[inline]
    fn bound(&self) -> &Bound<'py, PyAny> {
        self
    }
}
impl<'py> AsBound<'py> for Borrowed<'_, 'py, PyAny> {
    #[inline]
    fn bound(&self) -> &Bound<'py, PyAny> {
        self
    }
}

/// How many items ahead a list's walk asks for an item's object (and halfway there, the key
/// table of a dict among them, whose address is in the object by then).
const LIST_AHEAD: usize = 8;

/// Asks the CPU for the objects of the items a few places after `i` (see [`LIST_AHEAD`]).
///
/// # Safety
/// `items` is a list's item array, holding live objects below `end` (a null slot is skipped:
/// only a list C code is still filling has one).
#[inline]
unsafe fn prefetch_ahead(items: *mut *mut pyo3::ffi::PyObject, i: usize, end: usize) {
    use pyo3::ffi;
    // SAFETY: the caller's contract; the indexes are checked against `end`.
    unsafe {
        if i + LIST_AHEAD < end {
            crate::value::prefetch_lines((*items.add(i + LIST_AHEAD)).cast(), 1);
        }
        if i + LIST_AHEAD / 2 < end {
            let o = *items.add(i + LIST_AHEAD / 2);
            if !o.is_null() && ffi::PyDict_CheckExact(o) != 0 {
                crate::value::prefetch_lines((*o.cast::<ffi::PyDictObject>()).ma_keys.cast(), 2);
            }
        }
    }
}

/// An exact list's items, borrowed one at a time, each step asking the CPU for objects a few
/// items ahead: the objects of large data lie all over the heap, and the walk otherwise waits
/// for each in turn. An item is used only while it converts; Python code run meanwhile (see
/// [`ToValue::before_python`]) holds the item and the list first.
struct ListItems<'a, 'py> {
    pub(super) list: &'a Bound<'py, PyList>,
    pub(super) i: usize,
}

impl<'a, 'py> Iterator for ListItems<'a, 'py> {
    type Item = Borrowed<'a, 'py, PyAny>;

    #[inline]
    fn next(&mut self) -> Option<Borrowed<'a, 'py, PyAny>> {
        use pyo3::ffi;
        let p = self.list.as_ptr();
        let i = self.i;
        // SAFETY: the GIL is held and the list is alive. Its length and item array are read
        // afresh at every step (Python code run while an item converted may have changed
        // them), and only items below that length are read; each is alive while the list
        // holds it, which it does until Python code runs, and that holds the item first.
        unsafe {
            let n = ffi::PyList_GET_SIZE(p) as usize;
            if i >= n {
                return None;
            }
            let items = (*p.cast::<ffi::PyListObject>()).ob_item;
            prefetch_ahead(items, i, n);
            self.i = i + 1;
            Borrowed::from_ptr_or_opt(self.list.py(), *items.add(i))
        }
    }

    /// Exactly the items the list holds now after this one.
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.list.len().saturating_sub(self.i);
        (n, Some(n))
    }
}

/// Walks a dict's items without PyO3's iterator, which panics when Python code that runs
/// during the walk (a key's `__hash__`, a value's `__iter__`) changes the dict.
fn dict_items<'a, 'py>(
    d: &'a Bound<'py, PyDict>,
    mut f: impl FnMut(Borrowed<'a, 'py, PyAny>, Borrowed<'a, 'py, PyAny>) -> Result<(), ConvError>,
) -> Result<(), ConvError> {
    let py = d.py();
    let len = d.len();
    let mut pos: pyo3::ffi::Py_ssize_t = 0;
    loop {
        if d.len() != len {
            return Err(ConvError::new(
                "the dict changed size while it was being converted",
            ));
        }
        let mut k: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut pyo3::ffi::PyObject = std::ptr::null_mut();
        // SAFETY: the GIL is held and `d` is a live dict; PyDict_Next hands out borrowed
        // references, alive while the dict holds them: until Python code runs (a caller that
        // runs it between an item's key and value holds the value first; see `record`).
        let more = unsafe { pyo3::ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut k, &mut v) };
        if more == 0 {
            return Ok(());
        }
        // SAFETY: as above; PyDict_Next returns non-null references.
        let (Some(k), Some(v)) = (unsafe { Borrowed::from_ptr_or_opt(py, k) }, unsafe {
            Borrowed::from_ptr_or_opt(py, v)
        }) else {
            return Err(ConvError::new(
                "the dict changed while it was being converted",
            ));
        };
        f(k, v)?;
    }
}

impl<'py> ToValue<'py> {
    /// An int's value; one that does not fit is an error that shows its first digits.
    fn int(&mut self, obj: &Bound<'py, PyAny>) -> Result<Value, ConvError> {
        match int_value(obj) {
            Ok(v) => Ok(v),
            Err(Some(message)) => Err(ConvError::new(message)),
            Err(None) => {
                // showing it makes Python objects (a method of it), and so may run Python code
                self.before_python();
                let obj = obj.clone();
                Err(ConvError::new(format!(
                    "integer {} does not fit in 64 bits (PTC-Lisp integers are exact i64); pass it as a float or a string",
                    big_int_text(&obj)
                )))
            }
        }
    }
}

/// An int's value; `Err(None)` when it does not fit, `Err(Some(message))` for another error.
fn int_value(obj: &Bound<'_, PyAny>) -> Result<Value, Option<String>> {
    let mut overflow = 0;
    // SAFETY: the GIL is held and `obj` is a live int. Overflow is told by the flag, not by an
    // exception: no Python object is made, so no Python code (a collection's finalizers) can
    // run and free the borrowed `obj` before its digits are shown below.
    let i = unsafe { pyo3::ffi::PyLong_AsLongLongAndOverflow(obj.as_ptr(), &mut overflow) };
    // SAFETY: the GIL is held.
    if overflow == 0 && (i != -1 || unsafe { pyo3::ffi::PyErr_Occurred() }.is_null()) {
        return Ok(Value::Int(i));
    }
    if let Some(e) = PyErr::take(obj.py()) {
        return Err(Some(e.to_string()));
    }
    Err(None)
}

/// The integer itself when it is short enough to read, else its sign, first digits and length.
pub fn big_int_text(obj: &Bound<'_, PyAny>) -> String {
    if let Ok(s) = obj.str() {
        let s = s.to_string();
        if s.len() <= 100 {
            return s;
        }
        // by characters: an int subclass's `__str__` may return any text
        let digits = s.trim_start_matches('-').chars().count();
        let head: String = s.chars().take(40).collect();
        return format!("{head}... ({digits} digits)");
    }
    // longer than Python's int-to-text limit: say how long it is
    let bits: u64 = obj
        .call_method0("bit_length")
        .and_then(|b| b.extract())
        .unwrap_or(0);
    let digits = (bits as f64 * std::f64::consts::LOG10_2).floor() as u64 + 1;
    let sign = if obj.lt(0).unwrap_or(false) { "-" } else { "" };
    format!("{sign}of about {digits} digits")
}

/// Converts core values to Python, caching keyword objects.
///
/// Conversion is part of a run: it charges the run's budget per element and for the memory
/// the Python objects take (estimated), so a value built from shared parts (`[x x]` doubled
/// sixty times) ends in a limit error instead of exhausting the machine. Long strings are
/// shared: a vector holding one big string many times becomes a list of one Python string.
pub struct ToPy<'py> {
    py: Python<'py>,
    depth: usize,
    kw_type: Bound<'py, PyType>,
    keywords: AHashMap<Str, Py<PyAny>>,
    long_strings: AHashMap<usize, Py<PyAny>>,
    /// Bytes of Python objects made and not yet charged (charged in groups: a number each).
    unpaid: usize,
}

/// Pauses Python's cyclic garbage collector while a conversion creates objects: the lists and
/// dicts it creates cannot form cycles, and a full collection triggered every few thousand new
/// containers would walk every object of the process each time (quadratic in a large result).
pub struct GcPause {
    was_enabled: bool,
}

impl GcPause {
    pub fn new(_py: Python<'_>) -> Self {
        // SAFETY: the GIL is held (the `Python` token proves it).
        let was_enabled = unsafe { pyo3::ffi::PyGC_Disable() } != 0;
        GcPause { was_enabled }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: created with the GIL held, dropped on the same thread before it is released
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

/// Sizes of CPython 3.11 objects (garbage-collector header included), for the memory a
/// conversion charges: measured with `sys.getsizeof`, rounded up.
const PY_OBJECT: usize = 48;
const PY_LIST: usize = 72;
const PY_LIST_ITEM: usize = 8;
const PY_DICT: usize = 216;
const PY_DICT_ITEM: usize = 48;

/// A plain scalar's Python object (nil, a bool, an int, a float, a string shorter than
/// [`LONG_STRING`]) and the bytes it takes, made without a converter; `None` for anything else.
#[inline]
pub fn scalar_to_python<'py>(py: Python<'py>, v: &Value) -> Option<(Bound<'py, PyAny>, usize)> {
    Some(match v {
        Value::Nil => (py.None().into_bound(py), 0),
        Value::Bool(b) => (PyBool::new(py, *b).to_owned().into_any(), 0),
        // small integers are shared by Python; others are objects of their own
        Value::Int(i) => {
            let bytes = if (-5..=256).contains(i) { 0 } else { PY_OBJECT };
            (i.into_pyobject(py).ok()?.into_any(), bytes)
        }
        Value::Float(f) => (PyFloat::new(py, *f).into_any(), PY_OBJECT),
        Value::Str(s) if s.len() < LONG_STRING => {
            (PyString::new(py, s).into_any(), PY_OBJECT + s.len())
        }
        _ => return None,
    })
}

/// What the Python object for `v` will take, not counting its elements.
fn py_size(v: &Value) -> usize {
    match v {
        Value::Vector(xs) => PY_LIST + PY_LIST_ITEM * xs.len(),
        Value::Map(m) => PY_DICT + PY_DICT_ITEM * m.len(),
        Value::Set(s) => PY_DICT + PY_DICT_ITEM * s.len(),
        _ => 0,
    }
}

impl<'py> ToPy<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(ToPy {
            py,
            depth: 0,
            kw_type: keyword_type(py)?.clone(),
            keywords: fresh_map(),
            long_strings: fresh_map(),
            unpaid: 0,
        })
    }

    /// Counts `bytes` of Python objects made, charging the run every 64 KB of them.
    #[inline]
    fn pay(&mut self, bytes: usize) {
        self.unpaid += bytes;
        if self.unpaid >= 64 * 1024 {
            crate::guard::charge_bytes(std::mem::take(&mut self.unpaid));
        }
    }

    /// A string of at least [`LONG_STRING`] bytes, once per core string.
    fn string(&mut self, s: &Str) -> Bound<'py, PyAny> {
        let key = s.identity();
        if let Some(o) = self.long_strings.get(&key) {
            return o.bind(self.py).clone();
        }
        self.pay(PY_OBJECT + s.len());
        let o = PyString::new(self.py, s).into_any();
        self.long_strings.insert(key, o.clone().unbind());
        o
    }

    fn keyword(&mut self, k: &Str) -> PyResult<Bound<'py, PyAny>> {
        if let Some(o) = self.keywords.get(k) {
            return Ok(o.bind(self.py).clone());
        }
        let o = self.kw_type.call1((k.as_str(),))?;
        self.keywords.insert(k.clone(), o.clone().unbind());
        Ok(o)
    }

    pub fn convert(&mut self, v: &Value) -> PyResult<Bound<'py, PyAny>> {
        let r = self.value(v, false);
        crate::guard::charge_bytes(std::mem::take(&mut self.unpaid));
        r
    }

    pub fn py(&self) -> Python<'py> {
        self.py
    }

    fn value(&mut self, v: &Value, hashable: bool) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        if self.depth >= MAX_OUTPUT_DEPTH {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "the value is nested more than {MAX_OUTPUT_DEPTH} levels deep and cannot be converted to Python"
            )));
        }
        if let Some((o, bytes)) = scalar_to_python(py, v) {
            self.pay(bytes);
            return Ok(o);
        }
        self.depth += 1;
        if let Value::Vector(_) | Value::Map(_) | Value::Set(_) = v {
            self.pay(py_size(v));
        }
        let r = crate::guard::deeper(|| {
            Ok(match v {
                Value::Str(s) => self.string(s),
                Value::Keyword(k) => self.keyword(k)?,
                Value::Vector(xs) => {
                    if hashable {
                        let items: Vec<Bound<'py, PyAny>> = crate::guard::charged(xs.iter())
                            .map(|x| self.value(x, true))
                            .collect::<PyResult<_>>()?;
                        PyTuple::new(py, items)?.into_any()
                    } else {
                        let list = PyList::empty(py);
                        for x in crate::guard::charged(xs.iter()) {
                            list.append(self.value(x, false)?)?;
                        }
                        list.into_any()
                    }
                }
                Value::Map(m) => {
                    if hashable {
                        let items: Vec<Bound<'py, PyAny>> = crate::guard::charged(m.iter())
                            .map(|(k, v)| {
                                Ok(
                                    PyTuple::new(py, [self.value(k, true)?, self.value(v, true)?])?
                                        .into_any(),
                                )
                            })
                            .collect::<PyResult<_>>()?;
                        PyTuple::new(py, items)?.into_any()
                    } else {
                        let d = PyDict::new(py);
                        for (k, val) in crate::guard::charged(m.iter()) {
                            let key = self.value(k, true)?;
                            let before = d.len();
                            d.set_item(&key, self.value(val, false)?)?;
                            if d.len() == before {
                                // `Keyword("a") == "a"`, `1 == 1.0 == True`: one key would be lost
                                let keys = m.iter().map(|(k, _)| k);
                                return Err(self.collision("a map has keys", v, keys, k, &key));
                            }
                        }
                        d.into_any()
                    }
                }
                Value::Set(s) => {
                    let items: Vec<Bound<'py, PyAny>> = crate::guard::charged(s.iter())
                        .map(|x| self.value(x, true))
                        .collect::<PyResult<_>>()?;
                    let set = if hashable {
                        PyFrozenSet::new(py, &items)?.into_any()
                    } else {
                        PySet::new(py, &items)?.into_any()
                    };
                    if set.len()? != items.len() {
                        // as for a map's keys: members equal in Python would be lost
                        let seen = PySet::empty(py)?;
                        for (x, item) in s.iter().zip(&items) {
                            if seen.contains(item)? {
                                return Err(self.collision(
                                    "a set has members",
                                    v,
                                    s.iter(),
                                    x,
                                    item,
                                ));
                            }
                            seen.add(item)?;
                        }
                    }
                    set
                }
                Value::Date(days) => {
                    check_python_year(v)?;
                    let date = DATE_TYPE.import(py, "datetime", "date")?;
                    date.call_method1("fromordinal", (*days as i64 + 719_163,))?
                }
                Value::DateTime(ms) => {
                    check_python_year(v)?;
                    let dt = DATETIME_TYPE.import(py, "datetime", "datetime")?;
                    let utc = UTC.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
                        Ok(py
                            .import("datetime")?
                            .getattr("timezone")?
                            .getattr("utc")?
                            .unbind())
                    })?;
                    dt.call_method1("fromtimestamp", (*ms as f64 / 1000.0, utc.bind(py)))?
                }
                f @ crate::fn_pat!() => {
                    PyString::new(py, &crate::format::print_full(f, false)).into_any()
                }
                other => PyString::new(py, &crate::format::print_full(other, false)).into_any(),
            })
        });
        self.depth -= 1;
        r
    }
}

impl<'py> ToPy<'py> {
    /// The error for `later`, whose Python form `later_py` equals that of an earlier one of
    /// `all` (the keys or members of `whole`): Python would keep only one of them.
    fn collision<'v>(
        &mut self,
        what: &str,
        whole: &Value,
        all: impl Iterator<Item = &'v Value>,
        later: &Value,
        later_py: &Bound<'py, PyAny>,
    ) -> PyErr {
        let mut earlier = None;
        for x in all {
            if std::ptr::eq(x, later) || x == later {
                break;
            }
            if let Ok(o) = self.value(x, true) {
                if o.eq(later_py).unwrap_or(false) {
                    earlier = Some(x);
                    break;
                }
            }
        }
        let Some(earlier) = earlier else {
            return pyo3::exceptions::PyValueError::new_err(format!(
                "{what} that are equal in Python, which would keep only one: {}",
                crate::format::mention(whole)
            ));
        };
        let (a, b) = (
            crate::format::mention(earlier),
            crate::format::mention(later),
        );
        pyo3::exceptions::PyValueError::new_err(format!(
            "{what} that are different here but equal in Python, which would keep only one: \
             {a} and {b} ({}) in {}",
            why_equal(earlier, later),
            crate::format::mention(whole)
        ))
    }
}

/// Why two different values are equal in Python.
fn why_equal(a: &Value, b: &Value) -> &'static str {
    let number = |v: &Value| matches!(v, Value::Int(_) | Value::Float(_));
    match (a, b) {
        (Value::Keyword(_), Value::Str(_)) | (Value::Str(_), Value::Keyword(_)) => {
            "a keyword and a string with the same text"
        }
        (Value::Bool(_), _) | (_, Value::Bool(_)) => "Python's True and False equal 1 and 0",
        _ if number(a) && number(b) => "an integer and a float of the same value",
        _ => "their elements are equal in Python",
    }
}

/// Python's dates run from year 1 to 9999; the language's are wider.
fn check_python_year(v: &Value) -> PyResult<()> {
    let days = match v {
        Value::Date(d) => *d as i64,
        Value::DateTime(ms) => ms.div_euclid(86_400_000),
        _ => return Ok(()),
    };
    let (year, _, _) = crate::format::civil_from_days(days);
    if (1..=9999).contains(&year) {
        return Ok(());
    }
    let text = crate::format::to_clojure(v, None, None).0;
    Err(pyo3::exceptions::PyValueError::new_err(format!(
        "the {} {text} cannot be converted to Python, whose dates run from year 1 to 9999",
        v.kind_name()
    )))
}
