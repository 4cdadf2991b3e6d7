"""The full history store on PostgreSQL (issue 13): what :class:`HistoryStore` does on SQLite,
for agents that run as many workers.

psycopg 3 with a connection pool (``pip install 'ptc-runtime[postgres]'``). The schema lives
in one PostgreSQL schema (``schema=``, default ``ptc``) and is migrated on first use under an
advisory lock, so workers starting together migrate it once. Search has SQLite's semantics:
a case-insensitive substring match (``ILIKE``), served by ``pg_trgm`` GIN indexes, newest
matches first. Every operation is retried while the server is unreachable (a restart, a
dropped connection) for up to ``retry_timeout`` seconds; writes carry a key per message, so a
retried write never stores a message twice.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from .messages import Message
from .store import ROW_COLUMNS, StoredMessage, message_rows, stored_message

if TYPE_CHECKING:
    from ptc.checkpoint import PostgresCheckpoint

T = TypeVar("T")

SCHEMA_VERSION = 2

#: Migrations by version; each runs once, in one transaction, in the store's schema.
MIGRATIONS: tuple[tuple[int, tuple[str, ...]], ...] = (
    (
        1,
        (
            """CREATE TABLE messages (
                id BIGSERIAL PRIMARY KEY,
                agent_id TEXT NOT NULL DEFAULT '',
                run_id TEXT,
                role TEXT NOT NULL,
                content TEXT NOT NULL DEFAULT '',
                reasoning TEXT,
                source TEXT,
                sender_id TEXT,
                tool_call_id TEXT,
                created_at JSONB,
                stored_at DOUBLE PRECISION NOT NULL,
                raw TEXT NOT NULL)""",
            "CREATE INDEX messages_agent ON messages(agent_id, id)",
            "CREATE INDEX messages_source ON messages(source, id)",
        ),
    ),
    (
        2,
        (
            "ALTER TABLE messages ADD COLUMN msg_key TEXT",
            "CREATE UNIQUE INDEX messages_key ON messages(msg_key)",
            "CREATE INDEX messages_content_trgm ON messages USING gin (content gin_trgm_ops)",
            "CREATE INDEX messages_reasoning_trgm ON messages USING gin (reasoning gin_trgm_ops)",
            """CREATE TABLE ptc_runs (
                run_id TEXT PRIMARY KEY, context TEXT NOT NULL, final TEXT,
                started TIMESTAMPTZ NOT NULL DEFAULT now(), seq BIGSERIAL)""",
            """CREATE TABLE ptc_turns (
                run_id TEXT NOT NULL REFERENCES ptc_runs(run_id), number INTEGER NOT NULL,
                turn TEXT NOT NULL, calls INTEGER NOT NULL, usage TEXT NOT NULL,
                PRIMARY KEY (run_id, number))""",
        ),
    ),
)

_READ = (
    "m.id, m.agent_id, m.run_id, m.role, m.content, m.reasoning, m.source, "
    "m.sender_id, coalesce(m.created_at, to_jsonb(m.stored_at)), m.raw"
)


def _driver() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as e:  # an optional extra
        raise ImportError(
            "the PostgreSQL store needs psycopg 3: pip install 'ptc-runtime[postgres]'"
        ) from e
    return psycopg, psycopg_pool


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum() or name[0].isdigit():
        raise ValueError(f"schema must be a plain identifier (letters, digits, _), got {name!r}")
    return name


def _like(query: str) -> str:
    return "%" + query.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


class PostgresStore:
    """The history store on PostgreSQL: the operations of :class:`HistoryStore`.

    ``url`` is a libpq URL (``postgresql://user@host:5432/db``). Tables go in ``schema``
    (created if missing); the pool keeps ``min_size`` to ``max_size`` connections.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str = "ptc",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
        retry_timeout: float = 30.0,
    ) -> None:
        self.url = url
        self.schema = _ident(schema)
        self.min_size = min_size
        self.max_size = max_size
        self.timeout = timeout
        self.retry_timeout = retry_timeout
        self._pool: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PostgresStore(schema={self.schema!r})"

    # -- connections, retries and migrations ---------------------------------------------------
    def _get_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                _, psycopg_pool = _driver()
                pool = psycopg_pool.ConnectionPool(
                    self.url,
                    min_size=self.min_size,
                    max_size=self.max_size,
                    timeout=self.timeout,
                    open=False,
                    check=psycopg_pool.ConnectionPool.check_connection,
                    kwargs={"options": f"-c search_path={self.schema},public"},
                )
                pool.open(wait=False)
                self._pool = pool
                try:
                    self._retrying(self._migrate)
                except BaseException:
                    self._pool = None
                    pool.close()
                    raise
            return self._pool

    def _migrate(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (self.schema,))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {self.schema}")
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
            conn.execute("CREATE TABLE IF NOT EXISTS ptc_schema (version INTEGER NOT NULL)")
            row = conn.execute("SELECT max(version) FROM ptc_schema").fetchone()
            version = row[0] or 0
            if version > SCHEMA_VERSION:
                raise RuntimeError(
                    f"schema {self.schema!r} is at version {version}, newer than this ptc "
                    f"({SCHEMA_VERSION}): upgrade ptc-runtime"
                )
            for v, statements in MIGRATIONS:
                if v <= version:
                    continue
                for stmt in statements:
                    conn.execute(stmt)
                conn.execute("INSERT INTO ptc_schema (version) VALUES (%s)", (v,))

    def _retrying(self, op: Callable[[], T]) -> T:
        """Runs ``op``; a lost connection or an unreachable server is retried with backoff."""
        psycopg, psycopg_pool = _driver()
        deadline = time.monotonic() + self.retry_timeout
        delay = 0.05
        while True:
            try:
                return op()
            except (psycopg.OperationalError, psycopg_pool.PoolTimeout):
                if time.monotonic() + delay > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 1.0)

    @contextlib.contextmanager
    def connection(self) -> Iterator[Any]:
        """A pooled connection in the store's schema (for callers' own queries)."""
        with self._get_pool().connection() as conn:
            yield conn

    def _query(self, sql: str, params: Iterable[Any]) -> list[Any]:
        args = tuple(params)

        def run() -> list[Any]:
            with self.connection() as conn:
                return list(conn.execute(sql, args).fetchall())

        return self._retrying(run)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def checkpoint(self) -> PostgresCheckpoint:
        """A checkpoint sink for agent runs in this store (``ptc_runs``, ``ptc_turns``)."""
        from ptc.checkpoint import PostgresCheckpoint

        return PostgresCheckpoint(self)

    # -- writing -------------------------------------------------------------------------------
    def append(
        self,
        message: Message | Mapping[str, Any],
        *,
        agent_id: str = "",
        run_id: str | None = None,
        key: str | None = None,
    ) -> int | None:
        ids = self.append_many([message], agent_id=agent_id, run_id=run_id, key=key)
        return ids[0] if ids else None

    def append_many(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        agent_id: str = "",
        run_id: str | None = None,
        key: str | None = None,
    ) -> list[int]:
        """Store messages in one transaction; returns their ids (see
        :meth:`HistoryStore.append_many`: the same parsing, errors and ``key``)."""
        rows = message_rows(messages, agent_id, run_id, key)
        if not rows:
            return []
        params = [(*r[:8], json.dumps(r[8]) if r[8] is not None else None, *r[9:]) for r in rows]
        insert = (
            f"INSERT INTO messages ({ROW_COLUMNS}) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s) "
            "ON CONFLICT (msg_key) DO NOTHING RETURNING id"
        )

        def write() -> list[int]:
            ids: list[int] = []
            with self.connection() as conn, conn.transaction():
                for p in params:
                    row = conn.execute(insert, p).fetchone()
                    if row is None:  # stored by an earlier try of the same write
                        row = conn.execute(
                            "SELECT id FROM messages WHERE msg_key = %s", (p[-1],)
                        ).fetchone()
                    ids.append(int(row[0]))
            return ids

        return self._retrying(write)

    # -- reading -------------------------------------------------------------------------------
    def _rows(self, sql: str, params: Iterable[Any]) -> list[StoredMessage]:
        return [stored_message(r) for r in self._query(sql, params)]

    def count(self, agent_id: str | None = None) -> int:
        if agent_id is None:
            return int(self._query("SELECT count(*) FROM messages", ())[0][0])
        return int(
            self._query("SELECT count(*) FROM messages WHERE agent_id = %s", (agent_id,))[0][0]
        )

    def recent(self, agent_id: str = "", limit: int = 20) -> list[Message]:
        """The newest ``limit`` messages of an agent, oldest first (seed 002 scanning window)."""
        rows = self._rows(
            f"SELECT {_READ} FROM messages m WHERE m.agent_id = %s ORDER BY m.id DESC LIMIT %s",
            (agent_id, max(0, limit)),
        )
        return [r.message for r in reversed(rows)]

    def system_message(self, agent_id: str = "") -> Message | None:
        """The first system message stored for an agent (its system prompt)."""
        rows = self._rows(
            f"SELECT {_READ} FROM messages m WHERE m.agent_id = %s AND m.role = 'system' "
            "ORDER BY m.id LIMIT 1",
            (agent_id,),
        )
        return rows[0].message if rows else None

    def all(self, agent_id: str | None = None) -> list[StoredMessage]:
        if agent_id is None:
            return self._rows(f"SELECT {_READ} FROM messages m ORDER BY m.id", ())
        return self._rows(
            f"SELECT {_READ} FROM messages m WHERE m.agent_id = %s ORDER BY m.id", (agent_id,)
        )

    def _search(
        self, column: str, query: str, limit: int, where: str, params: list[Any]
    ) -> list[StoredMessage]:
        limit = max(0, int(limit))
        if limit == 0:
            return []
        rows = self._rows(
            f"SELECT {_READ} FROM messages m WHERE coalesce(m.{column}, '') ILIKE %s {where} "
            "ORDER BY m.id DESC LIMIT %s",
            [_like(query), *params, limit],
        )
        rows.reverse()  # newest N matches, returned oldest first
        return rows

    def search_messages(
        self, query: str, limit: int = 20, *, agent_id: str | None = None
    ) -> list[StoredMessage]:
        """Messages whose content contains ``query`` (seed 002: zoea_search_messages)."""
        where, params = ("AND m.agent_id = %s", [agent_id]) if agent_id is not None else ("", [])
        return self._search("content", query, limit, where, params)

    def search_reasoning(
        self, query: str, limit: int = 20, *, agent_id: str | None = None
    ) -> list[StoredMessage]:
        """Messages whose reasoning contains ``query`` (seed 002: zoea_search_reasoning)."""
        where = "AND m.reasoning IS NOT NULL"
        params: list[Any] = []
        if agent_id is not None:
            where += " AND m.agent_id = %s"
            params.append(agent_id)
        return self._search("reasoning", query, limit, where, params)

    def search_broadcasts(self, query: str, limit: int = 20) -> list[StoredMessage]:
        """Broadcasts of every agent containing ``query``, each once (its first copy)."""
        where = (
            "AND m.source = 'broadcast' AND m.id IN (SELECT min(b.id) FROM messages b "
            "WHERE b.source = 'broadcast' GROUP BY coalesce(b.sender_id, ''), b.content, "
            "b.created_at)"
        )
        return self._search("content", query, limit, where, [])
