//! Text interning for the loaders (Python input and JSON text): map keys become shared
//! keywords or strings, and short string values that repeat (categories, ids, statuses)
//! share one allocation per distinct text. One interner lives for one load.

use ahash::RandomState;
use hashbrown::HashTable;

use crate::value::{intern_keyword, is_keyword_text, Str, Value};

/// String values this long or shorter are shared; longer ones rarely repeat.
const SHORT: usize = 32;
/// Distinct texts one table keeps; past it, texts are still converted, just not shared.
const CAP: usize = 65_536;

/// Both tables hold only pointers, found by their text's hash: an entry is 8 or 16 bytes
/// (20,000 distinct names take 256 KB, not the 1.5 MB of texts held in place), and the one
/// candidate the table's hash tags leave is compared in the string's own allocation, on the
/// line its reference count is on: a lookup costs one memory load, and hashes only the text.
#[derive(Default)]
pub struct Interner {
    strings: HashTable<Str>,
    /// Keys of any length are shared: records are recognised by their keys' addresses.
    keys: HashTable<Value>,
    hasher: RandomState,
}

/// The text of a key the interner made (a keyword or a string).
#[inline]
fn key_text(k: &Value) -> &str {
    match k {
        Value::Keyword(s) | Value::Str(s) => s.as_str(),
        _ => "",
    }
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
        let hash = self.hasher.hash_one(s);
        if let Some(k) = self.keys.find(hash, |k| key_text(k) == s) {
            return k.clone();
        }
        let k = new_key(s);
        if self.keys.len() < CAP {
            let hasher = &self.hasher;
            self.keys
                .insert_unique(hash, k.clone(), |k| hasher.hash_one(key_text(k)));
        }
        k
    }
}

fn new_key(s: &str) -> Value {
    if is_keyword_text(s) {
        Value::Keyword(intern_keyword(s))
    } else {
        Value::Str(Str::from(s))
    }
}
