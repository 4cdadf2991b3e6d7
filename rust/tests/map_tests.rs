//! Records (shaped maps) behave as hashed maps: lookups, updates, equality, hashing, order.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use _core::data::map::{MapData, Shape};
use _core::data::value::{Value, ValueMap};
use _core::run::guard::{with_budget, Budget, NeverInterrupted};

fn kw(s: &str) -> Value {
    Value::kw(s)
}

fn record(keys: &[&str], vals: Vec<Value>) -> MapData {
    let shape = Shape::new(keys.iter().map(|k| kw(k)).collect()).expect("distinct keys");
    MapData::record(Arc::new(shape), vals.into_iter())
}

fn hashed(pairs: &[(&str, Value)]) -> Value {
    let mut m = ValueMap::default();
    for (k, v) in pairs {
        m.insert(kw(k), v.clone());
    }
    Value::map(m)
}

fn hash_of(v: &Value) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

#[test]
fn lookups_and_order() {
    let r = record(&["id", "name"], vec![Value::Int(1), Value::str("Ada")]);
    assert_eq!(r.len(), 2);
    assert_eq!(r.get(&kw("name")), Some(&Value::str("Ada")));
    assert_eq!(r.get(&kw("nope")), None);
    assert_eq!(r.get_index_of(&kw("name")), Some(1));
    let keys: Vec<_> = r.keys().cloned().collect();
    assert_eq!(keys, vec![kw("id"), kw("name")]);
    assert_eq!(r.last().map(|(k, _)| k.clone()), Some(kw("name")));
}

#[test]
fn updating_a_key_keeps_the_shape_and_a_new_key_makes_a_hashed_map() {
    let mut r = record(&["id", "name"], vec![Value::Int(1), Value::str("Ada")]);
    assert_eq!(r.insert(kw("id"), Value::Int(2)), Some(Value::Int(1)));
    assert!(r.is_record());
    assert_eq!(r.insert(kw("age"), Value::Int(36)), None);
    assert!(!r.is_record());
    let keys: Vec<_> = r.keys().cloned().collect();
    assert_eq!(keys, vec![kw("id"), kw("name"), kw("age")]);
    assert_eq!(r.get(&kw("id")), Some(&Value::Int(2)));
}

#[test]
fn records_equal_and_hash_as_hashed_maps_in_any_order() {
    let r = Value::Map(record(&["a", "b"], vec![Value::Int(1), Value::Int(2)]));
    let same = hashed(&[("b", Value::Int(2)), ("a", Value::Int(1))]);
    let other = hashed(&[("a", Value::Int(1)), ("b", Value::Int(3))]);
    assert!(r == same);
    assert!(r != other);
    assert_eq!(hash_of(&r), hash_of(&same));
}

#[test]
fn colliding_keys_make_no_shape_and_wide_shapes_index_their_keys() {
    assert!(Shape::new(vec![kw("a"), kw("a")]).is_none());
    let names: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    let keys: Vec<&str> = names.iter().map(String::as_str).collect();
    let r = record(&keys, (0..40).map(Value::Int).collect());
    assert_eq!(r.get(&kw("k33")), Some(&Value::Int(33)));
    assert_eq!(r.get(&Value::str("k33")), None); // a string is not the keyword
}

#[test]
fn dropping_a_deep_chain_of_records_does_not_overflow() {
    let mut v = Value::Nil;
    for _ in 0..200_000 {
        v = Value::Map(record(&["next"], vec![v]));
    }
    drop(v);
}

#[test]
fn a_released_large_value_is_freed_in_the_background() {
    let before = _core::memory::dropper::freed_in_background();
    let big = Value::vector(
        (0..100_000)
            .map(|i| Value::vector(vec![Value::Int(i)]))
            .collect(),
    );
    _core::memory::dropper::release(big);
    _core::memory::dropper::release(Value::vector(vec![Value::Int(1)])); // small: freed at once
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while _core::memory::dropper::freed_in_background() < before + 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the value was not freed"
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
}

#[test]
fn changing_a_shared_map_leaves_the_other_references_alone() {
    let a = record(&["id", "name"], vec![Value::Int(1), Value::str("Ada")]);
    let mut b = a.clone();
    assert!(MapData::ptr_eq(&a, &b) && !a.is_unique());
    assert_eq!(b.insert(kw("id"), Value::Int(2)), Some(Value::Int(1)));
    assert!(b.is_record() && !MapData::ptr_eq(&a, &b));
    assert_eq!(a.get(&kw("id")), Some(&Value::Int(1)));
    assert_eq!(b.get(&kw("id")), Some(&Value::Int(2)));

    let mut c = a.clone();
    *c.get_mut(&kw("name")).expect("a key") = Value::str("Grace");
    assert_eq!(a.get(&kw("name")), Some(&Value::str("Ada")));
    assert_eq!(c.get(&kw("name")), Some(&Value::str("Grace")));

    let mut d = a.clone();
    d.hashed_mut().shift_remove(&kw("name"));
    assert!(!d.is_record() && d.len() == 1);
    assert_eq!(a.len(), 2);

    let h = MapData::from(ValueMap::default());
    let mut h2 = h.clone();
    h2.insert(kw("x"), Value::Int(1));
    assert!(h.is_empty() && h2.len() == 1);
    // the only reference changes in place
    let before = h2.clone();
    drop(before);
    assert!(h2.is_unique());
}

