//! Date-time interop (§7.16) and the float constants. Dates are days since the epoch;
//! date-times are UTC milliseconds. The clock is the only non-determinism in the language.

use super::{type_error, Builtin};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::Value;

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn valid_date(y: i64, m: u32, d: u32) -> bool {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    (1..=12).contains(&m) && d >= 1 && d <= days[(m - 1) as usize]
}

fn num(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `YYYY-MM-DD` -> days since the epoch.
fn parse_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (y, m, d) = (num(&s[0..4])? as i64, num(&s[5..7])?, num(&s[8..10])?);
    valid_date(y, m, d).then(|| days_from_civil(y, m, d))
}

/// `HH:MM:SS[.fff]` -> milliseconds of the day.
fn parse_time(s: &str) -> Option<i64> {
    let (hms, frac) = match s.split_once('.') {
        Some((a, f)) => (a, Some(f)),
        None => (s, None),
    };
    let parts: Vec<&str> = hms.split(':').collect();
    if parts.len() != 3 && parts.len() != 2 {
        return None;
    }
    let h = num(parts[0])? as i64;
    let mi = num(parts[1])? as i64;
    let sec = if parts.len() == 3 {
        num(parts[2])? as i64
    } else {
        0
    };
    if h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let ms = match frac {
        Some(f) if !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()) => {
            let digits: String = f.chars().chain(std::iter::repeat('0')).take(3).collect();
            digits.parse::<i64>().ok()?
        }
        Some(_) => return None,
        None => 0,
    };
    Some(((h * 60 + mi) * 60 + sec) * 1000 + ms)
}

/// ISO-8601 date-time with `Z` or `±HH:MM` offset -> UTC milliseconds.
fn parse_iso(s: &str) -> Option<i64> {
    let (date, rest) = s.split_once(['T', ' '])?;
    let days = parse_date(date)?;
    let (time, offset_ms) = if let Some(t) = rest.strip_suffix('Z') {
        (t, 0)
    } else {
        let i = rest.rfind(['+', '-'])?;
        let (t, off) = rest.split_at(i);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let off = off[1..].replace(':', "");
        if off.len() != 4 {
            return None;
        }
        let (oh, om) = (num(&off[0..2])? as i64, num(&off[2..4])? as i64);
        (t, sign * (oh * 60 + om) * 60_000)
    };
    Some(days * 86_400_000 + parse_time(time)? - offset_ms)
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];

/// `Sat, 4 May 2031 06:07:08 +0200` (weekday optional, zone ignored) -> milliseconds.
fn parse_rfc2822(s: &str) -> Option<i64> {
    let s = match s.split_once(',') {
        Some((_, rest)) => rest,
        None => s,
    };
    let parts: Vec<&str> = s.split_whitespace().collect();
    if parts.len() < 4 {
        return None;
    }
    let d = num(parts[0])?;
    let m = MONTHS
        .iter()
        .position(|x| parts[1].to_ascii_lowercase().starts_with(x))? as u32
        + 1;
    let y = num(parts[2])? as i64;
    if !valid_date(y, m, d) {
        return None;
    }
    Some(days_from_civil(y, m, d) * 86_400_000 + parse_time(parts[3])?)
}

fn date_new(it: &mut Interp, a: &mut [Value]) -> EvalResult {
    let Some(arg) = a.first() else {
        // the host's clock, recorded: a resumed run reads the same instant
        return Ok(Value::DateTime(it.clock_ms()?));
    };
    match arg {
        Value::Int(n) => {
            let ms = if n.unsigned_abs() < 1_000_000_000_000 {
                n.checked_mul(1000)
            } else {
                Some(*n)
            };
            ms.map(Value::DateTime)
                .ok_or_else(|| Error::exec(format!("timestamp {n} is out of range")).into())
        }
        Value::Str(s) => {
            let t = s.trim();
            let ms = parse_iso(t)
                .or_else(|| parse_date(t).map(|d| d * 86_400_000))
                .or_else(|| parse_rfc2822(t));
            ms.map(Value::DateTime).ok_or_else(|| {
                Error::exec(format!("cannot parse date {:?}", s.as_str()))
                    .with_hint("use ISO-8601 such as 2031-05-04T06:07:08Z, YYYY-MM-DD, or RFC 2822 such as Sat, 4 May 2031 06:07:08 +0200")
                    .into()
            })
        }
        other => Err(type_error("java.util.Date.", "a timestamp or a date string", other).into()),
    }
}

fn get_time(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::DateTime(ms) => Ok(Value::Int(*ms)),
        other => Err(type_error(".getTime", "a date-time (from java.util.Date.)", other).into()),
    }
}

fn current_millis(it: &mut Interp, _: &mut [Value]) -> EvalResult {
    Ok(Value::Int(it.clock_ms()?))
}

fn local_date_parse(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    match &a[0] {
        Value::Str(s) => match parse_date(s) {
            Some(d) if i32::try_from(d).is_ok() => Ok(Value::Date(d as i32)),
            _ => Err(Error::exec(format!(
                "cannot parse date {:?}: expected YYYY-MM-DD",
                s.as_str()
            ))
            .into()),
        },
        other => Err(type_error("java.time.LocalDate/parse", "a string", other).into()),
    }
}

fn unreachable_constant(_: &mut Interp, _: &mut [Value]) -> EvalResult {
    Ok(Value::Nil)
}

const fn constant(name: &'static str, c: fn() -> Value, doc: &'static str) -> Builtin {
    Builtin {
        name,
        min: 0,
        max: 0,
        f: unreachable_constant,
        doc,
        constant: Some(c),
    }
}

fn pos_inf() -> Value {
    Value::Float(f64::INFINITY)
}
fn neg_inf() -> Value {
    Value::Float(f64::NEG_INFINITY)
}
fn nan() -> Value {
    Value::Float(f64::NAN)
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new("java.util.Date.", 0, 1, date_new, "(java.util.Date.) now; (java.util.Date. x) from Unix seconds/milliseconds or a date string."),
    Builtin::new(".getTime", 1, 1, get_time, "(.getTime d): Unix milliseconds of a date-time."),
    Builtin::new("System/currentTimeMillis", 0, 0, current_millis, "Current Unix time in milliseconds."),
    Builtin::new("currentTimeMillis", 0, 0, current_millis, "Current Unix time in milliseconds."),
    Builtin::new("java.time.LocalDate/parse", 1, 1, local_date_parse, "(java.time.LocalDate/parse \"2031-05-04\"): a date."),
    Builtin::new("parse", 1, 1, local_date_parse, "Same as java.time.LocalDate/parse."),
    constant("Double/POSITIVE_INFINITY", pos_inf, "Positive infinity."),
    constant("POSITIVE_INFINITY", pos_inf, "Positive infinity."),
    constant("Double/NEGATIVE_INFINITY", neg_inf, "Negative infinity."),
    constant("NEGATIVE_INFINITY", neg_inf, "Negative infinity."),
    constant("Double/NaN", nan, "Not a number."),
    constant("NaN", nan, "Not a number."),
];
