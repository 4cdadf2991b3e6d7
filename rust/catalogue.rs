//! The tools' catalogue (issue 33 §2): what `(tools "query")` and `(doc tool/name)` read.
//!
//! A Session's tools (name, parameters, signature text, description, effect) are given to the
//! core once, as plain data, and indexed here into the words of each name and description.
//! Nothing here calls the host: a search is a pure function of the catalogue and the query,
//! so the same Session answers the same way in every run and every replay (no tape entry is
//! needed; a resume in a Session with other tools may take another path, which the replay of
//! the record reports as it reports any other divergence).
//!
//! Ranking: the query and every tool's name and description are split into lowercased words
//! (at every character that is not a letter or digit, and at camelCase changes), each reduced
//! to a crude singular (`invoices` → `invoice`) so plurals meet. Each query word scores each
//! tool by its best match there, exact words before prefixes and names before descriptions
//! (name word 8, description word 4, a name word it begins 2, a description word it begins
//! 1), times how rare the word is among the tools (`sqrt((n + 1) / (tools matching + 1))`,
//! so in a query of several words the rare ones decide). A query that is a tool's whole name
//! puts that tool first. Ties go by name. Only correctly rounded operations (division,
//! square root, sums in a fixed order) are used, so scores are the same on every platform.

use std::sync::Arc;

use ahash::AHashMap;

use crate::map::Shape;
use crate::value::{MapData, Value};

/// What a tool does to the world, as the host declared it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Read,
    Write,
}

impl Effect {
    pub fn parse(s: &str) -> Option<Effect> {
        match s {
            "read" => Some(Effect::Read),
            "write" => Some(Effect::Write),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Read => "read",
            Effect::Write => "write",
        }
    }
}

/// One tool as the host describes it.
#[derive(Clone, Debug, Default)]
pub struct ToolDoc {
    /// The name after `tool/`.
    pub name: String,
    /// Parameter names, in order, as the prompt's `(tool/name a b)` line writes them.
    pub params: Vec<String>,
    /// The signature text (`(id :int) -> :map`); `None` when the host gave none.
    pub signature: Option<String>,
    /// The whole description; `None` when the tool has none.
    pub doc: Option<String>,
    pub effect: Option<Effect>,
}

/// The words of one tool, reduced and sorted (each once), for binary searches.
struct Words {
    /// The whole name, lowercased (a query that is the whole name ranks it first).
    lower: String,
    name: Vec<Box<str>>,
    doc: Vec<Box<str>>,
}

/// A tool's record as programs see it, built once: `{:name "tool/x" :doc ... :signature ...
/// :effect ...}`.
struct Record {
    values: [Value; 4],
}

/// The tools of one Session, indexed for search.
pub struct Catalogue {
    tools: Vec<ToolDoc>,
    words: Vec<Words>,
    records: Vec<Record>,
    by_name: AHashMap<String, usize>,
    /// The records' one shape (four distinct keywords always make one).
    shape: Option<Arc<Shape>>,
    /// Words of all the tools together: the size of one scan, for the fuel a search costs.
    total_words: usize,
}

/// At most this many matches unless the program asks for another number (`(tools q n)`).
pub const DEFAULT_MATCHES: usize = 10;

/// The keys of a tool's record, in order.
const RECORD_KEYS: [&str; 4] = ["name", "doc", "signature", "effect"];

const NAME_EXACT: f64 = 8.0;
const DOC_EXACT: f64 = 4.0;
const NAME_PREFIX: f64 = 2.0;
const DOC_PREFIX: f64 = 1.0;
/// A query that is a tool's whole name ranks that tool above every other score.
const WHOLE_NAME: f64 = 1.0e9;
/// Only a query's first this many distinct words count: a query is a few words, and a
/// search's work and memory grow with their number.
pub const MAX_QUERY_WORDS: usize = 32;
/// A query word begins longer words only from this many characters on (`in` would begin
/// too many).
const MIN_PREFIX_CHARS: usize = 3;

impl Catalogue {
    /// Indexes `tools`, in the host's order; a name given twice keeps its first entry.
    pub fn new(tools: Vec<ToolDoc>) -> Catalogue {
        let mut kept: Vec<ToolDoc> = Vec::with_capacity(tools.len());
        let mut by_name = AHashMap::with_capacity(tools.len());
        for t in tools {
            if !by_name.contains_key(&t.name) {
                by_name.insert(t.name.clone(), kept.len());
                kept.push(t);
            }
        }
        let keys = RECORD_KEYS.map(Value::kw).to_vec();
        let shape = Shape::new(keys).map(Arc::new);
        let words: Vec<Words> = kept
            .iter()
            .map(|t| Words {
                lower: t.name.to_lowercase(),
                name: sorted_stems(&t.name),
                doc: sorted_stems(t.doc.as_deref().unwrap_or("")),
            })
            .collect();
        let total_words = words.iter().map(|w| w.name.len() + w.doc.len()).sum();
        let records = kept
            .iter()
            .map(|t| Record {
                values: [
                    Value::string(format!("tool/{}", t.name)),
                    t.doc.as_deref().map_or(Value::Nil, Value::str),
                    t.signature.as_deref().map_or(Value::Nil, Value::str),
                    t.effect.map_or(Value::Nil, |e| Value::kw(e.as_str())),
                ],
            })
            .collect();
        Catalogue {
            tools: kept,
            words,
            records,
            by_name,
            shape,
            total_words,
        }
    }

