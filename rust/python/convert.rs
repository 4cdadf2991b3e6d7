//! Python <-> core value conversion. Dispatches on exact types first (the common JSON shapes),
//! interns map keys, and builds the error path (`data.orders[3].created`) only when failing.

use ahash::{AHashMap, AHashSet};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString, PyTuple, PyType,
};

#[allow(unused_imports)]
use crate::value::Str;
use crate::value::{is_keyword_text, Value, ValueMap, ValueSet};

pub const MAX_INPUT_DEPTH: usize = 1_000;
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
}

impl ConvError {
    fn new(message: impl Into<String>) -> Self {
        ConvError {
            path: Vec::new(),
            message: message.into(),
        }
    }
    fn under(mut self, seg: Seg) -> Self {
        self.path.push(seg);
        self
    }
    pub fn into_pyerr(self, root: &str) -> PyErr {
        let mut p = root.to_string();
        for seg in self.path.iter().rev() {
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

/// Converts Python data to core values, interning strings used as map keys.
pub struct ToValue<'py> {
    keys: AHashSet<Str>,
    key_objects: AHashMap<usize, Value>,
    values: AHashSet<Str>,
    kw_type: Bound<'py, PyType>,
}

impl<'py> ToValue<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(ToValue {
            keys: AHashSet::new(),
            key_objects: AHashMap::new(),
            values: AHashSet::new(),
            kw_type: keyword_type(py)?.clone(),
        })
    }

    /// Short strings (categories, ids, statuses) repeat across records: sharing one allocation
    /// per distinct text saves memory and keeps the data cache-friendly.
    fn short_string(&mut self, s: &str) -> Str {
        if s.len() > 32 {
            return Str::from(s);
        }
        if let Some(k) = self.values.get(s) {
            return k.clone();
        }
        let k = Str::from(s);
        if self.values.len() < 65_536 {
            self.values.insert(k.clone());
        }
        k
    }

    fn intern(&mut self, s: &str) -> Str {
        if let Some(k) = self.keys.get(s) {
            return k.clone();
        }
        let k: Str = if is_keyword_text(s) {
            crate::value::intern_keyword(s)
        } else {
            Str::from(s)
        };
        if self.keys.len() < 100_000 {
            self.keys.insert(k.clone());
        }
        k
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
            let text = s.to_str().map_err(|e| ConvError::new(e.to_string()))?;
            return Ok(Value::Str(self.short_string(text)));
        }
        if let Ok(d) = obj.cast_exact::<PyDict>() {
            return self.dict(d, depth);
        }
        if let Ok(l) = obj.cast_exact::<PyList>() {
            return self.items(l.len(), l.iter(), depth);
        }
        if obj.is_exact_instance_of::<PyBool>() {
            return Ok(Value::Bool(obj.is_truthy().unwrap_or(false)));
        }
        if obj.is_exact_instance_of::<PyInt>() {
            return int_value(obj);
        }
        if let Ok(f) = obj.cast_exact::<PyFloat>() {
            return Ok(Value::Float(f.value()));
        }
        self.slow(obj, depth)
    }

    /// A list or tuple: a vector, with the index of a failing element in the error path.
    fn items(
        &mut self,
        len: usize,
        iter: impl Iterator<Item = Bound<'py, PyAny>>,
        depth: usize,
    ) -> Result<Value, ConvError> {
        let mut out = Vec::with_capacity(len);
        for (i, item) in iter.enumerate() {
            out.push(
                self.value(&item, depth + 1)
                    .map_err(|e| e.under(Seg::Index(i)))?,
            );
        }
        Ok(Value::vector(out))
    }

    #[inline(never)]
    fn slow(&mut self, obj: &Bound<'py, PyAny>, depth: usize) -> Result<Value, ConvError> {
        if obj.is_instance(&self.kw_type).unwrap_or(false) {
            let s: String = obj
                .extract()
                .map_err(|e: PyErr| ConvError::new(e.to_string()))?;
            return Ok(Value::Keyword(self.intern(&s)));
        }
        if let Ok(s) = obj.cast::<PyString>() {
            return Ok(Value::Str(Str::from(
                s.to_str().map_err(|e| ConvError::new(e.to_string()))?,
            )));
        }
        if obj.is_instance_of::<PyBool>() {
            return Ok(Value::Bool(obj.is_truthy().unwrap_or(false)));
        }
        if obj.is_instance_of::<PyInt>() {
            return int_value(obj);
        }
        if let Ok(f) = obj.cast::<PyFloat>() {
            return Ok(Value::Float(f.value()));
        }
        if let Ok(d) = obj.cast::<PyDict>() {
            return self.dict(d, depth);
        }
        if let Ok(l) = obj.cast::<PyList>() {
            return self.items(l.len(), l.iter(), depth);
        }
        if let Ok(t) = obj.cast::<PyTuple>() {
            return self.items(t.len(), t.iter(), depth);
        }
        if obj.is_instance_of::<PySet>() || obj.is_instance_of::<PyFrozenSet>() {
            let mut out = ValueSet::default();
            let iter = obj.try_iter().map_err(|e| ConvError::new(e.to_string()))?;
            for item in iter {
                let item = item.map_err(|e| ConvError::new(e.to_string()))?;
                out.insert(self.value(&item, depth + 1)?);
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
        let mut m = ValueMap::with_capacity_and_hasher(d.len(), Default::default());
        for (k, v) in d.iter() {
            let key = self.key(&k, depth)?;
            let val = self.value(&v, depth + 1).map_err(|e| {
                let seg = match &key {
                    Value::Str(s) | Value::Keyword(s) => Seg::Key(s.to_string()),
                    other => Seg::Key(format!("{other:?}")),
                };
                e.under(seg)
            })?;
            m.insert(key, val);
        }
        Ok(Value::map(m))
    }

    /// A `str` key that is valid keyword text becomes a keyword, so JSON-shaped data reads and
    /// prints as idiomatic Clojure (`{:name "Ada"}`, `(:name p)`).
    fn key(&mut self, k: &Bound<'py, PyAny>, depth: usize) -> Result<Value, ConvError> {
        if let Ok(s) = k.cast::<PyString>() {
            // Records repeat the same key objects: a pointer lookup skips hashing the text.
            // The input holds every key alive for the whole conversion, so pointers are stable.
            let ptr = k.as_ptr() as usize;
            if let Some(v) = self.key_objects.get(&ptr) {
                return Ok(v.clone());
            }
            let text = s.to_str().map_err(|e| ConvError::new(e.to_string()))?;
            let interned = self.intern(text);
            let v = if is_keyword_text(text) {
                Value::Keyword(interned)
            } else {
                Value::Str(interned)
            };
            if self.key_objects.len() < 65_536 {
                self.key_objects.insert(ptr, v.clone());
            }
            return Ok(v);
        }
        self.value(k, depth + 1)
    }
}

fn int_value(obj: &Bound<'_, PyAny>) -> Result<Value, ConvError> {
    match obj.extract::<i64>() {
        Ok(i) => Ok(Value::Int(i)),
        Err(_) => Err(ConvError::new(format!(
            "integer {} does not fit in 64 bits (PTC-Lisp integers are exact i64); pass it as a float or a string",
            obj.str().map(|s| s.to_string()).unwrap_or_default()
        ))),
    }
}

/// Converts core values to Python, caching keyword objects.
pub struct ToPy<'py> {
    py: Python<'py>,
    depth: usize,
    kw_type: Bound<'py, PyType>,
    keywords: AHashMap<Str, Py<PyAny>>,
}

