"""Arithmetic, math and comparison (LANGUAGE.md §7.12), integers and floats of §3 (exactness,
overflow ⇒ arithmetic_error, special values), the natural order of §3 (`compare`, `sort`) and
float printing: `str` (§7.9 display form) and the printer (§9.1) write the shortest text that
reads back to the same float.

Expected values are written from LANGUAGE.md. Results are compared through their Clojure printed
form (``show``), so `3` and `3.0` differ and NaN/∞ print as `##NaN`/`##Inf`/`##-Inf`.
"""

from __future__ import annotations

import math
import random
import struct
from decimal import Decimal

import ptc
import pytest
from lang_helpers import cases, err, ev
from lang_helpers import show_printed as show

# --------------------------------------------------------------------------- helpers


INF = "Double/POSITIVE_INFINITY"
NINF = "Double/NEGATIVE_INFINITY"
NAN = "Double/NaN"
I64_MAX = 2**63 - 1
I64_MIN = -(2**63)

# --------------------------------------------------------------------------- happy paths

# (program, printed result)
ARITHMETIC_CASES = cases("math", "ARITHMETIC_CASES")


@pytest.mark.parametrize(("src", "expected"), ARITHMETIC_CASES)
def test_arithmetic(src: str, expected: str) -> None:
    """§7.12 table: exact integer results, float when mixed, the rows' documented edge cases."""
    assert show(src) == expected


def test_result_types() -> None:
    """§3/§7.12: integers stay Python ints, floats stay floats (no silent conversion)."""
    assert type(ev("(+ 1 2)")) is int
    assert type(ev("(+ 1 2.0)")) is float
    assert type(ev("(/ 4 2)")) is float
    assert type(ev("(floor 2.5)")) is int
    assert type(ev("(round 2.5)")) is int
    assert type(ev("(int 2.5)")) is int
    assert type(ev("(sqrt 4)")) is float
    assert type(ev("(pow 2 2)")) is float
    assert type(ev("(mod 7 2)")) is int
    assert type(ev("(mod 7.0 2)")) is float
    assert type(ev("(abs -2)")) is int


# --------------------------------------------------------------------------- special values

SPECIAL_CASES = cases("math", "SPECIAL_CASES")


@pytest.mark.parametrize(("src", "expected"), SPECIAL_CASES)
def test_special_values(src: str, expected: str) -> None:
    """§7.12 "Special values": NaN propagation, ∞ sign rules, unchanged specials."""
    assert show(src) == expected


@pytest.mark.parametrize(
    "src",
    [f"(int {NAN})", f"(int {INF})", f"(int {NINF})"],
)
def test_int_of_special_value(src: str) -> None:
    """§7.12: `int` of a special value ⇒ arithmetic_error."""
    e = err(src)
    assert e.type == "arithmetic_error", (e.type, e.message)
    assert "int" in e.message


# --------------------------------------------------------------------------- overflow

OVERFLOW_CASES: list[str] = [
    # integers: never wrap, never silently become a float (§3)
    f"(+ {I64_MAX} 1)",
    f"(+ 1 {I64_MAX})",
    f"(+ {I64_MAX} {I64_MAX})",
    f"(+ 1 2 {I64_MAX})",
    f"(- {I64_MIN} 1)",
    f"(- 0 {I64_MIN})",
    f"(- {I64_MIN})",
    f"(* {I64_MAX} 2)",
    "(* 4611686018427387904 2)",
    f"(* -1 {I64_MIN})",
    "(* 3037000500 3037000500)",
    f"(inc {I64_MAX})",
    f"(dec {I64_MIN})",
    f"(abs {I64_MIN})",
    f"(reduce + [{I64_MAX} 1])",
    f"(apply * [{I64_MAX} {I64_MAX}])",
    # float → integer conversions whose result does not fit
    "(floor 1e300)",
    "(ceil -1e300)",
    "(round 1e20)",
    "(trunc 1e19)",
    "(int 1e30)",
    "(int -1e19)",
    "(int 9.223372036854775807E18)",  # this float is 2^63: one past the largest integer
    "(ceil 9.223372036854775807E18)",
    # float overflow: finite operands, non-finite result
    "(* 1e200 1e200)",
    "(+ 1.7e308 1.7e308)",
    "(- -1.7e308 1.7e308)",
    "(* 2 1.7976931348623157e308)",
    "(/ 1e300 1e-300)",
    "(* -1e300 1e10)",
    "(pow 10 400)",
    "(pow 2.0 1024)",
    "(pow -10 401)",
]


