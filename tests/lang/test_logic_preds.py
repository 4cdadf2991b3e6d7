"""Truthiness, equality and identity (LANGUAGE.md §4), logic and higher-order functions
(§7.13: `not`, `identity`, `fnil`, `apply`, `juxt`, `println`), type predicates (§7.14) and
numeric predicates (§7.15).

Expected values are written from LANGUAGE.md. Results are compared through their Clojure printed
form (``show``), so keyword-vs-string and int-vs-float matter.
"""

from __future__ import annotations

from typing import Any

import ptc
import pytest
from lang_helpers import cases, err, ev
from lang_helpers import show_printed as show

# --------------------------------------------------------------------------- helpers


def prints(src: str, **kw: Any) -> list[str]:
    r = ptc.run(src, **kw)
    assert r.error is None, r.error
    return r.prints


INF = "Double/POSITIVE_INFINITY"
NINF = "Double/NEGATIVE_INFINITY"
NAN = "Double/NaN"

# --------------------------------------------------------------------------- §4.1 truthiness

FALSY = ["nil", "false"]
TRUTHY = [
    "true",
    "0",
    "0.0",
    "-0.0",
    '""',
    '"false"',
    '"nil"',
    "[]",
    "{}",
    "#{}",
    ":false",
    "[nil]",
    "[false]",
    NAN,
    "inc",
    "(fn [] nil)",
    '(re-pattern "")',
    "\\space",
]


@pytest.mark.parametrize("value", FALSY + TRUTHY)
def test_truthiness(value: str) -> None:
    """§4.1: nil and false are falsy; every other value (0, "", [], {}, #{} …) is truthy."""
    expected = value not in FALSY
    assert ev(f"(if {value} true false)") is expected
    assert ev(f"(not {value})") is (not expected)
    assert ev(f"(when {value} true)") is (True if expected else None)
    assert ev(f"(cond {value} :t :else :f)") == ("t" if expected else "f")
    assert ev(f"(count (filter identity [{value}]))") == (1 if expected else 0)


# --------------------------------------------------------------------------- §4.2 equality

EQUALITY_CASES: list[tuple[str, str, bool]] = [
    ("1", "1", True),
    ("3", "3.0", True),
    ("1", "1.5", False),
    ("[2 4]", "[2.0 4]", True),
    ("[[1]]", "[[1.0]]", True),
    ("{:a [1]}", "{:a [1.0]}", True),
    (":teal", '"teal"', False),
    (":a", ":a", True),
    ("\\z", '"z"', True),
    ('"a"', '"a"', True),
    ('"a"', '"A"', False),
    ("[1]", "#{1}", False),
    ("[]", "{}", False),
    ("[]", "#{}", False),
    ("{}", "#{}", False),
    ("[[1 2]]", "{1 2}", False),
    ("nil", "nil", True),
    ("nil", "false", False),
    ("nil", "[]", False),
    ("nil", '""', False),
    ("nil", "0", False),
    ("0", "false", False),
    ("true", "true", True),
    ("{:a 1 :b 2}", "{:b 2 :a 1}", True),  # order ignored
    ("{:a 1}", "{:a 1 :b nil}", False),
    ("{:a 1}", '{"a" 1}', False),  # map equality uses exact keys (§4.4)
    ("#{1 2 3}", "#{3 2 1}", True),
    ("#{1}", "#{1 2}", False),
    ("[1 2]", "[2 1]", False),
    ("[1 2]", "[1 2 3]", False),
    ("[]", "[]", True),
    ("{:a {:b #{1}}}", "{:a {:b #{1}}}", True),
    (NAN, NAN, False),
    (f"[{NAN}]", f"[{NAN}]", False),
    (INF, INF, True),
    (INF, NINF, False),
    ('(java.time.LocalDate/parse "2031-05-04")', '(java.time.LocalDate/parse "2031-05-04")', True),
    ("(java.util.Date. 0)", '(java.util.Date. "1970-01-01T00:00:00Z")', True),
    ("(java.util.Date. 0)", "(java.util.Date. 1)", False),
    ("#'a", "#'a", True),  # two vars are equal when their names are equal (§3)
    ("#'a", "#'b", False),
]


