"""Reduction, aggregation and collection predicates (LANGUAGE.md §7.5, §7.6).

Expected values are written from LANGUAGE.md, not from the implementation.
"""

from __future__ import annotations

import ptc
import pytest
from lang_helpers import check_arity_error, check_type_error, err, ev, show

# --------------------------------------------------------------------------- helpers


PEOPLE = (
    '[{:name "Ada" :age 36 :team :x} {:name "Bo" :age 25 :team :y} '
    '{:name "Cy" :age 36 :team :x} {:name "Di" :team :z}]'
)

# --------------------------------------------------------------------------- §7.5 reduce

REDUCE_CASES = [
    ("(reduce + [1 2 3])", "6"),
    ("(reduce + 10 [1 2])", "13"),
    ("(reduce + [])", "nil"),
    ("(reduce + nil)", "nil"),
    ("(reduce + [5])", "5"),
    ('(reduce + ["x"])', '"x"'),
    ("(reduce (fn [a b] (fail :called)) [5])", "5"),
    ("(reduce (fn [a b] (fail :called)) 7 [])", "7"),
    ("(reduce + 0 nil)", "0"),
    ("(reduce + 0 [])", "0"),
    ("(reduce conj [] [1 2 3])", "[1 2 3]"),
    ("(reduce (fn [acc x] (conj acc x)) [0] [1 2])", "[0 1 2]"),
    ("(reduce - [10 1 2])", "7"),
    ("(reduce - 100 [10 1])", "89"),
    ('(reduce str "" "abc")', '"abc"'),
    ('(reduce str "👍🏽x")', '"👍🏽x"'),
    ('(reduce (fn [acc c] (conj acc c)) [] "👍🏽x")', '["👍🏽" "x"]'),
    ("(reduce + #{1 2 3})", "6"),
    ("(reduce conj [] #{3 1 2})", "[3 1 2]"),
    ("(reduce (fn [acc [k v]] (+ acc v)) 0 {:a 1 :b 2})", "3"),
    ("(reduce (fn [acc [k v]] (conj acc k)) [] {:b 1 :a 2})", "[:b :a]"),
    ("(reduce (fn [acc e] (conj acc e)) {:a 1 :b 2})", "[:a 1 [:b 2]]"),
    ("(reduce max [3 9 2])", "9"),
    ("(reduce (fn [m x] (assoc m x (* x x))) {} [2 3])", "{2 4, 3 9}"),
]


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

