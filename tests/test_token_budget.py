"""Printing within an exact token budget (``ptc.to_clojure(..., max_tokens=N)``, issue 33 §1).

Properties over random values (≥ 10,000 in all across the tests below, budgets 1…2,000): the
text's exact o200k count is within the budget; removing the elision markers leaves text that
reads back as PTC-Lisp; a value whose whole print fits is printed whole and unchanged. The
markers are found by a scanner written here from the documented form (``...N more[ key(s)|
char(s)][ EXPR]``), not by the implementation's code.
"""

from __future__ import annotations

import re
from typing import Any

import ptc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptc import _core

ENC = "o200k_base"
MILLION = list(range(1_000_000))  # shared by every example that draws it: built once
RECORDS = [{"id": i, "name": f"user {i}", "tags": ["a", "b"]} for i in range(100_000)]

_MARKER = re.compile(r"\.\.\.[0-9][0-9,]* more(?: keys?| chars?)?")


def tokens(text: str) -> int:
    return _core.count_tokens(text, ENC)


def _expr_end(text: str, i: int) -> int:
    """End of the expression starting at ``text[i]``: ``*1`` or a balanced ``( ... )`` whose
    strings may hold parentheses."""
    if text.startswith("*1", i):
        return i + 2
    assert text[i] == "(", text[i:]
    depth, j, in_str = 0, i, False
    while True:
        c = text[j]
        if in_str:
            if c == "\\":
                j += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1


def strip_markers(text: str) -> tuple[str, int]:
    """``text`` without its elision markers (outside string literals), and how many."""
    if text == "...":
        return "", 1
    out, i, n, in_str = [], 0, 0, False
    while i < len(text):
        c = text[i]
        if in_str:
            out.append(c)
            if c == "\\":
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
            i += 1
            continue
        m = _MARKER.match(text, i)
        if m:
            n += 1
            i = m.end()
            if text.startswith(" *1", i) or text.startswith(" (", i):
                i = _expr_end(text, i + 1)
            continue
        if c == '"':
            in_str = True
        out.append(c)
        i += 1
    return "".join(out), n


def reads_back(text: str) -> bool:
    if not text.strip():
        return True
    result = _core.run_once(text)
    return result.error is None or result.error.type not in ("parse_error", "analysis_error")


