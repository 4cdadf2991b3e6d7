"""What a checkpoint is: the sink and source protocols, :func:`save_to` for either kind of sink,
and when a saved Step is finished."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ptc import _records
from ptc.step import Step

from .errors import shown_id


@runtime_checkable
class CheckpointSink(Protocol):
    def save(self, step: Step, run_id: str) -> None: ...


@runtime_checkable
class CheckpointSource(Protocol):
    def load(self, run_id: str | None = None) -> tuple[Step, str]: ...


Sink = CheckpointSink | Callable[[Step], Any]


def save_to(sink: Sink, step: Step, run_id: str) -> None:
    if isinstance(sink, CheckpointSink):
        sink.save(step, run_id)
    else:
        sink(step)


def finished(step: Step) -> bool:
    """The run has ended, or stopped at tool calls waiting for the host: a sink saves its end
    (the finished or pending Step) with its last turn."""
    return step.ok or step.error is not None or step.suspended is not None


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unstorable(run_id: str, surrogates: bool, nul: bool) -> str | None:
    """Why a sink cannot hold ``run_id`` (``surrogates``, ``nul``: what it can hold)."""
    at = None if surrogates else _SURROGATE.search(run_id)
    if at is not None:
        return f"it holds a lone surrogate (U+{ord(at.group()):04X} at index {at.start()})"
    if not nul and "\x00" in run_id:
        return f"it holds a NUL character (at index {run_id.index(chr(0))})"
    return None


def _a_string(run_id: Any) -> str:
    if not isinstance(run_id, str):
        raise TypeError(f"run_id: expected a string, got {_records.describe(run_id)}")
    return run_id


def no_run(where: str, run_id: str) -> LookupError:
    """The error for a run that is not saved in ``where``."""
    return LookupError(f"{where}: no run {shown_id(run_id)}")


def looked_up_id(run_id: Any, where: str, *, surrogates: bool = False, nul: bool = True) -> str:
    """``run_id`` to look up (or lock) in ``where``: ``TypeError`` unless it is a string, and the
    :class:`LookupError` of a missing run when no saved run can have it (text the database
    cannot hold: a lone surrogate, or a NUL when ``nul`` is false), never the driver's error."""
    text = _a_string(run_id)
    if _unstorable(text, surrogates, nul) is not None:
        raise no_run(where, text)
    return text


def stored_id(run_id: Any, where: str, *, surrogates: bool = False, nul: bool = True) -> str:
    """``run_id`` to save under in ``where``: ``TypeError`` unless it is a string, ``ValueError``
    naming why when the sink cannot hold it."""
    text = _a_string(run_id)
    reason = _unstorable(text, surrogates, nul)
    if reason is not None:
        raise ValueError(f"{where}: cannot save run {shown_id(text)}: {reason}")
    return text
