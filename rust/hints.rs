//! "Did you mean" hints for names a program wrote but cannot see.

//! The order: a curated table of what LLMs reach for from other languages (`crate::meant`),
//! then edit distance (typos), then prefixes.

use crate::meant;

/// The candidate closest to `name`, if any is close enough to be a plausible typo.
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<String> {
    ranked(name, candidates, 1).into_iter().next()
}

/// Up to `n` candidates close to `name` by spelling: typos first, then prefixes.
pub fn nearest<'c>(
    name: &str,
    candidates: impl IntoIterator<Item = &'c str>,
    n: usize,
) -> Vec<String> {
    ranked(name, candidates, n)
}

fn base(name: &str) -> &str {
    name.rsplit('/')
        .next()
        .filter(|b| !b.is_empty())
        .unwrap_or(name)
}

/// How many edits a name of this length may be from what was meant: short names are only close
/// to too many things.
fn max_edits(len: usize) -> usize {
    match len {
        0..=2 => 0,
        3..=4 => 1,
        5..=8 => 2,
        _ => 3,
    }
}

/// Edit distance (transpositions count as one edit) when close enough to be a typo.
fn typo_distance(name: &str, candidate: &str) -> Option<usize> {
    let d = strsim::osa_distance(name, candidate);
    (d > 0 && d <= max_edits(name.chars().count()) && d < candidate.chars().count()).then_some(d)
}

/// One name starts with the other and the shorter is most of the longer (`println-str` and
/// `println`, not `strip-str` and `str`).
fn is_prefix_match(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short.len() >= 4 && short.len() * 2 >= long.len() && long.starts_with(short)
}

/// Up to `n` candidates: the typos first (fewest edits), then names `name` is a prefix of or
/// that are a prefix of it (closest length first).
fn ranked<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>, n: usize) -> Vec<String> {
    let b = base(name);
    let mut typos: Vec<(usize, &str)> = Vec::new();
    let mut prefixes: Vec<(usize, &str)> = Vec::new();
    for c in candidates {
        if c == name {
            continue;
        }
        let cb = base(c);
        if let Some(d) = typo_distance(b, cb) {
            typos.push((d, c));
        } else if is_prefix_match(b, cb) {
            prefixes.push((b.len().abs_diff(cb.len()), c));
        }
    }
    typos.sort();
    prefixes.sort();
    let mut out: Vec<String> = Vec::new();
    for (_, c) in typos.into_iter().chain(prefixes) {
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
        if out.len() == n {
            break;
        }
    }
    out
}

/// Tools a message may list in full; past this many an unknown tool's error names the nearest
/// and says how to search (a listing of hundreds of names would cost more than the program).
pub const TOOLS_LISTED: usize = 20;

/// How many tools an unknown tool's error names when it cannot list them all.
const TOOLS_NEAREST: usize = 5;

/// The `unknown_tool` error's message and hint for `name` among the tools `names`: every tool
/// listed while they are few (`Unknown tool: geocod. Available tools: geocode, list-ports`),
/// else the nearest by spelling, then by the words of the name they share, and the search.
pub fn unknown_tool(name: &str, names: &[String]) -> (String, Option<String>) {
    // one ranking by spelling: its first is the hint, its first few the nearest named
    let mut near = nearest(name, names.iter().map(String::as_str), TOOLS_NEAREST);
    let hint = near.first().map(|h| format!("did you mean tool/{h}?"));
    if names.len() <= TOOLS_LISTED {
        let list = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        };
        return (
            format!("Unknown tool: {name}. Available tools: {list}"),
            hint,
        );
    }
    if near.len() < TOOLS_NEAREST {
        for c in sharing_words(name, names) {
            if near.len() == TOOLS_NEAREST {
                break;
            }
            if !near.iter().any(|n| n == c) {
                near.push(c.to_string());
            }
        }
    }
    let n = names.len();
    let search = "Find others with (tools \"words\")";
    let message = if near.is_empty() {
        format!("Unknown tool: {name}. None of the {n} tools is named alike. {search}.")
    } else {
        format!(
            "Unknown tool: {name}. Nearest of the {n} tools: {}. {search}.",
            near.join(", ")
        )
    };
    (message, hint)
}

