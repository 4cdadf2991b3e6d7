"""Immutable records of one agent turn (ARC-001, DBG-002).

A :class:`Turn` holds everything a compression strategy needs to render the history, already in
text form where the core rendered it (samples, tool-call arguments, result preview). Strategies are
therefore pure functions of turns and memory snapshots; they never touch a live Session.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ptc import _records

from ._core import LazyValue
from .errors import LispError


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


def _encode_lazy(obj: Any, name: str) -> Any:
    """`encode_value` of a lazy field; a value Python cannot hold is kept as its preview."""
    try:
        return encode_value(getattr(obj, name))
    except LispError:
        raw = obj.__dict__[name]
        return {"$repr": raw.preview() if isinstance(raw, LazyValue) else repr(raw)}


@dataclass(frozen=True)
class MemoryEntry:
    """One user definition as it stood after a turn (name, kind, docstring, type, sample)."""

    name: str
    kind: str  # "function" | "value"
    type: str
    sample: str | None = None
    doc: str | None = None
    params: tuple[str, ...] | None = None
    return_type: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _records.to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MemoryEntry:
        return _records.from_dict(cls, d)


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call of a turn; ``args_text`` is the truncated Clojure rendering (TRN-003)."""

    name: str
    args: tuple[Any, ...] = _Lazy(has_default=False, convert=tuple)  # type: ignore[assignment]
    args_text: str  # type: ignore[misc]
    result: Any = _Lazy(None)
    error: str | None = None
    duration_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        args = _encode_lazy(self, "args")
        return {
            "name": self.name,
            "args": args if isinstance(args, list) else [args],
            "args_text": self.args_text,
            "result": _encode_lazy(self, "result"),
            "error": self.error,
            "duration_ms": self.duration_ms,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ToolCallRecord:
        return cls(
            name=d["name"],
            args=tuple(decode_value(a) for a in d.get("args", [])),
            args_text=d["args_text"],
            result=decode_value(d.get("result")),
            error=d.get("error"),
            duration_ms=float(d.get("duration_ms", 0.0)),
        )


@dataclass(frozen=True)
class TurnError:
    """Why a turn failed: a program error, a missing program, or a rejected return value.

    The one shape of an error record: a run's :class:`~ptc.StepError` is this plus a value."""

    type: str
    message: str
    hint: str | None = None
    line: int | None = None
    column: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _records.to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TurnError:
        return _records.from_dict(cls, d)


@dataclass(frozen=True)
class Turn:
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

    def to_dict(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "program": self.program,
            "result": _encode_lazy(self, "result"),
            "result_text": self.result_text,
            "prints": list(self.prints),
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "memory": [m.to_dict() for m in self.memory],
            "success": self.success,
            "response": self.response,
            "defined": list(self.defined),
            "returned": self.returned,
            "failed": self.failed,
            "error": self.error.to_dict() if self.error else None,
            "usage": dict(self.usage),
            "llm_ms": self.llm_ms,
            "run_ms": self.run_ms,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Turn:
        err = d.get("error")
        return cls(
            number=int(d["number"]),
            program=d.get("program"),
            result=decode_value(d.get("result")),
            result_text=d.get("result_text", ""),
            prints=tuple(d.get("prints", ())),
            tool_calls=tuple(ToolCallRecord.from_dict(c) for c in d.get("tool_calls", ())),
            memory=tuple(MemoryEntry.from_dict(m) for m in d.get("memory", ())),
            success=bool(d["success"]),
            response=d.get("response", ""),
            defined=tuple(d.get("defined", ())),
            returned=bool(d.get("returned", False)),
            failed=bool(d.get("failed", False)),
            error=TurnError.from_dict(err) if err else None,
            usage=dict(d.get("usage", {})),
            llm_ms=float(d.get("llm_ms", 0.0)),
            run_ms=float(d.get("run_ms", 0.0)),
        )


# --- JSON codec for PTC values ------------------------------------------------------------
# Plain JSON cannot tell a keyword from a string, a set from a vector or keep non-string map
# keys, so those are tagged with a single "$..." key. Replaying tool results on resume relies on it.


def _is_keyword(value: Any) -> bool:
    return isinstance(value, str) and type(value).__name__ == "Keyword"


def encode_value(value: Any) -> Any:
    """Turn a converted PTC value into JSON-safe data (reversible by :func:`decode_value`)."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": repr(value)}
    if _is_keyword(value):
        return {"$kw": str(value)}
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return [encode_value(v) for v in value]
    if isinstance(value, set | frozenset):
        return {"$set": [encode_value(v) for v in value]}
    if isinstance(value, Mapping):
        plain = all(isinstance(k, str) and not _is_keyword(k) for k in value)
        tagged_like = len(value) == 1 and any(str(k).startswith("$") for k in value)
        if plain and not tagged_like:
            return {k: encode_value(v) for k, v in value.items()}
        return {"$map": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    return {"$repr": repr(value)}


def decode_value(data: Any) -> Any:
    """Inverse of :func:`encode_value`; untaggable objects come back as their ``repr`` text."""
    if isinstance(data, list):
        return [decode_value(v) for v in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        ((tag, inner),) = data.items()
        if tag == "$kw":
            from ptc import Keyword  # late import: ptc imports this module

            return Keyword(inner)
        if tag == "$set":
            return {_hashable(decode_value(v)) for v in inner}
        if tag == "$map":
            return {_hashable(decode_value(k)): decode_value(v) for k, v in inner}
        if tag == "$float":
            return float(inner)
        if tag == "$repr":
            return inner
    return {k: decode_value(v) for k, v in data.items()}


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value
