//! The loaders' interner: sharing of short strings and keys.

use _core::data::intern::Interner;
use _core::data::value::Value;

#[test]
fn equal_texts_share_one_allocation() {
    let mut i = Interner::default();
    // held in place: equal by identity without a table
    let a = i.string("shipped");
    let b = i.string(&String::from("shipped"));
    assert!(a.is_inline_text() && a.identity() == b.identity());
    // past the in-place limit: one shared allocation
    let a = i.string("shipped-express");
    let b = i.string(&String::from("shipped-express"));
    assert!(!a.is_inline_text() && a.identity() == b.identity());
    // long values are not shared
    let long = "x".repeat(33);
    assert_ne!(i.string(&long).identity(), i.string(&long).identity());
}

#[test]
fn keys_are_keywords_when_they_can_be() {
    let mut i = Interner::default();
    assert!(matches!(i.key("name"), Value::Keyword(_)));
    assert!(matches!(i.key("first name"), Value::Str(_)));
    assert!(matches!(i.key(""), Value::Str(_)));
    let long = "k".repeat(40);
    let (Value::Keyword(a), Value::Keyword(b)) = (i.key(&long), i.key(&long)) else {
        panic!("long keyword text is a keyword");
    };
    assert_eq!(a.identity(), b.identity());
}

#[test]
fn texts_that_differ_only_in_length_differ() {
    let mut i = Interner::default();
    assert_eq!(i.string("ab").as_str(), "ab");
    assert_eq!(i.string("ab\0").as_str(), "ab\0");
}
