//! Binding values to patterns (destructuring) in frame slots.

use super::{EvalResult, Interp};
use crate::error::{Error, ErrorKind};
use crate::ir::Pattern;
use crate::value::{flex_get, Value};

impl<'a> Interp<'a> {
    pub fn bind(&mut self, p: &Pattern, v: Value, base: usize) -> EvalResult<()> {
        match p {
            Pattern::Bind(s) => {
                self.stack[base + *s as usize] = v;
                Ok(())
            }
            Pattern::Vector { items, rest, pos } => {
                let elems: &[Value] = match &v {
                    Value::Nil => &[],
                    Value::Vector(xs) => xs,
                    other => {
                        return Err(Error::new(
                            ErrorKind::Destructure,
                            format!(
                            "cannot destructure {} with a vector pattern; it needs a vector or nil",
                            other.describe()
                        ),
                        )
                        .at(*pos)
                        .with_hint(match other {
                            Value::Map(_) => "a map destructures with {:keys [a b]}; a [k v] pattern takes one entry, as in (doseq [[k v] m] ...)",
                            _ => "only vectors destructure with [a b]; bind the value to a plain name",
                        })
                        .into())
                    }
                };
                let vals: Vec<Value> = (0..items.len())
                    .map(|i| elems.get(i).cloned().unwrap_or(Value::Nil))
                    .collect();
                let rest_val = rest.as_ref().map(|_| {
                    Value::vector(
                        elems
                            .get(items.len()..)
                            .map_or_else(Vec::new, |s| s.to_vec()),
                    )
                });
                for (pat, val) in items.iter().zip(vals) {
                    self.bind(pat, val, base)?;
                }
                if let (Some(r), Some(rv)) = (rest, rest_val) {
                    self.bind(r, rv, base)?;
                }
                Ok(())
            }
            Pattern::Map {
                entries,
                as_slot,
                pos,
            } => {
                let m = match &v {
                    Value::Nil => None,
                    Value::Map(m) => Some(m.clone()),
                    other => {
                        return Err(Error::new(
                            ErrorKind::Destructure,
                            format!(
                                "cannot destructure {} with a map pattern; it needs a map or nil",
                                other.describe()
                            ),
                        )
                        .at(*pos)
                        .with_hint(match other {
                            Value::Vector(_) => "a vector destructures by position with [a b]; to take each map of a vector use map or doseq",
                            _ => "only maps destructure with {:keys [...]}; bind the value to a plain name",
                        })
                        .into())
                    }
                };
                for e in entries {
                    let found = m.as_ref().and_then(|m| flex_get(m, &e.key)).cloned();
                    let val = match found {
                        Some(x) => x,
                        None => e.default.clone().unwrap_or(Value::Nil),
                    };
                    self.bind(&e.pattern, val, base)?;
                }
                if let Some(s) = as_slot {
                    self.stack[base + *s as usize] = v;
                }
                Ok(())
            }
        }
    }
}