@pytest.mark.parametrize("src", OVERFLOW_CASES)
def test_overflow_is_arithmetic_error(src: str) -> None:
    """§3: an exact result that does not fit, or a non-finite float result of finite operands,
    ⇒ arithmetic_error (never wrap, never silently change type)."""
    e = err(src)
    assert e.type == "arithmetic_error", (e.type, e.message)


@pytest.mark.parametrize(
    "src", ["(mod 7 0)", "(mod 7.0 0)", "(mod 7 0.0)", "(rem 7 0)", "(rem -7.5 0)", "(mod 0 0)"]
)
def test_mod_rem_zero_divisor(src: str) -> None:
    """§7.12: `mod`/`rem` by zero ⇒ arithmetic_error."""
    e = err(src)
    assert e.type == "arithmetic_error", (e.type, e.message)
    assert ("mod" in e.message) or ("rem" in e.message), e.message


@pytest.mark.parametrize("src", ["(pow -8 0.5)", "(pow -1 1.5)", "(pow -2.5 -0.5)"])
def test_pow_not_real(src: str) -> None:
    """§7.12 `pow`: a result that is not a real number ⇒ arithmetic_error."""
    e = err(src)
    assert e.type == "arithmetic_error", (e.type, e.message)


def test_float_overflow_message_prints_values_compactly() -> None:
    """§10.1: messages print values with small limits; a float operand appears in printer form
    (`1.0E200`), not as a 200-digit integer."""
    e = err("(* 1e200 1e200)")
    assert "1.0E200" in e.message, e.message
    assert len(e.message) < 200, e.message


def test_overflow_leaves_no_definition() -> None:
    """§1.3: an error discards the run's definitions (overflow is an ordinary error)."""
    s = ptc.Session()
    r = s.run(f"(def a 1) (+ {I64_MAX} a)")
    assert r.error is not None and r.error.type == "arithmetic_error"
    assert "a" not in s.memory


# --------------------------------------------------------------------------- type errors

