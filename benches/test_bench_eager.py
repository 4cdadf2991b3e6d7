"""Issue 33 §3: a turn with ``SubAgent(eager=True)`` against the same turn without it.

Run: python -m pytest benches/test_bench_eager.py --benchmark-enable --benchmark-only -s
(As plain tests, with benchmarks disabled, each body runs once and its outcome is checked.)

A loopback OpenAI-compatible server (tests/adapters/wire.py) streams a 12-form program at 50
o200k tokens a second (the reply cut into as many pieces as it has tokens, one every 20 ms);
its first three forms call three read tools of 300 ms each. The real ``openai`` SDK reads the
stream through ``ptc.llm.openai(..., stream=True)``. Without ``eager`` the program starts once
the whole reply has arrived (the stream's time, then 0.9 s of tools); with it the tools run
while the rest is written, and the turn ends about 0.9 s sooner. Both runs' Steps are checked
to be the same apart from timings.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ptc
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "adapters"))
import openai  # noqa: F401  (imported before timing: a first import takes a while)
from wire import OpenAIServer, Stream, WireServer, serve, untimed

TOKENS_PER_SECOND = 50
TOOL_SECONDS = 0.3

PROGRAM = """(def orders (tool/orders "c-12"))
(def invoices (tool/invoices "c-12"))
(def tickets (tool/tickets "c-12"))
(def open-orders (filter (fn [o] (= (:status o) "open")) orders))
(def unpaid (filter (fn [i] (not (:paid i))) invoices))
(def owed (reduce + 0 (map :amount unpaid)))
(def urgent (filter (fn [t] (> (:priority t) 2)) tickets))
(def summary {:open (count open-orders) :owed owed :urgent (count urgent)})
(println "open orders:" (count open-orders))
(println "owed:" owed)
(def verdict (if (> owed 100) "follow up" "fine"))
(return (assoc summary :verdict verdict))"""

REPLY = f"I'll gather the customer's records first.\n```clojure\n{PROGRAM}\n```"


def slow(result: Any) -> Any:
    time.sleep(TOOL_SECONDS)
    return result


@ptc.tool(effect="read")
def orders(customer: str) -> list[dict[str, Any]]:
    """The customer's orders."""
    return slow([{"id": 1, "status": "open"}, {"id": 2, "status": "shipped"}])


@ptc.tool(effect="read")
def invoices(customer: str) -> list[dict[str, Any]]:
    """The customer's invoices."""
    return slow([{"amount": 120, "paid": False}, {"amount": 30, "paid": True}])


@ptc.tool(effect="read")
def tickets(customer: str) -> list[dict[str, Any]]:
    """The customer's support tickets."""
    return slow([{"priority": 3}, {"priority": 1}])


def pieces() -> list[int]:
    """Cut offsets: the reply in as many equal pieces as it has o200k tokens."""
    n = ptc._core.count_tokens(REPLY, "o200k_base")
    return sorted({round(i * len(REPLY) / n) for i in range(1, n)})


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    yield from serve(OpenAIServer)


def turn(server: WireServer, eager: bool) -> tuple[ptc.Step, float]:
    """One turn; the Step and the seconds ``agent.run()`` took."""
    server.script = [Stream(REPLY, cuts=pieces(), delay=1 / TOKENS_PER_SECOND)]
    llm = ptc.llm.openai("m", base_url=server.url + "/v1", api_key="k", stream=True)
    agent = ptc.SubAgent(
        "Summarize customer c-12.",
        llm=llm,
        tools=[orders, invoices, tickets],
        eager=eager,
        max_turns=1,
    )
    t0 = time.perf_counter()
    step = agent.run()
    return step, time.perf_counter() - t0


EXPECTED = {"open": 1, "owed": 120, "urgent": 1, "verdict": "follow up"}
SEEN: dict[bool, float] = {}


@pytest.mark.parametrize("eager", [False, True], ids=["streamed", "eager"])
def test_turn(benchmark: Any, server: WireServer, eager: bool) -> None:
    benchmark.group = "eager: 12 forms at 50 tok/s, three 300 ms read tools"
    steps: list[ptc.Step] = []
    times: list[float] = []

    def one() -> float:
        step, seconds = turn(server, eager)
        steps.append(step)
        times.append(seconds)
        return seconds

    benchmark.pedantic(one, rounds=3, iterations=1)
    assert all(s.ok and s.value == EXPECTED for s in steps)
    other, _ = turn(server, not eager)
    assert untimed(other.to_dict()) == untimed(steps[0].to_dict())
    SEEN[eager] = min(times)
    benchmark.extra_info["turn_s"] = round(min(times), 3)
    if len(SEEN) == 2:
        print(
            f"\n{ptc._core.count_tokens(REPLY, 'o200k_base')} tokens; fastest turn: "
            f"streamed {SEEN[False]:.2f} s, eager {SEEN[True]:.2f} s, "
            f"sooner by {SEEN[False] - SEEN[True]:.2f} s"
        )
