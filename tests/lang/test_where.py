"""Predicate builders (LANGUAGE.md §6): `where` with its operators and coercion rules, and
`all-of` / `any-of` / `none-of`.

Expected values are written from LANGUAGE.md. Each `where` case maps the predicate over a vector
of items and compares the vector of booleans, so one row documents several items at once.
"""

from __future__ import annotations

import ptc
import pytest
from lang_helpers import err, ev
from lang_helpers import show_printed as show

# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- §6.1 where

# (where-form, items, expected booleans)
WHERE_CASES: list[tuple[str, str, list[bool]]] = [
    # no operator: field truthy
    (
        "(where :a)",
        '[{:a 0} {:a ""} {:a nil} {:a false} {} 5 nil {:a []}]',
        [True, True, False, False, False, False, False, True],
    ),
    ("(where :a)", '[{"a" true}]', [True]),  # flexible lookup
    # = with coercion: keyword compared as its name, on both sides
    (
        "(where :genre = :poetry)",
        '[{"genre" "poetry"} {:genre "drama"} {:genre :poetry}]',
        [True, False, True],
    ),
    ('(where :genre = "poetry")', '[{:genre :poetry} {:genre "Poetry"}]', [True, False]),
    ("(where :a = 3)", '[{:a 3.0} {:a 3} {:a "3"} {:a nil} {}]', [True, True, False, False, False]),
    ("(where :a = 3.0)", "[{:a 3}]", [True]),
    ("(where :a = true)", '[{:a true} {:a "true"} {:a 1} {:a :true}]', [True, False, False, False]),
    ("(where :a = false)", "[{:a false} {:a nil} {}]", [True, False, False]),
    (
        "(where :a = nil)",
        "[{:a nil} {} {:a false} 5 nil {:a 0}]",
        [True, True, False, True, True, False],
    ),
    ('(where :a = "x")', '[{:a "x"} {:a :x} {:a "X"} {:a ["x"]}]', [True, True, False, False]),
    ("(where :a = [1 2])", "[{:a [1 2]} {:a [1.0 2]} {:a [2 1]}]", [True, True, False]),
    ("(where :a = {:b 1})", "[{:a {:b 1}} {:a {:b 2}}]", [True, False]),
    # not= is the negation of =
    ("(where :a not= :x)", '[{:a "x"} {:a :y} {} {:a nil}]', [False, True, True, True]),
    ("(where :a not= nil)", "[{:a nil} {} {:a false}]", [False, False, True]),
    ("(where :a not= 3)", "[{:a 3.0} {:a 4}]", [False, True]),
    # ordering: both numbers or both strings; nil / type mix → false, never an error
    (
        "(where :a > 2)",
        '[{:a 3} {:a "3"} {:a nil} {} {:a 2.5} {:a 2} {:a :k} {:a [3]}]',
        [True, False, False, False, True, False, False, False],
    ),
    ("(where :a < 2)", "[{:a 1} {:a -5.5} {:a 2} {:a nil}]", [True, True, False, False]),
    ("(where :a >= 40)", "[{:a 40} {:a 40.0} {:a 39.9}]", [True, True, False]),
    ("(where :a <= 0)", "[{:a 0} {:a -0.0} {:a 1}]", [True, True, False]),
    (
        '(where :a < "m")',
        '[{:a "b"} {:a "z"} {:a :b} {:a 1} {:a "M"}]',
        [True, False, False, False, True],
    ),
    ('(where :a >= "b")', '[{:a "b"} {:a "ba"} {:a "a"}]', [True, True, False]),
    ("(where :a > nil)", "[{:a 1} {:a nil}]", [False, False]),
    ('(where :a > "1")', "[{:a 2}]", [False]),
    (
        "(where :a > Double/NEGATIVE_INFINITY)",
        "[{:a 1} {:a Double/NaN} {:a Double/NEGATIVE_INFINITY}]",
        [True, False, False],
    ),
    # in: value is a vector or set; some element equals f after coercion; f nil → false
    (
        '(where :a in [:x "y" 3])',
        '[{:a "x"} {:a :y} {:a 3.0} {:a nil} {:a 4} {}]',
        [True, True, True, False, False, False],
    ),
    ("(where :a in #{1 2})", "[{:a 1} {:a 1.0} {:a 3}]", [True, True, False]),
    ('(where :a in #{"x"})', "[{:a :x}]", [True]),
    ("(where :a in [nil 1])", "[{:a nil} {} {:a 1}]", [False, False, True]),
    ("(where :a in [])", "[{:a 1}]", [False]),
    ("(where :a in 5)", "[{:a 5}]", [False]),
    ('(where :a in "abc")', '[{:a "a"} {:a "abc"}]', [False, False]),
    ("(where :a in {:x 1})", "[{:a :x}]", [False]),
    # includes: f a vector/set containing value, or f a string containing value as substring
    (
        "(where :a includes :x)",
        '[{:a ["x"]} {:a #{:x}} {:a "wxy"} {:a "abc"} {:a nil} {:a 5}]',
        [True, True, True, False, False, False],
    ),
    (
        '(where :a includes "b")',
        '[{:a "abc"} {:a [:b]} {:a #{"b"}} {:a ["abc"]}]',
        [True, True, True, False],
    ),
    (
        "(where :tags includes 3)",
        "[{:tags [1 2 3.0]} {:tags #{3}} {:tags []} {}]",
        [True, True, False, False],
    ),
    ('(where :a includes "")', '[{:a "x"} {:a ""}]', [True, True]),
    ("(where :a includes nil)", "[{:a [nil]} {:a [1]}]", [True, False]),
    ('(where :a includes "k")', "[{:a {:k 1}} {:a :k}]", [False, False]),
    ("(where :a includes 1)", '[{:a "1"} {:a "x1"}]', [False, False]),
    # vector paths of keywords/strings; missing key or non-map intermediate → nil
    (
        "(where [:dims :h] >= 40)",
        "[{:dims {:h 52}} {:dims {}} {} {:dims 5} {:dims nil}]",
        [True, False, False, False, False],
    ),
    (
        '(where ["a" :b] = 1)',
        '[{:a {"b" 1}} {:a 5} {:a nil} {"a" {:b 1}}]',
        [True, False, False, True],
    ),
    ("(where [:a :b :c] = nil)", "[{:a {:b {:c nil}}} {:a 1} {}]", [True, True, True]),
    ("(where [:a] = 1)", "[{:a 1}]", [True]),
    ("(where [:a :b])", "[{:a {:b 0}} {:a {:b false}} {:a [1]}]", [True, False, False]),
]