@pytest.mark.parametrize(("a", "b", "expected"), EQUALITY_CASES)
def test_equality(a: str, b: str, expected: bool) -> None:
    """§4.2: structural equality; numbers by value; NaN never equal; keyword ≠ string;
    character = one-character string; vector never equals set or map; nil equals only nil."""
    assert ev(f"(= {a} {b})") is expected
    assert ev(f"(= {b} {a})") is expected
    assert ev(f"(not= {a} {b})") is (not expected)


def test_def_returns_an_equal_var() -> None:
    """§3/§5.8: `def` returns the var `#'name`, equal to a written `#'name`."""
    assert ev("(= (def x 1) #'x)") is True
    assert show("(def x 1)") == "#'x"
    assert show("#'nowhere") == "#'nowhere"  # #'name does not check that the definition exists


# --------------------------------------------------------------------------- §4.3 identity

IDENTITY_CASES = cases("logic_preds", "IDENTITY_CASES")


@pytest.mark.parametrize(("src", "expected"), IDENTITY_CASES)
def test_identity_equality(src: str, expected: str) -> None:
    """§4.3: sets, map keys, distinct, frequencies, group-by, contains? use identity equality,
    which distinguishes integers from floats."""
    assert show(src) == expected


# --------------------------------------------------------------------------- §4.5 callables

CALLABLE_CASES = cases("logic_preds", "CALLABLE_CASES")


@pytest.mark.parametrize(("src", "expected"), CALLABLE_CASES)
def test_callable_values(src: str, expected: str) -> None:
    """§4.5: keywords, maps and sets are callable."""
    assert show(src) == expected


@pytest.mark.parametrize(
    ("src", "kind"),
    [
        ("(:k 5)", "type_error"),
        ('(:k "abc")', "type_error"),
        ("(:k [{:k 1}])", "type_error"),
        ("(:k)", "arity_error"),
        ("(:k {} 1 2)", "arity_error"),
        ("({:a 1})", "arity_error"),
        ("({:a 1} :a 1 2)", "arity_error"),
        ("(#{1})", "arity_error"),
        ("(#{1} 1 2)", "arity_error"),
        ("([1] 0)", "not_callable"),
        ('("s")', "not_callable"),
        ("(7 1)", "not_callable"),
        ("(2.5)", "not_callable"),
        ("(true)", "not_callable"),
        ("(nil)", "not_callable"),
        ("(let [f nil] (f 1))", "not_callable"),
        ("(let [v [1]] (v 0))", "not_callable"),
    ],
)
def test_callable_value_errors(src: str, kind: str) -> None:
    """§4.5: other argument counts ⇒ arity_error; vectors, strings, numbers, booleans and nil
    are not callable ⇒ not_callable; a keyword on a non-map ⇒ type_error."""
    e = err(src)
    assert e.type == kind, (e.type, e.message)


# --------------------------------------------------------------------------- §7.13 not / identity

LOGIC_CASES = cases("logic_preds", "LOGIC_CASES")


@pytest.mark.parametrize(("src", "expected"), LOGIC_CASES)
def test_not_and_identity(src: str, expected: str) -> None:
    """§7.13 `not` (true iff falsy) and `identity` (its argument)."""
    assert show(src) == expected


# --------------------------------------------------------------------------- §7.13 fnil

FNIL_CASES = cases("logic_preds", "FNIL_CASES")


@pytest.mark.parametrize(("src", "expected"), FNIL_CASES)
def test_fnil(src: str, expected: str) -> None:
    """§7.13 `fnil`: like f except that a nil first argument is replaced by the default."""
    assert show(src) == expected


def test_fnil_errors() -> None:
    """§7.13 `fnil`: arity 2; a non-nil bad first argument still reaches f."""
    for src in ["(fnil inc)", "(fnil)", "(fnil inc 0 1)"]:
        e = err(src)
        assert e.type == "arity_error", (src, e.type)
        assert "fnil" in e.message
    e = err("((fnil + 0) 3 nil)")
    assert e.type == "type_error" and "got nil" in e.message
    e = err("((fnil inc 0) false)")
    assert e.type == "type_error" and "got boolean false" in e.message
    e = err("((fnil inc 0) nil 2)")
    assert e.type == "arity_error"
    assert show("(fnil inc 0)") == "#<fn>"


# --------------------------------------------------------------------------- §7.13 apply

APPLY_CASES = cases("logic_preds", "APPLY_CASES")


@pytest.mark.parametrize(("src", "expected"), APPLY_CASES)
def test_apply(src: str, expected: str) -> None:
    """§7.13 `apply`: f called with the leading arguments followed by the elements of V or St."""
    assert show(src) == expected