# Control characters other than \n \t \r print as \uXXXX, which PTC-Lisp does not read (LANGUAGE.md
# §2.4): a value holding one prints as text no program can write, with or without a budget.
chars = st.characters(blacklist_categories=("Cc", "Cs")) | st.sampled_from("\n\t\r")
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)  # ##Inf and ##NaN have no literal
    | st.text(chars, max_size=40)
    | st.text(alphabet='ab \n"\\é😀()', min_size=200, max_size=3000)
    | st.builds(
        lambda n, c: c * n, st.integers(1, 200_000), st.sampled_from(["x", "ab ", "\u00e9"])
    )
)
keys = st.text(chars, min_size=1, max_size=12) | st.sampled_from(
    ["id", "name", "_secret", "a b", "k:1"]
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return (
        st.lists(children, max_size=12)
        | st.dictionaries(keys, children, max_size=10)
        | st.builds(lambda x, n: [x] * n, children, st.integers(2, 300))  # shared parts
    )


values = st.recursive(scalars, _containers, max_leaves=40) | st.sampled_from(
    [MILLION, RECORDS, [MILLION, RECORDS], {"rows": RECORDS, "n": 100_000}]
)


def _deep(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = [v, "x"]
    return v


deep_values = st.builds(_deep, st.integers(1, 400))
budgets = st.integers(1, 2000)
QUICK = settings(
    max_examples=3500,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def could_fit(value: Any, budget: int, hide_private: bool) -> bool:
    """False when the whole print certainly passes ``budget`` tokens: every printed item is a
    token at least (items are separated by spaces, which no token holds after other
    characters), and no token is longer than 128 bytes. Stops counting past the budget, so
    values built from shared parts cost no more than the budget."""
    left = [budget + 1]

    def walk(v: Any) -> bool:
        left[0] -= 1 if not isinstance(v, str) else 1 + len(v.encode()) // 128
        if left[0] < 0:
            return False
        if isinstance(v, dict):
            return all(
                walk(k) and walk(x)
                for k, x in v.items()
                if not (hide_private and isinstance(k, str) and k.startswith("_"))
            )
        if isinstance(v, list | tuple | set | frozenset):
            return all(walk(x) for x in v)
        return True

    return walk(value)


def check(value: Any, budget: int, hide_private: bool) -> None:
    text, cut = ptc.to_clojure(value, max_tokens=budget, root="*1", hide_private=hide_private)
    assert tokens(text) <= budget, (budget, text[:300])
    stripped, markers = strip_markers(text)
    assert reads_back(stripped), (budget, text[:300], stripped[:300])
    if not could_fit(value, budget, hide_private):
        assert markers > 0 or text in ("...", "")
        return
    whole, whole_cut = ptc.to_clojure(value, hide_private=hide_private)
    if tokens(whole) <= budget:
        assert text == whole
        assert cut == whole_cut
        assert markers == 0
    elif markers == 0:
        assert text == whole or (hide_private and cut)


@QUICK
@given(values, budgets)
def test_random_values_fit_their_budget(value: Any, budget: int) -> None:
    check(value, budget, hide_private=False)


@QUICK
@given(values, budgets)
def test_random_values_fit_with_private_keys_hidden(value: Any, budget: int) -> None:
    check(value, budget, hide_private=True)


@settings(max_examples=1500, deadline=None, database=None)
@given(deep_values, budgets)
def test_deep_nesting_fits(value: Any, budget: int) -> None:
    check(value, budget, hide_private=False)


@settings(max_examples=2000, deadline=None, database=None)
@given(st.integers(1, 2000), st.integers(0, 5))
def test_small_budgets_on_large_values(budget: int, which: int) -> None:
    value = [MILLION, RECORDS, "x" * 1_000_000, {"a": MILLION}, [[MILLION]], {"_k": 1}][which]
    check(value, budget, hide_private=False)


# --- exact texts, worked out from the documented form -------------------------------------


def widest(prefix: list[str], n: int, budget: int, hint: str | None, close: str = "]") -> str:
    """The widest ``[p0 p1 ... ...N more (drop k *1)]`` within ``budget``."""
    for k in range(len(prefix), -1, -1):
        head = " ".join(prefix[:k])
        tail = "" if hint is None else (f" {hint}" if k == 0 else f" (drop {k} {hint})")
        sep = " " if k else ""
        text = f"[{head}{sep}...{n - k:,} more{tail}{close}"
        if tokens(text) <= budget:
            return text
    raise AssertionError("nothing fits")


def test_a_long_list_shows_its_widest_prefix() -> None:
    for budget in (12, 30, 100, 500):
        text, cut = ptc.to_clojure(MILLION, max_tokens=budget, root="*1")
        assert cut
        assert text == widest([str(i) for i in range(600)], 1_000_000, budget, "*1")


def test_records_show_whole_records_first() -> None:
    text, _ = ptc.to_clojure(RECORDS, max_tokens=200, root="*1")
    assert text.startswith('[{:id 0, :name "user 0", :tags ["a" "b"]} {:id 1, :name "user 1"')
    assert re.search(r" \.\.\.99,99\d more \(drop \d+ \*1\)\]$", text), text


def test_a_string_is_cut_with_its_full_length() -> None:
    text, _ = ptc.to_clojure("é" * 5000, max_tokens=40, root="data/bio")
    m = re.fullmatch(r'"(é*)"\.\.\.([0-9,]+) more chars \(subs data/bio (\d+)\)', text)
    assert m, text
    shown = len(m.group(1))
    assert int(m.group(3)) == shown
    assert int(m.group(2).replace(",", "")) == 5000 - shown


def test_a_nested_list_names_its_path() -> None:
    value = {"orders": [{"id": 1, "lines": list(range(300))}]}
    text, _ = ptc.to_clojure(value, max_tokens=60, root="*1")
    assert "(get-in *1 [:orders 0 :lines])" in text, text
    assert tokens(text) <= 60


def test_markers_leave_out_the_hint_without_a_root() -> None:
    text, _ = ptc.to_clojure(MILLION, max_tokens=20)
    assert text == widest([str(i) for i in range(50)], 1_000_000, 20, None)


def test_limits_stay_when_their_print_fits() -> None:
    text, cut = ptc.to_clojure(list(range(100)), 3, None, max_tokens=200)
    assert (text, cut) == ptc.to_clojure(list(range(100)), 3)


def test_results_preview_within_a_budget() -> None:
    result = ptc.Session().run("(vec (range 100000))")
    assert result.preview(max_tokens=20, root="*1") == widest(
        [str(i) for i in range(50)], 100_000, 20, "*1"
    )
    assert result.lazy_value.preview(max_tokens=20, root="*1") == result.preview(
        max_tokens=20, root="*1"
    )


def test_unknown_encoding_is_a_value_error() -> None:
    try:
        ptc.to_clojure([1], max_tokens=5, encoding="p50k_base")
    except ValueError as e:
        assert (
            str(e) == 'unknown encoding "p50k_base"; exact counts exist for cl100k_base, o200k_base'
        )
    else:
        raise AssertionError("no error")


def test_tiny_budgets() -> None:
    assert ptc.to_clojure(MILLION, max_tokens=1) == ("...", True)
    assert ptc.to_clojure(MILLION, max_tokens=0) == ("", True)
    assert ptc.to_clojure(12345678901234, max_tokens=1) == ("...", True)


@pytest.mark.parametrize("root", ["", "  "])
def test_a_blank_root_is_refused(root: str) -> None:
    with pytest.raises(ValueError, match="root is the expression that reads the value"):
        ptc.to_clojure(list(range(100)), max_tokens=10, root=root)
