//! The walk on the thread holding the GIL ([`ToValue`]): it converts anything the language
//! has a value for, reports errors with their paths, and may run Python code (a subclass's
//! methods, a signal handler) — before which it holds everything it borrowed
//! ([`Held::before_python`]), so that code cannot free what the walk still reads, and a
//! record's values convert as they were when its walk began.

use std::borrow::Cow;

use ahash::AHashMap;
use pyo3::ffi as py;
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyFrozenSet, PyInt, PySet, PyString, PyType};

use super::ffi::{self, Kind};
use super::walk::{Side, Stop, Walker};
use super::{big_int_text, fresh_map, keyword_type, Cause, ConvError, Seg, Tables};
use crate::value::{Value, ValueSet};

pub const MAX_INPUT_DEPTH: usize = 1_000;

const NAN_MEMBERS: &str = "this set has more than one NaN: Python keeps them apart (NaN equals \
                           nothing), here they would be one member and the others lost";

/// Converts Python data to core values.
pub struct ToValue<'py>(Walker<Held<'py>>);

impl<'py> ToValue<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(ToValue(Walker {
            tables: Tables::new(),
            watch: None,
            pending: Vec::new(),
            pending_held: 0,
            side: Held {
                kw_type: keyword_type(py)?.clone(),
                seen: 0,
                shared: fresh_map(),
                pinned: Vec::new(),
                ancestors: Vec::new(),
                ancestors_held: 0,
                polls: crate::guard::in_budget(),
            },
        }))
    }

    /// A converter for a host's input data (outside any run): bounded by the memory the
    /// process has left, its long lists shared with a second thread (`split.rs`).
    pub fn for_input(py: Python<'py>) -> PyResult<Self> {
        let mut c = ToValue::new(py)?;
        c.0.watch = Some(crate::sysmem::Watch::new());
        Ok(c)
    }

    pub fn convert(&mut self, obj: &Bound<'py, PyAny>) -> Result<Value, ConvError> {
        self.0.value(obj.as_ptr(), 0)
    }
}

/// The GIL-holding thread's side of a walk.
pub(super) struct Held<'py> {
    kw_type: Bound<'py, PyType>,
    /// Objects converted since the last Ctrl-C check.
    pub(super) seen: usize,
    /// Containers referenced from more than one place, converted once: input that shares
    /// structure (`x = [x, x]` sixty times) converts to the same sharing, not to 2^60 nodes.
    shared: AHashMap<usize, Value>,
    /// The objects the tables are keyed by, and what `before_python` held, for the whole
    /// conversion: Python code run during it may make temporary objects, whose addresses
    /// could otherwise be reused by others.
    pinned: Vec<Bound<'py, PyAny>>,
    /// The containers being converted, outermost first (borrowed).
    ancestors: Vec<usize>,
    /// How many of `ancestors` (from the outermost) are held in `pinned`.
    ancestors_held: usize,
    /// A run's budget is current (a tool's result): its charges may run Python's signal
    /// handlers, so the walk holds what it borrowed before each.
    polls: bool,
}

type W<'py> = Walker<Held<'py>>;

impl<'py> Held<'py> {
    /// Before code that may run Python: the containers being walked and the values of the
    /// records being converted are held from here on.
    #[inline(never)]
    pub(super) fn before_python(w: &mut W<'py>) {
        let py = w.side.kw_type.py();
        let ancestors = &w.side.ancestors[w.side.ancestors_held..];
        let values = &w.pending[w.pending_held..];
        for &p in ancestors.iter().chain(values) {
            // SAFETY: the GIL is held. What is not held yet was borrowed from its live parent
            // after the last moment Python code could run (that moment held everything
            // borrowed then), so it is still alive.
            let held = unsafe { Bound::from_borrowed_ptr(py, p as *mut py::PyObject) };
            w.side.pinned.push(held);
        }
        w.side.ancestors_held = w.side.ancestors.len();
        w.pending_held = w.pending.len();
    }

