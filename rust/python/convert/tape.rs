//! Large host input without a list long enough to split (split.rs) at its top or one level
//! down, such as many shorter lists or a large dict, converted on two threads: the thread
//! holding the GIL walks the Python
//! objects and writes what it finds as ops (scalars and keys as values, string texts copied,
//! where containers begin and end); a second thread reads the ops and builds the values (the
//! allocations, the copies, the pages the kernel must clear). The second thread never sees a
//! Python object. Errors (types, cycles, depth, Ctrl-C) arise in the walk, with their paths as
//! in the one-thread conversion; memory is one allowance for both threads.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use super::{ConvError, ListItems, Seg, Text, ToValue, MAX_INPUT_DEPTH};
use crate::map::{MapData, Shape};
use crate::sysmem::{Shared, Watch};
use crate::value::{Str, Value, ValueMap};

/// Input this large (items of its lists and dicts, one level down) is converted on two threads:
/// below it, starting the thread costs more than it saves.
pub(super) const TWO_THREADS_MIN: usize = 4_096;
/// Ops per chunk handed to the building thread, and text bytes a chunk holds at most.
const CHUNK_OPS: usize = 8_192;
const CHUNK_TEXT: usize = 64 * 1024;

pub(super) enum Op {
    /// A finished value (a scalar, a key, a string held in place or shared).
    Val(Value),
    /// A string whose text is at this range of the chunk's text.
    Text(u32, u32),
    /// Begins a vector of (about) this many items, a map of this many entries (key, value,
    /// key, value...), or a record of this shape; `End` finishes the innermost.
    List(usize),
    Map(usize),
    Record(Arc<Shape>),
    End,
    /// The value just finished is referenced again later (`Ref` with the same number).
    Keep(u32),
    Ref(u32),
}

pub(super) struct Chunk {
    ops: Vec<Op>,
    text: String,
}

impl Chunk {
    fn empty() -> Chunk {
        Chunk {
            ops: Vec::new(),
            text: String::new(),
        }
    }

    fn new() -> Chunk {
        Chunk {
            ops: Vec::with_capacity(CHUNK_OPS),
            text: String::with_capacity(CHUNK_TEXT),
        }
    }
}

/// The walk's end of the tape.
pub(super) struct Tape {
    chunk: Chunk,
    send: Option<SyncSender<Chunk>>,
    /// Emptied chunks the building thread hands back (their buffers are reused).
    back: Receiver<Chunk>,
    /// Containers referenced from several places, by object: the number they were kept under.
    kept: ahash::AHashMap<usize, u32>,
}

impl Tape {
    #[inline]
    fn put(&mut self, op: Op) {
        self.chunk.ops.push(op);
        if self.chunk.ops.len() >= CHUNK_OPS {
            self.flush();
        }
    }

    fn text(&mut self, text: &str) {
        if self.chunk.text.len() + text.len() > CHUNK_TEXT {
            self.flush();
        }
        let at = self.chunk.text.len();
        self.chunk.text.push_str(text);
        // both fit in u32: a chunk's text stays under CHUNK_TEXT, or is one string under 256 bytes
        self.put(Op::Text(at as u32, text.len() as u32));
    }

    /// Hands over the last chunk (the sender drops with the tape, ending the other side).
    fn finish(mut self) {
        let last = std::mem::replace(&mut self.chunk, Chunk::empty());
        if let Some(send) = &self.send {
            let _ = send.send(last);
        }
    }

    fn flush(&mut self) {
        let fresh = match self.back.try_recv() {
            Ok(c) => c,
            Err(TryRecvError::Empty | TryRecvError::Disconnected) => Chunk::new(),
        };
        let full = std::mem::replace(&mut self.chunk, fresh);
        if let Some(send) = &self.send {
            // a refused send: the other thread stopped (memory); the walk hears of it at its
            // next memory check, through the shared allowance
            if send.send(full).is_err() {
                self.send = None;
            }
        }
    }
}

