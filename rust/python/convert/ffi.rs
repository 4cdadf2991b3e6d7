//! Every read of CPython's internals the conversion makes, in one place: the exact-type
//! classifier, a list's item array, a str's characters, a dict's entries, reference counts.
//! They skip the C API's checks and copies on the hot path (a UTF-8 copy cached in each str,
//! a reference count written for each object walked).
//!
//! Layouts relied on: those of the CPython the extension is built for, 3.11 to 3.14 (one wheel
//! per version; pyo3-ffi describes the structs for the interpreter it builds against, and
//! `build.rs` gives this crate the same `Py_3_x` cfgs): `PyListObject.ob_item`,
//! `PyDictObject.ma_keys` (only as an address to prefetch), a str's kind and data (3.11 may hold
//! a legacy str not made ready; from 3.14 kind and data are calls, the state bits private).
//! [`check_layout`] runs at import and refuses an interpreter where they do not hold (another
//! implementation, a free-threaded build, a layout that reads differently), with a clear error.

use std::borrow::Cow;

use pyo3::ffi;
use pyo3::prelude::*;

/// Python objects by exact type, the common JSON shapes first (the idea of orjson's dispatch:
/// pointer comparisons against the built-in types; subclasses and the rest are `Other`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    Str,
    Dict,
    List,
    Int,
    Float,
    None,
    True,
    False,
    Tuple,
    Other,
}

/// The exact type of `o`.
///
/// # Safety
/// `o` is a live object.
#[inline(always)]
pub(super) unsafe fn kind(o: *mut ffi::PyObject) -> Kind {
    // SAFETY: `o` is live (the contract); the type statics are CPython's own, never freed.
    unsafe {
        let t = ffi::Py_TYPE(o);
        if t == &raw mut ffi::PyUnicode_Type {
            Kind::Str
        } else if t == &raw mut ffi::PyDict_Type {
            Kind::Dict
        } else if t == &raw mut ffi::PyList_Type {
            Kind::List
        } else if t == &raw mut ffi::PyLong_Type {
            Kind::Int
        } else if t == &raw mut ffi::PyFloat_Type {
            Kind::Float
        } else if o == ffi::Py_None() {
            Kind::None
        } else if o == ffi::Py_True() {
            Kind::True
        } else if o == ffi::Py_False() {
            Kind::False
        } else if t == &raw mut ffi::PyTuple_Type {
            Kind::Tuple
        } else {
            Kind::Other
        }
    }
}

/// Whether `o` is referenced from more than one place (the walk borrows what it reaches, so
/// an object only its parent holds has a count of one).
///
/// # Safety
/// `o` is a live object; the GIL is held, or no thread can change its count meanwhile.
#[inline(always)]
pub(super) unsafe fn shared(o: *mut ffi::PyObject) -> bool {
    // SAFETY: the contract.
    unsafe { ffi::Py_REFCNT(o) > 1 }
}

/// An exact float's value.
///
/// # Safety
/// `o` is a live exact float.
#[inline(always)]
pub(super) unsafe fn float(o: *mut ffi::PyObject) -> f64 {
    // SAFETY: the contract.
    unsafe { ffi::PyFloat_AS_DOUBLE(o) }
}

/// An exact int's value; `None` when it does not fit in 64 bits. Only reads the object, and
/// needs no thread state (the helper thread has none).
///
/// # Safety
/// `o` is a live exact int.
#[inline(always)]
pub(super) unsafe fn exact_int(o: *mut ffi::PyObject) -> Option<i64> {
    let mut overflow = 0;
    // SAFETY: the contract. An exact int's conversion raises nothing: overflow is told by the
    // flag, so -1 is -1.
    let i = unsafe { ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow) };
    (overflow == 0).then_some(i)
}

/// A str's length in characters.
///
/// # Safety
/// `o` is a live str.
#[inline(always)]
pub(super) unsafe fn chars(o: *mut ffi::PyObject) -> usize {
    // SAFETY: the contract.
    unsafe { ffi::PyUnicode_GET_LENGTH(o) as usize }
}

