"""What the safety work costs (issue 8), each next to the plain-CPython equivalent.

- A Session with tools evaluates its runs on a worker thread (so the deadline can pre-empt a
  blocked tool): the handoff is paid once per run, not per tool call.
- Walks over values charge the run's budget as they go (equality, hashing).
- JSON is loaded with jiter, its memory watched against what the process has left.

Run: python -m pytest benches/test_bench_safety.py --benchmark-enable --benchmark-only
"""

from __future__ import annotations

import json
from typing import Any

import ptc
import pytest

TINY = "(+ 1 2)"
CALLS = "(reduce + (map (fn [i] (tool/f i)) (range 10000)))"


def identity(x: Any) -> Any:
    return x


@pytest.mark.benchmark(group="tiny program per call, Session with tools")
def test_tiny_with_tools_ptc(benchmark: Any) -> None:
    s = ptc.Session(tools={"f": identity})
    assert benchmark(s.run, TINY).value == 3


@pytest.mark.benchmark(group="tiny program per call, Session with tools")
def test_tiny_without_tools_ptc(benchmark: Any) -> None:
    s = ptc.Session()
    assert benchmark(s.run, TINY).value == 3


@pytest.mark.benchmark(group="tiny program per call, Session with tools")
def test_tiny_with_tools_cpython(benchmark: Any) -> None:
    code = compile("1 + 2", "<tiny>", "eval")
    assert benchmark(eval, code) == 3


@pytest.mark.benchmark(group="10,000 tool calls in one run")
def test_tool_calls_ptc(benchmark: Any) -> None:
    # past the default of 1,000 tool calls per run (max_tool_calls)
    s = ptc.Session(tools={"f": identity}, limits={"max_tool_calls": 10_000})
    assert benchmark(s.run, CALLS).value == sum(range(10000))


@pytest.mark.benchmark(group="10,000 tool calls in one run")
def test_tool_calls_cpython(benchmark: Any) -> None:
    def calls() -> int:
        return sum(identity(i) for i in range(10000))

    assert benchmark(calls) == sum(range(10000))


@pytest.fixture(scope="module")
def twins(orders: list[dict[str, Any]]) -> ptc.Session:
    # two equal copies, built separately so that equality has to walk them
    return ptc.Session(data={"a": orders, "b": [dict(o) for o in orders]})


@pytest.mark.benchmark(group="= of two equal 100k-record vectors")
def test_equality_ptc(benchmark: Any, twins: ptc.Session) -> None:
    assert benchmark(twins.run, "(= data/a data/b)").value is True


@pytest.mark.benchmark(group="= of two equal 100k-record vectors")
def test_equality_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    other = [dict(o) for o in orders]
    assert benchmark(lambda: orders == other) is True


@pytest.mark.benchmark(group="distinct of 100k records (hashing maps)")
def test_distinct_ptc(benchmark: Any, twins: ptc.Session) -> None:
    assert benchmark(twins.run, "(count (distinct data/a))").value == 100_000


@pytest.mark.benchmark(group="distinct of 100k records (hashing maps)")
def test_distinct_cpython(benchmark: Any, orders: list[dict[str, Any]]) -> None:
    def distinct() -> int:
        return len({tuple(sorted(o.items())) for o in orders})

    assert benchmark(distinct) == 100_000


@pytest.fixture(scope="module")
def orders_json(orders: list[dict[str, Any]]) -> str:
    return json.dumps({"orders": orders})


@pytest.mark.benchmark(group="load 100k records from JSON text")
def test_from_json_ptc(benchmark: Any, orders_json: str) -> None:
    s = benchmark(ptc.Session.from_json, orders_json)
    assert s.run("(count data/orders)").value == 100_000


@pytest.mark.benchmark(group="load 100k records from JSON text")
def test_from_json_cpython(benchmark: Any, orders_json: str) -> None:
    assert len(benchmark(json.loads, orders_json)["orders"]) == 100_000
