"""Sequence access, subsequences, ordering, transforming and building (LANGUAGE.md §7.1-§7.4).

Expected values are written from LANGUAGE.md, not from the implementation. Results are compared
through their Clojure printed form (``show``) so that order, keyword-vs-string and int-vs-float
all matter.
"""

from __future__ import annotations

import ptc
import pytest
from lang_helpers import (
    cases,
    check_arity_error,
    check_type_error,
    err,
    error_cases,
    ev,
    full_text,
    show,
)

# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- §7.1 access

ACCESS_CASES = cases("collections", "ACCESS_CASES")


@pytest.mark.parametrize(("src", "expected"), ACCESS_CASES)
def test_sequence_access(src: str, expected: str) -> None:
    """LANGUAGE.md §7.1 first/second/last/nth/rest/next/ffirst…/count/empty?/not-empty/seq."""
    assert show(src) == expected


def test_rest_and_next_return_vectors_on_strings() -> None:
    """LANGUAGE.md §7.1 rest: 'V or S without its first element, as V'."""
    assert ev('(rest "abc")') == ["b", "c"]
    assert ev('(vector? (rest "abc"))') is True
    assert ev('(vector? (next "abc"))') is True


ACCESS_TYPE_ERRORS = error_cases("collections", "ACCESS_TYPE_ERRORS")


