"""Builtin benchmarks over 100,000 records, each next to the plain-CPython equivalent.

Run: python -m pytest benches/test_bench_builtins.py --benchmark-enable --benchmark-only
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import ptc
import pytest


@pytest.fixture(scope="module")
def session(orders: list[dict[str, Any]]) -> ptc.Session:
    return ptc.Session(data={"orders": orders})


def run(session: ptc.Session, src: str) -> Any:
    r = session.run(src)
    assert r.error is None, r.error
    return r.value


@pytest.mark.benchmark(group="sort-by :total over 100k records")
def test_sort_by_ptc(benchmark: Any, session: ptc.Session) -> None:
    v = benchmark(run, session, "(count (sort-by :total data/orders))")
    assert v == 100_000


@pytest.mark.benchmark(group="sort-by :total over 100k records")
def test_sort_by_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    v = benchmark(lambda: len(sorted(orders, key=lambda o: o["total"])))
    assert v == 100_000


@pytest.mark.benchmark(group="group-by :customer over 100k records")
def test_group_by_customer_ptc(benchmark: Any, session: ptc.Session) -> None:
    v = benchmark(run, session, "(count (group-by :customer data/orders))")
    assert v > 4000


@pytest.mark.benchmark(group="group-by :customer over 100k records")
def test_group_by_customer_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    def group() -> int:
        groups: dict[Any, list[Any]] = {}
        for o in orders:
            groups.setdefault(o["customer"], []).append(o)
        return len(groups)

    assert benchmark(group) > 4000


@pytest.mark.benchmark(group="frequencies of 100k customer ids")
def test_frequencies_ptc(benchmark: Any, session: ptc.Session) -> None:
    v = benchmark(run, session, "(count (frequencies (map :customer data/orders)))")
    assert v > 4000


@pytest.mark.benchmark(group="frequencies of 100k customer ids")
def test_frequencies_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    assert benchmark(lambda: len(Counter(o["customer"] for o in orders))) > 4000


@pytest.mark.benchmark(group="distinct of 100k customer ids")
def test_distinct_ptc(benchmark: Any, session: ptc.Session) -> None:
    v = benchmark(run, session, "(count (distinct (map :customer data/orders)))")
    assert v > 4000


@pytest.mark.benchmark(group="distinct of 100k customer ids")
def test_distinct_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    assert benchmark(lambda: len(dict.fromkeys(o["customer"] for o in orders))) > 4000


SPLIT_JOIN = '(count (split (join "," (map :customer data/orders)) ","))'


@pytest.mark.benchmark(group="join 100k strings then split")
def test_split_join_ptc(benchmark: Any, session: ptc.Session) -> None:
    assert benchmark(run, session, SPLIT_JOIN) == 100_000


@pytest.mark.benchmark(group="join 100k strings then split")
def test_split_join_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    assert benchmark(lambda: len(",".join(o["customer"] for o in orders).split(","))) == 100_000


REGEX = '(count (filter #(re-find (re-pattern "^c[0-9]*7$") (:customer %)) data/orders))'
REGEX_HOISTED = (
    '(let [re (re-pattern "^c[0-9]*7$")] (count (filter #(re-find re (:customer %)) data/orders)))'
)


@pytest.mark.benchmark(group="regex scan over 100k records")
def test_regex_ptc(benchmark: Any, session: ptc.Session, orders: list[dict[str, Any]]) -> None:
    expected = sum(1 for o in orders if re.search(r"^c[0-9]*7$", o["customer"]))
    assert benchmark(run, session, REGEX_HOISTED) == expected


@pytest.mark.benchmark(group="regex scan over 100k records")
def test_regex_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    pat = re.compile(r"^c[0-9]*7$")
    assert benchmark(lambda: sum(1 for o in orders if pat.search(o["customer"]))) > 0
