//! Text interning for the loaders: map keys become shared keywords or strings (Python input
//! and JSON text), and in JSON text short string values that repeat (categories, ids,
//! statuses) share one allocation per distinct text. Python input copies its string values:
//! each is an object of its own there already. Texts of up to seven bytes need no table: `Str`
//! holds them in place, equal by identity already. One interner lives for one load.

use ahash::RandomState;
use hashbrown::HashTable;

use crate::text::INLINE_MAX;
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
pub(crate) fn key_text(k: &Value) -> &str {
    match k {
        Value::Keyword(s) | Value::Str(s) => s.as_str(),
        _ => "",
    }
}

impl Interner {
    /// A string value, shared with earlier equal ones when short.
    #[inline]
    pub fn string(&mut self, s: &str) -> Str {
        // texts held in place need no table; long ones rarely repeat
        if s.len() <= INLINE_MAX || s.len() > SHORT {
            return Str::from(s);
        }
        shared(&mut self.strings, &self.hasher, s, Str::as_str, |s| {
            Str::from(s)
        })
    }

    /// A map key: valid keyword text becomes a keyword (so JSON-shaped data reads and prints
    /// as idiomatic Clojure: `{:name "Ada"}`, `(:name p)`), other text a string.
    #[inline]
    pub fn key(&mut self, s: &str) -> Value {
        if s.len() <= INLINE_MAX {
            return new_key(s);
        }
        shared(&mut self.keys, &self.hasher, s, key_text, new_key)
    }
}

/// The entry of `table` whose text is `s`, made by `make` and kept (up to [`CAP`]) if new.
#[inline]
fn shared<T: Clone>(
    table: &mut HashTable<T>,
    hasher: &RandomState,
    s: &str,
    text: impl Fn(&T) -> &str,
    make: impl FnOnce(&str) -> T,
) -> T {
    let hash = hasher.hash_one(s);
    if let Some(found) = table.find(hash, |t| text(t) == s) {
        return found.clone();
    }
    let made = make(s);
    if table.len() < CAP {
        table.insert_unique(hash, made.clone(), |t| hasher.hash_one(text(t)));
    }
    made
}

fn new_key(s: &str) -> Value {
    if is_keyword_text(s) {
        Value::Keyword(intern_keyword(s))
    } else {
        Value::Str(Str::from(s))
    }
}
