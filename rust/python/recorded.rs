//! Values as a run's record holds them, and the digest of a state.
//!
//! Values are written losslessly as JSON-ready trees: nil, booleans, integers, strings and
//! vectors as themselves; `{"f": "1.5"}` a float (its exact shortest text, also `NaN`, `inf`);
//! `{"k": "name"}` a keyword; `{"m": [[k, v], ...]}` a map in its order; `{"s": [...]}` a set;
//! `{"date": days}`, `{"inst": ms}`; `{"tool": name}` a tool value; `{"fn": label}` a function
//! or regex, read back as its label (a record compares it so: `eval::recordable`).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use sha2::{Digest, Sha256};

use crate::value::{Str, Value};

/// Nesting a record holds, as for values converted to Python.
const MAX_DEPTH: usize = super::convert::MAX_OUTPUT_DEPTH;

/// `v` as a JSON-ready tree (see the module's comment).
pub fn encode<'py>(py: Python<'py>, v: &Value, depth: usize) -> PyResult<Bound<'py, PyAny>> {
    if depth > MAX_DEPTH {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "a value of the run is nested more than {MAX_DEPTH} levels deep and cannot be recorded"
        )));
    }
    let tagged = |k: &str, inner: Bound<'py, PyAny>| -> PyResult<Bound<'py, PyAny>> {
        let d = PyDict::new(py);
        d.set_item(k, inner)?;
        Ok(d.into_any())
    };
    let seq = |xs: &mut dyn Iterator<Item = &Value>| -> PyResult<Bound<'py, PyAny>> {
        let l = PyList::empty(py);
        for x in xs {
            l.append(crate::guard::deeper(|| encode(py, x, depth + 1))?)?;
        }
        Ok(l.into_any())
    };
    Ok(match v {
        Value::Nil => py.None().into_bound(py),
        Value::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => tagged("f", PyString::new(py, &format!("{f:?}")).into_any())?,
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Keyword(k) => tagged("k", PyString::new(py, k).into_any())?,
        Value::Vector(xs) => seq(&mut xs.iter())?,
        Value::Set(s) => tagged("s", seq(&mut s.0.iter())?)?,
        Value::Map(m) => {
            let l = PyList::empty(py);
            for (k, val) in m.iter() {
                let pair = PyList::empty(py);
                pair.append(crate::guard::deeper(|| encode(py, k, depth + 1))?)?;
                pair.append(crate::guard::deeper(|| encode(py, val, depth + 1))?)?;
                l.append(pair)?;
            }
            tagged("m", l.into_any())?
        }
        Value::Date(d) => tagged("date", d.into_pyobject(py)?.into_any())?,
        Value::DateTime(ms) => tagged("inst", ms.into_pyobject(py)?.into_any())?,
        Value::Tool(name) => tagged("tool", PyString::new(py, name).into_any())?,
        other => match crate::eval::recordable(other) {
            Value::Str(label) => tagged("fn", PyString::new(py, &label).into_any())?,
            _ => tagged("fn", PyString::new(py, "#fn").into_any())?,
        },
    })
}

