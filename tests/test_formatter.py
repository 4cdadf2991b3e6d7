"""The printer, truncation and println capture (LANGUAGE.md §9.1, §9.2, §9.3; seed 000
"Truncation"; seed 001 TRN-001..TRN-011)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import ptc
import pytest

# ---- §9.1 printer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "nil"),
        (True, "true"),
        (False, "false"),
        (0, "0"),
        (417, "417"),
        (-38, "-38"),
        (2**63 - 1, "9223372036854775807"),
        ("amber", '"amber"'),
        ("", '""'),
        (ptc.Keyword("pallet-id"), ":pallet-id"),
        ([1, 2, 3], "[1 2 3]"),
        ([0.5, "x", ptc.Keyword("k")], '[0.5 "x" :k]'),
        ((1, 2), "[1 2]"),
        ([], "[]"),
        ({}, "{}"),
        (set(), "#{}"),
        ({7}, "#{7}"),
        (frozenset({"a"}), '#{"a"}'),
        ({"name": "Alice", "age": 30}, '{:name "Alice", :age 30}'),
        ({"id": 4, "tag": "b"}, '{:id 4, :tag "b"}'),
        ({"first name": 1, 2: 3, None: 4}, '{"first name" 1, 2 3, nil 4}'),
        ({"a": {"b": [1, {"c": None}]}}, "{:a {:b [1 {:c nil}]}}"),
        ([[1, [2]], {"k": ()}], "[[1 [2]] {:k []}]"),
    ],
)
def test_printer_forms(value: Any, text: str) -> None:
    """LANGUAGE.md §9.1: nil, booleans, integers, strings, keywords, vectors, sets, maps in
    insertion order with `, ` between entries."""
    assert ptc.to_clojure(value) == (text, False)


def test_set_prints_in_set_order() -> None:
    """LANGUAGE.md §9.1: a set prints `#{` elements in set order `}`."""
    s = {3, 1, 2, 40}
    assert ptc.to_clojure(s) == ("#{" + " ".join(str(x) for x in s) + "}", False)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (7.0, "7.0"),
        (2.5, "2.5"),
        (-4.5, "-4.5"),
        (0.0, "0.0"),
        (100.0, "100.0"),
        (123.456, "123.456"),
        (2 / 3, "0.6666666666666666"),
        (9999999.0, "9999999.0"),
        (1e7, "1.0E7"),
        (-1e7, "-1.0E7"),
        (1.5e21, "1.5E21"),
        (6.02e23, "6.02E23"),
        (2e-11, "2.0E-11"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (0.00099, "9.9E-4"),
    ],
)
def test_float_forms(value: float, text: str) -> None:
    """LANGUAGE.md §9.1: shortest round-trip text, always with a decimal point or exponent;
    exponent form below 1e-3 and from 1e7 in magnitude."""
    assert ptc.to_clojure(value) == (text, False)


@pytest.mark.parametrize(
    ("value", "text"), [(math.inf, "##Inf"), (-math.inf, "##-Inf"), (math.nan, "##NaN")]
)
def test_special_float_forms(value: float, text: str) -> None:
    """LANGUAGE.md §9.1: +inf, -inf, NaN print as `##Inf`, `##-Inf`, `##NaN`."""
    assert ptc.to_clojure(value) == (text, False)
    assert ptc.to_clojure([value]) == (f"[{text}]", False)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("a\nb", '"a\\nb"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("tab\there", '"tab\\there"'),
        ("cr\rhere", '"cr\\rhere"'),
        ("bell\x01", '"bell\\u0001"'),
        ("\x10\x19", '"\\u0010\\u0019"'),
        ("nul\x00", '"nul\\u0000"'),
        ("é ☃ 日本", '"é ☃ 日本"'),
    ],
)
def test_string_escapes(value: str, text: str) -> None:
    """LANGUAGE.md §9.1: `\\` -> `\\\\`, `"` -> `\\"`, newline -> `\\n`, tab -> `\\t`,
    CR -> `\\r`, other control characters -> `\\uXXXX`; other characters as they are."""
    assert ptc.to_clojure(value) == (text, False)


def test_lisp_values_print_the_same_way() -> None:
    """LANGUAGE.md §9.1: values built by a program print by the same rules (via println)."""
    r = ptc.run("(println (/ 1 0) (/ -1 0) (/ 0 0) 7.0 1e7 2.5 {:a [1 #{2}]} \\q nil)")
    assert r.error is None
    assert r.prints == ["##Inf ##-Inf ##NaN 7.0 1.0E7 2.5 {:a [1 #{2}]} q nil"]


def test_user_function_prints_with_params() -> None:
    """LANGUAGE.md §9.1: a user function prints as `#fn[a b]`, variadic `#fn[a & more]`."""
    r = ptc.run("(println (fn [a b] a) (fn [a & more] a))")
    assert r.prints == ["#fn[a b] #fn[a & more]"]


# ---- §9.2 truncation -----------------------------------------------------------------------


def test_vector_truncation() -> None:
    """LANGUAGE.md §9.2: `[4 8 15 ...] (6 items, showing first 3)`."""
    assert ptc.to_clojure([4, 8, 15, 16, 23, 42], 3) == (
        "[4 8 15 ...] (6 items, showing first 3)",
        True,
    )


def test_collection_at_the_limit_is_not_truncated() -> None:
    """LANGUAGE.md §9.2: only *more than* `limit` elements are cut."""
    assert ptc.to_clojure([1, 2, 3], 3) == ("[1 2 3]", False)
    assert ptc.to_clojure({"a": 1, "b": 2}, 2) == ("{:a 1, :b 2}", False)


def test_set_truncation() -> None:
    """LANGUAGE.md §9.2: sets truncate like vectors."""
    s = {4, 8, 15, 16, 23, 42}
    first = " ".join(str(x) for x in list(s)[:3])
    assert ptc.to_clojure(s, 3) == (f"#{{{first} ...}} (6 items, showing first 3)", True)


TEN = {f"k{i}": i for i in range(10)}


@pytest.mark.parametrize(
    ("limit", "printable_limit", "shown"),
    [
        (3, None, 3),  # E = limit
        (None, 60, 2),  # E = max(60 // 30, 1)
        (5, 90, 3),  # E = min(5, 3)
        (10, 20, 1),  # E = min(10, max(0, 1))
        (2, 300, 2),  # E = min(2, 10)
    ],
)
def test_map_truncation(limit: int | None, printable_limit: int | None, shown: int) -> None:
    """LANGUAGE.md §9.2: maps print at most E = min(limit, max(P // 30, 1)) entries, then ` ...`
    before `}` with no count."""
    entries = ", ".join(f":k{i} {i}" for i in range(shown))
    assert ptc.to_clojure(TEN, limit, printable_limit) == ("{" + entries + ", ...}", True)


def test_map_within_entry_budget_is_not_truncated() -> None:
    """LANGUAGE.md §9.2: E = min(10, 1000 // 30) = 10 shows every entry."""
    entries = ", ".join(f":k{i} {i}" for i in range(10))
    assert ptc.to_clojure(TEN, 10, 1000) == ("{" + entries + "}", False)


def test_string_truncation() -> None:
    """LANGUAGE.md §9.2: a string longer than P keeps its first P characters then `...` inside
    the quotes."""
    assert ptc.to_clojure("abcdefgh", None, 5) == ('"abcde..."', True)
    assert ptc.to_clojure("abcde", None, 5) == ('"abcde"', False)
    assert ptc.to_clojure(["abcdefgh", "ab"], None, 5) == ('["abcde..." "ab"]', True)


def test_map_values_get_their_own_string_budget() -> None:
    """LANGUAGE.md §9.2: with P set, each shown map value gets max((P - 10n) // n, 10)
    characters, n = entries shown."""
    value = {"a": "x" * 100, "b": "y" * 100}
    assert ptc.to_clojure(value, 10, 100) == (
        '{:a "' + "x" * 40 + '...", :b "' + "y" * 40 + '..."}',
        True,
    )
    # n = 1: budget max(15 - 10, 10) = 10
    assert ptc.to_clojure({"a": "x" * 100}, None, 15) == ('{:a "' + "x" * 10 + '..."}', True)


def test_map_value_budget_applies_inside_the_value() -> None:
    """LANGUAGE.md §9.2: each shown map value is printed with its own string budget, so strings
    nested in that value (here inside a vector) are cut at the budget, max((50 - 10) // 1, 10)."""
    assert ptc.to_clojure({"a": ["x" * 100]}, None, 50) == ('{:a ["' + "x" * 40 + '..."]}', True)


def test_nested_truncation() -> None:
    """LANGUAGE.md §9.2: limits apply recursively at every nesting level."""
    value = [[1, 2, 3, 4], [5, 6, 7, 8], [9], [10]]
    assert ptc.to_clojure(value, 2) == (
        "[[1 2 ...] (4 items, showing first 2) [5 6 ...] (4 items, showing first 2) ...]"
        " (4 items, showing first 2)",
        True,
    )
    assert ptc.to_clojure([[1, 2, 3]], 2) == ("[[1 2 ...] (3 items, showing first 2)]", True)
    assert ptc.to_clojure({"k": [1, 2, 3]}, 2) == (
        "{:k [1 2 ...] (3 items, showing first 2)}",
        True,
    )


def test_truncated_flag_is_false_when_nothing_is_cut() -> None:
    """LANGUAGE.md §9.2: `truncated` is true iff something was dropped anywhere."""
    value = {"a": [1, 2], "b": "short", "c": {"d": [3]}}
    assert ptc.to_clojure(value, 3, 120) == ('{:a [1 2], :b "short", :c {:d [3]}}', False)
    assert ptc.to_clojure(value, 3, 80)[1] is True  # E = 2 < 3 entries
    assert ptc.to_clojure(value, 1, 120)[1] is True


def test_hide_private() -> None:
    """LANGUAGE.md §9.1 "Hidden keys": with hiding on, entries whose keyword or string key starts
    with `_` are omitted, at every level."""
    value = {"a": 1, "_b": 2, "c": {"_d": 1, "e": 2}, "_x y": 3, "rows": [{"_id": 1, "v": 2}]}
    assert ptc.to_clojure(value, hide_private=True)[0] == "{:a 1, :c {:e 2}, :rows [{:v 2}]}"
    assert ptc.to_clojure(value)[0] == (
        '{:a 1, :_b 2, :c {:_d 1, :e 2}, "_x y" 3, :rows [{:_id 1, :v 2}]}'
    )


def test_map_limit_counts_entries_after_hiding() -> None:
    """LANGUAGE.md §9.2: maps (after hiding) print at most E entries."""
    value = {"_a": 1, "b": 2, "c": 3, "d": 4}
    assert ptc.to_clojure(value, 2, hide_private=True) == ("{:b 2, :c 3, ...}", True)


@pytest.fixture(scope="module")
def ten_million() -> Iterator[list[int]]:
    big = [0] * 10_000_000
    yield big
    del big


@pytest.mark.timeout(20)
def test_to_clojure_does_not_walk_a_huge_list(ten_million: list[int]) -> None:
    """ARCHITECTURE "O(what is shown)": printing a 10,000,000-element list with limit 3 does not
    walk the list (1,000 calls finish well within the timeout only if each is O(limit))."""
    for _ in range(1000):
        text, truncated = ptc.to_clojure(ten_million, 3)
    assert text == "[0 0 0 ...] (10000000 items, showing first 3)"
    assert truncated is True
    for _ in range(1000):
        label = ptc.type_label(ten_million)
    assert label == "list[10000000]"


# ---- §9.3 println --------------------------------------------------------------------------


def test_println_joins_args_with_spaces_strings_raw() -> None:
    """LANGUAGE.md §9.3: `(println "n =" 12 :ok [0.5 "x"])` prints `n = 12 :ok [0.5 "x"]`."""
    r = ptc.run('(println "n =" 12 :ok [0.5 "x"])')
    assert r.error is None
    assert r.value is None
    assert r.prints == ['n = 12 :ok [0.5 "x"]']


def test_println_one_entry_per_call() -> None:
    """LANGUAGE.md §9.3 / TRN-009: each call is one entry, even with several lines."""
    r = ptc.run('(println "line1\\nline2") (println "x" "y") (println)')
    assert r.prints == ["line1\nline2", "x y", ""]


def test_println_strings_raw_only_at_top_level() -> None:
    """LANGUAGE.md §9.3: a string argument is raw; strings inside collections use the printer."""
    r = ptc.run('(println "say \\"hi\\"" ["say \\"hi\\""] nil true)')
    assert r.prints == ['say "hi" ["say \\"hi\\""] nil true']


def test_println_hides_private_keys() -> None:
    """LANGUAGE.md §9.3: non-string arguments use the printer with hiding on."""
    r = ptc.run('(println {:a 1 :_b 2 "_c" 3 :d {:_e 1 :f 2}} [{:_x 1 :y 2}])')
    assert r.prints == ["{:a 1, :d {:f 2}} [{:y 2}]"]


def test_println_hides_private_keys_of_input_data() -> None:
    """LANGUAGE.md §8.1: `_` keys are firewalled from what the LLM sees, yet readable."""
    r = ptc.run(
        "(println data/user (:_token data/user))",
        data={"user": {"name": "Ada", "_token": "s3cret"}},
    )
    assert r.prints == ['{:name "Ada"} s3cret']


def test_println_character_vectors_join() -> None:
    """LANGUAGE.md §9.3: a non-empty vector of one-character strings prints as the characters."""
    r = ptc.run('(println ["o" "r" "b"] [] ["ab" "c"])')
    assert r.prints == ['orb [] ["ab" "c"]']


def test_println_has_no_collection_limit() -> None:
    """LANGUAGE.md §9.3: println uses the printer with no limits."""
    r = ptc.run("(println (range 50))")
    assert r.prints == ["[" + " ".join(str(i) for i in range(50)) + "]"]


def test_println_long_entry_is_cut_to_2000() -> None:
    """LANGUAGE.md §9.3 / TRN-011: an entry longer than 2,000 characters is cut to 2,000
    followed by `...`."""
    full = "[" + " ".join(str(i) for i in range(1000)) + "]"
    r = ptc.run("(println (range 1000))")
    assert r.prints == [full[:2000] + "..."]
    r = ptc.run("(println data/s) (println data/t)", data={"s": "x" * 2000, "t": "y" * 2001})
    assert r.prints == ["x" * 2000, "y" * 2000 + "..."]


def test_println_kept_when_the_run_fails() -> None:
    """LANGUAGE.md §1.4: prints are kept for error outcomes as far as evaluation got."""
    r = ptc.run('(println "first") (println "second") (+ 1 nope) (println "never")')
    assert r.error is not None
    assert r.prints == ["first", "second"]
