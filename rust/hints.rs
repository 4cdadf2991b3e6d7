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

/// Clojure functions outside the subset, with what to write instead. An LLM reaching for one
/// learns the idiom here rather than a similar-looking but unrelated name.
const ABSENT: &[(&str, &str)] = &[
    (
        "comp",
        "there is no comp; write the composition: #(f (g %))",
    ),
    ("partial", "there is no partial; write #(f a %)"),
    ("complement", "there is no complement; write #(not (f %))"),
    ("constantly", "there is no constantly; write (fn [& _] x)"),
    ("every-pred", "use (all-of p1 p2 ...)"),
    ("some-fn", "use (any-of p1 p2 ...)"),
    ("keep", "use (remove nil? (map f coll))"),
    ("mapcat", "use (apply concat (map f coll))"),
    ("quot", "use (int (/ a b))"),
    ("rand", "there is no randomness: programs are deterministic"),
    (
        "rand-int",
        "there is no randomness: programs are deterministic",
    ),
    (
        "rand-nth",
        "there is no randomness: programs are deterministic",
    ),
    (
        "shuffle",
        "there is no randomness: programs are deterministic",
    ),
    ("name", "for a keyword's text use (subs (str k) 1)"),
    (
        "keyword",
        "write keywords literally (:k); data keys are already keywords",
    ),
    (
        "symbol",
        "there are no symbols as values; use strings or keywords",
    ),
    ("list", "use a vector [...]"),
    ("list?", "vectors are the only sequences: use vector?"),
    ("seq?", "vectors are the only sequences: use vector?"),
    ("fn?", "there is no fn?; keep functions and data apart"),
    ("integer?", "use (and (number? x) (= x (int x)))"),
    ("butlast", "use (take (dec (count v)) v)"),
    ("drop-last", "use (take (dec (count v)) v)"),
    ("peek", "use last"),
    ("pop", "use (take (dec (count v)) v)"),
    ("subvec", "use (take n (drop start v))"),
    ("zipmap", "use (into {} (zip ks vs))"),
    ("merge-with", "use reduce over the entries with update"),
    ("reduce-kv", "use (reduce (fn [acc [k v]] ...) init m)"),
    ("partition-by", "use group-by, or loop/recur"),
    (
        "partition-all",
        "use loop/recur with take and drop (partition drops an incomplete last chunk)",
    ),
    ("split-at", "use [(take n v) (drop n v)]"),
    ("split-with", "use [(take-while p v) (drop-while p v)]"),
    ("dedupe", "use distinct (it removes every repeat)"),
    (
        "update-keys",
        "use (into {} (map (fn [[k v]] [(f k) v]) m))",
    ),
    (
        "capitalize",
        "use (str (upper-case (subs s 0 1)) (subs s 1))",
    ),
    ("blank?", "use (empty? (trim s))"),
    ("triml", "use trim"),
    ("trimr", "use trim"),
    ("index-of", "use includes? or re-find"),
    (
        "repeat",
        "there are no lazy sequences: use (map (fn [_] x) (range n))",
    ),
    ("hash-map", "use a map literal {...} or (into {} pairs)"),
    ("hash-set", "use a set literal #{...} or (set v)"),
    ("format", "build text with str, e.g. (str \"total: \" x); round with (/ (round (* x 100)) 100.0)"),
    ("sorted-map", "maps keep insertion order; sort entries with (sort-by key (entries m)) or (sort-by first m)"),
    ("sorted-set", "sets keep insertion order; use (sort s) for a sorted vector"),
    ("parseInt", "use (parse-long s)"),
    ("parseLong", "use (parse-long s)"),
    ("parseDouble", "use (parse-double s)"),
    ("valueOf", "use parse-long or parse-double"),
    ("toUpperCase", "use upper-case"),
    ("toLowerCase", "use lower-case"),
    ("print", "use println"),
    ("prn", "use println"),
    ("pr-str", "use str"),
    (
        "slurp",
        "there is no file or network access; use the tools you are given",
    ),
    (
        "spit",
        "there is no file or network access; use the tools you are given",
    ),
];

/// The idiom for a well-known function outside the subset (`comp`, `format`, `Integer/parseInt`).
pub fn absent_hint(name: &str) -> Option<String> {
    let base = name.rsplit('/').next().unwrap_or(name);
    ABSENT
        .iter()
        .find(|(n, _)| *n == base)
        .map(|(_, idiom)| format!("{name} is not part of PTC-Lisp; {idiom}"))
}

/// The hint for an undefined name: the idiom for a Clojure function outside the subset, the
/// hyphenated spelling of `snake_case`, else the nearest names among locals, definitions,
/// builtins, tools and data keys.
pub fn undefined_hint(name: &str, candidates: &[String]) -> Option<String> {
    if let Some(h) = absent_hint(name) {
        return Some(h);
    }
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
