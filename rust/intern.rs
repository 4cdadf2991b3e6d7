//! Text interning for the loaders (Python input and JSON text): map keys become shared
//! keywords or strings, and short string values that repeat (categories, ids, statuses)
//! share one allocation per distinct text. One interner lives for one load.

use ahash::{AHashMap, RandomState};
use hashbrown::HashTable;

use crate::value::{intern_keyword, is_keyword_text, Str, Value};

/// Texts this long or shorter are shared (values) or held in place in the key table.
const SHORT: usize = 32;
/// Distinct texts one table keeps; past it, texts are still converted, just not shared.
const CAP: usize = 65_536;

/// The text of a short key held in place: a lookup compares candidates without following a
/// pointer to each one's heap text.
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
    /// Short string values, found by their text's hash. An entry is only the shared string's
    /// pointer (8 bytes: 20,000 distinct names take 256 KB, not 1.5 MB), and the one candidate
    /// the table's hash tags leave is compared in the string's own allocation, the line its
    /// reference count is on: a lookup costs one memory load where in-place texts cost two.
    strings: HashTable<Str>,
    hasher: RandomState,
    keys: AHashMap<ShortText, Value>,
    /// Long keys are rare but must still be shared: records are recognised by their keys'
    /// addresses.
    long_keys: AHashMap<Box<str>, Value>,
}

impl Interner {
    /// A string value, shared with earlier equal ones when short.
    #[inline]
    pub fn string(&mut self, s: &str) -> Str {
        if s.len() > SHORT {
            return Str::from(s);
        }
        let hash = self.hasher.hash_one(s);
        if let Some(k) = self.strings.find(hash, |k| k.as_str() == s) {
            return k.clone();
        }
        let k = Str::from(s);
        if self.strings.len() < CAP {
            let hasher = &self.hasher;
            self.strings
                .insert_unique(hash, k.clone(), |k| hasher.hash_one(k.as_str()));
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
