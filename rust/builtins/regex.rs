//! Regular expressions (§7.11) on the `regex` crate: linear-time matching (no backtracking), so
//! no pattern can hang a run; pattern length and compiled size are bounded.

use std::sync::{Arc, OnceLock};

use super::{type_error, Builtin};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::regex_search::{Groups, Pattern};
use crate::value::{RegexValue, Value};

pub const MAX_PATTERN_BYTES: usize = 256;
const SIZE_LIMIT: usize = 1 << 20;

fn compile(src: &str) -> Result<Pattern, Error> {
    Pattern::new(src, SIZE_LIMIT).map_err(|e| match e {
        regex::Error::CompiledTooBig(_) => {
            Error::exec("Regex too complex: its compiled form exceeds the size limit")
        }
        other => {
            let text = other.to_string();
            let reason = text.lines().last().unwrap_or(&text).trim();
            let reason = reason.strip_prefix("error: ").unwrap_or(reason);
            // The parser's message draws a caret under the offending position.
            let caret = text.lines().find(|l| l.trim_start().starts_with('^'));
            let pos = caret.map(|l| l.find('^').unwrap_or(4).saturating_sub(4));
            let msg = match pos {
                Some(p) => format!("Invalid regex at position {p}: {reason}"),
                None => format!("Invalid regex: {reason}"),
            };
            Error::exec(msg).with_hint("the syntax is RE2-style: no backreferences or lookaround")
        }
    })
}

/// Compiles `src` as work of the run: a compile of a Unicode-heavy pattern takes milliseconds
/// (`\w{20}`: about 20 ms) for one evaluation step, so a loop of compiles is charged by the
/// pattern's size and checks the deadline, `cancel()` and Ctrl-C after each.
fn compile_in_run(it: &mut Interp, src: &str) -> Result<Pattern, crate::eval::Flow> {
    let pattern = compile(src)?;
    it.charge(pattern.states())?;
    it.check_time()?;
    Ok(pattern)
}

fn re_pattern(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let src = match &a[0] {
        Value::Str(s) => s,
        Value::Regex(_) => return Ok(std::mem::take(&mut a[0])),
        other => return Err(type_error("re-pattern", "a string", other).into()),
    };
    if src.len() > MAX_PATTERN_BYTES {
        return Err(Error::exec(format!(
            "regex pattern of {} bytes exceeds the limit of {MAX_PATTERN_BYTES} bytes",
            src.len()
        ))
        .into());
    }
    let regex = compile_in_run(it, src)?;
    Ok(Value::Regex(Arc::new(RegexValue {
        source: src.to_string(),
        regex,
        anchored: OnceLock::new(),
    })))
}

fn args<'v>(fname: &str, a: &'v [Value]) -> Result<(&'v RegexValue, &'v str), Error> {
    let re = match &a[0] {
        Value::Regex(r) => r,
        Value::Str(_) => {
            return Err(type_error(fname, "a regex", &a[0])
                .with_hint(format!("build it first: ({fname} (re-pattern \"...\") s)")))
        }
        other => return Err(type_error(fname, "a regex", other)),
    };
    let s = match &a[1] {
        Value::Str(s) => s.as_ref(),
        other => return Err(type_error(fname, "a string", other)),
    };
    Ok((re, s))
}

/// The first match of `re` in `s` as a value. Without groups only the match's bounds are
/// needed, which the regex crate finds with its fast engines; groups need the slower one.
fn first_match(re: &Pattern, s: &str) -> Result<Value, Error> {
    if re.is_small(s.len()) {
        let re = &re.regex;
        if re.captures_len() == 1 {
            return Ok(re.find(s).map_or(Value::Nil, |m| Value::str(m.as_str())));
        }
        return Ok(re.captures(s).map_or(Value::Nil, |c| match_value(re, &c)));
    }
    let mut out = Value::Nil;
    re.each_large::<Error>(s, true, true, |g| {
        out = groups_value(re, s, &g);
        Ok(())
    })?;
    Ok(out)
}

