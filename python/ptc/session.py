"""Running PTC-Lisp programs: `run`, `eval` and `Session`."""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import functools
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _core
from ._core import CancelToken
from .errors import ProgramFailed
from .limits import LimitsArg, limits_dict
from .tools.adapter import EventLoopRef, ToolAdapter, normalize_tools
from .tools.declare import ToolsArg, _tool_catalogue, tool_caps, tool_gates, tool_idempotent

if TYPE_CHECKING:
    from .approvals import Continuation, Decision, Policy
    from .checking import Check
    from .planning import Plan

#: ``Session(clock=...)``: a fixed instant (an aware or UTC ``datetime``, or milliseconds since
#: the Unix epoch) or a callable returning one.
ClockArg = Any

# No tool call starts once the interpreter exits; calls abandoned at their runs' deadlines do not
# delay the exit (their threads are parked for good if they return while Python shuts down: see
# rust/python/hang.rs `call_hanging_at_exit`).
atexit.register(_core._at_exit)


@dataclass(frozen=True)
class Description:
    """A value summarized in place: its type label and a truncated sample."""

    type: str
    sample: str | None
    truncated: bool


# `Result`, `ToolCall`, `Definition` and `LazyValue` are the core's classes (rust/python/
# result.rs): values stay core values until read, and their text is rendered in Rust.
Result = _core.Result
ToolCall = _core.ToolCall
Definition = _core.Definition
LazyValue = _core.LazyValue


class Memory(Mapping[str, Any]):
    """The user namespace as a read-only mapping; values are converted when read."""

    def __init__(self, core: _core.CoreSession) -> None:
        self._core = core

    def __getitem__(self, name: str) -> Any:
        return self._core._get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._core._has(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._core._names())

    def __len__(self) -> int:
        return len(self._core._names())

    def __repr__(self) -> str:
        return f"Memory({self._core._names()!r})"


