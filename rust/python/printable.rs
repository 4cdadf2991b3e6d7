//! Printing Python objects in place: the core printer walks them through `Printable`, so
//! formatting the first 3 items of a 10,000,000-element list touches 3 items.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyDate, PyDateTime, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PySet, PyString,
    PyTuple, PyType,
};

use crate::format::{key_shape, Printable, Shape};

#[derive(Clone)]
pub struct PyNode<'py> {
    obj: Bound<'py, PyAny>,
    kw: Bound<'py, PyType>,
    is_key: bool,
}

impl<'py> PyNode<'py> {
    pub fn new(obj: Bound<'py, PyAny>, kw: Bound<'py, PyType>) -> Self {
        PyNode {
            obj,
            kw,
            is_key: false,
        }
    }

    fn child(&self, obj: Bound<'py, PyAny>, is_key: bool) -> Self {
        PyNode {
            obj,
            kw: self.kw.clone(),
            is_key,
        }
    }

    pub fn type_label(&self) -> String {
        match self.shape() {
            Shape::Nil => "nil".into(),
            Shape::Bool(_) => "boolean".into(),
            Shape::Int(_) | Shape::BigInt(_) => "integer".into(),
            Shape::Float(_) => "float".into(),
            Shape::Str(_) => "string".into(),
            Shape::Keyword(_) => "keyword".into(),
            Shape::Vector(n) => format!("list[{n}]"),
            Shape::Set(n) => format!("set[{n}]"),
            Shape::Map(n) => format!("map[{n}]"),
            Shape::Raw(_) => {
                if self.obj.is_instance_of::<PyDateTime>() {
                    "datetime".into()
                } else if self.obj.is_instance_of::<PyDate>() {
                    "date".into()
                } else if self.obj.is_callable() {
                    "#fn[...]".into()
                } else {
                    self.obj
                        .get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_else(|_| "object".into())
                }
            }
        }
    }
}

impl<'py> Printable for PyNode<'py> {
    fn shape(&self) -> Shape<'_> {
        let o = &self.obj;
        if o.is_none() {
            return Shape::Nil;
        }
        if o.is_instance_of::<PyBool>() {
            return Shape::Bool(o.is_truthy().unwrap_or(false));
        }
        if o.is_instance_of::<PyInt>() {
            return match o.extract::<i64>() {
                Ok(i) => Shape::Int(i),
                Err(_) => Shape::BigInt(o.str().map(|s| s.to_string()).unwrap_or_default()),
            };
        }
        if let Ok(f) = o.cast::<PyFloat>() {
            return Shape::Float(f.value());
        }
        if let Ok(s) = o.cast::<PyString>() {
            let text = s.to_cow().unwrap_or(Cow::Borrowed(""));
            if o.is_instance(&self.kw).unwrap_or(false) {
                return Shape::Keyword(Cow::Owned(text.into_owned()));
            }
            if self.is_key {
                return match key_shape(&text) {
                    Shape::Keyword(_) => Shape::Keyword(Cow::Owned(text.into_owned())),
                    _ => Shape::Str(Cow::Owned(text.into_owned())),
                };
            }
            return Shape::Str(Cow::Owned(text.into_owned()));
        }
        if let Ok(l) = o.cast::<PyList>() {
            return Shape::Vector(l.len());
        }
        if let Ok(t) = o.cast::<PyTuple>() {
            return Shape::Vector(t.len());
        }
        if let Ok(d) = o.cast::<PyDict>() {
            return Shape::Map(d.len());
        }
        if let Ok(s) = o.cast::<PySet>() {
            return Shape::Set(s.len());
        }
        if let Ok(s) = o.cast::<PyFrozenSet>() {
            return Shape::Set(s.len());
        }
        if let Some(text) = date_text(o) {
            // as the core prints its dates: ISO text in quotes
            return Shape::Raw(Cow::Owned(format!("\"{text}\"")));
        }
        if o.is_callable() {
            return Shape::Raw(Cow::Borrowed("#<fn>"));
        }
        Shape::Raw(Cow::Owned(
            o.repr()
                .map(|r| r.to_string())
                .unwrap_or_else(|_| "#<object>".into()),
        ))
    }

    fn seq_items(&self, n: usize) -> Vec<Self> {
        let o = &self.obj;
        if let Ok(l) = o.cast::<PyList>() {
            return (0..n.min(l.len()))
                .filter_map(|i| l.get_item(i).ok())
                .map(|x| self.child(x, false))
                .collect();
        }
        if let Ok(t) = o.cast::<PyTuple>() {
            return (0..n.min(t.len()))
                .filter_map(|i| t.get_item(i).ok())
                .map(|x| self.child(x, false))
                .collect();
        }
        match o.try_iter() {
            Ok(it) => it
                .take(n)
                .filter_map(Result::ok)
                .map(|x| self.child(x, false))
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn map_entries(&self) -> Box<dyn Iterator<Item = (Self, Self)> + '_> {
        match self.obj.cast::<PyDict>() {
            Ok(d) => Box::new(
                d.iter()
                    .map(move |(k, v)| (self.child(k, true), self.child(v, false))),
            ),
            Err(_) => Box::new(std::iter::empty()),
        }
    }
}

/// A `datetime.date` or `datetime.datetime` as ISO text (a UTC datetime ends in `Z`, as the
/// core's do); `None` for anything else.
fn date_text(o: &Bound<'_, PyAny>) -> Option<String> {
    if !o.is_instance_of::<PyDate>() {
        return None; // datetime is a subclass of date
    }
    let text: String = o.call_method0("isoformat").ok()?.extract().ok()?;
    Some(match text.strip_suffix("+00:00") {
        Some(utc) => format!("{utc}Z"),
        None => text,
    })
}