impl<'py> ToPy<'py> {
    pub fn new(py: Python<'py>) -> PyResult<Self> {
        Ok(ToPy {
            py,
            depth: 0,
            kw_type: keyword_type(py)?.clone(),
            keywords: AHashMap::new(),
        })
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
        self.value(v, false)
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
        self.depth += 1;
        let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            Ok(match v {
                Value::Nil => py.None().into_bound(py),
                Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
                Value::Int(i) => i.into_pyobject(py)?.into_any(),
                Value::Float(f) => PyFloat::new(py, *f).into_any(),
                Value::Str(s) => PyString::new(py, s).into_any(),
                Value::Keyword(k) => self.keyword(k)?,
                Value::Vector(xs) => {
                    if hashable {
                        let items: Vec<Bound<'py, PyAny>> = xs
                            .iter()
                            .map(|x| self.value(x, true))
                            .collect::<PyResult<_>>()?;
                        PyTuple::new(py, items)?.into_any()
                    } else {
                        let list = PyList::empty(py);
                        for x in xs.iter() {
                            list.append(self.value(x, false)?)?;
                        }
                        list.into_any()
                    }
                }
                Value::Map(m) => {
                    if hashable {
                        let items: Vec<Bound<'py, PyAny>> = m
                            .iter()
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
                        for (k, val) in m.iter() {
                            d.set_item(self.value(k, true)?, self.value(val, false)?)?;
                        }
                        if d.len() != m.len() {
                            // `ptc.Keyword("a") == "a"`: a map with both :a and "a" would lose one
                            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                                "a map has keys that are equal in Python (a keyword and a string with the same text): {}",
                                crate::format::to_clojure(v, Some(5), Some(80)).0
                            )));
                        }
                        d.into_any()
                    }
                }
                Value::Set(s) => {
                    let items: Vec<Bound<'py, PyAny>> = s
                        .iter()
                        .map(|x| self.value(x, true))
                        .collect::<PyResult<_>>()?;
                    if hashable {
                        PyFrozenSet::new(py, &items)?.into_any()
                    } else {
                        PySet::new(py, &items)?.into_any()
                    }
                }
                Value::Date(days) => {
                    let date = DATE_TYPE.import(py, "datetime", "date")?;
                    date.call_method1("fromordinal", (*days as i64 + 719_163,))?
                }
                Value::DateTime(ms) => {
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
