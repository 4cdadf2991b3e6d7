//! A large list of host input converted by two threads at once: the thread holding the GIL
//! takes blocks of items from the front, a helper thread takes blocks from the back, and each
//! converts its items all the way (reads the objects and builds the values). The tape (tape.rs)
//! shares the work less well: there one thread still reads every object.
//!
//! While the blocks convert, neither thread writes to any Python object or runs Python code:
//! both read exact `dict`s, `list`s, `str`s, `int`s and `float`s, `None` and bools (raw reads,
//! and `PyDict_Next` and `PyLong_AsLongLongAndOverflow`, which for these types only read), and
//! touch no reference count. The thread holding the GIL keeps it, so no other Python thread
//! runs either: nothing changes or frees what the helper reads without holding the GIL. An item
//! holding anything else (a tuple, a subclass, a container referenced from elsewhere too, a
//! big int, a non-string key) is a hole. Once the helper is joined, the thread holding the GIL
//! fills the holes in order with the one-thread paths, so errors and sharing come as on one
//! thread, and so does Python code (a subclass's methods, Ctrl-C's handler), which runs only
//! then: what it changes in items converted already is not seen, and a list it shortens ends
//! at the first item it no longer holds.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ahash::AHashMap;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyList;
use smallvec::SmallVec;

use super::{ConvError, ListItems, ToValue, LONG_STRING};
use crate::intern::Interner;
use crate::map::{MapData, ShapeCache, MAX_SHAPED_KEYS};
use crate::sysmem::{Shared, Watch};
use crate::text::INLINE_MAX;
use crate::value::{Str, Value, ValueMap};

/// Lists split between two threads so far, items converted in blocks (by either thread; the
/// holes not counted) and those of them the helper converted (`_core._split_conversions`,
/// for the tests).
pub static SPLIT_CONVERSIONS: AtomicUsize = AtomicUsize::new(0);
pub static BLOCK_ITEMS: AtomicUsize = AtomicUsize::new(0);
pub static HELPER_ITEMS: AtomicUsize = AtomicUsize::new(0);

/// Items a thread takes at a time: small enough that neither waits long for the other at the
/// end, large enough that taking them is rare.
const BLOCK: usize = 512;
/// Deeper items are left to this thread (its depth limit and error).
const HELPER_DEPTH: usize = 100;

/// Blocks one thread converted: where each starts, its values, and its holes (items left to
/// the GIL-holding thread's one-thread paths, `nil` in the values until filled).
#[derive(Default)]
struct Blocks(Vec<(usize, Vec<Value>, Vec<usize>)>);

/// Which end of the list a thread takes its blocks from.
#[derive(Clone, Copy)]
enum End {
    Front,
    Back,
}

impl<'py> ToValue<'py> {
    /// Whether this list is converted by two threads (host input only).
    pub(super) fn splits(&self, len: usize) -> bool {
        self.split
            && len >= super::tape::TWO_THREADS_MIN
            && self.watch.is_some()
            && crate::guard::cpus() >= 2
    }

