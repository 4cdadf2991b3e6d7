"""Durable turns: every completed Turn of a run is saved, so a run interrupted at turn N (a
crash, a deploy, SIGKILL) is continued from turn N-1 by ``SubAgent.resume(checkpoint)``.

A checkpoint sink is anything with ``save(step, run_id)``, or a plain callable taking the
``Step`` so far (``step.error is None and not step.ok`` while the run goes on). Two sinks are
built in: :class:`JsonlCheckpoint` (one JSON line per event, appended and flushed to disk) and
:class:`SqliteCheckpoint` (a table per database, one row per turn; the history store's database
file may be shared). Both are idempotent: saving the same turn twice keeps one copy.

What a checkpoint holds is read as untrusted: every record is checked against its type and
counts against what the record holds. A record that does not fit raises
:class:`CheckpointError` naming the file (or database), the line (or row) and the run, for that
run only: the other runs of a shared file still load. A run whose end was not saved (a crash
after its last turn) loads as finished when that turn ended it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from ptc import _records
from ptc.errors import PtcError
from ptc.step import RunContext, Step, Usage
from ptc.turn import Turn

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: appends are not locked
    fcntl = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from ptc.history.pgstore import PostgresStore

logger = logging.getLogger("ptc")


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
            where += f" (run {run_id!r})"
        super().__init__(f"{where}: {reason}")


class RunMismatchError(PtcError, ValueError):
    """``resume`` refused a run that belongs to another agent: its stored ``mission``, ``tools``
    or ``data`` differ from the resuming agent's. ``what`` names which, ``stored`` and
    ``resuming`` hold both values in full (the message shortens long ones)."""

    def __init__(self, what: str, stored: Any, resuming: Any, run_id: str | None) -> None:
        self.what, self.stored, self.resuming, self.run_id = what, stored, resuming, run_id
        run = f"run {run_id!r}" if run_id is not None else "the stored run"
        super().__init__(
            f"cannot resume {run}: it belongs to another agent; its {what} is "
            f"{_short(stored)}, this agent's is {_short(resuming)}"
        )


def _short(v: Any, limit: int = 300) -> str:
    text = repr(v)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text)} characters)"


class RunLockedError(RuntimeError):
    """Another worker is resuming (running) this run: only one may at a time."""


@runtime_checkable
class CheckpointSink(Protocol):
    def save(self, step: Step, run_id: str) -> None: ...


@runtime_checkable
class CheckpointSource(Protocol):
    def load(self, run_id: str | None = None) -> tuple[Step, str]: ...


Sink = CheckpointSink | Callable[[Step], Any]

#: How long a SQLite lease on a run lasts without a save renewing it (a crashed worker's
#: lease on another machine lapses after this; on the same machine a dead pid frees it).
LEASE_SECONDS = 600.0


def _owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _owner_alive(owner: str) -> bool:
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine: trust the lease until it expires
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _locked(run_id: str, owner: str) -> RunLockedError:
    return RunLockedError(
        f"run {run_id!r} is going on in another worker ({owner}); only one worker may "
        "continue a run at a time"
    )


def save_to(sink: Sink, step: Step, run_id: str) -> None:
    if isinstance(sink, CheckpointSink):
        sink.save(step, run_id)
    else:
        sink(step)


def data_fingerprint(data: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of a run's data in a canonical form, the same in every process for equal
    data: map keys and set members are sorted, so neither insertion order nor Python's hash
    randomization changes it. JSON-shaped data (sets too) is encoded by the C JSON encoder
    (map keys compared as text); other data (keys that are not text, numbers or booleans, or
    of mixed types, data nested past what that encoder recurses into) by a walk that hashes
    each map, set and list from its members' encodings. Kept by runs that are checkpointed or
    resumed (it reads all the data once)."""
    try:
        text = _json_text(data)
    except (TypeError, ValueError, RecursionError):
        return "sha256:" + hashlib.sha256(b"w" + _walked(data)).hexdigest()
    return "sha256:" + hashlib.sha256(b"j" + text.encode("utf-8", "surrogatepass")).hexdigest()


def _json_text(v: Any) -> str:
    return json.dumps(
        v,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        allow_nan=True,
        default=_sorted_set,
    )


