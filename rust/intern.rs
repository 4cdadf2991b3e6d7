//! Text interning for the loaders (Python input and JSON text): map keys become shared
//! keywords or strings, and short string values that repeat (categories, ids, statuses)
//! share one allocation per distinct text. One interner lives for one load.

use ahash::AHashMap;

use crate::value::{intern_keyword, is_keyword_text, Str, Value};

/// Texts this long or shorter are held in place in the tables.
const SHORT: usize = 32;
/// Distinct texts one table keeps; past it, texts are still converted, just not shared.
const CAP: usize = 65_536;

/// The text of a short string held in place: a table lookup compares candidates without
/// following a pointer to each one's heap text (a cache miss per lookup in a large table).
#[derive(PartialEq, Eq, Hash)]
struct ShortText {
    len: u8,
    bytes: [u8; SHORT],
}

impl ShortText {
    #[inline]
    fn new(s: &str) -> Option<ShortText> {
        let len = s.len();
        if len > SHORT {
            return None;
        }
        let mut bytes = [0; SHORT];
        bytes[..len].copy_from_slice(s.as_bytes());
        Some(ShortText {
            len: len as u8,
            bytes,
        })
    }
}

#[derive(Default)]
pub struct Interner {
    strings: AHashMap<ShortText, Str>,
    keys: AHashMap<ShortText, Value>,
    /// Long keys are rare but must still be shared: records are recognised by their keys'
    /// addresses.
    long_keys: AHashMap<Box<str>, Value>,
}

impl Interner {
    /// A string value, shared with earlier equal ones when short.
    #[inline]
    pub fn string(&mut self, s: &str) -> Str {
        let Some(t) = ShortText::new(s) else {
            return Str::from(s);
        };
        if let Some(k) = self.strings.get(&t) {
            return k.clone();
        }
        let k = Str::from(s);
        if self.strings.len() < CAP {
            self.strings.insert(t, k.clone());
        }
        k
    }

    /// A map key: valid keyword text becomes a keyword (so JSON-shaped data reads and prints
    /// as idiomatic Clojure: `{:name "Ada"}`, `(:name p)`), other text a string.
    #[inline]
    pub fn key(&mut self, s: &str) -> Value {
        match ShortText::new(s) {
            Some(t) => {
                if let Some(k) = self.keys.get(&t) {
                    return k.clone();
                }
                let k = new_key(s);
                if self.keys.len() < CAP {
                    self.keys.insert(t, k.clone());
                }
                k
            }
            None => {
                if let Some(k) = self.long_keys.get(s) {
                    return k.clone();
                }
                let k = new_key(s);
                if self.long_keys.len() < CAP {
                    self.long_keys.insert(s.into(), k.clone());
                }
                k
            }
        }
    }
}

fn new_key(s: &str) -> Value {
    if is_keyword_text(s) {
        Value::Keyword(intern_keyword(s))
    } else {
        Value::Str(Str::from(s))
    }
}
