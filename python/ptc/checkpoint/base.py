"""What a checkpoint is: the sink and source protocols, :func:`save_to` for either kind of sink,
and when a saved Step is finished."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

from ptc.step import Step


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
    """The run has ended: a sink saves its end (the finished Step) with its last turn."""
    return step.ok or step.error is not None
