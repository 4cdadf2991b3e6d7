//! The walker: Python data to core values, by exact type (`ffi::kind`), on either thread of a
//! conversion. What differs between the threads is a [`Side`]: the thread holding the GIL
//! (`held.rs`) converts anything, may run Python code and reports errors with their paths; the
//! split's helper thread (`split.rs`) reads exact JSON-like objects and tuples only, leaving
//! anything else to the other (a hole). The walk borrows what it reaches from its parents (a
//! reference count written for each object of a large input cost a tenth of the conversion).

use std::borrow::Cow;

use pyo3::ffi as py;
use smallvec::SmallVec;

use super::ffi::{self, Kind};
use super::{key_seg, Seg, Tables, LONG_STRING};
use crate::map::{MapData, MAX_SHAPED_KEYS};
use crate::sysmem::Watch;
use crate::value::{Value, ValueMap};

pub(super) const CHANGED: &str = "the dict changed size while it was being converted";
const NAN_KEYS: &str = "this dict has more than one NaN key: Python keeps them apart (NaN equals \
                        nothing), here they would be one key and the others lost; use keys that \
                        are not NaN";

/// The value of an exact None, bool, float or int that fits in 64 bits; `None` for anything
/// else.
///
/// # Safety
/// `o` is a live object whose exact type is `kind`.
#[inline(always)]
pub(super) unsafe fn scalar(o: *mut py::PyObject, kind: Kind) -> Option<Value> {
    // SAFETY: the contract; each read is of the type the classifier found.
    unsafe {
        match kind {
            Kind::None => Some(Value::Nil),
            Kind::True => Some(Value::Bool(true)),
            Kind::False => Some(Value::Bool(false)),
            Kind::Int => ffi::exact_int(o).map(Value::Int),
            Kind::Float => Some(Value::Float(ffi::float(o))),
            _ => None,
        }
    }
}

/// What stops a walk: an error (with its path) or a hole.
pub(super) trait Stop {
    /// The stop, as seen from the container holding what stopped (`seg` made only if needed).
    fn under(self, seg: impl FnOnce() -> Seg) -> Self;
}

/// The thread a walk runs on, and what it does beyond reading exact JSON-like objects. By
/// default, nothing: anything else stops the walk with [`Side::hole`] (the split's helper
/// thread leaves it to the thread holding the GIL, whose side does all of it).
pub(super) trait Side: Sized {
    type Stop: Stop;
    /// Nested deeper than this: a hole, or the side's error.
    const MAX_DEPTH: usize;
    fn hole() -> Self::Stop;
    fn too_deep() -> Self::Stop {
        Self::hole()
    }
    /// Something that cannot happen where no Python code runs (a dict changed meanwhile).
    fn error(_: &mut Walker<Self>, _message: &'static str) -> Self::Stop {
        Self::hole()
    }
    fn memory(w: &mut Walker<Self>, e: crate::error::Error) -> Self::Stop;
    /// Anything but an exact str, dict, list, tuple, int, float, `None` or bool.
    fn other(
        _: &mut Walker<Self>,
        _: *mut py::PyObject,
        _depth: usize,
    ) -> Result<Value, Self::Stop> {
        Err(Self::hole())
    }
    /// An exact int that does not fit in 64 bits.
    fn big_int(_: &mut Walker<Self>, _: *mut py::PyObject) -> Self::Stop {
        Self::hole()
    }
    /// The text of a str whose characters UTF-8 cannot hold (or not made ready).
    fn odd_text<'s>(
        _: &mut Walker<Self>,
        _: *mut py::PyObject,
    ) -> Result<Cow<'s, str>, Self::Stop> {
        Err(Self::hole())
    }
    /// A list or dict: `convert` it, once per object when it is referenced from elsewhere too.
    fn container(
        w: &mut Walker<Self>,
        o: *mut py::PyObject,
        convert: impl FnOnce(&mut Walker<Self>) -> Result<Value, Self::Stop>,
    ) -> Result<Value, Self::Stop>;
    /// A long exact list converted another way (split between threads), or `None`.
    fn long_list(
        _: &mut Walker<Self>,
        _: *mut py::PyObject,
        _len: usize,
        _depth: usize,
    ) -> Option<Result<Value, Self::Stop>> {
        None
    }
    /// `n` objects walked (charges, Ctrl-C, memory).
    fn tick(w: &mut Walker<Self>, n: usize) -> Result<(), Self::Stop>;
    /// Before allocating `bytes` at once.
    fn reserve(w: &mut Walker<Self>, bytes: usize) -> Result<(), Self::Stop>;
    /// `o`'s address became a key of the tables: it must stay `o`'s until the walk ends
    /// (by default nothing is freed meanwhile).
    fn kept(_: &mut Walker<Self>, _: *mut py::PyObject) {}
}

