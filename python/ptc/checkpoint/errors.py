"""The errors of checkpoints: a saved record that cannot be read back
(:class:`CheckpointError`), a run resumed by an agent it does not belong to
(:class:`RunMismatchError`), a run another worker holds (:class:`RunLockedError`)."""

from __future__ import annotations

from typing import Any

from ptc.errors import PtcError


class CheckpointError(PtcError, ValueError):
    """A saved record that cannot be read back: not JSON, nested too deeply, a wrong type, a
    count the record cannot hold, a turn missing. Names where it is: ``path`` (the file or
    database), ``line`` (a JSON-lines file's line, 1-based) or ``row`` (a table row), and
    ``run_id`` when the record names its run; ``reason`` is what is wrong."""

    def __init__(
        self,
        path: str,
        reason: str,
        *,
        run_id: str | None = None,
        line: int | None = None,
        row: str | None = None,
    ) -> None:
        self.path, self.reason, self.run_id, self.line, self.row = path, reason, run_id, line, row
        where = path
        if line is not None:
            where += f", line {line}"
        if row is not None:
            where += f", {row}"
        if run_id is not None:
            where += f" (run {shown_id(run_id)})"
        super().__init__(f"{where}: {reason}")


class RunMismatchError(PtcError, ValueError):
    """``resume`` refused a run that belongs to another agent: its stored ``mission``, ``tools``
    or ``data`` differ from the resuming agent's. ``what`` names which, ``stored`` and
    ``resuming`` hold both values in full (the message shortens long ones)."""

    def __init__(self, what: str, stored: Any, resuming: Any, run_id: str | None) -> None:
        self.what, self.stored, self.resuming, self.run_id = what, stored, resuming, run_id
        run = f"run {shown_id(run_id)}" if run_id is not None else "the stored run"
        super().__init__(
            f"cannot resume {run}: it belongs to another agent; its {what} is "
            f"{_short(stored)}, this agent's is {_short(resuming)}"
        )


#: characters of a run id an error message quotes (a longer one is cut, with its length)
ID_LIMIT = 120


def shown_id(run_id: Any) -> str:
    """A run id as messages quote it: its ``repr``, cut after :data:`ID_LIMIT` characters (a
    run id comes from a host's request or a file; a 10 MB one must not make a 10 MB error)."""
    if not isinstance(run_id, str):
        return _short(run_id, ID_LIMIT)
    if len(run_id) <= ID_LIMIT:
        return repr(run_id)
    return f"{run_id[:ID_LIMIT]!r}... ({len(run_id)} characters)"


def _short(v: Any, limit: int = 300) -> str:
    text = repr(v)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


class RunLockedError(PtcError, RuntimeError):
    """Another worker is resuming (running) this run: only one may at a time."""


def run_locked(run_id: str, owner: Any) -> RunLockedError:
    """The error for a run that ``owner`` holds (the SQLite and PostgreSQL sinks say it alike)."""
    if not isinstance(owner, str):  # a lease row's owner is read from the database
        owner = _short(owner, ID_LIMIT)
    if len(owner) > ID_LIMIT:
        owner = f"{owner[:ID_LIMIT]}... ({len(owner)} characters)"
    return RunLockedError(
        f"run {shown_id(run_id)} is going on in another worker ({owner}); only one worker may "
        "continue a run at a time"
    )