@pytest.mark.parametrize(("src", "fn", "label"), ACCESS_TYPE_ERRORS)
def test_sequence_access_type_errors(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0/§7.1: inputs other than those named ⇒ type_error naming fn and type."""
    check_type_error(src, fn, label)


@pytest.mark.parametrize(
    ("src", "fn", "label"),
    [
        ("(first #{1 2})", "first", "set"),
        ("(second #{1 2})", "second", "set"),
        ("(last #{1 2})", "last", "set"),
        ("(nth #{1 2} 0)", "nth", "set"),
        ("(rest #{1 2})", "rest", "set"),
        ("(next #{1 2})", "next", "set"),
        ("(first {:a 1})", "first", "map"),
        ("(last {:a 1})", "last", "map"),
        ("(nth {:a 1} 0)", "nth", "map"),
        ("(rest {:a 1})", "rest", "map"),
    ],
)
def test_ordered_access_on_unordered_collections(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0: ordered operations given a set or map say that it is unordered."""
    e = check_type_error(src, fn, label)
    text = full_text(e)
    assert "unordered" in text, text
    if label == "map":
        assert "keys" in text and "vals" in text and "entries" in text, text


@pytest.mark.parametrize(
    ("src", "fn", "accepted", "got"),
    [
        ("(first)", "first", "1", 0),
        ("(first [1] [2])", "first", "1", 2),
        ("(second)", "second", "1", 0),
        ("(last [1] [2])", "last", "1", 2),
        ("(nth [1])", "nth", "2", 1),
        ("(nth [1] 0 :default)", "nth", "2", 3),
        ("(rest)", "rest", "1", 0),
        ("(next [1] [2])", "next", "1", 2),
        ("(ffirst)", "ffirst", "1", 0),
        ("(fnext [1] [2])", "fnext", "1", 2),
        ("(nfirst)", "nfirst", "1", 0),
        ("(nnext [1] [2])", "nnext", "1", 2),
        ("(count)", "count", "1", 0),
        ("(count [1] [2])", "count", "1", 2),
        ("(empty?)", "empty?", "1", 0),
        ("(not-empty [1] [2])", "not-empty", "1", 2),
        ("(seq)", "seq", "1", 0),
    ],
)
def test_sequence_access_arity(src: str, fn: str, accepted: str, got: int) -> None:
    """LANGUAGE.md §7.0/§7.1: unsupported arity ⇒ arity_error stating accepted arities."""
    check_arity_error(src, fn, accepted, got)


# --------------------------------------------------------------------------- §7.2 subsequences

SUBSEQ_CASES = cases("collections", "SUBSEQ_CASES")


@pytest.mark.parametrize(("src", "expected"), SUBSEQ_CASES)
def test_subsequences(src: str, expected: str) -> None:
    """LANGUAGE.md §7.2 take/drop/take-while/drop-while/distinct/reverse."""
    assert show(src) == expected


SORT_CASES = cases("collections", "SORT_CASES")


@pytest.mark.parametrize(("src", "expected"), SORT_CASES)
def test_sort_and_sort_by(src: str, expected: str) -> None:
    """LANGUAGE.md §7.2 sort/sort-by, comparators (:asc/:desc/2-arg, truthy/swapped), §3 order."""
    assert show(src) == expected


def test_sort_large_input_is_stable() -> None:
    """LANGUAGE.md §7.2 sort-by is stable (checked on enough items to use a real sort)."""
    items = [{"k": i % 3, "i": i} for i in range(60)]
    out = ev("(sort-by :k data/items)", data={"items": items})
    expected = sorted(items, key=lambda d: d["k"])
    assert [d["i"] for d in out] == [d["i"] for d in expected]
    out_desc = ev("(sort-by :k > data/items)", data={"items": items})
    expected_desc = sorted(items, key=lambda d: -d["k"])
    assert [d["i"] for d in out_desc] == [d["i"] for d in expected_desc]


SUBSEQ_TYPE_ERRORS = error_cases("collections", "SUBSEQ_TYPE_ERRORS")


@pytest.mark.parametrize(("src", "fn", "label"), SUBSEQ_TYPE_ERRORS)
def test_subsequence_type_errors(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.2: non-integer n ⇒ type_error; non-V/S input ⇒ type_error."""
    check_type_error(src, fn, label)


@pytest.mark.parametrize(
    ("src", "fn", "label"),
    [
        ("(take 1 #{1 2})", "take", "set"),
        ("(drop 1 {:a 1})", "drop", "map"),
        ("(take-while pos? #{1})", "take-while", "set"),
        ("(distinct #{1 2})", "distinct", "set"),
        ("(reverse #{1 2})", "reverse", "set"),
        ("(reverse {:a 1})", "reverse", "map"),
        ("(sort #{3 1})", "sort", "set"),
        ("(sort {:b 1 :a 2})", "sort", "map"),
        ("(sort > #{3 1})", "sort", "set"),
        ("(sort-by identity #{3 1})", "sort-by", "set"),
    ],
)
def test_subsequences_refuse_unordered(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0/§7.2: ordered operations on sets/maps ⇒ type_error saying unordered."""
    e = check_type_error(src, fn, label)
    assert "unordered" in full_text(e)


@pytest.mark.parametrize(
    "src",
    [
        '(sort [1 "a"])',
        "(sort [nil 1])",
        "(sort [1 nil])",
        '(sort [:a "a"])',
        "(sort [{:a 1} {:a 2}])",
        "(sort [#{1} #{2}])",
        "(sort [1 Double/NaN])",
        "(sort [true 1])",
        '(sort [[1] ["a"]])',
        "(sort [[1] 1])",
        "(sort :desc [1 :a])",
        "(sort-by :a [{:a 1} {}])",
        '(sort-by :a [{:a 1} {:a "x"}])',
        "(sort-by identity [(fn [] 1) (fn [] 2)])",
        "(compare 1 nil)",
    ],
)
def test_sort_incomparable_is_type_error(src: str) -> None:
    """LANGUAGE.md §3 natural order / §7.2: incomparable elements ⇒ type_error."""
    assert err(src).type == "type_error"


@pytest.mark.parametrize("src", ["(sort :foo [2 1])", "(sort-by :n :bogus [{:n 1} {:n 2}])"])
def test_invalid_keyword_comparator(src: str) -> None:
    """LANGUAGE.md §7.2: a keyword comparator other than :asc/:desc ⇒ type_error."""
    e = err(src)
    assert e.type == "type_error"
    assert "invalid comparator" in e.message


def test_vector_as_callable_comparator_is_type_error() -> None:
    """LANGUAGE.md §7.0: a vector given where a callable is expected ⇒ type_error (use :k)."""
    e = err("(take-while [:ok] [{:ok true}])")
    assert e.type == "type_error"
    assert "take-while" in e.message
    assert "use :ok" in full_text(e)


@pytest.mark.parametrize(
    "src", ["(sort-by :k [{:k 2} {:k 1}] >)", "(sort-by :k [{:k 2} {:k 1}] :desc)"]
)
def test_sort_by_comparator_last_has_hint(src: str) -> None:
    """LANGUAGE.md §7.2/§10.3: comparator written last ⇒ type_error with hint."""
    e = err(src)
    assert e.type == "type_error"
    assert e.hint is not None and "(sort-by key cmp coll)" in e.hint, e.hint


def test_sort_by_three_arity_on_string_is_type_error() -> None:
    """LANGUAGE.md §7.2 sort-by: S is accepted by the 2-arity only."""
    e = err('(sort-by identity compare "bca")')
    assert e.type == "type_error"
    assert "sort-by" in e.message


def test_sort_comparator_effects_and_exactly_two_args() -> None:
    """LANGUAGE.md §7.0: comparators receive (a, b)."""
    assert ev("(sort (fn [a b] (compare a b)) [2 1 3])") == [1, 2, 3]
    assert err("(sort (fn [a] 0) [2 1 3])").type == "arity_error"


@pytest.mark.parametrize(
    ("src", "fn", "accepted", "got"),
    [
        ("(take 1)", "take", "2", 1),
        ("(take 1 [1] [2])", "take", "2", 3),
        ("(drop [1])", "drop", "2", 1),
        ("(take-while pos?)", "take-while", "2", 1),
        ("(drop-while pos? [1] [2])", "drop-while", "2", 3),
        ("(distinct)", "distinct", "1", 0),
        ("(distinct [1] [2])", "distinct", "1", 2),
        ("(reverse)", "reverse", "1", 0),
        ("(sort)", "sort", "1 or 2", 0),
        ("(sort < [1] [2])", "sort", "1 or 2", 3),
        ("(sort-by :a)", "sort-by", "2 or 3", 1),
        ("(sort-by :a > [1] [2])", "sort-by", "2 or 3", 4),
    ],
)
def test_subsequence_arity(src: str, fn: str, accepted: str, got: int) -> None:
    """LANGUAGE.md §7.0/§7.2 arities."""
    check_arity_error(src, fn, accepted, got)


# --------------------------------------------------------------------------- §7.3 transforming

TRANSFORM_CASES = cases("collections", "TRANSFORM_CASES")


@pytest.mark.parametrize(("src", "expected"), TRANSFORM_CASES)
def test_transforming(src: str, expected: str) -> None:
    """LANGUAGE.md §7.3 map/mapv/map-indexed/filter/remove/find/pluck."""
    assert show(src) == expected


def test_map_with_string_as_function_is_not_callable() -> None:
    """LANGUAGE.md §4.5/§7.0: strings are not callables (only fn, keyword, map, set)."""
    e = err('(map "a" [{:a 1}])')
    assert e.type in ("not_callable", "type_error"), e.type


def test_map_and_mapv_are_identical() -> None:
    """LANGUAGE.md §7.3: map and mapv are identical functions."""
    for src in ["[1 2]", '"ab"', "#{1 2}", "{:a 1}", "nil"]:
        assert show(f"(map identity {src})") == show(f"(mapv identity {src})")


def test_map_is_eager_and_effects_happen_in_order() -> None:
    """LANGUAGE.md §7.0: effects inside functions passed to builtins happen normally, in order."""
    r = ptc.run("(do (map println [1 2 3]) (filter (fn [x] (println :f x)) [4]) :done)")
    assert r.error is None
    assert r.value == "done"
    assert r.prints == ["1", "2", "3", ":f 4"]


@pytest.mark.parametrize(
    ("src", "fn"),
    [("(map :k {:k 1})", "map"), ("(mapv :k {:k 1 :j 2})", "mapv")],
)
def test_keyword_map_over_single_map(src: str, fn: str) -> None:
    """LANGUAGE.md §7.3/§10.3: (map :k one-map) ⇒ type_error, expects a list of maps."""
    e = err(src)
    assert e.type == "type_error"
    assert "keyword accessor requires a list of maps" in e.message
    assert e.hint is not None and "(:k m)" in e.hint, e.hint


def test_pluck_over_single_map() -> None:
    """LANGUAGE.md §7.3 pluck: single map ⇒ type_error, hint (:k m)."""
    e = err("(pluck :k {:k 1})")
    assert e.type == "type_error"
    assert "pluck" in e.message
    assert e.hint is not None and "(:k m)" in e.hint, e.hint


@pytest.mark.parametrize(
    ("src", "fn", "kw"),
    [
        ("(map [:a] [{:a 1}])", "map", ":a"),
        ("(filter [:ok] [{:ok true}])", "filter", ":ok"),
        ("(remove [:ok] [{:ok true}])", "remove", ":ok"),
        ("(find [:ok] [{:ok true}])", "find", ":ok"),
        ("(map-indexed [:a] [{:a 1}])", "map-indexed", ":a"),
    ],
)
def test_vector_as_callable_is_type_error(src: str, fn: str, kw: str) -> None:
    """LANGUAGE.md §7.0/§10.3: a vector where a callable is expected ⇒ type_error, use :k."""
    e = err(src)
    assert e.type == "type_error"
    assert fn in e.message
    assert f"use {kw}" in full_text(e)


TRANSFORM_TYPE_ERRORS = error_cases("collections", "TRANSFORM_TYPE_ERRORS")


@pytest.mark.parametrize(("src", "fn", "label"), TRANSFORM_TYPE_ERRORS)
def test_transform_type_errors(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0/§7.3: unsupported inputs ⇒ type_error naming function and type."""
    check_type_error(src, fn, label)


@pytest.mark.parametrize(
    ("src", "fn", "accepted", "got"),
    [
        ("(map inc)", "map", "2", 1),
        ("(map + [1] [2] [3] [4])", "map", "4", 5),
        ("(mapv inc)", "mapv", "2", 1),
        ("(map-indexed vector)", "map-indexed", "2", 1),
        ("(map-indexed vector [1] [2])", "map-indexed", "2", 3),
        ("(filter even?)", "filter", "2", 1),
        ("(filter even? [1] [2])", "filter", "2", 3),
        ("(remove even?)", "remove", "2", 1),
        ("(find even?)", "find", "2", 1),
        ("(pluck :a)", "pluck", "2", 1),
        ("(pluck :a [] [])", "pluck", "2", 3),
    ],
)
def test_transform_arity(src: str, fn: str, accepted: str, got: int) -> None:
    """LANGUAGE.md §7.0/§7.3 arities."""
    check_arity_error(src, fn, accepted, got)


def test_map_function_wrong_arity_is_arity_error() -> None:
    """LANGUAGE.md §7.0: map passes one element per collection to f."""
    assert err("(map (fn [a b] a) [1 2])").type == "arity_error"
    assert err("(map-indexed (fn [x] x) [1 2])").type == "arity_error"


# --------------------------------------------------------------------------- §7.4 building

BUILD_CASES = cases("collections", "BUILD_CASES")


@pytest.mark.parametrize(("src", "expected"), BUILD_CASES)
def test_building(src: str, expected: str) -> None:
    """LANGUAGE.md §7.4 conj/concat/into/flatten/zip/interleave/interpose/partition/range/…."""
    assert show(src) == expected


def test_range_with_float_step_produces_floats() -> None:
    """LANGUAGE.md §7.4 range: floats allowed."""
    assert ev("(range 0 1 0.5)") == [0, 0.5]
    assert ev("(range 0 1 0.25)") == [0, 0.25, 0.5, 0.75]
    assert ev("(range 2.5)") == [0, 1, 2]
    assert ev("(range 0 2.5)") == [0, 1, 2]
    assert [type(x) for x in ev("(range 0.5 2)")] == [float, float]


BUILD_TYPE_ERRORS = error_cases("collections", "BUILD_TYPE_ERRORS")


@pytest.mark.parametrize(("src", "fn", "label"), BUILD_TYPE_ERRORS)
def test_building_type_errors(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0/§7.4: inputs not named in the row ⇒ type_error."""
    check_type_error(src, fn, label)


def test_into_map_invalid_entry_message() -> None:
    """LANGUAGE.md §7.4 into: non-pair into M ⇒ type_error ("invalid map entry")."""
    e = err("(into {} [1 2])")
    assert e.type == "type_error"
    assert "invalid map entry" in e.message


@pytest.mark.parametrize(
    "src",
    [
        "(partition 0 [1 2])",
        "(partition -1 [1 2])",
        "(partition 2 0 [1 2])",
        "(partition 2 -1 [1 2])",
    ],
)
def test_partition_requires_positive_integers(src: str) -> None:
    """LANGUAGE.md §7.4 partition: n, step must be positive integers."""
    e = err(src)
    assert e.type == "type_error"
    assert "partition" in e.message


@pytest.mark.parametrize(
    ("src", "fn", "accepted", "got"),
    [
        ("(conj)", "conj", "1+", 0),
        ("(into [])", "into", "2", 1),
        ("(into [] [1] [2])", "into", "2", 3),
        ("(flatten)", "flatten", "1", 0),
        ("(flatten [1] [2])", "flatten", "1", 2),
        ("(zip [1])", "zip", "2", 1),
        ("(interleave [1])", "interleave", "2", 1),
        ("(interleave [1] [2] [3])", "interleave", "2", 3),
        ("(interpose 0)", "interpose", "2", 1),
        ("(partition 2)", "partition", "2 or 3", 1),
        ("(partition 2 1 1 [1])", "partition", "2 or 3", 4),
        ("(range)", "range", "1", 0),
        ("(range 1 2 3 4)", "range", "3", 4),
        ("(vec)", "vec", "1", 0),
        ("(vec [1] [2])", "vec", "1", 2),
        ("(set)", "set", "1", 0),
        ("(set [1] [2])", "set", "1", 2),
    ],
)
def test_building_arity(src: str, fn: str, accepted: str, got: int) -> None:
    """LANGUAGE.md §7.0/§7.4 arities."""
    check_arity_error(src, fn, accepted, got)


def test_sequence_results_are_vectors() -> None:
    """LANGUAGE.md §3: the vector is the only sequential type; every sequence result is one."""
    for src in [
        "(rest [1 2])",
        "(take 1 [1 2])",
        "(drop 1 [1 2])",
        "(reverse [1 2])",
        "(sort [2 1])",
        "(map inc [1])",
        "(filter odd? [1])",
        "(concat [1] [2])",
        "(range 2)",
        "(seq #{1})",
        "(distinct [1 1])",
        "(partition 1 [1])",
        "(interpose 0 [1 2])",
        "(flatten [[1]])",
        "(vec #{1})",
        "(zip [1] [2])",
    ]:
        assert ev(f"(vector? {src})") is True, src