/// A walk's state: what both sides share, and the side's own.
pub(super) struct Walker<S> {
    pub(super) tables: Tables,
    /// Host input (outside any run) is bounded by the memory the process has left.
    pub(super) watch: Option<Watch>,
    /// The values of the records being converted, borrowed from their dicts (addresses).
    pub(super) pending: Vec<usize>,
    /// How many of `pending` (from the first) the side holds (see `held.rs`).
    pub(super) pending_held: usize,
    pub(super) side: S,
}

impl<S: Side> Walker<S> {
    pub(super) fn value(&mut self, o: *mut py::PyObject, depth: usize) -> Result<Value, S::Stop> {
        if depth > S::MAX_DEPTH {
            return Err(S::too_deep());
        }
        // SAFETY: every object the walk reaches is alive (borrowed from a live parent, and held
        // before any Python code runs); the GIL is held, or no thread changes the objects.
        match unsafe { ffi::kind(o) } {
            Kind::Str => self.string(o),
            Kind::Dict => S::container(self, o, |w| w.dict(o, depth)),
            Kind::List | Kind::Tuple => S::container(self, o, |w| w.list(o, depth)),
            Kind::Other => S::other(self, o, depth),
            // SAFETY: as above; `kind` is `o`'s. Not a scalar: an int too big for 64 bits.
            kind => unsafe { scalar(o, kind) }.ok_or_else(|| S::big_int(self, o)),
        }
    }

    /// A str's text: read from its characters, or as the side reads odd text.
    pub(super) fn text<'s>(&mut self, o: *mut py::PyObject) -> Result<Cow<'s, str>, S::Stop> {
        // SAFETY: `o` is a live str no code changes while the text is used.
        match unsafe { ffi::text(o) } {
            Some(text) => Ok(text),
            None => S::odd_text(self, o),
        }
    }

    /// A string value: short ones held in place, shared ones found by object identity.
    pub(super) fn string(&mut self, o: *mut py::PyObject) -> Result<Value, S::Stop> {
        // SAFETY: `o` is a live str no code changes meanwhile (a subclass is never kept).
        let exact = unsafe { ffi::kind(o) } == Kind::Str;
        if exact {
            // SAFETY: as above; an exact str.
            if let Some(v) = unsafe { self.tables.string_known(o) } {
                return Ok(v);
            }
        }
        let text = self.text(o)?;
        if text.len() >= LONG_STRING {
            S::reserve(self, text.len())?;
        }
        // SAFETY: as above.
        let shared = exact && unsafe { ffi::shared(o) };
        let (v, kept) = self.tables.string(o, shared, &text);
        if kept {
            S::kept(self, o);
        }
        Ok(v)
    }

    /// A list or tuple (or one of their subclasses) as a vector.
    pub(super) fn list(&mut self, l: *mut py::PyObject, depth: usize) -> Result<Value, S::Stop> {
        // SAFETY: `l` is a live list or tuple.
        let len = unsafe { ffi::items(l) }.1;
        if let Some(done) = S::long_list(self, l, len, depth) {
            return done;
        }
        S::tick(self, len)?;
        S::reserve(self, crate::guard::values_bytes(len))?;
        let mut out = Vec::with_capacity(len);
        self.items(l, usize::MAX, depth, &mut out)?;
        Ok(Value::vector(out))
    }

