//! The per-target logic of the fuzzers, shared by the cargo-fuzz targets (fuzz/fuzz_targets/)
//! and by the regression test of the main crate (rust/tests/fuzz_regressions.rs includes this
//! very file with `#[path]`), so a reproducer replays exactly as it was found.
//!
//! Why one file over 600 lines: `#[path]` inclusion takes a single file, and a replayed
//! reproducer must run the very code that found it.
//!
//! It uses only `std` and the stable core API: `reader::read_with_limit`, `session::run_source`,
//! `eval::NoTools`, `limits::Limits`, `format::to_clojure`, `json::from_json`.
//!
//! A finding is a panic of the harness: the core panicked outside its own `catch_unwind`, or a
//! run ended in `internal_error` (a caught panic), or a run took far longer than its limits
//! allow (`wall_budget`). Native stack overflows and aborts crash the process by themselves;
//! hangs are caught by libFuzzer's `-timeout` (and by the regression test's child timeout);
//! memory blow-ups by libFuzzer's `-rss_limit_mb` (and the child's address-space cap).
//!
//! Inputs are bytes. For `eval`, `reader` and `json` an input whose first byte is printable
//! program/JSON text (see `is_raw`) is used as is, so seeds and reproducers can be written by
//! hand; any other input drives a structure-aware generator through `Src`, a tiny byte reader
//! in the spirit of `arbitrary::Unstructured` (an exhausted input reads as zeros, and choice 0
//! is always the smallest option, so generation always terminates).

#![allow(dead_code)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use _core::data::json::from_json;
use _core::lang::eval::NoTools;
use _core::lang::reader::read_with_limit;
use _core::print::format::to_clojure;
use _core::run::limits::Limits;
use _core::run::session::{run_source, SessionState};
use _core::Value;

// ---------------------------------------------------------------------------------------------
// Limits and the finding checks
// ---------------------------------------------------------------------------------------------

/// Small limits so every input runs fast; a run that overshoots them by far is a finding.
pub fn fuzz_limits() -> Limits {
    Limits {
        fuel: 2_000_000,
        timeout_ms: 200,
        max_collection_size: 1_000_000,
        max_string_size: 4 * 1024 * 1024,
        max_output: 100_000,
        max_memory: 64 * 1024 * 1024,
        ..Limits::default()
    }
}

/// Wall time one run (read + analyze + evaluate + printing and dropping its result) may take
/// before it counts as a hang: 5 × `timeout_ms`, at least one second (the machine is shared).
pub fn wall_budget(limits: &Limits) -> Duration {
    let ms = limits.timeout_ms.saturating_mul(5).max(1_000);
    let factor: u64 = std::env::var("PTC_FUZZ_SLOW_FACTOR")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    Duration::from_millis(ms.saturating_mul(factor.max(1)))
}

/// At most this much of a program is quoted in a finding's message.
const QUOTE: usize = 1_500;

pub fn excerpt(src: &str) -> String {
    if src.len() <= QUOTE {
        return src.to_string();
    }
    let mut cut = QUOTE;
    while !src.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} bytes in all)", &src[..cut], src.len())
}

/// With `PTC_FUZZ_WATCHDOG=1` (the regression test sets it), an input still running at 3× its
/// budget (+2 s) aborts the process, so a hang fails fast instead of at the test's timeout.
/// Under libFuzzer it stays off: `-timeout` reports hangs as timeouts there.
pub struct Watchdog(Option<std::sync::mpsc::Sender<()>>);

pub fn watchdog(what: &'static str, budget: Duration) -> Watchdog {
    if !matches!(std::env::var("PTC_FUZZ_WATCHDOG").as_deref(), Ok("1")) {
        return Watchdog(None);
    }
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let limit = budget * 3 + Duration::from_secs(2);
    std::thread::spawn(move || {
        if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(limit) {
            eprintln!("FINDING hang: {what} still running after {limit:?} (budget {budget:?})");
            std::process::abort();
        }
    });
    Watchdog(Some(tx))
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

fn check_time(what: &str, started: Instant, budget: Duration, src: &str) {
    let took = started.elapsed();
    if took > budget {
        panic!(
            "FINDING slow: {what} took {took:?}, budget {budget:?}\n--- input ---\n{}",
            excerpt(src)
        );
    }
}

/// Runs one program under `limits` with `data`, prints its value the way a host shows it to an
/// LLM, drops everything, and panics on an internal error or on a run far over its time limit.
pub fn check_program(src: &str, data: Value, limits: &Limits) {
    let budget = wall_budget(limits);
    let _watch = watchdog("run", budget);
    let started = Instant::now();
    let state = SessionState::new(data);
    let (result, ns) = run_source(src, &state, &NoTools, limits);
    if let Some(e) = &result.error {
        if e.kind.as_str() == "internal_error" {
            panic!(
                "FINDING internal_error: {}\n--- program ---\n{}",
                e.message,
                excerpt(src)
            );
        }
    }
    // What a host does with a result: turn feedback (limit 10, printable 512) ...
    let (text, _) = to_clojure(&result.value, Some(10), Some(512));
    std::hint::black_box(text);
    // ... and its prints; then everything is dropped (a deep value must not overflow on drop).
    std::hint::black_box(result.prints.len());
    drop(result);
    drop(ns);
    drop(state);
    check_time("run", started, budget, src);
}

// ---------------------------------------------------------------------------------------------
// Src: bytes -> choices
// ---------------------------------------------------------------------------------------------

pub struct Src<'a> {
    data: &'a [u8],
    pos: usize,
}

/// Sizes a hostile program likes: small counts, powers of two, and the big ones that find
/// stack overflows (deep values, long chains) and blow-ups.
const SIZES: &[u64] = &[
    0,
    1,
    2,
    3,
    10,
    32,
    60,
    64,
    100,
    255,
    500,
    513,
    1_000,
    2_000,
    4_096,
    10_000,
    50_000,
    100_000,
    200_000,
    1_000_000,
    10_000_000,
    1 << 32,
];

impl<'a> Src<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Src { data, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            self.byte();
            return 0;
        }
        if n <= 256 {
            return self.byte() as usize % n;
        }
        let v = (self.byte() as usize) << 8 | self.byte() as usize;
        v % n
    }

    pub fn pick<'b, T>(&mut self, xs: &'b [T]) -> &'b T {
        &xs[self.below(xs.len())]
    }

    pub fn pick_str(&mut self, xs: &[&'static str]) -> &'static str {
        xs[self.below(xs.len())]
    }

    /// True with probability about `pct`%; false once the input is exhausted.
    pub fn chance(&mut self, pct: u32) -> bool {
        if self.is_empty() {
            return false;
        }
        (self.byte() as u32) * 100 < pct * 256
    }

    /// A count: mostly small, often one of `SIZES`.
    pub fn size(&mut self) -> u64 {
        let b = self.byte();
        if b < 96 {
            (b % 16) as u64
        } else {
            SIZES[b as usize % SIZES.len()]
        }
    }

    /// `size()` capped to `max`.
    pub fn size_max(&mut self, max: u64) -> u64 {
        self.size().min(max)
    }

    pub fn rest(&mut self) -> &'a [u8] {
        let r = &self.data[self.pos.min(self.data.len())..];
        self.pos = self.data.len();
        r
    }
}

// ---------------------------------------------------------------------------------------------
// eval: programs
// ---------------------------------------------------------------------------------------------

/// An input starting like program or JSON text is used raw (hand-written seeds and
/// reproducers); anything else drives the generator.
pub fn is_raw(data: &[u8]) -> bool {
    matches!(
        data.first(),
        Some(b'(' | b'[' | b'{' | b'#' | b';' | b' ' | b'\n' | b'\t' | b'"' | b':')
    )
}

/// The program, data and limits an `eval` input stands for.
pub fn program_from_bytes(data: &[u8]) -> (String, Value, Limits) {
    if is_raw(data) {
        let src = String::from_utf8_lossy(data).into_owned();
        let limits = limits_header(&src);
        return (src, data_value(""), limits);
    }
    let mut s = Src::new(data.get(1..).unwrap_or(&[]));
    let limits = gen_limits(&mut s);
    let json = if s.chance(25) {
        gen_json(&mut s, 2)
    } else {
        String::new()
    };
    let program = gen_program(&mut s);
    let data = data_value(&json);
    (program, data, limits)
}

/// Limits of a raw program: `fuzz_limits()`, changed by a first line such as
/// `;; limits: timeout_ms=5000 fuel=100000000` (so a hand-written reproducer can make the
/// deterministic limits bind instead of the clock, and replay the same on a slow debug build).
pub fn limits_header(src: &str) -> Limits {
    let mut l = fuzz_limits();
    let Some(rest) = src
        .lines()
        .next()
        .and_then(|line| line.strip_prefix(";; limits:"))
    else {
        return l;
    };
    for pair in rest.split_whitespace() {
        let Some((k, v)) = pair.split_once('=') else {
            continue;
        };
        let Ok(v) = v.replace('_', "").parse::<u64>() else {
            continue;
        };
        let n = usize::try_from(v).unwrap_or(usize::MAX);
        match k {
            "fuel" => l.fuel = v,
            "timeout_ms" => l.timeout_ms = v,
            "max_depth" => l.max_depth = n,
            "max_collection_size" => l.max_collection_size = n,
            "max_string_size" => l.max_string_size = n,
            "max_output" => l.max_output = n,
            "max_memory" => l.max_memory = n,
            "loop_limit" => l.loop_limit = v,
            "max_nesting" => l.max_nesting = n,
            "max_symbols" => l.max_symbols = n,
            _ => {}
        }
    }
    l
}

/// The `data` map of a generated program: `{"x": <json>, "s": <odd string>, ...}`.
fn data_value(json: &str) -> Value {
    let x = if json.is_empty() { "null" } else { json };
    let text = format!(
        "{{\"x\": {x}, \"s\": \"a\\u0000b\\u001f\\ud83d\\ude00e\\u0301\", \"_secret\": [1, 2], \
         \"n\": 9223372036854775807, \"m\": {{\"a b\": 1, \"\": 2, \"k\": {{\"k\": [3]}}}}}}"
    );
    from_json(&text).unwrap_or_else(|_| Value::empty_map())
}

