"""ptc as a tool for other agents: one tool, ``run_program``, that runs a PTC-Lisp program over
the data and tools you give it, offered in the shapes other stacks take.

- :meth:`ProgramTool.openai_schema` / :meth:`ProgramTool.openai_result`: OpenAI function
  calling (JSON schema in, a ``{"role": "tool", ...}`` message out);
- :meth:`ProgramTool.pydantic_ai_tool`: a ``pydantic_ai.Tool``;
- :meth:`ProgramTool.mcp_server`: an MCP server (the official ``mcp`` package), also started by
  ``ptc mcp --data d.json --tool module:function`` on stdio.

The model calling the tool sees the language guide and the ``tool/`` and ``data/`` namespaces in
the tool's description, and gets back text: what the program printed, then its value (or its
error with the hint that says how to fix it). Definitions persist between calls, as in a
SubAgent, unless ``keep_definitions=False``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import threading
import traceback
from collections.abc import Mapping
from typing import Any

from ptc.compression._format import error_echo, namespace_sections
from ptc.compression.base import DataEntry
from ptc.limits import LimitsArg
from ptc.prompts import system_prompt
from ptc.session import Result, Session
from ptc.tools.adapter import normalize_tools
from ptc.tools.declare import ToolsArg

#: Characters of a value shown back to the calling model (the rest is elided). An error's
#: message is cut at ``ERROR_ECHO_CHARS`` (4,000) characters, with a note of its length.
RESULT_CHARS = 4_000


class ProgramTool:
    """A tool that runs PTC-Lisp programs over ``data`` and ``tools``."""

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        tools: ToolsArg = None,
        limits: LimitsArg = None,
        *,
        name: str = "run_program",
        keep_definitions: bool = True,
    ) -> None:
        self.name = name
        self.data = dict(data or {})
        self.tools = normalize_tools(tools)
        self.limits = limits
        self.keep_definitions = keep_definitions
        self._session = Session(data=self.data, tools=self.tools, limits=limits)
        self._lock = threading.Lock()  # one program at a time: a Session runs one at a time

    @classmethod
    def from_session(cls, session: Session, *, name: str = "run_program") -> ProgramTool:
        self = cls.__new__(cls)
        self.name, self.data, self.tools, self.limits = name, {}, dict(session._tools), None
        self.keep_definitions = True
        self._session = session
        self._lock = threading.Lock()
        return self

    # --- what the calling model sees -------------------------------------------------------

    @property
    def description(self) -> str:
        from ptc.agent import Tool

        specs = tuple(Tool(fn).spec(n) for n, fn in self.tools.items())
        data = []
        for key in self._session.data_keys:
            d = self._session.describe_data(key)
            data.append(DataEntry(key, d.type, None if key.startswith("_") else d.sample))
        sections = namespace_sections({"tools": specs, "data": tuple(data)})
        return "\n\n".join(
            [
                "Run a PTC-Lisp program (a small, safe Clojure subset) over the data and tools"
                " below; returns what it printed and its value. Definitions (def, defn) persist"
                " between calls.",
                system_prompt(),
                *sections,
            ]
        )

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments."""
        return {
            "type": "object",
            "properties": {
                "program": {
                    "type": "string",
                    "description": "PTC-Lisp source, e.g. (count data/orders)",
                }
            },
            "required": ["program"],
            "additionalProperties": False,
        }

    # --- running ---------------------------------------------------------------------------

    def run(self, program: str) -> str:
        """Runs ``program``; the text for the calling model."""
        if not isinstance(program, str):
            return f"error: the program must be a string, got {type(program).__name__}"
        unreadable = _not_text(program)
        if unreadable is not None:
            return unreadable
        with self._lock:
            if not self.keep_definitions:
                self._session = Session(data=self.data, tools=self.tools, limits=self.limits)
            return self.text(self._session.run(program, lazy=True))

    async def arun(self, program: str) -> str:
        """``run`` without blocking the event loop (async tools awaited on it)."""
        if not isinstance(program, str):
            return f"error: the program must be a string, got {type(program).__name__}"
        unreadable = _not_text(program)
        if unreadable is not None:
            return unreadable
        if not self.keep_definitions:
            self._session = Session(data=self.data, tools=self.tools, limits=self.limits)
        return self.text(await self._session.arun(program, lazy=True))

    @staticmethod
    def text(result: Result) -> str:
        """A run as text: prints, then ``=> value`` or ``Error: ...`` with its hint.

        The value is cut at ``RESULT_CHARS`` characters, an error's message at
        ``ERROR_ECHO_CHARS`` (both 4,000) with a note of its full length (a tool's exception
        text can be megabytes)."""
        lines = list(result.prints)
        if result.error is not None:
            e = result.error
            where = f" (line {e.line}, column {e.column})" if e.line is not None else ""
            text = f"Error: {error_echo(e.message, where)}"
            if e.hint:
                text += f"\nHint: {e.hint}"
            lines.append(text)
        else:
            value = result.preview(1_000, 1_000)
            if len(value) > RESULT_CHARS:
                value = value[:RESULT_CHARS] + "... (truncated)"
            lines.append(("failed: " if result.failed else "=> ") + value)
        return "\n".join(lines)

    # --- OpenAI function calling -----------------------------------------------------------

    def openai_schema(self) -> dict[str, Any]:
        """The tool for ``tools=[...]`` of the chat-completions API."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def openai_result(self, tool_call: Any) -> dict[str, str]:
        """Runs an OpenAI tool call (SDK object or dict) and returns the ``tool`` message.

        Whatever the call holds, the answer is a ``tool`` message: a call that is not what the
        function-calling API sends (no ``function``, arguments that are not a JSON object text,
        JSON nested too deeply to read) is answered with text saying what is wrong, for the
        model to read and correct."""
        call_id = _field(tool_call, "id")
        content = self._openai_content(tool_call)
        return {
            "role": "tool",
            "tool_call_id": call_id if isinstance(call_id, str) else "",
            "content": content,
        }

    def _openai_content(self, tool_call: Any) -> str:
        fn = _field(tool_call, "function")
        if fn is None:
            return "error: the tool call has no 'function' (its name and arguments)"
        name = _field(fn, "name")
        if name != self.name:
            return f"error: no tool named {_short(name)} here (this one is {self.name!r})"
        arguments = _field(fn, "arguments")
        if arguments is None or arguments == "":
            return (
                "error: the call has no arguments; send a JSON object with the program, e.g."
                ' {"program": "(count data/orders)"}'
            )
        if not isinstance(arguments, str):
            return (
                "error: the arguments must be JSON text (a string holding a JSON object),"
                f" got {type(arguments).__name__}"
            )
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError as e:
            return f"error: the arguments are not JSON: {e}"
        except RecursionError:
            return "error: the arguments are JSON nested too deeply to read"
        if not isinstance(args, dict):
            return (
                'error: the arguments must be a JSON object like {"program": "..."}, got'
                f" {_json_kind(args)}"
            )
        if "program" not in args:
            return 'error: the arguments have no "program" (the PTC-Lisp source to run)'
        program = args["program"]
        if not isinstance(program, str):
            return f'error: "program" must be a string of PTC-Lisp, got {_json_kind(program)}'
        return self.run(program)

    # --- pydantic-ai -----------------------------------------------------------------------

    def pydantic_ai_tool(self) -> Any:
        """A ``pydantic_ai.Tool`` that runs programs (async: never blocks the agent's loop)."""
        from ptc.llm._adapter import require

        pydantic_ai = require("pydantic_ai", "pydantic-ai")

        async def run_program(program: str) -> str:
            return await self.arun(program)

        return pydantic_ai.Tool(run_program, name=self.name, description=self.description)

    # --- MCP -------------------------------------------------------------------------------

    async def _served(self, program: str) -> str | BaseException:
        """``arun(program)``, or the exception that is not an ``Exception`` it raised (only
        the cancellation of this call goes on: the client's, or the server stopping)."""
        try:
            return await self.arun(program)
        except Exception:
            raise
        except BaseException as exc:
            task = asyncio.current_task()
            if isinstance(exc, asyncio.CancelledError) and task and task.cancelling():
                raise
            return exc

    def mcp_server(self, server_name: str = "ptc") -> Any:
        """An MCP server (the ``mcp`` package) offering this tool; ``.run()`` serves stdio."""
        from ptc.llm._adapter import require

        try:
            server_cls = require("mcp.server.mcpserver", "mcp").MCPServer
        except ImportError:  # mcp 1.x
            server_cls = require("mcp.server.fastmcp", "mcp").FastMCP
        try:
            tool_error = require("mcp.server.mcpserver.exceptions", "mcp").ToolError
        except ImportError:  # mcp 1.x
            tool_error = require("mcp.server.fastmcp.exceptions", "mcp").ToolError
        server = server_cls(server_name)

        async def run_program(program: str) -> str:
            # The server is the host: a tool's SystemExit or KeyboardInterrupt (or any other
            # BaseException) ends this call, never the server and its other clients. The run
            # goes in a task of its own, which hands such an exception back as a value: caught
            # in the server's own (anyio) task instead, a GeneratorExit still failed its task
            # group and ended the server.
            outcome = await asyncio.ensure_future(self._served(program))
            if isinstance(outcome, str):
                return outcome
            _log.warning("a tool stopped a run of %s", self.name, exc_info=outcome)
            raise tool_error(_stopped(outcome))

        server.add_tool(run_program, name=self.name, description=self.description)
        return server


_log = logging.getLogger("ptc.integrations")


def _field(obj: Any, key: str) -> Any:
    """``obj[key]`` of a mapping, or the attribute of an SDK object; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "..."


def _json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an object" if isinstance(value, dict) else "an array"


def _not_text(program: str) -> str | None:
    """The answer to a program holding a lone surrogate (JSON's ``"\\ud800"`` gives one), which
    is not Unicode text and cannot be run; ``None`` for a program that can be."""
    found = _SURROGATE.search(program)
    if found is None:
        return None
    before = program[: found.start()]
    line = before.count("\n") + 1
    column = found.start() - (before.rfind("\n") + 1) + 1
    return (
        f"error: the program is not valid Unicode text: {found.group()!r} (a lone surrogate, as"
        f" the JSON escape \\u{ord(found.group()):04x} gives it) at line {line}, column {column};"
        " write the character you meant, or leave it out"
    )


#: A surrogate code point: a Python str may hold one alone, Unicode text (UTF-8) cannot.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _stopped(exc: BaseException) -> str:
    """The error an MCP client reads when a tool raised what ends a process."""
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:  # the innermost frame: the tool's own code
        last = frames[-1]
        where = f" (in {last.name}, {os.path.basename(last.filename)} line {last.lineno})"
    rest = f"{where}. Nothing the run defined was kept; the server goes on serving."
    return f"the run was stopped: a tool raised {error_echo(repr(exc), rest)}"