    /// Converts a list's items (the next is item `out.len()`) onto `out` until it holds `to`,
    /// reading each from the list as it is then (Python code run while an item converted may
    /// have changed it); `false` when the list ended first.
    pub(super) fn items(
        &mut self,
        l: *mut py::PyObject,
        to: usize,
        depth: usize,
        out: &mut Vec<Value>,
    ) -> Result<bool, S::Stop> {
        while out.len() < to {
            let i = out.len();
            // SAFETY: `l` is a live list or tuple; its item array and length are read afresh.
            let (mut items, mut n) = unsafe { ffi::items(l) };
            if i >= n {
                return Ok(false);
            }
            if i % 256 == 255 {
                // charged in groups while items remain, before the next item is taken: a
                // signal handler run here may change the list or free its items
                S::tick(self, 256)?;
                // SAFETY: as above.
                (items, n) = unsafe { ffi::items(l) };
                if i >= n {
                    return Ok(false);
                }
            }
            // SAFETY: `i` is below the length just read; the item is alive while the list
            // holds it, which it does until Python code runs (which holds the list first).
            let item = unsafe {
                ffi::prefetch_ahead(items, i, n);
                *items.add(i)
            };
            let v = self.value(item, depth + 1);
            out.push(v.map_err(|e| e.under(|| Seg::Index(i)))?);
        }
        Ok(true)
    }

    /// A dict (or subclass): a record when its keys are strings met together before or few
    /// enough to make a shape, else the side's map.
    pub(super) fn dict(&mut self, d: *mut py::PyObject, depth: usize) -> Result<Value, S::Stop> {
        // SAFETY: `d` is a live dict.
        let len = unsafe { py::PyDict_Size(d) } as usize;
        S::tick(self, len)?;
        if (1..=MAX_SHAPED_KEYS).contains(&len) {
            let base = self.pending.len();
            let r = self.record(d, len, depth, base);
            self.pending.truncate(base);
            self.pending_held = self.pending_held.min(base);
            if let Some(v) = r? {
                return Ok(v);
            }
        }
        self.map(d, len, depth)
    }

    /// A dict that is not a record (a key not a string, too many keys, keys equal once
    /// converted): a map.
    fn map(&mut self, d: *mut py::PyObject, len: usize, depth: usize) -> Result<Value, S::Stop> {
        S::reserve(self, crate::guard::values_bytes(len).saturating_mul(3))?;
        let mut m = ValueMap::with_capacity_and_hasher(len, Default::default());
        // Python keeps NaN keys apart (NaN equals nothing); here they are one key: a second
        // one would be lost
        let mut nan_keys = 0;
        let mut pos = 0;
        for entries in 1.. {
            // Python code run by a key (a subclass's methods) or a value may change the dict
            // SAFETY: `d` is a live dict.
            if unsafe { py::PyDict_Size(d) } as usize != len {
                return Err(S::error(self, CHANGED));
            }
            // SAFETY: as above; the entries are alive while the dict holds them.
            let Some((k, v)) = (unsafe { ffi::dict_next(d, &mut pos) }) else {
                break;
            };
            // charged as a list's items are: in groups, before the next entry is taken
            if entries % 256 == 0 {
                S::tick(self, 256)?;
            }
            // the value borrowed on `pending` while the key converts: held if Python code runs
            self.pending.push(v as usize);
            let key = self.key(k, depth);
            self.pending.pop();
            self.pending_held = self.pending_held.min(self.pending.len());
            let key = key?;
            if matches!(key, Value::Float(f) if f.is_nan()) {
                nan_keys += 1;
                if nan_keys > 1 {
                    return Err(S::error(self, NAN_KEYS));
                }
            }
            let val = self.value(v, depth + 1);
            let val = val.map_err(|e| e.under(|| key_seg(&key)))?;
            m.insert(key, val);
        }
        Ok(Value::map(m))
    }

