"""Strings and parsing (LANGUAGE.md §7.9 strings incl. the display forms used by `str`/`join`,
§7.10 `parse-long`/`parse-double`).

Expected values are written from LANGUAGE.md, not from the implementation. Results are compared
through their Clojure printed form (``show``) so that keyword-vs-string, int-vs-float and order
all matter.
"""

from __future__ import annotations

import math
from typing import Any

import ptc
import pytest
from lang_helpers import cases, err, ev
from lang_helpers import show_printed as show

# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- §7.9 display forms

# (program, expected Python string). `str` concatenates display forms (§7.9 "Display form").
STR_CASES: list[tuple[str, str]] = [
    ("(str)", ""),
    ("(str nil)", ""),
    ('(str "a" nil "b")', "ab"),
    ('(str "amber")', "amber"),
    ("(str 42)", "42"),
    ("(str -38)", "-38"),
    ("(str 0)", "0"),
    ("(str 2.5)", "2.5"),
    ("(str 7.0)", "7.0"),
    ("(str -4.5)", "-4.5"),
    ("(str 3.0e-7)", "3.0e-7"),
    ("(str 0.0001)", "0.0001"),
    ("(str 0.00001)", "1.0e-5"),
    ("(str 1e15)", "1000000000000000.0"),
    ("(str 1e16)", "1.0e16"),
    ("(str 1.5e21)", "1.5e21"),
    ("(str 123456789.0)", "123456789.0"),
    ("(str 10000000.0)", "10000000.0"),
    ("(str (/ 2.0 3))", "0.6666666666666666"),
    ("(str 0.1)", "0.1"),
    ("(str Double/POSITIVE_INFINITY)", "Infinity"),
    ("(str Double/NEGATIVE_INFINITY)", "-Infinity"),
    ("(str Double/NaN)", "NaN"),
    ("(str (/ 1 0))", "Infinity"),
    ("(str :name)", ":name"),
    ("(str true false)", "truefalse"),
    ("(str \\a \\b)", "ab"),
    ('(str "x" \\newline "y")', "x\ny"),
    ('(str [1 "x" :k nil])', '[1 "x" :k nil]'),
    ("(str [0.5 2.0E-11])", "[0.5 2.0E-11]"),
    ('(str {:a 1 "b" [2]})', '{:a 1, "b" [2]}'),
    ("(str #{:r})", "#{:r}"),
    ("(str [])", "[]"),
    ("(str {})", "{}"),
    ('(str "n=" 12 ", ok=" true)', "n=12, ok=true"),
    # printer form is unlimited and unhidden in `str` (§7.9, §9.1 "Hidden keys")
    ('(str {:_secret 1 :a "x"})', '{:_secret 1, :a "x"}'),
    ("(str (vec (range 20)))", "[" + " ".join(str(i) for i in range(20)) + "]"),
    # dates: YYYY-MM-DD; date-times ISO-8601 UTC (§7.9)
    ('(str (java.time.LocalDate/parse "2031-05-04"))', "2031-05-04"),
    ('(str (java.util.Date. "2031-05-04T06:07:08Z"))', "2031-05-04T06:07:08Z"),
    ('(str (java.util.Date. "2031-05-04T08:07:08+02:00"))', "2031-05-04T06:07:08Z"),
    # functions, vars and regexes print in printer form (§9.1)
    ("(str inc)", "#<builtin>"),
    ("(str (fn [a b] a))", "#fn[a b]"),
    ("(str (fn [a & more] a))", "#fn[a & more]"),
    ("(str (where :a))", "#<fn>"),
    ('(str (re-pattern "a+b"))', '#"a+b"'),
    ("(str (def q 1))", "#'q"),
    # a string inside a collection is quoted and escaped by the printer
    ('(str ["a\\"b" "c\\nd"])', '["a\\"b" "c\\nd"]'),
]


@pytest.mark.parametrize(("src", "expected"), STR_CASES)
def test_str_display_forms(src: str, expected: str) -> None:
    """§7.9 `str`: concatenation of the display forms of all arguments."""
    assert ev(src) == expected