def _sorted_set(v: Any) -> Any:
    """A set for the JSON encoder: its members sorted (strings or integers as they are, other
    members by their JSON text), under a tag that says which."""
    if isinstance(v, set | frozenset):
        if all(type(x) is str for x in v):
            return {"$set:str": sorted(v)}
        if all(type(x) is int for x in v):
            return {"$set:int": sorted(v)}
        return {"$set": sorted(_json_text(x) for x in v)}
    raise TypeError(f"{type(v).__name__} is not data")


def _walked(root: Any) -> bytes:
    """The canonical encoding of ``root``: a plain value's JSON text, or ``#`` and the SHA-256
    of a collection's kind and its members' encodings, each length-prefixed (a set's sorted, a
    map's entries sorted), so equal data encodes alike. Iterative: any depth, and each member
    is encoded once, whatever its depth."""
    done: list[bytes] = []  # encodings of finished values, in order
    todo: list[tuple[Any, int]] = [(root, -1)]  # (value, -1) to start, (value, n) to finish
    while todo:
        v, n = todo.pop()
        if n < 0:
            if v is None or isinstance(v, bool | int | float | str):
                done.append(json.dumps(v, ensure_ascii=False).encode("utf-8", "surrogatepass"))
                continue
            if isinstance(v, Mapping):
                members = [x for kv in v.items() for x in kv]
            elif isinstance(v, list | tuple | set | frozenset):
                members = list(v)
            else:  # not data a Session accepts; kept distinct by its type
                done.append(f"?{type(v).__qualname__}:{v!r}".encode("utf-8", "surrogatepass"))
                continue
            todo.append((v, len(members)))
            todo.extend((x, -1) for x in reversed(members))
            continue
        parts = done[len(done) - n :]
        del done[len(done) - n :]
        framed = [len(p).to_bytes(8, "big") + p for p in parts]
        if isinstance(v, Mapping):
            entries = zip(framed[::2], framed[1::2], strict=True)
            kind, framed = b"M", sorted(k + x for k, x in entries)
        elif isinstance(v, set | frozenset):
            kind, framed = b"S", sorted(framed)
        else:
            kind = b"L"
        done.append(b"#" + hashlib.sha256(kind + b"".join(framed)).digest())
    return done[0]


def check_resumable(stored: RunContext, resuming: RunContext, run_id: str | None) -> None:
    """:class:`RunMismatchError` unless the run belongs to the resuming agent: the same mission
    (the prompt with its placeholders filled), the same tools (names and signatures) and the
    same data. Data is compared by :func:`data_fingerprint`; a run stored without one (saved
    before fingerprints existed, or a Step of a run that had no checkpoint) is compared by its
    data keys and their type labels, which is all it holds."""
    if stored.mission != resuming.mission:
        raise RunMismatchError("mission", stored.mission, resuming.mission, run_id)
    tools_stored, tools_now = _tools(stored), _tools(resuming)
    if tools_stored != tools_now:
        raise RunMismatchError("tools", tools_stored, tools_now, run_id)
    if stored.data_fingerprint is not None and resuming.data_fingerprint is not None:
        if stored.data_fingerprint != resuming.data_fingerprint:
            raise RunMismatchError("data", _data(stored, True), _data(resuming, True), run_id)
    elif _data(stored, False) != _data(resuming, False):
        raise RunMismatchError("data", _data(stored, False), _data(resuming, False), run_id)


def _tools(context: RunContext) -> list[str]:
    return sorted(f"{t.name} {t.signature}" for t in context.tools)


def _data(context: RunContext, fingerprint: bool) -> dict[str, Any]:
    if fingerprint:
        keys = sorted(e.name for e in context.data)
        return {"keys": keys, "fingerprint": context.data_fingerprint}
    return {"keys and types": sorted(f"{e.name} {e.type}" for e in context.data)}


def _finished(step: Step) -> bool:
    return step.ok or step.error is not None


# --- reading a run back ------------------------------------------------------------------


@dataclass
class _Saved:
    """One saved turn of a run: the turn's JSON, the LLM requests and usage at that point, and
    where it is (for errors)."""

    number: int
    turn: Any
    calls: Any
    usage: Any
    line: int | None = None
    row: str | None = None