/// A JSON-ready tree read back as a value; the error says what was wrong and where (`at`).
pub fn decode(obj: &Bound<'_, PyAny>, at: &str, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("{at}: nested more than {MAX_DEPTH} levels deep"));
    }
    if obj.is_none() {
        return Ok(Value::Nil);
    }
    if let Ok(b) = obj.cast::<pyo3::types::PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<pyo3::types::PyInt>() {
        return obj
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| format!("{at}: an integer out of range"));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        let s = s
            .to_str()
            .map_err(|_| format!("{at}: text that is not valid Unicode"))?;
        return Ok(Value::string(s.to_string()));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for (i, x) in l.iter().enumerate() {
            out.push(crate::guard::deeper(|| {
                decode(&x, &format!("{at}[{i}]"), depth + 1)
            })?);
        }
        return Ok(Value::vector(out));
    }
    let Ok(d) = obj.cast::<PyDict>() else {
        return Err(format!(
            "{at}: expected a recorded value, got {}",
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ));
    };
    if d.len() != 1 {
        return Err(format!("{at}: a tagged value has exactly one key"));
    }
    let Some((tag, inner)) = d.iter().next() else {
        return Err(format!("{at}: an empty tagged value"));
    };
    let tag: String = tag
        .extract()
        .map_err(|_| format!("{at}: a tag that is not text"))?;
    let text = |what: &str| -> Result<String, String> {
        inner
            .extract::<String>()
            .map_err(|_| format!("{at}.{tag}: expected {what}"))
    };
    let int = |what: &str| -> Result<i64, String> {
        inner
            .extract::<i64>()
            .map_err(|_| format!("{at}.{tag}: expected {what}"))
    };
    let items = || -> Result<Bound<'_, PyList>, String> {
        inner
            .cast::<PyList>()
            .cloned()
            .map_err(|_| format!("{at}.{tag}: expected a list"))
    };
    Ok(match tag.as_str() {
        "f" => {
            let t = text("a number's text")?;
            Value::Float(
                t.parse::<f64>()
                    .map_err(|_| format!("{at}.f: {t:?} is not a number"))?,
            )
        }
        "k" => Value::Keyword(Str::from(text("a keyword's name")?.as_str())),
        "tool" => Value::Tool(Str::from(text("a tool's name")?.as_str())),
        "fn" => Value::string(text("a function's label")?),
        "date" => Value::Date(
            i32::try_from(int("a day number")?).map_err(|_| format!("{at}.date: out of range"))?,
        ),
        "inst" => Value::DateTime(int("milliseconds")?),
        "s" => {
            let mut set = crate::value::ValueSet::default();
            for (i, x) in items()?.iter().enumerate() {
                set.insert(crate::guard::deeper(|| {
                    decode(&x, &format!("{at}.s[{i}]"), depth + 1)
                })?);
            }
            Value::Set(crate::value::Shared::new(crate::value::SetData(set)))
        }
        "m" => {
            let mut map = crate::value::ValueMap::default();
            for (i, pair) in items()?.iter().enumerate() {
                let at = format!("{at}.m[{i}]");
                let pair = pair
                    .cast::<PyList>()
                    .ok()
                    .filter(|p| p.len() == 2)
                    .ok_or_else(|| format!("{at}: expected a [key, value] pair"))?
                    .clone();
                let k = crate::guard::deeper(|| {
                    decode(
                        &pair.get_item(0).map_err(|e| e.to_string())?,
                        &at,
                        depth + 1,
                    )
                })?;
                let v = crate::guard::deeper(|| {
                    decode(
                        &pair.get_item(1).map_err(|e| e.to_string())?,
                        &at,
                        depth + 1,
                    )
                })?;
                map.insert(k, v);
            }
            Value::map(map)
        }
        other => return Err(format!("{at}: unknown tag {other:?}")),
    })
}

/// A stable digest of a value (the same in every process and version of this format): its
/// kind and content, fed to SHA-256 in order.
pub fn digest_into(h: &mut Sha256, v: &Value) {
    match v {
        Value::Nil => h.update([0]),
        Value::Bool(b) => h.update([1, *b as u8]),
        Value::Int(i) => {
            h.update([2]);
            h.update(i.to_le_bytes());
        }
        Value::Float(f) => {
            h.update([3]);
            h.update(f.to_bits().to_le_bytes());
        }
        Value::Str(s) => text(h, 4, s),
        Value::Keyword(s) => text(h, 5, s),
        Value::Vector(xs) => {
            h.update([6]);
            h.update((xs.len() as u64).to_le_bytes());
            for x in xs.iter() {
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        Value::Map(m) => {
            h.update([7]);
            h.update((m.len() as u64).to_le_bytes());
            for (k, x) in m.iter() {
                crate::guard::deeper(|| digest_into(h, k));
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        Value::Set(s) => {
            h.update([8]);
            h.update((s.0.len() as u64).to_le_bytes());
            for x in s.0.iter() {
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        Value::Date(d) => {
            h.update([9]);
            h.update(d.to_le_bytes());
        }
        Value::DateTime(ms) => {
            h.update([10]);
            h.update(ms.to_le_bytes());
        }
        Value::Tool(name) => text(h, 11, name),
        Value::Closure(c) => {
            // a function by where it is written, its parameters and what it closed over
            h.update([12]);
            if let Some(l) = c.lambda() {
                h.update(l.pos.line.to_le_bytes());
                h.update(l.pos.col.to_le_bytes());
            }
            text(h, 4, &c.code().params_text());
            for x in c.captures.iter() {
                crate::guard::deeper(|| digest_into(h, x));
            }
        }
        other => text(h, 13, &crate::format::fn_label(other)),
    }
}

fn text(h: &mut Sha256, tag: u8, s: &str) {
    h.update([tag]);
    h.update((s.len() as u64).to_le_bytes());
    h.update(s.as_bytes());
}

pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}