impl<'py> ToValue<'py> {
    /// Converts host input: large data on two threads (see the module's comment), the rest
    /// as [`ToValue::convert`] does.
    pub fn convert_input(&mut self, obj: &Bound<'py, PyAny>) -> Result<Value, ConvError> {
        if let Some(v) = self.shared.get(&(obj.as_ptr() as usize)) {
            return Ok(v.clone()); // converted already (data under two names)
        }
        if self.watch.is_none() || crate::guard::cpus() < 2 {
            return self.convert(obj);
        }
        let (size, longest) = size(obj);
        if size < TWO_THREADS_MIN || longest >= TWO_THREADS_MIN {
            // any long list's items converted by both threads (split.rs), the rest here
            self.split = true;
            let v = self.convert(obj);
            self.split = false;
            return v;
        }
        let shared = Shared::new();
        std::thread::scope(|scope| {
            let (send, chunks) = sync_channel::<Chunk>(4);
            let (give_back, back) = sync_channel::<Chunk>(4);
            let theirs = shared.clone();
            let spawned = std::thread::Builder::new()
                .name("ptc-convert".into())
                .spawn_scoped(scope, move || {
                    let mut watch = Watch::sharing(theirs);
                    let built = build(&chunks, &give_back, &mut watch);
                    (built, watch.used())
                });
            let Ok(builder) = spawned else {
                return self.convert(obj);
            };
            super::TWO_THREAD_CONVERSIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let own = self.watch.replace(Watch::sharing(shared));
            self.tape = Some(Tape {
                chunk: Chunk::new(),
                send: Some(send),
                back,
                kept: super::fresh_map(),
            });
            // a panic in the walk must still end the other thread's reading (the scope joins
            // it before the panic goes on): caught here, raised again after the join
            let walked = catch_unwind(AssertUnwindSafe(|| self.put_value(obj, 0)));
            let mut kept = ahash::AHashMap::new();
            if let Some(mut tape) = self.tape.take() {
                kept = std::mem::take(&mut tape.kept);
                if matches!(walked, Ok(Ok(()))) {
                    tape.finish();
                }
                // dropping the sender (with the tape) ends the building thread's reading
            }
            let joined = builder.join();
            self.watch = own;
            let walked = walked.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            // a panic there is raised here, where the entry point turns it into InternalError
            let (built, used) = joined.unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            if let Some(w) = &mut self.watch {
                w.absorb(used);
            }
            walked?;
            let (v, values) = built?;
            // containers referenced again later (another data name, a tuple's item) are found
            // converted, as on one thread (their objects are pinned)
            for (ptr, n) in kept {
                if let Some(k) = values.get(n as usize) {
                    self.shared.insert(ptr, k.clone());
                }
            }
            Ok(v)
        })
    }

    fn put(&mut self, op: Op) {
        if let Some(t) = &mut self.tape {
            t.put(op);
        }
    }

    /// [`ToValue::value`] written to the tape: the same dispatch, checks and paths.
    fn put_value(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> Result<(), ConvError> {
        if depth > MAX_INPUT_DEPTH {
            return Err(ConvError::new(format!(
                "nested more than {MAX_INPUT_DEPTH} levels deep"
            )));
        }
        if obj.is_none() {
            self.put(Op::Val(Value::Nil));
            return Ok(());
        }
        if let Ok(s) = obj.cast_exact::<PyString>() {
            match self.string(s)? {
                Text::Done(v) => self.put(Op::Val(v)),
                Text::Copy(text) => {
                    if let Some(t) = &mut self.tape {
                        t.text(&text);
                    }
                }
            }
            return Ok(());
        }
        if let Ok(d) = obj.cast_exact::<PyDict>() {
            return self.put_container(obj, |c| c.put_dict(d, depth));
        }
        if let Ok(l) = obj.cast_exact::<PyList>() {
            return self.put_container(obj, |c| c.put_list(l, depth));
        }
        let v = if obj.is_exact_instance_of::<PyBool>() {
            Value::Bool(obj.is_truthy().unwrap_or(false))
        } else if obj.is_exact_instance_of::<PyInt>() {
            self.int(obj)?
        } else if let Ok(f) = obj.cast_exact::<PyFloat>() {
            Value::Float(f.value())
        } else {
            // anything else converts here, on this thread, as one finished value
            self.slow(obj, depth)?
        };
        self.put(Op::Val(v));
        Ok(())
    }

    /// [`ToValue::container`] on the tape: a container referenced from elsewhere too is
    /// written once and referred to by number after.
    fn put_container(
        &mut self,
        obj: &Bound<'py, PyAny>,
        walk: impl FnOnce(&mut Self) -> Result<(), ConvError>,
    ) -> Result<(), ConvError> {
        // SAFETY: reading the reference count of a live object while holding the GIL.
        if unsafe { pyo3::ffi::Py_REFCNT(obj.as_ptr()) } <= 1 {
            return self.inside(obj, walk);
        }
        let ptr = obj.as_ptr() as usize;
        if let Some(n) = self.tape.as_ref().and_then(|t| t.kept.get(&ptr).copied()) {
            self.put(Op::Ref(n));
            return Ok(());
        }
        if let Some(v) = self.shared.get(&ptr) {
            // converted already, under a subclass's object or a tuple (on this thread)
            self.put(Op::Val(v.clone()));
            return Ok(());
        }
        self.inside(obj, walk)?;
        if let Some(t) = &mut self.tape {
            let n = t.kept.len() as u32;
            t.kept.insert(ptr, n);
            t.put(Op::Keep(n));
        }
        self.pinned.push(obj.clone());
        Ok(())
    }

    fn put_list(&mut self, l: &Bound<'py, PyList>, depth: usize) -> Result<(), ConvError> {
        let len = l.len();
        self.tick(l.py(), len)?;
        self.put(Op::List(len));
        for (i, item) in (ListItems { list: l, i: 0 }).enumerate() {
            self.put_value(&item, depth + 1)
                .map_err(|e| e.under(Seg::Index(i)))?;
        }
        self.put(Op::End);
        Ok(())
    }

    fn put_dict(&mut self, d: &Bound<'py, PyDict>, depth: usize) -> Result<(), ConvError> {
        let len = d.len();
        self.tick(d.py(), len)?;
        if (1..=crate::map::MAX_SHAPED_KEYS).contains(&len) {
            let shape = self.record_walk(
                d,
                len,
                depth,
                &mut (),
                |c, _, shape| {
                    c.put(Op::Record(shape.clone()));
                    Ok(())
                },
                |c, _, v| c.put_value(v, depth + 1),
            )?;
            if shape.is_some() {
                self.put(Op::End);
                return Ok(());
            }
        }
        self.put(Op::Map(len));
        self.map_walk(d, depth, |c, key, v| {
            c.put(Op::Val(key.clone()));
            c.put_value(v, depth + 1)
        })?;
        self.put(Op::End);
        Ok(())
    }
}

/// Items in the input's lists and dicts, its own and one level down: how large it is; and the
/// length of its longest list there.
fn size(obj: &Bound<'_, PyAny>) -> (usize, usize) {
    let len = |o: &Bound<'_, PyAny>| {
        if let Ok(l) = o.cast_exact::<PyList>() {
            (l.len(), l.len())
        } else if let Ok(d) = o.cast_exact::<PyDict>() {
            (d.len(), 0)
        } else {
            (0, 0)
        }
    };
    let (mut n, mut longest) = len(obj);
    if let Ok(d) = obj.cast_exact::<PyDict>() {
        if d.len() <= 64 {
            // no Python code runs during this iteration, so the dict cannot change under it
            for (_, v) in d.iter() {
                let (items, list) = len(&v);
                n += items;
                longest = longest.max(list);
            }
        }
    }
    (n, longest)
}

