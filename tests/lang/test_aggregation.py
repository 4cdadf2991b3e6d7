"""Reduction, aggregation and collection predicates (LANGUAGE.md §7.5, §7.6).

Expected values are written from LANGUAGE.md, not from the implementation.
"""

from __future__ import annotations

import ptc
import pytest
from lang_helpers import cases, check_arity_error, check_type_error, err, error_cases, ev, show

# --------------------------------------------------------------------------- helpers


PEOPLE = (
    '[{:name "Ada" :age 36 :team :x} {:name "Bo" :age 25 :team :y} '
    '{:name "Cy" :age 36 :team :x} {:name "Di" :team :z}]'
)

# --------------------------------------------------------------------------- §7.5 reduce

REDUCE_CASES = cases("aggregation", "REDUCE_CASES")


@pytest.mark.parametrize(("src", "expected"), REDUCE_CASES)
def test_reduce(src: str, expected: str) -> None:
    """LANGUAGE.md §7.5 reduce: (f acc item) over V, S, St, M entries; 2-arity edge cases."""
    assert show(src) == expected


def test_reduce_effects_in_order() -> None:
    """LANGUAGE.md §7.0: effects inside reducing functions happen in order."""
    r = ptc.run("(reduce (fn [a x] (println a x) (+ a x)) 0 [1 2 3])")
    assert r.error is None
    assert r.value == 6
    assert r.prints == ["0 1", "1 2", "3 3"]


# --------------------------------------------------------------------------- §7.5 aggregation

AGG_CASES = cases("aggregation", "AGG_CASES")


@pytest.mark.parametrize(("src", "expected"), AGG_CASES)
def test_aggregation(src: str, expected: str) -> None:
    """LANGUAGE.md §7.5 sum-by/avg-by/min-by/max-by/distinct-by/group-by/frequencies/max-key."""
    assert show(src) == expected


def test_sum_by_result_types() -> None:
    """LANGUAGE.md §7.5 sum-by: integer if all integers, else float; avg-by always float."""
    assert type(ev("(sum-by :n [{:n 1} {:n 2}])")) is int
    assert type(ev("(sum-by :n [{:n 1} {:n 2.0}])")) is float
    assert type(ev("(sum-by :n [])")) is int
    assert type(ev("(avg-by :n [{:n 2} {:n 4}])")) is float


def test_group_by_and_frequencies_first_occurrence_order_many_keys() -> None:
    """LANGUAGE.md §3/§7.5: group-by/frequencies ordered by first occurrence (many keys)."""
    words = [f"w{(i * 7) % 23}" for i in range(60)]
    first_seen = list(dict.fromkeys(words))
    freq = ev("(keys (frequencies data/ws))", data={"ws": words})
    assert freq == first_seen
    groups = ev("(keys (group-by identity data/ws))", data={"ws": words})
    assert groups == first_seen


def test_group_by_string_keys_shared_and_not() -> None:
    """LANGUAGE.md §4.3/§7.5: groups go by value, whether the key strings are one shared
    string (loaded data), equal strings built separately, or a keyword of the same name."""
    rows = [{"t": t} for t in ["gold", "silver", "gold", "bronze", "gold"] * 3]
    assert ev("(update-vals (group-by :t data/rows) count)", data={"rows": rows}) == {
        "gold": 9,
        "silver": 3,
        "bronze": 3,
    }
    # the same text built at run time (str) is a new string each time: same groups
    src = '(update-vals (group-by #(str "g" (mod % 3)) (range 12)) count)'
    assert show(src) == '{"g0" 4, "g1" 4, "g2" 4}'
    # a keyword and a string of the same name are different keys
    src = '(update-vals (group-by identity [:a "a" :a "a" (first (keys {:a 1})) (str "a")]) count)'
    assert show(src) == '{:a 3, "a" 3}'


def test_group_by_more_keys_than_recent_ones_keeps_every_member_in_order() -> None:
    """LANGUAGE.md §7.5: with more distinct keys than group-by remembers, cycling through them,
    every element lands in its own key's group, in order."""
    keys = [f"k{i}" for i in range(7)]
    rows = [{"k": keys[i % 7], "i": i} for i in range(70)]
    got = ev("(update-vals (group-by :k data/rows) #(mapv :i %))", data={"rows": rows})
    assert list(got) == keys
    assert got == {k: list(range(j, 70, 7)) for j, k in enumerate(keys)}


AGG_TYPE_ERRORS = error_cases("aggregation", "AGG_TYPE_ERRORS")


