//! The "what an LLM probably meant" tables only ever suggest what the language has.

use _core::lang::analyzer::SPECIAL_FORMS;
use _core::lang::builtins;
use _core::lang::meant::{callback_arity_hint, method_hint, METHODS, NAMES};

/// Every name a hint shows in call position, `(name ...`, excluding placeholders: single
/// letters and `...` stand for the program's own functions and values.
fn called_names(hint: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in hint.match_indices('(') {
        let rest = &hint[i + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != ')' && *c != '(')
            .collect();
        let placeholder = name.chars().count() <= 1
            || name == "..."
            || name.starts_with(['[', '{', '"', '#', ':'])
            || name.starts_with(|c: char| c.is_ascii_digit())
            || name.starts_with("tool/");
        if !placeholder {
            out.push(name);
        }
    }
    out
}

fn exists(name: &str) -> bool {
    builtins::lookup(name).is_some() || SPECIAL_FORMS.contains(&name)
}

#[test]
fn every_suggestion_names_a_builtin_or_special_form() {
    let mut hints: Vec<String> = NAMES.iter().map(|(_, h)| h.to_string()).collect();
    hints.extend(METHODS.iter().map(|(m, _)| method_hint(m)));
    hints.push(method_hint("no-such-method"));
    for b in builtins::names() {
        hints.extend(callback_arity_hint(b));
    }
    let mut bad = Vec::new();
    for h in &hints {
        for name in called_names(h) {
            if !exists(&name) {
                bad.push(format!("{name} in: {h}"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "hints suggest names the language lacks:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_check_itself_catches_a_foreign_name() {
    // the scanner must see names in call position, or the test above proves nothing
    assert_eq!(
        called_names("use (conj v x) or (fn [x] ...)"),
        ["conj", "fn"]
    );
    assert!(!exists("append"));
    assert_eq!(
        called_names("write #(f (g %)) and (tool/x 1)"),
        Vec::<String>::new()
    );
}

#[test]
fn no_foreign_name_is_a_builtin() {
    // a table entry for a name the language has would hide the real builtin's errors
    let clash: Vec<&str> = NAMES
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| exists(n))
        .collect();
    assert!(clash.is_empty(), "{clash:?}");
}

#[test]
fn foreign_names_are_listed_once() {
    let mut seen = std::collections::HashSet::new();
    for (n, _) in NAMES {
        assert!(seen.insert(*n), "{n} listed twice");
    }
}
