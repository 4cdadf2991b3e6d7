//! JSON text straight to core values, without building Python objects first: object keys that
//! are valid keyword text become (interned) keywords, as with Python input; short strings that
//! repeat share one allocation. serde_json's own recursion limit bounds nesting.

use std::fmt;

use ahash::AHashSet;
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::error::{Error, ErrorKind};
use crate::value::{intern_keyword, is_keyword_text, Str, Value, ValueMap};

struct Seed<'s> {
    strings: &'s mut AHashSet<Str>,
}

impl Seed<'_> {
    fn string(&mut self, s: &str) -> Str {
        if s.len() > 32 {
            return Str::from(s);
        }
        if let Some(k) = self.strings.get(s) {
            return k.clone();
        }
        let k = Str::from(s);
        if self.strings.len() < 65_536 {
            self.strings.insert(k.clone());
        }
        k
    }

    fn key(&mut self, s: &str) -> Value {
        if is_keyword_text(s) {
            Value::Keyword(intern_keyword(s))
        } else {
            Value::Str(self.string(s))
        }
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }
    fn visit_u64<E: serde::de::Error>(self, u: u64) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::Int)
            .map_err(|_| E::custom(format!("integer {u} does not fit in 64 bits")))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }
    fn visit_str<E>(mut self, s: &str) -> Result<Value, E> {
        Ok(Value::Str(self.string(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(Seed {
            strings: &mut *self.strings,
        })? {
            out.push(v);
        }
        Ok(Value::vector(out))
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut out = ValueMap::default();
        while let Some(key) = map.next_key_seed(KeySeed { seed: &mut self })? {
            let v = map.next_value_seed(Seed {
                strings: &mut *self.strings,
            })?;
            out.insert(key, v);
        }
        Ok(Value::map(out))
    }
}

/// An object key, read without allocating a String (keywords are interned by text).
struct KeySeed<'k, 's> {
    seed: &'k mut Seed<'s>,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_, '_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_, '_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(self.seed.key(s))
    }
}

/// Parses JSON text into a core value.
pub fn from_json(text: &str) -> Result<Value, Error> {
    let mut strings = AHashSet::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let v = Seed {
        strings: &mut strings,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(|e| Error::new(ErrorKind::Type, format!("invalid JSON data: {e}")))?;
    Ok(v)
}