JOIN_CASES: list[tuple[str, str]] = [
    ('(join ", " [1 2 3])', "1, 2, 3"),
    ("(join [1 2 3])", "123"),
    ('(join "-" [])', ""),
    ("(join [])", ""),
    ('(join "-" nil)', ""),
    ("(join nil)", ""),
    ('(join "," [1 nil "a" :b 2.5])', "1,,a,:b,2.5"),
    ('(join "," [nil nil])', ","),
    ('(join "" ["a" "b"])', "ab"),
    ('(join " | " ["solo"])', "solo"),
    ('(join "-" [[1 "a"] {:k "v"} #{:s}])', '[1 "a"]-{:k "v"}-#{:s}'),
    ('(join "/" [1e16 3.0e-7 7.0])', "1.0e16/3.0e-7/7.0"),
    ('(join "," [Double/NaN Double/POSITIVE_INFINITY])', "NaN,Infinity"),
    ('(join ", " [\\a "bc"])', "a, bc"),
    ('(join ";" [(java.time.LocalDate/parse "2031-05-04")])', "2031-05-04"),
    ('(clojure.string/join "," ["x" "y"])', "x,y"),
    ('(str/join "," ["x" "y"])', "x,y"),
]


@pytest.mark.parametrize(("src", "expected"), JOIN_CASES)
def test_join(src: str, expected: str) -> None:
    """§7.9 `join`: display forms of the elements of V separated by `sep`; nil coll → ""."""
    assert ev(src) == expected


# --------------------------------------------------------------------------- §7.9 functions

# (program, expected printed result)
STRING_FN_CASES = cases("strings", "STRING_FN_CASES")


@pytest.mark.parametrize(("src", "expected"), STRING_FN_CASES)
def test_string_functions(src: str, expected: str) -> None:
    """§7.9 string function table: happy paths, empty strings and the listed edge cases."""
    assert show(src) == expected


def test_split_pieces_round_trip_through_join() -> None:
    """§7.9: `split` keeps every empty piece, so `join` with the same separator restores s."""
    for s in ["a,b", ",,", "x,", ",x", "", "a,,b,,,c"]:
        assert ev(f'(join "," (split "{s}" ","))') == s


# --------------------------------------------------------------------------- §7.9 characters

# Indices and lengths count characters = extended grapheme clusters (§3, §7.9).
COMBINING_E = "e\u0301"  # e + COMBINING ACUTE ACCENT: one grapheme
FLAG_NO = "\U0001f1f3\U0001f1f4"  # regional indicators N + O: one grapheme
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # ZWJ sequence: one grapheme

GRAPHEME_CASES: list[tuple[str, Any]] = [
    (f'(count "{COMBINING_E}x")', 2),
    (f'(count "{FLAG_NO}")', 1),
    (f'(count "{FAMILY}ab")', 3),
    (f'(subs "{COMBINING_E}xy" 1)', "xy"),
    (f'(subs "a{FLAG_NO}b" 1 2)', FLAG_NO),
    (f'(subs "{FAMILY}z" 0 1)', FAMILY),
    (f'(split "{COMBINING_E}{FLAG_NO}" "")', [COMBINING_E, FLAG_NO]),
    (f'(upper-case "{COMBINING_E}")', "E\u0301"),
    (f'(replace "a{COMBINING_E}" "" "|")', f"|a|{COMBINING_E}|"),
]


@pytest.mark.parametrize(("src", "expected"), GRAPHEME_CASES)
def test_grapheme_clusters(src: str, expected: Any) -> None:
    """§3/§7.9: string indices and lengths count extended grapheme clusters."""
    assert ev(src) == expected


# --------------------------------------------------------------------------- §7.9 errors