pub fn gen_limits(s: &mut Src) -> Limits {
    let mut l = fuzz_limits();
    match s.below(10) {
        0..=5 => {}
        6 => {
            // more work allowed: longer chains and bigger values get built
            l.fuel = 20_000_000;
            l.timeout_ms = 500;
        }
        7 => {
            // tiny limits: every limit check fires somewhere
            l.fuel = *s.pick(&[0, 1, 100, 10_000]);
            l.loop_limit = *s.pick(&[0, 1, 1_000]);
            l.max_collection_size = *s.pick(&[0, 1, 1_000]);
            l.max_string_size = *s.pick(&[0, 1, 1_000]);
            l.max_output = *s.pick(&[0, 1, 100]);
            l.max_memory = *s.pick(&[0, 4_096, 1 << 20]);
            l.max_depth = *s.pick(&[0, 1, 10]);
            l.timeout_ms = *s.pick(&[0, 1, 20]);
        }
        8 => {
            // a host that allows deep recursion: the native stack must grow on demand
            l.max_depth = *s.pick(&[10_000, 100_000, 1_000_000]);
            l.fuel = 20_000_000;
            l.timeout_ms = 500;
        }
        _ => {
            // a host that allows deeply nested program text and many symbols
            l.max_nesting = *s.pick(&[0, 1, 2_048, 20_000]);
            l.max_symbols = *s.pick(&[0, 1, 100_000]);
        }
    }
    l
}

const INTS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "7",
    "-7",
    "100",
    "65536",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775807",
    "4611686018427387904",
    "1000000000000",
];
const FLOATS: &[&str] = &[
    "0.0",
    "-0.0",
    "1.5",
    "0.1",
    "1e308",
    "-1e308",
    "5e-324",
    "1e16",
    "1e-7",
    "9.223372036854776E18",
    "Double/NaN",
    "Double/POSITIVE_INFINITY",
    "Double/NEGATIVE_INFINITY",
];
const STRS: &[&str] = &[
    "\"\"",
    "\"a\"",
    "\"ab\"",
    "\"a,b,,c,\"",
    "\"é\"",
    "\"e\u{301}\u{301}\u{301}\"",
    "\"🇸🇪👨‍👩‍👧‍👦\"",
    "\"\\n\\t\\r\"",
    "\"\\\\\\\"\"",
    "\"ß\"",
    "\"İı\"",
    "\"ﬃ\"",
    "\"[\"",
    "\"  a b  \"",
    "\"123\"",
    "\"-9223372036854775809\"",
    "\"1e999\"",
    "\"NaN\"",
    "\"_x\"",
    "\"\u{feff}\u{200d}\"",
    "\"2031-05-04\"",
    "\"2031-05-04T06:07:08+02:00\"",
    "\"\u{10FFFF}\"",
];
const KWS: &[&str] = &[":a", ":b", ":k", ":_x", ":ok?", ":a-b", ":0"];
const REGEXES: &[&str] = &[
    "\"a\"",
    "\"\"",
    "\"a*\"",
    "\"(a*)*b\"",
    "\"(?:a|a)*b\"",
    "\"\\\\b\"",
    "\"(?i)ß\"",
    "\"^\"",
    "\"$\"",
    "\".*\"",
    "\"(?s).\"",
    "\"(\\\\d+)-(\\\\d+)?\"",
    "\"()\"",
    "\"(|)*\"",
    "\"\\\\p{L}+\"",
    "\"(a{1000}){1000}\"",
    "\"a{0,65535}\"",
    "\"[[:alpha:]]\"",
    "\"(\"",
    "\"\\\\1\"",
    "\"(?<n>x)\"",
    "\"\\\\X\"",
    "\"[\\\\s,]+\"",
];

/// Functions that take a value and build a bigger one around it (`{x}` is the value, `{i}` the
/// loop counter). Deep, shared and long values come from iterating these.
const WRAPS: &[&str] = &[
    "[{x}]",
    "[{x} {x}]",
    "{:a {x}}",
    "{:a {x} :b {x}}",
    "#{{x}}",
    "{{x} 1}",
    "(conj [{x}] {x})",
    "(vector {x} {i})",
    "(fn [] {x})",
    "(fn [y] ({x} y))",
    "#({x} %)",
    "(juxt {x})",
    "(juxt {x} {x})",
    "(fnil {x} 0)",
    "(all-of {x})",
    "(where [:a] = {x})",
    "(str {x} {x})",
    "(str {x} \"a\")",
    "(conj {x} {i})",
    "(assoc {x} {i} {i})",
    "(into {x} {x})",
    "(vec (concat {x} {x}))",
    "(inc {x})",
    "(+ {x} {x})",
    "(* {x} 2)",
    "[{i} {x}]",
    "(assoc {} {i} {x})",
    "(merge {x} {:k {x}})",
    "(set [{x}])",
    "(list {x})",
    "(if (odd? {i}) [{x}] {:v {x}})",
    "(let [y {x}] [y y])",
    "(conj {x} {x})",
    "(mapv identity [{x}])",
    "(pmap identity [{x}])",
];

/// Starting values for the wraps.
const SEEDS: &[&str] = &[
    "[]",
    "0",
    "{}",
    "#{}",
    "1",
    "\"\"",
    "\"ab\"",
    "identity",
    "inc",
    "[1 2 3]",
    "(range 10)",
    "data/x",
    "nil",
    ":k",
    "1.5",
    "Double/NaN",
    "(fn [y] y)",
    "{:a 1}",
];

/// Things a hostile program does with what it built (`{x}`): compare, hash, sort, print, walk.
const CONSUMERS: &[&str] = &[
    "{x}",
    "(= {x} {x})",
    "(= {x} [{x}])",
    "(compare {x} {x})",
    "(compare [{x}] [{x}])",
    "(sort [{x} {x}])",
    "(sort-by identity [{x} {x}])",
    "(set [{x} {x}])",
    "#{{x}}",
    "(frequencies [{x} {x}])",
    "(distinct [{x} {x}])",
    "(contains? #{{x}} {x})",
    "{{x} 1}",
    "(count (str {x}))",
    "(str {x})",
    "(println {x})",
    "(flatten {x})",
    "(count (flatten {x}))",
    "(get-in {x} [0 0 0 0])",
    "(pmap identity [{x} {x}])",
    "(group-by count [{x}])",
    "(into #{} [{x}])",
    "(def saved {x})",
    "(vec {x})",
    "(seq {x})",
    "(reverse {x})",
    "(return {x})",
    "(fail {x})",
    "(apply vector {x})",
    "({x})",
    "({x} 1)",
    "(max-key count {x} {x})",
    "(split (str {x}) \"[\")",
    "(join \",\" {x})",
    "(update-in {x} [0] identity)",
    "(merge {:a {x}} {:a {x}})",
    "(tool/echo {x})",
    "(re-find (re-pattern \"\\\\d+\") (str {x}))",
    "(empty? {x})",
    "(union #{{x}} #{{x}})",
    "(not= {x} {x})",
    "(min-by count [{x} {x}])",
    "(reduce conj [] {x})",
    "(mapv identity {x})",
    "(count {x})",
    "(do {x} 1)",
    "(nil? {x})",
    "(= (str {x}) (str {x}))",
    "(map-indexed vector {x})",
    "(distinct-by identity [{x} {x}])",
    "(set [{x}])",
    "(select-keys {x} [:a :b])",
    "(sort-by count [{x} {x}])",
    "(into {} [[{x} {x}]])",
    "(entries {x})",
    "(pcalls (fn [] {x}) (fn [] {x}))",
];

/// Pairs of separately built values: the core cannot short-cut on shared pointers.
const CONSUMERS2: &[&str] = &[
    "(= {a} {b})",
    "(compare {a} {b})",
    "(sort [{a} {b}])",
    "(set [{a} {b}])",
    "(frequencies [{a} {b}])",
    "(distinct [{a} {b}])",
    "(contains? #{{a}} {b})",
    "(get {{a} 1} {b})",
    "(group-by identity [{a} {b}])",
    "(not= {a} {b})",
    "(sort-by identity [{a} {b}])",
    "(merge {a} {b})",
    "(into {a} {b})",
    "(union (set [{a}]) (set [{b}]))",
    "(= [{a}] [{b}])",
    "(compare [{a} 1] [{b} 2])",
    "(sort-by identity > [{a} {b}])",
    "(= {{a} 1} {{b} 1})",
    "(difference #{{a}} #{{b}})",
];

const NUM_STEPS: &[&str] = &[
    "inc",
    "dec",
    "(+ 1)",
    "(* 1)",
    "(- 0)",
    "#(+ % 1)",
    "(max 0)",
    "(min 1e300)",
    "abs",
    "(mod 7)",
    "double",
];
const COLL_STEPS: &[&str] = &[
    "vector",
    "(conj 1)",
    "(vector)",
    "(assoc :a 1)",
    "(into [])",
    "vec",
    "identity",
    "(do)",
    "(or 1)",
    "(and true)",
    "(when true)",
    "(->> (map identity))",
    "(cond true)",
    "(if true)",
    "(merge {})",
    "(get 0 [])",
    "list",
    "(#(vector %))",
    "first",
    "(conj [])",
];
const STR_STEPS: &[&str] = &[
    "str",
    "(str \"a\")",
    "(subs 0)",
    "upper-case",
    "(replace \"a\" \"aa\")",
    "trim",
    "(str/join [])",
];

const CMPS: &[&str] = &[
    "(fn [a b] true)",
    "(fn [a b] false)",
    "(fn [a b] (< a b))",
    "(fn [a b] (if (even? a) -1 1))",
    "(fn [a b] Double/NaN)",
    "(fn [a b] nil)",
    "(fn [a b] 1)",
    "(fn [a b] -1)",
    "(fn [a b] (- (mod (* a 7) 5) 2))",
    "compare",
    ">",
    ":desc",
    "(fn [a b] (compare b a))",
    "(fn [a b] 0.5)",
    "(fn [a b] (count (str a b)))",
    "(fn [a b] (> (mod (+ a b) 3) 0))",
    "(fn [a b] (- 9223372036854775807 a))",
];