# (program, function name, fragment naming the offending value and its label)
TYPE_ERROR_CASES: list[tuple[str, str, str]] = [
    ('(+ 1 "12")', "+", 'got string "12"'),
    ("(+ 1 nil)", "+", "got nil"),
    ("(+ nil 1)", "+", "got nil"),
    ("(+ 1 true)", "+", "got boolean true"),
    ('(- "a")', "-", 'got string "a"'),
    ("(- 1 :k)", "-", "got keyword :k"),
    ("(* 2 [1])", "*", "got vector [1]"),
    ("(* {:a 1} 2)", "*", "got map {:a 1}"),
    ('(/ "a")', "/", 'got string "a"'),
    ("(/ 1 nil)", "/", "got nil"),
    ('(mod "7" 2)', "mod", 'got string "7"'),
    ("(mod 7 nil)", "mod", "got nil"),
    ('(rem 7 "2")', "rem", 'got string "2"'),
    ("(inc nil)", "inc", "got nil"),
    ('(inc "1")', "inc", 'got string "1"'),
    ('(dec "1")', "dec", 'got string "1"'),
    ("(abs :a)", "abs", "got keyword :a"),
    ('(max 1 "2")', "max", 'got string "2"'),
    ("(min nil 1)", "min", "got nil"),
    ('(max "a" "b")', "max", 'got string "a"'),
    ('(floor "2.5")', "floor", 'got string "2.5"'),
    ("(ceil nil)", "ceil", "got nil"),
    ('(round "1")', "round", 'got string "1"'),
    ("(trunc nil)", "trunc", "got nil"),
    ('(double "1.5")', "double", 'got string "1.5"'),
    ("(float nil)", "float|double", "got nil"),
    ('(int "3")', "int", 'got string "3"'),
    ("(int nil)", "int", "got nil"),
    ('(sqrt "4")', "sqrt", 'got string "4"'),
    ('(pow 2 "3")', "pow", 'got string "3"'),
    ("(pow nil 2)", "pow", "got nil"),
    ('(< 1 "2")', "<", 'got string "2"'),
    ("(> nil 1)", ">", "got nil"),
    ("(<= :a 1)", "<=", "got keyword :a"),
    ("(>= 1 [1])", ">=", "got vector [1]"),
    ('(< "a" "b")', "<", 'got string "a"'),
    ('(max "a")', "max", 'got string "a"'),
    ("(min nil)", "min", "got nil"),
    ("(abs nil)", "abs", "got nil"),
    ("(- :k)", "-", "got keyword :k"),
]


@pytest.mark.parametrize(("src", "fn", "fragment"), TYPE_ERROR_CASES)
def test_math_type_errors(src: str, fn: str, fragment: str) -> None:
    """§7.12: numbers only; any other argument incl. nil ⇒ type_error naming fn and value."""
    e = err(src)
    assert e.type == "type_error", (e.type, e.message)
    assert any(name in e.message for name in fn.split("|")), e.message  # aliases: float|double
    assert fragment in e.message, e.message


def test_string_arithmetic_hints_parsing() -> None:
    """§7.12/§10.3: adding a string is a common mistake; the error suggests converting."""
    e = err('(+ 1 "12")')
    assert "parse-long" in f"{e.message} {e.hint}" or "parse-double" in f"{e.message} {e.hint}"


@pytest.mark.parametrize("src", ["(max [1 2])", "(min [3 1])", "(max #{1 2})"])
def test_max_of_a_collection_hints_apply(src: str) -> None:
    """§7.12/§10.3: a single collection argument ⇒ type_error with the hint `(apply max coll)`."""
    e = err(src)
    assert e.type == "type_error", (e.type, e.message)
    assert "apply" in f"{e.message} {e.hint}"


# (program, function name, accepted arities text, count given)
ARITY_CASES: list[tuple[str, str, str, int]] = [
    ("(/)", "/", "1+", 0),
    ("(mod 1)", "mod", "2", 1),
    ("(mod 1 2 3)", "mod", "2", 3),
    ("(rem 1)", "rem", "2", 1),
    ("(inc)", "inc", "1", 0),
    ("(inc 1 2)", "inc", "1", 2),
    ("(dec)", "dec", "1", 0),
    ("(abs)", "abs", "1", 0),
    ("(abs 1 2)", "abs", "1", 2),
    ("(max)", "max", "1+", 0),
    ("(min)", "min", "1+", 0),
    ("(floor)", "floor", "1", 0),
    ("(ceil 1 2)", "ceil", "1", 2),
    ("(round)", "round", "1", 0),
    ("(trunc 1 2)", "trunc", "1", 2),
    ("(double)", "double", "1", 0),
    ("(float 1 2)", "float", "1", 2),
    ("(int)", "int", "1", 0),
    ("(sqrt)", "sqrt", "1", 0),
    ("(sqrt 1 2)", "sqrt", "1", 2),
    ("(pow 2)", "pow", "2", 1),
    ("(pow 1 2 3)", "pow", "2", 3),
    ("(compare 1)", "compare", "2", 1),
    ("(compare 1 2 3)", "compare", "2", 3),
    ("(apply < [1 2 3])", "<", "2", 3),
    ("(apply = [1])", "=", "2", 1),
    ("(apply not= [])", "not=", "2", 0),
    ("(apply >= [1 2 3 4])", ">=", "2", 4),
]


