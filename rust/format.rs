//! The Clojure printer with truncation (LANGUAGE.md §9) and type labels.
//!
//! The printer is generic over `Printable`, so the same code prints core values and, from the
//! Python boundary, Python objects in place. Its cost is proportional to what it prints: it asks
//! a collection for its length and its first `limit` items only.

use std::borrow::Cow;
use std::fmt::Write;

use unicode_segmentation::UnicodeSegmentation;

use crate::value::{is_keyword_text, TypeTag, Value};

/// What the printer needs to know about one node.
pub enum Shape<'a> {
    Nil,
    Bool(bool),
    Int(i64),
    /// An exact integer outside i64 (only from Python input), printed as digits.
    BigInt(String),
    Float(f64),
    Str(Cow<'a, str>),
    Keyword(Cow<'a, str>),
    Vector(usize),
    Set(usize),
    Map(usize),
    /// Printed verbatim (functions, regexes, vars, dates).
    Raw(Cow<'a, str>),
}

impl Shape<'_> {
    /// Prints an atom: anything but a string or a collection, which each printer shows in its
    /// own way (cut, elided). The one place atoms are spelled.
    pub fn write_atom(&self, out: &mut String) {
        match self {
            Shape::Nil => out.push_str("nil"),
            Shape::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Shape::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Shape::BigInt(s) => out.push_str(s),
            Shape::Float(f) => out.push_str(&float_repr(*f)),
            Shape::Keyword(k) => {
                out.push(':');
                out.push_str(k);
            }
            Shape::Raw(r) => out.push_str(r),
            // each printer matches these before atoms: nothing to write here
            Shape::Str(_) | Shape::Vector(_) | Shape::Set(_) | Shape::Map(_) => {}
        }
    }
}

pub trait Printable: Sized {
    fn shape(&self) -> Shape<'_>;
    /// The first `n` items of a vector or set.
    fn seq_items(&self, n: usize) -> Vec<Self>;
    /// The entries of a map, in order, produced lazily.
    fn map_entries(&self) -> Box<dyn Iterator<Item = (Self, Self)> + '_>;
}

#[derive(Clone, Copy, Debug)]
pub struct PrintOpts {
    pub limit: Option<usize>,
    pub printable_limit: Option<usize>,
    /// Omit map entries whose keyword/string key starts with `_` (on for what an LLM sees).
    pub hide_private: bool,
}

impl PrintOpts {
    pub const UNLIMITED: PrintOpts = PrintOpts {
        limit: None,
        printable_limit: None,
        hide_private: false,
    };
}

/// `to_clojure(value, limit, printable_limit) -> (text, truncated)`, hiding off.
pub fn to_clojure(
    v: &Value,
    limit: Option<usize>,
    printable_limit: Option<usize>,
) -> (String, bool) {
    print(
        &v,
        PrintOpts {
            limit,
            printable_limit,
            hide_private: false,
        },
    )
}

/// A sample of a value (definitions, data entries, feedback): this many items of a collection
/// and this many characters of a string, unless the caller asks otherwise (seed 001, TRN-002).
pub const SAMPLE_LIMIT: usize = 3;
pub const SAMPLE_PRINTABLE_LIMIT: usize = 80;
/// A tool call's arguments as the LLM sees them (seed 001, TRN-003).
pub const TOOL_ARGS_LIMIT: usize = 3;
pub const TOOL_ARGS_PRINTABLE_LIMIT: usize = 60;
/// A run's value previewed by default (`Result.preview()`).
pub const PREVIEW_LIMIT: usize = 10;
pub const PREVIEW_PRINTABLE_LIMIT: usize = 512;
/// A value mentioned inside a sentence (an error's "got ...", a repr): shorter than a sample.
pub const MENTION_LIMIT: usize = 3;
pub const MENTION_PRINTABLE_LIMIT: usize = 40;

/// Output bytes after which a print with a `limit` or `printable_limit` (a preview) stops: the
/// limits apply per collection, and a value built from shared parts can hold `limit`^depth items.
pub const PREVIEW_CAP: usize = 1024 * 1024;
/// Output bytes after which any print stops.
pub const PRINT_CAP: usize = 256 * 1024 * 1024;

/// `v` as mentioned inside a sentence (see [`MENTION_LIMIT`]).
pub fn mention(v: &Value) -> String {
    to_clojure(v, Some(MENTION_LIMIT), Some(MENTION_PRINTABLE_LIMIT)).0
}

pub fn print<P: Printable>(v: &P, opts: PrintOpts) -> (String, bool) {
    let cap = if opts.limit.is_some() || opts.printable_limit.is_some() {
        PREVIEW_CAP
    } else {
        PRINT_CAP
    };
    let mut p = Printer::new(String::new(), cap, opts);
    p.node(v, opts.printable_limit);
    if p.overflow {
        p.out.push_str(" ...");
        p.truncated = true;
    }
    (p.out, p.truncated)
}

/// How an unlimited print ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrintEnd {
    Complete,
    /// The text passed the byte cap.
    TooLong,
    /// The value is nested deeper than `MAX_PRINT_DEPTH`.
    TooDeep,
}

