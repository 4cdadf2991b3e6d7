"""The full history store (seed 002): every message kept in SQLite and searchable.

Standard-library ``sqlite3`` with WAL, one transaction per append batch, and an FTS5 index
(trigram tokenizer when available, so a query matches any substring of three or more
characters, case-insensitively). Several processes may append at once: writers take the
database lock with ``BEGIN IMMEDIATE`` and wait up to ``timeout`` seconds for it. A
process killed mid-write loses only its uncommitted batch.

The rows both backends store are in ``rows``; the PostgreSQL twin is ``pgstore``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from .messages import Message
from .rows import (
    ROW_COLUMNS,
    AppendOne,
    SearchKinds,
    SearchRequest,
    StoredMessage,
    check_limit,
    check_query,
    check_seconds,
    hit_record,
    search_deadline,
    stored_message,
    timed_out,
    written_ids,
)

# the search tools lived here (their old import path); Store extends their protocol
from .tools import TOOL_TIMEOUT as TOOL_TIMEOUT
from .tools import HistoryTool as HistoryTool
from .tools import Searchable
from .tools import search_tools as search_tools

SCHEMA_VERSION = 3

# Version 1: the messages table, its indexes and full-text index.
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        agent_id TEXT NOT NULL DEFAULT '',
        run_id TEXT,
        role TEXT NOT NULL,
        content TEXT NOT NULL DEFAULT '',
        reasoning TEXT,
        source TEXT,
        sender_id TEXT,
        tool_call_id TEXT,
        created_at,
        stored_at REAL NOT NULL,
        raw TEXT NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS messages_agent ON messages(agent_id, id)",
    "CREATE INDEX IF NOT EXISTS messages_source ON messages(source, id)",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content, reasoning)
        VALUES (new.id, new.content, coalesce(new.reasoning, ''));
    END""",
    """CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
        INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
        VALUES ('delete', old.id, old.content, coalesce(old.reasoning, ''));
    END""",
)


# Version 2: idempotent writes (a key per stored message) and agent runs next to the
# messages (the checkpoint tables of ptc.checkpoint, and leases for resuming a run).
_SCHEMA_V2 = (
    "ALTER TABLE messages ADD COLUMN msg_key TEXT",
    "CREATE UNIQUE INDEX IF NOT EXISTS messages_key ON messages(msg_key)",
    """CREATE TABLE IF NOT EXISTS ptc_runs (
        run_id TEXT PRIMARY KEY, context TEXT NOT NULL, final TEXT,
        started REAL DEFAULT (julianday('now')))""",
    """CREATE TABLE IF NOT EXISTS ptc_turns (
        run_id TEXT NOT NULL REFERENCES ptc_runs(run_id), number INTEGER NOT NULL,
        turn TEXT NOT NULL, calls INTEGER NOT NULL, usage TEXT NOT NULL,
        PRIMARY KEY (run_id, number))""",
    """CREATE TABLE IF NOT EXISTS ptc_leases (
        run_id TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL)""",
)


# Version 3: a key names a batch of one agent's messages (two agents may use the same key).
_SCHEMA_V3 = (
    "DROP INDEX IF EXISTS messages_key",
    "CREATE UNIQUE INDEX IF NOT EXISTS messages_agent_key ON messages(agent_id, msg_key)",
)


def _fts_tokenizer(conn: sqlite3.Connection) -> str:
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.ptc_probe USING fts5(x, tokenize='trigram')")
        conn.execute("DROP TABLE temp.ptc_probe")
        return "trigram"
    except sqlite3.OperationalError:  # SQLite < 3.34: word tokens instead of substrings
        return "unicode61"


#: The longest lock wait SQLite takes (``sqlite3_busy_timeout`` counts ms in a C int).
_MAX_BUSY_SECONDS = (2**31 - 1) / 1000

#: SQLite virtual-machine steps between two looks at a search's deadline.
_PROGRESS_STEPS = 1_000