    /// [`ToValue::items`] of a large exact list, on two threads (see the module's comment).
    pub(super) fn split_list(
        &mut self,
        l: &Bound<'py, PyList>,
        depth: usize,
    ) -> Result<Value, ConvError> {
        let py = l.py();
        self.tick(py, l.len())?;
        self.reserve(crate::guard::values_bytes(l.len()))?;
        let mut out: Vec<Value> = Vec::with_capacity(l.len());
        // the first item the one-thread way: both threads then start with its keys and shapes
        self.fill(l, 1, depth, &mut out)?;
        // read after everything that may run Python code (Ctrl-C's handler, the first item's
        // methods), which may have changed the list: from here to the join nothing can
        let len = l.len();
        let claims = Mutex::new((out.len(), len));
        let shared = Shared::new();
        let stop = AtomicBool::new(false);
        let mut mine = Pure::new(
            self.key_objects.clone(),
            self.shapes.own_copy(),
            Watch::sharing(shared.clone()),
        );
        let (keys, shapes) = (self.key_objects.clone(), self.shapes.own_copy());
        let list = Items(l.as_ptr());
        let ran = std::thread::scope(|scope| {
            let (claims, stop) = (&claims, &stop);
            let spawned = std::thread::Builder::new()
                .name("ptc-convert".into())
                .spawn_scoped(scope, move || {
                    // its watch made here: allocations are counted per thread
                    let mut theirs = Pure::new(keys, shapes, Watch::sharing(shared));
                    // SAFETY: the GIL-holding thread runs no Python code until it has joined
                    // this one (below), and the list and its items outlive the scope
                    let blocks = unsafe { theirs.blocks(list, claims, stop, End::Back, depth) };
                    (blocks, theirs.failed, theirs.watch.used())
                });
            if spawned.is_ok() {
                SPLIT_CONVERSIONS.fetch_add(1, Ordering::Relaxed);
                super::TWO_THREAD_CONVERSIONS.fetch_add(1, Ordering::Relaxed);
            }
            // a panic here must still stop the helper before the scope joins it
            let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // SAFETY: as above; this thread holds the GIL and runs no Python code here
                let blocks = unsafe { mine.blocks(list, claims, stop, End::Front, depth) };
                (blocks, mine.failed.take())
            }));
            stop.store(true, Ordering::Release);
            let theirs = spawned.map(|h| h.join());
            let mine = mine.unwrap_or_else(|p| std::panic::resume_unwind(p));
            (mine, theirs)
        });
        let ((mut blocks, mut failed), theirs) = ran;
        let converted = |b: &Blocks| b.0.iter().map(|b| b.1.len() - b.2.len()).sum::<usize>();
        BLOCK_ITEMS.fetch_add(converted(&blocks), Ordering::Relaxed);
        // no second thread (it could not start): this one took every block
        if let Ok(joined) = theirs {
            // a panic on the helper is raised here, where the entry point makes it InternalError
            let (more, their_failure, used) =
                joined.unwrap_or_else(|p| std::panic::resume_unwind(p));
            BLOCK_ITEMS.fetch_add(converted(&more), Ordering::Relaxed);
            HELPER_ITEMS.fetch_add(converted(&more), Ordering::Relaxed);
            blocks.0.extend(more.0);
            failed = failed.or(their_failure);
            if let Some(w) = &mut self.watch {
                w.absorb(used);
            }
        }
        if let Some(e) = failed {
            return Err(ConvError::memory(e.message.clone()));
        }
        // Ctrl-C waited for the threads
        self.seen = 1 << 16;
        self.tick(py, 0)?;
        // in order: the gaps (blocks a thread did not finish), the blocks and their holes. As
        // on one thread, the items are those the list holds when each is reached: Python code
        // run meanwhile (a handler, a hole's methods) that shortens it ends the vector there
        blocks.0.sort_by_key(|b| b.0);
        for (start, values, holes) in blocks.0 {
            if !self.fill(l, start, depth, &mut out)? {
                return Ok(Value::vector(out));
            }
            let mut holes = holes.into_iter().peekable();
            for (i, v) in (start..).zip(values) {
                if holes.next_if_eq(&i).is_none() {
                    out.push(v);
                } else if !self.fill(l, i + 1, depth, &mut out)? {
                    return Ok(Value::vector(out));
                }
            }
        }
        // and what is left: an unfinished tail, or items added meanwhile
        self.fill(l, usize::MAX, depth, &mut out)?;
        Ok(Value::vector(out))
    }

    /// Converts the list's items from `out.len()` up to `to` on this thread the one-thread way,
    /// reading each from the list as it is then; `false` when the list ended first.
    fn fill(
        &mut self,
        l: &Bound<'py, PyList>,
        to: usize,
        depth: usize,
        out: &mut Vec<Value>,
    ) -> Result<bool, ConvError> {
        let mut items = ListItems {
            list: l,
            i: out.len(),
        };
        self.push_items(&mut items, to, depth, out)
    }
}

/// The list's address, handed to the helper.
#[derive(Clone, Copy)]
struct Items(*mut ffi::PyObject);
// SAFETY: the helper reads the list only while no Python code runs (see the module's comment).
unsafe impl Send for Items {}

