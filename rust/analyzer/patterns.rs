//! Destructuring patterns: vectors with `&` and `:as`, maps with `:keys`, `:strs`, `:or`.

use super::names::check_bindable;
use super::{err_at, Analyzer};
use crate::error::{Pos, Result};
use crate::ir::{MapPatEntry, Pattern};
use crate::reader::{Form, FormKind};
use crate::value::{Str, Value};

impl Analyzer {
    pub(super) fn pattern(&mut self, f: &Form) -> Result<Pattern> {
        match &f.kind {
            FormKind::Symbol(s) => {
                check_bindable(s, f.pos)?;
                Ok(Pattern::Bind(self.bind(s)))
            }
            FormKind::Vector(items) => {
                let mut pats = Vec::new();
                let mut rest = None;
                let mut i = 0;
                while i < items.len() {
                    let it = &items[i];
                    if it.symbol_name() == Some("&") {
                        if i + 2 != items.len() {
                            return Err(err_at(
                                it.pos,
                                "& must be followed by exactly one pattern",
                            ));
                        }
                        rest = Some(Box::new(self.pattern(&items[i + 1])?));
                        break;
                    }
                    if matches!(&it.kind, FormKind::Keyword(k) if k.as_str() == "as") {
                        return Err(
                            err_at(it.pos, ":as inside a vector pattern is not supported")
                                .with_hint(
                                    "bind the whole value with let first, then destructure it",
                                ),
                        );
                    }
                    pats.push(self.pattern(it)?);
                    i += 1;
                }
                Ok(Pattern::Vector {
                    items: pats,
                    rest,
                    pos: f.pos,
                })
            }
            FormKind::Map(items) => self.map_pattern(items, f.pos),
            _ => Err(err_at(f.pos, "invalid binding pattern").with_hint(
                "bind a name, a vector pattern [a b & more] or a map pattern {:keys [a b]}",
            )),
        }
    }

    pub(super) fn map_pattern(&mut self, items: &[Form], pos: Pos) -> Result<Pattern> {
        let mut entries: Vec<MapPatEntry> = Vec::new();
        let mut defaults: Vec<(Str, Value, Pos)> = Vec::new();
        let mut as_name: Option<(Str, Pos)> = None;
        let mut has_content = false;
        let mut pending: Vec<(Str, Value, Option<&Form>)> = Vec::new(); // (local, key, nested pattern)
        for pair in items.chunks(2) {
            let (k, v) = (&pair[0], &pair[1]);
            match &k.kind {
                FormKind::Keyword(kw) if kw.as_str() == "keys" => {
                    has_content = true;
                    let FormKind::Vector(names) = &v.kind else {
                        return Err(err_at(v.pos, ":keys takes a vector of names")
                            .with_hint("{:keys [a b]}"));
                    };
                    for n in names {
                        let name: Str = match &n.kind {
                            FormKind::Symbol(s) => s.clone(),
                            FormKind::Keyword(s) => s.clone(),
                            _ => {
                                return Err(err_at(
                                    n.pos,
                                    ":keys names must be symbols or keywords",
                                ))
                            }
                        };
                        pending.push((name.clone(), Value::Keyword(name), None));
                    }
                }
                FormKind::Keyword(kw) if kw.as_str() == "or" => {
                    has_content = true;
                    let FormKind::Map(ds) = &v.kind else {
                        return Err(err_at(v.pos, ":or takes a map of defaults")
                            .with_hint("{:keys [a] :or {a 5}}"));
                    };
                    for d in ds.chunks(2) {
                        let name = match &d[0].kind {
                            FormKind::Symbol(s) => s.clone(),
                            _ => {
                                return Err(err_at(
                                    d[0].pos,
                                    ":or defaults are keyed by the bound symbol",
                                )
                                .with_hint("{:keys [a] :or {a 5}}"))
                            }
                        };
                        let val = match &d[1].kind {
                            FormKind::Nil => Value::Nil,
                            FormKind::Bool(b) => Value::Bool(*b),
                            FormKind::Int(i) => Value::Int(*i),
                            FormKind::Float(x) => Value::Float(*x),
                            FormKind::Str(s) => Value::Str(s.clone()),
                            FormKind::Keyword(s) => Value::Keyword(s.clone()),
                            _ => return Err(err_at(d[1].pos, ":or defaults must be literals (number, string, keyword, boolean or nil)")),
                        };
                        defaults.push((name, val, d[0].pos));
                    }
                }
                FormKind::Keyword(kw) if kw.as_str() == "as" => match &v.kind {
                    FormKind::Symbol(s) => as_name = Some((s.clone(), v.pos)),
                    _ => return Err(err_at(v.pos, ":as takes a name")),
                },
                FormKind::Keyword(kw) if kw.as_str() == "strs" || kw.as_str() == "syms" => {
                    return Err(
                        err_at(k.pos, format!(":{kw} destructuring is not supported"))
                            .with_hint("use :keys, which also matches string keys"),
                    );
                }
                FormKind::Symbol(_) | FormKind::Vector(_) | FormKind::Map(_) => {
                    has_content = true;
                    let key = match &v.kind {
                        FormKind::Keyword(s) => Value::Keyword(s.clone()),
                        FormKind::Str(s) => Value::Str(s.clone()),
                        FormKind::Symbol(s) => Value::Keyword(s.clone()),
                        FormKind::Int(i) => Value::Int(*i),
                        _ => {
                            return Err(err_at(
                                v.pos,
                                "a rename pattern maps a name to a key: {local :key}",
                            ))
                        }
                    };
                    let local = k
                        .symbol_name()
                        .map(Str::from)
                        .unwrap_or_else(|| Str::from(""));
                    pending.push((local, key, Some(k)));
                }
                _ => {
                    return Err(err_at(k.pos, "invalid map pattern entry")
                        .with_hint("map patterns use :keys, :or, :as and {local :key} renames"))
                }
            }
        }
        if !has_content {
            return Err(err_at(pos, "a map pattern needs :keys, a rename or :or")
                .with_hint("{:keys [a b] :as whole}"));
        }
        for (local, key, nested) in pending {
            let pattern = match nested {
                Some(f) => self.pattern(f)?,
                None => {
                    check_bindable(&local, pos)?;
                    Pattern::Bind(self.bind(&local))
                }
            };
            let default = defaults
                .iter()
                .find(|(n, _, _)| *n == local)
                .map(|(_, v, _)| v.clone());
            entries.push(MapPatEntry {
                key,
                pattern,
                default,
            });
        }
        let as_slot = match as_name {
            Some((n, p)) => {
                check_bindable(&n, p)?;
                Some(self.bind(&n))
            }
            None => None,
        };
        Ok(Pattern::Map {
            entries,
            as_slot,
            pos,
        })
    }
}
