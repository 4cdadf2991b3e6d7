"""``SubAgent``: the multi-turn loop in which an LLM writes PTC-Lisp.

Each turn: render the messages (compression strategy over the turns so far), ask the LLM, extract
the program, run it in the agent's :class:`ptc.Session`, record an immutable :class:`Turn`. The run
ends on ``(return v)``, ``(fail reason)``, after ``max_turns`` turns, or when the LLM cannot be
reached. The loop itself is a generator that yields "call the LLM" / "run this program" requests,
so the sync and async drivers share every decision.

Why one module over 600 lines: the agent, its configuration and the loop (``_Runner``)
share one set of decisions; the drivers beside them are the loop's only callers.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import re
import time
import uuid
from collections.abc import AsyncGenerator, Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

import ptc
from ptc import _agent_args as checks
from ptc import _core, _records
from ptc.checkpoint import (
    CheckpointSink,
    CheckpointSource,
    Sink,
    check_resumable,
    data_fingerprint,
)
from ptc.checkpoint.base import finished
from ptc.checkpoint.errors import shown_id
from ptc.compression import (
    ChatMessage,
    Compression,
    CompressionArg,
    DataEntry,
    normalize,
)
from ptc.compression._format import REPLY_ECHO_CHARS
from ptc.limits import LimitsArg

if TYPE_CHECKING:
    from ptc.approvals import Policy
    from ptc.history import AsyncPostgresStore, Store
from ptc.checking import check_with
from ptc.eager import Eager, read_tools
from ptc.errors import LispError, PtcError
from ptc.llm import (
    LLM,
    LLMReply,
    RetryPolicy,
    acall_llm,
    attempts_of,
    call_llm,
    is_async_llm,
)
from ptc.llm.reply import describe_error
from ptc.observe import Hooks, LLMCall, Observer, ToolCallEvent
from ptc.prompts import system_prompt as default_system_prompt
from ptc.step import (
    RESULT_LIMIT,
    RESULT_PRINTABLE_LIMIT,
    RunContext,
    Step,
    StepError,
    Usage,
    joined,
    out_of_turns,
    run_ending,
)
from ptc.tools.declare import AgentTool, Tool, ToolsArg, tool_entries
from ptc.tools.rich_types import check_tool_name
from ptc.tools.signature import (
    ANY,
    Param,
    Signature,
    SigType,
    check_against,
    check_value,
    signature_of,
)
from ptc.turn import MemoryEntry, SuspendedTurn, ToolCallRecord, Turn, TurnError

__all__ = ["AgentTool", "SubAgent", "SubAgentError", "Tool", "extract_program"]

DEFAULT_MAX_TURNS = 5  # SS-002
#: o200k tokens the tool/ section may take before tools are listed by name only (issue 33 §2):
#: about twenty tools' lines, so most agents keep every signature in view
DEFAULT_TOOL_LISTING_TOKENS = 1500
RESULT_MAX_CHARS = 512  # LANGUAGE §9.2 feedback
NO_PROGRAM_MESSAGE = (
    "No PTC-Lisp program found in your reply. Answer with one program in a ```clojure code "
    "block, for example:\n```clojure\n(def total (count data/items))\n(println total)\n```"
)


def _no_program_message(reply: str) -> str:
    """The feedback on a reply without a program; the reply is shown back cut to its first
    ``REPLY_ECHO_CHARS`` characters, and the feedback says so when it was."""
    if len(reply) <= REPLY_ECHO_CHARS:
        return NO_PROGRAM_MESSAGE
    return (
        f"{NO_PROGRAM_MESSAGE}\n\n(Your reply was {len(reply):,} characters long: only its"
        f" first {REPLY_ECHO_CHARS:,} are shown above.)"
    )


class SubAgentError(PtcError, RuntimeError):
    """A sub-agent used as a tool did not succeed; the parent sees it as a tool error."""


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


# --- program extraction ------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)
_LISP_LANGS = {"", "clojure", "clj", "cljs", "lisp", "ptc", "ptc-lisp", "edn", "scheme"}


def extract_program(reply: str) -> str | None:
    """The program in an LLM reply: all ```clojure/```lisp/``` blocks joined in order, or the
    whole reply when it is a bare program. None when there is nothing to run."""
    blocks = [body for lang, body in _FENCE.findall(reply) if lang.lower() in _LISP_LANGS]
    if blocks:
        program = "\n".join(b.strip("\n") for b in blocks).strip()
        return program or None
    if "```" in reply:
        return None  # fenced code in another language: not ours
    text = reply.strip()
    if text.startswith(("(", ";", "[", "{")):
        return text
    return None


# --- configuration and inheritance (API-007) ---------------------------------------------


@dataclass(frozen=True)
class _Config:
    llm: LLM | None
    compression: tuple[Compression | None, dict[str, int]]
    limits: Any
    retry: RetryPolicy


_DEFAULT_CONFIG = _Config(None, (None, {}), None, RetryPolicy())