@pytest.mark.parametrize(
    ("src", "kind", "fragment"),
    [
        ("(apply + nil)", "type_error", "got nil"),
        ("(apply + 1)", "type_error", "got integer 1"),
        ("(apply + 1 2)", "type_error", "got integer 2"),
        ('(apply str "abc")', "type_error", 'got string "abc"'),
        ("(apply + {:a 1})", "type_error", "got map {:a 1}"),
        ("(apply + [1] 2)", "type_error", "got integer 2"),
        ("(apply 5 [1])", "not_callable", "5"),
        ('(apply "f" [1])', "not_callable", '"f"'),
        ("(apply nil [1])", "not_callable", "nil"),
        ("(apply [1] [0])", "not_callable", "[1]"),
        ("(apply inc [1 2])", "arity_error", "inc"),
    ],
)
def test_apply_errors(src: str, kind: str, fragment: str) -> None:
    """§7.13 `apply`: last argument nil or not V/St ⇒ type_error; f not callable ⇒
    not_callable; the call itself may fail with arity_error."""
    e = err(src)
    assert e.type == kind, (e.type, e.message)
    assert fragment in e.message, e.message
    if kind == "type_error":
        assert "apply" in e.message


def test_apply_over_a_map_says_how_to_spread_its_entries() -> None:
    """Issue 30: Clojure spreads a map's entries; the reference keeps maps out of `apply`
    (§7.13), so the error names the way that works."""
    e = err("(apply max-key second {:a 1 :b 3})")
    assert (e.type, e.message, e.hint) == (
        "type_error",
        "apply expected a vector or set as its last argument, got map {:a 1, ...}",
        "a map is spread as its [k v] pairs with (apply f (entries m))",
    )
    assert show("(apply max-key second (entries {:a 1 :b 3 :c 2}))") == "[:b 3]"


@pytest.mark.parametrize("src", ["(apply +)", "(apply)", "(apply [1 2])"])
def test_apply_written_arity(src: str) -> None:
    """§5.17: `apply` must have at least two arguments in a written call ⇒ analysis_error."""
    r = ptc.run(f"(println :ran) {src}")
    assert r.error is not None and r.error.type == "analysis_error", r.error
    assert r.prints == []


# --------------------------------------------------------------------------- §7.13 juxt

JUXT_CASES = cases("logic_preds", "JUXT_CASES")


@pytest.mark.parametrize(("src", "expected"), JUXT_CASES)
def test_juxt(src: str, expected: str) -> None:
    """§7.13 `juxt`: a one-argument function returning [(f x) (g x) …]."""
    assert show(src) == expected


def test_juxt_errors() -> None:
    """§7.13 `juxt`: the result is a one-argument function; non-callables are rejected."""
    e = err("((juxt inc) 1 2)")
    assert e.type == "arity_error", (e.type, e.message)
    e = err("((juxt inc))")
    assert e.type == "arity_error", (e.type, e.message)
    e = err("((juxt 5) 1)")
    assert e.type in {"type_error", "not_callable"}, (e.type, e.message)
    assert "5" in e.message


# --------------------------------------------------------------------------- §7.13 println

PRINTLN_CASES: list[tuple[str, list[str]]] = [
    ('(println "n =" 12 :ok [0.5 "x"])', ['n = 12 :ok [0.5 "x"]']),
    ("(println)", [""]),
    ('(println "raw \\"q\\"")', ['raw "q"']),
    ('(println "a\\nb" "c")', ["a\nb c"]),
    ('(println (take 3 "orbital"))', ["orb"]),
    ('(println ["a" "b"])', ["ab"]),
    ('(println ["ab" "c"])', ['["ab" "c"]']),
    ("(println [])", ["[]"]),
    ("(println nil)", ["nil"]),
    ("(println nil true false)", ["nil true false"]),
    ("(println \\a)", ["a"]),
    ("(println 2.5 7.0 1e7 1e-4)", ["2.5 7.0 1.0E7 1.0E-4"]),
    (f"(println {INF} {NAN})", ["##Inf ##NaN"]),
    ('(println {:a "x" "b" 2})', ['{:a "x", "b" 2}']),
    ("(println #{:r})", ["#{:r}"]),
    ('(println {:_secret 1 :name "Ada"})', ['{:name "Ada"}']),
    ("(println [{:_k 1 :b {:_c 2 :d 3}}])", ["[{:b {:d 3}}]"]),
    ('(println ["x" {:k "v"}])', ['["x" {:k "v"}]']),
    ("(println (vec (range 25)))", ["[" + " ".join(str(i) for i in range(25)) + "]"]),
    ("(println inc (fn [a] a))", ["#<builtin> #fn[a]"]),
    ("(println :a) (println :b)", [":a", ":b"]),
    ("(do (map (fn [x] (println x)) [1 2 3]) nil)", ["1", "2", "3"]),
    ('(doseq [x [1 2]] (println "x" x))', ["x 1", "x 2"]),
]