#[test]
fn dropping_deep_chains_of_hashed_maps_and_shared_records_does_not_overflow() {
    let mut v = Value::Nil;
    for i in 0..200_000 {
        let mut m = ValueMap::default();
        m.insert(kw("next"), v);
        m.insert(kw("i"), Value::Int(i));
        v = Value::map(m);
    }
    drop(v);
    // every record also held by a second chain: the first drop only releases references
    let mut a = Value::Nil;
    let mut keep = Vec::new();
    for _ in 0..200_000 {
        a = Value::Map(record(&["next"], vec![a]));
        keep.push(a.clone());
    }
    drop(a);
    drop(keep);
}

fn budget(limits: _core::run::limits::Limits) -> Budget {
    Budget::new(limits, Arc::new(NeverInterrupted), None)
}

/// 100,000 one-element vectors: a few MB, each element its own allocation.
fn many_small_vectors() -> Value {
    Value::vector(
        (0..100_000)
            .map(|i| Value::vector(vec![Value::Int(i)]))
            .collect(),
    )
}

#[test]
fn a_large_value_dropped_in_a_run_is_freed_in_the_background_and_credited_to_it() {
    let budget = budget(Default::default());
    with_budget(&budget, || {
        let before = _core::memory::dropper::freed_in_background();
        let start = budget.memory_used();
        let big = many_small_vectors();
        let held = budget.memory_used() - start;
        assert!(held > 5_000_000, "the vectors take {held} bytes");
        drop(big);
        // the background thread frees them and credits the run
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while budget.memory_used() - start > held / 100 {
            assert!(
                std::time::Instant::now() < deadline,
                "{} bytes still counted",
                budget.memory_used() - start
            );
            std::thread::yield_now();
        }
        assert!(_core::memory::dropper::freed_in_background() > before);
    });
}

#[test]
fn the_memory_check_counts_frees_still_under_way_as_done() {
    // room for one batch and a half: a second batch fits only once the first is counted freed
    let probe = budget(Default::default());
    let one = with_budget(&probe, || {
        let start = probe.memory_used();
        let v = many_small_vectors();
        let n = probe.memory_used() - start;
        drop(v);
        n
    }) as usize;
    for _ in 0..20 {
        let limits = _core::run::limits::Limits {
            max_memory: one * 3 / 2,
            ..Default::default()
        };
        let budget = budget(limits);
        with_budget(&budget, || {
            drop(many_small_vectors()); // handed to the background thread
                                        // the verdict does not depend on how far that thread has got
            assert!(budget.check_memory(one).is_ok());
        });
    }
}

/// A record is one allocation: a count and a head (8 bytes each), then its values (16 bytes
/// each); no length, since the shape has it. Five fields: 16 + 5 * 16 = 96 bytes, a size class
/// of its own in mimalloc (with a stored length, 104 bytes, it took the 112-byte class).
#[test]
fn a_record_costs_its_values_and_two_words() {
    let shape = Arc::new(
        Shape::new(["a", "b", "c", "d", "e"].iter().map(|k| kw(k)).collect()).expect("distinct"),
    );
    let before = _core::memory::alloc::allocated();
    let records: Vec<MapData> = (0..1000)
        .map(|i| {
            MapData::record(
                shape.clone(),
                (0..5i32).map(|j| Value::Int(i * i64::from(j))),
            )
        })
        .collect();
    let per_record = (_core::memory::alloc::allocated() - before - 1000 * 8) / 1000;
    // the system allocator's chunk: 8 bytes of its own, rounded up to 16
    let expected = if cfg!(feature = "mimalloc") { 96 } else { 112 };
    assert_eq!(per_record, expected);
    assert_eq!(records[999].values().nth(4), Some(&Value::Int(999 * 4)));
}

/// A vector's handle is a count (one word: no weak count) and the `Vec`: 32 bytes, a size class
/// of its own in mimalloc (`std::sync::Arc` made it 40, served from the 48-byte class).
#[test]
fn a_vector_handle_costs_a_count_and_the_vec() {
    let before = _core::memory::alloc::allocated();
    let vectors: Vec<Value> = (0..1000).map(|_| Value::vector(Vec::new())).collect();
    let per_vector = (_core::memory::alloc::allocated() - before - 1000 * 16) / 1000;
    // the system allocator's chunk: 8 bytes of its own, rounded up to 16
    let expected = if cfg!(feature = "mimalloc") { 32 } else { 48 };
    assert_eq!(per_vector, expected);
    assert!(matches!(&vectors[999], Value::Vector(v) if v.is_empty()));
}

/// A shape holds at most MAX_SHAPED_KEYS keys (its count sizes a record's allocation); wider
/// key lists make hashed maps.
#[test]
fn a_shape_has_at_most_the_shaped_key_limit() {
    let keys = |n: usize| (0..n).map(|i| kw(&format!("k{i}"))).collect::<Vec<_>>();
    let max = _core::data::map::MAX_SHAPED_KEYS;
    assert_eq!(Shape::new(keys(max)).map(|s| s.len()), Some(max));
    assert!(Shape::new(keys(max + 1)).is_none());
}