    /// `o`, held until the conversion ends.
    fn hold(w: &mut W<'py>, o: *mut py::PyObject) -> Bound<'py, PyAny> {
        // SAFETY: the GIL is held and `o` is alive (borrowed, and no Python code ran since).
        let held = unsafe { Bound::from_borrowed_ptr(w.side.kw_type.py(), o) };
        w.side.pinned.push(held.clone());
        held
    }

    /// A set or frozenset (or subclass), iterated by Python.
    fn set(w: &mut W<'py>, obj: &Bound<'py, PyAny>, depth: usize) -> Result<Value, ConvError> {
        let mut out = ValueSet::default();
        let iter = obj.try_iter().map_err(|e| ConvError::new(e.to_string()))?;
        for item in iter {
            let item = item.map_err(|e| ConvError::new(e.to_string()))?;
            Self::tick(w, 1)?;
            let member = w.value(item.as_ptr(), depth + 1)?;
            if !out.insert(member) {
                // members Python keeps apart that are one value here (NaNs)
                return Err(ConvError::new(NAN_MEMBERS));
            }
        }
        Ok(Value::set(out))
    }
}

impl Stop for ConvError {
    fn under(mut self, seg: impl FnOnce() -> Seg) -> Self {
        self.path.push(seg());
        self
    }
}

impl<'py> Side for Held<'py> {
    type Stop = ConvError;
    const MAX_DEPTH: usize = MAX_INPUT_DEPTH;

    fn hole() -> ConvError {
        ConvError::new("internal error: a hole on the thread holding the GIL")
    }

    fn too_deep() -> ConvError {
        ConvError::new(format!("nested more than {MAX_INPUT_DEPTH} levels deep"))
    }

    fn error(_: &mut W<'py>, message: &'static str) -> ConvError {
        ConvError::new(message)
    }

    fn memory(_: &mut W<'py>, e: crate::error::Error) -> ConvError {
        ConvError::memory(e)
    }

    #[inline(never)]
    fn other(w: &mut W<'py>, o: *mut py::PyObject, depth: usize) -> Result<Value, ConvError> {
        // a subclass's methods or `__class__` may run Python code from here on
        Self::before_python(w);
        let obj = Self::hold(w, o);
        if obj.is_instance(&w.side.kw_type).unwrap_or(false) {
            let s: String = obj
                .extract()
                .map_err(|e: PyErr| ConvError::new(e.to_string()))?;
            return Ok(Value::Keyword(crate::value::intern_keyword(&s)));
        }
        if obj.is_instance_of::<PyString>() {
            return w.string(o);
        }
        if obj.is_instance_of::<PyInt>() {
            // an int subclass's value is read by CPython without calling its methods
            return match obj.extract::<i64>() {
                Ok(i) => Ok(Value::Int(i)),
                Err(_) => Err(Self::big_int(w, o)),
            };
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(Value::Float(f.value()));
        }
        // SAFETY: the GIL is held and `o` is alive; a subclass of dict or list has their
        // layout, which the walker reads (the subclass's own methods are not called)
        if unsafe { py::PyDict_Check(o) } != 0 {
            return Self::container(w, o, |w| w.dict(o, depth));
        }
        // SAFETY: as above, for a subclass of list or tuple.
        if unsafe { py::PyList_Check(o) != 0 || py::PyTuple_Check(o) != 0 } {
            return Self::container(w, o, |w| w.list(o, depth));
        }
        if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() {
            return Self::set(w, &obj, depth);
        }
        let tname = obj
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "object".into());
        Err(ConvError::with(Cause::Unsupported(format!(
            "{tname} is not supported (use None, bool, int, float, str, list, tuple, dict, set)"
        ))))
    }

    fn big_int(w: &mut W<'py>, o: *mut py::PyObject) -> ConvError {
        // showing it makes Python objects (a method of it), and so may run Python code
        Self::before_python(w);
        let obj = Self::hold(w, o);
        ConvError::new(format!(
            "integer {} does not fit in 64 bits (PTC-Lisp integers are exact i64); pass it as a float or a string",
            big_int_text(&obj)
        ))
    }