/// Builtins for random calls: name, min and max argument count.
const BUILTINS: &[(&str, u8, u8)] = &[
    ("first", 1, 1),
    ("second", 1, 1),
    ("last", 1, 1),
    ("nth", 2, 2),
    ("rest", 1, 1),
    ("next", 1, 1),
    ("count", 1, 1),
    ("empty?", 1, 1),
    ("seq", 1, 1),
    ("take", 2, 2),
    ("drop", 2, 2),
    ("take-while", 2, 2),
    ("distinct", 1, 1),
    ("reverse", 1, 1),
    ("sort", 1, 2),
    ("sort-by", 2, 3),
    ("map", 2, 4),
    ("mapv", 2, 3),
    ("map-indexed", 2, 2),
    ("filter", 2, 2),
    ("remove", 2, 2),
    ("find", 2, 2),
    ("pluck", 2, 2),
    ("conj", 1, 3),
    ("concat", 0, 3),
    ("into", 2, 2),
    ("flatten", 1, 1),
    ("zip", 2, 2),
    ("interleave", 2, 2),
    ("interpose", 2, 2),
    ("partition", 2, 3),
    ("range", 1, 3),
    ("vector", 0, 3),
    ("vec", 1, 1),
    ("set", 1, 1),
    ("reduce", 2, 3),
    ("sum-by", 2, 2),
    ("avg-by", 2, 2),
    ("min-by", 2, 2),
    ("max-by", 2, 2),
    ("distinct-by", 2, 2),
    ("group-by", 2, 2),
    ("frequencies", 1, 1),
    ("max-key", 2, 3),
    ("some", 2, 2),
    ("every?", 2, 2),
    ("contains?", 2, 2),
    ("get", 2, 3),
    ("get-in", 2, 3),
    ("assoc", 3, 5),
    ("assoc-in", 3, 3),
    ("update", 3, 4),
    ("update-in", 3, 4),
    ("dissoc", 1, 3),
    ("merge", 0, 3),
    ("select-keys", 2, 2),
    ("keys", 1, 1),
    ("vals", 1, 1),
    ("entries", 1, 1),
    ("update-vals", 2, 2),
    ("union", 0, 3),
    ("intersection", 1, 3),
    ("difference", 1, 3),
    ("str", 0, 3),
    ("subs", 2, 3),
    ("join", 1, 2),
    ("split", 2, 2),
    ("split-lines", 1, 1),
    ("trim", 1, 1),
    ("replace", 3, 3),
    ("upper-case", 1, 1),
    ("lower-case", 1, 1),
    ("starts-with?", 2, 2),
    ("includes?", 2, 2),
    ("parse-long", 1, 1),
    ("parse-double", 1, 1),
    ("re-pattern", 1, 1),
    ("re-find", 2, 2),
    ("re-seq", 2, 2),
    ("re-split", 2, 2),
    ("+", 0, 3),
    ("-", 1, 3),
    ("*", 0, 3),
    ("/", 1, 3),
    ("mod", 2, 2),
    ("rem", 2, 2),
    ("inc", 1, 1),
    ("dec", 1, 1),
    ("abs", 1, 1),
    ("max", 1, 3),
    ("min", 1, 3),
    ("floor", 1, 1),
    ("round", 1, 1),
    ("int", 1, 1),
    ("sqrt", 1, 1),
    ("pow", 2, 2),
    ("=", 2, 2),
    ("<", 2, 2),
    ("compare", 2, 2),
    ("not", 1, 1),
    ("identity", 1, 1),
    ("fnil", 2, 2),
    ("apply", 2, 3),
    ("juxt", 0, 3),
    ("pmap", 2, 2),
    ("pcalls", 0, 2),
    ("println", 0, 2),
    ("java.util.Date.", 0, 1),
    (".getTime", 1, 1),
    ("java.time.LocalDate/parse", 1, 1),
    ("where", 1, 1),
    ("all-of", 0, 2),
    ("tool/echo", 0, 2),
];

/// The structure-aware program generator.
pub struct ProgGen<'s, 'a> {
    s: &'s mut Src<'a>,
    locals: Vec<String>,
    fresh: usize,
    /// Bytes of program text still allowed (repeated text shrinks its count to fit).
    budget: usize,
}

/// Program text is kept under about this many bytes.
const TEXT_BUDGET: usize = 2_000_000;

pub fn gen_program(s: &mut Src) -> String {
    let mut g = ProgGen {
        s,
        locals: Vec::new(),
        fresh: 0,
        budget: TEXT_BUDGET,
    };
    g.program()
}

fn fill(template: &str, x: &str, i: &str) -> String {
    template.replace("{x}", x).replace("{i}", i)
}

fn fill2(template: &str, a: &str, b: &str) -> String {
    template.replace("{a}", a).replace("{b}", b)
}

impl ProgGen<'_, '_> {
    fn name(&mut self) -> String {
        self.fresh += 1;
        format!("v{}", self.fresh)
    }

    /// A count for repeated text of `unit` bytes, shrunk to fit the text budget.
    fn text_count(&mut self, unit: usize) -> u64 {
        let n = self.s.size();
        let fit = (self.budget / 2 / unit.max(1)) as u64;
        let n = n.min(fit);
        self.budget = self.budget.saturating_sub(n as usize * unit);
        n
    }

    fn program(&mut self) -> String {
        let forms = 1 + self.s.below(3);
        let mut out = String::new();
        for _ in 0..forms {
            let f = if self.s.chance(80) {
                self.template(3)
            } else {
                self.expr(3)
            };
            out.push_str(&f);
            out.push('\n');
        }
        if self.s.chance(10) {
            // the whole program inside parallel branches
            out = format!("(pmap (fn [_] {out}) [1 2])");
        }
        out
    }

    fn literal(&mut self) -> String {
        match self.s.below(10) {
            0 | 1 => self.s.pick_str(INTS).to_string(),
            2 => self.s.pick_str(FLOATS).to_string(),
            3 | 4 => self.s.pick_str(STRS).to_string(),
            5 => self.s.pick_str(KWS).to_string(),
            6 => "nil".into(),
            7 => self.s.pick_str(&["true", "false"]).to_string(),
            8 => self.s.pick_str(SEEDS).to_string(),
            _ => self
                .s
                .pick(&[
                    "[1 2 3]",
                    "[[1 2] [3 4]]",
                    "{:a 1 :b [2 3]}",
                    "#{1 2 3}",
                    "{\"a\" 1 :a 2}",
                    "[{:a 1} {:a 2} {:b 3}]",
                    "[3 1 2 1.0 -0.0]",
                    "(range 5)",
                    "{:a {:b {:c 1}}}",
                    "[nil nil]",
                ])
                .to_string(),
        }
    }

    fn atom(&mut self) -> String {
        if !self.locals.is_empty() && self.s.chance(50) {
            let i = self.s.below(self.locals.len());
            return self.locals[i].clone();
        }
        self.literal()
    }

    /// A random expression, `d` levels deep at most.
    pub fn expr(&mut self, d: u32) -> String {
        if d == 0 {
            return self.atom();
        }
        match self.s.below(16) {
            0 | 1 => self.atom(),
            2..=4 => {
                let (name, lo, hi) = *self.s.pick(BUILTINS);
                let n = lo as usize + self.s.below((hi - lo) as usize + 1);
                let mut out = format!("({name}");
                for _ in 0..n {
                    out.push(' ');
                    out.push_str(&self.fun_or_expr(d - 1));
                }
                out.push(')');
                out
            }
            5 => {
                let v = self.name();
                let e = self.expr(d - 1);
                self.locals.push(v.clone());
                let body = self.expr(d - 1);
                self.locals.pop();
                format!("(let [{v} {e}] {body})")
            }
            6 => {
                let c = self.expr(d - 1);
                let a = self.expr(d - 1);
                let b = self.expr(d - 1);
                let form = self
                    .s
                    .pick_str(&["if", "if-not", "and", "or", "cond", "when"]);
                match form {
                    "cond" => format!("(cond {c} {a} :else {b})"),
                    "when" => format!("(when {c} {a} {b})"),
                    _ => format!("({form} {c} {a} {b})"),
                }
            }
            7 => {
                let f = self.fun(d - 1);
                let a = self.expr(d - 1);
                format!("({f} {a})")
            }
            8 => {
                let f = self.fun(d - 1);
                let c = self.expr(d - 1);
                let hof = self.s.pick_str(&[
                    "map",
                    "filter",
                    "remove",
                    "sort-by",
                    "group-by",
                    "pmap",
                    "mapv",
                    "some",
                    "every?",
                    "take-while",
                    "min-by",
                    "distinct-by",
                    "find",
                ]);
                format!("({hof} {f} {c})")
            }
            9 => {
                let a = self.expr(d - 1);
                let b = self.expr(d - 1);
                match self.s.below(4) {
                    0 => format!("[{a} {b}]"),
                    1 => format!("{{:a {a} :b {b}}}"),
                    2 => format!("#{{{a} {b}}}"),
                    _ => format!("{{{a} {b}}}"),
                }
            }
            10 => {
                let x = self.expr(d - 1);
                let n = self.s.below(4);
                let mut out = format!("(-> {x}");
                for _ in 0..n {
                    out.push(' ');
                    out.push_str(self.s.pick_str(COLL_STEPS));
                }
                out.push(')');
                out
            }
            11 => {
                let x = self.expr(d - 1);
                fill(self.s.pick_str(CONSUMERS), &x, "0")
            }
            12 => {
                let x = self.expr(d - 1);
                fill(self.s.pick_str(WRAPS), &x, "1")
            }
            13 => format!(
                "data/{}",
                self.s.pick_str(&["x", "s", "n", "m", "_secret", "nope"])
            ),
            _ => self.template(d - 1),
        }
    }