/// Printer form with no element limits, appended to `out`, stopping once `out` passes `cap`
/// bytes or the value nests deeper than `MAX_PRINT_DEPTH`: a value built from shared parts can
/// be far larger printed than in memory, so every caller that prints without limits bounds it.
pub fn print_capped(out: &mut String, v: &Value, hide_private: bool, cap: usize) -> PrintEnd {
    let opts = PrintOpts {
        limit: None,
        printable_limit: None,
        hide_private,
    };
    let mut p = Printer::new(std::mem::take(out), cap, opts);
    p.node(&v, None);
    *out = p.out;
    match (p.overflow, p.too_deep) {
        (_, true) => PrintEnd::TooDeep,
        (true, _) => PrintEnd::TooLong,
        _ => PrintEnd::Complete,
    }
}

/// Printer form with no limits (used by `str` for non-string values and by `println`).
pub fn print_full(v: &Value, hide_private: bool) -> String {
    print(
        &v,
        PrintOpts {
            limit: None,
            printable_limit: None,
            hide_private,
        },
    )
    .0
}

/// Nesting levels the printer descends before it prints `...` instead.
pub const MAX_PRINT_DEPTH: usize = 1_000;

struct Printer {
    out: String,
    truncated: bool,
    depth: usize,
    /// Stop once the output passes this many bytes (`overflow` then says so).
    cap: usize,
    overflow: bool,
    too_deep: bool,
    opts: PrintOpts,
}

fn is_hidden<P: Printable>(k: &P) -> bool {
    match k.shape() {
        Shape::Str(s) | Shape::Keyword(s) => s.starts_with('_'),
        _ => false,
    }
}

impl Printer {
    fn new(out: String, cap: usize, opts: PrintOpts) -> Self {
        Printer {
            out,
            truncated: false,
            depth: 0,
            cap,
            overflow: false,
            too_deep: false,
            opts,
        }
    }

    fn node<P: Printable>(&mut self, v: &P, str_budget: Option<usize>) {
        if self.overflow || self.out.len() > self.cap {
            self.overflow = true;
            return;
        }
        if self.depth >= MAX_PRINT_DEPTH {
            // a value this deep is unreadable anyway; printing it would cost memory per level
            self.out.push_str("...");
            self.truncated = true;
            self.too_deep = true;
            if self.cap != usize::MAX {
                self.overflow = true; // unlimited prints stop here; the caller reports it
            }
            return;
        }
        self.depth += 1;
        crate::guard::deeper(|| self.node_inner(v, str_budget));
        self.depth -= 1;
    }

    fn node_inner<P: Printable>(&mut self, v: &P, str_budget: Option<usize>) {
        match v.shape() {
            Shape::Str(s) => self.string(&s, str_budget),
            Shape::Vector(n) => self.seq(v, n, "[", "]", str_budget),
            Shape::Set(n) => self.seq(v, n, "#{", "}", str_budget),
            Shape::Map(n) => self.map(v, n, str_budget),
            atom => atom.write_atom(&mut self.out),
        }
    }

    fn string(&mut self, s: &str, budget: Option<usize>) {
        self.out.push('"');
        match budget {
            Some(p) => {
                let cut = grapheme_prefix_len(s, p);
                if cut < s.len() {
                    escape_into(&mut self.out, &s[..cut]);
                    self.out.push_str("...");
                    self.truncated = true;
                } else {
                    escape_into(&mut self.out, s);
                }
            }
            None => escape_into(&mut self.out, s),
        }
        self.out.push('"');
    }

