"""Adapting Python callables to PTC-Lisp tool calls (LANGUAGE.md §8.2)."""

from __future__ import annotations

import difflib
import inspect
import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ptc import _core
from ptc.errors import PtcError

if TYPE_CHECKING:
    from ptc.tools.declare import ToolsArg

if TYPE_CHECKING:
    import asyncio
    import concurrent.futures


_PLAIN = (str, int, float, bool, type(None))  # results returned as they are
_EXACT_PLAIN = frozenset(_PLAIN)  # (a type lookup: far cheaper than isinstance/isawaitable)
_AS_THEY_ARE = frozenset((list, dict))


class EventLoopRef:
    """The event loop of the ``arun()`` in progress, shared by a Session's tool adapters: an
    ``async def`` tool called during it is awaited on that loop (the run's own thread, or a
    ``pmap`` branch's, waits), so tools share the caller's clients and run concurrently."""

    __slots__ = ("_lock", "active", "loop", "pending")

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.pending: set[concurrent.futures.Future[Any]] = set()
        self.active = 0  # `arun()` calls in progress (their runs take turns on the Session)
        self._lock = threading.Lock()

    def enter(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._lock:
            if self.active == 0:
                self.loop = loop
            self.active += 1

    def leave(self) -> None:
        """The end of an ``arun()``; the last one leaves no loop and cancels the tool
        coroutines its runs left behind (a run past its deadline)."""
        with self._lock:
            self.active -= 1
            if self.active:
                return
            self.loop = None
        self.cancel_pending()

    def resolve(self, awaitable: Awaitable[Any]) -> Any:
        """The awaitable's result, awaited on the run's loop, or on a loop of its own."""
        import asyncio

        from ptc._aio import run_blocking

        # the coroutine, and an `arun()` it awaits, run on other threads than this call: the
        # runs they start are nested in this one through the context, not this thread
        awaitable = _in_lineage(awaitable, _core._tool_lineage())
        loop = self.loop
        if loop is not None and loop.is_running():
            future = asyncio.run_coroutine_threadsafe(_carried(awaitable), loop)
            with self._lock:
                self.pending.add(future)
            try:
                out = future.result()
            finally:
                with self._lock:
                    self.pending.discard(future)
            if isinstance(out, _HostExit):
                raise out.exc  # in the run's thread, so it propagates from `arun()`
            return out
        # no run loop: on a loop of its own (a fresh thread's when `run()` was called from a
        # coroutine, whose loop is busy waiting for the run), cancelled when the run stops
        return run_blocking(_within_run(awaitable, _run_clock()))

    def cancel_pending(self) -> None:
        """Cancels the tool coroutines still running for a run that ended (cancelled, or
        past its deadline)."""
        with self._lock:
            pending, self.pending = self.pending, set()
        for f in pending:
            f.cancel()


#: How often an ``async def`` tool on a loop of its own looks whether its run has stopped.
_RUN_POLL_S = 0.01


def _run_clock() -> Callable[[], float | None]:
    """Seconds left to the run whose tool this thread is calling (0 once it stopped), read
    from any thread; ``None``: not called by a run (a tool adapter called directly)."""
    import time

    from ptc import _core

    left = _core._tool_time_left()
    if left is None:
        return lambda: None
    deadline = time.monotonic() + left

    def clock() -> float | None:
        now_left = _core._tool_time_left()  # on the tool's own thread: the run's stop too
        if now_left is None:  # another thread (run_blocking's): the deadline only
            return max(0.0, deadline - time.monotonic())
        return now_left

    return clock


async def _in_lineage(awaitable: Awaitable[Any], lineage: Any) -> Any:
    """Awaits ``awaitable`` with the calling tool's lineage in the context (a task's own copy),
    so a run it starts is nested in the tool's run instead of waiting for it to end."""
    if lineage is None:
        return await awaitable
    token = _core._LINEAGE.set(lineage)
    try:
        return await awaitable
    finally:
        _core._LINEAGE.reset(token)


class RunEnded(PtcError, TimeoutError):
    """An ``async def`` tool cancelled because its run stopped (deadline, cancel) first."""


async def _within_run(awaitable: Awaitable[Any], clock: Callable[[], float | None]) -> Any:
    """Awaits ``awaitable``, cancelling it once its run has stopped: the run no longer waits
    for it, so it must not go on in the background."""
    import asyncio

    task = asyncio.ensure_future(awaitable)
    while True:
        left = clock()
        if left is None:
            return await task
        if left <= 0:
            task.cancel()
            await asyncio.wait({task})
            raise RunEnded("the run stopped before this async tool finished; it was cancelled")
        done, _ = await asyncio.wait({task}, timeout=min(left, _RUN_POLL_S))
        if done:
            return task.result()


class _HostExit:
    """A KeyboardInterrupt or SystemExit raised by an ``async def`` tool, carried back to the
    run's thread as a value: raised from a task, asyncio would re-raise it out of the event loop
    (ending every task on it) instead of from the ``arun()`` that called the tool."""

    __slots__ = ("exc",)

    def __init__(self, exc: KeyboardInterrupt | SystemExit) -> None:
        self.exc = exc


async def _carried(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except (KeyboardInterrupt, SystemExit) as exc:
        return _HostExit(exc)


class ToolAdapter:
    """Calls a Python function the way a PTC-Lisp call asks for.

    The core calls ``adapter(positional, named)``: ``named`` is a dict when the Lisp call had a
    single map or keyword/value pairs (``(tool/f {:city "Oslo"})``), and ``positional`` is then
    empty (the arguments are converted once, in the form used); else ``named`` is ``None``.
    Named arguments become keyword arguments when the function takes them, otherwise the
    function receives the dict as its one argument.
    """

    __slots__ = (
        "_direct",
        "_kw_names",
        "_params",
        "_positional_max",
        "_required",
        "_single_positional",
        "_types",
        "_var_kw",
        "_var_positional",
        "fn",
        "loop_ref",
        "name",
    )

    def __init__(
        self, name: str, fn: Callable[..., Any], loop_ref: EventLoopRef | None = None
    ) -> None:
        if not callable(fn):
            raise TypeError(f"tool {name!r} is not callable: {fn!r}")
        self.name = name
        self.fn = fn
        self.loop_ref = loop_ref if loop_ref is not None else EventLoopRef()
        from ptc.tools.rich_types import ArgumentTypes  # loaded with the first tool, not with ptc

        types = ArgumentTypes(fn)
        self._types = types if types.needed else None
        self._var_kw = False
        self._kw_names: frozenset[str] = frozenset()
        self._single_positional = False
        # what the tool takes, when its signature can be read (None: unknown, not checked)
        self._params: list[str] | None = None
        self._required: list[str] = []
        self._positional_max = 0
        self._var_positional = False
        # argument counts a positional call passes straight to `fn` (nothing to check or
        # convert: the common case, kept off the general path's frames)
        self._direct: tuple[int, int] | None = None
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return
        params = list(sig.parameters.values())
        kinds = inspect.Parameter
        self._var_kw = any(p.kind is kinds.VAR_KEYWORD for p in params)
        self._var_positional = any(p.kind is kinds.VAR_POSITIONAL for p in params)
        named_kinds = (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
        self._params = [p.name for p in params if p.kind in named_kinds]
        self._required = [
            p.name for p in params if p.kind in named_kinds and p.default is inspect.Parameter.empty
        ]
        self._positional_max = sum(
            p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD) for p in params
        )
        self._kw_names = frozenset(
            p.name for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
        )
        positional = [
            p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
        ]
        self._single_positional = len(positional) == 1 and not self._var_kw
        if self._types is None and not self._var_kw and not self._var_positional:
            self._direct = (len(self._required), self._positional_max)

    def _takes_kwargs(self, named: dict[str, Any]) -> bool:
        if self._var_kw:
            return True
        if named and all(k in self._kw_names for k in named):
            # one parameter whose name is not a key: the map is the argument
            return True
        return not self._single_positional

    def _takes(self) -> str:
        params = self._params or []
        needs = ", ".join(f":{p}" for p in params if p in self._required)
        may = ", ".join(f":{p}" for p in params if p not in self._required)
        if needs and may:
            return f"{self.name} needs {needs} and may take {may}"
        if needs:
            return f"{self.name} needs {needs}"
        if may:
            return f"{self.name} may take {may}"
        return f"{self.name} takes no arguments"

    def _check_named(self, named: dict[str, Any]) -> None:
        """Names the parameters a map of arguments gets wrong, before the tool runs: the LLM
        sees what the tool takes instead of Python's TypeError."""
        if self._params is None or self._var_kw:
            return
        unknown = [k for k in named if k not in self._params]
        missing = [p for p in self._required if p not in named]
        if not unknown and not missing:
            return
        if unknown:
            message = f"{self.name} has no parameter " + ", ".join(f":{k}" for k in unknown)
        else:
            message = f"{self.name} is missing " + ", ".join(f":{p}" for p in missing)
        hint = self._takes()
        for k in unknown:
            near = difflib.get_close_matches(str(k), self._params, n=1, cutoff=0.6)
            if near:
                hint += f"; did you mean :{near[0]}?"
                break
        raise ToolArgumentError(message, hint)

    def _check_positional(self, positional: list[Any]) -> None:
        if self._params is None or self._var_positional:
            return
        n = len(positional)
        if n > self._positional_max or n < len(self._required):
            if not self._params:
                hint = f"{self.name} takes no arguments: (tool/{self.name})"
            else:
                example = f"(tool/{self.name} {{:{self._params[0]} ...}})"
                hint = f"{self._takes()}; call it with a map: {example}"
            raise ToolArgumentError(f"{self.name} got {n} argument(s)", hint)

    def __call__(self, positional: list[Any], named: dict[str, Any] | None) -> Any:
        direct = self._direct
        if named is None and direct is not None and direct[0] <= len(positional) <= direct[1]:
            result = self.fn(*positional)
        else:
            result = self._call(positional, named)
        if type(result) in _EXACT_PLAIN:
            return result
        if inspect.isawaitable(result):  # an `async def` tool (or one returning an awaitable)
            result = self.loop_ref.resolve(result)
        if isinstance(result, _PLAIN) or type(result) in _AS_THEY_ARE:
            # a list or dict goes to the core as it is: plain data (most results) is walked once,
            # there, which hands what holds a date, a model, an enum... to to_data itself
            return result
        from ptc.tools.rich_types import to_data

        return to_data(result)

    def _call(self, positional: list[Any], named: dict[str, Any] | None) -> Any:
        types = self._types
        if (
            named is None
            and self._var_kw
            and len(positional) > self._positional_max
            and isinstance(positional[-1], dict)
        ):
            # `(tool/f 1 {:x 2})` for `def f(a, **opts)`: the trailing map is the options
            *positional, options = positional
            self._check_positional(positional)
            args = types.args(positional) if types else positional
            return self.fn(*args, **(types.kwargs(options) if types else options))
        if named is None:
            self._check_positional(positional)
            return self.fn(*(types.args(positional) if types else positional))
        if not named:
            self._check_named(named)
            return self.fn()
        if self._takes_kwargs(named):
            self._check_named(named)
            return self.fn(**(types.kwargs(named) if types else named))
        return self.fn(*(types.args([named]) if types else [named]))


class ToolArgumentError(PtcError, TypeError):
    """A tool called with arguments its signature does not take; ``ptc_hint`` is shown to the
    LLM as the error's hint."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.ptc_hint = hint


def normalize_tools(tools: ToolsArg) -> dict[str, Callable[..., Any]]:
    """Tools as a dict of Lisp name -> callable, in the order given. Every way of declaring a
    tool that :func:`~ptc.tools.declare.tool_entries` accepts works here too (a signature or
    description given with it matters only to an agent's prompt); another agent is a tool of
    agents only."""
    if tools is None:
        return {}
    from ptc.tools.declare import AgentTool, tool_entries

    if isinstance(tools, (str, bytes)):
        raise TypeError("tools must be a dict of name -> callable or a list of callables")
    out: dict[str, Callable[..., Any]] = {}
    for name, tool in tool_entries(tools):
        if isinstance(tool, AgentTool):
            raise TypeError(
                f"tool {name!r} is an agent: pass it to another SubAgent's tools, not to a Session"
            )
        out[name] = tool.fn
    return out