    fn fun(&mut self, d: u32) -> String {
        match self.s.below(6) {
            0 => self
                .s
                .pick(&[
                    "identity",
                    "inc",
                    "str",
                    "vector",
                    "count",
                    ":a",
                    "first",
                    "even?",
                    "nil?",
                    "#{1 2}",
                    "{:a 1}",
                    "sort",
                    "flatten",
                    "frequencies",
                ])
                .to_string(),
            1 | 2 => {
                let v = self.name();
                self.locals.push(v.clone());
                let body = self.expr(d);
                self.locals.pop();
                format!("(fn [{v}] {body})")
            }
            3 => {
                let f = self
                    .s
                    .pick_str(&["+", "str", "vector", "conj", "compare", "max"]);
                let a = self.atom();
                format!("#({f} % {a})")
            }
            4 => {
                let f = self.fun(d.saturating_sub(1));
                let g = self.fun(d.saturating_sub(1));
                format!("(juxt {f} {g})")
            }
            _ => {
                let f = self.fun(d.saturating_sub(1));
                let a = self.atom();
                format!("(fnil {f} {a})")
            }
        }
    }

    fn fun_or_expr(&mut self, d: u32) -> String {
        if self.s.chance(20) {
            self.fun(d)
        } else {
            self.expr(d)
        }
    }

    fn seed(&mut self, d: u32) -> String {
        if d > 0 && self.s.chance(15) {
            self.expr(d - 1)
        } else {
            self.s.pick_str(SEEDS).to_string()
        }
    }

    /// One of the hostile shapes.
    pub fn template(&mut self, d: u32) -> String {
        match self.s.below(24) {
            0 | 1 => self.t_deep_loop(d),
            2 => self.t_two_deep(d),
            3 => self.t_threading(d),
            4 => self.t_cond(d),
            5 => self.t_pmap(d),
            6 => self.t_range(),
            7 => self.t_strings(d),
            8 => self.t_paths(d),
            9 => self.t_recursion(d),
            10 => self.t_chain(d),
            11 => self.t_nested_source(d),
            12 => self.t_numbers(),
            13 => self.t_sort(),
            14 => self.t_regex(),
            15 => self.t_doseq(d),
            16 => self.t_apply(),
            17 => self.t_where(),
            18 => self.t_defs(d),
            19 => self.t_destructure(),
            20 => self.t_let_chain(),
            21 => self.t_many_forms(),
            22 => {
                let x = format!("data/{}", self.s.pick_str(&["x", "s", "n", "m", "_secret"]));
                fill(self.s.pick_str(CONSUMERS), &x, "0")
            }
            _ => self.expr(d),
        }
    }

    /// `(loop [x SEED i 0] (if (< i N) (recur (WRAP x) (inc i)) (CONSUME x)))`
    fn t_deep_loop(&mut self, d: u32) -> String {
        let x = self.name();
        let i = self.name();
        let seed = self.seed(d);
        let n = self.s.size();
        let mut wrap = self.s.pick_str(WRAPS).to_string();
        if self.s.chance(20) {
            let outer = self.s.pick_str(WRAPS).to_string();
            wrap = outer.replace("{x}", &wrap);
        }
        let wrap = fill(&wrap, &x, &i);
        let consume = fill(self.s.pick_str(CONSUMERS), &x, &i);
        format!("(loop [{x} {seed} {i} 0] (if (< {i} {n}) (recur {wrap} (inc {i})) {consume}))")
    }

    /// Two separately built values, then compared, hashed or merged.
    fn t_two_deep(&mut self, d: u32) -> String {
        let seed = self.seed(d);
        let n = self.s.size();
        let wrap = self.s.pick_str(WRAPS).to_string();
        let build = |x: &str, i: &str| {
            format!(
                "(loop [{x} {seed} {i} 0] (if (< {i} {n}) (recur {} (inc {i})) {x}))",
                fill(&wrap, x, i)
            )
        };
        let a = build("x", "i");
        let b = if self.s.chance(80) {
            build("y", "j")
        } else {
            format!("[{}]", build("y", "j"))
        };
        let consume = fill2(self.s.pick_str(CONSUMERS2), "a", "b");
        format!("(let [a {a} b {b}] {consume})")
    }

    /// `(-> seed s1 s2 ... sN)` with many steps (nested calls after expansion).
    fn t_threading(&mut self, d: u32) -> String {
        let (seed, steps): (String, &[&str]) = match self.s.below(3) {
            0 => (self.s.pick_str(INTS).to_string(), NUM_STEPS),
            1 => (self.seed(d), COLL_STEPS),
            _ => (self.s.pick_str(STRS).to_string(), STR_STEPS),
        };
        let arrow = self.s.pick_str(&["->", "->>"]);
        let n = self.text_count(8);
        let cycle = self.s.chance(50);
        let first = *self.s.pick(steps);
        let mut out = format!("({arrow} {seed}");
        for k in 0..n {
            out.push(' ');
            out.push_str(if cycle {
                steps[k as usize % steps.len()]
            } else {
                first
            });
        }
        out.push(')');
        if self.s.chance(30) {
            out = fill(self.s.pick_str(CONSUMERS), &out, "0");
        }
        out
    }

    /// `cond` with many clauses (a deep `if` chain after expansion).
    fn t_cond(&mut self, d: u32) -> String {
        let n = self.text_count(24);
        let x = self.expr(d.saturating_sub(1));
        let mut out = String::from("(let [c ");
        out.push_str(&x);
        out.push_str("] (cond");
        let style = self.s.below(3);
        for k in 0..n {
            match style {
                0 => {
                    let _ = write!(out, " (= c {k}) {k}");
                }
                1 => out.push_str(" false 0"),
                _ => {
                    let _ = write!(out, " (> (count (str c)) {k}) (str c {k})");
                }
            }
        }
        out.push_str(" :else c))");
        out
    }

    /// Nested `pmap`/`pcalls`: thread explosion, deadlines in branches, errors in branches.
    fn t_pmap(&mut self, d: u32) -> String {
        let depth = 1 + self.s.below(6);
        let mut inner = if self.s.chance(50) {
            self.template(d.saturating_sub(1))
        } else {
            self.expr(d.saturating_sub(1))
        };
        for k in 0..depth {
            let width = *self.s.pick(&[1u64, 2, 3, 4, 8, 16, 100, 1_000]);
            let v = format!("p{k}");
            // The two-branch form doubles the text; nested through templates that doubling
            // compounds, so it stops once the text is large (an 88-byte input asked for 2 GB).
            let form = if inner.len() > 4096 {
                1 + self.s.below(3)
            } else {
                self.s.below(4)
            };
            inner = match form {
                0 => format!("(pcalls (fn [] {inner}) (fn [] {inner}))"),
                1 => format!("(apply pcalls (map (fn [{v}] (fn [] {inner})) (range {width})))"),
                2 => format!("(count (pmap (fn [{v}] {inner}) (range {width})))"),
                _ => format!("(pmap (fn [{v}] {inner}) (range {width}))"),
            };
        }
        inner
    }

    fn range_arg(&mut self) -> String {
        if self.s.chance(50) {
            self.s.size().to_string()
        } else {
            self.s.pick_str(INTS).to_string()
        }
    }

    /// Big ranges fed to collection builtins.
    fn t_range(&mut self) -> String {
        let r = match self.s.below(5) {
            0 | 1 => format!("(range {})", self.range_arg()),
            2 => format!("(range {} {})", self.range_arg(), self.range_arg()),
            3 => format!(
                "(range {} {} {})",
                self.range_arg(),
                self.range_arg(),
                self.s.pick_str(INTS)
            ),
            _ => format!(
                "(range {} {} {})",
                self.s.pick_str(FLOATS),
                self.s.pick_str(FLOATS),
                self.s.pick_str(&["1e-300", "0.1", "-1", "5e-324", "1e308"])
            ),
        };
        let op = self.s.pick_str(&[
            "(count {x})",
            "(sort {x})",
            "(reverse {x})",
            "(frequencies {x})",
            "(set {x})",
            "(distinct {x})",
            "(apply + {x})",
            "(reduce + {x})",
            "(count (str {x}))",
            "(join \",\" {x})",
            "(partition 2 {x})",
            "(interpose 0 {x})",
            "(flatten {x})",
            "(map inc {x})",
            "(filter even? {x})",
            "(sum-by identity {x})",
            "(apply max {x})",
            "(last {x})",
            "(nth {x} 5)",
            "(zip {x} {x})",
            "(group-by even? {x})",
            "(sort-by - {x})",
            "(into {} (map (fn [i] [i i]) {x}))",
            "(pmap inc {x})",
            "(avg-by identity {x})",
            "(partition 1 1 {x})",
            "(into #{} {x})",
            "(mapv str {x})",
            "(apply str {x})",
            "(apply vector {x})",
            "(concat {x} {x})",
            "(into {x} {x})",
        ]);
        fill(op, &r, "0")
    }

    /// Strings grown by a loop, then split, joined, matched and printed.
    fn t_strings(&mut self, d: u32) -> String {
        let seed = if self.s.chance(20) {
            self.expr(d.saturating_sub(1))
        } else {
            self.s.pick_str(STRS).to_string()
        };
        let n = self.s.size();
        let grow = self.s.pick_str(&[
            "(str s s)",
            "(str s \"ab\")",
            "(str \"é\" s)",
            "(replace s \"a\" \"aa\")",
            "(upper-case s)",
            "(join \",\" [s s])",
            "(str [s])",
            "(subs (str s s) 1)",
            "(join s [\"a\" \"b\" \"c\"])",
            "(apply str (reverse s))",
            "(str s \"\u{301}\")",
            "(str s (count s))",
            "(replace (str s \"a\") \"\" \"x\")",
        ]);
        let op = self.s.pick_str(&[
            "(count s)",
            "(split s \"\")",
            "(split s \"a\")",
            "(split-lines s)",
            "(re-split (re-pattern {re}) s)",
            "(re-seq (re-pattern {re}) s)",
            "(doseq [c (split s \"\")] (println c))",
            "(println s s s)",
            "(reverse s)",
            "(upper-case s)",
            "(trim s)",
            "(replace s \"\" \"x\")",
            "(subs s 1 100000)",
            "(frequencies s)",
            "(distinct s)",
            "(sort s)",
            "(parse-long s)",
            "(parse-double s)",
            "(includes? s \"zz\")",
            "(join \",\" (split s \"\"))",
            "(vec s)",
            "(count (re-seq (re-pattern {re}) s))",
            "(last s)",
            "(take 3 s)",
            "(str s)",
            "s",
            "(= s (str s))",
            "(compare s (str s \"a\"))",
            "(re-matches (re-pattern {re}) s)",
            "(partition 3 s)",
            "(into #{} s)",
        ]);
        let op = op.replace("{re}", self.s.pick_str(REGEXES));
        format!("(let [s (loop [s {seed} i 0] (if (< i {n}) (recur {grow} (inc i)) s))] {op})")
    }