AGG_CASES = [
    # sum-by
    ("(sum-by :n [{:n 1} {:n 2}])", "3"),
    ("(sum-by :n [{:n 1} {:n 2.5}])", "3.5"),
    ("(sum-by :n [{:n 1} {:n 2.0}])", "3.0"),
    ("(sum-by :n [{:n 1} {} {:n nil} {:n 4}])", "5"),
    ("(sum-by :n [])", "0"),
    ("(sum-by :n nil)", "0"),
    ("(sum-by :n [{} {:n nil}])", "0"),
    ('(sum-by "n" [{:n 1} {"n" 2}])', "3"),
    ('(sum-by :n [{:n 1 "n" 100}])', "1"),
    ('(sum-by "n" [{:n 1 "n" 100}])', "100"),
    ("(sum-by [:a :b] [{:a {:b 2}} {:a {:b 3}} {:a nil}])", "5"),
    ('(sum-by count ["ab" "c"])', "3"),
    ("(sum-by identity [1 2 3])", "6"),
    ("(sum-by :n [{:n -1.5} {:n 1.5}])", "0.0"),
    # avg-by
    ("(avg-by :n [{:n 1} {:n 2}])", "1.5"),
    ("(avg-by :n [{:n 2} {:n 4}])", "3.0"),
    ("(avg-by :n [{:n 2} {} {:n nil} {:n 4}])", "3.0"),
    ("(avg-by :n [])", "nil"),
    ("(avg-by :n nil)", "nil"),
    ("(avg-by :n [{} {:n nil}])", "nil"),
    ('(avg-by "n" [{:n 1} {"n" 3}])', "2.0"),
    ("(avg-by identity [5])", "5.0"),
    # min-by / max-by
    (f"(min-by :age {PEOPLE})", '{:name "Bo", :age 25, :team :y}'),
    (f"(max-by :age {PEOPLE})", '{:name "Ada", :age 36, :team :x}'),
    ("(max-by :a [{:a 1 :i 0} {:a 1 :i 1}])", "{:a 1, :i 0}"),
    ("(min-by :a [{:a 1 :i 0} {:a 1.0 :i 1} {:a 1 :i 2}])", "{:a 1, :i 0}"),
    ("(max-by :a [{:a nil} {:a 2} {} {:a 3}])", "{:a 3}"),
    ("(min-by :a [{:a nil} {:a 2} {} {:a 3}])", "{:a 2}"),
    ("(min-by :a [{} {:a nil}])", "nil"),
    ("(min-by :a [])", "nil"),
    ("(max-by :a nil)", "nil"),
    ('(max-by count ["a" "abc" "ab"])', '"abc"'),
    ('(min-by count ["ab" "a" "b"])', '"a"'),
    ('(max-by :s [{:s "pear"} {:s "apple"}])', '{:s "pear"}'),
    ("(max-by :k [{:k :b} {:k :c} {:k :a}])", "{:k :c}"),
    ('(max-by "a" [{:a 1} {"a" 5}])', '{"a" 5}'),
    ("(min-by [:p :q] [{:p {:q 3}} {:p {:q 1}}])", "{:p {:q 1}}"),
    ("(max-by identity [1 2.5 2])", "2.5"),
    ("(max-by :a [{:a Double/POSITIVE_INFINITY} {:a 1e300}])", "{:a ##Inf}"),
    # distinct-by
    (
        "(distinct-by :id [{:id 1 :v :a} {:id 2} {:id 1 :v :b}])",
        "[{:id 1, :v :a} {:id 2}]",
    ),
    ("(distinct-by :id [{:id 1} {:id 1.0}])", "[{:id 1} {:id 1.0}]"),
    ('(distinct-by :id [{:id :a} {:id "a"}])', '[{:id :a} {:id "a"}]'),
    ("(distinct-by :id [{} {:x 1} {:id 2}])", "[{} {:id 2}]"),
    ('(distinct-by "id" [{:id 1} {"id" 1}])', "[{:id 1}]"),
    ('(distinct-by count ["a" "b" "cc"])', '["a" "cc"]'),
    ("(distinct-by :id [])", "[]"),
    ("(distinct-by :id nil)", "[]"),
    # group-by
    (
        "(group-by :t [{:t :b :i 1} {:t :a :i 2} {:t :b :i 3}])",
        "{:b [{:t :b, :i 1} {:t :b, :i 3}], :a [{:t :a, :i 2}]}",
    ),
    ("(group-by :t [{:x 1} {:t :a}])", "{nil [{:x 1}], :a [{:t :a}]}"),
    ("(group-by even? [1 2 3])", "{false [1 3], true [2]}"),
    ("(group-by identity [1 1.0 1])", "{1 [1 1], 1.0 [1.0]}"),
    ('(group-by "t" [{:t 1} {"t" 1}])', '{1 [{:t 1} {"t" 1}]}'),
    ("(group-by count [[1] [2 3] [4]])", "{1 [[1] [4]], 2 [[2 3]]}"),
    ("(group-by [:a :b] [{:a {:b :x}} {:a {}}])", "{:x [{:a {:b :x}}], nil [{:a {}}]}"),
    ("(group-by :t [])", "{}"),
    ("(group-by :t nil)", "{}"),
    (
        "(keys (group-by identity [9 8 7 6 5 4 3 2 1 0 9 8 7 6 5 4 3 2 1 0]))",
        "[9 8 7 6 5 4 3 2 1 0]",
    ),
    # frequencies
    ("(frequencies [:b :a :b])", "{:b 2, :a 1}"),
    ('(frequencies "abca")', '{"a" 2, "b" 1, "c" 1}'),
    ('(frequencies "👍🏽x👍🏽")', '{"👍🏽" 2, "x" 1}'),
    ("(frequencies [1 1.0 1])", "{1 2, 1.0 1}"),
    ('(frequencies [:a "a"])', '{:a 1, "a" 1}'),
    ("(frequencies [nil nil [1] [1]])", "{nil 2, [1] 2}"),
    ("(frequencies [])", "{}"),
    ("(frequencies nil)", "{}"),
    (
        "(keys (frequencies [9 8 7 6 5 4 3 2 1 0 0 1]))",
        "[9 8 7 6 5 4 3 2 1 0]",
    ),
    # max-key / min-key
    ('(max-key count "a" "abc" "ab")', '"abc"'),
    ('(min-key count "ab" "a" "b")', '"a"'),
    ('(max-key count "ab" "cd")', '"ab"'),
    ("(max-key :n {:n 1} {:n 3} {:n 3 :x 1})", "{:n 3}"),
    ("(min-key :n {:n 1 :i 0} {:n 1.0 :i 1})", "{:n 1, :i 0}"),
    ('(max-key count "a")', '"a"'),
    ('(apply max-key count ["a" "bb" "c"])', '"bb"'),
    ("(min-key - 1 5 3)", "5"),
    ('(max-key identity "pear" "apple")', '"pear"'),
]


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