@pytest.mark.parametrize(("src", "fn", "accepted", "got"), ARITY_CASES)
def test_math_arity_errors(src: str, fn: str, accepted: str, got: int) -> None:
    """§7.0/§7.12: wrong argument count ⇒ arity_error; through `apply` comparisons are ordinary
    two-argument functions."""
    e = err(src)
    assert e.type == "arity_error", (e.type, e.message)
    assert fn in e.message, e.message
    assert f"expects {accepted} argument" in e.message, e.message
    assert f"got {got}" in e.message, e.message


# --------------------------------------------------------------------------- comparison

COMPARISON_CASES = cases("math", "COMPARISON_CASES")


@pytest.mark.parametrize(("src", "expected"), COMPARISON_CASES)
def test_comparison(src: str, expected: str) -> None:
    """§7.12 comparison table: numeric order, ±∞ ordered, NaN → false, `=` structural."""
    assert show(src) == expected


@pytest.mark.parametrize(
    ("src", "chained"),
    [
        ("(< 1 2 3)", True),
        ("(> 3 2 1)", True),
        ("(= 1 1 1)", True),
        ("(not= 1 2 3)", True),
        ("(<= 1)", False),
        ("(= 1)", False),
        ("(>=)", False),
    ],
)
def test_written_comparison_arity_is_analysis_error(src: str, chained: bool) -> None:
    """§5.17/§7.12: written comparisons must have exactly two arguments ⇒ analysis_error (for a
    chained comparison with the hint to combine with `and`); nothing runs."""
    r = ptc.run(f"(println :ran) {src}")
    assert r.error is not None and r.error.type == "analysis_error", r.error
    assert r.prints == []
    if chained:
        assert "and" in f"{r.error.message} {r.error.hint}"
    assert r.error.line == 1 and r.error.column is not None


# (a, b, expected (compare a b)) — natural order of §3
COMPARE_CASES: list[tuple[str, str, int]] = [
    ("1", "2", -1),
    ("2", "1", 1),
    ("9", "9.0", 0),
    ("2.5", "2", 1),
    ("-1", "0.5", -1),
    (INF, "1e308", 1),
    (NINF, "-1e308", -1),
    (INF, INF, 0),
    (NINF, INF, -1),
    ('"a"', '"b"', -1),
    ('"B"', '"a"', -1),  # by code point: uppercase first
    ('"a"', '"a"', 0),
    ('""', '"a"', -1),
    ('"ab"', '"a"', 1),
    ('"é"', '"z"', 1),
    ('"\uff61"', '"\U0001f600"', -1),  # code points, not UTF-16 units
    (":b", ":a", 1),
    (":a", ":a", 0),
    (":a", ":ab", -1),
    ("false", "true", -1),
    ("true", "false", 1),
    ("true", "true", 0),
    ("[1 2]", "[1 3]", -1),
    ("[1 2]", "[1 2 0]", -1),  # a proper prefix first
    ("[1 3]", "[1 2 0]", 1),
    ("[]", "[]", 0),
    ("[]", "[0]", -1),
    ("[2]", "[1 9]", 1),
    ('[1 "b"]', '[1 "a"]', 1),
    ("[[1]]", "[[2]]", -1),
    ("[1 2.0]", "[1 2]", 0),
    ("[:a true]", "[:a false]", 1),
    ("\\a", '"b"', -1),  # a character is a one-character string
]


@pytest.mark.parametrize(("a", "b", "expected"), COMPARE_CASES)
def test_compare_natural_order(a: str, b: str, expected: int) -> None:
    """§3 natural order / §7.12 `compare`: -1, 0 or 1."""
    assert ev(f"(compare {a} {b})") == expected


