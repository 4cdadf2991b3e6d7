//! Python <-> core value conversion.
//!
//! Python -> core: one walker (`walk.rs`, [`ToValue`]) classifies each object by its exact type
//! (`ffi.rs`, where every read of CPython's internals lives), converts the common JSON shapes
//! in place and everything else on a slow path that may run Python code; host input's long
//! lists are shared with a second thread by the walker itself (`split.rs`). Both threads look
//! keys, record shapes and shared strings up in one kind of table ([`Tables`]).
//! Core -> Python: `to_py.rs` ([`ToPy`]).

use std::sync::Arc;

use ahash::AHashMap;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use smallvec::SmallVec;

use crate::intern::Interner;
use crate::map::{Shape, ShapeCache};
use crate::text::INLINE_MAX;
use crate::value::{is_keyword_text, Str, Value};

mod ffi;
mod held;
mod split;
mod to_py;
mod walk;

pub use ffi::{check_layout, GcPause};
pub use held::ToValue;
pub use to_py::{scalar_to_python, ToPy, MAX_OUTPUT_DEPTH};

#[cfg(feature = "test-hooks")]
pub use split::COUNTS as SPLIT_COUNTS;

/// Strings at least this long are shared by identity when converted.
const LONG_STRING: usize = 256;
/// Short texts are held in place (never kept in [`Tables::strings`]).
const _: () = assert!(INLINE_MAX < LONG_STRING);
/// Entries a table keeps at most (key objects; short strings by object): input with more
/// distinct ones converts them as copies.
const CACHED: usize = 65_536;

static KEYWORD_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub fn keyword_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    KEYWORD_TYPE.import(py, "ptc._keyword", "Keyword")
}

enum Seg {
    Key(String),
    Index(usize),
}

/// A conversion's error: what went wrong and, as it unwinds, the path to where it arose.
pub struct ConvError {
    path: Vec<Seg>,
    cause: Cause,
}

enum Cause {
    Message(String),
    /// An object of a type the walker has no value for (a date, a model): a tool's result is
    /// then made data by `ptc.tools.rich_types.to_data` and converted again.
    Unsupported(String),
    /// An exception to raise as it is (Ctrl-C arrived during the conversion; out of memory).
    Raise(PyErr),
}

impl ConvError {
    fn new(message: impl Into<String>) -> Self {
        ConvError::with(Cause::Message(message.into()))
    }
    fn with(cause: Cause) -> Self {
        ConvError {
            path: Vec::new(),
            cause,
        }
    }
    fn raise(e: PyErr) -> Self {
        ConvError::with(Cause::Raise(e))
    }
    fn memory(e: crate::error::Error) -> Self {
        ConvError::raise(pyo3::exceptions::PyMemoryError::new_err(e.message.clone()))
    }
    pub fn is_unsupported(&self) -> bool {
        matches!(self.cause, Cause::Unsupported(_))
    }
    pub fn into_pyerr(self, root: &str) -> PyErr {
        let message = match self.cause {
            Cause::Raise(e) => return e,
            Cause::Message(m) | Cause::Unsupported(m) => m,
        };
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
                Seg::Key(k) if is_keyword_text(k) && !root.is_empty() => {
                    p.push('.');
                    p.push_str(k);
                }
                Seg::Key(k) => p.push_str(&format!("[{k:?}]")),
                Seg::Index(i) => p.push_str(&format!("[{i}]")),
            }
        }
        if p.is_empty() {
            PyTypeError::new_err(message)
        } else {
            PyTypeError::new_err(format!("{p}: {message}"))
        }
    }
}