# (program, names that may identify the function, fragment naming the value with its label).
# All functions except `str` and `join` require strings; a non-string incl. nil ⇒ type_error.
TYPE_ERROR_CASES: list[tuple[str, tuple[str, ...], str]] = [
    ("(subs nil 1)", ("subs",), "got nil"),
    ("(subs 12 1)", ("subs",), "got integer 12"),
    ("(subs :abc 1)", ("subs",), "got keyword :abc"),
    ('(subs "abc" 1.5)', ("subs",), "got float 1.5"),
    ('(subs "abc" "1")', ("subs",), 'got string "1"'),
    ('(subs "abc" 0 nil)', ("subs",), "got nil"),
    ('(subs "abc" 0 2.0)', ("subs",), "got float 2.0"),
    ('(join 1 ["a"])', ("join",), "got integer 1"),
    ('(join "," "abc")', ("join",), '"abc"'),
    ('(join "," #{1})', ("join",), "#{1}"),
    ('(join "," {:a 1})', ("join",), "{:a 1}"),
    ('(join "," 5)', ("join",), "got integer 5"),
    ('(split nil ",")', ("split",), "got nil"),
    ('(split "a,b" nil)', ("split",), "got nil"),
    ('(split ["a"] ",")', ("split",), 'got vector ["a"]'),
    ("(split-lines nil)", ("split-lines",), "got nil"),
    ("(split-lines 12)", ("split-lines",), "got integer 12"),
    ("(trim nil)", ("trim",), "got nil"),
    ("(trim :x)", ("trim",), "got keyword :x"),
    ('(replace nil "a" "b")', ("replace",), "got nil"),
    ('(replace "abc" "b" nil)', ("replace",), "got nil"),
    ('(replace "abc" :b "x")', ("replace",), "got keyword :b"),
    ('(replace "abc" "b" 1)', ("replace",), "got integer 1"),
    ('(replace "abc" (re-pattern "b") "x")', ("replace",), "regex"),
    ("(upcase nil)", ("upcase", "upper-case"), "got nil"),
    ("(upper-case 12)", ("upcase", "upper-case"), "got integer 12"),
    ("(downcase [1])", ("downcase", "lower-case"), "got vector [1]"),
    ("(lower-case :K)", ("downcase", "lower-case"), "got keyword :K"),
    ('(starts-with? nil "a")', ("starts-with?",), "got nil"),
    ('(starts-with? "a" nil)', ("starts-with?",), "got nil"),
    ('(starts-with? :abc "a")', ("starts-with?",), "got keyword :abc"),
    ('(ends-with? "abc" :c)', ("ends-with?",), "got keyword :c"),
    ('(ends-with? 123 "3")', ("ends-with?",), "got integer 123"),
    ('(includes? nil "a")', ("includes?",), "got nil"),
    ('(includes? "abc" nil)', ("includes?",), "got nil"),
    ('(includes? "abc" 1)', ("includes?",), "got integer 1"),
    ("(includes? [1 2] 1)", ("includes?",), "got vector [1 2]"),
]


@pytest.mark.parametrize(("src", "names", "fragment"), TYPE_ERROR_CASES)
def test_string_type_errors(src: str, names: tuple[str, ...], fragment: str) -> None:
    """§7.9: a non-string (incl. nil) where a string is shown ⇒ type_error naming fn and value."""
    e = err(src)
    assert e.type == "type_error", (e.type, e.message)
    assert any(n in e.message for n in names), e.message
    assert fragment in e.message, e.message


def test_split_with_a_regex_hints_re_split() -> None:
    """§7.9 `split`: a regex separator ⇒ type_error with the hint `re-split`."""
    e = err('(split "a1b" (re-pattern "\\\\d"))')
    assert e.type == "type_error"
    assert "split" in e.message
    assert "re-split" in f"{e.message} {e.hint}"


def test_includes_on_a_collection_hints_contains() -> None:
    """§7.9/§10.3: `(includes? coll x)` ⇒ type_error whose hint points to `contains?`."""
    e = err('(includes? ["a" "b"] "a")')
    assert e.type == "type_error"
    assert "contains?" in f"{e.message} {e.hint}"


