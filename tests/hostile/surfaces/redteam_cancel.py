"""Red team, cancel / arun / Ctrl-C races: many cancelled arun() tasks queued on one Session,
Ctrl-C while a run waits for the Session's gate, cancels that arrive with no run going or
while a large result converts, and tasks cancelled before their run begins. The rule: a run
either commits and returns, or raises and changes nothing, and the Session stays usable."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

from . import case


@case(seconds=90, memory_mb=400)
def case_cancelled_aruns_queued_on_one_session_commit_all_or_nothing(tmp: Path) -> None:
    """400 arun() tasks at once on one Session (so most wait at its gate), each cancelled
    0-4 ms after it starts, with and without a tool: every task that raised CancelledError
    left its name undefined, every one that returned defined it."""
    import ptc

    async def storm(with_tool: bool) -> list[Any]:
        s = ptc.Session(tools={"echo": lambda x: x})
        rnd = random.Random(29)
        wrong: list[Any] = []

        async def one(i: int) -> None:
            body = (
                f"(tool/echo {i})" if with_tool else f"(reduce + (range {rnd.randint(0, 20_000)}))"
            )
            task = asyncio.ensure_future(s.arun(f"(def n{i} {body})"))
            await asyncio.sleep(rnd.random() * 0.004)
            task.cancel()
            try:
                await task
                returned = True
            except asyncio.CancelledError:
                returned = False
            if returned != (f"n{i}" in s.memory):
                wrong.append((i, returned))

        await asyncio.gather(*(one(i) for i in range(400)))
        assert (await s.arun("(+ 1 2)")).value == 3  # the gate is free
        return wrong

    for with_tool in (True, False):
        # how many are cancelled in time depends on the machine's load, not on the rule
        wrong = asyncio.run(storm(with_tool))
        assert wrong == [], (with_tool, wrong[:5])


@case(seconds=30, memory_mb=300)
def case_ctrl_c_while_waiting_for_the_sessions_gate(tmp: Path) -> None:
    """Another thread's run holds the Session (a tool sleeping 2 s); the main thread's run
    waits at the gate; SIGINT: KeyboardInterrupt within 100 ms, its definition not made, and
    the other run finishes normally."""
    import ptc

    s = ptc.Session(tools={"nap": lambda: time.sleep(2) or 1})
    other: list[Any] = []
    holder = threading.Thread(target=lambda: other.append(s.run("(def slow (tool/nap)) slow")))
    holder.start()
    time.sleep(0.2)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        s.run("(def waiting 1)")
    except KeyboardInterrupt:
        took = time.monotonic() - started
        assert took < 0.2 + 0.1, took
    else:
        raise AssertionError("the waiting run was not interrupted")
    holder.join()
    assert other[0].value == 1
    assert "waiting" not in s.memory and s.memory["slow"] == 1


@case(seconds=30, memory_mb=300)
def case_a_cancel_with_no_run_going_cancels_nothing_later(tmp: Path) -> None:
    """cancel() on an idle Session returns False and the next run is not cancelled; a
    CancelToken cancelled before its run cancels that run (and any other run given it),
    never a run without it."""
    import ptc

    s = ptc.Session()
    assert s.cancel() is False
    assert s.run("(def a 1) a").value == 1
    token = ptc.CancelToken()
    token.cancel()
    for _ in range(2):
        try:
            s.run("(def b 2)", cancel=token)
        except ptc.Cancelled:
            pass
        else:
            raise AssertionError("a run given a cancelled token ran")
    assert "b" not in s.memory
    assert s.run("(def c 3) c").value == 3


@case(seconds=60, memory_mb=900)
def case_a_cancel_while_a_large_result_converts(tmp: Path) -> None:
    """cancel() at 20 different moments of a run whose result (5,000,000 items) takes about
    half a second to convert: each run either returned its value with ``big`` defined, or
    raised Cancelled with ``big`` not defined."""
    import ptc

    for k in range(20):
        s = ptc.Session(limits={"timeout_ms": 60_000, "max_memory": 1 << 30})
        timer = threading.Timer(0.03 * k, s.cancel)
        timer.start()
        try:
            r = s.run("(def big (vec (range 5000000))) big")
        except ptc.Cancelled:
            assert "big" not in s.memory, k
        else:
            assert r.error is None and len(r.value) == 5_000_000, k
            assert "big" in s.memory, k
        finally:
            timer.cancel()


@case(seconds=60, memory_mb=300)
def case_aruns_timed_out_by_wait_for_leave_the_session_free(tmp: Path) -> None:
    """200 arun() calls cut by asyncio.wait_for after 1 ms (some before their run begins,
    some while it loops): none is left holding the Session; the next arun() answers at once
    and the only names defined are those of runs that returned."""
    import ptc

    async def main() -> None:
        s = ptc.Session()
        returned = []
        for i in range(200):
            try:
                await asyncio.wait_for(s.arun(f"(def n{i} (reduce + (range {i * 500})))"), 0.001)
                returned.append(f"n{i}")
            except TimeoutError:
                pass
        started = time.monotonic()
        assert (await s.arun("(+ 1 2)")).value == 3
        assert time.monotonic() - started < 0.5
        assert sorted(d.name for d in s.definitions) == sorted(returned)

    asyncio.run(main())


@case(seconds=30, memory_mb=300)
def case_a_tool_cancelling_the_task_that_awaits_its_run(tmp: Path) -> None:
    """An async tool cancels the very task awaiting arun(): that task gets CancelledError,
    nothing of the run is defined, and the Session runs the next program."""
    import ptc

    async def main() -> None:
        holder: dict[str, Any] = {}

        async def stop() -> int:
            holder["task"].cancel()
            await asyncio.sleep(0.05)
            return 1

        s = ptc.Session(tools={"stop": stop})

        async def victim() -> Any:
            return await s.arun("(def q 1) (tool/stop) (def r 2)")

        holder["task"] = asyncio.ensure_future(victim())
        try:
            await holder["task"]
        except asyncio.CancelledError:
            pass
        else:
            raise AssertionError("the task was not cancelled")
        assert "q" not in s.memory and "r" not in s.memory
        assert (await s.arun("(def z 9) z")).value == 9

    asyncio.run(main())


@case(seconds=60, memory_mb=300)
def case_cancel_with_runs_queued_from_four_threads(tmp: Path) -> None:
    """Four threads each run 25 programs on one Session while a fifth calls cancel() every
    few milliseconds: no run hangs, each either returns (its name defined) or raises
    Cancelled (not defined)."""
    import ptc

    s = ptc.Session(tools={"nap": lambda: time.sleep(0.002) or 1})
    stop = threading.Event()
    wrong: list[Any] = []

    def canceller() -> None:
        while not stop.is_set():
            s.cancel()
            time.sleep(0.003)

    def worker(w: int) -> None:
        for i in range(25):
            name = f"w{w}_{i}"
            try:
                s.run(f"(def {name} (+ (tool/nap) (reduce + (range 20000))))")
                ok = True
            except ptc.Cancelled:
                ok = False
            if ok != (name in s.memory):
                wrong.append((name, ok))

    killer = threading.Thread(target=canceller)
    killer.start()
    workers = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(30)
        assert not t.is_alive(), "a run hung"
    stop.set()
    killer.join()
    assert wrong == [], wrong[:5]
    assert s.run("(+ 1 1)").value == 2