fn match_value(re: &regex::Regex, caps: &regex::Captures<'_>) -> Value {
    if re.captures_len() == 1 {
        return Value::str(caps.get(0).map_or("", |m| m.as_str()));
    }
    Value::vector(
        caps.iter()
            .map(|g| g.map_or(Value::Nil, |m| Value::str(m.as_str())))
            .collect(),
    )
}

/// A match found by the large-input search, as `match_value` makes it.
fn groups_value(re: &Pattern, s: &str, g: &Groups) -> Value {
    let text =
        |span: &Option<(usize, usize)>| span.map_or(Value::Nil, |(a, b)| Value::str(&s[a..b]));
    if re.captures_len() == 1 {
        return g.first().map_or(Value::str(""), text);
    }
    Value::vector(g.iter().map(text).collect())
}

fn re_find(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (re, s) = args("re-find", a)?;
    Ok(first_match(&re.regex, s)?)
}

fn re_matches(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (re, s) = args("re-matches", a)?;
    let anchored = match re.anchored.get() {
        Some(r) => r,
        None => {
            let r = compile_in_run(it, &format!("^(?:{})$", re.source))?;
            re.anchored.get_or_init(|| r)
        }
    };
    Ok(first_match(anchored, s)?)
}

fn re_seq(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (re, s) = args("re-seq", a)?;
    let pattern = &re.regex;
    let mut out = Vec::new();
    if !pattern.is_small(s.len()) {
        pattern.each_large(s, false, true, |g| {
            it.push_value(&mut out, groups_value(pattern, s, &g))
        })?;
        return Ok(Value::vector(out));
    }
    let regex = &pattern.regex;
    if regex.captures_len() == 1 {
        for m in regex.find_iter(s) {
            it.push_value(&mut out, Value::str(m.as_str()))?;
        }
    } else {
        for c in regex.captures_iter(s) {
            it.push_value(&mut out, match_value(regex, &c))?;
        }
    }
    Ok(Value::vector(out))
}

fn re_split(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (re, s) = args("re-split", a)?;
    let pattern = &re.regex;
    let mut out = Vec::new();
    let mut last = 0;
    if !pattern.is_small(s.len()) {
        pattern.each_large::<crate::eval::Flow>(s, false, true, |g| {
            let Some(Some((start, end))) = g.first().copied() else {
                return Ok(());
            };
            it.push_value(&mut out, Value::str(&s[last..start]))?;
            for (a, b) in g.iter().skip(1).flatten() {
                it.push_value(&mut out, Value::str(&s[*a..*b]))?;
            }
            last = end;
            Ok(())
        })?;
        it.push_value(&mut out, Value::str(&s[last..]))?;
        return Ok(Value::vector(out));
    }
    for c in pattern.regex.captures_iter(s) {
        let Some(m) = c.get(0) else { continue };
        it.push_value(&mut out, Value::str(&s[last..m.start()]))?;
        for g in c.iter().skip(1).flatten() {
            it.push_value(&mut out, Value::str(g.as_str()))?;
        }
        last = m.end();
    }
    it.push_value(&mut out, Value::str(&s[last..]))?;
    Ok(Value::vector(out))
}

fn is_regex(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Bool(matches!(a[0], Value::Regex(_))))
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new(
        "re-pattern",
        1,
        1,
        re_pattern,
        "Compile a string to a regex.",
    ),
    Builtin::new(
        "re-find",
        2,
        2,
        re_find,
        "(re-find re s): the first match (with groups: [whole g1 ...]) or nil.",
    ),
    Builtin::new(
        "re-matches",
        2,
        2,
        re_matches,
        "Like re-find, but the match must span the whole string.",
    ),
    Builtin::new("re-seq", 2, 2, re_seq, "All non-overlapping matches."),
    Builtin::new(
        "re-split",
        2,
        2,
        re_split,
        "Pieces of s between matches (groups inserted between).",
    ),
    Builtin::new("regex?", 1, 1, is_regex, "true for regex values."),
];