class Session(_core.CoreSession):
    """Runs programs against data and tools, keeping the LLM's definitions between runs.

    Data is converted to core values once, here; every run reads it in place. A run that ends
    in an error leaves the definitions exactly as they were (all-or-nothing).
    """

    # The Rust base class `CoreSession` (rust/python/core_session.rs) holds the state and runs
    # programs (`run` and `cancel` are its methods); its `__init__` makes the core from what
    # this class's makes of the arguments.

    def __init__(
        self,
        data: Mapping[str, Any] | None = None,
        tools: ToolsArg = None,
        limits: LimitsArg = None,
        *,
        approve: Policy | None = None,
        clock: ClockArg = None,
    ) -> None:
        if data is not None and not isinstance(data, Mapping):
            raise TypeError(f"data must be a mapping of name -> value, got {type(data).__name__}")
        self._setup(tools, approve)
        super().__init__(
            dict(data) if data is not None else None,
            self._adapters(),
            limits_dict(limits),
            **self._core_options(tools, clock),
        )

    def _setup(self, tools: ToolsArg, approve: Policy | None) -> None:
        if approve is not None and not callable(approve):
            raise TypeError(
                f"approve must be a callable PendingCall -> decision, got {type(approve).__name__}"
            )
        self._tools: dict[str, Callable[..., Any]] = normalize_tools(tools)
        self._tools_arg = tools
        #: the tools ``(tools "query")`` and ``(doc tool/name)`` describe: these, unless an
        #: agent puts the tools it declared here before the first run (its Session calls
        #: wrappers, which lose explicit signatures and descriptions)
        self._described: list[ToolsArg] = [tools]
        self._loop_ref = EventLoopRef()
        self._gates = tool_gates(tools)
        self._deferred = frozenset(n for n, g in self._gates.items() if g == "deferred")
        self._approve = approve

    def _core_options(self, tools: ToolsArg, clock: ClockArg) -> dict[str, Any]:
        policy = None
        if self._approve is not None:  # imported only when used: a Session starts fast
            from .approvals import gate_of

            policy = gate_of(self._approve, self._deferred, self._loop_ref.resolve)
        return {
            "tool_caps": tool_caps(tools) or None,
            "tool_gates": self._gates or None,
            "policy": policy,
            "clock": _clock_fn(clock),
            "idempotent": tool_idempotent(tools) or None,
            # described by the core's first run that reads the catalogue, not here: a tool's
            # signature takes tens of microseconds of Python to work out
            "catalogue": functools.partial(_tool_catalogue, self._described) if tools else None,
        }

    def _adapters(self) -> dict[str, Callable[[list[Any], dict[str, Any] | None], Any]]:
        # bound methods: the core calls them by vectorcall (an instance's __call__ costs a
        # third more per tool call)
        return {
            name: ToolAdapter(name, fn, self._loop_ref).__call__ for name, fn in self._tools.items()
        }

    @classmethod
    def from_json(
        cls,
        source: str | bytes | os.PathLike[str],
        tools: ToolsArg = None,
        limits: LimitsArg = None,
        *,
        approve: Policy | None = None,
        clock: ClockArg = None,
    ) -> Session:
        """A Session whose data is a JSON object, parsed straight into the core without
        building Python objects first (object keys become ``data/`` names; keys that are valid
        keyword text become keywords, as with Python data).

        ``source`` is JSON text (``str`` or UTF-8 ``bytes``) or a file given as a path object
        (``pathlib.Path``). A ``str`` is always JSON text, never a file name: a host that passes
        text it received (a request body, an LLM's reply) must not let that text name a file
        to read. ``Session.from_file(path)`` reads a file named by a ``str``."""
        if isinstance(source, os.PathLike):
            return cls.from_file(source, tools=tools, limits=limits, approve=approve, clock=clock)
        if isinstance(source, bytes):
            text = source.decode("utf-8")
        elif isinstance(source, str):
            text = source
        else:
            raise TypeError(
                "JSON source must be JSON text (str or bytes) or a pathlib.Path, "
                f"got {type(source).__name__}"
            )
        try:
            return cls._from_text(text, tools, limits, approve, clock)
        except ValueError as e:
            head = text.lstrip("\ufeff \t\r\n")[:1]
            if head in ("{", "[") or len(text) > 4096:
                raise
            # no file-system lookup here: only a hint, whatever the text names
            raise ValueError(
                f"{e} (a str is JSON text; to read a file, pass a pathlib.Path or use "
                "Session.from_file)"
            ) from None

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        tools: ToolsArg = None,
        limits: LimitsArg = None,
        *,
        approve: Policy | None = None,
        clock: ClockArg = None,
    ) -> Session:
        """A Session whose data is the JSON object in the file at ``path`` (UTF-8), parsed
        straight into the core as :meth:`from_json` does."""
        from pathlib import Path

        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path must be a str or a path object, got {type(path).__name__}")
        text = Path(path).read_text(encoding="utf-8")
        return cls._from_text(text, tools, limits, approve, clock)

    @classmethod
    def _from_text(
        cls,
        text: str,
        tools: ToolsArg,
        limits: LimitsArg,
        approve: Policy | None = None,
        clock: ClockArg = None,
    ) -> Session:
        self = cls.__new__(cls)
        self._setup(tools, approve)
        _core.CoreSession.__init__(
            self,
            None,
            self._adapters(),
            limits_dict(limits),
            text,
            **self._core_options(tools, clock),
        )
        return self

    def check(self, source: str, *, limits: LimitsArg = None) -> Check:
        """Checks a program against this session's tools and data without running it (see
        :func:`ptc.check`): nothing is evaluated, no tool is called, nothing is defined. Its
        ``plan`` follows calls into the definitions of earlier turns and ``*1``..``*3``."""
        from .checking import all_tools, check_with
        from .planning import UNKNOWN

        if not isinstance(source, str):
            raise TypeError(f"check takes the program as a str, got {type(source).__name__}")
        declared = self.__dict__.get("_declared")
        if declared is None:  # read once per Session, on its first check
            declared = self.__dict__["_declared"] = all_tools(self._tools_arg)
        records = self._record_keys()
        return check_with(
            source,
            declared,
            self.data_keys,
            limits,
            records,
            sites=self._tool_sites(source, UNKNOWN, limits_dict(limits), bool(records)),
        )

    def plan(self, source: str, *, limits: LimitsArg = None) -> Plan:
        """Which tools ``source`` can call, from where, with what and how often, without running
        it (see :class:`ptc.Plan`): against this session's tools, data, definitions of earlier
        turns and ``*1``..``*3``. Raises the program's first error when it cannot be read."""
        found = self.check(source, limits=limits)
        if found.plan is None:
            raise found.errors[0]
        return found.plan

    # `run` is `CoreSession.run` (rust/python/core_session.rs): a `str` program without
    # `limits` goes straight to the core, anything else comes here to be checked first

    def _run_checked(
        self,
        source: object,
        limits: LimitsArg,
        cancel: CancelToken | None,
        lazy: bool,
        check: bool = False,
        approved: Plan | None = None,
    ) -> Result:
        if not isinstance(source, str):
            raise _not_str(source)
        if check:
            found = self.check(source, limits=limits)
            if found.errors:
                e = found.errors[0]
                return _core._refused(e.type, e.message, e.hint, e.line, e.column)
        try:
            return self._run(source, limits_dict(limits), cancel, lazy, self._gate(approved), None)
        except UnicodeEncodeError as e:
            raise _not_text(source, e) from None

    def _run_gated(self, source: str, gate: Callable[[Any], Any], lazy: bool = False) -> Result:
        """A run whose gated calls ``gate`` decides (a replay of a turn whose decisions were
        taken when it first ran)."""
        return self._run(source, None, None, lazy, gate, None)

    def _speculate(
        self, source: str, tape: dict[str, Any] | None, only: list[str], cancel: CancelToken
    ) -> Result:
        """A speculative run (:mod:`ptc.eager`): commits nothing, calls only the tools in
        ``only`` (the others' calls wait), is answered from ``tape`` where it holds a call, and
        keeps its own record (``Result._suspended()``)."""
        return self._run(source, None, cancel, True, None, tape, only)

    def _run_taped(self, source: str, tape: dict[str, Any] | None, lazy: bool = False) -> Result:
        """The real run of a program whose first forms ran speculatively: answered from their
        record (``tape``) wherever it holds a call."""
        return self._run(source, None, None, lazy, None, tape)

    def _gate(self, approved: Plan | None) -> Any:
        """The gate of one run: the approved plan's, then the Session's policy (None: the
        Session's own)."""
        if approved is None:
            return None
        from .approvals import gate_of
        from .planning import Plan

        if not isinstance(approved, Plan):
            raise TypeError(
                f"approved= takes a ptc.Plan (from check or plan), got {type(approved).__name__}"
            )
        return gate_of(self._approve, self._deferred, self._loop_ref.resolve, approved)

    def resume(
        self,
        run: Result | Continuation,
        decisions: Mapping[str, Decision] | None = None,
        *,
        cancel: CancelToken | None = None,
        lazy: bool = False,
    ) -> Result:
        """Continues a run that stopped at calls waiting for the host (``Result.outcome ==
        "pending"``): ``run`` is its Result or its :class:`ptc.Continuation` (from another
        process too). ``decisions`` maps a pending call's id to ``True`` (call the tool now),
        ``ptc.Reject(reason)`` (the program gets a ``rejected`` error there) or
        ``ptc.Answer(value)`` (the call returns ``value``: a deferred tool's answer); calls
        without a decision stay pending.

        The program runs again from the start, and every call the record holds is answered
        from it: no tool is called twice, and printed output, definitions and the value are
        those of a run that never stopped. The result may stop again (more calls to decide).
        Raises :class:`ptc.ContinuationError` when this Session's state (data, definitions,
        ``*1``..``*3``) is not the one the run stopped in, or the record claims a call of an
        approval tool that no decision allowed; :class:`ptc.ReplayDiverged` when the run did
        not retrace its record. An approved plan (``run(approved=...)``) covers the run it was
        given to, not its resumes."""
        from .approvals import Continuation, ContinuationError

        cont = run.continuation if isinstance(run, Result) else run
        if not isinstance(cont, Continuation):
            if isinstance(run, Result):
                raise ValueError(
                    f"this run did not stop at a pending call (its outcome is {run.outcome!r}): "
                    "there is nothing to resume"
                )
            raise TypeError(f"resume takes a Result or a Continuation, got {type(run).__name__}")
        if decisions is not None and not isinstance(decisions, Mapping):
            raise TypeError("decisions is a mapping of pending call id -> decision")
        if cont.state != self._state_fingerprint():
            raise ContinuationError(
                "this Session's data, definitions or *1..*3 are not those the run stopped in; "
                "resume it in a Session with the same data and earlier turns"
            )
        for c in cont.calls:
            gate = self._gates.get(c["tool"])
            # decisions come from the host at each resume, never from the record; a call of
            # a tool that needs one is recorded as decided; a deferred tool is never called
            forged = (
                "approved" in c
                or "decision" in c
                or (gate is not None and c.get("how") == "called")
                or (gate == "deferred" and "interrupted" in c)
            )
            if forged:
                raise ContinuationError(
                    f"the record holds a call {c['id']!r} of tool/{c['tool']} that claims a "
                    "decision the host did not give at this resume: it was edited"
                )
            if c["tool"] not in self._tools:
                raise ContinuationError(
                    f"the record holds a call of tool/{c['tool']}, which this Session does not have"
                )
        tape = cont.tape(dict(decisions or {}), self._deferred)
        # an approved plan covers one run (its bounds count that run's calls): a resumed run's
        # calls are decided by the host, or by the Session's policy
        result = self._run(cont.program, dict(cont.limits), cancel, lazy, None, tape)
        error = result.error
        if error is not None and error.type == "replay_diverged":
            raise error
        return result

    async def arun(
        self,
        source: str,
        *,
        limits: LimitsArg = None,
        cancel: CancelToken | None = None,
        lazy: bool = False,
    ) -> Result:
        """`run` without blocking the event loop: the run goes to a worker thread. Cancelling
        the awaiting task cancels this run (only this one), and the Session is left unchanged."""
        return await self._arun(source, limits, cancel, lazy, None)

    async def _arun(
        self,
        source: str,
        limits: LimitsArg,
        cancel: CancelToken | None,
        lazy: bool,
        tape: dict[str, Any] | None,
    ) -> Result:
        """`arun`, answered from ``tape`` where it holds a call (see `_run_taped`)."""
        if not isinstance(source, str):
            raise _not_str(source)
        import asyncio

        token = cancel if cancel is not None else CancelToken()
        # `async def` tools called during the run are awaited on this loop
        self._loop_ref.enter(asyncio.get_running_loop())
        # the thread's future is awaited here, not through a task of its own: a task that
        # raises KeyboardInterrupt or SystemExit (from a tool) re-raises it out of the event
        # loop, past this coroutine and every other task on the loop
        run = functools.partial(self._run, source, limits_dict(limits), token, lazy, None, tape)
        context = contextvars.copy_context()
        lineage = _core._tool_lineage()
        if lineage is not None:
            # called from a tool's own thread (a sync tool running a loop): the run on the
            # executor's thread is nested in the tool's run through the context
            context.run(_core._LINEAGE.set, lineage)
        loop = asyncio.get_running_loop()
        if context.get(_core._LINEAGE) is None:
            task = loop.run_in_executor(None, functools.partial(context.run, run))
        else:
            # a run nested in a tool's run: a thread of its own, not one of the loop's pool
            # (each level of a nest waits in its thread for the next: 16 levels would take
            # the default pool's few threads and wait for one another until the deadline)
            task = _on_own_thread(loop, functools.partial(context.run, run))
        try:
            return await asyncio.shield(task)
        except UnicodeEncodeError as e:  # the program text could not be read
            raise _not_text(source, e) from None
        except asyncio.CancelledError:
            # the thread cannot be killed: stop the run and wait for its thread (it ends within
            # milliseconds once cancelled; runs take turns, so the tool calls in flight are
            # this run's). A run commits only when it succeeds, so a run that succeeded before
            # the cancel reached it has committed: it returns, and the cancellation is dropped
            # (a run either commits and returns, or raises and changes nothing).
            token.cancel()
            self._loop_ref.cancel_pending()
            while not task.done():
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait({task})
            if task.cancelled() or task.exception() is not None or not task.result().ok:
                raise
            current = asyncio.current_task()
            if current is not None:
                while current.cancelling():
                    current.uncancel()
            return task.result()
        finally:
            self._loop_ref.leave()

    @property
    def definitions(self) -> list[Definition]:
        """User definitions in first-definition order (latest value wins)."""
        return self._definitions()

    @property
    def memory(self) -> Memory:
        return Memory(self)

    @property
    def tools(self) -> dict[str, Callable[..., Any]]:
        return dict(self._tools)

    @property
    def data_keys(self) -> list[str]:
        return self._data_keys()

    def describe(
        self,
        name: str,
        limit: int | None = _core.SAMPLE_LIMIT,
        printable_limit: int | None = _core.SAMPLE_PRINTABLE_LIMIT,
    ) -> Description:
        """Type label and sample of a user definition, rendered on the value in place."""
        return Description(*self._describe(name, limit, printable_limit))

    def describe_data(
        self,
        key: str,
        limit: int | None = _core.SAMPLE_LIMIT,
        printable_limit: int | None = _core.SAMPLE_PRINTABLE_LIMIT,
    ) -> Description:
        """Type label and sample of an input value, rendered on the value in place."""
        return Description(*self._describe_data(key, limit, printable_limit))