@pytest.mark.parametrize(("src", "expected"), PRINTLN_CASES)
def test_println(src: str, expected: list[str]) -> None:
    """§7.13/§9.3: one entry per call; strings raw; a vector of characters joined; everything
    else in printer form with hiding on and no limits."""
    assert prints(src) == expected


def test_println_returns_nil() -> None:
    """§7.13: `println` returns nil."""
    assert ev('(println "x")') is None
    assert show('[(println "x") 1]') == "[nil 1]"


def test_println_long_entry_is_cut() -> None:
    """§9.3/§11: an entry longer than 2,000 characters is cut to 2,000 followed by `...`."""
    [line] = prints('(println (apply str (map (fn [_] "x") (range 2500))))')
    assert line == "x" * 2000 + "..."
    [line] = prints('(println (apply str (map (fn [_] "y") (range 2000))))')
    assert line == "y" * 2000


def test_println_output_kept_on_error() -> None:
    """§1.4: prints are reported in order, also for error outcomes as far as evaluation got."""
    r = ptc.run('(println "before") (+ 1 "x") (println "after")')
    assert r.error is not None and r.error.type == "type_error"
    assert r.prints == ["before"]


def test_println_is_a_value() -> None:
    """§5.17: `println` is an ordinary function (usable as a value)."""
    r = ptc.run("(do (mapv println [1 2]) :done)")
    assert r.error is None and r.prints == ["1", "2"]


# --------------------------------------------------------------------------- arity

ARITY_CASES: list[tuple[str, str, int]] = [
    ("(not)", "not", 0),
    ("(not 1 2)", "not", 2),
    ("(identity)", "identity", 0),
    ("(identity 1 2)", "identity", 2),
]


@pytest.mark.parametrize(("src", "fn", "got"), ARITY_CASES)
def test_logic_arity_errors(src: str, fn: str, got: int) -> None:
    """§7.0/§7.13: wrong argument count ⇒ arity_error naming fn and the count."""
    e = err(src)
    assert e.type == "arity_error", (e.type, e.message)
    assert fn in e.message and f"got {got}" in e.message, e.message


# --------------------------------------------------------------------------- §7.14 predicates

SAMPLES: dict[str, str] = {
    "nil": "nil",
    "false": "false",
    "true": "true",
    "int": "0",
    "negint": "-3",
    "float": "2.5",
    "nan": NAN,
    "inf": INF,
    "ninf": NINF,
    "string": '"ab"',
    "char": "\\a",
    "onechar": '"é"',
    "empty_string": '""',
    "keyword": ":k",
    "vector": "[1 2]",
    "empty_vector": "[]",
    "map": "{:a 1}",
    "empty_map": "{}",
    "set": "#{1}",
    "empty_set": "#{}",
    "builtin": "inc",
    "fn": "(fn [x] x)",
    "where": "(where :a)",
    "regex": '(re-pattern "a")',
    "date": '(java.time.LocalDate/parse "2031-05-04")',
    "datetime": "(java.util.Date. 0)",
    "var": "#'v",
}

NUMBERS = {"int", "negint", "float", "nan", "inf", "ninf"}
STRINGS = {"string", "char", "onechar", "empty_string"}

TYPE_PREDICATES: dict[str, set[str]] = {
    "nil?": {"nil"},
    "some?": set(SAMPLES) - {"nil"},
    "boolean?": {"false", "true"},
    "number?": NUMBERS,
    "string?": STRINGS,
    "char?": {"char", "onechar"},
    "keyword?": {"keyword"},
    "vector?": {"vector", "empty_vector"},
    "map?": {"map", "empty_map"},
    "set?": {"set", "empty_set"},
    "coll?": {"vector", "empty_vector"},
    "regex?": {"regex"},
}


