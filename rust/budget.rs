//! Printing within an exact token budget: the largest breadth-first view of a value whose text
//! counts at most `max_tokens` tokens in an encoding, with elision markers that say how much was
//! left out and which expression gets it.
//!
//! A view is a round `r`: every sequence shows its first `r` items, every map its first `4r`
//! entries (records want their fields), every string its first `32r` characters (8 at least;
//! map keys 64), and collections
//! deeper than `2r` levels are collapsed. Rounds grow until the next one no longer fits (found by
//! doubling, then halving); then the top level alone widens as far as it fits, so a list of
//! records shows as many whole records as the budget holds. Every candidate is printed with a
//! byte cap that no text within the budget can pass, and counted exactly, so the cost is
//! O(what is shown) times the number of probes (about twice log₂ of the round).
//!
//! Markers have one form, `...N more[ key(s)| char(s)][ EXPR]`, written where the elided part
//! would be: `[1 2 ...9,998 more (drop 2 *1)]`, `{:a 1, ...12 more keys (drop 1 (seq *1))}`,
//! `"abc"...1,997 more chars (subs *1 3)`. `EXPR` is an ordinary program that gets the rest
//! from the root expression the caller names (`*1`, `data/orders`); without one, or below a set
//! or a key that cannot be written, it is left out. Removing every marker leaves text that
//! reads back as PTC-Lisp.

use unicode_segmentation::UnicodeSegmentation;

use crate::format::{escape_into, grapheme_prefix_len, Printable, Shape};

/// What to fit and how.
#[derive(Clone, Copy, Debug)]
pub struct Budget<'a> {
    pub max_tokens: usize,
    pub encoding: &'a str,
    /// Omit map entries whose keyword/string key starts with `_`.
    pub hide_private: bool,
    /// The expression the value is reachable by (`*1`), for the markers' hints.
    pub root: Option<&'a str>,
}

/// A value printed within a budget.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fitted {
    pub text: String,
    /// Something was left out (a marker was written, or private entries hidden).
    pub truncated: bool,
    /// The text's exact token count in the budget's encoding.
    pub tokens: usize,
}

/// `v` as `opts` prints it when that text is within `budget`, else [`fit`]: the limits a caller
/// set stay in force, the budget is a ceiling over them. `None` for an unknown encoding.
pub fn print_within<P: Printable>(
    v: &P,
    opts: crate::format::PrintOpts,
    budget: &Budget<'_>,
) -> Option<(String, bool)> {
    if !crate::tokens::ENCODINGS.contains(&budget.encoding) {
        return None;
    }
    if opts.limit.is_some() || opts.printable_limit.is_some() {
        let (text, cut) = crate::format::print(v, opts);
        if crate::tokens::count_tokens(&text, budget.encoding)? <= budget.max_tokens {
            return Some((text, cut));
        }
    }
    fit(v, budget).map(|f| (f.text, f.truncated))
}

/// Rounds are bounded so that doubling ends even for values that never stop growing.
const MAX_ROUND: usize = 1 << 40;
/// Nesting levels shown at most (deeper levels are collapsed, as the plain printer does).
const MAX_DEPTH: usize = crate::format::MAX_PRINT_DEPTH;
/// A map key longer than this is not written into a marker's path.
const MAX_PATH_KEY: usize = 64;

