"""Reading a run back from its saved records, whatever holds them: each JSON text parsed and
each record checked against its type, the turns put in order (a gap named), and the Step of
the run assembled, finished when its last turn ended it. Every problem is a
:class:`CheckpointError` naming where the record is."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ptc import _records
from ptc.step import RunContext, Step, Usage, run_ending
from ptc.turn import Turn

from .errors import CheckpointError


@dataclass
class Saved:
    """One saved turn of a run: the turn's JSON, the LLM requests and usage at that point, and
    where it is (for errors)."""

    number: int
    turn: Any
    calls: Any
    usage: Any
    line: int | None = None
    row: str | None = None


def parse_json(
    text: Any, path: str, run_id: str | None, *, line: int | None = None, row: str | None = None
) -> Any:
    """A stored JSON text, parsed; :class:`CheckpointError` naming where it is otherwise."""
    reason = _unreadable(text)
    if reason is None:
        try:
            return json.loads(text)
        except RecursionError:
            reason = "the JSON is nested too deeply to load"
        except ValueError as e:  # not JSON, or an integer of more digits than Python reads
            reason = f"not valid JSON ({e})"
    raise CheckpointError(path, reason, run_id=run_id, line=line, row=row)


def _unreadable(text: Any) -> str | None:
    if isinstance(text, str):
        return None
    return f"expected JSON text, got {_records.describe(text)}"


def final_step(path: str, run_id: str, data: Any, at: dict[str, Any]) -> Step:
    """A run's saved finished Step (``at``: its line or row)."""
    try:
        return Step.from_dict(data)
    except ValueError as e:
        raise CheckpointError(path, str(e), run_id=run_id, **at) from None


def assemble(
    path: str,
    run_id: str,
    context: Any,
    where: dict[str, Any],
    saved: Sequence[Saved],
    doubtful: Sequence[int] = (),
) -> Step:
    """The Step of a run from its saved turns, each checked where it was read (``where`` is
    the start record's line or row; ``doubtful`` are lines of the file that could not be read
    and name no run: one of them may have held a missing turn). The Step is finished when its
    last turn ended the run: its end was not saved (a crash after the last turn)."""

    def fail(reason: str, at: dict[str, Any]) -> CheckpointError:
        return CheckpointError(path, reason, run_id=run_id, **at)

    numbers = sorted({s.number for s in saved})
    if numbers != list(range(1, len(numbers) + 1)):
        held = set(numbers)
        missing = next(n for n in range(1, numbers[-1] + 1) if n not in held)
        reason = f"turn {missing} is missing (turns saved: {_ranges(numbers)})"
        if doubtful:
            reason += f"; lines that could not be read: {_ranges(doubtful)}"
        raise fail(reason, {})
    try:
        ctx = _records.typed(RunContext, context, "context")
    except ValueError as e:
        raise fail(str(e), where) from None
    first: dict[int, Saved] = {}
    for s in saved:  # a turn saved twice (a retried save) counts once
        first.setdefault(s.number, s)
    ordered = [first[n] for n in numbers]
    turns = []
    for s in ordered:
        at = {"line": s.line, "row": s.row}
        try:
            turn = _records.typed(Turn, s.turn, "turn")
        except ValueError as e:
            raise fail(str(e), at) from None
        if turn.number != s.number:
            raise fail(f"turn.number: {turn.number} is saved as turn {s.number}", at)
        turns.append(turn)
    if ordered:
        last = ordered[-1]
        at = {"line": last.line, "row": last.row}
        try:
            calls = _records.typed(int, last.calls, "calls")
            usage = _records.typed(Usage, last.usage, "usage")
            step = Step._assemble(ctx, tuple(turns), calls, usage)
        except ValueError as e:
            raise fail(str(e), at) from None
    else:
        step = Step._assemble(ctx, (), 0, Usage())
    ending = run_ending(ctx, step.turns)
    if ending is None:
        return step
    ok, value, error = ending
    return Step(ok, value, error, step.turns, step.messages, step.usage, ctx)


def _ranges(numbers: Sequence[int], most: int = 20) -> str:
    """``1-3, 5``: sorted numbers, runs shortened; past ``most`` runs, how many more."""
    out: list[list[int]] = []
    for n in numbers:
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    shown = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in out[:most])
    if len(out) > most:
        rest = sum(b - a + 1 for a, b in out[most:])
        shown += f" and {rest} more"
    return shown