# (program, function name, accepted arities text, count given)
ARITY_CASES: list[tuple[str, str, str, int]] = [
    ('(subs "h")', "subs", "2 or 3", 1),
    ('(subs "hello" 1 2 3)', "subs", "2 or 3", 4),
    ("(join)", "join", "1 or 2", 0),
    ('(join "," [1] [2])', "join", "1 or 2", 3),
    ('(split "a")', "split", "2", 1),
    ('(split "a" "," 2)', "split", "2", 3),
    ("(split-lines)", "split-lines", "1", 0),
    ('(split-lines "a" "b")', "split-lines", "1", 2),
    ("(trim)", "trim", "1", 0),
    ('(trim "a" "b")', "trim", "1", 2),
    ('(replace "abc" "b")', "replace", "3", 2),
    ('(replace "a" "b" "c" "d")', "replace", "3", 4),
    ('(starts-with? "a")', "starts-with?", "2", 1),
    ('(ends-with? "a" "b" "c")', "ends-with?", "2", 3),
    ("(includes?)", "includes?", "2", 0),
    ('(lower-case "a" "b")', "lower-case", "1", 2),
    ("(upper-case)", "upper-case", "1", 0),
    ('(parse-long "1" "2")', "parse-long", "1", 2),
    ("(parse-long)", "parse-long", "1", 0),
    ("(parse-double)", "parse-double", "1", 0),
    ('(parse-double "1" "2")', "parse-double", "1", 2),
]


@pytest.mark.parametrize(("src", "fn", "accepted", "got"), ARITY_CASES)
def test_string_arity_errors(src: str, fn: str, accepted: str, got: int) -> None:
    """§7.0/§7.9/§7.10: an unsupported arity ⇒ arity_error stating the accepted arities."""
    e = err(src)
    assert e.type == "arity_error", (e.type, e.message)
    assert fn in e.message, e.message
    assert f"expects {accepted} argument" in e.message, e.message
    assert f"got {got}" in e.message, e.message


def test_alias_arity_names_the_function() -> None:
    """§7.9: `upcase`/`downcase` are aliases; an arity error still names the function."""
    for src in ("(upcase)", '(downcase "a" "b")'):
        e = err(src)
        assert e.type == "arity_error"
        assert any(n in e.message for n in ("upcase", "upper-case", "downcase", "lower-case"))


@pytest.mark.parametrize("depth", [900, 1500, 3000])
def test_str_of_a_deeply_nested_value_is_complete(depth: int) -> None:
    """§7.9: `str` uses the printer form, unlimited — a deeply nested value is printed in full
    or the run ends with a limit error (§11), never silently shortened text."""
    r = ptc.run(f"(str (loop [i 0 v []] (if (< i {depth}) (recur (inc i) (vector v)) v)))")
    if r.error is not None:
        assert r.error.type in {"execution_error", "memory_exceeded"}, r.error
    else:
        complete = r.value == "[" * (depth + 1) + "]" * (depth + 1)
        assert complete, f"{len(r.value)} characters, '...' in text: {'...' in r.value}"


def test_str_accepts_any_number_of_any_values() -> None:
    """§7.9 `str`: arity 0+, any value (no type_error)."""
    args = " ".join(["nil", "1", "2.5", ":k", '"s"', "[1]", "{:a 1}", "#{2}", "true", "inc"] * 30)
    out = ev(f"(str {args})")
    assert out.startswith("12.5:ks[1]{:a 1}#{2}true#<builtin>12.5")


# --------------------------------------------------------------------------- §7.10 parse-long

