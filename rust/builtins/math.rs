//! Arithmetic (§7.12). Integers are exact i64: an overflow is an `arithmetic_error`, never a
//! wrap and never a silent float. A float operation on finite inputs with a non-finite result is
//! also an error; infinities and NaN only come from division by zero and the special constants.

use super::{type_error, Builtin, VARIADIC};
use crate::error::Error;
use crate::eval::{EvalResult, Interp};
use crate::value::Value;

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

impl Num {
    fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }
    fn value(self) -> Value {
        match self {
            Num::I(i) => Value::Int(i),
            Num::F(f) => Value::Float(f),
        }
    }
}

fn num(fname: &str, v: &Value) -> Result<Num, Error> {
    match v {
        Value::Int(i) => Ok(Num::I(*i)),
        Value::Float(f) => Ok(Num::F(*f)),
        other => {
            let mut e = type_error(fname, "a number", other);
            if let Value::Str(s) = other {
                if s.trim().parse::<f64>().is_ok() {
                    e = e.with_hint("convert text first with (parse-long s) or (parse-double s)");
                }
            }
            if matches!(other, Value::Vector(_)) && matches!(fname, "max" | "min" | "+") {
                e = e.with_hint(format!(
                    "to apply {fname} to a collection write (apply {fname} coll)"
                ));
            }
            Err(e)
        }
    }
}

fn overflow(op: &str, a: i64, b: i64) -> Error {
    Error::arith(format!(
        "integer overflow: ({op} {a} {b}) does not fit in 64 bits"
    ))
    .with_hint("use floats for very large values, e.g. (* 1.0 a b)")
}

fn float_result(op: &str, a: f64, b: f64, r: f64) -> Result<Num, Error> {
    if !r.is_finite() && a.is_finite() && b.is_finite() {
        let (a, b) = (crate::format::float_repr(a), crate::format::float_repr(b));
        return Err(Error::arith(format!(
            "float overflow: ({op} {a} {b}) is not finite"
        )));
    }
    Ok(Num::F(r))
}

fn arith(op: &str, a: Num, b: Num) -> Result<Num, Error> {
    match (a, b) {
        (Num::I(x), Num::I(y)) => {
            let r = match op {
                "+" => x.checked_add(y),
                "-" => x.checked_sub(y),
                _ => x.checked_mul(y),
            };
            r.map(Num::I).ok_or_else(|| overflow(op, x, y))
        }
        _ => {
            let (x, y) = (a.f(), b.f());
            let r = match op {
                "+" => x + y,
                "-" => x - y,
                _ => x * y,
            };
            float_result(op, x, y, r)
        }
    }
}

fn fold(op: &'static str, identity: i64, args: &mut [Value]) -> EvalResult {
    if args.len() == 1 && op != "-" {
        // (+ x) and (* x) return x unchanged, as Clojure does
        return Ok(std::mem::take(&mut args[0]));
    }
    let mut acc = Num::I(identity);
    for (i, a) in args.iter().enumerate() {
        let n = num(op, a)?;
        acc = if i == 0 { n } else { arith(op, acc, n)? };
    }
    Ok(acc.value())
}

fn add(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    fold("+", 0, args)
}

fn mul(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    fold("*", 1, args)
}

fn sub(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    match args.len() {
        0 => Ok(Value::Int(0)),
        1 => match num("-", &args[0])? {
            Num::I(i) => i.checked_neg().map(Value::Int).ok_or_else(|| {
                Error::arith(format!("integer overflow: (- {i}) does not fit in 64 bits")).into()
            }),
            Num::F(f) => Ok(Value::Float(-f)),
        },
        _ => fold("-", 0, args),
    }
}

fn div(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    let mut acc = num("/", &args[0])?.f();
    if args.len() == 1 {
        return Ok(Value::Float(if acc == 0.0 {
            f64::INFINITY
        } else {
            1.0 / acc
        }));
    }
    for a in &args[1..] {
        let d = num("/", a)?.f();
        if d == 0.0 {
            // a zero divisor (either sign) gives +inf, -inf or NaN by the dividend's sign
            acc = if acc > 0.0 {
                f64::INFINITY
            } else if acc < 0.0 {
                f64::NEG_INFINITY
            } else {
                f64::NAN
            };
            continue;
        }
        let r = acc / d;
        if !r.is_finite() && acc.is_finite() && d.is_finite() {
            let (x, y) = (crate::format::float_repr(acc), crate::format::float_repr(d));
            return Err(Error::arith(format!("float overflow: (/ {x} {y}) is not finite")).into());
        }
        acc = r;
    }
    Ok(Value::Float(acc))
}