class SubAgent:
    """An LLM agent that answers a mission by writing PTC-Lisp over ``data`` and ``tools``.

    ``llm`` is a callable taking the chat messages (``ptc.llm.openai(...)``, your function) or a
    ``"provider:model"`` string (``"openai:gpt-4.1-mini"``, see :func:`ptc.llm.from_string`).
    ``signature`` checks the returned value: a signature string (``"{name :string}"``) or a
    Pydantic model, dataclass or ``TypedDict`` class, whose own validation runs too.
    Options left unset (``llm``, ``compression``, ``limits``, ``retry``) are inherited from the
    parent when this agent runs as another agent's tool, else take their defaults:
    no compression, default limits, 3 LLM attempts. Every argument is checked here: a wrong
    one is a ``TypeError`` or ``ValueError`` naming it and what to pass.
    ``result_tokens`` bounds each turn's result as the LLM sees it to that many exact o200k
    tokens: the usual print when it fits, else the widest view that does, with markers such
    as ``...9,975 more`` saying what was left out; an error message is cut to the same budget.
    ``output_tokens`` bounds a turn's printed
    output the same way: the newest entries are kept after ``...N earlier lines``.
    ``tool_listing_tokens`` bounds the ``tool/`` section of the first message: when every
    tool's line would take more exact o200k tokens, the tools are listed by name in groups (or
    only counted, by group), and programs look them up with ``(tools "words")`` and
    ``(doc tool/name)``; ``None`` lists every tool's line however long.
    ``eager=True`` runs each top-level form of the program as soon as the streaming reply has
    written it (an LLM that ``streams``: an adapter made with ``stream=True``): tools declared
    ``effect="read"`` are called while the rest is still being written; write, approval and
    deferred tools and sub-agents wait until the whole program has arrived and passed its
    check. The turn's outcome is the one it has without ``eager`` (see :mod:`ptc.eager`).
    """

    def __init__(
        self,
        prompt: str,
        *,
        llm: LLM | None = None,
        tools: ToolsArg = None,
        data: Mapping[str, Any] | None = None,
        max_turns: int = DEFAULT_MAX_TURNS,
        compression: CompressionArg | _Unset = UNSET,
        signature: str | type | None = None,
        limits: LimitsArg = None,
        retry: RetryPolicy | None = None,
        system_prompt: str | None = None,
        on_turn: Callable[[Turn], Any] | None = None,
        on_llm_call: Callable[[LLMCall], Any] | None = None,
        on_tool_call: Callable[[ToolCallEvent], Any] | None = None,
        checkpoint: Sink | None = None,
        telemetry: bool = False,
        name: str = "ptc-agent",
        approve: Policy | None = None,
        result_tokens: int | None = None,
        output_tokens: int | None = None,
        tool_listing_tokens: int | None = DEFAULT_TOOL_LISTING_TOKENS,
        eager: bool = False,
    ) -> None:
        if not isinstance(prompt, str) or not prompt.strip():
            # MSG-003/MSG-007: the mission opens every USER message and is never removed, so a
            # run without one would start the USER message with a blank line and ask nothing.
            raise ValueError(f"SubAgent needs a non-empty mission prompt, got {prompt!r}")
        # every argument is checked here, so a wrong one fails where it is given, not mid-run
        self.prompt = prompt
        self.llm = checks.llm_arg(llm)
        self.tools = tool_entries(checks.tools_arg(tools), unnamed="tool")
        self.data = dict(checks.data_arg(data, "SubAgent(data=...)") or {})
        self.max_turns = checks.max_turns_arg(max_turns)
        self.signature = signature
        self._signature: Signature | None = None
        #: the class given as signature=, which validates returned values (None for a string)
        self._returns_class: type | None = None
        if signature is not None:
            self._signature, self._returns_class = signature_of(signature)
        self.limits = checks.limits_arg(limits)
        self.retry = checks.retry_arg(retry)
        self.system_prompt = checks.text_arg(system_prompt, "system_prompt")
        self.name = checks.name_arg(name)
        if approve is not None and not callable(approve):
            raise TypeError(
                f"approve must be a callable PendingCall -> decision, got {type(approve).__name__}"
            )
        #: decides calls of approval and deferred tools where it can (see ptc.Session)
        self.approve = approve
        #: a turn's result as the LLM sees it is at most this many o200k tokens (None: the
        #: element and character limits alone, LANGUAGE §9.2)
        self.result_tokens = _tokens_arg(result_tokens, "result_tokens")
        #: a turn's printed output as the LLM sees it is at most this many o200k tokens (None:
        #: the per-entry limits alone): the newest entries are kept
        self.output_tokens = _tokens_arg(output_tokens, "output_tokens")
        #: the tool/ section of the first message is at most this many o200k tokens, the
        #: tools found with (tools "words") past it (None: every tool's line, however long)
        self.tool_listing_tokens = _tokens_arg(tool_listing_tokens, "tool_listing_tokens")
        #: complete top-level forms run while the reply streams (ptc.eager)
        self.eager = checks.bool_arg(eager, "eager")
        # what a run reports to while it happens (ptc.observe), and where turns are saved
        self.hooks = Hooks(
            checks.callback_arg(on_turn, "on_turn", "Turn"),
            checks.callback_arg(on_llm_call, "on_llm_call", "ptc.observe.LLMCall"),
            checks.callback_arg(on_tool_call, "on_tool_call", "ptc.observe.ToolCallEvent"),
            checks.checkpoint_arg(checkpoint),
            checks.bool_arg(telemetry, "telemetry"),
        )
        self._compression_spec = compression
        # Normalize now so a bad option fails at construction, not mid-run.
        self._compression = None if isinstance(compression, _Unset) else normalize(compression)

    def __repr__(self) -> str:
        return f"SubAgent(prompt={self.prompt!r}, max_turns={self.max_turns})"

    def _signature_text(self) -> str | None:
        """The signature as a run records it: the string given, or a class's fields as a type
        of the signature language (``{name :string, total :float}``)."""
        if self._signature is None:
            return None
        return self.signature if isinstance(self.signature, str) else str(self._signature)

    def tool_signature(self) -> Signature:
        """This agent's signature as a tool: the explicit signature's parameters, followed by
        the prompt's ``{{placeholders}}`` not already among them nor filled by this agent's own
        ``data`` (as ``:string``); the return type is the signature's, else ``:any``."""
        sig = self._signature
        params: list[Param] = list(sig.params or ()) if sig is not None else []
        known = {_key(p.name) for p in params} | {_key(k) for k in self.data}
        for placeholder in _PLACEHOLDER.findall(self.prompt):
            if _key(placeholder) not in known:
                known.add(_key(placeholder))
                params.append(Param(placeholder, SigType("string")))
        return Signature(tuple(params), sig.returns if sig is not None else ANY)

    def as_tool(
        self,
        name: str,
        description: str | None = None,
        *,
        effect: Literal["read", "write"] = "read",
        max_calls: int | None = None,
        approval: bool = False,
        deferred: bool = False,
        idempotent: bool = False,
    ) -> AgentTool:
        """Offer this agent to another agent as ``(tool/name {...})``. The call's named
        arguments become this agent's ``data`` (and fill ``{{name}}`` placeholders of its prompt);
        the tool returns the value this agent returns, or fails with its error. ``effect``,
        ``max_calls`` and the flags are declared as for :class:`ptc.Tool` (docs/EFFECTS.md)."""
        check_tool_name(name)
        if description is not None and not isinstance(description, str):
            raise TypeError(
                f"as_tool(description=...) takes a string, got {checks.shown(description)}"
            )
        return AgentTool(self, name, description, effect, max_calls, approval, deferred, idempotent)

    def _config(self, parent: _Config | None) -> _Config:
        base = parent or _DEFAULT_CONFIG
        return _Config(
            llm=self.llm if self.llm is not None else base.llm,
            compression=self._compression if self._compression is not None else base.compression,
            limits=self.limits if self.limits is not None else base.limits,
            retry=self.retry if self.retry is not None else base.retry,
        )

    # --- public entry points ---------------------------------------------------------

    def run(self, data: Mapping[str, Any] | None = None) -> Step:
        """Run the loop to completion (a coroutine LLM is driven with ``asyncio.run``).
        ``data`` (names to values, read as ``data/<name>``) is added to the agent's own."""
        data = checks.data_arg(data, "run(data=...)")
        return self._run_sync(_Runner(self, self._config(None), data))

    async def arun(self, data: Mapping[str, Any] | None = None) -> Step:
        """Async twin of :meth:`run`; sync LLM callables and programs run in worker threads."""
        data = checks.data_arg(data, "arun(data=...)")
        return await _drive_async(_Runner(self, self._config(None), data))

    def resume(
        self,
        checkpoint: Step | CheckpointSource | str | None = None,
        run_id: str | None = None,
        *,
        store: Store | AsyncPostgresStore | str | None = None,
        data: Mapping[str, Any] | None = None,
        decisions: Mapping[str, Any] | None = None,
    ) -> Step:
        """Continue a stored run: a Step, or a checkpoint (``JsonlCheckpoint``,
        ``SqliteCheckpoint``, ``PostgresCheckpoint``; ``run_id`` picks the run, default the last
        one), or ``resume(run_id, store=store)`` for a run saved in a history store (any
        worker sharing the store can continue it). The Session state is rebuilt by replaying
        the programs of its saved turns with their recorded tool results (their tools are not
        called again), then the loop goes on, saving to this agent's checkpoint (the store's
        when it has none). The turn under way when the process died is finished from its
        saved program and calls, without asking the model again: a call that ended is
        answered from its record, and the call the process died in is made again only if its
        tool is ``idempotent=True``; else the run is returned pending, that call
        ``interrupted``, for the host to decide (a checkpoint that is a plain callable keeps
        no calls: the model is then asked for that turn again).

        A run that ended (returned, failed, or used its last turn) is returned as it ended:
        nothing runs and the LLM is not called. A run stopped by an ``llm_error`` goes on.

        The run must be this agent's: its stored mission (the prompt, placeholders filled from
        ``data``), tools (names and signatures) and data (its fingerprint; pass the ``data`` the
        run was started with, as given to :meth:`run`) must be this agent's, or
        :class:`ptc.RunMismatchError` names what differs, with both values.

        A run that stopped at tool calls waiting for the host (``step.outcome ==
        "pending"``, ``step.pending``) goes on with ``decisions``: a pending call's id to
        ``True``, ``ptc.Reject(reason)`` or ``ptc.Answer(value)`` (see ``Session.resume``).
        Its turn is finished first (replayed: no tool is called twice), then the loop goes on;
        calls without a decision leave the run pending again.

        While it runs, the run is locked when the checkpoint can lock it: a second worker
        resuming the same run gets ``ptc.checkpoint.RunLockedError``."""
        with self._resumed("resume", checkpoint, run_id, store, data, decisions) as runner:
            if runner.ended is not None:
                return runner.ended
            return self._run_sync(runner)

    @contextlib.contextmanager
    def _resumed(
        self,
        method: str,
        checkpoint: Step | CheckpointSource | str | None,
        run_id: str | None,
        store: Store | AsyncPostgresStore | str | None,
        data: Mapping[str, Any] | None,
        decisions: Mapping[str, Any] | None,
    ) -> Iterator[_Runner]:
        """The runner that continues a stored run from where it was saved (what
        :meth:`resume` and :meth:`aresume`, named by ``method``, were given), the run locked
        while it is in use."""
        data = checks.data_arg(data, f"{method}(data=...)")
        source, run_id, sink = _resume_source(checkpoint, run_id, store)
        with _run_lock(source, run_id) as run_id:
            if decisions is not None and not isinstance(decisions, Mapping):
                raise TypeError("decisions is a mapping of pending call id -> decision")
            step, run_id = _resume_point(source, run_id)
            if decisions and step.suspended is None:
                raise ValueError(
                    "decisions were given, but the run is not waiting on any tool call "
                    f"(its outcome is {step.outcome!r})"
                )
            runner = _Runner(
                self,
                self._config(None),
                data,
                previous=step,
                run_id=run_id,
                checkpoint=sink,
                source=source,
            )
            runner.decisions = dict(decisions or {})
            yield runner

    async def aresume(
        self,
        checkpoint: Step | CheckpointSource | str | None = None,
        run_id: str | None = None,
        *,
        store: Store | AsyncPostgresStore | str | None = None,
        data: Mapping[str, Any] | None = None,
        decisions: Mapping[str, Any] | None = None,
    ) -> Step:
        """Async twin of :meth:`resume`."""
        with self._resumed("aresume", checkpoint, run_id, store, data, decisions) as runner:
            if runner.ended is not None:
                return runner.ended
            return await _drive_async(runner)

    def iter(self, data: Mapping[str, Any] | None = None) -> AgentRun:
        """Runs the loop, yielding each Turn as it completes; the Step is ``.step`` after the
        last one (``for turn in agent.iter(): ...``)."""
        runner = _Runner(self, self._config(None), checks.data_arg(data, "iter(data=...)"))
        if is_async_llm(runner.llm):
            raise RuntimeError("this agent's LLM is async; use 'async for turn in agent.aiter()'")
        return AgentRun(_drive_sync_turns(runner))

    def aiter(self, data: Mapping[str, Any] | None = None) -> AsyncAgentRun:
        """Async twin of :meth:`iter`: ``async for turn in agent.aiter(): ...``."""
        data = checks.data_arg(data, "aiter(data=...)")
        return AsyncAgentRun(_drive_async_turns(_Runner(self, self._config(None), data)))

    def _run_sync(self, runner: _Runner) -> Step:
        if runner.config.llm is not None and is_async_llm(runner.config.llm):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                return asyncio.run(_drive_async(runner))
            raise RuntimeError("this agent's LLM is async; use 'await agent.arun()' inside a loop")
        return _drive_sync(runner)


