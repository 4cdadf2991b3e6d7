//! Maps keep insertion order. Two representations behind one interface:
//!
//! - **shaped**: the records of input data. Maps with the same keys in the same order share one
//!   [`Shape`] (the keys, stored once) and hold only their values, so a million records cost a
//!   million value arrays, not a million hash tables. Reading a field is a short scan of the
//!   shape's keys (pointer-equal interned keywords first), or the shape's own index for wide
//!   records.
//! - **hashed**: an `IndexMap`, for maps built by programs. A shaped map becomes hashed the
//!   first time a program adds or removes a key (changing a value keeps its shape).

use std::sync::Arc;

use crate::value::{Value, ValueMap, ValueSet};

/// The keys of a family of records, in order. Built once per distinct key list.
pub struct Shape {
    keys: Box<[Value]>,
    /// For wide shapes: the keys again, hashed (positions match `keys`).
    index: Option<ValueSet>,
}

/// Maps with up to this many keys may be records (wider ones are hashed maps).
pub const MAX_SHAPED_KEYS: usize = 64;

/// A record when the keys are distinct and few enough, else a hashed map (a repeated key:
/// the last value wins, at the first key's place).
pub fn record_or_map(keys: Vec<Value>, vals: Vec<Value>) -> Value {
    if (1..=MAX_SHAPED_KEYS).contains(&keys.len()) {
        if let Some(shape) = Shape::new(keys.clone()) {
            return Value::Map(Arc::new(MapData::shaped(
                Arc::new(shape),
                vals.into_boxed_slice(),
            )));
        }
    }
    let mut m = ValueMap::with_capacity_and_hasher(keys.len(), Default::default());
    for (k, v) in keys.into_iter().zip(vals) {
        m.insert(k, v);
    }
    Value::map(m)
}

/// What a cache knows about one set of key ids: their shape, or that they make none.
type Known = Option<Arc<Shape>>;

/// The shapes one conversion (or parse) has made, by the identities of their keys — pointers
/// the caller keeps valid for the cache's life (pinned key objects, interned key strings) —
/// so records with the same keys share one shape. `None`: those keys collide once converted.
#[derive(Default)]
pub struct ShapeCache {
    shapes: ahash::AHashMap<Box<[usize]>, Known>,
    /// The last few shapes found, compared before hashing: records of a kind come in runs
    /// (an order, its customer, its items, the next order...).
    recent: Vec<(Box<[usize]>, Known)>,
}

impl ShapeCache {
    /// Distinct shapes one cache keeps (data with more is rarely records).
    const MAX: usize = 4096;
    const RECENT: usize = 4;

    /// The shape for keys identified by `ids` if they were seen before (`Some(None)`: seen,
    /// and not a record).
    pub fn find(&mut self, ids: &[usize]) -> Option<Option<Arc<Shape>>> {
        if let Some(i) = self.recent.iter().position(|(k, _)| **k == *ids) {
            // move to the front so the commonest kinds are compared first
            if i > 0 {
                self.recent[..=i].rotate_right(1);
            }
            return Some(self.recent[0].1.clone());
        }
        let (k, s) = self.shapes.get_key_value(ids)?;
        let entry = (k.clone(), s.clone());
        if self.recent.len() == Self::RECENT {
            self.recent.pop();
        }
        self.recent.insert(0, entry);
        Some(s.clone())
    }

    /// The shape for keys identified by `ids`, made from `keys()` on first sight; `None` when
    /// the keys are not distinct or the cache is full.
    pub fn get(&mut self, ids: &[usize], keys: impl FnOnce() -> Vec<Value>) -> Option<Arc<Shape>> {
        if let Some(s) = self.find(ids) {
            return s;
        }
        if self.shapes.len() >= Self::MAX {
            return None;
        }
        let s = Shape::new(keys()).map(Arc::new);
        self.shapes.insert(ids.into(), s.clone());
        s
    }
}

/// Shapes this wide or wider find keys by hash instead of by scanning.
const SCAN_MAX: usize = 12;

