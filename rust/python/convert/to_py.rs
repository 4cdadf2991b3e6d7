//! Core values to Python objects: lists, dicts, sets and frozensets, keyword objects, dates.
//! Part of a run: charged to its budget per element and for the memory the objects take.

use ahash::AHashMap;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyList, PySet, PyString, PyTuple, PyType};
use pyo3::PyTypeInfo;

use super::{fresh_map, keyword_type, LONG_STRING};
use crate::value::{MapData, Str, Value};

/// Values nested deeper than this are not converted to Python objects (Python itself could
/// not print or compare them without overflowing its recursion limit).
pub const MAX_OUTPUT_DEPTH: usize = 900;

static DATE_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static DATETIME_TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
static UTC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

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
        self.paid(|c| c.value::<Plain>(v))
    }

    /// A tool's named-argument value: its maps' keyword keys, at every depth, become strings
    /// with `-` made `_` (as Python parameters and JSON schema properties are named).
    pub fn named(&mut self, v: &Value) -> PyResult<Bound<'py, PyAny>> {
        self.paid(|c| c.value::<Named>(v))
    }

    pub fn py(&self) -> Python<'py> {
        self.py
    }

    fn paid<T>(&mut self, f: impl FnOnce(&mut Self) -> PyResult<T>) -> PyResult<T> {
        let r = f(self);
        crate::guard::charge_bytes(std::mem::take(&mut self.unpaid));
        r
    }

    /// `v` as a Python value: vectors as lists, maps as dicts (keys as `K` makes them), sets
    /// as sets.
    fn value<K: Keys>(&mut self, v: &Value) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        self.nested(v, |c| {
            Ok(match v {
                Value::Vector(xs) => {
                    let list = PyList::empty(py);
                    for x in crate::guard::charged(xs.iter()) {
                        list.append(c.value::<K>(x)?)?;
                    }
                    list.into_any()
                }
                Value::Map(m) => {
                    let d = PyDict::new(py);
                    for (k, val) in crate::guard::charged(m.iter()) {
                        let key = K::key(c, k)?;
                        let before = d.len();
                        d.set_item(&key, c.value::<K>(val)?)?;
                        if d.len() == before {
                            // `Keyword("a") == "a"`, `1 == 1.0 == True`: one key would be lost
                            return Err(K::clash(c, m, k, &key));
                        }
                    }
                    d.into_any()
                }
                Value::Set(s) => c.set(v, s.iter(), |xs| PySet::new(py, xs))?,
                other => c.atom(other)?,
            })
        })
    }

    /// `v` as a hashable Python value (a dict's key, a set's member): vectors as tuples, maps
    /// as tuples of key/value pairs, sets as frozensets.
    fn hashable(&mut self, v: &Value) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        self.nested(v, |c| {
            Ok(match v {
                Value::Vector(xs) => {
                    let items: Vec<_> = crate::guard::charged(xs.iter())
                        .map(|x| c.hashable(x))
                        .collect::<PyResult<_>>()?;
                    PyTuple::new(py, items)?.into_any()
                }
                Value::Map(m) => {
                    let items: Vec<_> = crate::guard::charged(m.iter())
                        .map(|(k, v)| PyTuple::new(py, [c.hashable(k)?, c.hashable(v)?]))
                        .collect::<PyResult<_>>()?;
                    PyTuple::new(py, items)?.into_any()
                }
                Value::Set(s) => c.set(v, s.iter(), |xs| PyFrozenSet::new(py, xs))?,
                other => c.atom(other)?,
            })
        })
    }

    /// What every value shares: the depth limit, scalars made directly, a container's memory
    /// charged, and a fresh stack segment when this one runs low.
    #[inline]
    fn nested(
        &mut self,
        v: &Value,
        f: impl FnOnce(&mut Self) -> PyResult<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if self.depth >= MAX_OUTPUT_DEPTH {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "the value is nested more than {MAX_OUTPUT_DEPTH} levels deep and cannot be converted to Python"
            )));
        }
        if let Some((o, bytes)) = scalar_to_python(self.py, v) {
            self.pay(bytes);
            return Ok(o);
        }
        self.pay(py_size(v));
        self.depth += 1;
        let r = crate::guard::deeper(|| f(self));
        self.depth -= 1;
        r
    }

    /// A set's members, hashable, in the Python set `make` makes of them.
    fn set<'v, S: PyTypeInfo>(
        &mut self,
        whole: &Value,
        members: impl Iterator<Item = &'v Value> + Clone,
        make: impl FnOnce(&[Bound<'py, PyAny>]) -> PyResult<Bound<'py, S>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let items: Vec<_> = crate::guard::charged(members.clone())
            .map(|x| self.hashable(x))
            .collect::<PyResult<_>>()?;
        let set = make(&items)?.into_any();
        if set.len()? != items.len() {
            // as for a map's keys: members equal in Python would be lost
            let (seen, all) = (PySet::empty(self.py)?, members.clone());
            for (x, item) in members.zip(&items) {
                if seen.contains(item)? {
                    return Err(self.collision("a set has members", whole, all, x, item));
                }
                seen.add(item)?;
            }
        }
        Ok(set)
    }

    /// A value that holds no other: a string, a keyword, a date; a function as its text.
    fn atom(&mut self, v: &Value) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match v {
            Value::Str(s) => self.string(s),
            Value::Keyword(k) => self.keyword(k)?,
            Value::Date(days) => {
                check_python_year(v)?;
                let date = DATE_TYPE.import(py, "datetime", "date")?;
                date.call_method1("fromordinal", (*days as i64 + 719_163,))?
            }
            Value::DateTime(ms) => {
                check_python_year(v)?;
                let dt = DATETIME_TYPE.import(py, "datetime", "datetime")?;
                let utc = UTC.import(py, "datetime", "UTC")?;
                dt.call_method1("fromtimestamp", (*ms as f64 / 1000.0, utc))?
            }
            other => PyString::new(py, &crate::format::print_full(other, false)).into_any(),
        })
    }
}

