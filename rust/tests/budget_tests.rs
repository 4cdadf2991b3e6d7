//! Printing within a token budget (`_core::print::budget`): exact texts worked out by hand for small
//! cases; the properties over random values are in tests/lang/test_token_budget.py.

use _core::eval_str;
use _core::print::budget::{fit, Budget};
use _core::print::format::print_full;
use _core::print::tokens::count_tokens;

fn fitted(src: &str, max_tokens: usize, root: Option<&str>) -> String {
    let v = eval_str(src).unwrap_or_else(|e| panic!("{src}: {}", e.message));
    let b = Budget {
        max_tokens,
        encoding: "o200k_base",
        hide_private: false,
        root,
    };
    let f = fit(&&v, &b).expect("known encoding");
    assert!(f.tokens <= max_tokens, "{src} at {max_tokens}: {}", f.text);
    assert_eq!(count_tokens(&f.text, "o200k_base"), Some(f.tokens));
    f.text
}

#[test]
fn a_value_that_fits_is_printed_whole() {
    for src in [
        "[1 2 3]",
        "{:a 1, :b [2 3]}",
        "\"hello\"",
        "nil",
        "#{1}",
        "[]",
    ] {
        let v = eval_str(src).unwrap();
        assert_eq!(fitted(src, 100, Some("*1")), print_full(&v, false));
    }
}

/// The widest `[0 1 ... k-1 ...N more HINT]` within `max` tokens, built by hand.
fn widest(n: usize, max: usize, hint: bool) -> String {
    (0..=n)
        .rev()
        .map(|k| {
            let items: Vec<String> = (0..k).map(|i| i.to_string()).collect();
            let sep = if k > 0 { " " } else { "" };
            let tail = match (hint, k) {
                (false, _) => String::new(),
                (true, 0) => " *1".into(),
                (true, k) => format!(" (drop {k} *1)"),
            };
            format!("[{}{sep}...{} more{tail}]", items.join(" "), n - k)
        })
        .find(|t| count_tokens(t, "o200k_base").unwrap() <= max)
        .unwrap()
}

#[test]
fn sequences_show_their_first_items_then_how_many_more() {
    for max in [10, 14, 20, 37, 60] {
        assert_eq!(
            fitted("(vec (range 100))", max, Some("*1")),
            widest(100, max, true)
        );
        assert_eq!(
            fitted("(vec (range 100))", max, None),
            widest(100, max, false)
        );
    }
}

#[test]
fn nested_markers_name_their_path() {
    let text = fitted(
        "[{:id 1 :tags (vec (range 50))} {:id 2 :tags []}]",
        40,
        Some("*1"),
    );
    assert!(
        text.contains("more (drop ") && text.contains("(get-in *1 [0 :tags])"),
        "{text}"
    );
}

#[test]
fn strings_are_cut_with_their_length() {
    let text = fitted(
        "(apply str (map (fn [_] \"ab\") (range 1000)))",
        20,
        Some("*1"),
    );
    let (head, marker) = text.split_once("\"...").expect("a cut string");
    let shown = head.len() - 1;
    assert_eq!(
        marker,
        format!("{} more chars (subs *1 {shown})", grouped(2000 - shown))
    );
}

#[test]
fn maps_say_how_many_keys_are_left() {
    let text = fitted(
        "(into {} (map (fn [i] [(str \"k\" i) i]) (range 40)))",
        40,
        Some("*1"),
    );
    assert!(text.starts_with("{\"k0\" 0, "), "{text}");
    assert!(text.contains(" more keys (drop "), "{text}");
    assert!(text.ends_with(" (seq *1))}"), "{text}");
}

#[test]
fn tiny_budgets_still_fit() {
    assert_eq!(fitted("(vec (range 1000000))", 1, Some("*1")), "...");
    assert_eq!(fitted("(vec (range 1000000))", 0, Some("*1")), "");
    assert_eq!(fitted("123456789012345", 1, Some("*1")), "...");
}

#[test]
fn deep_nesting_is_collapsed_not_overflowed() {
    let src = format!("{}1{}", "[".repeat(400), "]".repeat(400));
    let text = fitted(&src, 50, Some("*1"));
    assert!(text.contains("...1 more"), "{text}");
}

#[test]
#[ignore = "timing probe: cargo test --release --test core budget -- --ignored --nocapture"]
fn million_records_at_500_tokens() {
    let v =
        eval_str("(vec (map (fn [i] {:id i :name (str \"n\" i) :tags [1 2 3]}) (range 1000000)))")
            .unwrap();
    let b = Budget {
        max_tokens: 500,
        encoding: "o200k_base",
        hide_private: false,
        root: Some("*1"),
    };
    fit(&&v, &b);
    let t = std::time::Instant::now();
    for _ in 0..50 {
        fit(&&v, &b);
    }
    eprintln!("{:?} per fit", t.elapsed() / 50);
    eprintln!("{}", fit(&&v, &b).unwrap().text);
}

fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