def _retry_locked(op: Callable[[], object], timeout: float) -> None:
    """Runs ``op``, retrying while SQLite reports the database locked, up to ``timeout``."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            op()
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def _scope(kind: str, agent_id: str | None) -> tuple[str, str, list[Any]]:
    """The column a search ``kind`` matches, and its condition (``AND ...``) and parameters."""
    if kind == "broadcasts":
        # a broadcast stored by each receiving agent is returned once (its first copy)
        where = (
            "AND m.source = 'broadcast' AND m.id IN (SELECT min(b.id) FROM messages b "
            "WHERE b.source = 'broadcast' GROUP BY coalesce(b.sender_id, ''), b.content, "
            "b.created_at)"
        )
        return "content", where, []
    column = "reasoning" if kind == "reasoning" else "content"
    where = "AND m.reasoning IS NOT NULL" if kind == "reasoning" else ""
    if agent_id is None:
        return column, where, []
    return column, f"{where} AND m.agent_id = ?", [agent_id]


def _hit_columns(max_chars: int) -> str:
    """The columns of a search tool's records (see :func:`~ptc.history.rows.hit_record`): each
    text as its first ``max_chars`` characters and its length."""
    n = int(max_chars)
    created = "coalesce(m.created_at, m.stored_at)"
    text = "m.agent_id", "m.source", "m.sender_id", "m.content", None, "m.reasoning"
    columns = ["m.id", "m.role"]
    for e in text:
        if e is None:  # created_at: a number, or text
            columns.append(
                f"CASE WHEN typeof({created}) = 'text' THEN substr({created}, 1, {n}) "
                f"ELSE {created} END"
            )
            columns.append(f"CASE WHEN typeof({created}) = 'text' THEN length({created}) END")
        else:
            columns += [f"substr({e}, 1, {n})", f"length({e})"]
    return ", ".join(columns)


class HistoryStore(AppendOne, SearchKinds):
    """Append-only message log with full-text search, created on first use at ``path``."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        path = os.fspath(path)
        self.path = path if path == ":memory:" else os.path.expanduser(path)
        #: how long a write waits for another process's lock (seconds, 0 or more)
        self.timeout = check_seconds(timeout, "timeout")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self.tokenizer = "trigram"

    def checkpoint(self) -> Any:
        """A checkpoint sink for agent runs in this store's database file (``ptc_runs`` and
        ``ptc_turns`` tables next to the messages): ``SubAgent(checkpoint=store.checkpoint())``."""
        from ptc.checkpoint import SqliteCheckpoint

        if self.path == ":memory:":
            raise ValueError("an in-memory store cannot hold checkpoints: give it a file path")
        return SqliteCheckpoint(self.path, timeout=self.timeout)

    # -- connection -----------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        if self.path != ":memory:":
            parent = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(parent, exist_ok=True)
        # SQLite waits at most 2^31 - 1 ms for a lock (about 24.8 days): a longer timeout is that
        wait = min(self.timeout, _MAX_BUSY_SECONDS)
        conn = sqlite3.connect(
            self.path, timeout=wait, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {int(wait * 1000)}")
        if self.path != ":memory:":
            # Switching to WAL needs a moment of exclusive access; when several processes open
            # a new database at once, SQLite can answer "locked" without waiting, so retry.
            _retry_locked(lambda: conn.execute("PRAGMA journal_mode = WAL"), self.timeout)
        # In WAL mode NORMAL keeps every committed transaction across a process crash.
        conn.execute("PRAGMA synchronous = NORMAL")
        _retry_locked(lambda: conn.execute("BEGIN IMMEDIATE"), self.timeout)
        try:
            exists = conn.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'messages_fts'"
            ).fetchone()
            if exists is None:
                self.tokenizer = _fts_tokenizer(conn)
                conn.execute(
                    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, reasoning, "
                    f"content='messages', content_rowid='id', tokenize='{self.tokenizer}')"
                )
            else:
                self.tokenizer = "trigram" if "trigram" in exists[0] else "unicode61"
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"{self.path}: the store is at schema version {version}, newer than this "
                    f"ptc ({SCHEMA_VERSION}): upgrade ptc-runtime"
                )
            for stmt in _SCHEMA:
                conn.execute(stmt)
            if version < 2:
                columns = {r[1] for r in conn.execute("PRAGMA table_info(messages)")}
                for stmt in _SCHEMA_V2:
                    if "ADD COLUMN msg_key" in stmt and "msg_key" in columns:
                        continue
                    conn.execute(stmt)
            if version < 3:
                for stmt in _SCHEMA_V3:
                    conn.execute(stmt)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            conn.close()
            raise
        self._conn = conn
        return conn

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- writing ----------------------------------------------------------------------------
    def _write_rows(self, rows: list[tuple[Any, ...]]) -> list[int]:
        with self._lock:
            conn = self._connect()

            def insert(row: tuple[Any, ...]) -> int | None:
                cur = conn.execute(
                    f"INSERT INTO messages ({ROW_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (agent_id, msg_key) DO NOTHING",
                    row,
                )
                return int(cur.lastrowid or 0) if cur.rowcount == 1 else None

            def stored(agent_id: str, keys: list[str]) -> dict[str, tuple[int, str]]:
                found = conn.execute(
                    "SELECT msg_key, id, raw FROM messages WHERE agent_id = ? AND "
                    f"msg_key IN ({', '.join('?' * len(keys))})",
                    (agent_id, *keys),
                )
                return {r[0]: (int(r[1]), r[2]) for r in found}

            conn.execute("BEGIN IMMEDIATE")
            try:
                ids = written_ids(rows, insert, stored)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return ids

    # -- reading ----------------------------------------------------------------------------
    _COLUMNS = (
        "m.id, m.agent_id, m.run_id, m.role, m.content, m.reasoning, m.source, "
        "m.sender_id, coalesce(m.created_at, m.stored_at), m.raw"
    )

    def _rows(self, sql: str, params: Iterable[Any]) -> list[StoredMessage]:
        with self._lock:
            rows = self._connect().execute(sql, tuple(params)).fetchall()
        return [stored_message(r) for r in rows]

    def count(self, agent_id: str | None = None) -> int:
        with self._lock:
            conn = self._connect()
            if agent_id is None:
                return int(conn.execute("SELECT count(*) FROM messages").fetchone()[0])
            return int(
                conn.execute(
                    "SELECT count(*) FROM messages WHERE agent_id = ?", (agent_id,)
                ).fetchone()[0]
            )

    def recent(self, agent_id: str = "", limit: int = 20) -> list[Message]:
        """The newest ``limit`` messages of an agent, oldest first (seed 002 scanning window).
        ``limit`` is an int of 0 or more (see :meth:`search_messages`)."""
        rows = self._rows(
            f"SELECT {self._COLUMNS} FROM messages m WHERE m.agent_id = ? "
            "ORDER BY m.id DESC LIMIT ?",
            (agent_id, check_limit(limit)),
        )
        return [r.message for r in reversed(rows)]

    def system_message(self, agent_id: str = "") -> Message | None:
        """The first system message stored for an agent (its system prompt)."""
        rows = self._rows(
            f"SELECT {self._COLUMNS} FROM messages m WHERE m.agent_id = ? AND m.role = 'system' "
            "ORDER BY m.id LIMIT 1",
            (agent_id,),
        )
        return rows[0].message if rows else None

    def all(self, agent_id: str | None = None) -> list[StoredMessage]:
        if agent_id is None:
            return self._rows(f"SELECT {self._COLUMNS} FROM messages m ORDER BY m.id", ())
        return self._rows(
            f"SELECT {self._COLUMNS} FROM messages m WHERE m.agent_id = ? ORDER BY m.id",
            (agent_id,),
        )

    def _search(
        self,
        column: str,
        where: str,
        params: list[Any],
        query: str,
        limit: int,
        timeout: float | None,
        read: str = _COLUMNS,
        convert: Callable[[Any], Any] = stored_message,
    ) -> list[Any]:
        """The newest ``limit`` rows matching ``query`` in ``column``, oldest first: the
        columns ``read``, each row made by ``convert`` (StoredMessages by default)."""
        text = check_query(query)
        limit = check_limit(limit)
        deadline = search_deadline(timeout)
        if limit == 0:
            return []
        use_fts = bool(text) and (self.tokenizer != "trigram" or len(text) >= 3)
        if use_fts:
            # The full-text index first: CROSS JOIN keeps the FTS table the outer loop, which
            # yields matches newest first (ORDER BY its rowid), each then checked against the
            # scope; a plain JOIN lets the planner walk the agent's rows and run the full-text
            # match once per row (20 s at 20,000 messages).
            phrase = '"' + text.replace('"', '""') + '"'
            sql = (
                f"SELECT {read} FROM messages_fts f CROSS JOIN messages m "
                f"ON m.id = f.rowid WHERE messages_fts MATCH ? {where} "
                "ORDER BY f.rowid DESC LIMIT ?"
            )
            args = [f"{column} : {phrase}", *params, limit]
        else:
            # Trigram needs three characters; shorter queries scan with instr().
            sql = (
                f"SELECT {read} FROM messages m "
                f"WHERE instr(lower(coalesce(m.{column}, '')), lower(?)) > 0 {where} "
                "ORDER BY m.id DESC LIMIT ?"
            )
            args = [text, *params, limit]
        rows = self._timed_rows(sql, args, deadline, f"search of {column}", timeout)
        rows.reverse()  # newest N matches, returned oldest first
        return [convert(r) for r in rows]

    def _timed_rows(
        self,
        sql: str,
        args: list[Any],
        deadline: float | None,
        what: str,
        timeout: float | None,
    ) -> list[Any]:
        """The rows of a query that must end by ``deadline`` (``time.monotonic()``), waiting for
        the store's lock included: past it, ``SearchTimeout``."""
        if deadline is None:
            with self._lock:
                return self._connect().execute(sql, tuple(args)).fetchall()
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise timed_out(what, timeout)
        try:
            conn = self._connect()
            # SQLite calls this every few thousand steps; True stops the statement
            conn.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_STEPS)
            try:
                found = conn.execute(sql, tuple(args)).fetchall()
            except sqlite3.OperationalError as e:
                if str(e) == "interrupted" and time.monotonic() > deadline:
                    raise timed_out(what, timeout) from None
                raise
            finally:
                conn.set_progress_handler(None, 0)
        finally:
            self._lock.release()
        return found

    def _find(self, search: SearchRequest) -> list[Any]:
        column, where, params = _scope(search.kind, search.agent_id)
        args = (column, where, params, search.query, search.limit, search.timeout)
        max_chars = search.max_chars
        if max_chars is None:
            return self._search(*args)
        return self._search(
            *args, read=_hit_columns(max_chars), convert=lambda r: hit_record(r, max_chars)
        )


