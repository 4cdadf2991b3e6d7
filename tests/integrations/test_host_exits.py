"""A tool that raises SystemExit or KeyboardInterrupt (issue 29, item 10).

In a library host the exception propagates from `arun()` to the code awaiting it, as it does
from `run()`: it must not escape the event loop past that code (asyncio re-raises these two out
of the loop when a task raises them). In `ptc mcp` the server is the host: the call is answered
with an error result and the server goes on serving; only a signal to its process stops it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import ptc
import pytest
from exiting_tools import add, ainterrupt, aquit, interrupt, quit

HERE = Path(__file__).parent

TOOLS: dict[str, Callable[..., Any]] = {
    "quit": quit,
    "interrupt": interrupt,
    "aquit": aquit,
    "ainterrupt": ainterrupt,
    "add": add,
}


def run_loop(main: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """asyncio.run, with an exception that escaped the loop reported instead of raised (a
    KeyboardInterrupt would otherwise end the test session)."""
    try:
        return asyncio.run(main())
    except BaseException as exc:  # what escaped the loop is the failure tested
        pytest.fail(f"{type(exc).__name__}({exc}) escaped the event loop")


@pytest.mark.parametrize(
    ("program", "kind", "code"),
    [
        ("(tool/quit 3)", SystemExit, 3),
        ("(tool/interrupt)", KeyboardInterrupt, None),
        ("(tool/aquit 4)", SystemExit, 4),
        ("(tool/ainterrupt)", KeyboardInterrupt, None),
    ],
)
def test_arun_raises_a_tools_exit_to_the_awaiting_code(
    program: str, kind: type[BaseException], code: int | None
) -> None:
    async def main() -> tuple[str, list[str]]:
        s = ptc.Session(tools=TOOLS)
        await s.arun("(def kept 1)")
        ticks: list[str] = []

        async def other_task() -> None:  # another task on the same loop
            await asyncio.sleep(0.05)
            ticks.append("other task finished")

        other = asyncio.create_task(other_task())
        try:
            await s.arun(f"(def lost 2) {program}")
        except kind as exc:
            caught = f"caught {type(exc).__name__}"
            if code is not None:
                assert isinstance(exc, SystemExit) and exc.code == code
        else:
            caught = "nothing raised"
        await other
        after = await s.arun("[kept (tool/add 1 2)]")
        assert after.value == [1, 3]
        assert [d.name for d in s.definitions] == ["kept"]  # the failed run kept nothing
        return caught, ticks

    caught, ticks = run_loop(main)
    assert caught == f"caught {kind.__name__}"
    assert ticks == ["other task finished"]


def _mcp_params(*tools: str) -> Any:
    from mcp import StdioServerParameters

    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    )
    args = ["-m", "ptc", "mcp"]
    for t in tools:
        args += ["--tool", f"exiting_tools:{t}"]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def _error_flag(result: Any) -> bool:
    flag = getattr(result, "is_error", None)
    return bool(getattr(result, "isError", False) if flag is None else flag)


def test_ptc_mcp_answers_a_tools_exit_with_an_error_and_keeps_serving() -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    params = _mcp_params("quit", "interrupt", "aquit", "ainterrupt", "generator_exit", "own", "add")
    programs = [
        "(def kept 1)",
        "(def lost 2) (tool/quit 3)",
        "[kept (tool/add 1 2)]",
        "(tool/interrupt)",
        "(tool/add 2 2)",
        "(tool/aquit 4)",
        "(tool/add 3 3)",
        "(tool/ainterrupt)",
        "lost",
        "(tool/generator-exit)",
        "(tool/own)",
        "(tool/add 4 4)",
    ]

    async def main() -> list[tuple[bool, str]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            out = []
            for program in programs:
                result = await s.call_tool("run_program", {"program": program})
                out.append((_error_flag(result), result.content[0].text))
            return out

    answers = asyncio.run(asyncio.wait_for(main(), 60))
    stopped = (  # an error like a program's, flagged (issue 30, item 11)
        "Error: the run was stopped: a tool raised {exc} (in {fn}, exiting_tools.py line"
        " {line}). Nothing the run defined was kept; the server goes on serving."
    )
    assert answers[0] == (False, "=> #'kept")
    assert answers[1] == (True, stopped.format(exc="SystemExit(3)", fn="quit", line=8))
    assert answers[2] == (False, "=> [1 3]")
    assert answers[3] == (True, stopped.format(exc="KeyboardInterrupt()", fn="interrupt", line=13))
    assert answers[4] == (False, "=> 4")
    assert answers[5] == (True, stopped.format(exc="SystemExit(4)", fn="aquit", line=18))
    assert answers[6] == (False, "=> 6")
    assert answers[7] == (True, stopped.format(exc="KeyboardInterrupt()", fn="ainterrupt", line=23))
    # the run that raised defined nothing: `lost` is unknown, an error flagged as one
    assert answers[8][0] and answers[8][1].startswith("Error: lost is not defined (line 1,")
    assert answers[9] == (
        True,
        stopped.format(exc="GeneratorExit()", fn="generator_exit", line=44),
    )
    assert answers[10] == (
        True,
        stopped.format(exc="OwnBaseException('mine')", fn="own", line=49),
    )
    assert answers[11] == (False, "=> 8")


def _state(process_id: int) -> str:
    """The process's state letter (Z: exited, not yet reaped), or "gone"."""
    try:
        text = Path(f"/proc/{process_id}/status").read_text()
    except FileNotFoundError:
        return "gone"
    return next(line.split()[1] for line in text.splitlines() if line.startswith("State:"))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_the_server_process_stops_it(sig: signal.Signals) -> None:
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def main() -> str:
        async with stdio_client(_mcp_params("pid", "quit")) as (read, write):
            async with ClientSession(read, write) as s:
                await s.initialize()
                await s.call_tool("run_program", {"program": "(tool/quit 1)"})
                result = await s.call_tool("run_program", {"program": "(tool/pid)"})
                server = int(result.content[0].text.removeprefix("=> "))
                os.kill(server, sig)
                deadline = time.monotonic() + 10
                while _state(server) not in ("Z", "gone") and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                return _state(server)

    assert asyncio.run(asyncio.wait_for(main(), 60)) in ("Z", "gone")