impl Shape {
    /// `None` when the keys are not distinct (then the map must be hashed).
    pub fn new(keys: Vec<Value>) -> Option<Shape> {
        let n = keys.len();
        let set: ValueSet = keys.iter().cloned().collect();
        if set.len() != n {
            return None;
        }
        Some(Shape {
            keys: keys.into_boxed_slice(),
            index: (n >= SCAN_MAX).then_some(set),
        })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn keys(&self) -> &[Value] {
        &self.keys
    }

    #[inline]
    pub fn position(&self, k: &Value) -> Option<usize> {
        if let Some(index) = &self.index {
            return index.get_index_of(k);
        }
        let keys = &self.keys;
        // interned keywords: the same pointer, no text comparison
        if let Value::Keyword(s) = k {
            if let Some(i) = keys
                .iter()
                .position(|x| matches!(x, Value::Keyword(t) if crate::value::Str::ptr_eq(s, t)))
            {
                return Some(i);
            }
        }
        keys.iter().position(|x| x == k)
    }
}

pub enum MapData {
    Shaped {
        shape: Arc<Shape>,
        vals: Box<[Value]>,
    },
    Hashed(Box<ValueMap>),
}

impl Default for MapData {
    fn default() -> Self {
        MapData::Hashed(Box::default())
    }
}

impl Clone for MapData {
    fn clone(&self) -> Self {
        match self {
            MapData::Shaped { shape, vals } => MapData::Shaped {
                shape: shape.clone(),
                vals: vals.clone(),
            },
            MapData::Hashed(m) => MapData::Hashed(m.clone()),
        }
    }
}

impl From<ValueMap> for MapData {
    fn from(m: ValueMap) -> Self {
        MapData::Hashed(Box::new(m))
    }
}

/// Iterates a map's entries in order, whichever its representation.
pub enum Iter<'a> {
    Shaped(std::iter::Zip<std::slice::Iter<'a, Value>, std::slice::Iter<'a, Value>>),
    Hashed(indexmap::map::Iter<'a, Value, Value>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Value, &'a Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Shaped(it) => it.next(),
            Iter::Hashed(it) => it.next(),
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::Shaped(it) => it.size_hint(),
            Iter::Hashed(it) => it.size_hint(),
        }
    }
    fn nth(&mut self, n: usize) -> Option<Self::Item> {
        match self {
            Iter::Shaped(it) => it.nth(n),
            Iter::Hashed(it) => it.nth(n),
        }
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Shaped(it) => it.next_back(),
            Iter::Hashed(it) => it.next_back(),
        }
    }
}

impl ExactSizeIterator for Iter<'_> {}

impl MapData {
    /// A record of `shape` (values in the shape's key order).
    pub fn shaped(shape: Arc<Shape>, vals: Box<[Value]>) -> MapData {
        debug_assert_eq!(shape.len(), vals.len());
        MapData::Shaped { shape, vals }
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self {
            MapData::Shaped { vals, .. } => vals.len(),
            MapData::Hashed(m) => m.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, k: &Value) -> Option<&Value> {
        match self {
            MapData::Shaped { shape, vals } => shape.position(k).map(|i| &vals[i]),
            MapData::Hashed(m) => m.get(k),
        }
    }

    pub fn get_key_value(&self, k: &Value) -> Option<(&Value, &Value)> {
        match self {
            MapData::Shaped { shape, vals } => {
                shape.position(k).map(|i| (&shape.keys()[i], &vals[i]))
            }
            MapData::Hashed(m) => m.get_key_value(k),
        }
    }

    #[inline]
    pub fn contains_key(&self, k: &Value) -> bool {
        self.get(k).is_some()
    }

    pub fn get_index_of(&self, k: &Value) -> Option<usize> {
        match self {
            MapData::Shaped { shape, .. } => shape.position(k),
            MapData::Hashed(m) => m.get_index_of(k),
        }
    }

    pub fn get_index(&self, i: usize) -> Option<(&Value, &Value)> {
        match self {
            MapData::Shaped { shape, vals } => Some((shape.keys().get(i)?, vals.get(i)?)),
            MapData::Hashed(m) => m.get_index(i),
        }
    }

    pub fn first(&self) -> Option<(&Value, &Value)> {
        self.get_index(0)
    }

    pub fn last(&self) -> Option<(&Value, &Value)> {
        self.len().checked_sub(1).and_then(|i| self.get_index(i))
    }

    #[inline]
    pub fn iter(&self) -> Iter<'_> {
        match self {
            MapData::Shaped { shape, vals } => Iter::Shaped(shape.keys().iter().zip(vals.iter())),
            MapData::Hashed(m) => Iter::Hashed(m.iter()),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, k: &Value) -> Option<&mut Value> {
        match self {
            MapData::Shaped { shape, vals } => shape.position(k).map(|i| &mut vals[i]),
            MapData::Hashed(m) => m.get_mut(k),
        }
    }

    /// Sets `k` to `v`; the old value if `k` was there. A record keeps its shape when `k` is
    /// one of its keys.
    pub fn insert(&mut self, k: Value, v: Value) -> Option<Value> {
        if let MapData::Shaped { shape, vals } = self {
            if let Some(i) = shape.position(&k) {
                return Some(std::mem::replace(&mut vals[i], v));
            }
        }
        self.hashed_mut().insert(k, v)
    }

    /// The map as an `IndexMap` to change freely (a record becomes hashed, order kept).
    pub fn hashed_mut(&mut self) -> &mut ValueMap {
        match self {
            MapData::Hashed(m) => m,
            MapData::Shaped { shape, vals } => {
                let vals = std::mem::take(vals);
                let mut m = ValueMap::with_capacity_and_hasher(vals.len(), Default::default());
                for (k, v) in shape.keys().iter().zip(vals.into_vec()) {
                    m.insert(k.clone(), v);
                }
                *self = MapData::Hashed(Box::new(m));
                self.hashed_mut() // now hashed: returns at once
            }
        }
    }
}

impl<'a> IntoIterator for &'a MapData {
    type Item = (&'a Value, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}