def _clock_fn(clock: ClockArg) -> Callable[[], int] | None:
    """``Session(clock=...)`` as a callable returning milliseconds since the epoch."""
    if clock is None:
        return None
    if callable(clock):
        return lambda: _millis(clock())
    ms = _millis(clock)
    return lambda: ms


def _millis(t: Any) -> int:
    import datetime

    if type(t) is int:
        return t
    if isinstance(t, datetime.datetime):
        if t.tzinfo is None:
            t = t.replace(tzinfo=datetime.UTC)
        return int(t.timestamp() * 1000)
    raise TypeError(
        f"a clock gives a datetime or milliseconds since the epoch (int), got {type(t).__name__}"
    )


def _on_own_thread(loop: Any, fn: Callable[[], Result]) -> Any:
    """``fn()`` on a new daemon thread; its result (or exception) on a future of ``loop``."""
    import asyncio
    import threading

    future: asyncio.Future[Result] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            value: Any = fn()
            ok = True
        except BaseException as e:  # handed to the awaiting coroutine, as an executor would
            value, ok = e, False
        with contextlib.suppress(RuntimeError):  # the loop was closed meanwhile
            loop.call_soon_threadsafe(settle, ok, value)

    threading.Thread(target=work, name="ptc-nested-arun", daemon=True).start()
    return future