    /// `plimit` is the string budget in force here: a map value's budget applies inside it.
    fn seq<P: Printable>(
        &mut self,
        v: &P,
        n: usize,
        open: &str,
        close: &str,
        plimit: Option<usize>,
    ) {
        let shown = self.opts.limit.map_or(n, |l| l.min(n));
        self.out.push_str(open);
        for (i, item) in crate::guard::charged(v.seq_items(shown).iter().enumerate()) {
            if self.overflow {
                return;
            }
            if i > 0 {
                self.out.push(' ');
            }
            self.node(item, plimit);
        }
        if shown < n {
            self.out.push_str(if shown > 0 { " ..." } else { "..." });
            self.out.push_str(close);
            let _ = write!(self.out, " ({n} items, showing first {shown})");
            self.truncated = true;
        } else {
            self.out.push_str(close);
        }
    }

    fn map<P: Printable>(&mut self, v: &P, n: usize, plimit: Option<usize>) {
        let mut max_entries = self.opts.limit.unwrap_or(usize::MAX);
        if let Some(p) = plimit {
            max_entries = max_entries.min((p / 30).max(1));
        }
        // Collect at most max_entries visible entries, plus one to know whether more exist.
        let mut shown = Vec::new();
        let mut more = false;
        for (k, val) in crate::guard::charged(v.map_entries()) {
            if self.opts.hide_private && is_hidden(&k) {
                self.truncated = true;
                continue;
            }
            if shown.len() == max_entries {
                more = true;
                break;
            }
            shown.push((k, val));
        }
        let _ = n;
        let budget = plimit.map(|p| {
            let count = shown.len().max(1);
            (p.saturating_sub(10 * count) / count).max(10)
        });
        self.out.push('{');
        for (i, (k, val)) in shown.iter().enumerate() {
            if self.overflow {
                return;
            }
            if i > 0 {
                self.out.push_str(", ");
            }
            self.node(k, plimit);
            self.out.push(' ');
            self.node(val, budget);
        }
        if more {
            self.out
                .push_str(if shown.is_empty() { "..." } else { ", ..." });
            self.truncated = true;
        }
        self.out.push('}');
    }
}

/// Byte length of the first `max` grapheme clusters of `s` (all of `s` when it is shorter).
pub fn grapheme_prefix_len(s: &str, max: usize) -> usize {
    if s.len() <= max {
        return s.len(); // fewer bytes than the budget means fewer graphemes too
    }
    match s.grapheme_indices(true).nth(max) {
        Some((i, _)) => i,
        None => s.len(),
    }
}

pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// Shortest round-trip digits and decimal exponent: value = 0.DIGITS × 10^exp.
fn float_digits(f: f64) -> (String, i32) {
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(f.abs());
    let (mant, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (s, 0),
    };
    let (int_part, frac_part) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    let mut digits: String = int_part.chars().chain(frac_part.chars()).collect();
    let mut point = int_part.len() as i32 + exp;
    let lead = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..lead);
    point -= lead as i32;
    let trimmed = digits.trim_end_matches('0').len();
    digits.truncate(trimmed);
    if digits.is_empty() {
        return ("0".into(), 1);
    }
    (digits, point)
}

fn plain_decimal(digits: &str, point: i32) -> String {
    let mut s = String::new();
    if point <= 0 {
        s.push_str("0.");
        for _ in 0..(-point) {
            s.push('0');
        }
        s.push_str(digits);
    } else if (point as usize) >= digits.len() {
        s.push_str(digits);
        for _ in 0..(point as usize - digits.len()) {
            s.push('0');
        }
        s.push_str(".0");
    } else {
        s.push_str(&digits[..point as usize]);
        s.push('.');
        s.push_str(&digits[point as usize..]);
    }
    s
}

fn sci(digits: &str, point: i32, e: &str) -> String {
    let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
    format!("{}.{}{}{}", &digits[..1], rest, e, point - 1)
}

/// How a float is spelt: the printer's (`##NaN`, `1.0E7`) or `str`'s (`NaN`, `1.0e16`).
struct FloatStyle {
    nan: &'static str,
    inf: &'static str,
    neg_inf: &'static str,
    /// Magnitudes written as plain decimals; others in scientific notation.
    plain: std::ops::Range<f64>,
    exponent: &'static str,
}

/// Printer form of a float (§9.1): Clojure's `Double.toString` style.
const PRINTED: FloatStyle = FloatStyle {
    nan: "##NaN",
    inf: "##Inf",
    neg_inf: "##-Inf",
    plain: 1e-3..1e7,
    exponent: "E",
};

/// Display form of a float for `str`/`join` (§7.9).
const DISPLAYED: FloatStyle = FloatStyle {
    nan: "NaN",
    inf: "Infinity",
    neg_inf: "-Infinity",
    plain: 1e-4..1e16,
    exponent: "e",
};

