//! JSON loading read by two threads: the split is found where it should be, and the value and
//! the messages are the same as one thread's (built or worked out here, not read back).

use _core::data::json::{from_json, split_point, MAX_JSON_DEPTH};
use _core::data::value::{Str, Value, ValueMap};

/// `n` records `{"id": i, "name": "name-i", "tags": [i, "t"]}` as JSON text, and as values.
fn records(n: usize) -> (String, Vec<Value>) {
    let mut text = String::from("[");
    let mut values = Vec::new();
    for i in 0..n {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!(
            r#"{{"id":{i},"name":"name-{i}","tags":[{i},"t"]}}"#
        ));
        let mut m = ValueMap::default();
        m.insert(Value::Keyword(Str::from("id")), Value::Int(i as i64));
        m.insert(
            Value::Keyword(Str::from("name")),
            Value::Str(Str::from(format!("name-{i}").as_str())),
        );
        m.insert(
            Value::Keyword(Str::from("tags")),
            Value::vector(vec![Value::Int(i as i64), Value::Str(Str::from("t"))]),
        );
        values.push(Value::map(m));
    }
    text.push(']');
    (text, values)
}

fn object(entries: Vec<(&str, Value)>) -> Value {
    let mut m = ValueMap::default();
    for (k, v) in entries {
        m.insert(Value::Keyword(Str::from(k)), v);
    }
    Value::map(m)
}