# -- choosing a backend by URL ----------------------------------------------------------------


@runtime_checkable
class Store(Searchable, Protocol):
    """What both backends offer (:class:`HistoryStore` on SQLite, ``PostgresStore``): the
    searches of :class:`~ptc.history.tools.Searchable`, and the following."""

    def append_many(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        agent_id: str = "",
        run_id: str | None = None,
        key: str | None = None,
    ) -> list[int]: ...

    def recent(self, agent_id: str = "", limit: int = 20) -> list[Message]: ...

    def system_message(self, agent_id: str = "") -> Message | None: ...

    def checkpoint(self) -> Any: ...

    def close(self) -> None: ...


def open_store(url: str | os.PathLike[str], **options: Any) -> Any:
    """The store a URL names.

    ``sqlite:///history.db`` (relative; ``sqlite:////abs/path.db`` absolute; a plain path;
    ``sqlite:///:memory:``) gives a :class:`HistoryStore`; ``postgresql://...`` (or
    ``postgres://``) a ``PostgresStore``. ``options`` go to the store's constructor."""
    text = os.fspath(url)
    if text.startswith(("postgresql://", "postgres://")):
        from .pgstore import PostgresStore

        return PostgresStore(text, **options)
    if text.startswith("sqlite://"):
        # as SQLAlchemy reads them: sqlite:///rel.db is relative, sqlite:////abs.db absolute
        path = text[len("sqlite://") :]
        if path.startswith("/"):
            path = path[1:]
        if not path:
            raise ValueError(f"{text!r}: a SQLite URL needs a path (sqlite:///history.db)")
        return HistoryStore(path, **options)
    if "://" in text:
        scheme = text.split("://", 1)[0]
        raise ValueError(
            f"unknown store URL scheme {scheme!r}: use sqlite:///path or postgresql://..."
        )
    return HistoryStore(text, **options)