    fn odd_text<'s>(w: &mut W<'py>, o: *mut py::PyObject) -> Result<Cow<'s, str>, ConvError> {
        Self::before_python(w); // an error is made (and may be collected)
        let s = Self::hold(w, o);
        let s = s
            .cast::<PyString>()
            .map_err(|e| ConvError::new(e.to_string()))?;
        let text = s.to_str().map_err(|e| ConvError::new(e.to_string()))?;
        Ok(Cow::Owned(text.to_owned()))
    }

    fn container(
        w: &mut W<'py>,
        o: *mut py::PyObject,
        convert: impl FnOnce(&mut W<'py>) -> Result<Value, ConvError>,
    ) -> Result<Value, ConvError> {
        // the walk borrows its objects: more than the parent's one reference means shared (an
        // object the slow paths hold for themselves counts as shared too, which only caches it)
        // SAFETY: the GIL is held and `o` is alive.
        let shared = unsafe { ffi::shared(o) };
        if shared {
            if let Some(v) = w.side.shared.get(&(o as usize)) {
                return Ok(v.clone());
            }
        }
        // a container that contains itself (a cycle) would otherwise be reported as a thousand
        // levels of nesting; data is shallow, so the scan of the containers open is short
        if w.side.ancestors.contains(&(o as usize)) {
            Self::before_python(w); // the type's name is asked of Python
            let obj = Self::hold(w, o);
            let kind = obj.get_type().name().map(|n| n.to_string());
            return Err(ConvError::new(format!(
                "this {} contains itself (a cycle); data must be a tree, so pass a copy without the back-reference",
                kind.unwrap_or_else(|_| "container".into())
            )));
        }
        w.side.ancestors.push(o as usize);
        // a tool's result converts on a worker thread, whose stack is smaller than the main
        // thread's: a nest of 1,000 levels continues on a heap segment when it runs low
        let r = crate::guard::deeper(|| convert(w));
        w.side.ancestors.pop();
        w.side.ancestors_held = w.side.ancestors_held.min(w.side.ancestors.len());
        let v = r?;
        if shared {
            w.side.shared.insert(o as usize, v.clone());
            Self::hold(w, o);
        }
        Ok(v)
    }

    fn long_list(
        w: &mut W<'py>,
        l: *mut py::PyObject,
        len: usize,
        depth: usize,
    ) -> Option<Result<Value, ConvError>> {
        // SAFETY: the GIL is held and `l` is alive.
        let exact = matches!(unsafe { ffi::kind(l) }, Kind::List | Kind::Tuple);
        (exact && w.watch.is_some() && super::split::worth_it(len))
            .then(|| super::split::split_list(w, l, depth))
    }

    /// Every 64K objects: Ctrl-C (the GIL is held, so Python's handler can run) and the run's
    /// budget when converting inside a run (a tool's result).
    #[inline]
    fn tick(w: &mut W<'py>, n: usize) -> Result<(), ConvError> {
        if w.side.polls {
            Self::before_python(w);
        }
        crate::guard::charge(n);
        w.side.seen += n;
        if w.side.seen >= 1 << 16 {
            w.side.seen = 0;
            Self::before_python(w);
            w.side
                .kw_type
                .py()
                .check_signals()
                .map_err(ConvError::raise)?;
        }
        if let Some(watch) = &mut w.watch {
            watch.check().map_err(ConvError::memory)?;
        }
        Ok(())
    }

    /// Room in the process (input, outside a run) or in the run's budget (a tool's result).
    fn reserve(w: &mut W<'py>, bytes: usize) -> Result<(), ConvError> {
        if let Some(watch) = &mut w.watch {
            watch.reserve(bytes).map_err(ConvError::memory)?;
        }
        crate::guard::reserve(bytes);
        Ok(())
    }

    fn kept(w: &mut W<'py>, o: *mut py::PyObject) {
        Self::hold(w, o);
    }
}