    /// A map key: a str (or subclass; kept by address, so records repeating it skip hashing
    /// its text) as a keyword when it is keyword text, anything else as its value.
    fn key(&mut self, k: *mut py::PyObject, depth: usize) -> Result<Value, S::Stop> {
        if let Some(v) = self.tables.keys.get(&(k as usize)) {
            return Ok(v.clone());
        }
        // SAFETY: `k` is a live key (its type's flags only read).
        if unsafe { py::PyUnicode_Check(k) } == 0 {
            return self.value(k, depth + 1);
        }
        let text = self.text(k)?;
        let (v, kept) = self.tables.add_key(k as usize, &text);
        if kept {
            S::kept(self, k);
        }
        Ok(v)
    }

    /// A dict whose keys are all exact strs, as a record sharing its shape (key list) with the
    /// other dicts that have the same key objects in the same order. `None`: not a record.
    #[inline(always)]
    fn record(
        &mut self,
        d: *mut py::PyObject,
        len: usize,
        depth: usize,
        base: usize,
    ) -> Result<Option<Value>, S::Stop> {
        // one walk of the dict: key addresses, and the values, borrowed on `pending` (held
        // there if Python code runs while one converts, so the others convert as they were)
        // `new`, not `with_capacity`: that one returns the vector by value, a copy of its whole
        // inline buffer per record (`perf`: a tenth of the conversion)
        let mut ptrs: SmallVec<[usize; 16]> = SmallVec::new();
        let mut pos = 0;
        // SAFETY: `d` is a live dict; no code runs during this loop.
        while let Some((k, v)) = unsafe { ffi::dict_next(d, &mut pos) } {
            ptrs.push(k as usize);
            self.pending.push(v as usize);
        }
        if ptrs.len() != len {
            return Err(S::error(self, CHANGED));
        }
        let shape = match self.tables.known_shape(&ptrs, depth) {
            Some(found) => found,
            None => self.new_shape(&ptrs, depth)?,
        };
        let Some(shape) = shape else {
            return Ok(None);
        };
        S::reserve(self, crate::guard::values_bytes(len))?;
        for &v in &self.pending[base..base + len] {
            crate::value::prefetch_lines(v as *const u8, 1);
        }
        // on the stack for common widths: the record's one allocation is its only one (drained,
        // not moved: moving the SmallVec into an iterator copied its whole inline buffer)
        let mut vals: SmallVec<[Value; 16]> = SmallVec::new();
        for i in 0..len {
            // the dict's values, in order: each alive while the dict holds it, and held first
            // if Python code runs (nested records push above them and truncate back)
            let v = self.value(self.pending[base + i] as *mut py::PyObject, depth + 1);
            vals.push(v.map_err(|e| e.under(|| key_seg(&shape.keys()[i])))?);
        }
        // SAFETY: as above.
        if unsafe { py::PyDict_Size(d) } as usize != len {
            return Err(S::error(self, CHANGED));
        }
        Ok(Some(Value::Map(MapData::record(shape, vals.drain(..)))))
    }

    /// The shape of key objects not met together before: every one an exact str, kept by
    /// address (so it must stay alive: the side holds it).
    #[inline(never)]
    fn new_shape(
        &mut self,
        ptrs: &[usize],
        depth: usize,
    ) -> Result<Option<std::sync::Arc<crate::map::Shape>>, S::Stop> {
        for &p in ptrs {
            if self.tables.keys.contains_key(&p) {
                continue;
            }
            let k = p as *mut py::PyObject;
            // SAFETY: a key of the live dict being read.
            if unsafe { ffi::kind(k) } != Kind::Str {
                return Ok(None);
            }
            let text = self.text(k)?;
            if !self.tables.add_key(p, &text).1 {
                return Ok(None); // past the cap: a map
            }
            S::kept(self, k);
        }
        // keys equal once converted ("a" and :a) make no shape: a map decides
        Ok(self.tables.new_shape(ptrs, depth))
    }
}