PARSE_LONG_CASES: list[tuple[str, Any]] = [
    ('"12"', 12),
    ('"-38"', -38),
    ('"+5"', 5),
    ('"0"', 0),
    ('"-0"', 0),
    ('"007"', 7),
    ('"9223372036854775807"', 9223372036854775807),
    ('"-9223372036854775808"', -9223372036854775808),
    ('"99999999999999999999999"', None),  # beyond the integer range → nil
    ('"9223372036854775808"', None),
    ('""', None),
    ('" 12"', None),
    ('"12 "', None),
    ('"1 2"', None),
    ('"12.0"', None),
    ('"12.5"', None),
    ('"1e3"', None),
    ('"1_000"', None),
    ('"1,000"', None),
    ('"0x10"', None),
    ('"+"', None),
    ('"-"', None),
    ('"+-1"', None),
    ('"abc"', None),
    ('"12abc"', None),
    ('"\u0663"', None),  # ARABIC-INDIC DIGIT THREE is not a decimal digit here
    ('"\uff11\uff12"', None),  # fullwidth digits
    ("nil", None),
    ("12", None),  # a non-string → nil
    ("1.5", None),
    (":12", None),
    ('["1"]', None),
]


@pytest.mark.parametrize(("arg", "expected"), PARSE_LONG_CASES)
def test_parse_long(arg: str, expected: Any) -> None:
    """§7.10 `parse-long`: the integer written by the whole string, else nil."""
    value = ev(f"(parse-long {arg})")
    assert value == expected
    if expected is not None:
        assert type(value) is int


PARSE_DOUBLE_CASES: list[tuple[str, float | None]] = [
    ('"12"', 12.0),
    ('"2.5"', 2.5),
    ('"-4.5"', -4.5),
    ('"+2.5"', 2.5),
    ('"4e2"', 400.0),
    ('"4E2"', 400.0),
    ('"-1.5E-3"', -0.0015),
    ('"6.02e23"', 6.02e23),
    ('"3e+2"', 300.0),
    ('"0"', 0.0),
    ('"0.1"', 0.1),
    ('"007.5"', 7.5),
    ('"Infinity"', math.inf),
    ('"+Infinity"', math.inf),
    ('"-Infinity"', -math.inf),
    ('".5"', None),
    ('"5."', None),
    ('"-.5"', None),
    ('" 1.5"', None),
    ('"1.5 "', None),
    ('""', None),
    ('"1e"', None),
    ('"e5"', None),
    ('"1.5.2"', None),
    ('"1,5"', None),
    ('"1_0"', None),
    ('"abc"', None),
    ('"inf"', None),
    ('"infinity"', None),
    ('"INFINITY"', None),
    ('"nan"', None),
    ('"-NaN"', None),
    ('"0x1p3"', None),
    ('"1.5f"', None),
    ('"1.5d"', None),
    ("nil", None),
    ("12", None),
    ("2.5", None),
    (":k", None),
]


@pytest.mark.parametrize(("arg", "expected"), PARSE_DOUBLE_CASES)
def test_parse_double(arg: str, expected: float | None) -> None:
    """§7.10 `parse-double`: the float written by the whole string, special names, else nil."""
    value = ev(f"(parse-double {arg})")
    if expected is None:
        assert value is None
    else:
        assert type(value) is float
        assert value == expected


def test_parse_double_nan() -> None:
    """§7.10: `(parse-double "NaN")` is the special value NaN."""
    value = ev('(parse-double "NaN")')
    assert isinstance(value, float) and math.isnan(value)
    assert ev('(number? (parse-double "NaN"))') is True


def test_parse_results_compose() -> None:
    """§7.10: parsed numbers are ordinary numbers (integer vs float kept)."""
    assert show('(+ (parse-long "40") 2)') == "42"
    assert show('(+ (parse-double "40") 2)') == "42.0"
    assert show('(map parse-long ["1" "x" "-3"])') == "[1 nil -3]"


def test_parse_round_trips_display_form() -> None:
    """§7.9/§7.10: `parse-double` reads back the display form of floats `str` writes."""
    floats = "[0.1 2.5 -4.5 7.0 1.0e16 3.0e-7 1.5e21 123456.789 -0.0001 1e-5]"
    assert ev(f"(every? (fn [x] (= x (parse-double (str x)))) {floats})") is True
    assert ev("(every? (fn [n] (= n (parse-long (str n)))) [0 -1 42 9223372036854775807])")
