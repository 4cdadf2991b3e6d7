"""Maps, sets, flexible lookup, callable values and map/set ordering.

Covers LANGUAGE.md §7.7 (maps), §7.8 (sets), §4.4 (flexible key lookup), §4.5 (callable values)
and the ordering/equality rules of §3 and §4. Expected values are written from LANGUAGE.md.
"""

from __future__ import annotations

import ptc
import pytest
from lang_helpers import cases, check_arity_error, check_type_error, err, error_cases, ev, show

# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- §7.7 get / get-in

GET_CASES = cases("maps_sets", "GET_CASES")


@pytest.mark.parametrize(("src", "expected"), GET_CASES)
def test_get_and_get_in(src: str, expected: str) -> None:
    """LANGUAGE.md §7.7 get/get-in; §4.4 flexible lookup (exact wins)."""
    assert show(src) == expected


# --------------------------------------------------------------------------- §7.7 assoc & co

UPDATE_CASES = cases("maps_sets", "UPDATE_CASES")


@pytest.mark.parametrize(("src", "expected"), UPDATE_CASES)
def test_map_functions(src: str, expected: str) -> None:
    """LANGUAGE.md §7.7 assoc/assoc-in/update/update-in/dissoc/merge/select-keys/keys/…."""
    assert show(src) == expected


def test_update_function_receives_old_then_extras() -> None:
    """LANGUAGE.md §7.0: update passes (old, extra…) to f."""
    assert ev("(update {:v 1} :v (fn [old a b] [old a b]) 2 3)") == {"v": [1, 2, 3]}
    assert ev("(update-in {:v {:w 1}} [:v :w] (fn [old a] [old a]) 2)") == {"v": {"w": [1, 2]}}


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("(assoc [1 2] 4 0)", "index 4 out of bounds for vector of length 2"),
        ("(assoc [1 2] 3 0)", "index 3 out of bounds for vector of length 2"),
        ("(assoc [] 1 0)", "index 1 out of bounds for vector of length 0"),
        ("(assoc [1 2] -1 0)", "index -1 out of bounds for vector of length 2"),
    ],
)
def test_assoc_bad_index_message(src: str, message: str) -> None:
    """LANGUAGE.md §7.7 assoc: bad index ⇒ execution_error with the exact message."""
    e = err(src)
    assert e.type == "execution_error"
    assert message in e.message, e.message


@pytest.mark.parametrize(
    "src",
    [
        "(update [1 2] 2 inc)",
        "(update [1 2] -1 inc)",
        "(update [] 0 (fnil inc 0))",
        "(assoc-in [1] [5] 0)",
        "(assoc-in {:v [1]} [:v 3] 0)",
        "(assoc-in {:a 5} [:a :b] 1)",
        '(assoc-in {:a "s"} [:a :b] 1)',
        "(assoc-in {:a [1]} [:a :b] 1)",
        "(update-in {:v [1]} [:v 1] (fnil inc 0))",
        "(update-in {:a 5} [:a :b] inc)",
        "(update-in {:a [1 2]} [:a -1] inc)",
    ],
)
def test_path_and_index_errors(src: str) -> None:
    """LANGUAGE.md §7.7: bad index / non-collection mid-path ⇒ execution_error."""
    assert err(src).type == "execution_error"


@pytest.mark.parametrize(
    ("src", "fn"),
    [
        ("(update {:a 1} :a inc 0)", "update"),
        ("(update {} :n inc 0)", "update"),
        ("(update-in {:a 1} [:a] inc 0)", "update-in"),
    ],
)
def test_update_with_default_argument_hints_fnil(src: str, fn: str) -> None:
    """LANGUAGE.md §7.7/§10.3: update given a "default" ⇒ arity_error with fnil hint."""
    e = err(src)
    assert e.type == "arity_error"
    assert e.hint is not None and "fnil" in e.hint, e.hint
    assert fn in f"{e.message} {e.hint}"


@pytest.mark.parametrize("src", ["(update-vals inc {:a 1})", "(->> {:a 1} (update-vals inc))"])
def test_update_vals_swapped_arguments(src: str) -> None:
    """LANGUAGE.md §7.7 update-vals: (update-vals f m) ⇒ type_error, hint: thread with ->."""
    e = err(src)
    assert e.type == "type_error"
    assert "update-vals" in e.message
    assert e.hint is not None and "->" in e.hint, e.hint