AGG_TYPE_ERRORS = [
    ('(sum-by :n [{:n 1} {:n "12"}])', "sum-by", 'string "12"'),
    ("(sum-by :n [{:n :k}])", "sum-by", "keyword :k"),
    ("(sum-by :n [{:n [1]}])", "sum-by", "vector"),
    ("(sum-by :n [{:n true}])", "sum-by", "boolean true"),
    ('(avg-by :n [{:n "3"}])', "avg-by", 'string "3"'),
    ("(sum-by :n 5)", "sum-by", "integer 5"),
    ("(avg-by :n 5)", "avg-by", "integer 5"),
    ("(min-by :n 5)", "min-by", "integer 5"),
    ("(max-by :n :k)", "max-by", "keyword :k"),
    ("(distinct-by :n 5)", "distinct-by", "integer 5"),
    ("(group-by :n 5)", "group-by", "integer 5"),
    ("(frequencies 5)", "frequencies", "integer 5"),
    ("(frequencies :k)", "frequencies", "keyword :k"),
    ("(frequencies {:a 1})", "frequencies", "map"),
    ("(frequencies #{1})", "frequencies", "set"),
    ("(reduce + 5)", "reduce", "integer 5"),
    ("(reduce + 0 :k)", "reduce", "keyword :k"),
]


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

PRED_CASES = [
    # some
    ("(some even? [1 2 3])", "true"),
    ("(some #(when (> % 1) (* % 10)) [1 2 3])", "20"),
    ("(some even? [1 3])", "nil"),
    ("(some even? [])", "nil"),
    ("(some even? nil)", "nil"),
    ("(some :a [{:b 1} {:a 2} {:a 3}])", "2"),
    ("(some :a [{:a false} {:a nil} {:a 0}])", "0"),
    ('(some :a [{"a" 7}])', "7"),
    ("(some #{3 2} [1 2 3])", "2"),
    ("(some #{9} [1 2 3])", "nil"),
    ('(some #{"b"} "abc")', '"b"'),
    ('(some #(when (= % "👍🏽") :hit) "x👍🏽")', ":hit"),
    ("(some {:a 5} [:b :a])", "5"),
    ("(some identity [nil false])", "nil"),
    # every?
    ("(every? even? [2 4])", "true"),
    ("(every? even? [2 3])", "false"),
    ("(every? even? [])", "true"),
    ("(every? even? nil)", "true"),
    ('(every? identity [1 0 ""])', "true"),
    ('(every? :ok [{:ok 1} {"ok" 2}])', "true"),
    ("(every? :ok [{:ok 1} {}])", "false"),
    ('(every? #{"a"} "aa")', "true"),
    ('(every? #{"a"} "ab")', "false"),
    ("(every? #{1 2} [1 2 1])", "true"),
    # not-any?
    ("(not-any? even? [1 3])", "true"),
    ("(not-any? even? [1 2])", "false"),
    ("(not-any? even? [])", "true"),
    ("(not-any? even? nil)", "true"),
    ("(not-any? :ok [{:ok nil} {}])", "true"),
    ('(not-any? #{"z"} "abc")', "true"),
    # contains?
    ("(contains? {:a 1} :a)", "true"),
    ("(contains? {:a nil} :a)", "true"),
    ("(contains? {:a 1} :b)", "false"),
    ('(contains? {"a" 1} :a)', "true"),
    ('(contains? {:a 1} "a")', "true"),
    ("(contains? {:a-b 1} :a_b)", "false"),
    ("(contains? {0 :x} 0)", "true"),
    ("(contains? {0 :x} 0.0)", "false"),
    ("(contains? {[1 2] :v} [1 2])", "true"),
    ("(contains? #{1 2} 1)", "true"),
    ("(contains? #{1 2} 3)", "false"),
    ("(contains? #{7} 7.0)", "false"),
    ("(contains? #{nil} nil)", "true"),
    ('(contains? #{:a} "a")', "false"),
    ("(contains? [7 8] 8)", "true"),
    ("(contains? [7] 7.0)", "false"),
    ("(contains? [5 6] 0)", "false"),
    ("(contains? [5 6] 1)", "false"),
    ('(contains? [:a] "a")', "false"),
    ("(contains? [[1]] [1])", "true"),
    ("(contains? nil :a)", "false"),
    ("(contains? nil nil)", "false"),
    ("(contains? [] nil)", "false"),
]


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


PRED_TYPE_ERRORS = [
    ("(some even? 5)", "some", "integer 5"),
    ("(some even? #{2})", "some", "set"),
    ("(some even? {:a 2})", "some", "map"),
    ("(every? even? 5)", "every?", "integer 5"),
    ("(every? even? #{2})", "every?", "set"),
    ("(not-any? even? :k)", "not-any?", "keyword :k"),
    ("(contains? 5 1)", "contains?", "integer 5"),
    ('(contains? "abc" "a")', "contains?", 'string "abc"'),
    ("(contains? :k :k)", "contains?", "keyword :k"),
]


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
