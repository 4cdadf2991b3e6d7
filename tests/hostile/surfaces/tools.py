"""Tools and their worker threads: tools that block forever, many runs calling tools at once,
async tools past their run's deadline, and the interpreter exiting while a tool still runs."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from . import case


def _threads() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                return int(line.split()[1])
    raise AssertionError("no Threads: line")


@case(seconds=90, memory_mb=600)
def case_abandoned_blocking_tools_never_abort_the_process(tmp: Path) -> None:
    """150 runs each abandon a tool that never returns (3 GiB address-space cap): the pool
    stops growing before the address space runs out, later runs end in a timeout that says
    why, and the process exits normally with the calls still blocked."""
    import ptc

    blocked = threading.Event()
    s = ptc.Session(tools={"b": blocked.wait})
    errors = set()
    for _ in range(150):
        r = s.run("(tool/b)", limits={"timeout_ms": 50})
        assert r.error is not None and r.error.type == "timeout", r.error
        errors.add(r.error.message.split(":")[0])
    assert _threads() <= 64 + 2, _threads()
    assert errors == {
        "execution exceeded 50ms limit",
        "execution exceeded 50ms limit before a worker thread was free to run it",
    }, errors
    # the workers are bounded, not gone: a run without tools is unaffected
    assert ptc.run("(+ 1 2)").value == 3


@case(seconds=40, memory_mb=400)
def case_idle_workers_exit(tmp: Path) -> None:
    """After a burst of 20 concurrent tool-calling runs the pool shrinks back once idle."""
    import ptc

    def nap() -> int:
        time.sleep(0.2)
        return 1

    before = _threads()

    def one() -> None:
        assert ptc.Session(tools={"nap": nap}).run("(tool/nap)").value == 1

    callers = [threading.Thread(target=one) for _ in range(20)]
    for t in callers:
        t.start()
    busy = _threads()
    for t in callers:
        t.join()
    assert busy >= before + 20
    deadline = time.monotonic() + 20
    while _threads() > before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _threads() <= before, (before, _threads())


@case(seconds=20, memory_mb=300)
def case_exit_with_a_tool_blocked_forever_is_prompt(tmp: Path) -> None:
    """The case returns (and its process exits) while an abandoned tool call blocks forever:
    the exit must not wait for it (the harness bounds the child's wall time)."""
    import ptc

    s = ptc.Session(tools={"b": threading.Event().wait})
    r = s.run("(tool/b)", limits={"timeout_ms": 50})
    assert r.error is not None and r.error.type == "timeout"


_GATE = threading.Event()


class _OpensTheGateAtShutdown:
    """Freed only while the interpreter finalizes (a module global, cleared after atexit):
    lets the blocked tool return, then keeps running Python code so that its thread gets the
    GIL back in the middle of the shutdown."""

    def __del__(self) -> None:
        _GATE.set()
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            pass


_KEEP: list[object] = []


@case(seconds=30, memory_mb=400)
def case_a_tool_returning_while_python_shuts_down_does_not_abort(tmp: Path) -> None:
    """An abandoned tool returns while the interpreter is finalizing: on Python 3.11-3.13 its
    thread is ended by pthread_exit, which must not abort the process on its way through
    the Rust frames that called the tool."""
    import ptc

    r = ptc.Session(tools={"wait": _GATE.wait}).run("(tool/wait)", limits={"timeout_ms": 50})
    assert r.error is not None and r.error.type == "timeout"
    _KEEP.append(_OpensTheGateAtShutdown())


@case(seconds=20, memory_mb=300)
def case_an_async_tool_is_cancelled_when_its_run_stops(tmp: Path) -> None:
    """`async def` tools under `run()` run on a loop of their own; at the run's deadline (and
    on cancel) the coroutine is cancelled, not left running in the background."""
    import ptc

    seen: list[str] = []

    async def slow() -> int:
        try:
            await asyncio.sleep(3)
            seen.append("finished")
            return 1
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    s = ptc.Session(tools={"slow": slow})
    started = time.monotonic()
    r = s.run("(tool/slow)", limits={"timeout_ms": 100})
    assert r.error is not None and r.error.type == "timeout"
    assert time.monotonic() - started < 1.0
    deadline = time.monotonic() + 2
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == ["cancelled"], seen

    # cancel() from another thread, the same
    seen.clear()
    s2 = ptc.Session(tools={"slow": slow})
    threading.Timer(0.1, s2.cancel).start()
    try:
        s2.run("(tool/slow)", limits={"timeout_ms": 10_000})
    except ptc.Cancelled:
        pass
    else:
        raise AssertionError("the run was not cancelled")
    deadline = time.monotonic() + 2
    while not seen and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen == ["cancelled"], seen


@case(seconds=30, memory_mb=400)
def case_runs_nested_through_tools_are_bounded(tmp: Path) -> None:
    """A tool that runs a program on its own Session, called by a program that makes it
    recurse, and two Sessions whose tools run each other: the 17th nested run ends with a
    typed error instead of exhausting threads or the stack."""
    import ptc

    box: dict[str, ptc.Session] = {}

    def run_sub(p: str) -> object:
        r = box["s"].run(p)
        return r.value if r.ok else {"error": r.error.type, "message": r.error.message}

    s = box["s"] = ptc.Session(tools={"run-sub": run_sub})
    s.run('(def p "(tool/run-sub p)")')
    started = time.monotonic()
    r = s.run("(tool/run-sub p)")
    assert time.monotonic() - started < 5
    v = r.value
    while isinstance(v, dict) and "error" not in v:
        v = next(iter(v.values()))
    assert v == {
        "error": "execution_error",
        "message": "runs nested too deeply: a tool started this run inside 16 runs started "
        "by tools (at most 16 runs inside one another)",
    }, v

    # two Sessions calling each other's runs
    def other(name: str) -> object:
        def call() -> object:
            r = box[name].run(f"(tool/{'b' if name == 'a' else 'a'})")
            return r.value if r.ok else r.error.message

        return call

    box["a"] = ptc.Session(tools={"b": other("b")})
    box["b"] = ptc.Session(tools={"a": other("a")})
    r = box["a"].run("(tool/b)")
    assert r.ok and isinstance(r.value, str) and r.value.startswith("runs nested too deeply"), r
    assert threading.active_count() == 1