@pytest.mark.parametrize(("form", "items", "expected"), WHERE_CASES)
def test_where(form: str, items: str, expected: list[bool]) -> None:
    """§6.1: `where` operators with the coercion rules; results are true/false only."""
    got = ev(f"(mapv {form} {items})")
    assert got == expected
    assert all(type(b) is bool for b in got)


def test_where_examples_from_the_reference() -> None:
    """§6.1: the two examples of the reference."""
    assert show('(filter (where :genre = :poetry) [{"genre" "poetry"} {:genre "drama"}])') == (
        '[{"genre" "poetry"}]'
    )
    assert show("(filter (where [:dims :h] >= 40) [{:dims {:h 52}} {:dims {}}])") == (
        "[{:dims {:h 52}}]"
    )


def test_where_value_evaluated_once() -> None:
    """§6.1: `value` is an expression evaluated once, when the predicate is built."""
    r = ptc.run('(filter (where :a = (do (println "built") 1)) [{:a 1} {:a 2} {:a 1}])')
    assert r.error is None
    assert r.prints == ["built"]
    assert ptc.to_clojure(r.value)[0] == "[{:a 1} {:a 1}]"


def test_where_value_from_locals_and_data() -> None:
    """§6.1: the value may be any expression: a local, data, a computed vector."""
    items = [{"city": "Oslo", "pop": 700}, {"city": "Bergen", "pop": 290}]
    assert ev("(let [m 500] (count (filter (where :pop > m) data/items)))", data={"items": items})
    got = ev(
        '(filter (where :city in (vec (map str ["Oslo" "Rome"]))) data/items)',
        data={"items": items},
    )
    assert [x["city"] for x in got] == ["Oslo"]


