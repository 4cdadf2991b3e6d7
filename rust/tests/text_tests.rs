//! `Str`: short texts held in place, long ones shared; one canonical form either way.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hash, Hasher};

use _core::data::text::INLINE_MAX;
use _core::data::value::{Str, Value};

/// Texts around the in-place limit, in bytes, including multi-byte characters and NUL.
fn samples() -> Vec<String> {
    vec![
        String::new(),
        "a".into(),
        "shipped".into(),        // 7 bytes: the longest in place on 64-bit
        "shipped!".into(),       // 8 bytes: the shortest shared
        "é".into(),              // 2 bytes, one character
        "日本".into(),           // 6 bytes
        "日本語".into(),         // 9 bytes
        "ab\0".into(),           // NUL inside
        "\0\0\0\0\0\0\0".into(), // seven NULs
        "x".repeat(1000),
    ]
}

#[test]
fn the_in_place_limit_is_a_word_less_its_tag() {
    assert_eq!(INLINE_MAX, std::mem::size_of::<usize>() - 1);
    assert_eq!(std::mem::size_of::<Str>(), std::mem::size_of::<usize>());
    assert_eq!(
        std::mem::size_of::<Option<Str>>(),
        std::mem::size_of::<usize>()
    );
    assert_eq!(std::mem::size_of::<Value>(), 16);
}

#[test]
fn every_text_reads_back_as_it_was_given() {
    for t in samples() {
        let s = Str::from(t.as_str());
        assert_eq!(s.as_str(), t, "{t:?}");
        assert_eq!(&*s, t.as_str());
        assert_eq!(s.len(), t.len());
        assert_eq!(s.clone().as_str(), t);
        assert_eq!(String::from(s.clone()), t);
        assert_eq!(Str::from(t.clone()), s);
        assert_eq!(format!("{s}"), t);
        assert_eq!(format!("{s:?}"), format!("{t:?}"));
        // held in place exactly when it fits
        assert_eq!(s.is_inline_text(), t.len() <= INLINE_MAX, "{t:?}");
    }
}

#[test]
fn short_texts_allocate_nothing() {
    let texts: Vec<String> = (0..1000).map(|i| format!("s{}", i % 100)).collect();
    let mut held: Vec<Str> = Vec::with_capacity(2000);
    let before = _core::memory::alloc::allocated();
    held.extend(texts.iter().map(|t| Str::from(t.as_str())));
    held.extend(held.clone()); // the clone's buffer is freed again
    assert_eq!(_core::memory::alloc::allocated(), before);
    held.clear();
    assert_eq!(_core::memory::alloc::allocated(), before);
}

#[test]
fn long_texts_are_shared_by_clones_and_freed_with_the_last() {
    let before = _core::memory::alloc::allocated();
    let a = Str::from("a text longer than a word");
    let one = _core::memory::alloc::allocated() - before;
    assert!(one > 0);
    let mut copies: Vec<Str> = Vec::with_capacity(100);
    let with_buffer = _core::memory::alloc::allocated();
    copies.extend((0..100).map(|_| a.clone()));
    assert_eq!(_core::memory::alloc::allocated(), with_buffer);
    assert!(copies
        .iter()
        .all(|c| Str::ptr_eq(c, &a) && c.identity() == a.identity()));
    drop(copies);
    drop(a);
    assert_eq!(_core::memory::alloc::allocated(), before);
}

#[test]
fn equality_identity_order_and_hash_follow_the_text() {
    let all = samples();
    let state = ahash::RandomState::new();
    let hash_of = |h: &dyn Fn(&mut ahash::AHasher)| {
        let mut x = state.build_hasher();
        h(&mut x);
        x.finish()
    };
    for x in &all {
        for y in &all {
            let (a, b) = (Str::from(x.as_str()), Str::from(y.as_str()));
            assert_eq!(a == b, x == y, "{x:?} = {y:?}");
            assert_eq!(a.cmp(&b), x.cmp(y), "{x:?} cmp {y:?}");
            // short texts: identity is the text itself; long ones: separate allocations
            let same_identity = x == y && x.len() <= INLINE_MAX;
            assert_eq!(Str::ptr_eq(&a, &b), same_identity, "{x:?} ptr_eq {y:?}");
        }
        let s = Str::from(x.as_str());
        assert_eq!(hash_of(&|h| s.hash(h)), hash_of(&|h| x.as_str().hash(h)));
    }
    // a table of Str is searched by &str
    let set: HashSet<Str> = all.iter().map(|t| Str::from(t.as_str())).collect();
    assert!(all.iter().all(|t| set.contains(t.as_str())));
    assert_eq!(Str::default(), Str::from(""));
}

#[test]
fn values_holding_texts_compare_and_print_as_before() {
    let short = Value::Str(Str::from("gold"));
    let long = Value::Str(Str::from("platinum plus"));
    assert_eq!(short, Value::Str(Str::from(String::from("gold"))));
    assert_eq!(long, Value::Str(Str::from("platinum plus")));
    assert_ne!(short, Value::Keyword(Str::from("gold")));
    assert_eq!(
        crate::common::ev(
            r#"[(= "gold" (str "go" "ld")) (count "日本") :tier (subs "日本語" 1) (str "shipped" "-express")]"#
        ),
        r#"[true 2 :tier "本語" "shipped-express"]"#
    );
}