    /// assoc-in / update-in / get-in with long paths.
    fn t_paths(&mut self, d: u32) -> String {
        let n = self.s.size();
        let key = self.s.pick_str(&[
            "i",
            ":a",
            "\"a\"",
            "0",
            "(str i)",
            "[i]",
            "nil",
            "-1",
            "Double/NaN",
            "(mod i 3)",
        ]);
        let base = self
            .s
            .pick_str(&["{}", "nil", "[]", "[1]", "{:a {}}", "data/m"]);
        let val = self.expr(d.saturating_sub(2));
        let op = self.s.pick_str(&[
            "(get-in m p)",
            "(update-in m p inc)",
            "(update-in m p (fnil inc 0))",
            "(assoc-in m p m)",
            "(= m m)",
            "(count (str m))",
            "m",
            "(get-in m (vec (reverse p)))",
            "(assoc-in m (conj p 1) 2)",
            "(select-keys m p)",
            "(flatten (vals m))",
            "(= m (assoc-in {} p 1))",
            "(update-in m p assoc :z 1)",
            "(get-in m p :default)",
            "(filter (where p = 1) [m m])",
            "(pluck p [m])",
            "(sort-by p [m m])",
        ]);
        format!("(let [p (vec (map (fn [i] {key}) (range {n}))) m (assoc-in {base} p {val})] {op})")
    }

    /// Recursion: deep non-tail, mutual, exponential, through builtins and branches.
    fn t_recursion(&mut self, d: u32) -> String {
        let n = self.s.size();
        let base = self.s.pick_str(SEEDS).to_string();
        let wrap = self.s.pick_str(&[
            "[{x}]",
            "(+ 1 {x})",
            "(str \"a\" {x})",
            "{:a {x}}",
            "(conj {x} n)",
            "(fn [] {x})",
            "(vector {x} {x})",
            "(let [r {x}] [r r])",
        ]);
        let consume = fill(self.s.pick_str(CONSUMERS), "r", "0");
        match self.s.below(6) {
            0 | 1 => {
                let body = fill(wrap, "(f (dec n))", "n");
                format!("(defn f [n] (if (<= n 0) {base} {body}))\n(let [r (f {n})] {consume})")
            }
            2 => format!(
                "(defn f [n] (if (<= n 0) 0 (+ (f (- n 1)) (f (- n 2)))))\n(f {})",
                n.min(200)
            ),
            3 => format!(
                "(defn f [n] (if (<= n 0) [] {}))\n(let [r (f {n})] {consume})",
                self.s.pick_str(&[
                    "(map f (range n))",
                    "(pmap f [(dec n)])",
                    "(mapv f [(dec n)])",
                    "(reduce (fn [a b] (f (dec n))) 0 [1])",
                    "(sort-by (fn [x] (f (dec n))) [1 2])",
                    "((juxt f) (dec n))",
                    "(pcalls #(f (dec n)))",
                    "(update {:a (dec n)} :a f)",
                    "(filter (fn [x] (f (dec n))) [1])",
                ])
            ),
            4 => format!(
                "(defn f [n] (if (<= n 0) 0 (g (dec n))))\n(defn g [n] (if (<= n 0) 1 (f (dec n))))\n(f {n})"
            ),
            _ => {
                let _ = d;
                format!("(defn f [n acc] (if (<= n 0) acc (recur (dec n) {})))\n(let [r (f {n} {base})] {consume})",
                    fill(wrap, "acc", "n"))
            }
        }
    }

    /// Long chains of closures and combinators (deep on call, and on drop).
    fn t_chain(&mut self, d: u32) -> String {
        let n = self.s.size();
        let seed = self.s.pick_str(&[
            "identity",
            "inc",
            "(fn [y] y)",
            ":a",
            "{:a 1}",
            "#{1}",
            "(where :a)",
            "str",
            "vector",
            "(fn [& ys] ys)",
        ]);
        let wrap = self.s.pick_str(&[
            "(fn [y] (f y))",
            "#(f %)",
            "(juxt f)",
            "(fnil f 0)",
            "(all-of f)",
            "(any-of f)",
            "(none-of f)",
            "(fn [& ys] (apply f ys))",
            "(juxt f f)",
            "(fn [y] (f (f y)))",
            "(let [g f] (fn [y] (g y)))",
            "(fn [y] [f y])",
        ]);
        let consume = self.s.pick_str(&[
            "(f 1)",
            "(f nil)",
            "f",
            "(str f)",
            "(= f f)",
            "(map f [1 2])",
            "1",
            "(def g f)",
            "(pmap f [1])",
            "(sort-by f [1 2 3])",
            "(println f)",
            "#{f}",
            "{f 1}",
            "[f f]",
            "(filter f [1 nil {:a 1}])",
        ]);
        let _ = d;
        format!("(loop [f {seed} i 0] (if (< i {n}) (recur {wrap} (inc i)) {consume}))")
    }

    /// Deeply nested program text (the reader's limit, the analyzer's recursion).
    fn t_nested_source(&mut self, d: u32) -> String {
        let depth = *self.s.pick(&[
            10usize, 100, 500, 509, 510, 511, 512, 513, 1_000, 5_000, 50_000,
        ]);
        let depth = depth.min(self.budget / 40);
        self.budget = self.budget.saturating_sub(depth * 20);
        const LEVELS: &[(&str, &str)] = &[
            ("[", "]"),
            ("(vector ", ")"),
            ("{:a ", "}"),
            ("#{", "}"),
            ("(fn [] ", ")"),
            ("(let [a 1] ", ")"),
            ("(if true ", " 0)"),
            ("(do ", ")"),
            ("(-> ", ")"),
            ("(when 1 ", ")"),
            ("(and ", ")"),
            ("(str ", ")"),
            ("(inc ", ")"),
            ("(loop [a 1] ", ")"),
            ("(first [", "])"),
            ("((fn [x] x) ", ")"),
            ("(pmap identity [", "])"),
            ("#(", ")"),
        ];
        let uniform = self.s.chance(60);
        let fixed = *self.s.pick(LEVELS);
        let mut opens = String::new();
        let mut closes = Vec::with_capacity(depth);
        for _ in 0..depth {
            let (o, c) = if uniform { fixed } else { *self.s.pick(LEVELS) };
            opens.push_str(o);
            closes.push(c);
        }
        let center = self.expr(d.saturating_sub(2));
        let mut out = opens;
        out.push_str(&center);
        for c in closes.iter().rev() {
            out.push_str(c);
        }
        if self.s.chance(40) {
            out = fill(self.s.pick_str(CONSUMERS), &out, "0");
        }
        out
    }

    /// Arithmetic, indexing and dates at the edges of the integer and float ranges.
    fn t_numbers(&mut self) -> String {
        let num = |s: &mut Src| -> String {
            if s.chance(70) {
                s.pick_str(INTS).to_string()
            } else {
                s.pick_str(FLOATS).to_string()
            }
        };
        let a = num(self.s);
        let b = num(self.s);
        let c = num(self.s);
        let t = self.s.pick_str(&[
            "(+ {a} {b})",
            "(- {a} {b})",
            "(* {a} {b})",
            "(/ {a} {b})",
            "(mod {a} {b})",
            "(rem {a} {b})",
            "(- {a})",
            "(inc {a})",
            "(dec {a})",
            "(abs {a})",
            "(pow {a} {b})",
            "(round {a})",
            "(floor {a})",
            "(ceil {a})",
            "(int {a})",
            "(trunc {a})",
            "(sqrt {a})",
            "(double {a})",
            "(compare {a} {b})",
            "(sort [{a} {b} {c}])",
            "(max {a} {b} {c})",
            "(min {a} {b})",
            "(= {a} {b})",
            "(str {a})",
            "(nth [1 2 3] {a})",
            "(nth \"abc\" {a})",
            "(take {a} [1 2 3])",
            "(drop {a} [1 2 3])",
            "(subs \"abcdef\" {a} {b})",
            "(partition {a} {b} [1 2 3 4 5])",
            "(partition {a} [1 2 3])",
            "(range {a} {b} {c})",
            "(count (range {a} {b} {c}))",
            "(java.util.Date. {a})",
            "(.getTime (java.util.Date. {a}))",
            "(str (java.util.Date. {a}))",
            "(assoc [1 2] {a} 0)",
            "(update [1 2] {a} inc)",
            "(get [1 2] {a})",
            "(assoc-in [[1]] [{a} {b}] 0)",
            "(sum-by identity [{a} {b} {c}])",
            "(avg-by identity [{a} {b} {c}])",
            "(reduce + [{a} {b} {c}])",
            "(apply * [{a} {b} {c}])",
            "(parse-long (str {a}))",
            "(parse-double (str {a}))",
            "(even? {a})",
            "(zero? (mod {a} {b}))",
            "(frequencies [{a} {b} {c}])",
            "(set [{a} {b} {c}])",
            "(max-key identity {a} {b})",
            "(take-while pos? [{a} {b}])",
            "(interpose {a} [{b} {c}])",
        ]);
        t.replace("{a}", &a).replace("{b}", &b).replace("{c}", &c)
    }

    /// sort/sort-by with comparators that are not a total order (Rust's sort may panic on them).
    fn t_sort(&mut self) -> String {
        let n = self.s.size_max(100_000);
        let coll = match self.s.below(5) {
            0 => format!("(range {n})"),
            1 => format!("(vec (map (fn [i] (mod (* i 7919) 1000)) (range {n})))"),
            2 => "[Double/NaN 1 2 Double/NaN 0 -1]".to_string(),
            3 => format!("(vec (map (fn [i] (if (even? i) i (* 1.0 i))) (range {n})))"),
            _ => format!("(reverse (range {n}))"),
        };
        let cmp = self.s.pick_str(CMPS);
        match self.s.below(4) {
            0 => format!("(sort {cmp} {coll})"),
            1 => format!("(sort-by identity {cmp} {coll})"),
            2 => format!("(sort-by - {cmp} {coll})"),
            _ => format!("(sort {coll})"),
        }
    }