fn mod_rem(fname: &str, args: &[Value], floored: bool) -> EvalResult {
    let (a, b) = (num(fname, &args[0])?, num(fname, &args[1])?);
    match (a, b) {
        (Num::I(_), Num::I(0)) => {
            Err(Error::arith(format!("({fname} x 0): division by zero")).into())
        }
        (Num::I(x), Num::I(y)) => {
            let r = if floored {
                x.checked_rem_euclid(y)
                    .map(|r| if r != 0 && y < 0 { r + y } else { r })
            } else {
                x.checked_rem(y)
            };
            Ok(Value::Int(r.unwrap_or(0)))
        }
        _ => {
            let (x, y) = (a.f(), b.f());
            if y == 0.0 && !x.is_nan() {
                return Err(Error::arith(format!("({fname} x 0): division by zero")).into());
            }
            if x.is_infinite() || y.is_infinite() || x.is_nan() || y.is_nan() {
                return Ok(Value::Float(f64::NAN));
            }
            let r = x % y;
            Ok(Value::Float(
                if floored && r != 0.0 && (r < 0.0) != (y < 0.0) {
                    r + y
                } else {
                    r
                },
            ))
        }
    }
}

fn modulo(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    mod_rem("mod", args, true)
}

fn rem(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    mod_rem("rem", args, false)
}

fn inc(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    match num("inc", &args[0])? {
        Num::I(i) => i
            .checked_add(1)
            .map(Value::Int)
            .ok_or_else(|| overflow("+", i, 1).into()),
        Num::F(f) => Ok(Value::Float(f + 1.0)),
    }
}

fn dec(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    match num("dec", &args[0])? {
        Num::I(i) => i
            .checked_sub(1)
            .map(Value::Int)
            .ok_or_else(|| overflow("-", i, 1).into()),
        Num::F(f) => Ok(Value::Float(f - 1.0)),
    }
}

fn abs(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    match num("abs", &args[0])? {
        Num::I(i) => i.checked_abs().map(Value::Int).ok_or_else(|| {
            Error::arith(format!(
                "integer overflow: (abs {i}) does not fit in 64 bits"
            ))
            .into()
        }),
        Num::F(f) => Ok(Value::Float(f.abs())),
    }
}

fn extreme(fname: &str, args: &mut [Value], want_max: bool) -> EvalResult {
    if args.len() == 1 && !matches!(args[0], Value::Int(_) | Value::Float(_)) {
        let e = type_error(fname, "numbers", &args[0]);
        return Err(if matches!(args[0], Value::Vector(_) | Value::Set(_)) {
            e.with_hint(format!(
                "(apply {fname} coll) takes the {fname} of a collection"
            ))
        } else {
            e
        }
        .into());
    }
    let mut best = 0;
    let mut best_n = num(fname, &args[0])?;
    for (i, a) in args.iter().enumerate().skip(1) {
        let n = num(fname, a)?;
        if n.f().is_nan() {
            return Ok(Value::Float(f64::NAN));
        }
        let better = match crate::value::num_cmp(&n.value(), &best_n.value()) {
            Some(o) => {
                if want_max {
                    o.is_gt()
                } else {
                    o.is_lt()
                }
            }
            None => false,
        };
        if better {
            best = i;
            best_n = n;
        }
    }
    if best_n.f().is_nan() {
        return Ok(Value::Float(f64::NAN));
    }
    Ok(std::mem::take(&mut args[best]))
}

fn max(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    extreme("max", args, true)
}

fn min(_: &mut Interp, args: &mut [Value]) -> EvalResult {
    extreme("min", args, false)
}