fn float_text(f: f64, style: &FloatStyle) -> String {
    if f.is_nan() {
        return style.nan.into();
    }
    if f.is_infinite() {
        return if f > 0.0 { style.inf } else { style.neg_inf }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    let (digits, point) = float_digits(f);
    let body = if style.plain.contains(&f.abs()) {
        plain_decimal(&digits, point)
    } else {
        sci(&digits, point, style.exponent)
    };
    format!("{sign}{body}")
}

/// Printer form of a float (§9.1): Clojure's `Double.toString` style.
pub fn float_repr(f: f64) -> String {
    float_text(f, &PRINTED)
}

/// Display form of a float for `str`/`join` (§7.9).
pub fn float_display(f: f64) -> String {
    float_text(f, &DISPLAYED)
}

/// `#fn[a b]` for user functions (destructured parameters as `_`), `#fn[...]` otherwise.
/// The texts of a value that need its printed form: defined here, where printing is, so the
/// value model (`crate::value`) does not depend on the printer.
impl Value {
    /// The type label of the seeds' vocabulary (`list[3]`, `map[0]`, `string`, `#fn[x y]`).
    pub fn type_label(&self) -> String {
        match self {
            f @ crate::fn_pat!() => fn_label(f),
            other => TypeTag::of(other).label(),
        }
    }

    /// `string "12"`, `vector [1 2 3 ...]`, `nil`: the kind plus a short printed form.
    pub fn describe(&self) -> String {
        match self {
            Value::Nil => "nil".to_string(),
            _ => format!("{} {}", self.kind_name(), mention(self)),
        }
    }
}

impl std::fmt::Debug for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&to_clojure(self, Some(20), Some(200)).0)
    }
}

pub fn fn_label(f: &Value) -> String {
    match f {
        Value::Closure(c) => format!("#fn[{}]", c.code().params_text()),
        _ => "#fn[...]".into(),
    }
}

fn fn_print(f: &Value) -> String {
    match f {
        Value::Closure(_) => fn_label(f),
        Value::Builtin(_) => "#<builtin>".into(),
        _ => "#<fn>".into(),
    }
}

/// Days since the epoch to (year, month, day), proleptic Gregorian.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn date_text(days: i32) -> String {
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

pub fn datetime_text(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    if milli == 0 {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
    } else {
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z")
    }
}

impl Printable for &Value {
    fn shape(&self) -> Shape<'_> {
        match self {
            Value::Nil => Shape::Nil,
            Value::Bool(b) => Shape::Bool(*b),
            Value::Int(i) => Shape::Int(*i),
            Value::Float(f) => Shape::Float(*f),
            Value::Str(s) => Shape::Str(Cow::Borrowed(s)),
            Value::Keyword(k) => Shape::Keyword(Cow::Borrowed(k)),
            Value::Vector(v) => Shape::Vector(v.len()),
            Value::Set(s) => Shape::Set(s.len()),
            Value::Map(m) => Shape::Map(m.len()),
            f @ crate::fn_pat!() => Shape::Raw(Cow::Owned(fn_print(f))),
            Value::Regex(r) => {
                let mut s = String::from("#\"");
                s.push_str(&r.source);
                s.push('"');
                Shape::Raw(Cow::Owned(s))
            }
            Value::Var(n) => Shape::Raw(Cow::Owned(format!("#'{n}"))),
            Value::Date(d) => Shape::Raw(Cow::Owned(format!("\"{}\"", date_text(*d)))),
            Value::DateTime(ms) => Shape::Raw(Cow::Owned(format!("\"{}\"", datetime_text(*ms)))),
        }
    }
    fn seq_items(&self, n: usize) -> Vec<Self> {
        match self {
            Value::Vector(v) => v.iter().take(n).collect(),
            Value::Set(s) => s.iter().take(n).collect(),
            _ => Vec::new(),
        }
    }
    fn map_entries(&self) -> Box<dyn Iterator<Item = (Self, Self)> + '_> {
        match self {
            Value::Map(m) => Box::new(m.iter()),
            _ => Box::new(std::iter::empty()),
        }
    }
}

/// Keys from outside (Python dict keys) print as keywords when they are valid keyword text.
pub fn key_shape(s: &str) -> Shape<'_> {
    if is_keyword_text(s) {
        Shape::Keyword(Cow::Borrowed(s))
    } else {
        Shape::Str(Cow::Borrowed(s))
    }
}