/// Either thread's converter of list items: exact JSON-like types only, with the keys and
/// shapes the GIL-holding thread had made to start from (their key objects are pinned for the
/// whole conversion).
struct Pure {
    keys: AHashMap<usize, Value>,
    shapes: ShapeCache,
    interner: Interner,
    watch: Watch,
    /// Memory ran out: the thread stops (the other hears of it through the allowance).
    failed: Option<crate::error::Error>,
    /// The last record shape met at each depth, with its key objects: records at one depth are
    /// mostly of one kind (orders, their customers, their items).
    last: Vec<Option<Known>>,
    /// Strings referenced from several places, by object, as the other path shares them (one
    /// status text in a million records is one string, not a million).
    strings: AHashMap<usize, Str>,
}

impl Pure {
    fn new(keys: AHashMap<usize, Value>, shapes: ShapeCache, watch: Watch) -> Pure {
        Pure {
            keys,
            shapes,
            interner: Interner::default(),
            watch,
            failed: None,
            last: Vec::new(),
            strings: super::fresh_map(),
        }
    }

    /// Takes blocks from its end of the list until the threads meet (or `stop`).
    ///
    /// # Safety
    /// `list` is a live exact list that no code changes while this runs, nor its items.
    unsafe fn blocks(
        &mut self,
        list: Items,
        claims: &Mutex<(usize, usize)>,
        stop: &AtomicBool,
        end: End,
        depth: usize,
    ) -> Blocks {
        let mut done = Blocks::default();
        // SAFETY: as the function's contract; the list does not change, so neither does this.
        let items = unsafe { (*list.0.cast::<ffi::PyListObject>()).ob_item };
        while !stop.load(Ordering::Acquire) && self.failed.is_none() {
            if let Err(e) = self.watch.check() {
                self.failed = Some(e);
                break;
            }
            let (from, to) = {
                let Ok(mut c) = claims.lock() else { break };
                if c.0 >= c.1 {
                    break;
                }
                let range = match end {
                    End::Front => (c.0, (c.0 + BLOCK).min(c.1)),
                    End::Back => (c.0.max(c.1.saturating_sub(BLOCK)), c.1),
                };
                match end {
                    End::Front => c.0 = range.1,
                    End::Back => c.1 = range.0,
                }
                range
            };
            let mut values = Vec::with_capacity(to - from);
            let mut holes = Vec::new();
            for i in from..to {
                // SAFETY: `i` is below the list's length, which does not change.
                let v = unsafe {
                    super::prefetch_ahead(items, i, to);
                    self.value(*items.add(i), depth + 1)
                };
                if self.failed.is_some() {
                    break; // the rest of the block is a gap, left to the one-thread paths
                }
                values.push(v.unwrap_or_else(|| {
                    holes.push(i);
                    Value::Nil
                }));
            }
            done.0.push((from, values, holes));
        }
        done
    }

    /// # Safety
    /// `o` is a live object no code changes while this runs.
    unsafe fn value(&mut self, o: *mut ffi::PyObject, depth: usize) -> Option<Value> {
        if depth > HELPER_DEPTH {
            return None;
        }
        // SAFETY: reads of the object's type and fields, as the function's contract allows.
        unsafe {
            if ffi::PyUnicode_CheckExact(o) != 0 {
                return self.string(o);
            }
            if ffi::PyFloat_CheckExact(o) != 0 {
                return Some(Value::Float(ffi::PyFloat_AS_DOUBLE(o)));
            }
            if ffi::PyLong_CheckExact(o) != 0 {
                let mut overflow = 0;
                // an exact int is read without an exception or a call (-1 is -1 then)
                let i = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
                return (overflow == 0).then_some(Value::Int(i));
            }
            if o == ffi::Py_None() {
                return Some(Value::Nil);
            }
            if o == ffi::Py_True() || o == ffi::Py_False() {
                return Some(Value::Bool(o == ffi::Py_True()));
            }
            // containers referenced from elsewhere too are converted once, by the other thread
            if ffi::Py_REFCNT(o) > 1 {
                return None;
            }
            if ffi::PyDict_CheckExact(o) != 0 {
                return self.dict(o, depth);
            }
            if ffi::PyList_CheckExact(o) != 0 {
                return self.list(o, depth);
            }
        }
        None
    }

