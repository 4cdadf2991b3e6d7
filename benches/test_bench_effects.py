"""Issue 31: what checking a program and capping tool calls cost.

Run: python -m pytest benches/test_bench_effects.py --benchmark-enable --benchmark-only
(As plain tests, with benchmarks disabled, each body runs once and its result is checked.)
"""

from __future__ import annotations

import itertools
from typing import Any

import ptc
import pytest


def refund(order_id: int, reason: str = "") -> str:
    return "ok"


def lookup(sku: str) -> int:
    return 1


TOOLS = [refund, lookup]

#: A 200-line agent program: definitions, pipelines and tool calls.
LINES = [
    f"(defn step-{i} [o] (when (> (:total o) {i})"
    f' (tool/refund {{:order-id (:id o) :reason "r{i}"}})))'
    if i % 4 == 0
    else f"(def v-{i} (->> data/orders (filter #(> (:total %) {i})) (map :id) (take 3)))"
    if i % 4 == 1
    else f'(def s-{i} (tool/lookup "sku-{i}"))'
    if i % 4 == 2
    else f'(def m-{i} {{:a {i} :b [1 2 3] :c (str "x" {i})}})'
    for i in range(200)
]
PROGRAM = "\n".join(LINES)
_fresh = itertools.count()


def fresh() -> str:
    # a new text each round: the core caches analyzed programs by their text
    return f"{PROGRAM}\n;; {next(_fresh)}"


@pytest.mark.benchmark(group="check a 200-line program")
def test_check_200_lines_ptc(benchmark: Any) -> None:
    found = benchmark(lambda: ptc.check(fresh(), tools=TOOLS))
    assert found.ok and len(found.calls) == 100


@pytest.mark.benchmark(group="check a 200-line program")
def test_check_and_plan_200_lines_ptc(benchmark: Any) -> None:
    """The check and its plan (the plan is worked out when first read)."""

    def planned() -> Any:
        return ptc.check(fresh(), tools=TOOLS).plan

    plan = benchmark(planned)
    # the step-N functions are defined, never called: only lookup can be called, 50 times
    assert plan is not None and plan.tools == ("lookup",) and plan.bound("lookup") == 50


@pytest.mark.benchmark(group="check a 200-line program")
def test_parse_analyze_200_lines_ptc(benchmark: Any) -> None:
    """The reference: reading and analyzing the same text (a run that stops at its first
    step, fuel 0)."""
    s = ptc.Session(tools=TOOLS)
    r = benchmark(lambda: s.run(fresh(), limits={"fuel": 0}))
    assert r.error is not None and r.error.limit == "fuel"


@pytest.mark.benchmark(group="check a 200-line program")
def test_compile_200_lines_cpython(benchmark: Any) -> None:
    """CPython compiling a program of the same size (200 function definitions)."""
    source = "\n".join(f"def f{i}(o):\n    return o.get('total', 0) > {i}" for i in range(200))
    benchmark(lambda: compile(source + f"\n# {next(_fresh)}", "<p>", "exec"))


CALLS = "(reduce + (map (fn [i] (tool/f i)) (range 1000)))"


def identity(x: int) -> int:
    return x


@pytest.mark.benchmark(group="1,000 tool calls in one run")
def test_tool_calls_ptc(benchmark: Any) -> None:
    s = ptc.Session(tools={"f": identity})
    assert benchmark(s.run, CALLS).value == sum(range(1000))


@pytest.mark.benchmark(group="1,000 tool calls in one run")
def test_tool_calls_capped_tool_ptc(benchmark: Any) -> None:
    """The same calls to a tool with its own cap (a list scan per call)."""
    s = ptc.Session(tools={"f": ptc.Tool(identity, max_calls=1000)})
    assert benchmark(s.run, CALLS).value == sum(range(1000))


@pytest.mark.benchmark(group="1,000 tool calls in one run")
def test_tool_calls_cpython(benchmark: Any) -> None:
    assert benchmark(lambda: sum(identity(i) for i in range(1000))) == sum(range(1000))


# -- issue 32: resuming a run that stopped at approvals ------------------------------------------

ORDERS = [
    {"id": i, "total": (i * 37) % 1000, "region": ("n", "s", "e", "w")[i % 4]}
    for i in range(10_000)
]
#: The work of a benchmark program over 10,000 records, then ten calls that need approval.
APPROVALS = """
(def big (->> data/orders (filter #(> (:total %) 500)) (map :total) (reduce +)))
(def by-region (update-vals (group-by :region data/orders) count))
(mapv (fn [i] (tool/pay i big)) (range 10))"""


def pay(i: int, amount: int) -> int:
    return i


def _at_tenth_stop() -> tuple[Any, Any]:
    """A Session and the continuation of its run stopped at the 10th approval."""
    s = ptc.Session(data={"orders": ORDERS}, tools={"pay": ptc.Tool(pay, approval=True)})
    r = s.run(APPROVALS)
    while len(r.tool_calls) < 9:
        r = s.resume(r, {p.id: True for p in r.pending})
    assert [p.id for p in r.pending] == ["9"]
    return s, ptc.Continuation.from_json(r.continuation.to_json())


@pytest.mark.benchmark(group="resume after the 10th of 10 approvals (10k records)")
def test_resume_tenth_approval_ptc(benchmark: Any) -> None:
    """The resume that finishes the run: the program again, nine calls answered from the
    record, the tenth called (a fresh Session each round: a finished resume commits)."""

    def setup() -> tuple[tuple[Any, ...], dict[str, Any]]:
        s, cont = _at_tenth_stop()
        return (s, cont), {}

    def resume(s: Any, cont: Any) -> Any:
        return s.resume(cont, {"9": True})

    r = benchmark.pedantic(resume, setup=setup, rounds=20)
    assert r.ok and r.value == list(range(10))


@pytest.mark.benchmark(group="resume after the 10th of 10 approvals (10k records)")
def test_plain_run_ptc(benchmark: Any) -> None:
    """The reference: one run of the same program whose tool needs no approval."""
    s = ptc.Session(data={"orders": ORDERS}, tools={"pay": pay})
    r = benchmark(s.run, APPROVALS)
    assert r.ok and r.value == list(range(10))


@pytest.mark.benchmark(group="resume after the 10th of 10 approvals (10k records)")
def test_continuation_json_round_trip_ptc(benchmark: Any) -> None:
    """Writing the continuation at the 10th stop and reading it back (sealed with a key)."""
    s = ptc.Session(data={"orders": ORDERS}, tools={"pay": ptc.Tool(pay, approval=True)})
    r = s.run(APPROVALS)
    while len(r.tool_calls) < 9:
        r = s.resume(r, {p.id: True for p in r.pending})
    cont = r.continuation
    back = benchmark(lambda: ptc.Continuation.from_json(cont.to_json(key="k"), key="k"))
    assert back == cont