@pytest.mark.parametrize("pred", sorted(TYPE_PREDICATES))
def test_type_predicates(pred: str) -> None:
    """§7.14: one argument, boolean result, true exactly for the listed type."""
    names = list(SAMPLES)
    program = "[" + " ".join(f"({pred} {SAMPLES[n]})" for n in names) + "]"
    got = dict(zip(names, ev(program), strict=True))
    wrong = {n: v for n, v in got.items() if v is not (n in TYPE_PREDICATES[pred])}
    assert not wrong, f"{pred} gave the wrong answer for {wrong}"


NUMERIC_SAMPLES: dict[str, str] = {
    "zero": "0",
    "zero_float": "0.0",
    "neg_zero": "-0.0",
    "one": "1",
    "two": "2",
    "minus_three": "-3",
    "min_int": "-9223372036854775808",
    "max_int": "9223372036854775807",
    "half": "0.5",
    "minus_half": "-0.5",
    "inf": INF,
    "ninf": NINF,
    "nan": NAN,
    "nil": "nil",
    "string_zero": '"0"',
    "string_two": '"2"',
    "keyword": ":k",
    "vector": "[0]",
    "false": "false",
}

NUMERIC_PREDICATES: dict[str, set[str]] = {
    "zero?": {"zero", "zero_float", "neg_zero"},
    "pos?": {"one", "two", "max_int", "half", "inf"},
    "neg?": {"minus_three", "min_int", "minus_half", "ninf"},
}


@pytest.mark.parametrize("pred", sorted(NUMERIC_PREDICATES))
def test_numeric_predicates(pred: str) -> None:
    """§7.15: zero?/pos?/neg?; non-numbers and NaN → false (never an error)."""
    names = list(NUMERIC_SAMPLES)
    program = "[" + " ".join(f"({pred} {NUMERIC_SAMPLES[n]})" for n in names) + "]"
    got = dict(zip(names, ev(program), strict=True))
    wrong = {n: v for n, v in got.items() if v is not (n in NUMERIC_PREDICATES[pred])}
    assert not wrong, f"{pred} gave the wrong answer for {wrong}"


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("(even? 0)", True),
        ("(even? 2)", True),
        ("(even? -4)", True),
        ("(even? 1)", False),
        ("(even? -3)", False),
        ("(even? -9223372036854775808)", True),
        ("(odd? 1)", True),
        ("(odd? -3)", True),
        ("(odd? 9223372036854775807)", True),
        ("(odd? 0)", False),
        ("(odd? 2)", False),
        ("(even? nil)", False),
        ('(even? "2")', False),
        ("(odd? nil)", False),
        ("(odd? :k)", False),
        ("(odd? [1])", False),
        ("(filter even? [1 2 3 4])", [2, 4]),
        ("(remove odd? [1 2 3 4])", [2, 4]),
    ],
)
def test_even_odd(src: str, expected: Any) -> None:
    """§7.15 even?/odd?: integers only; non-numbers → false."""
    assert ev(src) == expected


@pytest.mark.parametrize("src", ["(even? 4.0)", "(odd? 3.0)", "(even? 2.5)", "(odd? -1.0)"])
def test_even_odd_of_a_float(src: str) -> None:
    """§7.15: a float (even `4.0`) given to even?/odd? ⇒ type_error."""
    e = err(src)
    assert e.type == "type_error", (e.type, e.message)
    assert ("even?" in e.message) or ("odd?" in e.message), e.message
    assert "float" in e.message, e.message


ALL_PREDICATES = sorted(TYPE_PREDICATES) + sorted(NUMERIC_PREDICATES) + ["even?", "odd?"]


@pytest.mark.parametrize("pred", ALL_PREDICATES)
def test_predicate_arity(pred: str) -> None:
    """§7.14/§7.15: predicates take exactly one argument ⇒ arity_error otherwise."""
    for src, got in [(f"({pred})", 0), (f"({pred} 1 2)", 2)]:
        e = err(src)
        assert e.type == "arity_error", (src, e.type, e.message)
        assert pred in e.message and f"got {got}" in e.message, e.message


@pytest.mark.parametrize("pred", ALL_PREDICATES)
def test_predicates_are_values(pred: str) -> None:
    """§7.14/§7.15: predicates are ordinary functions, usable with filter and namespaced."""
    assert isinstance(ev(f"(filter {pred} [1 nil])"), list)
    assert ev(f"(= ({pred} 1) (clojure.core/{pred} 1))") is True
