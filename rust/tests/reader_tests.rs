use _core::lang::reader::{read, read_with_limit, FormKind};
use _core::run::error::ErrorKind;

fn kinds(src: &str) -> Vec<FormKind> {
    read(src)
        .unwrap_or_else(|e| panic!("{src}: {}", e.message))
        .into_iter()
        .map(|mut f| std::mem::replace(&mut f.kind, FormKind::Nil))
        .collect()
}

fn read_err(src: &str) -> _core::Error {
    match read(src) {
        Ok(f) => panic!("{src} should not read, got {f:?}"),
        Err(e) => e,
    }
}

#[test]
fn literals() {
    assert_eq!(
        kinds("nil true false"),
        vec![FormKind::Nil, FormKind::Bool(true), FormKind::Bool(false)]
    );
    assert_eq!(
        kinds("0 417 -38"),
        vec![FormKind::Int(0), FormKind::Int(417), FormKind::Int(-38)]
    );
    assert_eq!(
        kinds("0.25 -4.5 6.02e23 3E-4 7e2"),
        vec![
            FormKind::Float(0.25),
            FormKind::Float(-4.5),
            FormKind::Float(6.02e23),
            FormKind::Float(3e-4),
            FormKind::Float(700.0)
        ]
    );
    assert_eq!(
        kinds(r#""a\"b\\c\nd\te\r""#),
        vec![FormKind::Str("a\"b\\c\nd\te\r".into())]
    );
    assert_eq!(
        kinds(r"\q \ü \newline \space \tab"),
        vec![
            FormKind::Str("q".into()),
            FormKind::Str("ü".into()),
            FormKind::Str("\n".into()),
            FormKind::Str(" ".into()),
            FormKind::Str("\t".into()),
        ]
    );
    assert_eq!(
        kinds(":pallet-id :ok? :x2"),
        vec![
            FormKind::Keyword("pallet-id".into()),
            FormKind::Keyword("ok?".into()),
            FormKind::Keyword("x2".into()),
        ]
    );
    assert_eq!(
        kinds("data/cities - -x nil? +5 / *1"),
        vec![
            FormKind::Symbol("data/cities".into()),
            FormKind::Symbol("-".into()),
            FormKind::Symbol("-x".into()),
            FormKind::Symbol("nil?".into()),
            FormKind::Symbol("+5".into()),
            FormKind::Symbol("/".into()),
            FormKind::Symbol("*1".into()),
        ]
    );
}

#[test]
fn collections_comments_and_commas() {
    let f = kinds("{:w 4, :h 9} ; comment\n[1 [2]] #{:r :g} (f[1]) #(+ % 1) #'total");
    assert!(matches!(&f[0], FormKind::Map(v) if v.len() == 4));
    assert!(matches!(&f[1], FormKind::Vector(v) if v.len() == 2));
    assert!(matches!(&f[2], FormKind::Set(v) if v.len() == 2));
    assert!(matches!(&f[3], FormKind::List(v) if v.len() == 2));
    assert!(matches!(&f[4], FormKind::ShortFn(v) if v.len() == 3));
    assert_eq!(f[5], FormKind::VarRef("total".into()));
    assert!(kinds("; only a comment\n  ,,, ").is_empty());
}

#[test]
fn positions_are_line_and_column() {
    let forms = read("(a)\n  [b\n   c]").unwrap();
    assert_eq!((forms[1].pos.line, forms[1].pos.col), (2, 3));
}

#[test]
fn unclosed_says_where_it_opened() {
    let e = read_err("(def x 1)\n(let [a 1]\n    (foo a)");
    assert_eq!(e.kind, ErrorKind::Parse);
    assert_eq!(
        e.message,
        "unbalanced brackets: 1 unclosed '(' (the innermost '(' opened at 2:1 is never closed)"
    );
    assert_eq!(e.pos.map(|p| (p.line, p.col)), Some((2, 1)));
    let e = read_err("[1 (2");
    assert!(
        e.message
            .starts_with("unbalanced brackets: 1 unclosed '[', 1 unclosed '('"),
        "{}",
        e.message
    );
}

#[test]
fn mismatched_and_stray_closers() {
    let e = read_err("(foo [1 2)");
    assert_eq!(
        e.message,
        "mismatched ')' at 1:10: expected ']' to close '[' opened at 1:6"
    );
    // stray closers between top-level forms are ignored
    assert_eq!(kinds("(+ 4 5))").len(), 1);
}

#[test]
fn map_literal_needs_pairs() {
    let e = read_err("{:a 1 :b}");
    assert_eq!(e.message, "map literal needs an even number of forms (key value pairs), got 3 in the map opened at 1:1");
}

#[test]
fn rejected_syntax_has_targeted_messages() {
    for (src, needle) in [
        (r#"#"\d+""#, "regex literals"),
        ("#_ x", "discard"),
        ("@a", "deref"),
        ("'x", "quote"),
        ("`x", "syntax-quote"),
        ("^:meta x", "metadata"),
        ("#inst \"2020\"", "tagged literals"),
        ("##Inf", "##Inf"),
        ("\"a\\u00e9\"", "unsupported escape \\u"),
        ("\"line\nbreak\"", "raw line break"),
        ("2/7", "invalid number 2/7"),
        ("5.", "invalid number 5."),
        (".5", "invalid number .5"),
        ("0x1F", "invalid number 0x1F"),
        ("99999999999999999999", "does not fit in 64 bits"),
        (":geo/lat", "namespaced keywords"),
        (r"\uxyz", "unknown character literal"),
    ] {
        let e = read_err(src);
        assert_eq!(e.kind, ErrorKind::Parse, "{src}");
        assert!(e.message.contains(needle), "{src}: {}", e.message);
        assert!(e.pos.is_some(), "{src} has no position");
    }
    // text inside strings and comments is never inspected for rejected syntax
    assert_eq!(
        kinds("\"#_ @x 'y\" ; #\"re\""),
        vec![FormKind::Str("#_ @x 'y".into())]
    );
}

#[test]
fn nesting_is_bounded_without_recursion() {
    let deep = "(".repeat(100_000);
    let e = read_err(&deep);
    assert!(
        e.message.contains("nested more than 512 levels"),
        "{}",
        e.message
    );
    let ok = format!("{}1{}", "[".repeat(500), "]".repeat(500));
    assert!(read(&ok).is_ok());
    assert!(read_with_limit(&ok, 100).is_err());
}

#[test]
fn every_rejected_syntax_gets_its_message_and_hint_from_the_table() {
    let programs = [
        ("#\"", "#\"x\""),
        ("#_", "#_ x"),
        ("##", "##Inf"),
        ("#", "#inst 1"),
        ("'", "'x"),
        ("`", "`x"),
        ("~", "~x"),
        ("@", "@a"),
        ("^ ", "(^ 2 10)"),
        ("^", "^:private x"),
    ];
    assert_eq!(programs.len(), _core::lang::meant::SYNTAX.len());
    for (lead, message, hint) in _core::lang::meant::SYNTAX {
        let (_, src) = programs
            .iter()
            .find(|(l, _)| l == lead)
            .expect("a program per entry");
        let e = read_err(src);
        assert_eq!(e.kind, ErrorKind::Parse, "{src}");
        assert_eq!(e.message, *message, "{src}");
        assert_eq!(e.hint.as_deref(), *hint, "{src}");
    }
}

#[test]
fn complete_prefixes_end_after_whole_forms() {
    use _core::lang::reader::complete_prefix;
    fn cut(s: &str) -> &str {
        &s[..complete_prefix(s)]
    }
    assert_eq!(cut(""), "");
    assert_eq!(cut("(def a 1)"), "(def a 1)");
    assert_eq!(cut("(def a 1)\n(def b"), "(def a 1)");
    assert_eq!(cut("(def a 1) (println \"a)b"), "(def a 1)");
    assert_eq!(cut("(def a 1) foo"), "(def a 1)"); // `foo` may go on: `foobar`
    assert_eq!(cut("(def a 1) foo "), "(def a 1) foo");
    assert_eq!(cut("\"abc\" \"de"), "\"abc\"");
    assert_eq!(cut("(a) ; (b)\n(c"), "(a)");
    assert_eq!(cut("(a) #_ (b)"), "(a)"); // the reader refuses #_: never part of a cut
    assert_eq!(cut("(a) '(1 2) (b"), "(a)"); // nor quote
    assert_eq!(cut("(a) #{1 2} (b"), "(a) #{1 2}");
    assert_eq!(cut("(a) #(+ % 1) x"), "(a) #(+ % 1)");
    assert_eq!(cut("(str \"\\\"(\")"), "(str \"\\\"(\")");
    assert_eq!(cut("(a (b [c {:d 1}])) (e"), "(a (b [c {:d 1}]))");
    assert_eq!(cut("(a))"), "(a))"); // a stray closer, which the reader ignores (§2.9)
}