    fn t_regex(&mut self) -> String {
        let re = self.s.pick_str(REGEXES);
        let n = self.s.size_max(1_000_000);
        let st = self.s.pick_str(STRS);
        let text = match self.s.below(3) {
            0 => st.to_string(),
            1 => format!("(apply str (map (fn [_] {st}) (range {n})))"),
            _ => format!("(join \"a\" (range {n}))"),
        };
        let f = self
            .s
            .pick_str(&["re-find", "re-seq", "re-split", "re-matches"]);
        format!("(let [t {text}] ({f} (re-pattern {re}) t))")
    }

    fn t_doseq(&mut self, d: u32) -> String {
        let a = self.s.size_max(1_000_000);
        let b = self.s.size_max(1_000_000);
        let body = self.s.pick_str(&[
            "(println x y)",
            "(def last-x x)",
            "(str x y)",
            "(tool/t x)",
            "(println (str x y y y y y y y y y y))",
            "(doseq [z [x y]] (println z))",
        ]);
        let _ = d;
        format!("(doseq [x (range {a}) y (range {b})] {body})")
    }

    fn t_apply(&mut self) -> String {
        let n = self.s.size();
        let f = self.s.pick_str(&[
            "+",
            "max",
            "str",
            "vector",
            "(fn [& xs] (count xs))",
            "conj",
            "merge",
            "concat",
            "min",
            "juxt",
            "union",
            "(fn [a & r] a)",
            "interleave",
            "println",
            "pcalls",
        ]);
        let elems = self.s.pick_str(&[
            "(range {n})",
            "(map (fn [i] [i]) (range {n}))",
            "(map (fn [i] #{i}) (range {n}))",
            "(map (fn [i] (fn [] i)) (range {n}))",
            "(map (fn [i] {i i}) (range {n}))",
        ]);
        format!("(apply {f} {})", elems.replace("{n}", &n.to_string()))
    }

    /// `where` with long paths and every operator.
    fn t_where(&mut self) -> String {
        let n = self.text_count(3);
        let mut path = String::from("[");
        for _ in 0..n {
            path.push_str(":a ");
        }
        path.push(']');
        let op = self
            .s
            .pick_str(&["=", "not=", ">", "<", ">=", "<=", "in", "includes", ""]);
        let v = if op.is_empty() {
            String::new()
        } else {
            self.s
                .pick_str(&["1", "[1 2]", "\"a\"", ":a", "nil", "Double/NaN", "#{1}"])
                .to_string()
        };
        format!(
            "(let [m (assoc-in {{}} {path} 1)] (filter (where {path} {op} {v}) [m m {{:a 1}} nil 3]))"
        )
    }

    /// Many top-level definitions doubling a shared value.
    fn t_defs(&mut self, d: u32) -> String {
        let n = self.text_count(40).min(10_000);
        let seed = self.seed(d);
        let wrap = self
            .s
            .pick_str(&["[{x} {x}]", "{:a {x} :b {x}}", "(str {x} {x})", "[{x}]"]);
        let mut out = format!("(def d0 {seed})\n");
        for k in 1..=n {
            let prev = format!("d{}", k - 1);
            let _ = writeln!(out, "(def d{k} {})", fill(wrap, &prev, "0"));
        }
        let last = format!("d{n}");
        out.push_str(&fill(self.s.pick_str(CONSUMERS), &last, "0"));
        out
    }

    fn t_destructure(&mut self) -> String {
        let depth = self.s.size_max(1_000) as usize;
        let (pat, val) = match self.s.below(4) {
            0 => (
                "[".repeat(depth) + "a" + &"]".repeat(depth),
                "[".repeat(depth) + "1" + &"]".repeat(depth),
            ),
            1 => (
                "{".repeat(depth) + "a" + &" :k}".repeat(depth),
                "{:k ".repeat(depth) + "1" + &"}".repeat(depth),
            ),
            2 => (
                "[a & [b & [c & d]]]".to_string(),
                format!("(vec (range {depth}))"),
            ),
            _ => (
                "{:keys [a b] :or {a 5} :as all}".to_string(),
                "{\"a\" nil :b 2}".to_string(),
            ),
        };
        format!("(let [{pat} {val}] [a])")
    }

    /// A long `let`: many bindings, each using the previous one.
    fn t_let_chain(&mut self) -> String {
        let n = self.text_count(30).min(200_000);
        let step = self.s.pick_str(&[
            "[a{p} a{p}]",
            "(inc a{p})",
            "(str a{p} \"x\")",
            "(conj a{p} {k})",
            "{:k a{p}}",
        ]);
        let mut out = String::from("(let [a0 [1]");
        for k in 1..=n {
            let e = step
                .replace("{p}", &(k - 1).to_string())
                .replace("{k}", &k.to_string());
            let _ = write!(out, " a{k} {e}");
        }
        let _ = write!(out, "] (count (str a{n})))");
        out
    }

    /// Many small top-level forms and many distinct symbols and keywords.
    fn t_many_forms(&mut self) -> String {
        let n = self.text_count(20);
        let mut out = String::new();
        let kind = self.s.below(3);
        for k in 0..n {
            match kind {
                0 => {
                    let _ = writeln!(out, "(def s{k} {k})");
                }
                1 => {
                    let _ = write!(out, ":k{k} ");
                }
                _ => {
                    let _ = write!(out, "(println {k}) ");
                }
            }
        }
        out
    }
}

/// One `eval` input: a program (raw or generated) run under small limits.
pub fn run_program(data: &[u8]) {
    let (src, value, limits) = program_from_bytes(data);
    check_program(&src, value, &limits);
}

// ---------------------------------------------------------------------------------------------
// reader
// ---------------------------------------------------------------------------------------------

const READER_PIECES: &[&str] = &[
    "(",
    "[",
    "{",
    "#{",
    "#(",
    ")",
    "]",
    "}",
    "\"",
    "\\",
    "\\u00e9",
    "\\newline",
    "\\",
    ":",
    ":a",
    "#'",
    "#_",
    "@",
    "'",
    "^",
    "`",
    "~",
    ";",
    "\n",
    "\r\n",
    "\r",
    " ",
    ",",
    "9",
    "-",
    ".",
    "e",
    "1e999",
    "9223372036854775808",
    "-9223372036854775809",
    "0.",
    ".5",
    "nil",
    "true",
    "%",
    "%1",
    "%0",
    "%&",
    "/",
    "a/b",
    "é",
    "🇸🇪",
    "\u{301}",
    "\u{feff}",
    "\t",
    "\0",
    "x",
    "##Inf",
    "#\"a\"",
    "\"a\\\"b\"",
    "\"\\q\"",
    "1/2",
    "+5",
    "-0",
    "0x10",
    "1e",
    "1.5e+3",
    "\\space",
    "\\ü",
    "#",
    "#{}",
    "{:a}",
    "(fn [] %)",
    "#(#())",
    "\u{2028}",
    "data/",
    "tool/x",
    "::a",
    ":a/b",
    "a.b",
    "&",
    "*1",
    "1N",
    "1M",
    "\"\n\"",
];

/// Reader input from bytes: a sequence of (piece, repeat count) pairs, or raw text.
pub fn reader_input(data: &[u8]) -> (String, usize) {
    if is_raw(data) {
        return (String::from_utf8_lossy(data).into_owned(), 512);
    }
    let mut s = Src::new(data.get(1..).unwrap_or(&[]));
    let nesting = *s.pick(&[512usize, 512, 512, 512, 0, 1, 16, 2_048, 100_000]);
    let mut out = String::new();
    const MAX: usize = 1_000_000;
    while !s.is_empty() && out.len() < MAX {
        let piece = if s.chance(85) {
            s.pick_str(READER_PIECES).to_string()
        } else {
            let n = 1 + s.below(8);
            let bytes: Vec<u8> = (0..n).map(|_| s.byte()).collect();
            String::from_utf8_lossy(&bytes).into_owned()
        };
        let reps = s
            .size_max(100_000)
            .min(((MAX - out.len()) / piece.len().max(1)) as u64) as usize;
        for _ in 0..reps.max(1) {
            out.push_str(&piece);
        }
    }
    (out, nesting)
}

/// One `reader` input: reading is linear and never panics or overflows.
pub fn run_reader(data: &[u8]) {
    let (src, nesting) = reader_input(data);
    let budget = Duration::from_millis(1_000 + src.len() as u64 / 1_000);
    let _watch = watchdog("read", budget);
    let started = Instant::now();
    // what of a streaming program can run: whole forms, cut at a character boundary
    let cut = _core::lang::reader::complete_prefix(&src);
    assert!(
        cut <= src.len() && src.is_char_boundary(cut),
        "FINDING complete_prefix cut at {cut} of {} bytes, not a character boundary\n{}",
        src.len(),
        excerpt(&src)
    );
    let forms = read_with_limit(&src, nesting);
    if let Ok(forms) = &forms {
        std::hint::black_box(forms.len());
    }
    drop(forms);
    check_time("read", started, budget, &src);
}

// ---------------------------------------------------------------------------------------------
// printer
// ---------------------------------------------------------------------------------------------

