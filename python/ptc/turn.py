"""Immutable records of one agent turn (ARC-001, DBG-002).

A :class:`Turn` holds everything a compression strategy needs to render the history, already in
text form where the core rendered it (samples, tool-call arguments, result preview). Strategies are
therefore pure functions of turns and memory snapshots; they never touch a live Session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ptc import _records
from ptc._records import decode_value as decode_value
from ptc._records import encode_value as encode_value

from ._core import LazyValue


class _Lazy:
    """A dataclass field that may hold a core `LazyValue`: converted to Python on first read,
    then kept. A turn carries its run's value this way, so a value nobody reads (a large
    intermediate result) is never converted."""

    def __init__(self, default: Any = None, *, has_default: bool = True, convert: Any = None):
        self._default, self._has_default, self._convert = default, has_default, convert
        self._name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            if self._has_default:
                return self._default
            raise AttributeError(self._name)  # dataclasses: the field has no default
        v = obj.__dict__[self._name]
        if isinstance(v, LazyValue):
            v = v.get()
            if self._convert is not None:
                v = self._convert(v)
            obj.__dict__[self._name] = v
        return v

    def __set__(self, obj: Any, value: Any) -> None:
        obj.__dict__[self._name] = value


@dataclass(frozen=True)
class MemoryEntry(_records.Record):
    """One user definition as it stood after a turn (name, kind, docstring, type, sample)."""

    name: str
    kind: str  # "function" | "value"
    type: str
    sample: str | None = None
    doc: str | None = None
    params: tuple[str, ...] | None = None
    return_type: str | None = None


@dataclass(frozen=True)
class ToolCallRecord(_records.Record):
    """One tool call of a turn; ``args_text`` is the truncated Clojure rendering (TRN-003)."""

    name: str
    args: tuple[Any, ...] = _Lazy(has_default=False, convert=tuple)  # type: ignore[assignment]
    args_text: str  # type: ignore[misc]
    result: Any = _Lazy(None)
    error: str | None = None
    duration_ms: float = 0.0
    #: how a call of an approval or deferred tool was decided: "approved", "answered",
    #: "rejected" (None: the tool needed no decision)
    decision: str | None = None

    __value_fields__: ClassVar[tuple[str, ...]] = ("args", "result")

    def to_dict(self) -> dict[str, Any]:
        d = _records.to_dict(self)
        if not isinstance(d["args"], list):  # arguments Python cannot hold: their preview
            d["args"] = [d["args"]]
        return d


@dataclass(frozen=True)
class TurnError(_records.Record):
    """Why a turn failed: a program error, a missing program, or a rejected return value.

    The one shape of an error record: a run's :class:`~ptc.StepError` is this plus a value."""

    type: str
    message: str
    hint: str | None = None
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class Turn(_records.Record):
    """One cycle of the loop: the LLM's reply, the program run, and what it produced.

    ``success`` is False when the turn must be shown to the LLM in full: no program in
    the reply, a program error, or a returned value that did not match the signature.
    """

    number: int
    program: str | None
    result: Any = _Lazy(has_default=False)
    # the lazy field above has no default: mypy takes its descriptor for one
    prints: tuple[str, ...]  # type: ignore[misc]
    tool_calls: tuple[ToolCallRecord, ...]  # type: ignore[misc]
    memory: tuple[MemoryEntry, ...]  # type: ignore[misc]
    success: bool  # type: ignore[misc]
    response: str = ""
    result_text: str = ""
    defined: tuple[str, ...] = ()
    returned: bool = False
    failed: bool = False
    error: TurnError | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    llm_ms: float = 0.0
    run_ms: float = 0.0

    @property
    def duration_ms(self) -> float:
        return self.llm_ms + self.run_ms

    __value_fields__: ClassVar[tuple[str, ...]] = ("result",)


@dataclass(frozen=True)
class SuspendedTurn(_records.Record):
    """A turn whose program stopped at tool calls waiting for the host (approval or deferred
    tools): the LLM's reply, its program and the run's continuation (``ptc.Continuation`` JSON),
    from which ``SubAgent.resume(..., decisions=...)`` finishes the turn. The LLM never sees the
    pause: the finished turn is recorded as if it had run at once."""

    number: int
    response: str
    program: str
    continuation: str
    usage: Mapping[str, int] = field(default_factory=dict)
    llm_ms: float = 0.0
    #: the turn was under way when its process died (not waiting for the host): a resume
    #: finishes it from the calls saved as they happened
    in_flight: bool = False

    @property
    def pending(self) -> list[Any]:
        """The calls waiting for a decision (``ptc.PendingCall``)."""
        from ptc.approvals import Continuation

        return Continuation.from_json(self.continuation).pending