    /// An exact str's text as a value (shared strings converted once).
    ///
    /// # Safety
    /// `o` is a live exact str no code changes while this runs; it stays alive (so its address
    /// is not reused) until the walk ends.
    unsafe fn string(&mut self, o: *mut ffi::PyObject) -> Option<Value> {
        // SAFETY: `o` is a live str (the caller's contract).
        let (chars, shared) = unsafe { (ffi::PyUnicode_GET_LENGTH(o), ffi::Py_REFCNT(o) > 1) };
        // one referenced from elsewhere too is found by its address before its text is read
        // (texts short enough to hold in place are never kept)
        if shared && chars > INLINE_MAX as isize {
            if let Some(s) = self.strings.get(&(o as usize)) {
                return Some(Value::Str(s.clone()));
            }
        }
        // SAFETY: as above.
        let text = unsafe { pure_text(o) }?;
        if text.len() <= INLINE_MAX {
            return Some(Value::Str(Str::from(&*text)));
        }
        if shared && chars <= INLINE_MAX as isize {
            // a few characters, more bytes: kept too
            if let Some(s) = self.strings.get(&(o as usize)) {
                return Some(Value::Str(s.clone()));
            }
        }
        if text.len() >= LONG_STRING {
            if let Err(e) = self.watch.reserve(text.len()) {
                self.failed = Some(e);
                return None;
            }
        }
        let s = Str::from(&*text);
        // long ones always (the other path shares them all by object); past the cap, shorter
        // ones are copied (at most 256 bytes each)
        if shared && (text.len() >= LONG_STRING || self.strings.len() < 65_536) {
            // its address stays its own: nothing is freed while the threads convert
            self.strings.insert(o as usize, s.clone());
        }
        Some(Value::Str(s))
    }

    /// An exact list's items as a vector (None: something this thread does not convert).
    ///
    /// # Safety
    /// `o` is a live exact list that no code changes while this runs, nor its items.
    unsafe fn list(&mut self, o: *mut ffi::PyObject, depth: usize) -> Option<Value> {
        // SAFETY: `o` is a live exact list (the caller's contract).
        let (len, items) = unsafe {
            (
                ffi::PyList_GET_SIZE(o) as usize,
                (*o.cast::<ffi::PyListObject>()).ob_item,
            )
        };
        if let Err(e) = self.watch.reserve(crate::guard::values_bytes(len)) {
            self.failed = Some(e);
            return None;
        }
        let mut out = Vec::with_capacity(len);
        for i in 0..len {
            // SAFETY: `i` is below the list's length, which does not change.
            out.push(unsafe { self.value(*items.add(i), depth + 1) }?);
        }
        Some(Value::vector(out))
    }

    /// An exact dict's entries as a map (None: a key or value this thread does not convert).
    ///
    /// # Safety
    /// `o` is a live exact dict that no code changes while this runs, nor its keys and values.
    unsafe fn dict(&mut self, o: *mut ffi::PyObject, depth: usize) -> Option<Value> {
        let mut ptrs: SmallVec<[usize; 16]> = SmallVec::new();
        let mut values: SmallVec<[*mut ffi::PyObject; 16]> = SmallVec::new();
        let mut pos: ffi::Py_ssize_t = 0;
        let mut k: *mut ffi::PyObject = std::ptr::null_mut();
        let mut v: *mut ffi::PyObject = std::ptr::null_mut();
        // SAFETY: PyDict_Next only reads the live exact dict (no reference counts change).
        while unsafe { ffi::PyDict_Next(o, &mut pos, &mut k, &mut v) } != 0 {
            // SAFETY: PyDict_Next returns live, non-null objects.
            if ptrs.len() >= MAX_SHAPED_KEYS || unsafe { ffi::PyUnicode_CheckExact(k) } == 0 {
                return None; // a map, not a record: the other thread's
            }
            ptrs.push(k as usize);
            values.push(v);
        }
        if ptrs.is_empty() {
            return Some(Value::map(ValueMap::with_capacity_and_hasher(
                0,
                Default::default(),
            )));
        }
        let shape = self.shape(&ptrs, depth)?;
        for &v in &values {
            crate::value::prefetch_lines(v.cast(), 1);
        }
        let mut vals: SmallVec<[Value; 16]> = SmallVec::new();
        for &v in &values {
            // SAFETY: the dict's values, alive and unchanged (the caller's contract).
            vals.push(unsafe { self.value(v, depth + 1) }?);
        }
        Some(Value::Map(MapData::record(shape, vals.drain(..))))
    }

