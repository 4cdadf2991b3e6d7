"""The JSON-lines checkpoint: one event per line, appended under a file lock; a line torn by a
crash mid-write cut off before the next append, and every other line checked as it is read
(a bad line names its run when it can, so the other runs of a shared file still load)."""

from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from pathlib import Path
from typing import IO, Any, cast

from ptc import _records
from ptc.step import Step

from .base import finished, looked_up_id, no_run, stored_id
from .errors import CheckpointError
from .inflight import merge
from .records import Saved, assemble, final_step

try:
    import fcntl
except ImportError:  # pragma: no cover - not a POSIX system: appends are not locked
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("ptc")

_EVENTS = ("start", "turn", "end", "started", "call")
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
    Beside it, :attr:`calls_path` keeps the turn under way and its tool calls as they start
    and end (flushed, not fsynced: see :mod:`ptc.checkpoint.inflight`).

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

    @property
    def calls_path(self) -> Path:
        """The file beside this one that keeps the turn under way and its tool calls as they
        start and end (see :mod:`ptc.checkpoint.inflight`): ``runs.jsonl.calls``."""
        return self.path.with_name(self.path.name + ".calls")

    def _append(
        self, lines: list[dict[str, Any]], path: Path | None = None, *, sync: bool = True
    ) -> None:
        # a lone surrogate (which UTF-8 cannot hold) is written escaped, so every line reads back
        text = "".join(_records.json_text(line) + "\n" for line in lines)
        with (path or self.path).open("ab+") as f:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)  # freed when the file is closed
            self._mend_tail(f)
            f.write(text.encode("utf-8"))
            f.flush()
            if self.fsync and sync:
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
        stored_id(run_id, str(self.path), surrogates=True)  # any text: written escaped
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
            if finished(step):
                lines_out.append({"run_id": run_id, "event": "end", "step": step.to_dict()})
            if lines_out:
                self._append(lines_out)
            self._written[run_id] = len(step.turns)

    def save_started(self, run_id: str, record: dict[str, Any]) -> None:
        """Saves a turn's program before it runs (see :mod:`ptc.checkpoint.inflight`)."""
        stored_id(run_id, str(self.path), surrogates=True)
        with self._lock:
            line = {"run_id": run_id, "event": "started", "started": record}
            self._append([line], self.calls_path)

    def save_call(self, run_id: str, record: dict[str, Any]) -> None:
        """Saves a tool call as it starts, and again as it ends. Written, not fsynced: the
        record outlives the process (what a call cut short needs), not the machine; an fsync
        per call would cost more than most tool calls."""
        stored_id(run_id, str(self.path), surrogates=True)
        line = {"run_id": run_id, "event": "call", "call": record}
        with self._lock:
            self._append([line], self.calls_path, sync=False)

    def _scan(self, path: Path | None = None) -> tuple[list[_Line], list[CheckpointError]]:
        """The file's readable events, and a :class:`CheckpointError` per unreadable line (a
        last line without its newline that cannot be read is a torn write, not an error)."""
        path = path or self.path
        lines: list[_Line] = []
        bad: list[CheckpointError] = []
        if not path.exists():
            return lines, bad
        with path.open("rb") as f:
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
                    bad.append(CheckpointError(str(path), reason, run_id=run, line=number))
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

    def _under_way(self, run_id: str) -> tuple[list[Any], list[Any]]:
        """The run's turn-start and call records, from :attr:`calls_path` (a bad line of the
        run there raises, as in the main file)."""
        lines, bad = self._scan(self.calls_path)
        for b in bad:
            if b.run_id == run_id:
                raise b
        mine = [x.event for x in lines if x.event["run_id"] == run_id]
        starts = [e["started"] for e in mine if e["event"] == "started"]
        calls = [e["call"] for e in mine if e["event"] == "call"]
        return starts, calls

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        """The Step saved for ``run_id`` (default: the last run started), and its run id."""
        if run_id is None:
            starts = self.runs()
            if not starts:
                raise LookupError(f"{self.path}: no run has been saved here")
            run_id = starts[-1]
        looked_up_id(run_id, str(self.path), surrogates=True)
        lines, nameless = self._events(run_id)
        mine = [x for x in lines if x.event["run_id"] == run_id]
        start = next((x for x in mine if x.event["event"] == "start"), None)
        if start is None:
            raise no_run(str(self.path), run_id)
        path = str(self.path)
        saved = [
            Saved(
                x.event["turn"]["number"],
                x.event["turn"],
                x.event.get("calls"),
                x.event.get("usage"),
                line=x.number,
            )
            for x in mine
            if x.event["event"] == "turn"
        ]
        begun, calls = self._under_way(run_id)
        under_way = begun[-1] if begun else None
        ends = [x for x in mine if x.event["event"] == "end"]
        if ends:  # the latest end, unless turns were saved after it (resumed after an outage)
            step = final_step(path, run_id, ends[-1].event["step"], {"line": ends[-1].number})
            if len(step.turns) >= max((s.number for s in saved), default=0):
                return merge(step, under_way, calls, path, run_id), run_id
        context = start.event["context"]
        step = assemble(path, run_id, context, {"line": start.number}, saved, nameless)
        return merge(step, under_way, calls, path, run_id), run_id


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
        expected = "'start', 'turn', 'end', 'started' or 'call'"
        return f"event: expected {expected}, got {_records.describe(event)}"
    need = {
        "start": "context",
        "turn": "turn",
        "end": "step",
        "started": "started",
        "call": "call",
    }[event]
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