def _json(
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


def _final(path: str, run_id: str, data: Any, at: dict[str, Any]) -> Step:
    """A run's saved finished Step (``at``: its line or row)."""
    try:
        return Step.from_dict(data)
    except ValueError as e:
        raise CheckpointError(path, str(e), run_id=run_id, **at) from None


def _assemble(
    path: str,
    run_id: str,
    context: Any,
    where: dict[str, Any],
    saved: Sequence[_Saved],
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
    first: dict[int, _Saved] = {}
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
    from ptc.agent import run_ending  # late: the agent imports this module

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


# --- JSON lines --------------------------------------------------------------------------

_EVENTS = ("start", "turn", "end")
#: how our writer starts every line: a line glued to a torn one is found again by it
_LINE_START = b'{"run_id": '
#: tries at finding a glued line after a torn one (each parses the rest of the line)
_GLUED_TRIES = 16
#: unreadable lines named one by one on the ``ptc`` logger per load (then a count)
_WARNINGS = 10


@dataclass
class _Line:
    number: int
    event: dict[str, Any]


class JsonlCheckpoint:
    """Appends a run's events to a JSON-lines file: ``start`` (the run's context), one ``turn``
    line per completed turn (with the LLM requests and usage so far) and ``end``. Each line is
    flushed and fsynced before ``save`` returns, so what was saved survives a killed process.

    A last line cut short by a crash mid-write is ignored when read, and cut off before the
    next append (under an exclusive ``flock`` of the file, so writers in several processes do
    not cut each other's lines). Any other line that cannot be read raises
    :class:`CheckpointError` (file, line, run) when its run is loaded or saved; a line that
    names no run is skipped with a warning on the ``ptc`` logger (:meth:`problems` lists every
    such line), so the other runs of a shared file still load."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._written: dict[str, int] = {}  # run id -> turns on file
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JsonlCheckpoint({str(self.path)!r})"

    def _append(self, lines: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        with self.path.open("ab+") as f:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # freed when the file is closed
            self._mend_tail(f)
            f.write(text.encode("utf-8", "surrogatepass"))
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())

    def _mend_tail(self, f: IO[bytes]) -> None:
        """New lines start on a line of their own: a last line without its newline is what a
        crash mid-write leaves; it is cut off (or, if it is a whole record written by another
        tool that left out the newline, ended)."""
        size = f.seek(0, os.SEEK_END)
        if size == 0:
            return
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return
        start = size
        while start > 0:  # back to the start of the last line
            step = min(start, 1 << 16)
            f.seek(start - step)
            chunk = f.read(step)
            nl = chunk.rfind(b"\n")
            if nl >= 0:
                start = start - step + nl + 1
                break
            start -= step
        f.seek(start)
        tail = f.read()
        if not _torn(tail):
            f.write(b"\n")  # a whole JSON text: ended, and read (or reported) as a line
            return
        f.truncate(start)
        logger.warning(
            "%s: cut off a last line left unfinished by a crash mid-write (%d bytes)",
            self.path,
            len(tail),
        )

    def save(self, step: Step, run_id: str) -> None:
        with self._lock:
            if run_id not in self._written:
                lines, bad = self._scan()
                for b in bad:
                    if b.run_id == run_id:
                        raise b  # appending to a run whose history cannot be read
                mine = [x.event for x in lines if x.event["run_id"] == run_id]
                numbers = {e["turn"]["number"] for e in mine if e["event"] == "turn"}
                self._written[run_id] = len(numbers)
                if not any(e["event"] == "start" for e in mine):
                    self._written[run_id] = -1  # not started on file
            done = self._written[run_id]
            lines_out: list[dict[str, Any]] = []
            if done < 0:
                done = 0
                lines_out.append(
                    {"run_id": run_id, "event": "start", "context": step.context.to_dict()}
                )
            for turn in step.turns[done:]:
                lines_out.append(
                    {
                        "run_id": run_id,
                        "event": "turn",
                        "turn": turn.to_dict(),
                        "calls": len(step.messages),
                        "usage": step.usage.to_dict(),
                    }
                )
            if _finished(step):
                lines_out.append({"run_id": run_id, "event": "end", "step": step.to_dict()})
            if lines_out:
                self._append(lines_out)
            self._written[run_id] = len(step.turns)

    def _scan(self) -> tuple[list[_Line], list[CheckpointError]]:
        """The file's readable events, and a :class:`CheckpointError` per unreadable line (a
        last line without its newline that cannot be read is a torn write, not an error)."""
        lines: list[_Line] = []
        bad: list[CheckpointError] = []
        if not self.path.exists():
            return lines, bad
        with self.path.open("rb") as f:
            for number, raw in enumerate(f, 1):
                text = raw.strip()
                if not text:
                    continue
                event, reason = _parse_line(text)
                if reason is None:
                    assert event is not None
                    lines.append(_Line(number, event))
                elif raw.endswith(b"\n") or not _torn(text):
                    run = _run_named(text, event)
                    bad.append(CheckpointError(str(self.path), reason, run_id=run, line=number))
        return lines, bad

    def problems(self) -> list[CheckpointError]:
        """A :class:`CheckpointError` for every line of the file that cannot be read (a torn
        last line left by a crash is not one: the next save cuts it off)."""
        return self._scan()[1]

    def _events(self, run_id: str | None) -> tuple[list[_Line], list[int]]:
        """The file's events, after raising the first unreadable line of ``run_id`` and
        warning about unreadable lines that name no run (their numbers come second)."""
        lines, bad = self._scan()
        nameless: list[int] = []
        for b in bad:
            if b.run_id is None:
                if len(nameless) < _WARNINGS:
                    logger.warning("%s (skipped: the line names no run)", b)
                nameless.append(b.line or 0)
            elif run_id is not None and b.run_id == run_id:
                raise b
        if len(nameless) > _WARNINGS:
            logger.warning(
                "%s: %d more lines that name no run skipped (problems() lists them all)",
                self.path,
                len(nameless) - _WARNINGS,
            )
        return lines, nameless

    def runs(self) -> list[str]:
        """Run ids on file, in the order they started."""
        seen: dict[str, None] = {}
        for x in self._events(None)[0]:
            if x.event["event"] == "start":
                seen.setdefault(x.event["run_id"], None)
        return list(seen)

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        """The Step saved for ``run_id`` (default: the last run started), and its run id."""
        if run_id is None:
            starts = self.runs()
            if not starts:
                raise LookupError(f"{self.path}: no run has been saved here")
            run_id = starts[-1]
        lines, nameless = self._events(run_id)
        mine = [x for x in lines if x.event["run_id"] == run_id]
        start = next((x for x in mine if x.event["event"] == "start"), None)
        if start is None:
            raise LookupError(f"{self.path}: no run {run_id!r}")
        path = str(self.path)
        saved = [
            _Saved(
                x.event["turn"]["number"],
                x.event["turn"],
                x.event.get("calls"),
                x.event.get("usage"),
                line=x.number,
            )
            for x in mine
            if x.event["event"] == "turn"
        ]
        ends = [x for x in mine if x.event["event"] == "end"]
        if ends:  # the latest end, unless turns were saved after it (resumed after an outage)
            step = _final(path, run_id, ends[-1].event["step"], {"line": ends[-1].number})
            if len(step.turns) >= max((s.number for s in saved), default=0):
                return step, run_id
        context = start.event["context"]
        return _assemble(path, run_id, context, {"line": start.number}, saved, nameless), run_id


def _torn(text: bytes) -> bool:
    """A last line that is not a whole JSON text: what a crash mid-write leaves."""
    try:
        json.loads(text.decode("utf-8"))
    except (ValueError, RecursionError):
        return True
    return False


def _parse_line(text: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """One line's event, or what is wrong with it (and the object, when it is one)."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as e:
        return None, f"not UTF-8 text ({e.reason} at byte {e.start})"
    try:
        obj = json.loads(decoded)
    except RecursionError:
        return None, "the JSON is nested too deeply to load"
    except ValueError as e:
        glued = _glued(text)
        if glued is not None:
            return glued, None
        return None, f"not valid JSON ({e})"
    return obj, _event_problem(obj)


def _glued(text: bytes) -> dict[str, Any] | None:
    """A whole line appended to a torn one by an earlier version (which did not start new
    lines on a line of their own): the event after the torn part, if there is one."""
    at = 0
    for _ in range(_GLUED_TRIES):
        at = text.find(_LINE_START, at + 1)
        if at < 0:
            return None
        try:
            obj = json.loads(text[at:].decode("utf-8"))
        except (ValueError, RecursionError):
            continue
        if _event_problem(obj) is None:
            return cast("dict[str, Any]", obj)
    return None


def _event_problem(obj: Any) -> str | None:
    """What keeps ``obj`` from being a checkpoint event (its content is checked on load)."""
    if not isinstance(obj, dict):
        return f"expected a JSON object, got {_records.describe(obj)}"
    if "run_id" not in obj:
        return "the line has no run_id"
    if not isinstance(obj["run_id"], str):
        return f"run_id: expected a string, got {_records.describe(obj['run_id'])}"
    event = obj.get("event")
    if event not in _EVENTS:
        return f"event: expected 'start', 'turn' or 'end', got {_records.describe(event)}"
    need = {"start": "context", "turn": "turn", "end": "step"}[event]
    if not isinstance(obj.get(need), dict):
        return f"{need}: expected an object, got {_records.describe(obj.get(need))}"
    if event == "turn":
        number = obj["turn"].get("number")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            got = _records.describe(number)
            return f"turn.number: expected a turn number (1 or more), got {got}"
    return None


def _run_named(text: bytes, obj: Any) -> str | None:
    """The run a bad line belongs to: its run_id when it has a text one, else the run id our
    writer puts first on every line, if the line still starts with it."""
    if isinstance(obj, dict) and isinstance(obj.get("run_id"), str):
        return str(obj["run_id"])
    if not text.startswith(_LINE_START + b'"'):
        return None
    # the JSON string after it, read by the JSON module's own (C) string scanner; bytes that
    # are not UTF-8 further on do not hide it
    line = text.decode("utf-8", "surrogateescape")
    try:
        value, _ = scanstring(line, len(_LINE_START) + 1)
    except ValueError:  # unterminated, or a bad escape
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return None  # the run id itself is not UTF-8: no run of ours
    return str(value)


class SqliteCheckpoint:
    """Saves a run's turns in SQLite (``ptc_runs`` and ``ptc_turns`` tables; the file may be
    the history store's). A turn is written once per (run, number): a retried save is a no-op."""

    SCHEMA = """
    CREATE TABLE IF NOT EXISTS ptc_runs (
        run_id TEXT PRIMARY KEY, context TEXT NOT NULL, final TEXT,
        started REAL DEFAULT (julianday('now')));
    CREATE TABLE IF NOT EXISTS ptc_turns (
        run_id TEXT NOT NULL REFERENCES ptc_runs(run_id), number INTEGER NOT NULL,
        turn TEXT NOT NULL, calls INTEGER NOT NULL, usage TEXT NOT NULL,
        PRIMARY KEY (run_id, number));
    CREATE TABLE IF NOT EXISTS ptc_leases (
        run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL);
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = str(path)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._leases: dict[str, str] = {}  # run id -> our owner tag, while we hold it
        self._saved: dict[str, int] = {}  # run id -> turns known to be stored
        with self._connect() as db:
            db.executescript(self.SCHEMA)

    def __repr__(self) -> str:
        return f"SqliteCheckpoint({self.path!r})"

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.timeout)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    def save(self, step: Step, run_id: str) -> None:
        with self._lock, self._connect() as db:
            if run_id in self._leases:  # each save renews the lease, if it is still ours
                renewed = db.execute(
                    "UPDATE ptc_leases SET expires = ? WHERE run_id = ? AND owner = ?",
                    (time.time() + LEASE_SECONDS, run_id, self._leases[run_id]),
                ).rowcount
                if renewed == 0:
                    row = db.execute(
                        "SELECT owner FROM ptc_leases WHERE run_id = ?", (run_id,)
                    ).fetchone()
                    raise _locked(run_id, row[0] if row else "a worker that has finished it")
            db.execute(
                "INSERT OR IGNORE INTO ptc_runs (run_id, context) VALUES (?, ?)",
                (run_id, json.dumps(step.context.to_dict(), ensure_ascii=False)),
            )
            usage = json.dumps(step.usage.to_dict())
            db.executemany(
                "INSERT OR IGNORE INTO ptc_turns (run_id, number, turn, calls, usage)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        t.number,
                        json.dumps(t.to_dict(), ensure_ascii=False),
                        len(step.messages),
                        usage,
                    )
                    # earlier turns are stored: send only the new ones
                    for t in step.turns[self._saved.get(run_id, 0) :]
                ],
            )
            if _finished(step):
                db.execute(
                    "UPDATE ptc_runs SET final = ? WHERE run_id = ?",
                    (json.dumps(step.to_dict(), ensure_ascii=False), run_id),
                )
        self._saved[run_id] = len(step.turns)

    @contextlib.contextmanager
    def lock(self, run_id: str) -> Iterator[None]:
        """Hold the run while it goes on; another holder raises :class:`RunLockedError`.

        A lease row: renewed by every save, freed on exit, taken over when its holder's
        process is gone (same machine) or it expired (:data:`LEASE_SECONDS`)."""
        owner = _owner()
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT owner, expires FROM ptc_leases WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None and row[1] > time.time() and _owner_alive(row[0]):
                db.execute("ROLLBACK")
                raise _locked(run_id, row[0])
            db.execute(
                "INSERT OR REPLACE INTO ptc_leases (run_id, owner, expires) VALUES (?, ?, ?)",
                (run_id, owner, time.time() + LEASE_SECONDS),
            )
            db.execute("COMMIT")
        finally:
            db.close()
        self._leases[run_id] = owner
        try:
            yield
        finally:
            self._leases.pop(run_id, None)
            with self._connect() as db:
                db.execute("DELETE FROM ptc_leases WHERE run_id = ? AND owner = ?", (run_id, owner))

    def runs(self) -> list[str]:
        with self._connect() as db:
            rows = db.execute("SELECT run_id FROM ptc_runs ORDER BY rowid").fetchall()
        return _run_ids(self.path, rows)

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        with self._connect() as db:
            if run_id is None:
                row = db.execute(
                    "SELECT run_id FROM ptc_runs ORDER BY rowid DESC LIMIT 1"
                ).fetchone()
                if row is None:
                    raise LookupError(f"{self.path}: no run has been saved here")
                run_id = _run_id_of(self.path, row[0])
            run = db.execute(
                "SELECT context, final FROM ptc_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if run is None:
                raise LookupError(f"{self.path}: no run {run_id!r}")
            query = "SELECT number, turn, calls, usage FROM ptc_turns WHERE run_id = ?"
            last = db.execute("SELECT max(number) FROM ptc_turns WHERE run_id = ?", (run_id,))
            step = _final_row(self.path, run_id, run[1], last.fetchone()[0])
            if step is not None:
                return step, run_id
            rows = db.execute(query + " ORDER BY number", (run_id,)).fetchall()
        return _from_rows(self.path, run_id, run[0], rows), run_id


def _run_ids(path: str, rows: Sequence[Sequence[Any]]) -> list[str]:
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


def _run_id_of(path: str, run_id: Any) -> str:
    if not isinstance(run_id, str):
        raise CheckpointError(
            path,
            f"run_id: expected a string, got {_records.describe(run_id)}",
            row="the last ptc_runs row",
        )
    return run_id


def _final_row(path: str, run_id: str, final: Any, last_number: Any) -> Step | None:
    """The run's saved finished Step, unless turns were saved after it (a run resumed after
    an outage goes on in its turns) or there is none."""
    if final is None:
        return None
    if last_number is not None and not isinstance(last_number, int):
        return None  # a turn row whose number is not one: reading the rows reports it
    data = _json(final, path, run_id, row="ptc_runs.final")
    step = _final(path, run_id, data, {"row": "ptc_runs.final"})
    if last_number is not None and len(step.turns) < last_number:
        return None
    return step


def _from_rows(path: str, run_id: str, context: Any, rows: Sequence[Sequence[Any]]) -> Step:
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
            _Saved(
                number,
                _json(turn, path, run_id, row=row),
                calls,
                _json(usage, path, run_id, row=row),
                row=row,
            )
        )
    context = _json(context, path, run_id, row="ptc_runs.context")
    return _assemble(path, run_id, context, {"row": "ptc_runs.context"}, saved)


class PostgresCheckpoint:
    """Saves a run's turns in a :class:`~ptc.history.pgstore.PostgresStore` (``ptc_runs``,
    ``ptc_turns``): a run started on one worker can be resumed on any other. Saves are
    idempotent per (run, turn) and retried while the server is unreachable; :meth:`lock`
    holds a PostgreSQL advisory lock on the run, freed when the holder's connection ends."""

    def __init__(self, store: PostgresStore) -> None:
        self.store = store
        self._held: dict[str, Any] = {}  # run id -> the connection holding its lock
        self._saved: dict[str, int] = {}  # run id -> turns known to be stored

    def __repr__(self) -> str:
        return f"PostgresCheckpoint({self.store!r})"

    def _key(self, run_id: str) -> str:
        return f"ptc-run:{self.store.schema}:{run_id}"

    def _still_held(self, run_id: str) -> None:
        """A lock whose session died (a restart, a dropped connection) is taken again, or
        :class:`RunLockedError` says another worker has the run now."""
        conn = self._held.get(run_id)
        if conn is None or not (conn.closed or conn.broken):
            return
        with contextlib.suppress(Exception):
            conn.close()
        self._held[run_id] = self.store._retrying(lambda: self._take(run_id))

    def _take(self, run_id: str) -> Any:
        """A connection of its own (not the store's pool: a run holds it for its whole life,
        and the pool must stay free for the saves of every run) holding the run's lock."""
        import psycopg

        conn = psycopg.connect(
            self.store.url, autocommit=True, connect_timeout=max(1, int(self.store.timeout))
        )
        try:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (self._key(run_id),)
            ).fetchone()
        except BaseException:
            conn.close()
            raise
        if row is None or not row[0]:
            conn.close()
            raise _locked(run_id, "a session holding its advisory lock")
        return conn

    def save(self, step: Step, run_id: str) -> None:
        self._still_held(run_id)
        context = json.dumps(step.context.to_dict(), ensure_ascii=False)
        usage = json.dumps(step.usage.to_dict())
        done = self._saved.get(run_id, 0)  # earlier turns are stored: send only the new ones
        turns = [
            (
                run_id,
                t.number,
                json.dumps(t.to_dict(), ensure_ascii=False),
                len(step.messages),
                usage,
            )
            for t in step.turns[done:]
        ]
        final = json.dumps(step.to_dict(), ensure_ascii=False) if _finished(step) else None

        def write() -> None:
            with self.store.connection() as conn, conn.transaction():
                conn.execute(
                    "INSERT INTO ptc_runs (run_id, context) VALUES (%s, %s) "
                    "ON CONFLICT (run_id) DO NOTHING",
                    (run_id, context),
                )
                with conn.cursor() as cur:
                    cur.executemany(
                        "INSERT INTO ptc_turns (run_id, number, turn, calls, usage) "
                        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (run_id, number) DO NOTHING",
                        turns,
                    )
                if final is not None:
                    conn.execute(
                        "UPDATE ptc_runs SET final = %s WHERE run_id = %s", (final, run_id)
                    )

        self.store._retrying(write)
        self._saved[run_id] = len(step.turns)

    def runs(self) -> list[str]:
        rows = self.store._query("SELECT run_id FROM ptc_runs ORDER BY seq", ())
        return _run_ids(repr(self.store), rows)

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        where = repr(self.store)
        if run_id is None:
            rows = self.store._query("SELECT run_id FROM ptc_runs ORDER BY seq DESC LIMIT 1", ())
            if not rows:
                raise LookupError(f"{where}: no run has been saved here")
            run_id = _run_id_of(where, rows[0][0])
        run = self.store._query("SELECT context, final FROM ptc_runs WHERE run_id = %s", (run_id,))
        if not run:
            raise LookupError(f"{where}: no run {run_id!r}")
        context, final = run[0]
        last = self.store._query("SELECT max(number) FROM ptc_turns WHERE run_id = %s", (run_id,))[
            0
        ][0]
        step = _final_row(where, run_id, final, last)
        if step is not None:
            return step, run_id
        rows = self.store._query(
            "SELECT number, turn, calls, usage FROM ptc_turns WHERE run_id = %s ORDER BY number",
            (run_id,),
        )
        return _from_rows(where, run_id, context, rows), run_id

    @contextlib.contextmanager
    def lock(self, run_id: str) -> Iterator[None]:
        """Hold the run while it goes on; another holder raises :class:`RunLockedError`.

        The lock is a session advisory lock on a connection of its own (outside the store's
        pool, which the saves of every run share): a worker that dies frees it. If the holding
        session is lost while the run goes on, the next save takes the lock again (or
        raises :class:`RunLockedError` when another worker took the run meanwhile)."""
        self.store._get_pool()  # the schema is made (migrated) before the run starts
        self._held[run_id] = self.store._retrying(lambda: self._take(run_id))
        try:
            yield
        finally:
            conn = self._held.pop(run_id, None)
            if conn is not None:
                # ending the session frees its advisory locks
                with contextlib.suppress(Exception):
                    conn.close()