INCOMPARABLE: list[tuple[str, str]] = [
    ("nil", "nil"),
    ("nil", "1"),
    ("1", '"a"'),
    (":a", '"a"'),
    ("true", "1"),
    ("{:a 1}", "{:a 1}"),
    ("#{1}", "#{1}"),
    ("inc", "inc"),
    ("[1]", "#{1}"),
    ('[1 "a"]', "[1 2]"),
    ("[nil]", "[nil]"),
    (NAN, "1"),
    (NAN, NAN),
    (f"[{NAN}]", "[1]"),
    ('(re-pattern "a")', '(re-pattern "a")'),
]


@pytest.mark.parametrize(("a", "b"), INCOMPARABLE)
def test_compare_incomparable(a: str, b: str) -> None:
    """§3: nil, maps, sets, functions, NaN and mixed categories are incomparable; `compare`
    ⇒ type_error."""
    e = err(f"(compare {a} {b})")
    assert e.type == "type_error", (e.type, e.message)
    assert "compare" in e.message, e.message


NATURAL_SORT_CASES = cases("math", "NATURAL_SORT_CASES")


@pytest.mark.parametrize(("src", "expected"), NATURAL_SORT_CASES)
def test_natural_order_in_sort(src: str, expected: str) -> None:
    """§3 natural order as used by sort / sort-by / min-by / max-by / max-key."""
    assert show(src) == expected


@pytest.mark.parametrize(
    "src",
    [
        "(sort [1 nil])",
        '(sort [1 "a"])',
        f"(sort [1 {NAN}])",
        "(sort [{:a 1} {:a 2}])",
        '(sort [:a "a"])',
        "(sort-by :k [{:k 1} {:k :x}])",
    ],
)
def test_natural_order_incomparable_in_sort(src: str) -> None:
    """§3: an operation that must order an incomparable pair ⇒ type_error."""
    e = err(src)
    assert e.type == "type_error", (e.type, e.message)


# --------------------------------------------------------------------------- float printing


def _shortest(x: float) -> tuple[str, int]:
    """Shortest round-tripping decimal digits of |x| and the exponent of the first digit."""
    d = Decimal(repr(abs(x))).normalize()
    digits = "".join(str(t) for t in d.as_tuple().digits)
    return digits, d.adjusted()


def _plain(x: float) -> str:
    d = Decimal(repr(abs(x))).normalize()
    text = format(d, "f")
    if "." not in text:
        text += ".0"
    return ("-" if math.copysign(1, x) < 0 else "") + text


def _expected_text(x: float, low: float, high: float, e: str) -> str:
    """Oracle for §7.9 display form (`e`, 1e-4..1e16) and §9.1 printer (`E`, 1e-3..1e7)."""
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    if low <= abs(x) < high:
        return _plain(x)
    digits, exp = _shortest(x)
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return ("-" if x < 0 else "") + f"{mantissa}{e}{exp}"


def display_form(x: float) -> str:
    return _expected_text(x, 1e-4, 1e16, "e")


def printer_form(x: float) -> str:
    return _expected_text(x, 1e-3, 1e7, "E")


def _sample_floats() -> list[float]:
    rng = random.Random(20310504)
    xs: list[float] = [
        0.0,
        -0.0,
        0.1,
        0.2,
        0.1 + 0.2,
        1 / 3,
        2 / 3,
        2.5,
        7.0,
        100.0,
        -4.5,
        6.02e23,
        3e-4,
        1e-4,
        9.999999999999999e-5,
        1e-3,
        9.999999999999998e-4,
        1e7,
        9999999.999999998,
        9999999.0,
        1e16,
        9999999999999998.0,
        1e15,
        123456789012345.67,
        1.5e21,
        2e-11,
        5e-324,
        2.2250738585072014e-308,
        1.7976931348623157e308,
        4.35,
        0.3,
        1e21,
        1e22,
        1e23,
        -1e-7,
        123.456,
        1.0000000000000002,
        0.9999999999999999,
        4503599627370496.5,
        9007199254740993.0,
        2**53 + 0.0,
        2**63 + 0.0,
        3.0e-7,
    ]
    for _ in range(600):
        xs.append(rng.uniform(-1, 1) * 10 ** rng.randint(-30, 30))
    for _ in range(600):
        (x,) = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))
        if math.isfinite(x):
            xs.append(x)
    for _ in range(300):
        xs.append(round(rng.uniform(-1000, 1000), rng.randint(0, 6)))
    return xs


