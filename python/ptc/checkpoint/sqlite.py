"""The SQLite checkpoint: a run's turns in tables of a database file (the history store's may
be shared), and a lease per run so only one worker continues it."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

from ptc import _records
from ptc.step import Step

from .base import finished, looked_up_id, no_run, stored_id
from .errors import CheckpointError, run_locked
from .tables import final_row, from_rows, run_id_of, run_ids, with_inflight

#: How long a SQLite lease on a run lasts without a save renewing it (a crashed worker's
#: lease on another machine lapses after this; on the same machine a dead pid frees it).
LEASE_SECONDS = 600.0

logger = logging.getLogger("ptc")


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


def _lease_problem(owner: object, expires: object) -> str | None:
    """What is wrong with a lease row's owner and expiry, if anything."""
    if (
        isinstance(expires, bool)
        or not isinstance(expires, int | float)
        or not math.isfinite(expires)
    ):
        got = _records.describe(expires)
        return f"ptc_leases.expires: expected a time (seconds since 1970), got {got}"
    if not isinstance(owner, str):
        return f"ptc_leases.owner: expected text, got {_records.describe(owner)}"
    return None


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
    CREATE TABLE IF NOT EXISTS ptc_calls (
        run_id TEXT NOT NULL, turn INTEGER NOT NULL, call_id TEXT NOT NULL,
        record TEXT NOT NULL, PRIMARY KEY (run_id, turn, call_id));
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = str(path)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._leases: dict[str, str] = {}  # run id -> our owner tag, while we hold it
        self._saved: dict[str, int] = {}  # run id -> turns known to be stored
        self._calls_db: sqlite3.Connection | None = None
        with self._connect() as db:
            db.executescript(self.SCHEMA)

    def __repr__(self) -> str:
        return f"SqliteCheckpoint({self.path!r})"

    def close(self) -> None:
        """Closes the connection kept for tool-call records (reopened when next needed)."""
        with self._lock:
            if self._calls_db is not None:
                self._calls_db.close()
                self._calls_db = None

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.timeout)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        return db

    def save(self, step: Step, run_id: str) -> None:
        stored_id(run_id, self.path)
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
                    raise run_locked(run_id, row[0] if row else "a worker that has finished it")
            db.execute(
                "INSERT OR IGNORE INTO ptc_runs (run_id, context) VALUES (?, ?)",
                (run_id, _records.json_text(step.context.to_dict())),
            )
            usage = _records.json_text(step.usage.to_dict())
            db.executemany(
                "INSERT OR IGNORE INTO ptc_turns (run_id, number, turn, calls, usage)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        run_id,
                        t.number,
                        _records.json_text(t.to_dict()),
                        len(step.messages),
                        usage,
                    )
                    # earlier turns are stored: send only the new ones
                    for t in step.turns[self._saved.get(run_id, 0) :]
                ],
            )
            if finished(step):
                db.execute(
                    "UPDATE ptc_runs SET final = ? WHERE run_id = ?",
                    (_records.json_text(step.to_dict()), run_id),
                )
        self._saved[run_id] = len(step.turns)

    def save_started(self, run_id: str, record: dict[str, Any]) -> None:
        """Saves a turn's program before it runs (see :mod:`ptc.checkpoint.inflight`)."""
        self._save_inflight(run_id, record["number"], "", record)

    def save_call(self, run_id: str, record: dict[str, Any]) -> None:
        """Saves a tool call as it starts, and again as it ends (the same row)."""
        self._save_inflight(run_id, record["turn"], record["id"], record)

    def _save_inflight(self, run_id: str, turn: int, call_id: str, record: Any) -> None:
        stored_id(run_id, self.path)
        with self._lock:
            if self._calls_db is None:
                # one connection kept for these small, frequent writes; committed without a
                # sync of its own (WAL, synchronous=NORMAL): a record outlives the process
                # (what a call cut short needs), not the machine
                self._calls_db = sqlite3.connect(
                    self.path, timeout=self.timeout, check_same_thread=False
                )
                self._calls_db.execute("PRAGMA journal_mode=WAL")
                self._calls_db.execute("PRAGMA synchronous=NORMAL")
            with self._calls_db as db:
                db.execute(
                    "INSERT INTO ptc_calls (run_id, turn, call_id, record) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (run_id, turn, call_id) DO UPDATE SET record = excluded.record",
                    (run_id, turn, call_id, _records.json_text(record)),
                )

    @contextlib.contextmanager
    def lock(self, run_id: str) -> Iterator[None]:
        """Hold the run while it goes on; another holder raises :class:`RunLockedError`.

        A lease row: renewed by every save, freed on exit, taken over when its holder's
        process is gone (same machine) or it expired (:data:`LEASE_SECONDS`)."""
        looked_up_id(run_id, self.path)
        owner = _owner()
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            row = db.execute(
                "SELECT owner, expires FROM ptc_leases WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is not None and self._held(run_id, row[0], row[1]):
                db.execute("ROLLBACK")
                raise run_locked(run_id, row[0])
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

    def _held(self, run_id: str, owner: object, expires: object) -> bool:
        """Whether a lease row still holds its run. A row ptc cannot have written (a hand-edited
        or foreign database) holds nothing: no worker renews it, so it is taken over, with a
        warning naming it, rather than keeping the run from being resumed for good."""
        problem = _lease_problem(owner, expires)
        if problem is not None:
            err = CheckpointError(self.path, problem, run_id=run_id, row="its ptc_leases row")
            logger.warning("%s (taken as lapsed)", err)
            return False
        assert isinstance(owner, str) and isinstance(expires, int | float)
        return expires > time.time() and _owner_alive(owner)

    def runs(self) -> list[str]:
        with self._connect() as db:
            rows = db.execute("SELECT run_id FROM ptc_runs ORDER BY rowid").fetchall()
        return run_ids(self.path, rows)

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        if run_id is not None:
            looked_up_id(run_id, self.path)
        with self._connect() as db:
            if run_id is None:
                row = db.execute(
                    "SELECT run_id FROM ptc_runs ORDER BY rowid DESC LIMIT 1"
                ).fetchone()
                if row is None:
                    raise LookupError(f"{self.path}: no run has been saved here")
                run_id = run_id_of(self.path, row[0])
            run = db.execute(
                "SELECT context, final FROM ptc_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if run is None:
                raise no_run(self.path, run_id)
            query = "SELECT number, turn, calls, usage FROM ptc_turns WHERE run_id = ?"
            last = db.execute("SELECT max(number) FROM ptc_turns WHERE run_id = ?", (run_id,))
            step = final_row(self.path, run_id, run[1], last.fetchone()[0])
            if step is None:
                rows = db.execute(query + " ORDER BY number", (run_id,)).fetchall()
                step = from_rows(self.path, run_id, run[0], rows)
            inflight = db.execute(
                "SELECT turn, call_id, record FROM ptc_calls WHERE run_id = ? AND turn = ?",
                (run_id, len(step.turns) + 1),
            ).fetchall()
        return with_inflight(self.path, run_id, step, inflight), run_id