    /// The shape of a record with these key objects; `None`: not a record.
    fn shape(&mut self, ptrs: &[usize], depth: usize) -> Option<Arc<crate::map::Shape>> {
        if let Some(Some((keys, shape))) = self.last.get(depth) {
            // compared in place: a call to compare a few words cost more than the comparison
            if keys.len() == ptrs.len() && keys.iter().zip(ptrs).all(|(a, b)| a == b) {
                return Some(shape.clone());
            }
        }
        let shape = match self.shapes.find(ptrs) {
            Some(found) => found,
            None => self.new_shape(ptrs)?,
        }?;
        if self.last.len() <= depth {
            self.last.resize(depth + 1, None);
        }
        self.last[depth] = Some((ptrs.into(), shape.clone()));
        Some(shape)
    }

    /// The shape of keys not seen together before, as the other thread would make it.
    /// `None` inside: the keys are not a record's (they collide once converted).
    fn new_shape(&mut self, ptrs: &[usize]) -> Option<Option<Arc<crate::map::Shape>>> {
        for &p in ptrs {
            if self.keys.contains_key(&p) {
                continue;
            }
            if self.keys.len() >= 65_536 {
                return None; // the other thread no longer caches keys: a map there
            }
            // SAFETY: a key of the dict being read: a live exact str.
            let text = unsafe { pure_text(p as *mut ffi::PyObject) }?;
            let key = self.interner.key(&text);
            self.keys.insert(p, key);
        }
        // every key is cached by now (a Vec made only for a shape not seen before)
        let keys: Vec<Value> = ptrs
            .iter()
            .map(|p| self.keys.get(p).cloned())
            .collect::<Option<_>>()?;
        Some(self.shapes.get(ptrs, || keys))
    }
}

/// A shape and the key objects it was found by.
type Known = (SmallVec<[usize; 8]>, Arc<crate::map::Shape>);

/// A str's text from its characters, without calling Python (which would cache a UTF-8 copy in
/// the object). `None`: a string not made ready (3.11's legacy strings) or holding a lone
/// surrogate, which UTF-8 cannot hold: Python's conversion then says what is wrong.
///
/// # Safety
/// `o` is a live str that no code changes while the text is used.
pub(super) unsafe fn pure_text<'a>(o: *mut ffi::PyObject) -> Option<Cow<'a, str>> {
    // SAFETY: the caller's contract; compact ASCII text is UTF-8 already.
    unsafe {
        if ffi::PyUnicode_IS_READY(o) == 0 {
            return None;
        }
        let len = ffi::PyUnicode_GET_LENGTH(o) as usize;
        let data = ffi::PyUnicode_DATA(o);
        if ffi::PyUnicode_IS_COMPACT_ASCII(o) != 0 {
            let bytes = std::slice::from_raw_parts(data as *const u8, len);
            return Some(Cow::Borrowed(std::str::from_utf8_unchecked(bytes)));
        }
        let mut text = String::with_capacity(len + len / 2);
        match ffi::PyUnicode_KIND(o) {
            ffi::PyUnicode_1BYTE_KIND => {
                let cs = std::slice::from_raw_parts(data as *const u8, len);
                text.extend(cs.iter().map(|&c| char::from(c)));
            }
            ffi::PyUnicode_2BYTE_KIND => {
                let cs = std::slice::from_raw_parts(data as *const u16, len);
                for &c in cs {
                    text.push(char::from_u32(c.into())?);
                }
            }
            _ => {
                let cs = std::slice::from_raw_parts(data as *const u32, len);
                for &c in cs {
                    text.push(char::from_u32(c)?);
                }
            }
        }
        Some(Cow::Owned(text))
    }
}

/// Short texts of either thread are held in place, the same value.
const _: () = assert!(INLINE_MAX < LONG_STRING);
