"""Durable turns: every completed Turn of a run is saved, so a run interrupted at turn N (a
crash, a deploy, SIGKILL) is continued from turn N-1 by ``SubAgent.resume(checkpoint)``.

A checkpoint sink is anything with ``save(step, run_id)``, or a plain callable taking the
``Step`` so far (``step.error is None and not step.ok`` while the run goes on). Two sinks are
built in: :class:`JsonlCheckpoint` (one JSON line per event, appended and flushed to disk) and
:class:`SqliteCheckpoint` (a table per database, one row per turn; the history store's database
file may be shared). Both are idempotent: saving the same turn twice keeps one copy.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ptc.step import FORMAT_VERSION, Step

if TYPE_CHECKING:
    from ptc.history.pgstore import PostgresStore


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


def _step_from(context: Mapping[str, Any], turns: list[Any], calls: int, usage: Any) -> Step:
    """The Step of a run in progress, from its saved parts (messages are rendered again from
    the turns: rendering is deterministic)."""
    return Step.from_dict(
        {
            "version": FORMAT_VERSION,
            "ok": False,
            "value": None,
            "error": None,
            "turns": turns,
            "calls": calls,
            "usage": usage,
            "context": context,
        }
    )


def _finished(step: Step) -> bool:
    return step.ok or step.error is not None


class JsonlCheckpoint:
    """Appends a run's events to a JSON-lines file: ``start`` (the run's context), one ``turn``
    line per completed turn (with the LLM requests and usage so far) and ``end``. Each line is
    flushed and fsynced before ``save`` returns, so what was saved survives a killed process."""

    def __init__(self, path: str | os.PathLike[str], *, fsync: bool = True) -> None:
        self.path = Path(path)
        self.fsync = fsync
        self._written: dict[str, int] = {}  # run id -> turns on file
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"JsonlCheckpoint({str(self.path)!r})"

    def _append(self, lines: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            if self.fsync:
                os.fsync(f.fileno())

    def save(self, step: Step, run_id: str) -> None:
        with self._lock:
            if run_id not in self._written:
                mine = [e for e in self._events() if e["run_id"] == run_id]
                self._written[run_id] = sum(e["event"] == "turn" for e in mine)
                if not any(e["event"] == "start" for e in mine):
                    self._written[run_id] = -1  # not started on file
            done = self._written[run_id]
            lines: list[dict[str, Any]] = []
            if done < 0:
                done = 0
                lines.append(
                    {"run_id": run_id, "event": "start", "context": step.context.to_dict()}
                )
            for turn in step.turns[done:]:
                lines.append(
                    {
                        "run_id": run_id,
                        "event": "turn",
                        "turn": turn.to_dict(),
                        "calls": len(step.messages),
                        "usage": step.usage.to_dict(),
                    }
                )
            if _finished(step):
                lines.append({"run_id": run_id, "event": "end", "step": step.to_dict()})
            if lines:
                self._append(lines)
            self._written[run_id] = len(step.turns)

    def _events(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        out = []
        with self.path.open(encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    break  # a line cut short by a crash: what came before it stands
        return out

    def runs(self) -> list[str]:
        """Run ids on file, in the order they started."""
        return [e["run_id"] for e in self._events() if e["event"] == "start"]

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        """The Step saved for ``run_id`` (default: the last run started), and its run id."""
        events = self._events()
        if run_id is None:
            starts = [e["run_id"] for e in events if e["event"] == "start"]
            if not starts:
                raise LookupError(f"{self.path}: no run has been saved here")
            run_id = starts[-1]
        mine = [e for e in events if e["run_id"] == run_id]
        start = next((e for e in mine if e["event"] == "start"), None)
        if start is None:
            raise LookupError(f"{self.path}: no run {run_id!r}")
        end = next((e for e in mine if e["event"] == "end"), None)
        if end is not None:
            return Step.from_dict(end["step"]), run_id
        turns = {e["turn"]["number"]: e for e in mine if e["event"] == "turn"}
        ordered = [turns[n] for n in sorted(turns)]
        if not ordered:
            return _step_from(start["context"], [], 0, {}), run_id
        last = ordered[-1]
        step = _step_from(
            start["context"], [e["turn"] for e in ordered], last["calls"], last["usage"]
        )
        return step, run_id


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
            return [r[0] for r in db.execute("SELECT run_id FROM ptc_runs ORDER BY rowid")]

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        with self._connect() as db:
            if run_id is None:
                row = db.execute(
                    "SELECT run_id FROM ptc_runs ORDER BY rowid DESC LIMIT 1"
                ).fetchone()
                if row is None:
                    raise LookupError(f"{self.path}: no run has been saved here")
                run_id = row[0]
            run = db.execute(
                "SELECT context, final FROM ptc_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if run is None:
                raise LookupError(f"{self.path}: no run {run_id!r}")
            if run[1] is not None:
                return Step.from_dict(json.loads(run[1])), run_id
            rows = db.execute(
                "SELECT turn, calls, usage FROM ptc_turns WHERE run_id = ? ORDER BY number",
                (run_id,),
            ).fetchall()
        context = json.loads(run[0])
        if not rows:
            return _step_from(context, [], 0, {}), run_id
        turns = [json.loads(r[0]) for r in rows]
        return _step_from(context, turns, rows[-1][1], json.loads(rows[-1][2])), run_id


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
        return [r[0] for r in self.store._query("SELECT run_id FROM ptc_runs ORDER BY seq", ())]

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        if run_id is None:
            rows = self.store._query("SELECT run_id FROM ptc_runs ORDER BY seq DESC LIMIT 1", ())
            if not rows:
                raise LookupError(f"{self.store!r}: no run has been saved here")
            run_id = str(rows[0][0])
        run = self.store._query("SELECT context, final FROM ptc_runs WHERE run_id = %s", (run_id,))
        if not run:
            raise LookupError(f"{self.store!r}: no run {run_id!r}")
        context, final = run[0]
        if final is not None:
            return Step.from_dict(json.loads(final)), run_id
        rows = self.store._query(
            "SELECT turn, calls, usage FROM ptc_turns WHERE run_id = %s ORDER BY number",
            (run_id,),
        )
        if not rows:
            return _step_from(json.loads(context), [], 0, {}), run_id
        turns = [json.loads(r[0]) for r in rows]
        return _step_from(json.loads(context), turns, rows[-1][1], json.loads(rows[-1][2])), run_id

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
