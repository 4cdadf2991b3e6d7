"""Threads: the GIL is released while a program evaluates, tools re-enter Python safely, and a
tool may call back into its own session (ARCHITECTURE "Release the GIL"; STYLE 11, 22).

Hanging means deadlock: every test has a timeout, and worker threads are joined with a timeout.

While these tests run, the interpreter's switch interval is raised to 10 s. Python then never
takes the GIL away from a thread on its own, so another thread can only run Python while the
first one has *released* the GIL (as the core must do while it evaluates). That makes the checks
below deterministic: with a GIL held during evaluation they fail instead of passing by luck.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import ptc
import pytest

JOIN_TIMEOUT = 30.0
HEAVY = "(loop [i 0 acc 0] (if (< i {n}) (recur (inc i) (+ acc i)) acc))"
HEAVY_LIMITS = {"loop_limit": 10**9, "fuel": 10**13, "timeout_ms": 120_000}


@pytest.fixture(scope="module")
def heavy_n() -> int:
    """Iterations that keep one thread evaluating for about 0.3 s on this machine and build."""
    n = 200_000
    started = time.perf_counter()
    r = ptc.run(HEAVY.format(n=n), limits=HEAVY_LIMITS)
    elapsed = max(time.perf_counter() - started, 1e-4)
    assert r.error is None
    return max(n, min(int(n * 0.3 / elapsed), 50_000_000))


@pytest.fixture
def strict_gil() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def _start(target: Callable[[], Any]) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def wrapped() -> None:
        try:
            target()
        except BaseException as exc:  # reported by the test
            errors.append(exc)

    t = threading.Thread(target=wrapped, daemon=True)
    t.start()
    return t, errors


def _join(t: threading.Thread, errors: list[BaseException]) -> None:
    t.join(JOIN_TIMEOUT)
    assert not t.is_alive(), "worker thread still running: deadlock"
    assert errors == []


@pytest.mark.timeout(90)
def test_two_sessions_evaluate_concurrently(heavy_n: int, strict_gil: None) -> None:
    """ARCHITECTURE: separate Sessions on separate threads run in parallel; each thread's
    program is still evaluating when the other one has started."""
    arrived = {"a": threading.Event(), "b": threading.Event()}
    saw_other: dict[str, bool] = {}
    results: dict[str, ptc.Result] = {}
    barrier = threading.Barrier(2, timeout=JOIN_TIMEOUT)

    def worker(me: str, other: str) -> Callable[[], None]:
        def arrive() -> bool:
            arrived[me].set()
            return True

        def finish() -> bool:
            saw_other[me] = arrived[other].is_set()
            return saw_other[me]

        def run() -> None:
            s = ptc.Session(tools={"arrive": arrive, "finish": finish}, limits=HEAVY_LIMITS)
            barrier.wait()
            results[me] = s.run(
                f"(tool/arrive) (let [total {HEAVY.format(n=heavy_n)}] [total (tool/finish)])"
            )

        return run

    ta = _start(worker("a", "b"))
    tb = _start(worker("b", "a"))
    _join(*ta)
    _join(*tb)
    total = heavy_n * (heavy_n - 1) // 2
    for name in ("a", "b"):
        assert results[name].error is None
        assert results[name].value == [total, True]
    assert saw_other == {"a": True, "b": True}


@pytest.mark.timeout(90)
def test_tool_on_one_thread_runs_while_another_thread_evaluates(
    heavy_n: int, strict_gil: None
) -> None:
    """A tool called on one thread runs Python while another thread's program is evaluating."""
    started = threading.Event()
    ended = threading.Event()
    other_was_evaluating: list[bool] = []

    def a_start() -> None:
        started.set()

    def a_end() -> None:
        ended.set()

    def probe(x: int) -> int:
        other_was_evaluating.append(started.is_set() and not ended.is_set())
        return x * 2

    long_session = ptc.Session(tools={"a-start": a_start, "a-end": a_end}, limits=HEAVY_LIMITS)
    box: dict[str, ptc.Result] = {}

    def long_run() -> None:
        box["a"] = long_session.run(f"(tool/a-start) {HEAVY.format(n=heavy_n)} (tool/a-end) :a")

    worker = _start(long_run)
    assert started.wait(JOIN_TIMEOUT)
    r = ptc.run("[(tool/probe 1) (tool/probe 2) (tool/probe 3)]", tools=[probe])
    _join(*worker)
    assert r.error is None
    assert r.value == [2, 4, 6]
    assert other_was_evaluating == [True, True, True]
    assert box["a"].error is None
    assert box["a"].value == "a"


@pytest.mark.timeout(60)
def test_tool_may_call_run_on_its_own_session() -> None:
    """A tool may call `session.run` on the session that is calling it, without deadlock."""
    holder: list[ptc.Session] = []

    def nested() -> Any:
        inner = holder[0].run("(+ 1 2)")
        assert inner.error is None
        return inner.value

    s = ptc.Session(tools={"nested": nested})
    holder.append(s)
    box: dict[str, ptc.Result] = {}

    def run() -> None:
        box["r"] = s.run("(def a 1) (+ 10 (tool/nested))")

    _join(*_start(run))
    assert box["r"].error is None
    assert box["r"].value == 13
    assert s.memory["a"] == 1
    # the session keeps working afterwards
    assert s.run("(inc a)").value == 2


@pytest.mark.timeout(60)
def test_many_threads_share_one_session_safely() -> None:
    """Runs of one Session from several threads do not deadlock or crash; each gets its value."""
    s = ptc.Session(data={"xs": list(range(1000))}, tools={"id": lambda x: x})
    out: dict[int, Any] = {}

    def make(i: int) -> Callable[[], None]:
        def run() -> None:
            r = s.run(f"(+ {i} (tool/id (reduce + 0 data/xs)))")
            assert r.error is None
            out[i] = r.value

        return run

    workers = [_start(make(i)) for i in range(8)]
    for w in workers:
        _join(*w)
    assert out == {i: i + 499500 for i in range(8)}