MAP_TYPE_ERRORS = error_cases("maps_sets", "MAP_TYPE_ERRORS")


@pytest.mark.parametrize(("src", "fn", "label"), MAP_TYPE_ERRORS)
def test_map_and_set_type_errors(src: str, fn: str, label: str) -> None:
    """LANGUAGE.md §7.0/§7.7/§7.8: inputs other than those named ⇒ type_error."""
    check_type_error(src, fn, label)


@pytest.mark.parametrize(
    ("src", "fn", "accepted", "got"),
    [
        ("(get {})", "get", "2 or 3", 1),
        ("(get {} :a 1 2)", "get", "2 or 3", 4),
        ("(get-in {} [:a] 1 2)", "get-in", "2 or 3", 4),
        ("(assoc {})", "assoc", "3+", 1),
        ("(assoc {} :a)", "assoc", "3+", 2),
        ("(assoc-in {} [:a])", "assoc-in", "3", 2),
        ("(assoc-in {} [:a] 1 2)", "assoc-in", "3", 4),
        ("(update {} :a)", "update", "3+", 2),
        ("(update-in {} [:a])", "update-in", "3+", 2),
        ("(dissoc)", "dissoc", "1+", 0),
        ("(select-keys {})", "select-keys", "2", 1),
        ("(select-keys {} [] [])", "select-keys", "2", 3),
        ("(keys)", "keys", "1", 0),
        ("(vals {} {})", "vals", "1", 2),
        ("(entries)", "entries", "1", 0),
        ("(key)", "key", "1", 0),
        ("(val [1 2] [3 4])", "val", "1", 2),
        ("(update-vals {})", "update-vals", "2", 1),
        ("(intersection)", "intersection", "1+", 0),
        ("(difference)", "difference", "1+", 0),
    ],
)
def test_map_and_set_arity(src: str, fn: str, accepted: str, got: int) -> None:
    """LANGUAGE.md §7.0/§7.7/§7.8 arities."""
    check_arity_error(src, fn, accepted, got)


def test_get_in_arity_message_exact() -> None:
    """LANGUAGE.md §7.0: `get-in expects 2 or 3 argument(s), got 1`."""
    assert err("(get-in {})").message == "get-in expects 2 or 3 argument(s), got 1"


@pytest.mark.parametrize("src", ["(assoc {} :a 1 :b)", "(assoc [1] 0 1 1)"])
def test_assoc_odd_pairs_is_arity_error(src: str) -> None:
    """LANGUAGE.md §7.7 assoc: odd pair count ⇒ arity_error."""
    e = err(src)
    assert e.type == "arity_error"
    assert "assoc" in e.message


# --------------------------------------------------------------------------- §7.8 sets

SET_CASES = cases("maps_sets", "SET_CASES")


@pytest.mark.parametrize(("src", "expected"), SET_CASES)
def test_set_functions(src: str, expected: str) -> None:
    """LANGUAGE.md §7.8 union/intersection/difference (first argument's order, §4.3)."""
    assert show(src) == expected


# --------------------------------------------------------------------------- §3 ordering

ORDER_CASES = cases("maps_sets", "ORDER_CASES")


@pytest.mark.parametrize(("src", "expected"), ORDER_CASES)
def test_map_and_set_order(src: str, expected: str) -> None:
    """LANGUAGE.md §3 Order: insertion order; re-assoc keeps position; dissoc+assoc moves it."""
    assert show(src) == expected


def test_large_map_and_set_keep_insertion_order() -> None:
    """LANGUAGE.md §3: maps and sets remember insertion order (beyond small-map sizes)."""
    keys = list(range(40, 0, -1))
    assert ev("(keys (reduce (fn [m k] (assoc m k k)) {} (range 40 0 -1)))") == keys
    assert ev("(vec (into #{} (range 40 0 -1)))") == keys
    assert ev("(vec (set (range 40 0 -1)))") == keys
    # re-associating an early key keeps it first; dissoc + assoc moves it last
    assert (
        ev("(first (keys (assoc (reduce (fn [m k] (assoc m k k)) {} (range 40 0 -1)) 40 :x)))")
        == 40
    )
    assert (
        ev(
            "(last (keys (assoc (dissoc (reduce (fn [m k] (assoc m k k)) {} (range 40 0 -1)) 40)"
            " 40 :x)))"
        )
        == 40
    )


