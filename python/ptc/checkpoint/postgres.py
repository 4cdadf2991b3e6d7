"""The PostgreSQL checkpoint: a run's turns in a :class:`~ptc.history.pgstore.PostgresStore`, so
any worker can resume it, and an advisory lock per run so only one worker continues it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol, TypeVar

from ptc import _records
from ptc.step import Step

from .base import finished, looked_up_id, no_run, stored_id
from .errors import run_locked
from .tables import final_row, from_rows, run_id_of, run_ids, with_inflight

T = TypeVar("T")


class PostgresStoreLike(Protocol):
    """What the checkpoint uses of a :class:`~ptc.history.pgstore.PostgresStore` (which makes
    one with ``store.checkpoint()``, so this module names none of it): the server and schema,
    pooled connections, and an operation retried while the server is unreachable."""

    url: str
    schema: str
    timeout: float

    def connection(self) -> contextlib.AbstractContextManager[Any]: ...
    def _retrying(self, op: Callable[[], T], until: float | None = None) -> T: ...
    def _query(self, sql: str, params: Iterable[Any]) -> list[Any]: ...
    def _get_pool(self) -> Any: ...


class PostgresCheckpoint:
    """Saves a run's turns in a :class:`~ptc.history.pgstore.PostgresStore` (``ptc_runs``,
    ``ptc_turns``): a run started on one worker can be resumed on any other. Saves are
    idempotent per (run, turn) and retried while the server is unreachable; :meth:`lock`
    holds a PostgreSQL advisory lock on the run, freed when the holder's connection ends."""

    def __init__(self, store: PostgresStoreLike) -> None:
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
            raise run_locked(run_id, "a session holding its advisory lock")
        return conn

    def save(self, step: Step, run_id: str) -> None:
        stored_id(run_id, repr(self.store), nul=False)  # PostgreSQL text holds no NUL
        self._still_held(run_id)
        context = _records.json_text(step.context.to_dict())
        usage = _records.json_text(step.usage.to_dict())
        done = self._saved.get(run_id, 0)  # earlier turns are stored: send only the new ones
        turns = [
            (
                run_id,
                t.number,
                _records.json_text(t.to_dict()),
                len(step.messages),
                usage,
            )
            for t in step.turns[done:]
        ]
        final = _records.json_text(step.to_dict()) if finished(step) else None

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
        return run_ids(repr(self.store), rows)

    def load(self, run_id: str | None = None) -> tuple[Step, str]:
        where = repr(self.store)
        if run_id is not None:
            looked_up_id(run_id, where, nul=False)
        if run_id is None:
            rows = self.store._query("SELECT run_id FROM ptc_runs ORDER BY seq DESC LIMIT 1", ())
            if not rows:
                raise LookupError(f"{where}: no run has been saved here")
            run_id = run_id_of(where, rows[0][0])
        run = self.store._query("SELECT context, final FROM ptc_runs WHERE run_id = %s", (run_id,))
        if not run:
            raise no_run(where, run_id)
        context, final = run[0]
        last = self.store._query("SELECT max(number) FROM ptc_turns WHERE run_id = %s", (run_id,))[
            0
        ][0]
        step = final_row(where, run_id, final, last)
        if step is None:
            rows = self.store._query(
                "SELECT number, turn, calls, usage FROM ptc_turns WHERE run_id = %s "
                "ORDER BY number",
                (run_id,),
            )
            step = from_rows(where, run_id, context, rows)
        inflight = self.store._query(
            "SELECT turn, call_id, record FROM ptc_calls WHERE run_id = %s AND turn = %s",
            (run_id, len(step.turns) + 1),
        )
        return with_inflight(where, run_id, step, inflight), run_id

    def save_started(self, run_id: str, record: dict[str, Any]) -> None:
        """Saves a turn's program before it runs (see :mod:`ptc.checkpoint.inflight`)."""
        self._save_inflight(run_id, record["number"], "", record)

    def save_call(self, run_id: str, record: dict[str, Any]) -> None:
        """Saves a tool call as it starts, and again as it ends (the same row)."""
        self._save_inflight(run_id, record["turn"], record["id"], record)

    def _save_inflight(self, run_id: str, turn: int, call_id: str, record: Any) -> None:
        stored_id(run_id, repr(self.store), nul=False)
        text = _records.json_text(record)

        def write() -> None:
            with self.store.connection() as conn:
                conn.execute(
                    "INSERT INTO ptc_calls (run_id, turn, call_id, record) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (run_id, turn, call_id) "
                    "DO UPDATE SET record = excluded.record",
                    (run_id, turn, call_id, text),
                )

        self.store._retrying(write)

    @contextlib.contextmanager
    def lock(self, run_id: str) -> Iterator[None]:
        """Hold the run while it goes on; another holder raises :class:`RunLockedError`.

        The lock is a session advisory lock on a connection of its own (outside the store's
        pool, which the saves of every run share): a worker that dies frees it. If the holding
        session is lost while the run goes on, the next save takes the lock again (or
        raises :class:`RunLockedError` when another worker took the run meanwhile)."""
        looked_up_id(run_id, repr(self.store), nul=False)
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
