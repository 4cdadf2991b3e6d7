"""Reading a run back from the ``ptc_runs`` and ``ptc_turns`` tables, the same on SQLite and
PostgreSQL: run ids that are not text skipped, the saved finished Step unless turns came after
it, else the Step assembled from the turn rows."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ptc import _records
from ptc.step import Step

from .errors import CheckpointError
from .records import Saved, assemble, final_step, parse_json

logger = logging.getLogger("ptc")


def run_ids(path: str, rows: Sequence[Sequence[Any]]) -> list[str]:
    """The text run ids of ``ptc_runs`` rows; a row whose id is not text is skipped (and
    named on the ``ptc`` logger): it cannot be loaded, and the others still can."""
    out = []
    for (run_id,) in rows:
        if isinstance(run_id, str):
            out.append(run_id)
        else:
            err = CheckpointError(
                path,
                f"run_id: expected a string, got {_records.describe(run_id)}",
                row="a ptc_runs row",
            )
            logger.warning("%s (skipped)", err)
    return out


def run_id_of(path: str, run_id: Any) -> str:
    """The run id of the last ``ptc_runs`` row (the run ``load()`` picks when given none)."""
    if not isinstance(run_id, str):
        raise CheckpointError(
            path,
            f"run_id: expected a string, got {_records.describe(run_id)}",
            row="the last ptc_runs row",
        )
    return run_id


def final_row(path: str, run_id: str, final: Any, last_number: Any) -> Step | None:
    """The run's saved finished Step, unless turns were saved after it (a run resumed after
    an outage goes on in its turns) or there is none."""
    if final is None:
        return None
    if last_number is not None and not isinstance(last_number, int):
        return None  # a turn row whose number is not one: reading the rows reports it
    data = parse_json(final, path, run_id, row="ptc_runs.final")
    step = final_step(path, run_id, data, {"row": "ptc_runs.final"})
    if last_number is not None and len(step.turns) < last_number:
        return None
    return step


def from_rows(path: str, run_id: str, context: Any, rows: Sequence[Sequence[Any]]) -> Step:
    """The Step of a run in progress from its ``ptc_runs.context`` and ``ptc_turns`` rows."""
    saved = []
    for number, turn, calls, usage in rows:
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise CheckpointError(
                path,
                f"number: expected a turn number (1 or more), got {_records.describe(number)}",
                run_id=run_id,
                row="a ptc_turns row",
            )
        row = f"ptc_turns row of turn {number}"
        saved.append(
            Saved(
                number,
                parse_json(turn, path, run_id, row=row),
                calls,
                parse_json(usage, path, run_id, row=row),
                row=row,
            )
        )
    context = parse_json(context, path, run_id, row="ptc_runs.context")
    return assemble(path, run_id, context, {"row": "ptc_runs.context"}, saved)


def with_inflight(path: str, run_id: str, step: Step, rows: Sequence[Sequence[Any]]) -> Step:
    """``step`` with the turn under way after it, from its ``ptc_calls`` rows (``turn``,
    ``call_id``, ``record``; the turn's own row has the empty call id): see
    :mod:`ptc.checkpoint.inflight`."""
    from .inflight import merge

    started = None
    calls = []
    for _turn, call_id, record in rows:
        data = parse_json(record, path, run_id, row=f"the ptc_calls row of call {call_id!r}")
        if call_id == "":
            started = data
        else:
            calls.append(data)
    return merge(step, started, calls, path, run_id)
