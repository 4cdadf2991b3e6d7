//! Maps keep insertion order. Two representations behind one interface:
//!
//! - **shaped**: the records of input data. Maps with the same keys in the same order share one
//!   [`Shape`] (the keys, stored once) and hold only their values, so a million records cost a
//!   million value arrays, not a million hash tables. Reading a field is a short scan of the
//!   shape's keys (pointer-equal interned keywords first), or the shape's own index for wide
//!   records.
//! - **hashed**: an `IndexMap`, for maps built by programs. A shaped map becomes hashed the
//!   first time a program adds or removes a key (changing a value keeps its shape).
//!
//! Why one module over 600 lines: both representations live behind one tagged head and one
//! shared allocation, whose unsafe code is read best in one place; the unit tests beside it
//! (run under Miri by `scripts/miri.sh`) are a fifth of the file.

use std::cell::Cell;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use crate::thin::{Header, Thin};

use super::{Value, ValueMap, ValueSet};

/// The keys of a family of records, in order. Built once per distinct key list.
#[derive(Clone)]
pub struct Shape {
    keys: Box<[Value]>,
    /// For wide shapes: the keys again, hashed (positions match `keys`).
    index: Option<ValueSet>,
}

/// Maps with up to this many keys may be records (wider ones are hashed maps).
pub const MAX_SHAPED_KEYS: usize = 64;
const _: () = assert!(MAX_SHAPED_KEYS <= crate::thin::MAX_VALUES);