pub const BUILTINS: &[Builtin] = &[
    Builtin::new("+", 0, VARIADIC, add, "Sum of numbers; (+) is 0."),
    Builtin::new(
        "-",
        0,
        VARIADIC,
        sub,
        "(- x) negates; (- x y ...) subtracts left to right.",
    ),
    Builtin::new("*", 0, VARIADIC, mul, "Product of numbers; (*) is 1."),
    Builtin::new(
        "/",
        1,
        VARIADIC,
        div,
        "Division, always a float: (/ 12 4) is 3.0.",
    ),
    Builtin::new("mod", 2, 2, modulo, "Floored modulus, sign of the divisor."),
    Builtin::new(
        "rem",
        2,
        2,
        rem,
        "Truncated remainder, sign of the dividend.",
    ),
    Builtin::new("inc", 1, 1, inc, "x + 1"),
    Builtin::new("dec", 1, 1, dec, "x - 1"),
    Builtin::new("abs", 1, 1, abs, "Absolute value, type preserved."),
    Builtin::new(
        "max",
        1,
        VARIADIC,
        max,
        "Greatest argument; (apply max coll) for a collection.",
    ),
    Builtin::new(
        "min",
        1,
        VARIADIC,
        min,
        "Least argument; (apply min coll) for a collection.",
    ),
];

// ---- rounding, conversion and powers ----

fn to_int_checked(fname: &str, f: f64) -> Result<Value, Error> {
    if !f.is_finite() {
        return Err(Error::arith(format!(
            "({fname} {}) has no integer value",
            crate::format::float_repr(f)
        )));
    }
    if !(-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&f) {
        return Err(Error::arith(format!(
            "({fname} {f}) does not fit in a 64-bit integer"
        )));
    }
    Ok(Value::Int(f as i64))
}

fn rounding(fname: &str, a: &[Value], op: fn(f64) -> f64) -> EvalResult {
    match num(fname, &a[0])? {
        Num::I(i) => Ok(Value::Int(i)),
        Num::F(f) if !f.is_finite() => Ok(Value::Float(f)),
        Num::F(f) => Ok(to_int_checked(fname, op(f))?),
    }
}

fn floor(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    rounding("floor", a, f64::floor)
}

fn ceil(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    rounding("ceil", a, f64::ceil)
}

fn round(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    // f64::round rounds halves away from zero, as the reference requires
    rounding("round", a, f64::round)
}

fn trunc(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    rounding("trunc", a, f64::trunc)
}

fn double(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Float(num("double", &a[0])?.f()))
}

fn int(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    match num("int", &a[0])? {
        Num::I(i) => Ok(Value::Int(i)),
        Num::F(f) => Ok(to_int_checked("int", f.trunc())?),
    }
}

fn sqrt(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    Ok(Value::Float(num("sqrt", &a[0])?.f().sqrt()))
}

fn pow(_: &mut Interp, a: &mut [Value]) -> EvalResult {
    let (x, y) = (num("pow", &a[0])?.f(), num("pow", &a[1])?.f());
    if y == 0.0 {
        return Ok(Value::Float(1.0));
    }
    let r = x.powf(y);
    if r.is_nan() && !x.is_nan() && !y.is_nan() {
        return Err(Error::arith(format!("(pow {x} {y}) is not a real number")).into());
    }
    if r.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(Error::arith(format!("(pow {x} {y}) overflows")).into());
    }
    Ok(Value::Float(r))
}

pub const MATH_FNS: &[Builtin] = &[
    Builtin::new(
        "floor",
        1,
        1,
        floor,
        "Round toward negative infinity, as an integer.",
    ),
    Builtin::new(
        "ceil",
        1,
        1,
        ceil,
        "Round toward positive infinity, as an integer.",
    ),
    Builtin::new(
        "round",
        1,
        1,
        round,
        "Nearest integer, halves away from zero.",
    ),
    Builtin::new("trunc", 1, 1, trunc, "Round toward zero, as an integer."),
    Builtin::new("double", 1, 1, double, "Convert to float."),
    Builtin::new("float", 1, 1, double, "Convert to float (alias of double)."),
    Builtin::new("int", 1, 1, int, "Truncate toward zero to an integer."),
    Builtin::new(
        "sqrt",
        1,
        1,
        sqrt,
        "Square root as a float; negative gives NaN.",
    ),
    Builtin::new("pow", 2, 2, pow, "x to the power y, as a float."),
];