/// `v` printed within `budget`, or `None` for an encoding without exact counts.
pub fn fit<P: Printable>(v: &P, budget: &Budget<'_>) -> Option<Fitted> {
    let enc = tiktoken::get_encoding(budget.encoding)
        .filter(|_| crate::tokens::ENCODINGS.contains(&budget.encoding))?;
    let max = budget.max_tokens;
    // no text of `max` tokens is longer than this, so a print that passes it cannot fit
    let cap = max.saturating_mul(MAX_TOKEN_BYTES).saturating_add(8);
    let fits = |view: View, root: Option<&str>| -> Option<Fitted> {
        let (text, marked, complete) = render(v, view, budget.hide_private, root, cap);
        if !complete {
            return None;
        }
        let tokens = enc.count(&text);
        (tokens <= max).then_some(Fitted {
            text,
            truncated: marked,
            tokens,
        })
    };
    if items_shown(v, budget.hide_private) <= max {
        if let Some(whole) = fits(View::WHOLE, None) {
            return Some(whole);
        }
    }
    let Some(mut best) = fits(View::round(0), budget.root) else {
        return Some(smallest(v, budget, enc, cap));
    };
    // largest round that fits: double, then halve the gap
    let (mut lo, mut hi) = (0usize, None);
    let mut r = 1;
    while r <= MAX_ROUND {
        match fits(View::round(r), budget.root) {
            Some(f) => {
                best = f;
                lo = r;
                r *= 2;
            }
            None => {
                hi = Some(r);
                break;
            }
        }
    }
    let Some(mut hi) = hi else { return Some(best) };
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match fits(View::round(mid), budget.root) {
            Some(f) => {
                best = f;
                lo = mid;
            }
            None => hi = mid,
        }
    }
    // then the top level alone, as wide as still fits: doubling, then halving the gap (a
    // probe past the budget stops at the cap, so each costs about what the budget shows)
    let base = View::round(lo);
    let (mut lo, len) = (root_width(v, base), root_len(v, max));
    let mut hi = None;
    while lo < len {
        let w = if lo == 0 { 1 } else { (lo * 2).min(len) };
        match fits(base.widened(w), budget.root) {
            Some(f) => {
                best = f;
                lo = w;
            }
            None => {
                hi = Some(w);
                break;
            }
        }
    }
    if let Some(mut hi) = hi {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            match fits(base.widened(mid), budget.root) {
                Some(f) => {
                    best = f;
                    lo = mid;
                }
                None => hi = mid,
            }
        }
    }
    Some(best)
}

/// When not even the collapsed value fits: the collapsed value without its hint, then a bare
/// `...`, then nothing.
#[cold]
fn smallest<P: Printable>(
    v: &P,
    budget: &Budget<'_>,
    enc: &tiktoken::CoreBpe,
    cap: usize,
) -> Fitted {
    let (text, _, complete) = render(v, View::round(0), budget.hide_private, None, cap);
    if complete {
        let tokens = enc.count(&text);
        if tokens <= budget.max_tokens {
            return Fitted {
                text,
                truncated: true,
                tokens,
            };
        }
    }
    let dots = enc.count("...");
    if dots <= budget.max_tokens {
        return Fitted {
            text: "...".into(),
            truncated: true,
            tokens: dots,
        };
    }
    Fitted {
        text: String::new(),
        truncated: true,
        tokens: 0,
    }
}

/// The most bytes one token stands for, in both encodings (a unit test checks it against the
/// vocabularies): a text longer than `128 × max` bytes cannot be within `max` tokens.
pub const MAX_TOKEN_BYTES: usize = 128;

/// The longest token of `encoding`, in bytes, from its vocabulary (slow: for the test).
pub fn longest_token(encoding: &str) -> Option<usize> {
    let enc = tiktoken::get_encoding(encoding)?;
    let ids = enc.vocab_size() + enc.num_special_tokens() + 1024;
    (0..ids as u32).map(|id| enc.decode(&[id]).len()).max()
}

/// The items (or entries) the top level shows when printed whole, at least one token each: the
/// tokenizers' pieces never hold a space after other characters, and items are separated by
/// spaces and start and end with something else. (Unknown with private entries hidden: 0.)
fn items_shown<P: Printable>(v: &P, hide_private: bool) -> usize {
    match v.shape() {
        Shape::Vector(n) | Shape::Set(n) => n,
        Shape::Map(n) if !hide_private => n,
        _ => 0,
    }
}

/// How much of a value a print shows.
#[derive(Clone, Copy, Debug)]
struct View {
    /// Items shown of each sequence or set.
    items: usize,
    /// Entries shown of each map.
    entries: usize,
    /// Characters (grapheme clusters) shown of each string.
    chars: usize,
    /// Collections at this depth or deeper are collapsed (the root is depth 0).
    depth: usize,
    /// Items, entries or characters shown of the top level, when wider than the round's.
    root: Option<usize>,
}

impl View {
    const WHOLE: View = View {
        items: usize::MAX,
        entries: usize::MAX,
        chars: usize::MAX,
        depth: usize::MAX,
        root: None,
    };

    fn round(r: usize) -> View {
        View {
            items: r,
            entries: r.saturating_mul(4),
            chars: r.saturating_mul(32).max(8),
            depth: r.saturating_mul(2),
            root: None,
        }
    }

    fn widened(self, w: usize) -> View {
        View {
            root: Some(w),
            ..self
        }
    }
}

/// What the top level shows in `view`.
fn root_width<P: Printable>(v: &P, view: View) -> usize {
    match v.shape() {
        Shape::Vector(_) | Shape::Set(_) if view.depth > 0 => view.items,
        Shape::Map(_) if view.depth > 0 => view.entries,
        Shape::Str(_) => view.chars,
        _ => 0,
    }
}

