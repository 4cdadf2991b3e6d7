"""The MCP server (`ptc mcp`) and ProgramTool: tools that raise SystemExit or KeyboardInterrupt
under the server, a signal to the server, and malformed OpenAI tool calls."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from . import case

TOOLS = '''
def quit(code: int) -> int:
    """exit"""
    raise SystemExit(code)


def interrupt() -> int:
    """Ctrl-C without a signal"""
    raise KeyboardInterrupt


async def aquit(code: int) -> int:
    """exit, async"""
    raise SystemExit(code)


async def ainterrupt() -> int:
    """Ctrl-C, async"""
    raise KeyboardInterrupt


def gen_exit() -> int:
    """what closing a generator raises"""
    raise GeneratorExit


class Own(BaseException):
    pass


def own() -> int:
    """a BaseException of the host's own"""
    raise Own("mine")


def add(a: int, b: int) -> int:
    """works"""
    return a + b


def pid() -> int:
    """the server's process id"""
    import os

    return os.getpid()
'''


def _params(tmp: Path) -> Any:
    from mcp import StdioServerParameters

    (tmp / "hostile_tools.py").write_text(TOOLS)
    args = ["-m", "ptc", "mcp"]
    for name in ("quit", "interrupt", "aquit", "ainterrupt", "gen_exit", "own", "add", "pid"):
        args += ["--tool", f"hostile_tools:{name}"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp), os.environ.get("PYTHONPATH", "")]))
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def _is_error(result: Any) -> bool:
    flag = getattr(result, "is_error", None)
    return bool(getattr(result, "isError", False) if flag is None else flag)


@case(seconds=90, memory_mb=500)
def case_a_tool_exiting_the_process_does_not_end_the_server(tmp: Path) -> None:
    """Programs make tools raise SystemExit and KeyboardInterrupt (sync and async, in pmap
    branches too), GeneratorExit and a BaseException of the host's own under `ptc mcp`: each
    such call is answered with an error result, and the next call of the same client is served
    (the server died for every client)."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    async def main() -> list[tuple[bool, str]]:
        async with stdio_client(_params(tmp)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            out = []
            for program in [
                "(tool/quit 3)",
                "(tool/add 1 2)",
                "(tool/interrupt)",
                "(tool/add 2 2)",
                "(tool/aquit 4)",
                "(tool/add 3 3)",
                "(pmap (fn [_] (tool/ainterrupt)) [1 2 3])",
                "(tool/add 4 4)",
                "(tool/gen-exit)",
                "(tool/add 5 5)",
                "(tool/own)",
                "(tool/add 6 6)",
            ]:
                r = await asyncio.wait_for(s.call_tool("run_program", {"program": program}), 20)
                out.append((_is_error(r), r.content[0].text))
            return out

    answers = asyncio.run(asyncio.wait_for(main(), 70))
    stopped = [
        (0, "SystemExit(3)"),
        (2, "KeyboardInterrupt()"),
        (4, "SystemExit(4)"),
        (6, "KeyboardInterrupt()"),
        (8, "GeneratorExit()"),
        (10, "Own('mine')"),
    ]
    for i, kind in stopped:
        error, text = answers[i]
        assert error and f"the run was stopped: a tool raised {kind}" in text, answers[i]
        assert "the server goes on serving" in text, text
    assert [answers[i] for i in (1, 3, 5, 7, 9, 11)] == [
        (False, f"=> {n}") for n in (3, 4, 6, 8, 10, 12)
    ], answers


@case(seconds=60, memory_mb=400)
def case_sigint_to_the_server_stops_it(tmp: Path) -> None:
    """After serving tool calls, SIGINT to the server's process ends it (it went on waiting
    for the client's next line)."""
    import asyncio
    import signal
    import time

    from mcp import ClientSession
    from mcp.client.stdio import stdio_client

    def state(pid: int) -> str:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except FileNotFoundError:
            return "gone"
        return next(ln.split()[1] for ln in text.splitlines() if ln.startswith("State:"))

    async def main() -> str:
        async with stdio_client(_params(tmp)) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            await s.call_tool("run_program", {"program": "(tool/quit 1)"})
            r = await s.call_tool("run_program", {"program": "(tool/pid)"})
            server = int(r.content[0].text.removeprefix("=> "))
            os.kill(server, signal.SIGINT)
            end = time.monotonic() + 10
            while state(server) not in ("Z", "gone") and time.monotonic() < end:
                await asyncio.sleep(0.05)
            return state(server)

    assert asyncio.run(asyncio.wait_for(main(), 50)) in ("Z", "gone")


@case(seconds=60, memory_mb=500)
def case_malformed_openai_tool_calls_are_answered_as_text(tmp: Path) -> None:
    """`ProgramTool.openai_result` with arguments null, a dict, no function, or 100,000-deep
    JSON: a tool message saying what is wrong (they raised UnboundLocalError, TypeError,
    KeyError, RecursionError)."""
    from ptc.integrations import ProgramTool

    t = ProgramTool(data={"n": 1})
    deep = "[" * 100_000 + "]" * 100_000
    calls: list[Any] = [
        {"id": "a", "function": {"name": "run_program", "arguments": "null"}},
        {"id": "b", "function": {"name": "run_program", "arguments": {"program": "1"}}},
        {"id": "c"},
        {"id": "d", "function": {"name": "run_program", "arguments": deep}},
        {"id": "e", "function": {"name": "run_program", "arguments": '{"program": ' + deep + "}"}},
        {"id": "f", "function": {"name": "run_program", "arguments": '{"program": null}'}},
        None,
        42,
    ]
    for call in calls:
        out = t.openai_result(call)
        assert out["role"] == "tool" and out["content"].startswith("error: "), (call, out)
    assert t.openai_result(
        {"id": "g", "function": {"name": "run_program", "arguments": '{"program": "data/n"}'}}
    ) == {"role": "tool", "tool_call_id": "g", "content": "=> 1"}