/// How a map's keys become Python keys.
trait Keys {
    fn key<'py>(c: &mut ToPy<'py>, k: &Value) -> PyResult<Bound<'py, PyAny>>;
    /// The error for `k` of the map `m`, whose Python `key` an earlier key became.
    fn clash<'py>(c: &mut ToPy<'py>, m: &MapData, k: &Value, key: &Bound<'py, PyAny>) -> PyErr {
        let whole = Value::Map(m.clone());
        c.collision("a map has keys", &whole, m.iter().map(|(k, _)| k), k, key)
    }
}

/// A value's keys as they are: keywords as keyword objects, the rest hashable.
struct Plain;

impl Keys for Plain {
    fn key<'py>(c: &mut ToPy<'py>, k: &Value) -> PyResult<Bound<'py, PyAny>> {
        c.hashable(k)
    }
}

/// A tool's named arguments: keyword keys as strings with `-` made `_`.
struct Named;

impl Keys for Named {
    fn key<'py>(c: &mut ToPy<'py>, k: &Value) -> PyResult<Bound<'py, PyAny>> {
        match k {
            Value::Keyword(s) => Ok(PyString::new(c.py, &s.replace('-', "_")).into_any()),
            other => c.hashable(other),
        }
    }
    fn clash<'py>(_: &mut ToPy<'py>, _: &MapData, k: &Value, key: &Bound<'py, PyAny>) -> PyErr {
        named_clash(key, k)
    }
}

/// Two of a tool's named-argument keys, different in the program (`:a-b` and `:a_b`, `:a` and
/// `"a"`), that become the one Python `key`: Python would keep only the last.
fn named_clash(key: &Bound<'_, PyAny>, k: &Value) -> PyErr {
    let shown = key.repr().map(|r| r.to_string()).unwrap_or_default();
    pyo3::exceptions::PyValueError::new_err(format!(
        "two named arguments become the one Python key {shown}, which would keep only one: {} \
         and an earlier key (a keyword's `-` becomes `_`; a keyword equals a string of its text)",
        crate::format::mention(k)
    ))
}

impl<'py> ToPy<'py> {
    /// The error for `later`, whose Python form `later_py` equals that of an earlier one of
    /// `all`, the keys or members of `whole`: Python would keep only one of them.
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
            if let Ok(o) = self.hashable(x) {
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
