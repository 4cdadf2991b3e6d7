"""`pmap` and `pcalls` run their branches in parallel (LANGUAGE.md §7.13)."""

from __future__ import annotations

import threading

import ptc
import pytest


@pytest.mark.timeout(30)
def test_pmap_branches_call_tools_concurrently() -> None:
    """Two branches meet at a barrier inside the tool: only possible if they run at once
    (sequential branches would leave the first one waiting until the barrier times out)."""
    barrier = threading.Barrier(2, timeout=5)

    def meet(x: int) -> int:
        barrier.wait()
        return x * 10

    r = ptc.run("(pmap #(tool/meet %) [1 2])", tools={"meet": meet})
    assert r.error is None, r.error
    assert r.value == [10, 20]
    assert sorted(c.args[0] for c in r.tool_calls) == [1, 2]


@pytest.mark.timeout(30)
def test_pcalls_branches_run_concurrently_and_keep_argument_order() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def meet(tag: str) -> str:
        barrier.wait()
        return tag

    r = ptc.run('(pcalls #(tool/meet "a") #(tool/meet "b") #(tool/meet "c"))', tools={"meet": meet})
    assert r.error is None, r.error
    assert r.value == ["a", "b", "c"]
    # tool calls are recorded in branch order
    assert [c.args[0] for c in r.tool_calls] == ["a", "b", "c"]


def test_branches_are_isolated_and_the_first_failure_in_input_order_wins() -> None:
    """A branch's def and println are discarded; the run keeps its own definitions."""
    s = ptc.Session()
    r = s.run('(def keep 1) (pmap (fn [x] (def leaked x) (println "hi" x) (* x 2)) [1 2 3])')
    assert r.error is None and r.value == [2, 4, 6]
    assert r.prints == []
    assert [d.name for d in s.definitions] == ["keep"]
    r = ptc.run("(pmap (fn [x] (if (= x 2) (fail :two) (/ 1 0))) [1 2 3])")
    assert r.error is not None and r.error.type == "pmap_error"
    r = ptc.run('(pcalls #(+ 1 1) #(:k [1]) #(+ "a" 1))')
    assert r.error is not None and r.error.message.startswith("pcalls branch 1:")