FLOATS = _sample_floats()


def test_str_display_form_of_many_floats() -> None:
    """§7.9 display form: shortest round-tripping decimal with a `.` or exponent, exponent
    (lowercase `e`) when the magnitude is ≥ 1e16 or < 1e-4."""
    texts = ev("(map str data/xs)", data={"xs": FLOATS})
    bad = [
        (x, t, display_form(x)) for x, t in zip(FLOATS, texts, strict=True) if t != display_form(x)
    ]
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"
    for x, t in zip(FLOATS, texts, strict=True):
        assert float(t) == x


def test_str_reads_back_with_parse_double() -> None:
    """§7.9/§7.10: `(parse-double (str x))` is the same float for every finite x."""
    same = ev("(map (fn [x] (= x (parse-double (str x)))) data/xs)", data={"xs": FLOATS})
    bad = [x for x, ok in zip(FLOATS, same, strict=True) if not ok]
    assert not bad, bad[:10]


def test_printer_form_of_many_floats() -> None:
    """§9.1: the printer writes the shortest text that reads back to the same float, with a
    decimal point or an exponent (`E`, below 1e-3 and from 1e7 in magnitude)."""
    text, truncated = ptc.to_clojure(FLOATS)
    assert not truncated
    inner = ev("(str data/xs)", data={"xs": FLOATS})  # printer form inside the interpreter
    assert inner == text
    parts = text[1:-1].split(" ")
    bad = [
        (x, t, printer_form(x)) for x, t in zip(FLOATS, parts, strict=True) if t != printer_form(x)
    ]
    assert not bad, f"{len(bad)} mismatches, e.g. {bad[:5]}"


def test_printer_text_reads_back() -> None:
    """§9.1/§2.3: printed floats are valid program text that reads back to the same floats."""
    text, _ = ptc.to_clojure(FLOATS)
    back = ev(text)
    assert len(back) == len(FLOATS)
    for x, y in zip(FLOATS, back, strict=True):
        assert type(y) is float
        assert x == y and math.copysign(1, x) == math.copysign(1, y), (x, y)


@pytest.mark.parametrize(
    ("src", "expected"),
    [(INF, "##Inf"), (NINF, "##-Inf"), (NAN, "##NaN"), (f"[{INF} {NAN}]", "[##Inf ##NaN]")],
)
def test_printer_special_values(src: str, expected: str) -> None:
    """§9.1: +∞, −∞, NaN print as ##Inf, ##-Inf, ##NaN (which are not valid input, §2.3)."""
    assert show(src) == expected
    assert ptc.to_clojure(ev(src))[0] == expected


def test_special_value_syntax_is_not_input() -> None:
    """§2.3: `##Inf` / `##NaN` are not accepted as input (parse_error)."""
    for src in ["##Inf", "##-Inf", "##NaN"]:
        assert err(src).type == "parse_error"


def test_integer_printing() -> None:
    """§9.1: integers print in decimal with a leading `-` if negative (full 64-bit range)."""
    assert show(f"[{I64_MAX} {I64_MIN} 0 -7]") == f"[{I64_MAX} {I64_MIN} 0 -7]"
    assert ev(f"(str {I64_MIN})") == str(I64_MIN)
