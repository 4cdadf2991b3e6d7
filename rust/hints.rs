//! "Did you mean" hints from string similarity over the names a program can see.

#[allow(unused_imports)]
use crate::value::Str;
/// The candidate closest to `name`, if any is close enough to be a plausible typo.
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<String> {
    ranked(name, candidates, 1).into_iter().next()
}

fn ranked<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>, n: usize) -> Vec<String> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let mut scored: Vec<(f64, &str)> = candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| {
            let cb = c.rsplit('/').next().unwrap_or(c);
            (strsim::jaro_winkler(base, cb), c)
        })
        .filter(|(s, _)| *s >= 0.85)
        .collect();
    scored.sort_by(|a, b| {
        b.0.partial_cmp(&a.0)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then(a.1.cmp(b.1))
    });
    let mut out: Vec<String> = Vec::new();
    for (_, c) in scored {
        if !out.iter().any(|o| o == c) {
            out.push(c.to_string());
        }
        if out.len() == n {
            break;
        }
    }
    out
}

/// The hint for an undefined name: the hyphenated spelling of `snake_case`, else the nearest
/// names among locals, definitions, builtins, tools and data keys.
pub fn undefined_hint(name: &str, candidates: &[String]) -> Option<String> {
    if name.contains('_') {
        // LLMs often write Python-style names; PTC-Lisp names use hyphens
        let hyph = name.replace('_', "-");
        return Some(format!("names use hyphens: did you mean {hyph}?"));
    }
    let near = ranked(name, candidates.iter().map(String::as_str), 3);
    if near.is_empty() {
        None
    } else {
        Some(format!("Did you mean: {}", near.join(", ")))
    }
}