EQUALITY_CASES = cases("maps_sets", "EQUALITY_CASES")


@pytest.mark.parametrize(("src", "expected"), EQUALITY_CASES)
def test_map_and_set_equality(src: str, expected: str) -> None:
    """LANGUAGE.md §3/§4.2/§4.3: equality ignores order; sets use identity equality."""
    assert show(src) == expected


def test_python_values_round_trip() -> None:
    """LANGUAGE.md §3 Python mapping: keyword keys come back as ptc.Keyword equal to text."""
    v = ev('{:a 1 "b" 2}')
    assert v == {"a": 1, "b": 2}
    assert [type(k) for k in v] == [ptc.Keyword, str]
    assert ev("#{1 2}") == {1, 2}
    assert ev("(get data/m :name)", data={"m": {"name": "Ada"}}) == "Ada"
    assert ev("(:name (first data/xs))", data={"xs": [{"name": "Bo"}]}) == "Bo"
    assert ev("(keys data/m)", data={"m": {"z": 1, "a": 2, "m": 3}}) == ["z", "a", "m"]


# --------------------------------------------------------------------------- §4.4 flexible

FLEX_CASES = cases("maps_sets", "FLEX_CASES")


@pytest.mark.parametrize(("src", "expected"), FLEX_CASES)
def test_flexible_lookup(src: str, expected: str) -> None:
    """LANGUAGE.md §4.4: flexible reads (both spellings, exact wins); exact-key writes."""
    assert show(src) == expected


def test_flexible_lookup_on_python_data() -> None:
    """LANGUAGE.md §3/§4.4: non-keyword str keys from Python stay strings but are found."""
    data = {"m": {"first name": 1, "ok": 2}}
    assert ev('(get data/m "first name")', data=data) == 1
    assert ev("(:ok data/m)", data=data) == 2
    assert ev('(get data/m "ok")', data=data) == 2


# --------------------------------------------------------------------------- §4.5 callables

CALLABLE_CASES = cases("maps_sets", "CALLABLE_CASES")


@pytest.mark.parametrize(("src", "expected"), CALLABLE_CASES)
def test_callable_values(src: str, expected: str) -> None:
    """LANGUAGE.md §4.5: keywords, maps and sets are callable."""
    assert show(src) == expected


@pytest.mark.parametrize(
    ("src", "label"),
    [
        ("(:k 5)", "integer 5"),
        ("(:k [1 2])", "vector"),
        ('(:k "s")', 'string "s"'),
        ("(:k #{:k})", "set"),
        ("(:k 5 :d)", "integer 5"),
    ],
)
def test_keyword_call_on_non_map(src: str, label: str) -> None:
    """LANGUAGE.md §4.5: (:k m) with m not a map or nil ⇒ type_error."""
    e = err(src)
    assert e.type == "type_error"
    assert ":k" in e.message
    assert label in e.message


@pytest.mark.parametrize(
    "src",
    ["(:k)", "(:k {} 1 2)", "({:a 1})", "({:a 1} :a 1 2)", "(#{1})", "(#{1} 1 2)"],
)
def test_callable_values_arity(src: str) -> None:
    """LANGUAGE.md §4.5: other argument counts ⇒ arity_error."""
    assert err(src).type == "arity_error"


@pytest.mark.parametrize(
    "src",
    [
        "([1 2] 0)",
        '("s")',
        '("abc" 0)',
        "(7 1)",
        "(2.5)",
        "(true 1)",
        "(false)",
        "(nil 1)",
        "(let [v [1]] (v 0))",
    ],
)
def test_not_callable(src: str) -> None:
    """LANGUAGE.md §4.5: vectors, strings, numbers, booleans and nil ⇒ not_callable."""
    assert err(src).type == "not_callable"