def test_where_over_python_data_with_string_keys() -> None:
    """§3/§6.1: keys that came from Python strings are read flexibly by `where` paths."""
    data = {"rows": [{"k": "a", "n": {"v": 1}}, {"k": "b", "n": {"v": 2}}]}
    assert ev("(count (filter (where [:n :v] > 1) data/rows))", data=data) == 1
    assert ev("(count (filter (where :k = :a) data/rows))", data=data) == 1


def test_where_is_a_function_value() -> None:
    """§3/§9.1: `where` produces an ordinary function value printing as #<fn>."""
    assert show("(where :a = 1)") == "#<fn>"
    assert ev("(let [p (where :a = 1)] [(p {:a 1}) (p {:a 2})])") == [True, False]
    assert ev("(do (def big? (where :n > 10)) (big? {:n 11}))") is True
    assert ev("(some (where :a = 2) [{:a 1} {:a 2}])") is True
    assert ev("(every? (where :a) [{:a 1} {:a 2}])") is True


# (program, required fragment of message+hint); all are analysis_error and nothing runs
WHERE_ANALYSIS_ERRORS: list[tuple[str, str]] = [
    ("(where :f 3)", "="),  # missing operator: hint (where :f = 3)
    ("(where :f foo 3)", "not="),  # bad operator: the operator list
    ("(where :f == 3)", "includes"),
    ("(where :f contains 3)", "in"),
    ('(where :f "=" 3)', "="),
    ("(where)", "where"),
    ("(where :a =)", "="),
    ("(where :a = 1 2)", "where"),
    ("(where 5 = 3)", "where"),
    ('(where "f" = 3)', "where"),  # field must be a keyword or a vector path
    ("(where nil)", "where"),
    ("(where f = 3)", "where"),
    ("(where [:a 1] = 3)", "where"),  # path elements are keywords/strings
    ("(where [:a [:b]] = 3)", "where"),
]


@pytest.mark.parametrize(("src", "fragment"), WHERE_ANALYSIS_ERRORS)
def test_where_analysis_errors(src: str, fragment: str) -> None:
    """§6.1: a bad field, operator or shape ⇒ analysis_error before anything runs."""
    r = ptc.run(f"(println :ran) {src}")
    assert r.error is not None, r.value
    assert r.error.type == "analysis_error", (r.error.type, r.error.message)
    assert r.prints == []
    assert fragment in f"{r.error.message} {r.error.hint}"


def test_where_missing_operator_hint() -> None:
    """§10.3: `(where :f 3)` hints `(where :f = 3)` (wording may vary) and lists operators."""
    e = err("(where :status 3)")
    text = f"{e.message} {e.hint}"
    assert "=" in text
    e = err("(where :status is 3)")
    text = f"{e.message} {e.hint}"
    for op in ["=", "not=", ">", "<", ">=", "<=", "in", "includes"]:
        assert op in text, (op, text)


def test_where_operator_symbol_cannot_be_a_local() -> None:
    """§6.1: `op` is one of the listed symbols written literally (not an evaluated value)."""
    e = err("(let [op =] (where :a op 1))")
    assert e.type == "analysis_error"


def test_where_is_not_a_value() -> None:
    """§5: special-form/builder names are not values ⇒ undefined_variable."""
    e = err("(map where [1])")
    assert e.type == "undefined_variable", (e.type, e.message)


def test_where_arity_of_predicate() -> None:
    """§6.1: `where` builds a one-argument predicate."""
    e = err("((where :a) {:a 1} {:a 2})")
    assert e.type == "arity_error"
    e = err("((where :a))")
    assert e.type == "arity_error"


# --------------------------------------------------------------------------- §6.2 combinators