/// A value to print, built by a program whose shape is known, so the size of what a print with
/// given limits must show can be computed without walking the value.
#[derive(Clone, Debug)]
pub enum Spec {
    Atom(&'static str, bool),
    Vec(Vec<Spec>),
    Set(Vec<Spec>),
    Map(Vec<(Spec, Spec)>),
    /// `n` levels of a wrapper: 0 `[x]`, 1 `{:a x}`, 2 `#{x}`, 3 `{x 1}`, 4 `[x 1 2]`.
    Nest(u64, u8, Box<Spec>),
    /// `[x x]` applied `k` times: 2^k leaves in little memory.
    Double(u64, Box<Spec>),
    /// A vector of `n` copies (distinct values when `distinct`).
    Wide(u64, bool, Box<Spec>),
    /// A string of `n` copies of a piece.
    LongStr(u64, &'static str),
}

/// Printer atoms: the program text and whether it reads back after printing.
const PRINT_ATOMS: &[(&str, bool)] = &[
    ("nil", true),
    ("true", true),
    ("0", true),
    ("-9223372036854775808", true),
    ("9223372036854775807", true),
    ("-0.0", true),
    ("1.5", true),
    ("1e-7", true),
    ("1e21", true),
    ("1.7976931348623157e308", true),
    ("5e-324", true),
    ("0.1", true),
    ("123456.789", true),
    ("1e7", true),
    ("0.001", true),
    ("Double/NaN", false),
    ("Double/POSITIVE_INFINITY", false),
    ("Double/NEGATIVE_INFINITY", false),
    ("\"\"", true),
    ("\"a\\\"b\\\\c\\n\\t\\r\"", true),
    ("\"e\u{301}\u{301}🇸🇪👨‍👩‍👧\"", true),
    ("\"\u{feff}\u{2028}\u{85}\"", false),
    ("\"_hidden\"", true),
    (":a", true),
    (":_x", true),
    (":ok?", true),
    ("inc", false),
    ("(fn [a [b c] {:keys [d]} & more] a)", false),
    ("(juxt inc)", false),
    ("(where :a = 1)", false),
    ("(re-pattern \"a\\\"b\")", false),
    ("(java.util.Date. 0)", false),
    ("(java.util.Date. 1712345678901)", false),
    ("(java.time.LocalDate/parse \"2031-05-04\")", false),
    ("(def v 1)", false),
    ("{\"_k\" 1 :_j 2 :a 3}", true),
    ("(str \"a\" (char? 1))", true),
];

pub fn gen_spec(s: &mut Src, d: u32) -> Spec {
    if d == 0 {
        let (a, r) = *s.pick(PRINT_ATOMS);
        return Spec::Atom(a, r);
    }
    match s.below(9) {
        0 | 1 => {
            let (a, r) = *s.pick(PRINT_ATOMS);
            Spec::Atom(a, r)
        }
        2 => Spec::Vec((0..s.below(5)).map(|_| gen_spec(s, d - 1)).collect()),
        3 => Spec::Set((0..s.below(4)).map(|_| gen_spec(s, d - 1)).collect()),
        4 => Spec::Map(
            (0..s.below(4))
                .map(|_| (gen_spec(s, d - 1), gen_spec(s, d - 1)))
                .collect(),
        ),
        5 => Spec::Nest(
            s.size_max(10_000),
            s.below(5) as u8,
            Box::new(gen_spec(s, d - 1)),
        ),
        6 => Spec::Double(s.size_max(100), Box::new(gen_spec(s, d - 1))),
        7 => Spec::Wide(
            s.size_max(4_096),
            s.chance(50),
            Box::new(gen_spec(s, d - 1)),
        ),
        _ => Spec::LongStr(
            s.size_max(100_000),
            s.pick_str(&["a", "é", "e\u{301}", "\\\"", "🇸🇪", "\\n", "ab "]),
        ),
    }
}

impl Spec {
    /// Program text building the value (an empty set or map literal may collapse entries).
    pub fn program(&self) -> String {
        match self {
            Spec::Atom(a, _) => a.to_string(),
            Spec::Vec(xs) => {
                format!(
                    "[{}]",
                    xs.iter().map(Spec::program).collect::<Vec<_>>().join(" ")
                )
            }
            Spec::Set(xs) => format!(
                "(set [{}])",
                xs.iter().map(Spec::program).collect::<Vec<_>>().join(" ")
            ),
            Spec::Map(kv) => format!(
                "(into {{}} [{}])",
                kv.iter()
                    .map(|(k, v)| format!("[{} {}]", k.program(), v.program()))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Spec::Nest(n, w, x) => {
                let wrap = ["[x]", "{:a x}", "#{x}", "{x 1}", "[x 1 2]"][*w as usize % 5];
                format!(
                    "(loop [x {} i 0] (if (< i {n}) (recur {wrap} (inc i)) x))",
                    x.program()
                )
            }
            Spec::Double(k, x) => format!(
                "(loop [x {} i 0] (if (< i {k}) (recur [x x] (inc i)) x))",
                x.program()
            ),
            Spec::Wide(n, distinct, x) => {
                if *distinct {
                    format!("(mapv (fn [i] [i {}]) (range {n}))", x.program())
                } else {
                    format!("(let [x {}] (mapv (fn [i] x) (range {n})))", x.program())
                }
            }
            Spec::LongStr(n, piece) => {
                format!("(apply str (map (fn [_] \"{piece}\") (range {n})))")
            }
        }
    }

    /// Whether the unlimited print reads back (no special floats, functions, odd strings).
    pub fn readable(&self) -> bool {
        match self {
            Spec::Atom(_, r) => *r,
            Spec::Vec(xs) | Spec::Set(xs) => xs.iter().all(Spec::readable),
            Spec::Map(kv) => kv.iter().all(|(k, v)| k.readable() && v.readable()),
            Spec::Nest(_, _, x) | Spec::Double(_, x) | Spec::Wide(_, _, x) => x.readable(),
            Spec::LongStr(..) => true,
        }
    }

    /// Nesting depth of the value.
    pub fn depth(&self) -> f64 {
        match self {
            Spec::Atom(..) | Spec::LongStr(..) => 0.0,
            Spec::Vec(xs) | Spec::Set(xs) => 1.0 + xs.iter().map(Spec::depth).fold(0.0, f64::max),
            Spec::Map(kv) => {
                1.0 + kv
                    .iter()
                    .map(|(k, v)| k.depth().max(v.depth()))
                    .fold(0.0, f64::max)
            }
            Spec::Nest(n, _, x) => *n as f64 + x.depth(),
            Spec::Double(k, x) => *k as f64 + x.depth(),
            Spec::Wide(_, d, x) => 1.0 + if *d { 1.0 } else { 0.0 } + x.depth(),
        }
    }

    /// An upper bound on the work of a print with these limits (nodes + characters).
    pub fn cost(&self, limit: Option<usize>, plimit: Option<usize>) -> f64 {
        let l = limit.map_or(f64::INFINITY, |l| l as f64);
        let shown = |n: f64| n.min(l);
        let map_shown = |n: f64| {
            let mut e = n.min(l);
            if let Some(p) = plimit {
                e = e.min(((p / 30).max(1)) as f64);
            }
            e
        };
        let c = match self {
            Spec::Atom(..) => 40.0,
            Spec::LongStr(n, p) => {
                let chars = *n as f64 * p.len() as f64;
                plimit.map_or(chars, |p| chars.min(p as f64 * 8.0)) + 2.0
            }
            Spec::Vec(xs) | Spec::Set(xs) => {
                let k = shown(xs.len() as f64) as usize;
                1.0 + xs
                    .iter()
                    .take(k)
                    .map(|x| x.cost(limit, plimit))
                    .sum::<f64>()
            }
            Spec::Map(kv) => {
                let k = map_shown(kv.len() as f64) as usize;
                1.0 + kv
                    .iter()
                    .take(k)
                    .map(|(a, b)| a.cost(limit, plimit) + b.cost(limit, plimit))
                    .sum::<f64>()
            }
            Spec::Nest(n, w, x) => {
                let levels = (*n as f64).min(1_000.0);
                let per = if *w == 4 { 3.0 } else { 2.0 };
                levels * per + x.cost(limit, plimit)
            }
            Spec::Double(k, x) => {
                let w = shown(2.0);
                let mut c = x.cost(limit, plimit);
                for _ in 0..(*k).min(1_000) {
                    c = 1.0 + w * c;
                    if c > 1e18 {
                        break;
                    }
                }
                c
            }
            Spec::Wide(n, _, x) => 1.0 + shown(*n as f64) * (2.0 + x.cost(limit, plimit)),
        };
        c.min(1e30)
    }
}

const LIMITS: &[Option<usize>] = &[
    None,
    Some(0),
    Some(1),
    Some(2),
    Some(3),
    Some(10),
    Some(100),
];
const PLIMITS: &[Option<usize>] = &[
    None,
    Some(0),
    Some(1),
    Some(10),
    Some(30),
    Some(80),
    Some(512),
];

/// Nodes+characters a print may have to produce before its time is not checked (when a limit
/// is unset: a huge print is then what was asked for).
const PRINT_COST_CHECKED: f64 = 200_000.0;

/// A print's `limit` and `printable_limit`.
pub type PrintLimits = (Option<usize>, Option<usize>);

pub fn printer_input(data: &[u8]) -> (Spec, Vec<PrintLimits>) {
    let mut s = Src::new(data);
    let spec = gen_spec(&mut s, 4);
    let prints = (0..1 + s.below(3))
        .map(|_| (*s.pick(LIMITS), *s.pick(PLIMITS)))
        .collect();
    (spec, prints)
}

/// One `printer` input: a value built from bytes (deep, shared, wide, odd atoms) printed with
/// random limits; the print is bounded in time (when what it must show is bounded, and always
/// when both limits are set, as for what an LLM is shown), deterministic, and reads back.
pub fn run_printer(data: &[u8]) {
    let (spec, prints) = printer_input(data);
    let src = spec.program();
    let build_limits = Limits {
        fuel: 5_000_000,
        timeout_ms: 2_000,
        max_memory: 256 * 1024 * 1024,
        max_collection_size: 10_000_000,
        max_string_size: 32 * 1024 * 1024,
        ..Limits::default()
    };
    let _watch = watchdog("building and printing a value", Duration::from_secs(5));
    let state = SessionState::new(Value::empty_map());
    let (result, _ns) = run_source(&src, &state, &NoTools, &build_limits);
    if let Some(e) = &result.error {
        if e.kind.as_str() == "internal_error" {
            panic!(
                "FINDING internal_error while building: {}\n--- program ---\n{}",
                e.message,
                excerpt(&src)
            );
        }
        return;
    }
    let value = &result.value;
    for (limit, plimit) in prints {
        let cost = spec.cost(limit, plimit);
        let bounded = limit.is_some() && plimit.is_some();
        if cost > PRINT_COST_CHECKED && !bounded {
            continue; // asked for a huge text: that it takes long is expected
        }
        let budget = Duration::from_millis(2_000 + (cost.min(1e7) / 2_000.0) as u64);
        let started = Instant::now();
        let (text, truncated) = to_clojure(value, limit, plimit);
        check_time(
            &format!("to_clojure(limit {limit:?}, printable_limit {plimit:?}) of a value with print cost {cost:e}"),
            started,
            budget,
            &src,
        );
        if limit.is_none() && plimit.is_none() && spec.depth() < 900.0 {
            assert!(
                !truncated,
                "FINDING unlimited print says truncated\n--- program ---\n{}",
                excerpt(&src)
            );
            if cost < 1e6 {
                let (again, _) = to_clojure(value, None, None);
                assert_eq!(
                    text,
                    again,
                    "FINDING print is not deterministic\n--- program ---\n{}",
                    excerpt(&src)
                );
            }
            if spec.readable() && spec.depth() < 500.0 {
                match read_with_limit(&text, 512) {
                    Ok(forms) => assert_eq!(
                        forms.len(),
                        1,
                        "FINDING printed value reads back as {} forms\n--- printed ---\n{}\n--- program ---\n{}",
                        forms.len(),
                        excerpt(&text),
                        excerpt(&src)
                    ),
                    Err(e) => panic!(
                        "FINDING printed value does not read back: {}\n--- printed ---\n{}\n--- program ---\n{}",
                        e.message,
                        excerpt(&text),
                        excerpt(&src)
                    ),
                }
            }
        }
        drop(text);
    }
    // within an exact token budget: the count never passes it, however the value is shaped
    for max_tokens in [1usize, 9, 64, 600] {
        let started = Instant::now();
        let opts = _core::print::format::PrintOpts {
            limit: None,
            printable_limit: None,
            hide_private: false,
        };
        let budget = _core::print::budget::Budget {
            max_tokens,
            encoding: "o200k_base",
            hide_private: false,
            root: Some("*1"),
        };
        let Some((text, _)) = _core::print::budget::print_within(&value, opts, &budget) else {
            panic!("FINDING print_within refused o200k_base");
        };
        check_time(
            &format!("print_within({max_tokens} tokens)"),
            started,
            Duration::from_secs(3),
            &src,
        );
        let n = _core::print::tokens::count_tokens(&text, "o200k_base").unwrap_or(usize::MAX);
        assert!(
            n <= max_tokens,
            "FINDING {n} tokens printed within a budget of {max_tokens}\n--- printed ---\n{}\n--- program ---\n{}",
            excerpt(&text),
            excerpt(&src)
        );
    }
    let started = Instant::now();
    drop(result);
    check_time(
        "dropping the printed value",
        started,
        Duration::from_secs(2),
        &src,
    );
}

// ---------------------------------------------------------------------------------------------
// json
// ---------------------------------------------------------------------------------------------

const JSON_NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1e400",
    "-1e400",
    "1e-400",
    "123456789012345678901234567890",
    "-9223372036854775809",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "0.0000000000000000000000001",
    "1.7976931348623157e308",
    "4.9e-324",
    "1E+2",
    "-0.0e-0",
    "01",
    "1.",
    ".5",
    "+1",
    "NaN",
    "Infinity",
    "1e99999999999999999999",
];
const JSON_STRINGS: &[&str] = &[
    "\"\"",
    "\"a\"",
    "\"\\u0000\"",
    "\"\\ud83d\\ude00\"",
    "\"\\ud800\"",
    "\"\\udc00\\ud800\"",
    "\"\\u00e9\"",
    "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
    "\"e\u{301}\u{301}\"",
    "\"\u{feff}\"",
    "\"\\u001f\\u007f\\u0085\\u2028\"",
    "\"_secret\"",
    "\"a b\"",
    "\"ok?\"",
    "\"a-b\"",
    "\"a/b\"",
    "\":a\"",
    "\"1\"",
    "\"\\x41\"",
    "\"\t\"",
];

/// A JSON text: deep, long, wide, with odd numbers, strings and keys.
pub fn gen_json(s: &mut Src, d: u32) -> String {
    let mut out = String::new();
    json_value(s, d, &mut out);
    out
}

fn json_value(s: &mut Src, d: u32, out: &mut String) {
    if out.len() > 4_000_000 {
        out.push('0');
        return;
    }
    let k = if d == 0 { s.below(4) } else { s.below(12) };
    match k {
        0 => out.push_str(s.pick_str(JSON_NUMBERS)),
        1 => out.push_str(s.pick_str(JSON_STRINGS)),
        2 => out.push_str(s.pick_str(&["null", "true", "false", "[]", "{}", "nul", "tru"])),
        3 => {
            let _ = write!(out, "{}", s.byte() as i64 - 128);
        }
        4 | 5 => {
            out.push('[');
            for i in 0..s.below(5) {
                if i > 0 {
                    out.push(',');
                }
                json_value(s, d - 1, out);
            }
            out.push(']');
        }
        6 | 7 => {
            out.push('{');
            for i in 0..s.below(5) {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(s.pick_str(JSON_STRINGS));
                out.push(':');
                json_value(s, d - 1, out);
            }
            out.push('}');
        }
        8 => {
            // deep nesting
            let n = s.size_max(200_000) as usize;
            let obj = s.chance(50);
            for _ in 0..n {
                out.push_str(if obj { "{\"a\":" } else { "[" });
            }
            json_value(s, 0, out);
            for _ in 0..n {
                out.push(if obj { '}' } else { ']' });
            }
        }
        9 => {
            // long array
            let n = s.size_max(200_000) as usize;
            let mut item = String::new();
            json_value(s, d - 1, &mut item);
            out.push('[');
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&item);
                if out.len() > 4_000_000 {
                    break;
                }
            }
            out.push(']');
        }
        10 => {
            // wide object with many distinct keys (the string interner's cap is 65,536)
            let n = s.size_max(200_000) as usize;
            out.push('{');
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                let _ = write!(out, "\"k{i}\":\"s{i}\"");
                if out.len() > 4_000_000 {
                    break;
                }
            }
            out.push('}');
        }
        _ => {
            // a long string
            let n = s.size_max(1_000_000) as usize;
            let piece = s.pick_str(&["a", "\\n", "\\u00e9", "é", "\\ud83d\\ude00"]);
            out.push('"');
            for _ in 0..n {
                out.push_str(piece);
                if out.len() > 4_000_000 {
                    break;
                }
            }
            out.push('"');
        }
    }
}