    /// A catalogue that knows only the tools' names (a host that describes nothing).
    pub fn names_only(names: Vec<String>) -> Catalogue {
        Catalogue::new(
            names
                .into_iter()
                .map(|name| ToolDoc {
                    name,
                    ..ToolDoc::default()
                })
                .collect(),
        )
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn tools(&self) -> &[ToolDoc] {
        &self.tools
    }

    pub fn get(&self, name: &str) -> Option<&ToolDoc> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    /// The record of tool `i`: `{:name "tool/x" :doc "..." :signature "..." :effect :read}`.
    pub fn record(&self, i: usize) -> Value {
        let values = self.records[i].values.clone();
        match &self.shape {
            Some(shape) => Value::Map(MapData::record(shape.clone(), values.into_iter())),
            None => crate::map::record_or_map(RECORD_KEYS.map(Value::kw).to_vec(), values.to_vec()),
        }
    }

    /// Work units a search for `query` costs: every word of every tool once per query word,
    /// plus one per tool (the fuel charged before the scan).
    pub fn search_cost(&self, query: &Query) -> usize {
        self.total_words
            .saturating_add(self.tools.len())
            .saturating_mul(query.words.len().max(1))
    }

    /// The indices of the best matches for `query`, best first, at most `limit`; tools that
    /// match no word of the query are left out.
    pub fn search(&self, query: &Query, limit: usize) -> Vec<usize> {
        let q = &query.words;
        if q.is_empty() || limit == 0 {
            return Vec::new();
        }
        let n = self.tools.len();
        // the best match of each query word in each tool, then how many tools each word meets
        let mut best = vec![0.0f64; n * q.len()];
        let mut df = vec![0usize; q.len()];
        for (i, w) in self.words.iter().enumerate() {
            for (j, word) in q.iter().enumerate() {
                let m = best_match(w, word);
                if m > 0.0 {
                    df[j] += 1;
                }
                best[i * q.len() + j] = m;
            }
        }
        let idf: Vec<f64> = df
            .iter()
            .map(|&d| ((n as f64 + 1.0) / (d as f64 + 1.0)).sqrt())
            .collect();
        let whole = &query.whole;
        let mut scored: Vec<(f64, usize)> = Vec::new();
        for i in 0..n {
            let mut s = 0.0;
            for (j, f) in idf.iter().enumerate() {
                s += best[i * q.len() + j] * f;
            }
            if !whole.is_empty() && self.words[i].lower == *whole {
                s += WHOLE_NAME;
            }
            if s > 0.0 {
                scored.push((s, i));
            }
        }
        scored.sort_by(|a, b| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.tools[a.1].name.cmp(&self.tools[b.1].name))
        });
        scored.into_iter().take(limit).map(|(_, i)| i).collect()
    }

    /// Up to `n` tool names near `name`: spelling first (typos, prefixes), then the best
    /// matches of its words.
    pub fn nearest(&self, name: &str, n: usize) -> Vec<String> {
        let mut out = crate::hints::nearest(name, self.tools.iter().map(|t| t.name.as_str()), n);
        for i in self.search(&Query::new(name), n) {
            let t = &self.tools[i].name;
            if out.len() < n && !out.iter().any(|o| o == t) {
                out.push(t.clone());
            }
        }
        out
    }
}

/// `(tool/name a b)  ; signature - "description"`: the prompt's FMT-004 line for a tool, with
/// its whole description (`;` removed and line breaks folded, so it stays one line).
pub fn doc_line(t: &ToolDoc) -> String {
    let mut left = format!("(tool/{}", t.name);
    for p in &t.params {
        left.push(' ');
        left.push_str(p);
    }
    left.push(')');
    let mut comment = t.signature.clone().unwrap_or_default();
    if let Some(d) = t.doc.as_deref() {
        let folded = d.replace(';', "");
        let folded: Vec<&str> = folded.split_whitespace().collect();
        if !folded.is_empty() {
            comment.push_str(&format!(" - \"{}\"", folded.join(" ")));
        }
    }
    if comment.is_empty() {
        return left;
    }
    // comments start in column 32 when the entry is shorter (`_format.COMMENT_COLUMN`)
    let pad = 32usize.saturating_sub(left.chars().count()).max(2);
    format!("{left}{}; {comment}", " ".repeat(pad))
}

/// A search's words, reduced, each once, in the order written (`tool/` prefixes dropped), and
/// the query as a whole name, lowercased.
pub struct Query {
    words: Vec<String>,
    whole: String,
}

