use _core::data::value::Value;
use _core::eval_str;
use _core::print::format::{float_display, float_repr, print, to_clojure, PrintOpts};

fn p(src: &str, limit: Option<usize>, plimit: Option<usize>) -> (String, bool) {
    let v = eval_str(src).unwrap_or_else(|e| panic!("{src}: {}", e.message));
    to_clojure(&v, limit, plimit)
}

#[test]
fn floats_round_trip_in_clojure_style() {
    for (f, s) in [
        (7.0, "7.0"),
        (2.5, "2.5"),
        (2.0 / 3.0, "0.6666666666666666"),
        (2e-11, "2.0E-11"),
        (1.5e21, "1.5E21"),
        (1e7, "1.0E7"),
        (1234567.0, "1234567.0"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (-4.5, "-4.5"),
        (0.0, "0.0"),
        (f64::INFINITY, "##Inf"),
        (f64::NEG_INFINITY, "##-Inf"),
        (f64::NAN, "##NaN"),
    ] {
        assert_eq!(float_repr(f), s, "{f}");
        if f.is_finite() {
            assert_eq!(float_repr(f).replace('E', "e").parse::<f64>().ok(), Some(f));
        }
    }
    assert_eq!(float_display(3e-7), "3.0e-7");
    assert_eq!(float_display(2.5), "2.5");
    assert_eq!(float_display(1e16), "1.0e16");
    assert_eq!(float_display(123456789.0), "123456789.0");
    assert_eq!(float_display(f64::INFINITY), "Infinity");
    assert_eq!(float_display(f64::NAN), "NaN");
}

#[test]
fn printer_forms() {
    assert_eq!(
        p("{:name \"Alice\" :age 30}", None, None).0,
        "{:name \"Alice\", :age 30}"
    );
    assert_eq!(
        p("[0.5 \"x\" :k nil true]", None, None).0,
        "[0.5 \"x\" :k nil true]"
    );
    assert_eq!(p("#{:r :g}", None, None).0, "#{:r :g}");
    assert_eq!(
        p("{0 \"zero\" \"tag\" :b}", None, None).0,
        "{0 \"zero\", \"tag\" :b}"
    );
    assert_eq!(
        p("\"q\\\"\\\\\\n\\t\\r\"", None, None).0,
        "\"q\\\"\\\\\\n\\t\\r\""
    );
    assert_eq!(p("(fn [a b] a)", None, None).0, "#fn[a b]");
    assert_eq!(p("(fn [a & more] a)", None, None).0, "#fn[a & more]");
    assert_eq!(p("(fn [[x y] {:keys [z]}] x)", None, None).0, "#fn[_ _]");
    assert_eq!(p("count", None, None).0, "#<builtin>");
    assert_eq!(p("(def x 1)", None, None).0, "#'x");
    assert_eq!(
        to_clojure(&Value::str("\u{1}"), None, None).0,
        "\"\\u0001\""
    );
    assert_eq!(
        to_clojure(&Value::Date(22_403), None, None).0,
        "\"2031-05-04\""
    );
    assert_eq!(
        to_clojure(&Value::DateTime(1_935_912_428_000), None, None).0,
        "\"2031-05-07T09:27:08Z\""
    );
    assert_eq!(
        to_clojure(&Value::DateTime(1_935_912_428_123), None, None).0,
        "\"2031-05-07T09:27:08.123Z\""
    );
}

#[test]
fn truncation_rules() {
    assert_eq!(
        p("[4 8 15 16 23 42]", Some(3), None),
        ("[4 8 15 ...] (6 items, showing first 3)".into(), true)
    );
    assert_eq!(p("[4 8 15]", Some(3), None), ("[4 8 15]".into(), false));
    assert_eq!(
        p("#{1 2 3 4}", Some(2), None),
        ("#{1 2 ...} (4 items, showing first 2)".into(), true)
    );
    assert_eq!(
        p("{:x 1 :y 2 :z 3}", Some(2), None),
        ("{:x 1, :y 2, ...}".into(), true)
    );
    assert_eq!(
        p("\"abcdefgh\"", None, Some(5)),
        ("\"abcde...\"".into(), true)
    );
    // nested values follow the same rules
    assert_eq!(
        p("[[1 2 3 4] [5]]", Some(3), None),
        ("[[1 2 3 ...] (4 items, showing first 3) [5]]".into(), true)
    );
    // maps: E = min(limit, max(P/30, 1)) entries; each value gets max((P - 10n)/n, 10) characters
    assert_eq!(
        p(
            "{:name \"Laptop\" :price 1200 :category \"Electronics\"}",
            Some(3),
            Some(80)
        ),
        ("{:name \"Laptop\", :price 1200, ...}".into(), true)
    );
    assert_eq!(
        p(
            "{:a \"0123456789012345678901234567890123456789\" :b 1}",
            Some(3),
            Some(60)
        ),
        ("{:a \"01234567890123456789...\", :b 1}".into(), true)
    );
    assert_eq!(p("[]", Some(3), Some(80)), ("[]".into(), false));
    assert_eq!(
        p("[1 2]", Some(0), None),
        ("[...] (2 items, showing first 0)".into(), true)
    );
}

#[test]
fn hidden_keys() {
    let v = eval_str("{:_secret 1 :name \"a\" \"_k\" 2}").unwrap();
    let (t, tr) = print(
        &&v,
        PrintOpts {
            limit: None,
            printable_limit: None,
            hide_private: true,
        },
    );
    assert_eq!(t, "{:name \"a\"}");
    assert!(tr);
    assert_eq!(
        to_clojure(&v, None, None).0,
        "{:_secret 1, :name \"a\", \"_k\" 2}"
    );
}

#[test]
fn printing_is_proportional_to_output() {
    let big = Value::vector((0..10_000_000).map(Value::Int).collect());
    let t = std::time::Instant::now();
    for _ in 0..1000 {
        assert_eq!(
            to_clojure(&big, Some(3), None).0,
            "[0 1 2 ...] (10000000 items, showing first 3)"
        );
    }
    // 1000 prints of a 10M list: only possible if the list is not walked
    assert!(t.elapsed().as_secs() < 5);
}

#[test]
fn type_labels() {
    for (src, label) in [
        ("[]", "list[0]"),
        ("[1 2 3]", "list[3]"),
        ("{}", "map[0]"),
        ("{:a 1}", "map[1]"),
        ("#{1 2 3}", "set[3]"),
        ("\"hello\"", "string"),
        ("42", "integer"),
        ("3.14", "float"),
        ("true", "boolean"),
        (":active", "keyword"),
        ("nil", "nil"),
        ("(fn [x y] x)", "#fn[x y]"),
    ] {
        assert_eq!(eval_str(src).unwrap().type_label(), label, "{src}");
    }
}

#[test]
fn exact_token_counts() {
    use _core::print::tokens::count_tokens;
    assert_eq!(count_tokens("hello world", "cl100k_base"), Some(2));
    assert_eq!(count_tokens("hello world", "o200k_base"), Some(2));
    assert_eq!(count_tokens("", "cl100k_base"), Some(0));
    assert_eq!(count_tokens("x", "p50k_base"), None);
}

#[test]
fn json_text_becomes_core_values() {
    use _core::data::json::from_json;
    let v = from_json(
        r#"{"name": "Ada", "first name": "A", "tags": ["x", 1, 2.5, null, true], "n": {}}"#,
    )
    .unwrap();
    assert_eq!(
        to_clojure(&v, None, None).0,
        r#"{:name "Ada", "first name" "A", :tags ["x" 1 2.5 nil true], :n {}}"#
    );
    assert!(from_json("{\"a\": 1").is_err());
    assert!(
        from_json(&"[".repeat(100_000)).is_err(),
        "nesting is bounded, not a stack overflow"
    );
    let e = from_json("{\"x\": 9223372036854775808}").unwrap_err();
    assert!(
        e.message.contains("does not fit in 64 bits"),
        "{}",
        e.message
    );
}
