"""Red team, tools and their worker threads: async tools that run their own Session again,
exceptions whose text is hostile (huge, raising, blocking), results Python holds but the program
cannot (or must not silently change), a tool that cancels its own run, and branches that block
in tools."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

from . import case


def _threads() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads: line")


class _StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class _StrNotText(Exception):
    def __str__(self) -> Any:
        return 5


class _StrSleeps(Exception):
    def __str__(self) -> str:
        time.sleep(5)
        return "late"


@case(seconds=40, memory_mb=300)
def case_exceptions_with_hostile_text_end_the_call_cleanly(tmp: Path) -> None:
    """An exception whose __str__ raises, returns a non-str, or sleeps 5 s: a tool_error that
    names the exception's type (the first two), or a timeout at the run's deadline (the
    third): never a crash, never a wait for __str__."""
    import ptc

    def raiser(cls: type[Exception]) -> Any:
        def tool() -> int:
            raise cls("x")

        return tool

    for cls in (_StrRaises, _StrNotText):
        r = ptc.Session(tools={"t": raiser(cls)}).run("(tool/t)")
        assert r.error is not None and r.error.type == "tool_error", (cls, r)
        assert r.error.message.startswith(f"Tool 't' failed: {cls.__name__}"), r.error.message
    started = time.monotonic()
    r = ptc.Session(tools={"t": raiser(_StrSleeps)}).run("(tool/t)", limits={"timeout_ms": 300})
    took = time.monotonic() - started
    assert r.error is not None and r.error.type in ("timeout", "tool_error"), r
    assert took < 0.3 * 1.2 + 0.15, took


@case(seconds=30, memory_mb=400)
def case_results_the_program_cannot_hold_are_tool_errors(tmp: Path) -> None:
    """A generator, bytes, an int of 100,001 digits, a str with a lone surrogate, an object
    that answers every attribute (a mock): each a tool_error saying the result cannot be used,
    at once."""
    from unittest import mock

    import ptc

    def gen() -> Any:
        yield 1

    results: dict[str, Any] = {
        "generator": gen(),
        "bytes": b"abc",
        "big": 10**100_000,
        "surrogate": "a\ud800b",
        "mock": mock.MagicMock(),
    }
    for name, value in results.items():
        started = time.monotonic()
        r = ptc.Session(tools={"t": lambda value=value: value}).run("(tool/t)")
        assert r.error is not None and r.error.type == "tool_error", (name, r)
        assert r.error.message.startswith(
            "Tool 't' failed: returned a value that cannot be used: "
        ), (name, r.error.message)
        assert time.monotonic() - started < 1.0, name


@case(seconds=30, memory_mb=300)
def case_a_tool_that_cancels_its_own_session(tmp: Path) -> None:
    """A tool calls cancel() on the Session running it: that run raises Cancelled, nothing it
    defined (before or after the call) is kept, and the next run is not cancelled."""
    import ptc

    box: dict[str, ptc.Session] = {}

    def stop() -> int:
        box["s"].cancel()
        return 1

    s = box["s"] = ptc.Session(tools={"stop": stop})
    try:
        s.run("(def before 1) (tool/stop) (def after 2) 3")
    except ptc.Cancelled:
        pass
    else:
        raise AssertionError("the run was not cancelled")
    assert [d.name for d in s.definitions] == []
    assert s.run("(def kept 5) kept").value == 5
    assert [d.name for d in s.definitions] == ["kept"]


class _Endless(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        while True:
            yield 1

    def __len__(self) -> int:
        return 10**9


@case(seconds=30, memory_mb=400)
def case_a_result_whose_iteration_never_ends(tmp: Path) -> None:
    """A list subclass whose __iter__ never ends and whose __len__ claims 10**9 items: the run
    ends at its deadline with a typed error (or refuses the result), never hangs or exhausts
    memory."""
    import ptc

    started = time.monotonic()
    r = ptc.Session(tools={"t": lambda: _Endless([1, 2])}).run(
        "(count (tool/t))", limits={"timeout_ms": 500}
    )
    took = time.monotonic() - started
    assert r.error is not None and r.error.type in ("timeout", "tool_error", "memory_exceeded")
    assert took < 0.5 * 1.2 + 0.15, took


@case(seconds=30, memory_mb=1300)
def case_a_result_of_20_million_items_ends_within_the_deadline(tmp: Path) -> None:
    """A tool returning a list of 20,000,000 ints: past max_collection_size (10,000,000); the
    run ends in a typed limit within 1.2 x its 1 s deadline (plus building the list, which
    alone takes 730 MB of the case's memory)."""
    import ptc

    started = time.monotonic()
    r = ptc.Session(tools={"t": lambda: list(range(20_000_000))}).run(
        "(count (tool/t))", limits={"timeout_ms": 1000}
    )
    took = time.monotonic() - started
    assert r.error is not None and r.error.type in ("timeout", "memory_exceeded"), r
    assert took < 1.2 + 0.15 + 0.6, took


@case(seconds=30, memory_mb=300)
def case_a_sync_tool_running_another_loop_under_arun(tmp: Path) -> None:
    """Under arun(), a sync tool that calls asyncio.run() on another Session's arun() (its own
    loop on the worker thread) gets its value, and so does the outer run."""
    import ptc

    def inner() -> Any:
        return asyncio.run(ptc.Session().arun("(+ 40 2)")).value

    async def main() -> Any:
        return await ptc.Session(tools={"inner": inner}).arun("(inc (tool/inner))")

    r = asyncio.run(main())
    assert (r.error, r.value) == (None, 43), r


@case(seconds=120, memory_mb=700)
def case_branches_blocked_in_tools_stay_bounded(tmp: Path) -> None:
    """300 runs each leave 8 pmap branches blocked forever in a tool (3 GiB address space):
    the process neither aborts nor runs out of address space, later runs end with a timeout,
    runs without tools are unaffected, and the process exits at once."""
    import ptc

    blocked = threading.Event()
    s = ptc.Session(tools={"b": blocked.wait})
    for _ in range(300):
        r = s.run("(count (pmap (fn [_] (tool/b)) (range 8)))", limits={"timeout_ms": 50})
        assert r.error is not None and r.error.type == "timeout", r.error
    assert _threads() < 200, _threads()
    assert ptc.run("(count (pmap (fn [x] (* x x)) (range 100)))").value == 100
    # the blocked branches must not have taken the address space with them: 128 MB more is
    # still there for Python and for a run (each branch thread kept its stack and a malloc
    # arena, outside the tool pool's 192 MB headroom check: 53 MB of 3 GiB were left, and the
    # next allocation in Rust aborted the process about one time in three)
    spare = bytearray(128 << 20)
    assert len(spare) == 128 << 20
    del spare
    assert ptc.run("(count (vec (range 3000000)))").value == 3_000_000


class _HugeText(Exception):
    def __str__(self) -> str:
        return "y" * 20_000_000


@case(seconds=60, memory_mb=900)
def case_a_tool_error_of_20_mb_is_not_sent_back_whole(tmp: Path) -> None:
    """A tool raising an exception whose text is 20 MB: the agent sent all of it to the LLM in
    the next request (the issue's item 15 for a reply; the same echo for a tool's error). What
    goes back is cut, as a reply without a program is (4,000 characters and a note); the run's
    Result and the turn, the host's record, keep the whole message."""
    import ptc
    from ptc.llm import ScriptedLLM

    def boom() -> int:
        """Fails with a long message."""
        raise _HugeText

    r = ptc.Session(tools={"boom": boom}).run("(tool/boom)")
    assert r.error is not None and r.error.type == "tool_error", r
    assert len(r.error.message) == 20_000_031, len(r.error.message)
    llm = ScriptedLLM(["```clojure\n(tool/boom)\n```", "```clojure\n(return 1)\n```"])
    step = ptc.SubAgent("Try", llm=llm, tools=[boom]).run()
    assert (step.ok, step.value) == (True, 1), step.error
    sent = sum(len(m["content"]) for m in llm.calls[1])
    assert sent < 100_000, f"the next request carried {sent:,} characters"
    assert llm.calls[1][-1]["content"].endswith(
        "...\n(The error message was 20,000,031 characters long: only its first 4,000 are"
        " shown.)\n\nTurns left: 4"
    ), llm.calls[1][-1]["content"][-200:]
    assert step.turns[0].error is not None and len(step.turns[0].error.message) == 20_000_031


@case(seconds=30, memory_mb=300)
def case_nan_keys_in_a_tool_result_are_not_merged(tmp: Path) -> None:
    """Python keeps two NaN keys (two float objects, never equal) and a set of two NaNs; the
    program's map kept one entry (``{##NaN 2}``) and the set one member: a silent loss the
    other way round from the issue's item 6. Either both are kept or the result is refused
    with an error naming the collision."""
    import ptc

    nan1, nan2 = float("nan"), float("nan")
    for value, size in (({nan1: 1, nan2: 2}, 2), ({nan1, nan2}, 2)):
        assert len(value) == size
        r = ptc.Session(tools={"t": lambda value=value: value}).run("(count (tool/t))")
        if r.error is None:
            assert r.value == size, (value, r.value)
        else:
            assert r.error.type == "tool_error" and "NaN" in r.error.message, r.error


@case(seconds=30, memory_mb=300)
def case_an_async_tool_may_run_its_own_session_again(tmp: Path) -> None:
    """SAFETY.md: a tool may run its own Session again, and that nested run does not wait for
    the runs it is nested in. A sync tool's nested run() does so at once; an ``async def``
    tool awaiting ``arun()`` of its own Session waited at the Session's gate until the outer
    run's deadline (5 s), under arun() and under run() alike, and the outer run failed."""
    import ptc

    box: dict[str, ptc.Session] = {}

    async def again() -> Any:
        r = await box["s"].arun("(+ 1 1)")
        return r.value if r.ok else r.error.message

    box["s"] = ptc.Session(tools={"again": again})

    async def under_arun() -> Any:
        return await box["s"].arun("(tool/again)")

    for how, call in (
        ("arun", lambda: asyncio.run(under_arun())),
        ("run", lambda: box["s"].run("(tool/again)")),
    ):
        started = time.monotonic()
        r = call()
        took = time.monotonic() - started
        assert (r.error, r.value) == (None, 2), (how, r)
        assert took < 1.0, (how, took)


@case(seconds=60, memory_mb=300)
def case_an_async_tool_recursing_through_arun_is_bounded(tmp: Path) -> None:
    """The recursion of the issue's item 9, with an ``async def`` tool and arun(): the 17th
    nested run ends with the typed nesting error, promptly; it hung at the gate until the
    deadline at every level instead (10 s for two levels)."""
    import ptc

    box: dict[str, ptc.Session] = {}

    async def deeper() -> Any:
        r = await box["s"].arun("(tool/deeper)")
        return r.value if r.ok else r.error.message

    box["s"] = ptc.Session(tools={"deeper": deeper})

    async def main() -> Any:
        return await box["s"].arun("(tool/deeper)")

    started = time.monotonic()
    r = asyncio.run(main())
    took = time.monotonic() - started
    v = r.value
    assert isinstance(v, str) and v.startswith("runs nested too deeply"), (r, v)
    assert took < 5.0, took