@pytest.mark.parametrize(("src", "fn", "label"), AGG_TYPE_ERRORS)
def test_aggregation_type_errors(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0/§7.5: non-numeric values and unsupported inputs ⇒ type_error."""
    check_type_error(src, fn, label)


@pytest.mark.parametrize(
    "src",
    [
        '(max-by :a [{:a 1} {:a "x"}])',
        "(min-by :a [{:a 1} {:a :k}])",
        "(max-by :a [{:a {}} {:a {}}])",
        "(max-by :a [{:a Double/NaN} {:a 1}])",
        '(max-key identity 1 "a")',
        "(min-key :a {:a 1} {:a :b})",
        "(min-key :a {:a 1} {:b 2})",
    ],
)
def test_aggregation_incomparable_is_type_error(src: str) -> None:
    """LANGUAGE.md §3 natural order: min-by/max-by/min-key/max-key on incomparables ⇒ type_error."""
    assert err(src).type == "type_error"


@pytest.mark.parametrize(
    ("src", "fn", "accepted", "got"),
    [
        ("(reduce +)", "reduce", "2 or 3", 1),
        ("(reduce + 0 [1] [2])", "reduce", "2 or 3", 4),
        ("(sum-by :n)", "sum-by", "2", 1),
        ("(sum-by :n [] [])", "sum-by", "2", 3),
        ("(avg-by :n)", "avg-by", "2", 1),
        ("(min-by :n)", "min-by", "2", 1),
        ("(max-by :n [] [])", "max-by", "2", 3),
        ("(distinct-by :n)", "distinct-by", "2", 1),
        ("(group-by :n)", "group-by", "2", 1),
        ("(group-by :n [] [])", "group-by", "2", 3),
        ("(frequencies)", "frequencies", "1", 0),
        ("(frequencies [] [])", "frequencies", "1", 2),
        ("(max-key count)", "max-key", "2+", 1),
        ("(min-key count)", "min-key", "2+", 1),
        ("(max-key)", "max-key", "2+", 0),
    ],
)
def test_aggregation_arity(src: str, fn: str, accepted: str, got: int) -> None:
    """LANGUAGE.md §7.0/§7.5 arities (max-key with only f ⇒ arity_error)."""
    check_arity_error(src, fn, accepted, got)


def test_reduce_function_arity_mismatch() -> None:
    """LANGUAGE.md §7.0: reduce passes (acc, item) to f."""
    assert err("(reduce (fn [x] x) [1 2])").type == "arity_error"


# --------------------------------------------------------------------------- §7.6 predicates

PRED_CASES = cases("aggregation", "PRED_CASES")


@pytest.mark.parametrize(("src", "expected"), PRED_CASES)
def test_collection_predicates(src: str, expected: str) -> None:
    """LANGUAGE.md §7.6 some/every?/not-any?/contains? (§4.3 identity equality, §4.4)."""
    assert show(src) == expected


def test_predicates_return_booleans() -> None:
    """LANGUAGE.md §7.6: every?/not-any?/contains? give true/false, not the truthy value."""
    assert ev("(every? identity [1 2])") is True
    assert ev("(not-any? identity [nil false])") is True
    assert ev("(contains? {:a 1} :a)") is True


def test_some_short_circuits() -> None:
    """LANGUAGE.md §7.6 some: first truthy (pred x); later elements are not examined."""
    r = ptc.run("(some (fn [x] (println x) (> x 1)) [1 2 3 4])")
    assert r.error is None
    assert r.value is True
    assert r.prints == ["1", "2"]


PRED_TYPE_ERRORS = error_cases("aggregation", "PRED_TYPE_ERRORS")


@pytest.mark.parametrize(("src", "fn", "label"), PRED_TYPE_ERRORS)
def test_predicate_type_errors(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0/§7.6: inputs other than those named ⇒ type_error."""
    check_type_error(src, fn, label)


@pytest.mark.parametrize("src", ["(some [:a] [{:a 1}])", "(every? [:a] [{:a 1}])"])
def test_predicate_vector_callable(src: str) -> None:
    """LANGUAGE.md §7.0: a vector where a callable is expected ⇒ type_error (use :k)."""
    e = err(src)
    assert e.type == "type_error"
    assert "use :a" in f"{e.message} {e.hint or ''}"


@pytest.mark.parametrize(
    ("src", "fn", "accepted", "got"),
    [
        ("(some even?)", "some", "2", 1),
        ("(some even? [] [])", "some", "2", 3),
        ("(every? even?)", "every?", "2", 1),
        ("(not-any? even?)", "not-any?", "2", 1),
        ("(contains? {})", "contains?", "2", 1),
        ("(contains? {} :a :b)", "contains?", "2", 3),
    ],
)
def test_predicate_arity(src: str, fn: str, accepted: str, got: int) -> None:
    """LANGUAGE.md §7.0/§7.6 arities."""
    check_arity_error(src, fn, accepted, got)