def _not_str(source: object) -> TypeError:
    return TypeError(f"source must be a str, got {type(source).__name__}")


def _not_text(source: str, e: UnicodeEncodeError) -> ValueError:
    """A program with a lone surrogate (text decoded with ``surrogateescape``, or a broken
    escape) cannot be read: say where."""
    before = source[: e.start]
    line = before.count("\n") + 1
    column = e.start - (before.rfind("\n") + 1) + 1
    return ValueError(
        f"the program is not valid Unicode text: {source[e.start]!r} (a lone surrogate) at "
        f"line {line}, column {column}; decode the program's bytes as UTF-8 without "
        "'surrogateescape', or remove the character"
    )


def run(
    source: str,
    data: Mapping[str, Any] | None = None,
    tools: ToolsArg = None,
    limits: LimitsArg = None,
) -> Result:
    """Runs one program with fresh state. Never raises for program errors."""
    if tools is None and limits is None and (data is None or type(data) is dict):
        # no tools to adapt, no limits to check: no Python `Session` needed
        if not isinstance(source, str):
            raise _not_str(source)
        try:
            return _core.run_once(source, data)
        except UnicodeEncodeError as e:
            raise _not_text(source, e) from None
    return Session(data=data, tools=tools, limits=limits).run(source)


def eval(
    source: str,
    data: Mapping[str, Any] | None = None,
    tools: ToolsArg = None,
    limits: LimitsArg = None,
) -> Any:
    """Runs one program and returns its value; raises `LispError` subclasses on errors and
    `ProgramFailed` on ``(fail reason)``."""
    r = run(source, data=data, tools=tools, limits=limits)
    if r.error is not None:
        raise r.error
    if r.failed:
        raise ProgramFailed(r.value)
    return r.value