COMBINATOR_CASES: list[tuple[str, bool]] = [
    ("((all-of) 1)", True),
    ("((all-of) nil)", True),
    ("((none-of) 1)", True),
    ("((any-of) 1)", False),
    ("((any-of) nil)", False),
    ("((all-of :a :b) {:a 1 :b 2})", True),
    ("((all-of :a :b) {:a 1})", False),
    ("((all-of :a :b) {:a 1 :b false})", False),
    ("((any-of :a :b) {:b 1})", True),
    ("((any-of :a :b) {:c 1})", False),
    ("((none-of :a :b) {:c 1})", True),
    ("((none-of :a :b) {:b 0})", False),
    ("((all-of pos? even?) 4)", True),
    ("((all-of pos? even?) 3)", False),
    ("((any-of neg? zero?) 0)", True),
    ("((none-of neg? zero?) 1)", True),
    ("((all-of #{1 2}) 1)", True),
    ("((all-of #{1 2}) 3)", False),
    ("((any-of {:a 1}) :a)", True),
    ("((any-of {:a nil}) :a)", False),
    ("((all-of (where :a > 1) #(< (:a %) 5)) {:a 3})", True),
    ("((all-of (where :a > 1) #(< (:a %) 5)) {:a 7})", False),
    ('((any-of (where :t = :x) (where :t = :y)) {:t "y"})', True),
    ("((none-of (where :t = :x)) {:t :x})", False),
    ("((all-of (any-of :a :b) (none-of :c)) {:b 1})", True),
    ("((all-of (any-of :a :b) (none-of :c)) {:b 1 :c 1})", False),
    ("((all-of identity) 0)", True),  # truthiness, not true-ness
    ("((all-of identity) false)", False),
]


@pytest.mark.parametrize(("src", "expected"), COMBINATOR_CASES)
def test_combinators(src: str, expected: bool) -> None:
    """§6.2: all truthy / some truthy / none truthy; always true/false."""
    got = ev(src)
    assert got is expected


def test_combinators_with_filter() -> None:
    """§6.2: combine predicates with these, not and/or."""
    items = "[{:g :poetry :y 1900} {:g :drama :y 1950} {:g :poetry :y 2001}]"
    src = f"(map :y (filter (all-of (where :g = :poetry) (where :y > 1950)) {items}))"
    assert ev(src) == [2001]
    src = f"(map :y (filter (any-of (where :g = :drama) (where :y < 1901)) {items}))"
    assert ev(src) == [1900, 1950]
    src = f"(map :y (remove (none-of (where :y = 1900)) {items}))"
    assert ev(src) == [1900]


def test_combinators_short_circuit() -> None:
    """§6.2: predicates are applied left to right, short-circuiting."""
    effect = '(fn [x] (println "called") true)'
    r = ptc.run(f"((all-of :a {effect}) {{}})")
    assert r.value is False and r.prints == []
    r = ptc.run(f"((any-of :a {effect}) {{:a 1}})")
    assert r.value is True and r.prints == []
    r = ptc.run(f"((none-of :a {effect}) {{:a 1}})")
    assert r.value is False and r.prints == []
    r = ptc.run(f"((all-of {effect} {effect}) 1)")
    assert r.value is True and r.prints == ["called", "called"]


def test_combinator_errors() -> None:
    """§6.2: the arguments are one-argument callables; the result takes one argument."""
    e = err("((all-of 5) 1)")
    assert e.type in {"type_error", "not_callable"}, (e.type, e.message)
    e = err('((any-of "x") 1)')
    assert e.type in {"type_error", "not_callable"}, (e.type, e.message)
    e = err("((none-of :a) {:a 1} {:a 2})")
    assert e.type == "arity_error", (e.type, e.message)
    e = err("((all-of (fn [a b] a)) 1)")
    assert e.type == "arity_error", (e.type, e.message)


@pytest.mark.parametrize("name", ["all-of", "any-of", "none-of"])
def test_combinator_results_are_function_values(name: str) -> None:
    """§3: combinator results are function values printing as #<fn>."""
    assert show(f"({name} :a)") == "#<fn>"