/// A record when the keys are distinct and few enough, else a hashed map (a repeated key:
/// the last value wins, at the first key's place).
pub fn record_or_map(keys: Vec<Value>, vals: Vec<Value>) -> Value {
    if (1..=MAX_SHAPED_KEYS).contains(&keys.len()) {
        if let Some(shape) = Shape::new(keys.clone()) {
            return Value::Map(MapData::record(Arc::new(shape), vals.into_iter()));
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

    /// A copy whose shapes are copies too, for another thread: records of one shape made on
    /// two threads at once would otherwise contend for its one reference count (a cache line
    /// passed between the cores at every record).
    pub fn own_copy(&self) -> ShapeCache {
        let mut copies: ahash::AHashMap<*const Shape, Arc<Shape>> = Default::default();
        let mut copy = |k: &Known| {
            k.as_ref().map(|s| {
                copies
                    .entry(Arc::as_ptr(s))
                    .or_insert_with(|| Arc::new(Shape::clone(s)))
                    .clone()
            })
        };
        ShapeCache {
            shapes: self
                .shapes
                .iter()
                .map(|(ids, k)| (ids.clone(), copy(k)))
                .collect(),
            recent: self
                .recent
                .iter()
                .map(|(ids, k)| (ids.clone(), copy(k)))
                .collect(),
        }
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
    /// `None` when the keys are not distinct or more than [`MAX_SHAPED_KEYS`] (then the map must
    /// be hashed).
    pub fn new(keys: Vec<Value>) -> Option<Shape> {
        let n = keys.len();
        if n > MAX_SHAPED_KEYS {
            return None;
        }
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
                .position(|x| matches!(x, Value::Keyword(t) if super::Str::ptr_eq(s, t)))
            {
                return Some(i);
            }
        }
        keys.iter().position(|x| x == k)
    }
}

/// What a map's allocation holds besides its values, in one word: a record's shape (from
/// `Arc<Shape>`) or a hashed map's entries (from `Box<ValueMap>`), told apart by the pointer's
/// low bit (both point at 8-aligned memory). As a two-word enum it cost every record 16 bytes
/// more after malloc's rounding.
struct Head(*mut u8);

const _: () = assert!(std::mem::size_of::<Head>() == std::mem::size_of::<usize>());

// SAFETY: a Head owns an `Arc<Shape>` or a `Box<ValueMap>`, which are both Send and Sync.
unsafe impl Send for Head {}
// SAFETY: as above.
unsafe impl Sync for Head {}

/// The contents a [`Head`] points at, borrowed.
enum HeadRef<'a> {
    Shaped(&'a Shape),
    Hashed(&'a ValueMap),
}

impl Head {
    fn shaped(shape: Arc<Shape>) -> Head {
        Head(Arc::into_raw(shape).cast_mut().cast())
    }

    fn hashed(m: Box<ValueMap>) -> Head {
        Head(Box::into_raw(m).cast::<u8>().wrapping_byte_add(1))
    }

    #[inline(always)]
    fn is_hashed(&self) -> bool {
        (self.0 as usize) & 1 == 1
    }

    #[inline(always)]
    fn get(&self) -> HeadRef<'_> {
        if self.is_hashed() {
            // SAFETY: tagged: it came from `Box::into_raw` and this head owns the box.
            HeadRef::Hashed(unsafe { &*self.0.wrapping_byte_sub(1).cast::<ValueMap>() })
        } else {
            // SAFETY: untagged: it came from `Arc::into_raw` and this head holds a count.
            HeadRef::Shaped(unsafe { &*self.0.cast::<Shape>() })
        }
    }

    fn hashed_mut(&mut self) -> Option<&mut ValueMap> {
        // SAFETY: as in `get`; `&mut self` makes the borrow exclusive.
        self.is_hashed()
            .then(|| unsafe { &mut *self.0.wrapping_byte_sub(1).cast::<ValueMap>() })
    }

    /// A record's shape, shared (`None` for a hashed map).
    fn shape_arc(&self) -> Option<Arc<Shape>> {
        if self.is_hashed() {
            return None;
        }
        let p = self.0.cast::<Shape>().cast_const();
        // SAFETY: `p` came from `Arc::into_raw` and this head's count keeps it alive; the
        // count taken here belongs to the returned Arc.
        unsafe {
            Arc::increment_strong_count(p);
            Some(Arc::from_raw(p))
        }
    }
}

// SAFETY: a head is never replaced or retagged in place (map.rs makes a new `MapData` to turn
// a record into a hashed map), a shape, shared behind its `Arc`, never changes its keys, and it
// has at most MAX_SHAPED_KEYS of them (`Shape::new`).
unsafe impl Header for Head {
    /// A record's values follow its head, one per key of its shape; a hashed map has none.
    #[inline(always)]
    fn values(&self) -> usize {
        match self.get() {
            HeadRef::Shaped(shape) => shape.len(),
            HeadRef::Hashed(_) => 0,
        }
    }
}

impl Drop for Head {
    fn drop(&mut self) {
        if self.is_hashed() {
            // SAFETY: the box this head owns, released once (this is its drop).
            drop(unsafe { Box::from_raw(self.0.wrapping_byte_sub(1).cast::<ValueMap>()) });
        } else {
            // SAFETY: the count this head holds, released once.
            drop(unsafe { Arc::from_raw(self.0.cast::<Shape>().cast_const()) });
        }
    }
}

/// A map value: one reference-counted allocation holding a header and, for a record, its
/// values inline, so a record costs one allocation (the key list is in the shared shape).
/// Cloning shares it; the methods that change it copy it first when it is shared.
pub struct MapData(ManuallyDrop<Thin<Head, Value>>);

impl Default for MapData {
    fn default() -> Self {
        MapData::from(ValueMap::default())
    }
}

impl Clone for MapData {
    #[inline(always)]
    fn clone(&self) -> Self {
        MapData(ManuallyDrop::new((*self.0).clone()))
    }
}

impl From<ValueMap> for MapData {
    fn from(m: ValueMap) -> Self {
        MapData::hashed(Box::new(m))
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

/// The contents of a map, borrowed.
enum View<'a> {
    Shaped(&'a Shape, &'a [Value]),
    Hashed(&'a ValueMap),
}

impl MapData {
    /// A hashed map holding `m`.
    fn hashed(m: Box<ValueMap>) -> MapData {
        MapData(ManuallyDrop::new(Thin::new(
            Head::hashed(m),
            std::iter::empty(),
        )))
    }

    /// A record of `shape`; `vals` in the shape's key order.
    pub fn record(shape: Arc<Shape>, vals: impl ExactSizeIterator<Item = Value>) -> MapData {
        debug_assert_eq!(shape.len(), vals.len());
        MapData(ManuallyDrop::new(Thin::new(Head::shaped(shape), vals)))
    }

    #[inline(always)]
    fn view(&self) -> View<'_> {
        match self.0.header().get() {
            HeadRef::Shaped(shape) => View::Shaped(shape, self.0.values()),
            HeadRef::Hashed(m) => View::Hashed(m),
        }
    }

    /// The allocation, without running this handle's drop.
    fn into_raw(self) -> ManuallyDrop<Thin<Head, Value>> {
        let me = ManuallyDrop::new(self);
        // SAFETY: `me` is never dropped, so the allocation is moved out exactly once.
        unsafe { std::ptr::read(&me.0) }
    }

    /// A record's shape and values (`None` for a hashed map).
    #[inline]
    pub fn record_parts(&self) -> Option<(&Shape, &[Value])> {
        match self.view() {
            View::Shaped(shape, vals) => Some((shape, vals)),
            View::Hashed(_) => None,
        }
    }

    /// Whether the map is a record (shaped), not a hashed map.
    pub fn is_record(&self) -> bool {
        !self.0.header().is_hashed()
    }

    /// Whether this is the only reference to the map (changing it would change no one else's).
    #[inline]
    pub fn is_unique(&self) -> bool {
        self.0.strong_count() == 1
    }

    /// The start of the map's allocation (for prefetching).
    #[inline]
    pub fn heap_ptr(&self) -> *const u8 {
        self.0.ptr().cast()
    }

    /// The two values are one allocation.
    #[inline]
    pub fn ptr_eq(a: &MapData, b: &MapData) -> bool {
        a.0.ptr() == b.0.ptr()
    }

    /// The header and values to change, when this is the only reference.
    fn parts_mut(&mut self) -> Option<(&mut Head, &mut [Value])> {
        self.0.parts_mut()
    }

    /// Makes this the only reference, copying the map if it was shared.
    fn make_unique(&mut self) {
        if self.is_unique() {
            return;
        }
        let head = self.0.header();
        let vals = self.0.values().iter().cloned();
        let copy = match (head.shape_arc(), head.get()) {
            (Some(shape), _) => MapData::record(shape, vals),
            (None, HeadRef::Hashed(m)) => MapData::from(m.clone()),
            // (`shape_arc` gives every record's shape; a copy of it would do all the same)
            (None, HeadRef::Shaped(shape)) => MapData::record(Arc::new(shape.clone()), vals),
        };
        *self = copy;
    }

    /// For `drop_iteratively`: the `i`th value of a record this is the only reference to,
    /// taken out (`None` past the end, or for a hashed or shared map).
    pub(crate) fn take_value(&mut self, i: usize) -> Option<Value> {
        let (head, vals) = self.parts_mut()?;
        if head.is_hashed() {
            return None;
        }
        vals.get_mut(i).map(std::mem::take)
    }

    /// For `drop_iteratively`: the entries of a hashed map this is the only reference to.
    pub(crate) fn take_entries(&mut self) -> Option<ValueMap> {
        self.parts_mut()?.0.hashed_mut().map(std::mem::take)
    }

    #[inline]
    pub fn len(&self) -> usize {
        match self.view() {
            View::Shaped(_, vals) => vals.len(),
            View::Hashed(m) => m.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn get(&self, k: &Value) -> Option<&Value> {
        match self.view() {
            View::Shaped(shape, vals) => shape.position(k).map(|i| &vals[i]),
            View::Hashed(m) => m.get(k),
        }
    }

    pub fn get_key_value(&self, k: &Value) -> Option<(&Value, &Value)> {
        match self.view() {
            View::Shaped(shape, vals) => shape.position(k).map(|i| (&shape.keys()[i], &vals[i])),
            View::Hashed(m) => m.get_key_value(k),
        }
    }

    #[inline]
    pub fn contains_key(&self, k: &Value) -> bool {
        self.get(k).is_some()
    }

    pub fn get_index_of(&self, k: &Value) -> Option<usize> {
        match self.view() {
            View::Shaped(shape, _) => shape.position(k),
            View::Hashed(m) => m.get_index_of(k),
        }
    }

    pub fn get_index(&self, i: usize) -> Option<(&Value, &Value)> {
        match self.view() {
            View::Shaped(shape, vals) => Some((shape.keys().get(i)?, vals.get(i)?)),
            View::Hashed(m) => m.get_index(i),
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
        match self.view() {
            View::Shaped(shape, vals) => Iter::Shaped(shape.keys().iter().zip(vals.iter())),
            View::Hashed(m) => Iter::Hashed(m.iter()),
        }
    }

    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.iter().map(|(k, _)| k)
    }

    pub fn values(&self) -> impl DoubleEndedIterator<Item = &Value> + ExactSizeIterator {
        self.iter().map(|(_, v)| v)
    }

    /// The value of `k` to change in place (the map is copied first if shared).
    pub fn get_mut(&mut self, k: &Value) -> Option<&mut Value> {
        let i = self.get_index_of(k)?;
        self.make_unique();
        let (head, vals) = self.parts_mut()?;
        match head.hashed_mut() {
            Some(m) => m.get_index_mut(i).map(|(_, v)| v),
            None => vals.get_mut(i),
        }
    }

    /// Sets `k` to `v`; the old value if `k` was there. A record keeps its shape when `k` is
    /// one of its keys.
    pub fn insert(&mut self, k: Value, v: Value) -> Option<Value> {
        if self.is_record() {
            if let Some(slot) = self.get_mut(&k) {
                return Some(std::mem::replace(slot, v));
            }
        }
        self.hashed_mut().insert(k, v)
    }

    /// The map as an `IndexMap` to change freely (a record becomes hashed, order kept; a shared
    /// map is copied first).
    pub fn hashed_mut(&mut self) -> &mut ValueMap {
        // at most twice round: after `make_hashed_alone` this is the only handle of a hashed map
        loop {
            if let Some(m) = self.parts_mut().and_then(|(head, _)| head.hashed_mut()) {
                let m: *mut ValueMap = m;
                // SAFETY: `parts_mut` proved this the only reference, and the map lives in its
                // box (reached through the head's own pointer) for as long as `self` is
                // borrowed mutably. (A raw pointer: returning the borrow from inside the `if`
                // would keep `self` borrowed below.)
                return unsafe { &mut *m };
            }
            self.make_hashed_alone();
        }
    }

    /// Makes this the only handle of a hashed map with the same entries in the same order.
    fn make_hashed_alone(&mut self) {
        let mut m = ValueMap::with_capacity_and_hasher(self.len(), Default::default());
        match self.parts_mut() {
            // the only reference to a record: move its values out
            Some((head, vals)) => match head.get() {
                HeadRef::Shaped(shape) => {
                    for (k, v) in shape.keys().iter().zip(vals.iter_mut()) {
                        m.insert(k.clone(), std::mem::take(v));
                    }
                }
                // (a hashed map held alone is not converted; copied all the same)
                HeadRef::Hashed(entries) => m.clone_from(entries),
            },
            // shared: copy
            None => {
                for (k, v) in self.iter() {
                    m.insert(k.clone(), v.clone());
                }
            }
        }
        *self = MapData::from(m);
    }
}

thread_local! {
    /// How many map drops are under way on this thread, one inside the other.
    static DROP_DEPTH: Cell<u32> = const { Cell::new(0) };
}

/// Nested maps deeper than this are taken apart with a worklist instead of recursion.
const DROP_RECURSION: u32 = 48;

impl Drop for MapData {
    fn drop(&mut self) {
        // SAFETY: `self.0` is not used again: this is its drop.
        let mut arc = unsafe { ManuallyDrop::take(&mut self.0) };
        if arc.strong_count() == 1 && arc.header().is_hashed() {
            // a large map's entries go to the background thread when it has room (`dropper`)
            let mut last = MapData(ManuallyDrop::new(arc));
            if let Some(m) = last.parts_mut().and_then(|(head, _)| head.hashed_mut()) {
                if super::dropper::release_contents(m) {
                    return; // `last`, now empty, is freed here
                }
            }
            arc = ManuallyDrop::into_inner(last.into_raw());
        }
        let depth = DROP_DEPTH.with(Cell::get);
        if depth < DROP_RECURSION || arc.strong_count() != 1 {
            // the usual shallow data (or only a count to drop): plain recursion is fastest
            DROP_DEPTH.with(|d| d.set(depth + 1));
            drop(arc);
            DROP_DEPTH.with(|d| d.set(depth));
            return;
        }
        // Deep: the last reference takes nested values apart without recursion.
        let last = MapData(ManuallyDrop::new(arc));
        let nested = match last.view() {
            View::Shaped(_, vals) => vals.iter().any(super::is_nested),
            View::Hashed(m) => m
                .iter()
                .any(|(k, v)| super::is_nested(k) || super::is_nested(v)),
        };
        if nested {
            super::drop_map_iteratively(last);
        } else {
            drop(ManuallyDrop::into_inner(last.into_raw()));
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

#[cfg(test)]
mod tests {
    //! What the tagged head and the shared allocation rely on: a record and a hashed map read
    //! alike, a shared map is copied before it changes (the other handle never sees it), the
    //! head's tag survives every conversion, and the last handle frees once, deep nests
    //! included. Run under Miri by `scripts/miri.sh`.

    use super::*;

    fn kw(s: &str) -> Value {
        Value::kw(s)
    }

    fn record(pairs: &[(&str, i64)]) -> MapData {
        let shape = Shape::new(pairs.iter().map(|(k, _)| kw(k)).collect()).unwrap();
        MapData::record(Arc::new(shape), pairs.iter().map(|(_, v)| Value::Int(*v)))
    }

    fn hashed(pairs: &[(&str, i64)]) -> MapData {
        let mut m = ValueMap::default();
        for (k, v) in pairs {
            m.insert(kw(k), Value::Int(*v));
        }
        MapData::from(m)
    }

    fn entries(m: &MapData) -> Vec<(Value, Value)> {
        m.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    #[test]
    fn a_record_and_a_hashed_map_read_alike() {
        let pairs = [("a", 1), ("b", 2), ("c", 3)];
        let (r, h) = (record(&pairs), hashed(&pairs));
        assert!(r.is_record() && !h.is_record());
        assert_eq!(entries(&r), entries(&h));
        for m in [&r, &h] {
            assert_eq!(m.len(), 3);
            assert_eq!(m.get(&kw("b")), Some(&Value::Int(2)));
            assert_eq!(m.get_index_of(&kw("c")), Some(2));
            assert_eq!(m.get(&kw("zz")), None);
            assert_eq!(m.first().map(|(k, _)| k.clone()), Some(kw("a")));
            assert_eq!(m.last().map(|(_, v)| v.clone()), Some(Value::Int(3)));
        }
        assert!(r.record_parts().is_some() && h.record_parts().is_none());
    }

    #[test]
    fn a_record_keeps_its_shape_when_a_key_of_it_is_set() {
        let mut r = record(&[("a", 1), ("b", 2)]);
        assert_eq!(r.insert(kw("b"), Value::Int(20)), Some(Value::Int(2)));
        assert!(r.is_record());
        assert_eq!(r.get(&kw("b")), Some(&Value::Int(20)));
    }

    #[test]
    fn a_new_key_makes_a_record_hashed_in_order() {
        let mut r = record(&[("a", 1), ("b", 2)]);
        assert_eq!(r.insert(kw("c"), Value::Int(3)), None);
        assert!(!r.is_record());
        let keys: Vec<Value> = r.keys().cloned().collect();
        assert_eq!(keys, vec![kw("a"), kw("b"), kw("c")]);
    }

    #[test]
    fn a_shared_record_is_copied_before_it_changes() {
        let original = record(&[("a", 1), ("b", 2)]);
        let mut changed = original.clone();
        assert!(MapData::ptr_eq(&original, &changed) && !original.is_unique());
        *changed.get_mut(&kw("a")).unwrap() = Value::Int(100);
        assert!(!MapData::ptr_eq(&original, &changed));
        assert_eq!(original.get(&kw("a")), Some(&Value::Int(1)));
        assert_eq!(changed.get(&kw("a")), Some(&Value::Int(100)));
        assert!(original.is_unique() && changed.is_unique());
    }

    #[test]
    fn a_shared_hashed_map_is_copied_before_it_changes() {
        let original = hashed(&[("a", 1)]);
        let mut changed = original.clone();
        changed.hashed_mut().insert(kw("b"), Value::Int(2));
        assert_eq!(original.len(), 1);
        assert_eq!(changed.len(), 2);
    }

    #[test]
    fn hashed_mut_on_the_only_handle_changes_in_place() {
        let mut m = hashed(&[("a", 1)]);
        let before = m.heap_ptr();
        m.hashed_mut().insert(kw("b"), Value::Int(2));
        assert_eq!(m.heap_ptr(), before);
        // a record held alone becomes hashed with its values moved, not copied
        let mut r = record(&[("a", 1), ("b", 2)]);
        r.hashed_mut().shift_remove(&kw("a"));
        assert_eq!(entries(&r), vec![(kw("b"), Value::Int(2))]);
    }

    #[test]
    fn take_value_and_take_entries_only_from_the_only_handle() {
        let mut r = record(&[("a", 1), ("b", 2)]);
        let other = r.clone();
        assert_eq!(r.take_value(0), None); // shared
        drop(other);
        assert_eq!(r.take_value(1), Some(Value::Int(2)));
        assert_eq!(r.take_value(2), None); // past the end
        let mut h = hashed(&[("a", 1)]);
        assert_eq!(h.take_value(0), None); // hashed
        assert_eq!(h.take_entries().map(|m| m.len()), Some(1));
        assert!(h.is_empty());
    }

    #[test]
    fn the_default_map_is_empty_and_hashed() {
        let m = MapData::default();
        assert!(m.is_empty() && !m.is_record());
        assert_eq!(m.iter().count(), 0);
    }

    #[test]
    fn handles_on_many_threads_drop_once() {
        let r = record(&[("a", 1), ("b", 2)]);
        let h = hashed(&[("x", 9)]);
        let threads: Vec<_> = (0..6)
            .map(|i| {
                let (r, h) = (r.clone(), h.clone());
                std::thread::spawn(move || {
                    let mut mine = if i % 2 == 0 { r.clone() } else { h.clone() };
                    mine.insert(kw("t"), Value::Int(i));
                    assert_eq!(mine.get(&kw("t")), Some(&Value::Int(i)));
                    drop((r, h));
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(r.get(&kw("t")), None);
        assert_eq!(h.get(&kw("t")), None);
        assert!(r.is_unique() && h.is_unique());
    }

    #[test]
    fn a_deep_nest_of_maps_drops_without_recursing() {
        // deeper than DROP_RECURSION: the worklist takes it apart (Miri: a smaller nest)
        let depth = if cfg!(miri) { 200 } else { 100_000 };
        let mut v = Value::Int(0);
        for i in 0..depth {
            let mut m = ValueMap::default();
            m.insert(kw("next"), v);
            m.insert(kw("i"), Value::Int(i));
            v = Value::map(m);
        }
        drop(v);
    }
}
