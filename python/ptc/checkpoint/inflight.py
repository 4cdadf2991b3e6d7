"""The turn under way when a process died: its program (saved before it ran) and its tool
calls, each saved as it started and again as it ended, so a resume finishes that turn instead
of asking the LLM for it again, and never calls a tool twice.

A sink that can keep them has ``save_started(run_id, record)`` (the turn's reply, program and
the state it started from) and ``save_call(run_id, record)`` (one call: ``turn``, ``id``,
``tool``, ``how``, then ``result`` or ``error`` once it ended). On load, :func:`merge` makes of
them the Step's ``suspended`` turn: a call that ended is answered from its record, a call that
started and never ended is *interrupted* — made again if its tool is idempotent, else the run
waits for the host to decide it (``PendingCall.interrupted``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from ptc.step import Step
from ptc.turn import SuspendedTurn

from .errors import CheckpointError


def started_record(
    number: int,
    response: str,
    program: str,
    usage: Mapping[str, int],
    llm_ms: float,
    state: str,
) -> dict[str, Any]:
    """What is saved of a turn before its program runs."""
    return {
        "number": number,
        "response": response,
        "program": program,
        "usage": dict(usage),
        "llm_ms": llm_ms,
        "state": state,
    }


def merge(
    step: Step,
    started: Mapping[str, Any] | None,
    calls: Sequence[Mapping[str, Any]],
    where: str,
    run_id: str,
) -> Step:
    """``step`` with the turn that was under way after it (``started``, the records of its
    ``calls`` in the order saved): its ``suspended`` turn made from them, or the calls added to
    the pending turn it was resuming. Unchanged when no turn was under way."""
    if step.ok or step.error is not None or started is None:
        return step
    n = len(step.turns) + 1
    if started.get("number") != n:
        return step
    try:
        return _merged(step, n, started, calls)
    except (KeyError, TypeError, ValueError) as e:
        reason = f"the records of turn {n}, under way when the run stopped, cannot be read: {e}"
        raise CheckpointError(where, reason, run_id=run_id) from None


def _merged(
    step: Step, n: int, started: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]
) -> Step:
    from ptc.approvals import Continuation

    latest: dict[str, Mapping[str, Any]] = {}  # a call's ended record replaces its start
    for c in calls:
        if c.get("turn") == n:
            latest[str(c["id"])] = c
    entries = []
    for id_, c in latest.items():
        e: dict[str, Any] = {"id": id_, "tool": str(c["tool"]), "how": str(c["how"])}
        if "result" in c:
            e["result"] = c["result"]
        elif "error" in c:
            e["error"] = str(c["error"])
        else:
            e["interrupted"] = True
        entries.append(e)
    if step.suspended is not None and step.suspended.number == n:
        # the pending turn was being resumed: its record gains the calls made since
        cont = Continuation.from_json(step.suspended.continuation)
        known = {c["id"] for c in cont.calls}
        waiting = {p["id"] for p in cont.pending_records}
        # a call the run waits on that started (approved) and never ended is still waiting,
        # now interrupted; one that ended since is answered by its record
        extra = [
            e
            for e in entries
            if e["id"] not in known and not (e.get("interrupted") and e["id"] in waiting)
        ]
        cut = {e["id"] for e in entries if e.get("interrupted") and e["id"] in waiting}
        if not extra and not cut:
            return step
        made = {e["id"] for e in extra}
        cont = dataclasses.replace(
            cont,
            calls=cont.calls + tuple(extra),
            pending_records=tuple(
                {**p, "interrupted": True} if p["id"] in cut else p
                for p in cont.pending_records
                if p["id"] not in made
            ),
        )
        suspended = dataclasses.replace(step.suspended, continuation=cont.to_json())
    else:
        cont = Continuation(
            program=str(started["program"]),
            limits={},
            state=str(started["state"]),
            calls=tuple(entries),
            clock=(),
            pending_records=(),
        )
        Continuation.from_json(cont.to_json())  # every record reads back, or ValueError
        suspended = SuspendedTurn(
            number=n,
            response=str(started["response"]),
            program=str(started["program"]),
            continuation=cont.to_json(),
            usage=dict(started.get("usage") or {}),
            llm_ms=float(started.get("llm_ms") or 0.0),
            in_flight=True,
        )
    return dataclasses.replace(step, suspended=suspended)