/// How many items, entries or characters the top level could show within `max` tokens: its
/// items, a token each at least (see [`items_shown`]); a string's bytes, 128 to a token at
/// most.
fn root_len<P: Printable>(v: &P, max: usize) -> usize {
    match v.shape() {
        Shape::Vector(n) | Shape::Set(n) | Shape::Map(n) => n.min(max),
        Shape::Str(s) => s.len().min(max.saturating_mul(MAX_TOKEN_BYTES)),
        _ => 0,
    }
}

/// Prints `v` as `view` shows it: `(text, marked, complete)`; not complete once the text passes
/// `cap` bytes.
fn render<P: Printable>(
    v: &P,
    view: View,
    hide_private: bool,
    root: Option<&str>,
    cap: usize,
) -> (String, bool, bool) {
    let mut r = Render {
        out: String::new(),
        view,
        hide_private,
        root,
        cap,
        overflow: false,
        marked: false,
        path: Vec::new(),
    };
    r.node(v, 0);
    let complete = !r.overflow && r.out.len() <= cap;
    (r.out, r.marked, complete)
}

struct Render<'a> {
    out: String,
    view: View,
    hide_private: bool,
    root: Option<&'a str>,
    cap: usize,
    overflow: bool,
    marked: bool,
    /// Keys from the root to the node being printed, as written in a path (`None`: cannot be).
    path: Vec<Option<String>>,
}

impl Render<'_> {
    fn node<P: Printable>(&mut self, v: &P, depth: usize) {
        if self.overflow || self.out.len() > self.cap {
            self.overflow = true;
            return;
        }
        crate::guard::deeper(|| self.node_inner(v, depth));
    }

    fn node_inner<P: Printable>(&mut self, v: &P, depth: usize) {
        match v.shape() {
            Shape::Str(s) => self.string(&s, depth),
            Shape::Vector(n) => self.seq(v, n, depth, "[", "]", false),
            Shape::Set(n) => self.seq(v, n, depth, "#{", "}", true),
            Shape::Map(n) => self.map(v, n, depth),
            atom => atom.write_atom(&mut self.out),
        }
    }

    /// Items, entries or characters a node at `depth` shows (`per` is the round's number).
    fn shows(&self, depth: usize, per: usize) -> usize {
        match self.view.root {
            Some(w) if depth == 0 => w,
            _ if depth >= self.view.depth || depth >= MAX_DEPTH => 0,
            _ => per,
        }
    }

    fn string(&mut self, s: &str, depth: usize) {
        let chars = match self.view.root {
            Some(w) if depth == 0 => w,
            _ => self.view.chars,
        };
        let cut = grapheme_prefix_len(s, chars);
        if cut > self.cap.saturating_sub(self.out.len()) {
            self.overflow = true; // the shown part alone passes the cap
            return;
        }
        self.out.push('"');
        escape_into(&mut self.out, &s[..cut]);
        self.out.push('"');
        if cut < s.len() {
            let total = grapheme_count(s);
            self.marker(total - chars, " char", |at| format!("(subs {at} {chars})"));
        }
    }

    fn seq<P: Printable>(
        &mut self,
        v: &P,
        n: usize,
        depth: usize,
        open: &str,
        close: &str,
        set: bool,
    ) {
        let shown = self.shows(depth, self.view.items).min(n);
        // each item takes two bytes at least (itself and a space): no more can print by the cap
        let room = self.cap.saturating_sub(self.out.len()) / 2 + 1;
        self.out.push_str(open);
        for (i, item) in crate::guard::charged(v.seq_items(shown.min(room)).iter().enumerate()) {
            if self.overflow {
                return;
            }
            if i > 0 {
                self.out.push(' ');
            }
            self.path.push(if set { None } else { Some(i.to_string()) });
            self.node(item, depth + 1);
            self.path.pop();
        }
        if shown > room {
            self.overflow = true;
            return;
        }
        if shown < n {
            if shown > 0 {
                self.out.push(' ');
            }
            self.marker(n - shown, "", |at| match (shown, set) {
                (0, _) => at.to_string(),
                (k, false) => format!("(drop {k} {at})"),
                (k, true) => format!("(drop {k} (seq {at}))"),
            });
        }
        self.out.push_str(close);
    }

    fn map<P: Printable>(&mut self, v: &P, n: usize, depth: usize) {
        let limit = self.shows(depth, self.view.entries);
        let mut shown = Vec::new();
        let mut first_unshown = None;
        let mut rest = 0usize;
        for (raw, (k, val)) in crate::guard::charged(v.map_entries().enumerate()) {
            if self.hide_private && is_hidden(&k) {
                self.marked = true;
                continue;
            }
            if shown.len() == limit {
                first_unshown.get_or_insert(raw);
                if !self.hide_private {
                    rest = n.saturating_sub(raw); // every later entry is visible
                    break;
                }
                rest += 1;
                continue;
            }
            shown.push((k, val));
        }
        self.out.push('{');
        for (i, (k, val)) in shown.iter().enumerate() {
            if self.overflow {
                return;
            }
            if i > 0 {
                self.out.push_str(", ");
            }
            // keys are names: shown whole up to a path key's length whatever the round
            let chars = self.view.chars;
            self.view.chars = chars.max(MAX_PATH_KEY);
            self.path.push(None); // a key's own markers have no path
            self.node(k, depth + 1);
            self.path.pop();
            self.view.chars = chars;
            self.out.push(' ');
            self.path.push(path_key(k));
            self.node(val, depth + 1);
            self.path.pop();
        }
        if let Some(k) = first_unshown.filter(|_| rest > 0) {
            if !shown.is_empty() {
                self.out.push_str(", ");
            }
            self.marker(rest, " key", |at| match k {
                0 => at.to_string(),
                k => format!("(drop {k} (seq {at}))"),
            });
        }
        self.out.push('}');
    }

    /// Writes `...N more{what}` (plural past one) and, when the node has a path, ` EXPR`.
    fn marker(&mut self, n: usize, what: &str, expr: impl FnOnce(&str) -> String) {
        self.marked = true;
        self.out.push_str("...");
        grouped(&mut self.out, n);
        self.out.push_str(" more");
        self.out.push_str(what);
        if n > 1 && !what.is_empty() {
            self.out.push('s');
        }
        if let Some(at) = self.at() {
            self.out.push(' ');
            self.out.push_str(&expr(&at));
        }
    }

    /// The expression that reaches the node being printed, if it can be written.
    fn at(&self) -> Option<String> {
        let root = self.root?;
        if self.path.is_empty() {
            return Some(root.to_string());
        }
        let mut keys = String::new();
        for (i, k) in self.path.iter().enumerate() {
            if i > 0 {
                keys.push(' ');
            }
            keys.push_str(k.as_deref()?);
        }
        Some(format!("(get-in {root} [{keys}])"))
    }
}

