//! The loaders' interner: sharing of short strings and keys.

use _core::intern::Interner;
use _core::value::Value;

#[test]
fn equal_texts_share_one_allocation() {
    let mut i = Interner::default();
    let a = i.string("shipped");
    let b = i.string(&String::from("shipped"));
    assert!(std::ptr::eq(a.as_ptr(), b.as_ptr()));
    // long values are not shared
    let long = "x".repeat(33);
    assert!(!std::ptr::eq(
        i.string(&long).as_ptr(),
        i.string(&long).as_ptr()
    ));
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
    assert!(std::ptr::eq(a.as_ptr(), b.as_ptr()));
}

#[test]
fn texts_that_differ_only_in_length_differ() {
    let mut i = Interner::default();
    assert_eq!(i.string("ab").as_str(), "ab");
    assert_eq!(i.string("ab\0").as_str(), "ab\0");
}