# --- the loop ----------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{\{\s*([\w-]+)\s*\}\}")


def _key(name: str) -> str:
    """Placeholder/parameter names match across ``-`` and ``_`` (``{{my-topic}}`` = my_topic)."""
    return name.replace("-", "_")


def _fill(template: str, values: Mapping[str, Any]) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        for k in (key, key.replace("-", "_"), key.replace("_", "-")):
            if k in values:
                return str(values[k])
        return m.group(0)

    return _PLACEHOLDER.sub(sub, template)


class _ReplayError(RuntimeError):
    pass


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class _Runner:
    """State of one run. ``loop()`` is the sans-IO core shared by both drivers."""

    def __init__(
        self,
        agent: SubAgent,
        config: _Config,
        data: Mapping[str, Any] | None,
        previous: Step | None = None,
        run_id: str | None = None,
        checkpoint: Sink | None = None,
        source: object = None,
    ) -> None:
        if config.llm is None:
            raise ValueError("SubAgent needs an llm (or a parent agent to inherit one from)")
        self.agent = agent
        self.config = config
        self.llm: LLM = config.llm
        self.run_id = run_id or uuid.uuid4().hex
        self._stored_id = run_id is not None
        # a resumed run is locked by resume() itself, before its checkpoint is read
        self.resumed = previous is not None
        hooks = agent.hooks
        if checkpoint is not None and hooks.checkpoint is None:
            hooks = dataclasses.replace(hooks, checkpoint=checkpoint)
        self.sink = hooks.checkpoint
        self.observer = Observer(hooks, self.run_id, agent.name, config.llm)
        self.loop_ref: asyncio.AbstractEventLoop | None = None
        #: the current request's early runs (SubAgent(eager=True)), and how long the calls
        #: they made took (their real run is answered from their record)
        self.eager: Eager | None = None
        self.eager_ms: dict[str, float] = {}
        # a speculative run is calling tools: they are not saved as the turn's in-flight calls
        # (its real run is, and a crash before it asks the LLM again)
        self.speculating = False
        # a checkpoint that keeps calls as they happen (see ptc.checkpoint.inflight)
        self._save_call: Callable[[str, dict[str, Any]], None] | None = getattr(
            self.sink, "save_call", None
        )
        self._replay: list[ToolCallRecord] | None = None
        self._diverged_by: str | None = None  # how a replayed program left its recorded calls
        self.strategy, opts = config.compression
        self.opts = opts or normalize(True)[1]  # sample/arg limits apply even without compression
        merged = {**agent.data, **(data or {})}
        tools: dict[str, Any] = {}
        for name, tool in agent.tools:
            wrapped = self._wrap(name, tool)
            if tool.max_calls is not None or tool.approval or tool.deferred or tool.idempotent:
                # the cap and the gates go to the core with the wrapper, which is what the
                # session calls
                tools[name] = Tool(
                    wrapped,
                    max_calls=tool.max_calls,
                    approval=tool.approval,
                    deferred=tool.deferred,
                    idempotent=tool.idempotent,
                )
            else:
                tools[name] = wrapped
        self.deferred = frozenset(n for n, t in agent.tools if t.deferred)
        #: the tools an early run (eager) may call
        self.read_tools = read_tools(agent.tools)
        self.session = ptc.Session(
            data=merged, tools=tools, limits=config.limits, approve=agent.approve
        )
        # programs find tools as they were declared, not as the wrappers the session calls
        self.session._described[0] = dict(agent.tools)
        #: the turn that stopped at calls waiting for the host (a resumed pending run), and
        #: the decisions the resume brings for them
        self.suspended: SuspendedTurn | None = None
        self.decisions: Mapping[str, Any] = {}
        # each program is checked against the tools as declared (not their wrappers) first
        self.check_tools: dict[str, Tool | AgentTool] = dict(agent.tools)
        # a turn's last value stays in the core unless read; with one turn it is the answer
        self.lazy = agent.max_turns != 1
        mission = _fill(agent.prompt, merged).strip()
        if not mission:  # e.g. a prompt of only "{{task}}" filled with ""
            raise ValueError("the mission is empty after filling the prompt's placeholders")
        self.context = RunContext(
            mission=mission,
            # the line on elision markers only where budgets make them: the default stays as it is
            system_prompt=agent.system_prompt
            or default_system_prompt(
                agent.result_tokens is not None or agent.output_tokens is not None
            ),
            max_turns=agent.max_turns,
            tools=tuple(t.spec(n) for n, t in agent.tools),
            data=tuple(self._data_entry(k) for k in self.session.data_keys),
            compression=self.strategy.name if self.strategy is not None else None,
            compression_opts=dict(opts),
            signature=agent._signature_text(),
            # read once, and only where a resume may compare it (it reads all the data)
            data_fingerprint=(
                data_fingerprint(merged) if self.sink is not None or previous is not None else None
            ),
            output_tokens=agent.output_tokens,
            result_tokens=agent.result_tokens,
            tool_listing_tokens=agent.tool_listing_tokens,
        )
        self.turns: list[Turn] = []
        self.messages: list[list[ChatMessage]] = []  # this run's calls
        # a resumed run's earlier calls, as loaded (a stored step renders them when read)
        self.past: Sequence[list[ChatMessage]] = ()
        self.usage = Usage()
        self.started = time.perf_counter()
        #: the stored run, when the run resumed had already ended (nothing is left to run)
        self.ended: Step | None = None
        if previous is not None:
            self._restore(previous, source)

    # --- setup helpers -------------------------------------------------------------

    def _data_entry(self, key: str) -> DataEntry:
        desc = self.session.describe_data(
            key, self.opts["sample_limit"], self.opts["sample_printable_limit"]
        )
        # Keys starting with "_" are firewalled: the LLM may use them but never sees contents.
        sample = None if key.startswith("_") else desc.sample
        return DataEntry(key, desc.type, sample)

    def _wrap(self, name: str, tool: Tool | AgentTool) -> Callable[..., Any]:
        if isinstance(tool, AgentTool):
            target = self._child_caller(tool)
        else:
            target = tool.fn

        observer = self.observer

        how = "approved" if tool.approval or tool.deferred else "called"

        def call(*args: Any, **kwargs: Any) -> Any:
            if self._replay is not None:
                return self._replayed(name)
            if self._save_call is not None and not self.speculating:
                return self._recorded_call(name, how, target, args, kwargs)
            if not observer.wants_tool_calls():
                return target(*args, **kwargs)
            handle = observer.tool_started(name)
            t0 = time.perf_counter()
            try:
                result = target(*args, **kwargs)
                if inspect.isawaitable(result):  # an async tool: awaited here to time it
                    result = self.session._loop_ref.resolve(result)
            except Exception as exc:
                ms = (time.perf_counter() - t0) * 1000
                observer.tool_call(ToolCallEvent(name, args, kwargs, None, exc, ms), handle)
                raise
            ms = (time.perf_counter() - t0) * 1000
            observer.tool_call(ToolCallEvent(name, args, kwargs, result, None, ms), handle)
            return result

        call.__name__ = getattr(target, "__name__", name)
        call.__doc__ = getattr(target, "__doc__", None)
        call.__wrapped__ = target  # type: ignore[attr-defined]
        return call

    def _recorded_call(
        self,
        name: str,
        how: str,
        target: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """A tool call saved to the checkpoint as it starts and as it ends, so a process that
        dies meanwhile leaves a record: a resume answers an ended call from it and never makes
        a call twice without the host's say (see :mod:`ptc.checkpoint.inflight`)."""
        assert self._save_call is not None
        record: dict[str, Any] = {
            "turn": len(self.turns) + 1,
            "id": _core._tool_call_id() or "",
            "tool": name,
            "how": how,
        }
        self._save_call(self.run_id, record)
        observer = self.observer
        handle = observer.tool_started(name) if observer.wants_tool_calls() else None
        t0 = time.perf_counter()
        try:
            result = target(*args, **kwargs)
            if inspect.isawaitable(result):  # awaited here: its value is what is recorded
                result = self.session._loop_ref.resolve(result)
        except Exception as exc:
            text = str(exc)
            self._save_call(
                self.run_id,
                {
                    **record,
                    "error": f"{type(exc).__name__}: {text}" if text else type(exc).__name__,
                },
            )
            if handle is not None:
                ms = (time.perf_counter() - t0) * 1000
                observer.tool_call(ToolCallEvent(name, args, kwargs, None, exc, ms), handle)
            raise
        try:
            value = _core._record_value(result)
        except Exception:  # a result the core cannot take: the call fails in the core too
            value = None
        if value is not None or result is None:
            self._save_call(self.run_id, {**record, "result": value})
        if handle is not None:
            ms = (time.perf_counter() - t0) * 1000
            observer.tool_call(ToolCallEvent(name, args, kwargs, result, None, ms), handle)
        return result

    def _replayed(self, name: str) -> Any:
        assert self._replay is not None
        if not self._replay or self._replay[0].name != name:
            recorded = f"a call to {self._replay[0].name!r}" if self._replay else "no more calls"
            why = f"the program called tool {name!r} where the turn recorded {recorded}"
            # kept: the program might catch the tool's error and end without one
            self._diverged_by = self._diverged_by or why
            raise _ReplayError(why)
        record = self._replay.pop(0)
        if record.error is not None:
            raise _ReplayError(record.error)
        return record.result

    def _child_caller(self, tool: AgentTool) -> Callable[..., Any]:
        child = cast(SubAgent, tool.agent)  # as_tool made it: declare.py types it by protocol
        parent_config = self.config

        def call_child(*args: Any, **kwargs: Any) -> Any:
            data: dict[str, Any] = dict(kwargs)
            names = [p.name for p in child.tool_signature().params or ()]
            if len(args) == 1 and isinstance(args[0], Mapping) and not names:
                data.update(args[0])
            elif args and len(names) >= len(args):
                data.update(zip(names, args, strict=False))
            elif args:
                data["args"] = list(args)
            config = child._config(parent_config)
            runner = _Runner(child, config, data)
            if self.loop_ref is not None:  # parent runs under arun: child joins that loop
                future = asyncio.run_coroutine_threadsafe(_drive_async(runner), self.loop_ref)
                step = future.result()
            else:
                step = child._run_sync(runner)
            if step.suspended is not None:
                calls = ", ".join(p.describe() for p in step.pending)
                raise SubAgentError(
                    f"sub-agent {tool.name!r} stopped at tool calls that wait for a decision "
                    f"({calls}); a sub-agent used as a tool cannot wait: give it a policy "
                    "(approve=...) that decides them"
                )
            if not step.ok:
                assert step.error is not None
                raise SubAgentError(f"sub-agent {tool.name!r} failed: {step.error.message}")
            return step.value

        call_child.__name__ = tool.name.replace("-", "_")
        return call_child

    def _restore(self, step: Step, source: object) -> None:
        # first: another agent's run is neither replayed nor continued under this one
        check_resumable(step.context, self.context, self.run_id if self._stored_id else None)
        # a run that ended (returned, failed, or used its last turn) is over: resume hands it
        # back as it ended; only a run cut short (or stopped by an LLM error) goes on
        ending = run_ending(step.context, step.turns)
        if ending is not None:
            if finished(step):
                self.ended = step
            else:  # a Step of the run so far (a sink's) whose last turn ended it
                ok, value, error = ending
                self.ended = Step(
                    ok,
                    value,
                    error,
                    step.turns,
                    step.messages,
                    step.usage,
                    step.context,
                    step.duration_ms,
                )
            return
        for turn in step.turns:
            ran = turn.error is None or turn.error.type == "validation_error"
            if turn.program is None or not ran:
                continue  # failed runs left the Session unchanged
            self._replay, self._diverged_by = list(turn.tool_calls), None
            try:
                # calls of approval tools were decided when the turn ran: its record answers
                result = self.session._run_gated(turn.program, self._replay_gate)
            finally:
                leftover, self._replay = self._replay, None
            if result.error is not None or leftover or self._diverged_by is not None:
                raise ValueError(self._diverged(turn.number, source, result.error, leftover))
        self.turns = list(step.turns)
        self.past = step.messages
        self.usage = step.usage
        self.suspended = step.suspended

    def _replay_gate(self, call: Any) -> Any:
        """Decides a gated call while an earlier turn is replayed: an approval tool is let
        through to its wrapper (which answers from the record); a deferred tool gets the
        answer the host gave it then."""
        if call.tool in self.deferred:
            return ("answer", self._replayed(call.tool))
        return True

    def _diverged(
        self, number: int, source: object, error: Any, leftover: list[ToolCallRecord]
    ) -> str:
        """Why replaying turn ``number`` of a stored run did not do what the turn recorded
        (the program failed, or made other or fewer tool calls), and which run and where."""
        run = f"run {shown_id(self.run_id)}" if self._stored_id else "the run"
        if source is None or isinstance(source, Step):
            where = "a Step"
        else:
            where = _cut(repr(source), 300)
        if self._diverged_by is not None:
            why = self._diverged_by
        elif error is not None:
            why = f"{error.type}: {error.message}"
        else:
            names = ", ".join(repr(c.name) for c in leftover[:5])
            more = f" and {len(leftover) - 5} more" if len(leftover) > 5 else ""
            why = f"the program made fewer tool calls than the turn recorded (not made: {names}"
            why += f"{more})"
        return (
            f"cannot resume {run} from {where}: replaying turn {number} diverged: {_cut(why, 1000)}"
        )

    # --- eager evaluation ------------------------------------------------------------

    def listen(self) -> Eager | None:
        """The ``on_text`` of this turn's LLM request: with ``eager=True`` and an LLM that
        streams, what runs the program's complete forms as they arrive."""
        if not self.agent.eager or not getattr(self.llm, "streams", False):
            return None
        only = self.read_tools
        if not only:  # nothing to call early: a pure form is evaluated again anyway
            return None
        self.eager = Eager(self.session, only, extract_program, self._speculating)
        return self.eager

    def _speculating(self) -> Callable[[], None]:
        """Enters a speculative run: its calls are not saved as in-flight, and under ``arun``
        its async tools are awaited on the run's loop. Returns what leaves it."""
        self.speculating = True
        loop, ref = self.loop_ref, self.session._loop_ref
        if loop is not None:
            ref.enter(loop)

        def leave() -> None:
            if loop is not None:
                ref.leave()
            self.speculating = False

        return leave

    def _drop_eager(self) -> None:
        eager, self.eager = self.eager, None
        if eager is not None:
            eager.close()

    # --- the loop --------------------------------------------------------------------

    def loop(self) -> Generator[tuple[str, Any], Any, Step]:
        try:
            return (yield from self._loop())
        finally:  # a run left mid-request: nothing of the reply goes on running
            self._drop_eager()

    def _loop(self) -> Generator[tuple[str, Any], Any, Step]:
        max_turns = self.context.max_turns
        if self.suspended is not None:  # a pending turn, resumed with the host's decisions
            turn = yield from self._resume_turn(self.suspended)
            self.suspended = None
            done = self._took(turn)
            if done is not None:
                return done
        while len(self.turns) < max_turns:
            messages, stats = self.context.messages_for(self.turns, self.strategy)
            self.messages.append(messages)
            self.usage = self.usage.with_stats(stats)
            t0 = time.perf_counter()
            self.observer.llm_started()
            try:
                reply, retries = yield ("llm", messages)
            except Exception as exc:
                self._drop_eager()
                # The request counts even though it failed: its messages are recorded above, so
                # usage.llm_calls stays equal to len(step.messages), also after a resume.
                self.usage = self.usage.add({}, attempts_of(exc) - 1)
                self.observer.llm_ended(self.calls(), messages, None, exc, attempts_of(exc) - 1)
                msg = f"LLM call failed: {describe_error(exc)}"  # with what caused it
                return self._finish(StepError("llm_error", msg))
            llm_ms = (time.perf_counter() - t0) * 1000
            self.usage = self.usage.add(reply.usage, retries)
            self.observer.llm_ended(self.calls(), messages, reply, None, retries)
            done = self._took((yield from self._turn(reply, llm_ms)))
            if done is not None:
                return done
        return self._finish(out_of_turns(self.context, self.turns))

    def _took(self, turn: Turn | SuspendedTurn) -> Step | None:
        """Records a turn; the Step when it ended the run or stopped it waiting for the host."""
        if isinstance(turn, SuspendedTurn):
            return self._suspend(turn)
        self.turns.append(turn)
        self.observer.turn(turn, lambda: self._step_now(None, None))
        ending = run_ending(self.context, self.turns)
        if ending is None:
            return None
        _ok, value, error = ending
        return self._finish(error, value)

    def _turn(
        self, reply: LLMReply, llm_ms: float
    ) -> Generator[tuple[str, Any], Any, Turn | SuspendedTurn]:
        number = len(self.turns) + 1
        previous_memory = self.turns[-1].memory if self.turns else ()
        program = extract_program(reply.content)
        base: dict[str, Any] = {
            "number": number,
            "response": reply.content,
            "usage": _records.counts(reply.usage),  # clamped: the Step must load back
        }

        def unrun(program: str | None, error: TurnError) -> Turn:
            """A turn whose program did not run: nothing printed, called or defined."""
            return Turn(
                program=program,
                result=None,
                prints=(),
                tool_calls=(),
                memory=previous_memory,
                success=False,
                error=error,
                llm_ms=llm_ms,
                **base,
            )

        if program is None:
            self._drop_eager()
            return unrun(None, TurnError("no_program", _no_program_message(reply.content)))
        found = check_with(program, self.check_tools, None, self.config.limits)
        if found.errors:  # nothing of it runs: no tool call happens, nothing is defined
            self._drop_eager()
            return unrun(program, _check_error(found.errors))
        eager, self.eager = self.eager, None
        tape, self.eager_ms = eager.finish(program) if eager is not None else (None, {})
        save_started = getattr(self.sink, "save_started", None)
        if save_started is not None:  # a crash while it runs leaves the program to finish
            from ptc.checkpoint.inflight import started_record

            if number == 1:  # the run itself is on file before its first turn is
                cast("CheckpointSink", self.sink).save(self._step_now(None, None), self.run_id)
            state = self.session._state_fingerprint()
            save_started(
                self.run_id,
                started_record(number, reply.content, program, base["usage"], llm_ms, state),
            )
            if tape is not None and self._save_call is not None:
                # the calls made early, saved as ended: a crash in the real run answers them
                for call in tape["calls"]:
                    ended = {k: call[k] for k in ("result", "error") if k in call}
                    record = {"turn": number, "id": call["id"], "tool": call["tool"]}
                    self._save_call(self.run_id, {**record, "how": call["how"], **ended})
        t0 = time.perf_counter()
        try:
            result = yield ("run", program) if tape is None else ("eager", (program, tape))
        except Exception as exc:  # the core should not raise; keep the loop alive if it does
            return unrun(program, TurnError(getattr(exc, "type", "internal_error"), str(exc)))
        if result.outcome == "pending":
            return self._suspended_turn(
                number, reply.content, program, base["usage"], llm_ms, result
            )
        return self._ran(program, result, base, previous_memory, llm_ms, t0)

    def _suspended_turn(
        self,
        number: int,
        response: str,
        program: str,
        usage: Mapping[str, int],
        llm_ms: float,
        result: ptc.Result,
    ) -> SuspendedTurn:
        return SuspendedTurn(
            number=number,
            response=response,
            program=program,
            continuation=result.continuation.to_json(),
            usage=usage,
            llm_ms=llm_ms,
        )

    def _resume_turn(
        self, st: SuspendedTurn
    ) -> Generator[tuple[str, Any], Any, Turn | SuspendedTurn]:
        """Finishes a pending turn with the host's decisions (the run is replayed: no tool is
        called twice); the turn is recorded as if it had run at once."""
        from ptc.approvals import Continuation

        base: dict[str, Any] = {"number": st.number, "response": st.response, "usage": st.usage}
        previous_memory = self.turns[-1].memory if self.turns else ()
        cont = Continuation.from_json(st.continuation)
        t0 = time.perf_counter()
        result = yield ("resume", (cont, dict(self.decisions)))
        if result.outcome == "pending":
            return self._suspended_turn(
                st.number, st.response, st.program, st.usage, st.llm_ms, result
            )
        return self._ran(st.program, result, base, previous_memory, st.llm_ms, t0)

    def _suspend(self, st: SuspendedTurn) -> Step:
        """The Step of a run that stopped at calls waiting for the host (saved like an end:
        ``resume`` continues it)."""
        step = dataclasses.replace(self._step_now(None, None), suspended=st)
        self.observer.finished(step)
        return step

    def _ran(
        self,
        program: str,
        result: ptc.Result,
        base: dict[str, Any],
        previous_memory: tuple[MemoryEntry, ...],
        llm_ms: float,
        t0: float,
    ) -> Turn:
        """The turn of a program that ran (to a value, a return, a fail or an error)."""
        run_ms = (time.perf_counter() - t0) * 1000
        lim, plim = self.opts["tool_args_limit"], self.opts["tool_args_printable_limit"]
        # arguments and results stay core values until a record is read (rendered in Rust)
        calls = tuple(
            ToolCallRecord(
                c.name,
                # a lazy field: the core value, converted when the record is read
                cast("tuple[Any, ...]", c.lazy_args),
                c.args_text(lim, plim),
                c.lazy_result if c.error is None else None,
                c.error,
                # a call made early (eager) took the time it took then
                self.eager_ms.get(c.id, c.duration_ms) if c.replayed else c.duration_ms,
                c.decision,
            )
            for c in result.tool_calls
        )
        error: TurnError | None = None
        if result.error is not None:
            e = result.error
            error = TurnError(
                getattr(e, "type", "error"),
                getattr(e, "message", str(e)),
                getattr(e, "hint", None),
                getattr(e, "line", None),
                getattr(e, "column", None),
            )
        elif result.returned or self.context.max_turns == 1:
            error = self._validate(result.value)
        ran = result.error is None
        return Turn(
            program=program,
            # converted only if read: a value that is not the answer may be large
            result=result.lazy_value if ran else None,
            result_text=_preview(result, self.agent.result_tokens) if ran else "",
            prints=tuple(result.prints),
            tool_calls=calls,
            memory=self._snapshot() if ran else previous_memory,
            success=error is None,
            defined=tuple(d.name for d in result.defined) if ran else (),
            returned=bool(result.returned),
            failed=bool(result.failed),
            error=error,
            llm_ms=llm_ms,
            run_ms=run_ms,
            **base,
        )

    def _validate(self, value: Any) -> TurnError | None:
        sig = self.agent._signature
        if sig is None:
            return None
        cls = self.agent._returns_class
        problem = check_value(value, sig.returns)
        if problem is None and cls is not None:  # the class's own checks (validators, ranges)
            problem = check_against(value, cls)
        if problem is None:
            return None
        shape = str(sig.returns) if cls is None else f"{cls.__name__} {sig.returns}"
        message = (
            f"Returned value does not match the signature {shape}: {problem}. "
            "Fix the value and return again."
        )
        return TurnError("validation_error", message)

    def _snapshot(self) -> tuple[MemoryEntry, ...]:
        lim, plim = self.opts["sample_limit"], self.opts["sample_printable_limit"]
        custom = (lim, plim) != (_core.SAMPLE_LIMIT, _core.SAMPLE_PRINTABLE_LIMIT)
        entries = []
        for d in self.session.definitions:
            typ, sample = d.type, d.sample
            if custom and d.kind == "value":
                desc = self.session.describe(d.name, lim, plim)
                typ, sample = desc.type, desc.sample
            params = tuple(d.params) if d.params is not None else None
            entries.append(MemoryEntry(d.name, d.kind, typ, sample, d.doc, params, d.return_type))
        return tuple(entries)

    def calls(self) -> int:
        """LLM requests of the run so far, a resumed run's earlier ones included."""
        return len(self.past) + len(self.messages)

    def _finish(self, error: StepError | None, value: Any = None) -> Step:
        step = self._step_now(error, value, ok=error is None)
        self.observer.finished(step)
        return step

    def _step_now(self, error: StepError | None, value: Any, *, ok: bool = False) -> Step:
        """The Step as it stands (``ok`` False and no error while the run goes on)."""
        return Step(
            ok=ok,
            value=value,
            error=error,
            turns=tuple(self.turns),
            messages=joined(self.past, self.messages),
            usage=self.usage,
            context=self.context,
            duration_ms=(time.perf_counter() - self.started) * 1000,
        )


def _check_error(errors: Sequence[LispError]) -> TurnError:
    """The turn's error when checking its program found errors: the first as a run would
    report it, every other one after it, so the model can fix them all at once."""
    first = errors[0]
    message = first.message
    for e in errors[1:]:
        where = f" at line {e.line}, column {e.column}" if e.line is not None else ""
        message += f"\nAlso{where}: {e.message}" + (f" (hint: {e.hint})" if e.hint else "")
    return TurnError(first.type, message, first.hint, first.line, first.column)


def _tokens_arg(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int (a token budget) or None, got {value!r}")
    return value


def _preview(result: ptc.Result, max_tokens: int | None = None) -> str:
    """The result as the next message shows it: within ``max_tokens`` exact tokens when set
    (the limits' print when it fits, else the widest view that does), else cut at
    ``RESULT_MAX_CHARS`` characters. The markers name no program: ``*1`` holds the result's
    ≈1 KB text, not the value (LANGUAGE §8.5), so the rest is reached by ``def``."""
    if max_tokens is not None:
        return result.preview(RESULT_LIMIT, RESULT_PRINTABLE_LIMIT, max_tokens=max_tokens)
    text = result.preview(RESULT_LIMIT, RESULT_PRINTABLE_LIMIT)
    if len(text) > RESULT_MAX_CHARS:
        text = text[:RESULT_MAX_CHARS] + "... (truncated)"
    return text


def _held(runner: _Runner) -> contextlib.AbstractContextManager[object]:
    """A new run holds its id in a checkpoint that can lock runs, for as long as it goes on:
    a worker that takes it for abandoned and resumes it meanwhile gets ``RunLockedError``
    instead of running its turns (and tools) a second time."""
    lock = getattr(runner.sink, "lock", None)
    if runner.resumed or not callable(lock):
        return contextlib.nullcontext()
    return cast("contextlib.AbstractContextManager[object]", lock(runner.run_id))


def _drive_sync_turns(runner: _Runner) -> Generator[Turn, None, Step]:
    """Drives the loop, yielding each Turn once it is complete; returns the Step."""
    with _held(runner):
        return (yield from _drive_sync_loop(runner))


def _drive_sync_loop(runner: _Runner) -> Generator[Turn, None, Step]:
    gen = runner.loop()
    try:
        request = next(gen)
    except StopIteration as stop:  # no turn left to take (a resumed run at its max_turns)
        return cast(Step, stop.value)
    seen = len(runner.turns)
    while True:
        kind, payload = request
        try:
            if kind == "llm":
                response: Any = call_llm(runner.llm, payload, runner.config.retry, runner.listen())
            elif kind == "resume":
                cont, decisions = payload
                response = runner.session.resume(cont, decisions, lazy=runner.lazy)
            elif kind == "eager":
                program, tape = payload
                response = runner.session._run_taped(program, tape, runner.lazy)
            else:
                response = runner.session.run(payload, lazy=runner.lazy)
        except Exception as exc:
            try:
                request = gen.throw(exc)
            except StopIteration as stop:
                yield from runner.turns[seen:]
                return cast(Step, stop.value)
            continue
        try:
            request = gen.send(response)
        except StopIteration as stop:
            yield from runner.turns[seen:]
            return cast(Step, stop.value)
        yield from runner.turns[seen:]
        seen = len(runner.turns)


def _drive_sync(runner: _Runner) -> Step:
    gen = _drive_sync_turns(runner)
    while True:
        try:
            next(gen)
        except StopIteration as stop:
            return cast(Step, stop.value)


async def _drive_async_turns(runner: _Runner) -> AsyncGenerator[Turn | Step, None]:
    """Async twin of :func:`_drive_sync_turns`; the Step comes last (async generators cannot
    return a value)."""
    held = _held(runner)
    # taking and freeing the lock talk to the store: off the event loop
    await asyncio.to_thread(held.__enter__)
    try:
        async for item in _drive_async_loop(runner):
            yield item
    finally:
        await asyncio.to_thread(held.__exit__, None, None, None)


async def _drive_async_loop(runner: _Runner) -> AsyncGenerator[Turn | Step, None]:
    runner.loop_ref = asyncio.get_running_loop()
    gen = runner.loop()
    try:
        request = next(gen)
    except StopIteration as stop:  # no turn left to take (a resumed run at its max_turns)
        yield stop.value
        return
    seen = len(runner.turns)
    while True:
        kind, payload = request
        try:
            response: Any
            if kind == "llm":
                response = await acall_llm(
                    runner.llm, payload, runner.config.retry, runner.listen()
                )
            elif kind == "resume":
                cont, decisions = payload
                response = await asyncio.to_thread(
                    runner.session.resume, cont, decisions, lazy=runner.lazy
                )
            elif kind == "eager":
                program, tape = payload
                response = await runner.session._arun(program, None, None, runner.lazy, tape)
            else:
                # off the event loop; cancelling the task cancels the run (Session.arun)
                response = await runner.session.arun(payload, lazy=runner.lazy)
        except Exception as exc:
            try:
                request = gen.throw(exc)
            except StopIteration as stop:
                for turn in runner.turns[seen:]:
                    yield turn
                yield stop.value
                return
            continue
        try:
            request = gen.send(response)
        except StopIteration as stop:
            for turn in runner.turns[seen:]:
                yield turn
            yield stop.value
            return
        for turn in runner.turns[seen:]:
            yield turn
        seen = len(runner.turns)


async def _drive_async(runner: _Runner) -> Step:
    step = None
    async for item in _drive_async_turns(runner):
        step = item
    assert isinstance(step, Step)
    return step


class AgentRun:
    """The turns of a run as they complete (``agent.iter()``); ``step`` once it is over."""

    def __init__(self, gen: Generator[Turn, None, Step]) -> None:
        self._gen = gen
        self.step: Step | None = None

    def __iter__(self) -> AgentRun:
        return self

    def __next__(self) -> Turn:
        try:
            return next(self._gen)
        except StopIteration as stop:
            self.step = stop.value
            raise StopIteration from None

    def close(self) -> None:
        """Stops a run left before its end: its run lock is freed now, not when the object
        is collected (``with agent.iter() as turns:`` closes it too)."""
        self._gen.close()

    def __enter__(self) -> AgentRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncAgentRun:
    """The turns of a run as they complete (``agent.aiter()``); ``step`` once it is over."""

    def __init__(self, gen: AsyncGenerator[Turn | Step, None]) -> None:
        self._gen = gen
        self.step: Step | None = None

    def __aiter__(self) -> AsyncAgentRun:
        return self

    async def __anext__(self) -> Turn:
        item = await self._gen.__anext__()
        if isinstance(item, Step):
            self.step = item
            raise StopAsyncIteration
        return item

    async def aclose(self) -> None:
        """Stops a run left before its end: its run lock is freed now."""
        await self._gen.aclose()

    async def __aenter__(self) -> AsyncAgentRun:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _resume_source(
    checkpoint: Step | CheckpointSource | str | None,
    run_id: str | None,
    store: Store | AsyncPostgresStore | str | None,
) -> tuple[Step | CheckpointSource, str | None, Sink | None]:
    """What to resume from, the run id, and where to keep saving when the agent has no
    checkpoint of its own (the store's)."""
    if store is None:
        if checkpoint is None or isinstance(checkpoint, str):
            raise TypeError(
                "resume needs a Step or a checkpoint (or a run id with store=...), "
                f"got {type(checkpoint).__name__}"
            )
        sink = checkpoint if isinstance(checkpoint, CheckpointSink) else None
        return checkpoint, run_id, sink
    if isinstance(checkpoint, str):
        if run_id is not None and run_id != checkpoint:
            raise ValueError(f"two run ids given: {shown_id(checkpoint)} and {shown_id(run_id)}")
        run_id = checkpoint
    elif checkpoint is not None:
        raise TypeError("with store=..., pass the run id (or nothing for the last run)")
    if isinstance(store, str):
        from ptc.history.store import open_store

        source = open_store(store).checkpoint()
    else:
        source = store.checkpoint()
    return source, run_id, source


@contextlib.contextmanager
def _run_lock(source: Step | CheckpointSource, run_id: str | None) -> Iterator[str | None]:
    """Holds ``source``'s lock on the run (when it has one) and yields the run id."""
    lock = getattr(source, "lock", None)
    if isinstance(source, Step) or not callable(lock):
        yield run_id
        return
    if run_id is None:
        run_id = source.load(None)[1]  # the last run started
    with lock(run_id):
        yield run_id


def _resume_point(
    checkpoint: Step | CheckpointSource, run_id: str | None
) -> tuple[Step, str | None]:
    if isinstance(checkpoint, Step):
        return checkpoint, run_id
    if isinstance(checkpoint, CheckpointSource):
        return checkpoint.load(run_id)
    raise TypeError(
        f"resume needs a Step or a checkpoint with load(), got {type(checkpoint).__name__}"
    )