fn is_hidden<P: Printable>(k: &P) -> bool {
    matches!(k.shape(), Shape::Str(s) | Shape::Keyword(s) if s.starts_with('_'))
}

/// A map key as written in a `get-in` path, if it is a short scalar.
fn path_key<P: Printable>(k: &P) -> Option<String> {
    match k.shape() {
        Shape::Keyword(s) if s.len() <= MAX_PATH_KEY => Some(format!(":{s}")),
        Shape::Str(s) if s.len() <= MAX_PATH_KEY => {
            let mut out = String::from("\"");
            escape_into(&mut out, &s);
            out.push('"');
            Some(out)
        }
        Shape::Int(i) => Some(i.to_string()),
        Shape::Bool(b) => Some(b.to_string()),
        Shape::Nil => Some("nil".into()),
        _ => None,
    }
}

/// Grapheme clusters in `s` (the unit of `count` and `subs`), fast for plain ASCII.
fn grapheme_count(s: &str) -> usize {
    if s.is_ascii() && !s.as_bytes().contains(&b'\r') {
        return s.len(); // one cluster per byte: only "\r\n" joins two ASCII bytes
    }
    s.graphemes(true).count()
}

/// `n` with thousands separators (`9,741`).
fn grouped(out: &mut String, n: usize) {
    let digits = n.to_string();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_thousands() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (9741, "9,741"),
            (1_000_000, "1,000,000"),
        ] {
            let mut out = String::new();
            grouped(&mut out, n);
            assert_eq!(out, text);
        }
    }

    #[test]
    fn no_token_is_longer_than_the_bound() {
        for enc in crate::tokens::ENCODINGS {
            assert_eq!(longest_token(enc), Some(MAX_TOKEN_BYTES), "{enc}");
        }
    }

    #[test]
    fn counts_clusters() {
        assert_eq!(grapheme_count("abc"), 3);
        assert_eq!(grapheme_count("a\r\nb"), 3);
        assert_eq!(grapheme_count("👍🏽x"), 2);
    }
}