pub fn json_input(data: &[u8]) -> String {
    let json_start = matches!(
        data.first(),
        Some(
            b' ' | b'\t' | b'\r' | b'\n' | b'{' | b'[' | b'"' | b'-' | b'0'
                ..=b'9' | b't' | b'f' | b'n' | 0xEF
        )
    );
    if json_start {
        return String::from_utf8_lossy(data).into_owned();
    }
    let mut s = Src::new(data.get(1..).unwrap_or(&[]));
    let mut out = String::new();
    match s.below(8) {
        0 => out.push('\u{feff}'),
        1 => out.push_str(" \t\r\n"),
        _ => {}
    }
    json_value(&mut s, 4, &mut out);
    match s.below(8) {
        0 => out.push_str(" \n"),
        1 => out.push_str(" x"),
        2 => out.push_str(",1"),
        _ => {}
    }
    out
}

/// One `json` input: parsing is bounded and never panics; the value prints (bounded,
/// deterministic), reads back when it has no escaped control characters, and serves as data.
pub fn run_json(data: &[u8]) {
    let text = json_input(data);
    let budget = Duration::from_millis(1_000 + text.len() as u64 / 1_000);
    let _watch = watchdog("loading and printing JSON", budget * 3);
    let started = Instant::now();
    let parsed = from_json(&text);
    check_time("from_json", started, budget, &text);
    // read by two threads whatever its length: the same value, or the same message
    let split = _core::data::json::from_json_split(&text, "data", 0);
    let same = match (&parsed, &split) {
        // printed only when unequal: a NaN is not equal to itself
        (Ok(a), Ok(b)) => a == b || to_clojure(a, None, None) == to_clojure(b, None, None),
        (Err(a), Err(b)) => a.message == b.message && a.kind == b.kind,
        _ => false,
    };
    assert!(
        same,
        "FINDING two-thread JSON reading differs: {:?} vs {:?}\n--- json ---\n{}",
        parsed
            .as_ref()
            .map(|v| to_clojure(v, Some(10), Some(200)).0),
        split.as_ref().map(|v| to_clojure(v, Some(10), Some(200)).0),
        excerpt(&text)
    );
    let value = match parsed {
        Ok(v) => v,
        Err(e) => {
            assert!(
                e.kind.as_str() != "internal_error",
                "FINDING internal_error: {}",
                e.message
            );
            return;
        }
    };
    let started = Instant::now();
    let (short, _) = to_clojure(&value, Some(10), Some(512));
    let (full, truncated) = to_clojure(&value, None, None);
    check_time("printing the JSON value", started, budget, &text);
    std::hint::black_box(short);
    if !full.contains("...") {
        assert!(
            !truncated,
            "FINDING unlimited print says truncated\n--- json ---\n{}",
            excerpt(&text)
        );
    }
    let (again, _) = to_clojure(&value, None, None);
    assert_eq!(
        full,
        again,
        "FINDING print is not deterministic\n--- json ---\n{}",
        excerpt(&text)
    );
    if !full.contains("\\u") && !full.contains("##") && !truncated {
        // a JSON value may nest up to MAX_JSON_DEPTH levels, deeper than a program's default
        // max_nesting: it must read back under the nesting it has, not the default
        if let Err(e) = read_with_limit(&full, _core::data::json::MAX_JSON_DEPTH + 1) {
            panic!(
                "FINDING printed JSON value does not read back: {}\n--- printed ---\n{}\n--- json ---\n{}",
                e.message,
                excerpt(&full),
                excerpt(&text)
            );
        }
    }
    // the value as a run's data (a map becomes the data namespace)
    let limits = fuzz_limits();
    check_program(
        "[(count (str data/a)) (= data/a data/a) (get-in data/a [0 0]) (frequencies (vals data/k0))]",
        value,
        &limits,
    );
}