/// The error path's segment for a map key.
fn key_seg(key: &Value) -> Seg {
    match key {
        Value::Str(s) | Value::Keyword(s) => Seg::Key(s.to_string()),
        other => Seg::Key(format!("{other:?}")),
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

/// An exact None, bool, int that fits or float, read without a converter (a tool's result is
/// most often one, and making a converter cost more than reading it); `None` for anything else.
pub fn scalar_value(obj: &Bound<'_, PyAny>) -> Option<Value> {
    // SAFETY: `obj` is alive and the GIL is held (its `Bound` proves both); `kind` is its own.
    unsafe { walk::scalar(obj.as_ptr(), ffi::kind(obj.as_ptr())) }
}

/// A record shape and the key objects it was found by.
type Known = (SmallVec<[usize; 8]>, Arc<Shape>);

/// What a conversion looks up by object address, on either of its threads: the values of key
/// objects, the shapes of records by their key objects, strings referenced from several places.
/// Every object an entry is keyed by stays alive until the conversion ends (so its address
/// stays its own): the walker holds those it adds; the helper thread adds only while nothing
/// can be freed.
struct Tables {
    keys: AHashMap<usize, Value>,
    interner: Interner,
    shapes: ShapeCache,
    /// Per depth, the last record shape met: records at one depth are mostly of one kind
    /// (orders, their customers, their items).
    last: Vec<Option<Known>>,
    strings: AHashMap<usize, Str>,
}

impl Tables {
    fn new() -> Tables {
        Tables {
            keys: fresh_map(),
            interner: Interner::default(),
            shapes: ShapeCache::default(),
            last: Vec::new(),
            strings: fresh_map(),
        }
    }

    /// The helper thread's tables: the keys and shapes known so far (their objects are held by
    /// the walker), the shapes copied so that the threads share no reference count.
    fn for_helper(&self) -> Tables {
        Tables {
            keys: self.keys.clone(),
            shapes: self.shapes.own_copy(),
            ..Tables::new()
        }
    }

    /// A key object's value, kept when there is room (`true`: kept, so its address must stay
    /// the object's until the conversion ends).
    fn add_key(&mut self, p: usize, text: &str) -> (Value, bool) {
        let v = self.interner.key(text);
        let kept = self.keys.len() < CACHED;
        if kept {
            self.keys.insert(p, v.clone());
        }
        (v, kept)
    }

    /// The shape of a record whose key objects are `ptrs`, when they were met together before:
    /// `Some(None)` when they make no record (keys equal once converted, or too many shapes).
    #[inline]
    fn known_shape(&mut self, ptrs: &[usize], depth: usize) -> Option<Option<Arc<Shape>>> {
        if let Some(Some((keys, shape))) = self.last.get(depth) {
            // compared in place: a call to compare a few words cost more than the comparison
            if keys.len() == ptrs.len() && keys.iter().zip(ptrs).all(|(a, b)| a == b) {
                return Some(Some(shape.clone()));
            }
        }
        let found = self.shapes.find(ptrs)?;
        self.remember(ptrs, depth, &found);
        Some(found)
    }

    /// The shape of key objects not met together before, every one of them in `keys`.
    fn new_shape(&mut self, ptrs: &[usize], depth: usize) -> Option<Arc<Shape>> {
        let keys = &self.keys;
        let found = self
            .shapes
            .get(ptrs, || ptrs.iter().map(|p| keys[p].clone()).collect());
        self.remember(ptrs, depth, &found);
        found
    }

    fn remember(&mut self, ptrs: &[usize], depth: usize, found: &Option<Arc<Shape>>) {
        if let Some(shape) = found {
            if self.last.len() <= depth {
                self.last.resize(depth + 1, None);
            }
            self.last[depth] = Some((ptrs.into(), shape.clone()));
        }
    }

    /// A str object's value when it is short enough to hold in place or converted already.
    ///
    /// # Safety
    /// `o` is a live exact str that no code changes meanwhile.
    #[inline]
    unsafe fn string_known(&self, o: *mut pyo3::ffi::PyObject) -> Option<Value> {
        // SAFETY: the contract (a short text read twice when its UTF-8 is longer: rare).
        unsafe {
            if ffi::chars(o) <= INLINE_MAX {
                if let Some(t) = ffi::text(o) {
                    if t.len() <= INLINE_MAX {
                        return Some(Value::Str(Str::from(&*t)));
                    }
                }
            }
            // one referenced from elsewhere too (a category literal, an interned status) is
            // usually referenced many times: found by its address before its text is read
            if ffi::shared(o) {
                return self.strings.get(&(o as usize)).cloned().map(Value::Str);
            }
        }
        None
    }

    /// The value of a str object's `text` (longer than [`INLINE_MAX`] bytes), kept by the
    /// object when it is referenced from elsewhere too (`true`: kept, see [`Tables::add_key`]).
    fn string(&mut self, o: *mut pyo3::ffi::PyObject, shared: bool, text: &str) -> (Value, bool) {
        let s = Str::from(text);
        // long ones always; past the cap, shorter ones are copied (at most 256 bytes each)
        let kept = shared && (text.len() >= LONG_STRING || self.strings.len() < CACHED);
        if kept {
            self.strings.insert(o as usize, s.clone());
        }
        (Value::Str(s), kept)
    }
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