/// A str's text from its characters, without calling Python (which would cache a UTF-8 copy in
/// the object). `None`: a string not made ready (3.11's legacy strings) or holding a lone
/// surrogate, which UTF-8 cannot hold: Python's conversion then says what is wrong.
///
/// # Safety
/// `o` is a live str that no code changes while the text is used.
pub(super) unsafe fn text<'a>(o: *mut ffi::PyObject) -> Option<Cow<'a, str>> {
    // SAFETY: the caller's contract; one-byte characters all below 128 are UTF-8 already.
    unsafe {
        #[cfg(not(Py_3_12))]
        if ffi::PyUnicode_IS_READY(o) == 0 {
            return None;
        }
        let len = ffi::PyUnicode_GET_LENGTH(o) as usize;
        let data = ffi::PyUnicode_DATA(o);
        let kind = ffi::PyUnicode_KIND(o);
        if kind == ffi::PyUnicode_1BYTE_KIND {
            let cs = std::slice::from_raw_parts(data as *const u8, len);
            // the str's own ASCII bit up to 3.13 (a scan made reading short texts cost half
            // again as many instructions, callgrind); from 3.14 the bit is private: a scan
            #[cfg(not(Py_3_14))]
            let ascii = ffi::PyUnicode_IS_ASCII(o) != 0;
            #[cfg(Py_3_14)]
            let ascii = cs.is_ascii();
            if ascii {
                return Some(Cow::Borrowed(std::str::from_utf8_unchecked(cs)));
            }
        }
        let mut text = String::with_capacity(len + len / 2);
        match kind {
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

/// A list's or tuple's length and item array, read afresh (Python code may have changed a
/// list's both).
///
/// # Safety
/// `o` is a live list or tuple, or an object of a subclass of either.
#[inline(always)]
pub(super) unsafe fn items(o: *mut ffi::PyObject) -> (*mut *mut ffi::PyObject, usize) {
    // SAFETY: the contract; a subclass's objects have the base type's layout.
    unsafe {
        if ffi::Py_TYPE(o) == &raw mut ffi::PyList_Type || ffi::PyList_Check(o) != 0 {
            let n = ffi::PyList_GET_SIZE(o) as usize;
            ((*o.cast::<ffi::PyListObject>()).ob_item, n)
        } else {
            let n = ffi::PyTuple_GET_SIZE(o) as usize;
            ((*o.cast::<ffi::PyTupleObject>()).ob_item.as_mut_ptr(), n)
        }
    }
}

/// How many items ahead a list's walk asks for an item's object (and halfway there, the key
/// table of a dict among them, whose address is in the object by then).
const LIST_AHEAD: usize = 8;

/// Asks the CPU for the objects of the items a few places after `i`: the objects of large data
/// lie all over the heap, and a walk otherwise waits for each in turn.
///
/// # Safety
/// `items` is a list's item array, holding live objects below `end` (a null slot is skipped:
/// only a list C code is still filling has one).
#[inline(always)]
pub(super) unsafe fn prefetch_ahead(items: *mut *mut ffi::PyObject, i: usize, end: usize) {
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

/// A dict's next entry after `pos` (which it advances), borrowed; `None` at the end.
///
/// # Safety
/// `d` is a live dict; the GIL is held, or `d` is an exact dict no thread changes meanwhile
/// (`PyDict_Next` then only reads it). The entries stay alive while the dict holds them.
#[inline(always)]
pub(super) unsafe fn dict_next(
    d: *mut ffi::PyObject,
    pos: &mut ffi::Py_ssize_t,
) -> Option<(*mut ffi::PyObject, *mut ffi::PyObject)> {
    let mut k: *mut ffi::PyObject = std::ptr::null_mut();
    let mut v: *mut ffi::PyObject = std::ptr::null_mut();
    // SAFETY: the contract; PyDict_Next hands out borrowed, non-null references.
    (unsafe { ffi::PyDict_Next(d, pos, &mut k, &mut v) } != 0 && !k.is_null() && !v.is_null())
        .then_some((k, v))
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
        let was_enabled = unsafe { ffi::PyGC_Disable() } != 0;
        GcPause { was_enabled }
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.was_enabled {
            // SAFETY: created with the GIL held, dropped on the same thread before it is released
            unsafe { ffi::PyGC_Enable() };
        }
    }
}

/// At import: the reads above give what the C API gives, on objects made for the check, or the
/// import fails saying why (instead of a conversion reading memory wrongly later).
pub fn check_layout(py: Python<'_>) -> PyResult<()> {
    let refuse = |what: &str| {
        let version = Python::version_str()
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        Err(pyo3::exceptions::PyImportError::new_err(format!(
            "ptc's conversion reads CPython's object layouts directly and was built for CPython \
             {}; this interpreter ({} {version}) {what}: install a ptc built for it",
            env!("PTC_PYTHON_BUILT_FOR"),
            std::env::consts::ARCH
        )))
    };
    let sys = py.import("sys")?;
    let implementation: String = sys.getattr("implementation")?.getattr("name")?.extract()?;
    if implementation != "cpython" {
        return refuse("is not CPython");
    }
    if let Ok(gil) = sys.getattr("_is_gil_enabled") {
        if !gil.call0()?.extract::<bool>()? {
            return refuse("runs without the GIL, which the conversion's second thread relies on");
        }
    }
    let texts = ["", "plain", "caf\u{e9}", "\u{20ac}uro", "\u{1f600}!"];
    let made = pyo3::types::PyList::new(py, texts)?;
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item(texts[1], 7)?;
    let pair = pyo3::types::PyTuple::new(py, [5, 6])?;
    // SAFETY: the GIL is held and every object read is alive (held by `made`, `dict`, `pair`).
    let reads = unsafe {
        let (made_items, n) = items(made.as_ptr());
        let mut texts_read = true;
        for (i, expected) in texts.iter().enumerate() {
            let o = *made_items.add(i);
            texts_read &= kind(o) == Kind::Str
                && chars(o) == expected.chars().count()
                && text(o).as_deref() == Some(*expected);
        }
        let mut pos = 0;
        let entry = dict_next(dict.as_ptr(), &mut pos);
        let entry_read = entry.is_some_and(|(k, v)| {
            text(k).as_deref() == Some(texts[1]) && kind(v) == Kind::Int && exact_int(v) == Some(7)
        });
        let (pair_items, pair_n) = items(pair.as_ptr());
        let pair_read = pair_n == 2 && exact_int(*pair_items.add(1)) == Some(6);
        n == texts.len()
            && texts_read
            && entry_read
            && pair_read
            && kind(dict.as_ptr()) == Kind::Dict
    };
    if !reads {
        return refuse("lays out its lists, tuples, dicts or strings differently");
    }
    Ok(())
}

/// The reads against what the C API says, on objects of every kind (run with an embedded
/// interpreter: `cargo test --features python --lib convert::`; also under valgrind).
#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::types::{PyDict, PyList, PyString, PyTuple};

    fn with_py<R>(f: impl for<'py> FnOnce(Python<'py>) -> R) -> R {
        Python::initialize();
        Python::attach(f)
    }

    fn eval<'py>(py: Python<'py>, code: &str) -> Bound<'py, PyAny> {
        let code = std::ffi::CString::new(code).unwrap_or_default();
        py.eval(&code, None, None).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn exact_types_are_told_apart_and_everything_else_is_other() {
        with_py(|py| {
            let cases = [
                ("'text'", Kind::Str),
                ("{'a': 1}", Kind::Dict),
                ("[1, 2]", Kind::List),
                ("12", Kind::Int),
                ("2**80", Kind::Int),
                ("1.5", Kind::Float),
                ("None", Kind::None),
                ("True", Kind::True),
                ("False", Kind::False),
                ("(1, 2)", Kind::Tuple),
                ("type('T', (tuple,), {})()", Kind::Other),
                ("{1, 2}", Kind::Other),
                ("b'bytes'", Kind::Other),
                ("type('S', (str,), {})('sub')", Kind::Other),
                ("type('D', (dict,), {})()", Kind::Other),
                ("type('L', (list,), {})()", Kind::Other),
                ("type('I', (int,), {})(3)", Kind::Other),
            ];
            for (code, expected) in cases {
                let o = eval(py, code);
                // SAFETY: the GIL is held and `o` is alive.
                assert_eq!(unsafe { kind(o.as_ptr()) }, expected, "{code}");
            }
        });
    }

    #[test]
    fn text_of_every_width_reads_as_python_encodes_it() {
        with_py(|py| {
            let texts = [
                "",
                "ascii",
                "caf\u{e9}",
                "\u{101}\u{65e5}\u{672c}",
                "\u{1f642} smile",
                "mixed \u{e9} \u{1f642}",
            ];
            for t in texts {
                let s = PyString::new(py, t);
                // SAFETY: the GIL is held and `s` is a live str nothing changes.
                let (read, n) = unsafe { (text(s.as_ptr()), chars(s.as_ptr())) };
                assert_eq!(read.as_deref(), Some(t));
                assert_eq!(n, t.chars().count());
            }
            let long = "x".repeat(300) + "\u{e9}";
            let s = PyString::new(py, &long);
            // SAFETY: as above.
            assert_eq!(unsafe { text(s.as_ptr()) }.as_deref(), Some(long.as_str()));
        });
    }

    #[test]
    fn a_lone_surrogate_has_no_text_here() {
        with_py(|py| {
            for code in ["'\\ud800'", "'a\\udfff'", "'\\U0001f642\\udfff'"] {
                let o = eval(py, code);
                // SAFETY: the GIL is held and `o` is a live str.
                assert_eq!(unsafe { text(o.as_ptr()) }, None, "{code}");
            }
        });
    }

    #[test]
    fn a_list_reads_its_items_in_place() {
        with_py(|py| {
            let l = PyList::new(py, [10, 20, 30]).unwrap_or_else(|e| panic!("{e}"));
            // SAFETY: the GIL is held and `l` is a live list; indexes below its length.
            let read: Vec<i64> = unsafe {
                let (items, n) = items(l.as_ptr());
                (0..n).filter_map(|i| exact_int(*items.add(i))).collect()
            };
            assert_eq!(read, [10, 20, 30]);
            l.append(40).unwrap_or_else(|e| panic!("{e}"));
            // SAFETY: as above (the array may have moved: read afresh).
            assert_eq!(unsafe { items(l.as_ptr()) }.1, 4);
        });
    }

    #[test]
    fn a_tuple_and_subclasses_read_their_items_in_place() {
        with_py(|py| {
            for code in [
                "(10, 20, 30)",
                "type('T', (tuple,), {})((10, 20, 30))",
                "type('L', (list,), {})([10, 20, 30])",
                "()",
            ] {
                let o = eval(py, code);
                // SAFETY: the GIL is held and `o` is a live tuple or list (or subclass).
                let read: Vec<i64> = unsafe {
                    let (items, n) = items(o.as_ptr());
                    (0..n).filter_map(|i| exact_int(*items.add(i))).collect()
                };
                let expected: &[i64] = if code == "()" { &[] } else { &[10, 20, 30] };
                assert_eq!(read, expected, "{code}");
            }
        });
    }

    #[test]
    fn a_dict_walks_its_entries_in_order() {
        with_py(|py| {
            let d = PyDict::new(py);
            for (k, v) in [("b", 1), ("a", 2), ("c", 3)] {
                d.set_item(k, v).unwrap_or_else(|e| panic!("{e}"));
            }
            let mut pos = 0;
            let mut seen = Vec::new();
            // SAFETY: the GIL is held and `d` is a live dict nothing changes.
            while let Some((k, v)) = unsafe { dict_next(d.as_ptr(), &mut pos) } {
                // SAFETY: live entries of `d`.
                seen.push(unsafe { (text(k).unwrap_or_default().into_owned(), exact_int(v)) });
            }
            let expected = [("b", 1), ("a", 2), ("c", 3)].map(|(k, v)| (k.to_string(), Some(v)));
            assert_eq!(seen, expected);
            // SAFETY: as above, at its end.
            assert!(unsafe { dict_next(d.as_ptr(), &mut pos) }.is_none());
        });
    }

    #[test]
    fn ints_read_exactly_to_the_ends_of_64_bits_and_no_further() {
        with_py(|py| {
            let cases = [
                ("0", Some(0)),
                ("-1", Some(-1)),
                ("2**63 - 1", Some(i64::MAX)),
                ("-2**63", Some(i64::MIN)),
                ("2**63", None),
                ("-2**63 - 1", None),
                ("10**40", None),
            ];
            for (code, expected) in cases {
                let o = eval(py, code);
                // SAFETY: the GIL is held and `o` is a live exact int.
                assert_eq!(unsafe { exact_int(o.as_ptr()) }, expected, "{code}");
                assert!(
                    PyErr::take(py).is_none(),
                    "{code}: no exception is left set"
                );
            }
            // SAFETY: the GIL is held; a live exact float.
            assert_eq!(unsafe { float(eval(py, "-2.5").as_ptr()) }, -2.5);
        });
    }

    #[test]
    fn an_object_held_twice_is_shared() {
        with_py(|py| {
            let o = PyList::empty(py).into_any();
            // SAFETY: the GIL is held and `o` is alive (one reference: `o`).
            assert!(!unsafe { shared(o.as_ptr()) });
            let again = o.clone();
            // SAFETY: as above (two references).
            assert!(unsafe { shared(o.as_ptr()) });
            drop(again);
            let t = PyTuple::new(py, [&o]).unwrap_or_else(|e| panic!("{e}"));
            // SAFETY: as above (held by `o` and the tuple).
            assert!(unsafe { shared(o.as_ptr()) });
            drop(t);
        });
    }

    #[test]
    fn the_layout_check_passes_here_and_the_collector_is_paused_and_restored() {
        with_py(|py| {
            assert!(check_layout(py).is_ok());
            let gc = py.import("gc").unwrap_or_else(|e| panic!("{e}"));
            let enabled = || {
                gc.call_method0("isenabled")
                    .and_then(|b| b.extract::<bool>())
                    .ok()
            };
            assert_eq!(enabled(), Some(true));
            {
                let _outer = GcPause::new(py);
                assert_eq!(enabled(), Some(false));
                {
                    let _inner = GcPause::new(py);
                }
                // the inner pause found it paused and leaves it so
                assert_eq!(enabled(), Some(false));
            }
            assert_eq!(enabled(), Some(true));
        });
    }
}