impl Query {
    pub fn new(text: &str) -> Query {
        let mut words: Vec<String> = Vec::new();
        let mut seen = ahash::AHashSet::new();
        for w in self::words(&text.replace("tool/", " ")) {
            if words.len() == MAX_QUERY_WORDS {
                break;
            }
            let s = stem(&w);
            if seen.insert(s.clone()) {
                words.push(s);
            }
        }
        let t = text.trim();
        Query {
            words,
            whole: t.strip_prefix("tool/").unwrap_or(t).to_lowercase(),
        }
    }
}

fn best_match(w: &Words, q: &str) -> f64 {
    match (kind(&w.name, q), kind(&w.doc, q)) {
        (Match::Exact, _) => NAME_EXACT,
        (_, Match::Exact) => DOC_EXACT,
        (Match::Prefix, _) => NAME_PREFIX,
        (_, Match::Prefix) => DOC_PREFIX,
        _ => 0.0,
    }
}

#[derive(PartialEq)]
enum Match {
    Exact,
    Prefix,
    None,
}

/// How `q` meets the sorted words: one of them, the beginning of one, or neither. The first
/// word not below `q` is `q` itself when present, else the least word `q` begins, if any.
fn kind(words: &[Box<str>], q: &str) -> Match {
    let at = words.partition_point(|w| &**w < q);
    match words.get(at) {
        Some(w) if &**w == q => Match::Exact,
        Some(w) if w.starts_with(q) && q.chars().count() >= MIN_PREFIX_CHARS => Match::Prefix,
        _ => Match::None,
    }
}

fn sorted_stems(text: &str) -> Vec<Box<str>> {
    let mut v: Vec<Box<str>> = words(text).iter().map(|w| stem(w).into()).collect();
    v.sort();
    v.dedup();
    v
}

/// The words of a text, lowercased: split at every character that is not a letter or a digit,
/// and where camelCase changes case (`getHTTPStatus` → `get`, `http`, `status`).
pub fn words(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            continue;
        }
        if c.is_uppercase() && !cur.is_empty() {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            // `getContact` splits before C; `HTTPServer` before S (the acronym's end)
            if prev.is_lowercase() || prev.is_numeric() || (prev.is_uppercase() && next_lower) {
                out.push(std::mem::take(&mut cur));
            }
        }
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A crude singular, so that `invoices` meets `invoice` and `categories` meets `category`.
/// Applied alike to queries and catalogue words, so it only has to be consistent.
pub fn stem(w: &str) -> String {
    let n = w.chars().count();
    if n > 4 && w.ends_with("ies") {
        return format!("{}y", &w[..w.len() - 3]);
    }
    for end in ["sses", "xes", "ches", "shes", "uses"] {
        if n > end.len() && w.ends_with(end) {
            return w[..w.len() - 2].to_string();
        }
    }
    if n > 3 && w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        return w[..w.len() - 1].to_string();
    }
    w.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, doc: &str) -> ToolDoc {
        ToolDoc {
            name: name.into(),
            doc: Some(doc.into()),
            ..ToolDoc::default()
        }
    }

    #[test]
    fn words_split_at_separators_and_camel_case() {
        assert_eq!(
            words("crm-get_contact/getHTTPStatus v2Orders"),
            ["crm", "get", "contact", "get", "http", "status", "v2", "orders"]
        );
        assert_eq!(words(""), Vec::<String>::new());
    }

    #[test]
    fn stems_meet_plurals() {
        for (w, s) in [
            ("invoices", "invoice"),
            ("categories", "category"),
            ("addresses", "address"),
            ("boxes", "box"),
            ("statuses", "status"),
            ("status", "status"),
            ("analysis", "analysis"),
            ("bus", "bus"),
            ("its", "its"),
        ] {
            assert_eq!(stem(w), s, "{w}");
        }
    }

    #[test]
    fn exact_names_before_docs_before_prefixes() {
        let c = Catalogue::new(vec![
            tool("ship-order", "Send a parcel."),
            tool("track", "Where the shipment is."),
            tool("label", "Print a ship label."),
        ]);
        let names: Vec<&str> = c
            .search(&Query::new("ship"), 10)
            .into_iter()
            .map(|i| c.tools()[i].name.as_str())
            .collect();
        assert_eq!(names, ["ship-order", "label", "track"]);
        assert_eq!(c.search(&Query::new("tool/track"), 1), [1]);
        assert!(c.search(&Query::new("  "), 10).is_empty());
    }

    #[test]
    fn doc_line_is_the_prompt_line() {
        let t = ToolDoc {
            name: "get".into(),
            params: vec!["id".into()],
            signature: Some("(id :int) -> :map".into()),
            doc: Some("One;\n record.".into()),
            effect: None,
        };
        assert_eq!(
            doc_line(&t),
            "(tool/get id)                   ; (id :int) -> :map - \"One record.\""
        );
        assert_eq!(doc_line(&ToolDoc::default()), "(tool/)");
    }
}