#[test]
fn the_split_is_a_record_boundary_of_the_outer_array_past_the_middle() {
    let (text, _) = records(40_000);
    let doc = format!(r#"{{"orders": {text}}}"#);
    let at = split_point(doc.as_bytes()).expect("a boundary");
    let mid = doc.len() / 2;
    assert!(at >= mid && at < mid + 200, "{at} vs {mid}");
    // the first byte of a record, which follows a record
    assert!(doc[at..].starts_with(r#"{"id":"#), "{}", &doc[at..at + 20]);
    assert!(doc[..at].ends_with("]},"), "{}", &doc[at - 20..at]);
    // small texts and texts without a `},{` have none worth a thread
    assert_eq!(split_point(b"[1, 2, 3]"), None);
}

#[test]
fn a_large_array_reads_the_same_in_two_halves() {
    let (text, values) = records(40_000);
    assert!(
        text.len() > 1 << 20,
        "large enough to be split: {}",
        text.len()
    );
    assert_eq!(from_json(&text).unwrap(), Value::vector(values.clone()));
    // inside an object, with whitespace, and with more after the array
    let doc = format!(
        "{{\n  \"orders\" : {} ,\n  \"after\": [1, {{\"k\": null}}]\n}}\n",
        text.replace("},{", "},\n  {")
    );
    let expected = object(vec![
        ("orders", Value::vector(values)),
        (
            "after",
            Value::vector(vec![Value::Int(1), object(vec![("k", Value::Nil)])]),
        ),
    ]);
    assert_eq!(from_json(&doc).unwrap(), expected);
}

#[test]
fn a_split_guessed_inside_a_string_is_not_taken() {
    // the middle of the text is inside one long string full of `},{`
    let noise = r#"},{"id":-1},{"#.repeat(12_000);
    let (text, values) = records(4_000);
    let doc = format!(
        r#"{{"a": {text}, "s": "{}", "b": {text}}}"#,
        noise.replace('"', "\\\"")
    );
    let at = split_point(doc.as_bytes()).expect("a guess");
    let string_at = doc.find(r#""s": ""#).unwrap();
    assert!(
        at > string_at && at < string_at + noise.len(),
        "the guess is in the string"
    );
    let expected = object(vec![
        ("a", Value::vector(values.clone())),
        ("s", Value::Str(Str::from(noise.as_str()))),
        ("b", Value::vector(values)),
    ]);
    assert_eq!(from_json(&doc).unwrap(), expected);
}

#[test]
fn errors_after_the_split_say_where_as_one_thread_would() {
    let (text, _) = records(40_000);
    // a trailing comma in record 39,000 (read by the second thread, then by the first)
    let bad = text.replacen(r#""tags":[39000,"t"]}"#, r#""tags":[39000,"t"],}"#, 1);
    let doc = format!(r#"{{"orders": {bad}}}"#);
    let index = doc.find(r#"[39000,"t"],}"#).unwrap() + r#"[39000,"t"],"#.len();
    let e = from_json(&doc).unwrap_err();
    assert_eq!(
        e.message,
        format!(
            "invalid JSON data at data.orders[39000]: trailing comma (line 1, column {})",
            index + 1
        )
    );
    // after the array: read by the first thread, past the second's part; the column is
    // that of the byte where the text stops being JSON (the `}` after `tru`)
    let doc = format!("{{\"orders\": {text},\n \"x\": tru}}");
    let e = from_json(&doc).unwrap_err();
    assert_eq!(
        e.message,
        "invalid JSON data at data.x: expected ident (line 2, column 10)"
    );
}

#[test]
fn nesting_is_counted_from_the_document_not_from_the_split() {
    let (text, _) = records(40_000);
    // the array is at depth 3 ({"a": {"b": [...]}}), a record at 4, and level `j` of the
    // arrays nested as its `tags` at 4 + j: levels deeper than 996 are refused
    let nested = |k: usize| format!("{}{}", "[".repeat(k), "]".repeat(k));
    let limit = MAX_JSON_DEPTH;
    let too_deep = text.replacen(r#"[39000,"t"]"#, &nested(limit - 3), 1);
    let doc = format!(r#"{{"a": {{"b": {too_deep}}}}}"#);
    let e = from_json(&doc).unwrap_err();
    let path = format!("data.a.b[39000].tags{}", "[0]".repeat(limit - 4));
    assert_eq!(
        e.message,
        format!("invalid JSON data at {path}: nested more than {limit} levels deep")
    );
    let fits = text.replacen(r#"[39000,"t"]"#, &nested(limit - 4), 1);
    let doc = format!(r#"{{"a": {{"b": {fits}}}}}"#);
    assert!(from_json(&doc).is_ok());
}

#[test]
fn small_texts_read_by_two_threads_read_as_by_one() {
    use _core::data::json::from_json_split;
    use _core::print::format::to_clojure;
    let docs = [
        r#"[{"a":1},{"a":2},{"a":3},{"a":4}]"#,
        r#"{"x": [{"s": "},{"}, {"s": "]},{["}, {"s": "\"},{\""}], "y": 1}"#,
        r#"[[{"a":[{"b":1},{"b":2}]},{"a":[]}],[{"c":{}},{"c":{"d":[{},{}]}}]]"#,
        "{\n \"k\" : [ { \"a\" : 1 } ,\n { \"a\" : 2 } , { \"a\" : 3 } ] , \"t\" : true }",
        r#"[{"a":1},{"a":2},{"a":3,}]"#,
        r#"[{"a":1},{"a":2},{"a":3}"#,
        r#"[{"a":1},{"a":2},{"a":3}]]"#,
        r#"[{"a":1},{"a":2},{"a":NaN},{"a":1e999}]"#,
        r#"[{"a":1},{"a":2},{"a":9223372036854775808}]"#,
        "\u{feff}[{\"a\":1},{\"a\":2},{\"a\":3}]",
        r#"[{"a":1},{"a":2},{"a":1,"a":2},{"b":[{"x":1},{"x":2},{"y":3}]}]"#,
    ];
    for doc in docs {
        let one = from_json(doc);
        let two = from_json_split(doc, "data", 0);
        match (&one, &two) {
            (Ok(a), Ok(b)) => assert_eq!(to_clojure(a, None, None), to_clojure(b, None, None)),
            (Err(a), Err(b)) => assert_eq!(a.message, b.message, "{doc}"),
            _ => panic!("{doc}: {one:?} vs {two:?}"),
        }
    }
}