/// A container being built on the building thread.
enum Open {
    List(Vec<Value>),
    /// Entries so far, the key read whose value is still to come, and where the last value
    /// went (a key equal to an earlier one replaces that entry's value in place).
    Map(ValueMap, Option<Value>, usize),
    Record(Arc<Shape>, Vec<Value>),
}

/// The building thread: reads the ops in order and returns the one value they describe.
fn build(
    recv: &Receiver<Chunk>,
    give_back: &SyncSender<Chunk>,
    watch: &mut Watch,
) -> Result<(Value, Vec<Value>), ConvError> {
    let memory = |e: crate::error::Error| ConvError::memory(e.message.clone());
    let mut open: Vec<Open> = Vec::new();
    // emptied buffers of finished records and maps, reused for the next ones
    let mut spare: Vec<Vec<Value>> = Vec::new();
    let mut kept: Vec<Value> = Vec::new();
    let mut root: Option<Value> = None;
    let missing = || ConvError::new("internal error: the conversion's ops are out of order");
    while let Ok(mut chunk) = recv.recv() {
        watch.check().map_err(memory)?;
        for op in chunk.ops.drain(..) {
            let done = match op {
                Op::Val(v) => v,
                Op::Text(at, len) => {
                    let (at, len) = (at as usize, len as usize);
                    let text = chunk.text.get(at..at + len).ok_or_else(missing)?;
                    Value::Str(Str::from(text))
                }
                Op::List(len) => {
                    watch
                        .reserve(crate::guard::values_bytes(len))
                        .map_err(memory)?;
                    open.push(Open::List(Vec::with_capacity(len)));
                    continue;
                }
                Op::Map(len) => {
                    watch
                        .reserve(crate::guard::values_bytes(len).saturating_mul(3))
                        .map_err(memory)?;
                    let m = ValueMap::with_capacity_and_hasher(len, Default::default());
                    open.push(Open::Map(m, None, 0));
                    continue;
                }
                Op::Record(shape) => {
                    open.push(Open::Record(shape, spare.pop().unwrap_or_default()));
                    continue;
                }
                Op::End => match open.pop().ok_or_else(missing)? {
                    Open::List(items) => Value::vector(items),
                    Open::Record(shape, mut vals) => {
                        let v = Value::Map(MapData::record(shape, vals.drain(..)));
                        spare.push(vals);
                        v
                    }
                    Open::Map(m, None, _) => Value::map(m),
                    Open::Map(_, Some(_), _) => return Err(missing()),
                },
                Op::Keep(n) => {
                    let last = match open.last() {
                        Some(Open::List(xs) | Open::Record(_, xs)) => xs.last(),
                        Some(Open::Map(m, None, at)) => m.get_index(*at).map(|(_, v)| v),
                        Some(Open::Map(_, Some(_), _)) => None,
                        None => root.as_ref(),
                    };
                    if n as usize != kept.len() {
                        return Err(missing());
                    }
                    kept.push(last.ok_or_else(missing)?.clone());
                    continue;
                }
                Op::Ref(n) => kept.get(n as usize).ok_or_else(missing)?.clone(),
            };
            match open.last_mut() {
                Some(Open::List(xs) | Open::Record(_, xs)) => xs.push(done),
                Some(Open::Map(m, key, at)) => match key.take() {
                    None => *key = Some(done),
                    Some(k) => *at = m.insert_full(k, done).0,
                },
                None => root = Some(done),
            }
        }
        chunk.text.clear();
        let _ = give_back.try_send(chunk);
    }
    if !open.is_empty() {
        return Err(missing());
    }
    Ok((root.ok_or_else(missing)?, kept))
}