/// The names sharing words with `name` (its parts between `-`, `_`, `/` and `.`), most shared
/// first, then in the order given.
fn sharing_words<'c>(name: &str, names: &'c [String]) -> Vec<&'c str> {
    let words = |s: &str| -> Vec<String> {
        s.split(['-', '_', '/', '.'])
            .filter(|w| w.len() > 1)
            .map(str::to_lowercase)
            .collect()
    };
    let wanted = words(name);
    let mut scored: Vec<(usize, usize, &str)> = names
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let shared = words(c).iter().filter(|w| wanted.contains(w)).count();
            (shared > 0 && c != name).then_some((shared, i, c.as_str()))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, _, c)| c).collect()
}

/// The idiom for a well-known name from another language or from Clojure core outside the subset
/// (`len`, `comp`, `format`, `Integer/parseInt`).
pub fn absent_hint(name: &str) -> Option<String> {
    meant::idiom(name).map(|idiom| format!("{name} is not part of PTC-Lisp; {idiom}"))
}

/// Names of one namespace among the candidates (`data/…`, `tool/…`), for shape hints.
fn listed(candidates: &[String], prefix: &str) -> String {
    let names: Vec<&str> = candidates
        .iter()
        .filter(|c| c.starts_with(prefix))
        .map(String::as_str)
        .take(5)
        .collect();
    names.join(", ")
}

/// Names written in another language's shape: bare `data`/`tool`, `data.orders`, `name="x"`,
/// `snake_case`.
fn shape_hint(name: &str, candidates: &[String]) -> Option<String> {
    if name == "data" || name == "tool" {
        let have = listed(candidates, &format!("{name}/"));
        return Some(match (name, have.is_empty()) {
            ("data", true) => {
                "input data is reached by key, as data/key; this run has no input data".to_string()
            }
            ("data", false) => format!("input data is reached by key, as data/key: {have}"),
            (_, true) => "tools are called as (tool/name args); this run has no tools".to_string(),
            _ => format!("tools are called as (tool/name args): {have}"),
        });
    }
    for ns in ["data.", "tool."] {
        if let Some(rest) = name.strip_prefix(ns) {
            let slash = format!("{}/{}", &ns[..4], rest.replace('.', "/"));
            return Some(if ns == "tool." {
                format!("tools are called as ({slash} args)")
            } else {
                format!("write {slash}: data/ is a namespace, not an object")
            });
        }
    }
    // `name="x"` reads as `name=` then a string; `limit=10` as one symbol
    if let Some((key, _)) = name.split_once('=') {
        if !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_alphanumeric() || c == '-' || c == '_')
        {
            return Some(format!(
                "there are no keyword arguments; pass a map such as {{:{key} value}}"
            ));
        }
    }
    if name.contains('_') && name.chars().any(|c| c.is_alphanumeric()) {
        // LLMs often write Python-style names; PTC-Lisp names use hyphens
        let hyph = name.replace('_', "-");
        return Some(format!("names use hyphens: did you mean {hyph}?"));
    }
    None
}

/// A misspelt foreign name is recognised only from this many characters on.
const FOREIGN_TYPO_MIN: usize = 5;

/// The hint for an undefined name: the idiom for a name from another language, a hint for a
/// name written in another language's shape, else the nearest names among locals, definitions,
/// builtins, tools and data keys (a misspelt foreign name gets its idiom).
pub fn undefined_hint(name: &str, candidates: &[String]) -> Option<String> {
    if let Some(h) = absent_hint(name) {
        return Some(h);
    }
    if let Some(h) = shape_hint(name, candidates) {
        return Some(h);
    }
    let near = ranked(name, candidates.iter().map(String::as_str), 3);
    // a misspelt foreign name (`lenght`) when no name of the program is as close
    let b = base(name);
    let best_own = near.first().and_then(|c| typo_distance(b, base(c)));
    let foreign = meant::NAMES
        .iter()
        .filter_map(|(f, idiom)| typo_distance(b, f).map(|d| (d, *f, *idiom)))
        .min();
    // Short names are too often the program's own (`top` is not a misspelt `pop`), and a
    // name outside the language is never offered as the fix: only its idiom is.
    if let Some((d, f, idiom)) = foreign {
        if b.chars().count() >= FOREIGN_TYPO_MIN && best_own.map_or(true, |own| d < own) {
            return Some(format!(
                "{name} looks like {f}, which is not part of PTC-Lisp; {idiom}"
            ));
        }
    }
    if near.is_empty() {
        (!name.contains('/')).then(|| {
            format!(
                "if {name} is your own name, define it before use: (def {name} ...) or (defn {name} [...] ...)"
            )
        })
    } else {
        Some(format!("Did you mean: {}", near.join(", ")))
    }
}
