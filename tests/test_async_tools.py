"""`async def` tools: awaited on the caller's loop under `arun()` (concurrently from pmap and
pcalls), on a loop of their own under `run()`; and the event loop is never blocked, neither by
evaluation nor by a sync tool (issue 10)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import ptc
from ptc.llm import AsyncScriptedLLM, ScriptedLLM

LONG = {"timeout_ms": 30_000, "loop_limit": 10**12, "fuel": 10**15}


async def double(x: int) -> int:
    await asyncio.sleep(0.001)
    return x * 2


def heartbeat_during(work: Callable[[], Awaitable[Any]]) -> tuple[Any, int]:
    """Runs ``work`` on a fresh loop next to a 10 ms heartbeat; returns its result and the
    number of heartbeats."""

    async def main() -> tuple[Any, int]:
        ticks = 0
        done = asyncio.Event()

        async def beat() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.01)

        hb = asyncio.ensure_future(beat())
        try:
            return await work(), ticks
        finally:
            done.set()
            await hb

    return asyncio.run(main())


def test_an_async_tool_under_run() -> None:
    s = ptc.Session(tools={"double": double})
    assert s.run("(tool/double 21)").value == 42
    assert s.run("(mapv #(tool/double %) [1 2 3])").value == [2, 4, 6]


def test_an_async_tool_under_arun_is_awaited_on_the_callers_loop() -> None:
    loops: list[asyncio.AbstractEventLoop] = []

    async def where(x: int) -> int:
        loops.append(asyncio.get_running_loop())
        return x

    async def main() -> tuple[Any, asyncio.AbstractEventLoop]:
        s = ptc.Session(tools={"where": where})
        r = await s.arun("(+ (tool/where 1) (tool/where 2))")
        return r.value, asyncio.get_running_loop()

    value, loop = asyncio.run(main())
    assert value == 3
    assert loops == [loop, loop]


def test_async_tools_called_from_pmap_run_concurrently_on_the_loop() -> None:
    running = 0
    peak = 0
    loops: set[int] = set()

    async def slow(x: int) -> int:
        nonlocal running, peak
        loops.add(id(asyncio.get_running_loop()))
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.2)
        running -= 1
        return x * 10

    async def main() -> Any:
        s = ptc.Session(tools={"slow": slow})
        return (await s.arun("(pmap #(tool/slow %) [1 2 3])")).value

    assert asyncio.run(main()) == [10, 20, 30]
    assert peak >= 2  # the branches' calls overlapped on the one loop
    assert len(loops) == 1


def test_async_tools_from_pcalls_under_run() -> None:
    s = ptc.Session(tools={"double": double})
    assert s.run("(pcalls #(tool/double 1) #(tool/double 2))").value == [2, 4]


def test_an_async_tool_that_raises_is_a_tool_error() -> None:
    async def broken(x: int) -> int:
        await asyncio.sleep(0)
        raise ValueError(f"no such order: {x}")

    s = ptc.Session(tools={"broken": broken})
    r = s.run("(tool/broken 7)")
    assert r.error is not None and r.error.type == "tool_error"
    assert "no such order: 7" in r.error.message

    async def main() -> ptc.Result:
        return await s.arun("(tool/broken 8)")

    r = asyncio.run(main())
    assert r.error is not None and "no such order: 8" in r.error.message


def test_run_called_inside_a_coroutine_can_still_call_an_async_tool() -> None:
    """The calling thread's loop is busy waiting for `run()`: the tool gets a loop of its own."""

    async def main() -> Any:
        return ptc.Session(tools={"double": double}).run("(tool/double 5)").value

    assert asyncio.run(main()) == 10


def test_a_sync_tool_under_arun_does_not_block_the_loop() -> None:
    def slow_lookup(x: int) -> int:
        time.sleep(0.3)
        return x

    s = ptc.Session(tools={"slow-lookup": slow_lookup})

    async def work() -> Any:
        return (await s.arun("(tool/slow-lookup 4)")).value

    value, ticks = heartbeat_during(work)
    assert value == 4
    assert ticks >= 10  # 0.3 s at one beat per 10 ms, with room for a slow machine


def test_evaluation_under_arun_does_not_block_the_loop() -> None:
    """A 200 ms evaluation (calibrated on this machine) with a heartbeat beside it."""
    s = ptc.Session(limits=LONG)
    n = 200_000
    while True:  # grow the loop until one evaluation takes 200 ms here
        t = time.perf_counter()
        s.run(f"(loop [i 0] (if (< i {n}) (recur (inc i)) i))")
        if time.perf_counter() - t >= 0.2:
            break
        n *= 2

    async def work() -> Any:
        return (await s.arun(f"(loop [i 0] (if (< i {n}) (recur (inc i)) i))")).value

    value, ticks = heartbeat_during(work)
    assert value == n
    assert ticks >= 5


def test_cancelling_arun_cancels_the_async_tool_it_awaits() -> None:
    cancelled = threading.Event()
    started = threading.Event()

    async def wait_forever() -> None:
        started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> None:
        s = ptc.Session(tools={"wait-forever": wait_forever})
        task = asyncio.ensure_future(s.arun("(tool/wait-forever)"))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        # the Session is free again, and its tools work
        assert (await s.arun("(+ 1 1)")).value == 2

    asyncio.run(main())
    assert cancelled.wait(5)


def test_an_async_tool_past_the_deadline_is_cancelled() -> None:
    cancelled = threading.Event()

    async def wait_forever() -> None:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main() -> ptc.Result:
        s = ptc.Session(tools={"wait-forever": wait_forever})
        r = await s.arun("(tool/wait-forever)", limits={"timeout_ms": 200})
        await asyncio.sleep(0.05)  # let the loop run the cancellation
        return r

    r = asyncio.run(main())
    assert r.error is not None and r.error.type == "timeout"
    assert cancelled.wait(5)


PROGRAM = "```clojure\n(return (tool/double (count data/xs)))\n```"


def test_a_subagent_with_an_async_tool_under_run_and_arun() -> None:
    agent = ptc.SubAgent(
        prompt="Double the count.", llm=ScriptedLLM([PROGRAM]), tools=[double], data={"xs": [1, 2]}
    )
    step = agent.run()
    assert step.ok and step.value == 4
    assert step.turns[0].tool_calls[0].result == 4

    async def main() -> ptc.Step:
        agent = ptc.SubAgent(
            prompt="Double the count.",
            llm=AsyncScriptedLLM([PROGRAM]),
            tools=[double],
            data={"xs": [1, 2, 3]},
        )
        return await agent.arun()

    step = asyncio.run(main())
    assert step.ok and step.value == 6


def test_concurrent_aruns_on_one_session_both_get_their_async_tools() -> None:
    """Runs of one Session take turns; the second's tool is not cancelled when the first
    ends (review of issue 10)."""

    async def slow(x: int) -> int:
        await asyncio.sleep(0.05)
        return x

    async def main() -> list[Any]:
        s = ptc.Session(tools={"slow": slow})
        results = await asyncio.gather(s.arun("(tool/slow 1)"), s.arun("(tool/slow 5)"))
        return [(r.value, r.error) for r in results]

    assert asyncio.run(main()) == [(1, None), (5, None)]
