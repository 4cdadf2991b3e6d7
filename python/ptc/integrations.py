"""ptc as a tool for other agents: one tool, ``run_program``, that runs a PTC-Lisp program over
the data and tools you give it, offered in the shapes other stacks take.

- :meth:`ProgramTool.openai_schema` / :meth:`ProgramTool.openai_result`: OpenAI function
  calling (JSON schema in, a ``{"role": "tool", ...}`` message out);
- :meth:`ProgramTool.anthropic_schema` / :meth:`ProgramTool.anthropic_result`: Anthropic tool
  use (a ``tool_use`` block in, a ``tool_result`` block out, ``is_error`` set on errors);
- :meth:`ProgramTool.pydantic_ai_tool`: a ``pydantic_ai.Tool``;
- :meth:`ProgramTool.mcp_server`: an MCP server (the official ``mcp`` package), also started by
  ``ptc mcp --data d.json --tool module:function`` on stdio; errors come back with
  ``isError: true`` and the server reports ptc's version.

The model calling the tool reads the tool's description (:func:`ptc.prompts.tool_prompt`, then
the ``tool/`` and ``data/`` namespaces): what the tool does, that its argument is one program,
what a program can read, what comes back, and the language guide. It gets back text: what the
program printed, then its value (or its error with the hint that says how to fix it).
Definitions persist between calls, as in a SubAgent, unless ``keep_definitions=False``.
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
from dataclasses import dataclass
from typing import Annotated, Any

from ptc.compression._format import error_echo, namespace_sections
from ptc.compression.base import DataEntry, RenderOptions
from ptc.limits import LimitsArg
from ptc.prompts import tool_prompt
from ptc.session import Result, Session
from ptc.tools.adapter import normalize_tools
from ptc.tools.declare import ToolsArg

#: Characters of a value shown back to the calling model (the rest is elided). An error's
#: message is cut at ``ERROR_ECHO_CHARS`` (4,000) characters, with a note of its length.
RESULT_CHARS = 4_000

#: What the ``program`` argument is, in the tool's input schema.
PROGRAM_DESCRIPTION = (
    "The source of one PTC-Lisp program, as plain text, e.g. (count data/orders). The value of"
    " its last form is the answer."
)

#: What the description says when there are neither data nor tools.
NOTHING_GIVEN = "No data and no tools are given here: a program works on the values it writes."


@dataclass(frozen=True, slots=True)
class ProgramAnswer:
    """A call's answer: ``text`` for the calling model (see :meth:`ProgramTool.text`), and
    ``is_error``, true when the program raised an error or ended with ``(fail ...)``, or the
    call itself was not one the tool can run (no program, a program that is not text).

    A run that stopped at calls of approval or deferred tools is not an error: ``pending``
    lists them (``ptc.PendingCall``) and ``continuation`` continues it
    (:meth:`ProgramTool.resume`)."""

    text: str
    is_error: bool
    pending: tuple[Any, ...] = ()
    continuation: Any = None


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
        approve: Any = None,
        result_tokens: int | None = None,
        tool_listing_tokens: int | None = 1500,
    ) -> None:
        from ptc.agent import _tokens_arg

        self.name = name
        #: the value of an answer within this many exact o200k tokens (None: 4,000 characters)
        self.result_tokens = _tokens_arg(result_tokens, "result_tokens")
        #: the description's tool/ section within this many exact o200k tokens, the tools found
        #: with (tools "words") past it (None: every tool's line, however long)
        self.tool_listing_tokens = _tokens_arg(tool_listing_tokens, "tool_listing_tokens")
        self.data = dict(data or {})
        self._tools_arg = tools
        self.tools = normalize_tools(tools)
        self.limits = limits
        self.keep_definitions = keep_definitions
        self.approve = approve
        self._session = self._new_session()
        self._lock = threading.Lock()  # one program at a time: a Session runs one at a time
        #: continuations of runs waiting on approvals, by the calling framework's call id
        self._waiting: dict[str, Any] = {}

    def _new_session(self) -> Session:
        return Session(
            data=self.data, tools=self._tools_arg, limits=self.limits, approve=self.approve
        )

    @classmethod
    def from_session(
        cls,
        session: Session,
        *,
        name: str = "run_program",
        result_tokens: int | None = None,
        tool_listing_tokens: int | None = 1500,
    ) -> ProgramTool:
        from ptc.agent import _tokens_arg

        self = cls.__new__(cls)
        self.name, self.data, self.tools, self.limits = name, {}, dict(session._tools), None
        self._tools_arg, self.approve = session._tools_arg, session._approve
        self.keep_definitions = True
        self.result_tokens = _tokens_arg(result_tokens, "result_tokens")
        self.tool_listing_tokens = _tokens_arg(tool_listing_tokens, "tool_listing_tokens")
        self._session = session
        self._lock = threading.Lock()
        self._waiting = {}
        return self

    # --- what the calling model sees -------------------------------------------------------

    @property
    def description(self) -> str:
        """What the calling model reads about the tool: :func:`ptc.prompts.tool_prompt` (what
        it does, its argument, what comes back, the language guide), then the ``tool/`` and
        ``data/`` sections listing what a program can call and read."""
        from ptc.agent import Tool

        specs = tuple(Tool(fn).spec(n) for n, fn in self.tools.items())
        data = []
        for key in self._session.data_keys:
            d = self._session.describe_data(key)
            data.append(DataEntry(key, d.type, None if key.startswith("_") else d.sample))
        opts: RenderOptions = {"tools": specs, "data": tuple(data)}
        if self.tool_listing_tokens is not None:
            opts["tool_listing_tokens"] = self.tool_listing_tokens
        sections = namespace_sections(opts)
        guide = tool_prompt(self.keep_definitions, self.result_tokens is not None)
        return "\n\n".join([guide, *(sections or [NOTHING_GIVEN])])

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the tool's arguments."""
        return {
            "type": "object",
            "properties": {"program": {"type": "string", "description": PROGRAM_DESCRIPTION}},
            "required": ["program"],
            "additionalProperties": False,
        }

    # --- running ---------------------------------------------------------------------------

    def run(self, program: str) -> str:
        """Runs ``program``; the text for the calling model (:meth:`answer` also says whether
        it is an error)."""
        return self.answer(program).text

    async def arun(self, program: str) -> str:
        """``run`` without blocking the event loop (async tools awaited on it)."""
        return (await self.aanswer(program)).text

    def answer(self, program: str) -> ProgramAnswer:
        """Runs ``program``: the text for the calling model, flagged when it is an error."""
        refused = _refusal(program)
        if refused is not None:
            return refused
        with self._lock:
            if not self.keep_definitions:
                self._session = self._new_session()
            return self.answer_of(self._session.run(program, lazy=True), self.result_tokens)

    async def aanswer(self, program: str) -> ProgramAnswer:
        """``answer`` without blocking the event loop (async tools awaited on it)."""
        refused = _refusal(program)
        if refused is not None:
            return refused
        if not self.keep_definitions:
            self._session = self._new_session()
        return self.answer_of(await self._session.arun(program, lazy=True), self.result_tokens)

    def resume(self, run: ProgramAnswer | Any, decisions: Mapping[str, Any]) -> ProgramAnswer:
        """Continues a run that stopped at pending calls (an answer whose ``pending`` is not
        empty, or its ``continuation``) with the host's decisions, as ``Session.resume``."""
        cont = run.continuation if isinstance(run, ProgramAnswer) else run
        if cont is None:
            raise ValueError("this answer is not waiting on any tool call: nothing to resume")
        with self._lock:
            return self.answer_of(
                self._session.resume(cont, decisions, lazy=True), self.result_tokens
            )

    @classmethod
    def answer_of(cls, result: Result, result_tokens: int | None = None) -> ProgramAnswer:
        """A run's answer: :meth:`text`, an error when the run raised one or failed; a run
        waiting on calls of approval or deferred tools carries them and its continuation."""
        if result.outcome == "pending":
            return ProgramAnswer(
                cls.text(result), False, tuple(result.pending), result.continuation
            )
        text = cls.text(result, result_tokens)
        return ProgramAnswer(text, result.error is not None or result.failed)

    @staticmethod
    def text(result: Result, result_tokens: int | None = None) -> str:
        """A run as text: prints, then ``=> value`` or ``Error: ...`` with its hint.

        The value is cut at ``RESULT_CHARS`` characters, or printed within ``result_tokens``
        exact o200k tokens when given (the widest view that fits, with ``...N more``
        markers), an error's message at ``ERROR_ECHO_CHARS`` (4,000) with a note of its full
        length (a tool's exception text can be megabytes)."""
        lines = list(result.prints)
        if result.outcome == "pending":
            calls = "; ".join(f"{p.describe()} (id {p.id})" for p in result.pending)
            n = len(result.pending)
            lines.append(
                f"Pending: the run is waiting for the host to decide {n} tool "
                f"call{'s' if n != 1 else ''}: {calls}"
            )
            return "\n".join(lines)
        if result.error is not None:
            e = result.error
            where = f" (line {e.line}, column {e.column})" if e.line is not None else ""
            text = f"Error: {error_echo(e.message, where)}"
            if e.hint:
                text += f"\nHint: {e.hint}"
            lines.append(text)
        else:
            if result_tokens is not None:
                value = result.preview(1_000, 1_000, max_tokens=result_tokens)
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
        model to read and correct. OpenAI's tool message has no error flag (the API refuses
        keys it does not know): an error is told by its text, which starts ``Error:``,
        ``failed:`` or ``error:``; :meth:`openai_answer` gives the flag too."""
        call_id = _field(tool_call, "id")
        return {
            "role": "tool",
            "tool_call_id": call_id if isinstance(call_id, str) else "",
            "content": self.openai_answer(tool_call).text,
        }

    def openai_answer(self, tool_call: Any) -> ProgramAnswer:
        """The answer to an OpenAI tool call, flagged when it is an error (see
        :meth:`openai_result`)."""
        fn = _field(tool_call, "function")
        if fn is None:
            return _refused("error: the tool call has no 'function' (its name and arguments)")
        name = _field(fn, "name")
        if name != self.name:
            return self._wrong_name(name)
        arguments = _field(fn, "arguments")
        if arguments is None or arguments == "":
            return _refused(
                "error: the call has no arguments; send a JSON object with the program, e.g."
                ' {"program": "(count data/orders)"}'
            )
        if not isinstance(arguments, str):
            return _refused(
                "error: the arguments must be JSON text (a string holding a JSON object),"
                f" got {type(arguments).__name__}"
            )
        try:
            args = json.loads(arguments)
        except json.JSONDecodeError as e:
            return _refused(f"error: the arguments are not JSON: {e}")
        except RecursionError:
            return _refused("error: the arguments are JSON nested too deeply to read")
        return self._answer_args(args, "arguments")

    def _wrong_name(self, name: Any) -> ProgramAnswer:
        return _refused(f"error: no tool named {_short(name)} here (this one is {self.name!r})")

    def _answer_args(self, args: Any, what: str) -> ProgramAnswer:
        """Runs the program of a call's arguments (``what`` names them as its API does)."""
        if not isinstance(args, dict):
            return _refused(
                f'error: the {what} must be a JSON object like {{"program": "..."}}, got'
                f" {_json_kind(args)}"
            )
        if "program" not in args:
            have = "have" if what == "arguments" else "has"
            return _refused(f'error: the {what} {have} no "program" (the PTC-Lisp source to run)')
        program = args["program"]
        if not isinstance(program, str):
            return _refused(
                f'error: "program" must be a string of PTC-Lisp, got {_json_kind(program)}'
            )
        return self.answer(program)

    # --- Anthropic tool use ----------------------------------------------------------------

    def anthropic_schema(self) -> dict[str, Any]:
        """The tool for ``tools=[...]`` of Anthropic's Messages API."""
        return {"name": self.name, "description": self.description, "input_schema": self.parameters}

    def anthropic_result(self, tool_use: Any) -> dict[str, Any]:
        """Runs an Anthropic ``tool_use`` block (SDK object or dict) and returns its
        ``tool_result`` block, with ``is_error`` true when the program raised an error or
        failed, or the block holds no program to run (answered with text saying what is
        wrong, as :meth:`openai_result` does)."""
        use_id = _field(tool_use, "id")
        name = _field(tool_use, "name")
        if name != self.name:
            answer = self._wrong_name(name)
        else:
            answer = self._answer_args(_field(tool_use, "input"), "input")
        return {
            "type": "tool_result",
            "tool_use_id": use_id if isinstance(use_id, str) else "",
            "content": answer.text,
            "is_error": answer.is_error,
        }

    # --- pydantic-ai -----------------------------------------------------------------------

    def pydantic_ai_tool(self) -> Any:
        """A ``pydantic_ai.Tool`` that runs programs (async: never blocks the agent's loop)."""
        from ptc.llm._adapter import require

        pydantic_ai = require("pydantic_ai", "pydantic-ai")
        approval_required = require("pydantic_ai.exceptions", "pydantic-ai").ApprovalRequired

        async def run_program(ctx: Any, program: str) -> str:
            # a run that stopped at approval tools is pydantic-ai's deferred tool call: the
            # agent's run ends with the request, and when the host approves it, the same call
            # comes back approved and the stopped run resumes with all its calls allowed
            waiting = self._waiting.pop(ctx.tool_call_id, None)
            if waiting is not None and ctx.tool_call_approved:
                cont = waiting.continuation
                answer = await asyncio.to_thread(
                    self.resume, cont, {p.id: True for p in waiting.pending}
                )
            else:
                answer = await self.aanswer(program)
            if answer.pending:
                self._waiting[ctx.tool_call_id] = answer
                raise approval_required(
                    metadata={
                        "pending": [
                            {"id": p.id, "tool": p.tool, "call": p.describe()}
                            for p in answer.pending
                        ]
                    }
                )
            return answer.text

        run_program.__annotations__ = {
            "ctx": pydantic_ai.RunContext,
            "program": str,
            "return": str,
        }
        return pydantic_ai.Tool(
            run_program, name=self.name, description=self.description, takes_ctx=True
        )

    # --- MCP -------------------------------------------------------------------------------

    async def _served(self, program: str) -> ProgramAnswer | BaseException:
        """``aanswer(program)``, or the exception that is not an ``Exception`` it raised (only
        the cancellation of this call goes on: the client's, or the server stopping)."""
        try:
            return await self.aanswer(program)
        except Exception:
            raise
        except BaseException as exc:
            task = asyncio.current_task()
            if isinstance(exc, asyncio.CancelledError) and task and task.cancelling():
                raise
            return exc

    def mcp_server(self, server_name: str = "ptc") -> Any:
        """An MCP server (the ``mcp`` package) offering this tool; ``.run()`` serves stdio.

        Its ``serverInfo.version`` is ptc's version. A call is answered with the program's text
        (see :meth:`text`), with ``isError: true`` when the program raised an error or
        failed, or a tool stopped the run (see below)."""
        from ptc import __version__
        from ptc.llm._adapter import require

        mcp_types = require("mcp.types", "mcp")
        try:
            server_cls = require("mcp.server.mcpserver", "mcp").MCPServer
        except ImportError:  # mcp 1.x
            server_cls = require("mcp.server.fastmcp", "mcp").FastMCP
        try:
            server = server_cls(server_name, version=__version__)
        except TypeError:  # mcp 1.x: FastMCP takes no version; its low-level server holds it
            server = server_cls(server_name)
            server._mcp_server.version = __version__
        from pydantic import Field

        def reply(answer: ProgramAnswer) -> Any:
            # a result of its own: the SDK's text result has no error flag, and its ToolError
            # puts "Error executing tool ..." before the text the model should read
            result: dict[str, Any] = {
                "content": [{"type": "text", "text": answer.text}],
                "isError": answer.is_error,
            }
            if answer.pending:  # a run waiting on approvals: not an error; the calls, as data
                result["structuredContent"] = {
                    "pending": [
                        {"id": p.id, "tool": p.tool, "call": p.describe()} for p in answer.pending
                    ]
                }
            return mcp_types.CallToolResult.model_validate(result)

        async def run_program(program: str) -> Any:
            # The server is the host: a tool's SystemExit or KeyboardInterrupt (or any other
            # BaseException) ends this call, never the server and its other clients. The run
            # goes in a task of its own, which hands such an exception back as a value: caught
            # in the server's own (anyio) task instead, a GeneratorExit still failed its task
            # group and ended the server.
            outcome = await asyncio.ensure_future(self._served(program))
            if isinstance(outcome, ProgramAnswer):
                return reply(outcome)
            _log.warning("a tool stopped a run of %s", self.name, exc_info=outcome)
            return reply(ProgramAnswer(f"Error: {_stopped(outcome)}", True))

        # real types, not the module's string annotations: the SDK reads the argument's
        # description from them, and a CallToolResult return declares no output schema
        run_program.__annotations__ = {
            "program": Annotated[str, Field(description=PROGRAM_DESCRIPTION)],
            "return": mcp_types.CallToolResult,
        }
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


def _refused(text: str) -> ProgramAnswer:
    """The answer to a call the tool cannot run: an error, saying what is wrong."""
    return ProgramAnswer(text, True)


def _refusal(program: Any) -> ProgramAnswer | None:
    """The answer to a ``program`` that cannot be run (not a string, not Unicode text);
    ``None`` for one that can."""
    if not isinstance(program, str):
        return _refused(f"error: the program must be a string, got {type(program).__name__}")
    unreadable = _not_text(program)
    return None if unreadable is None else _refused(unreadable)


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
