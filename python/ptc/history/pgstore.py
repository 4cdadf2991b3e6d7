"""The full history store on PostgreSQL (issue 13): what :class:`HistoryStore` does on SQLite,
for agents that run as many workers.

psycopg 3 with a connection pool (``pip install 'ptc-runtime[postgres]'``; from a clone:
``pip install '.[postgres]'``). The schema lives
in one PostgreSQL schema (``schema=``, default ``ptc``) and is migrated on first use under an
advisory lock, so workers starting together migrate it once. Search has SQLite's semantics:
a case-insensitive substring match (``ILIKE``), served by ``pg_trgm`` GIN indexes, newest
matches first. Every operation is retried while the server is unreachable (a restart, a
dropped connection) for up to ``retry_timeout`` seconds; writes carry a key per message, so a
retried write never stores a message twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from . import _pgsql as pgsql
from ._checks import describe
from .messages import Message
from .rows import (
    AppendOne,
    SearchKinds,
    SearchRequest,
    StoredMessage,
    check_seconds,
    hit_record,
    message_rows,
    replay_keys,
    replayed_ids,
    search_deadline,
    stored_message,
    timed_out,
    written_ids,
)

if TYPE_CHECKING:
    from ptc.checkpoint import PostgresCheckpoint

T = TypeVar("T")


def _driver() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as e:  # an optional extra
        raise ImportError(
            "the PostgreSQL store needs psycopg 3: pip install 'ptc-runtime[postgres]' (from a"
            " clone of its repository, at its root: pip install '.[postgres]')"
        ) from e
    return psycopg, psycopg_pool


# Connection failures have SQLSTATE class 08 (or none: the client lost the socket); 57P01-03
# are the server shutting down or starting; 40001/40P01 ask for the transaction to be retried.
_TRANSIENT = ("57P01", "57P02", "57P03", "40001", "40P01")


def _transient(e: BaseException) -> bool:
    state = getattr(e, "sqlstate", None)
    return state is None or state.startswith("08") or state in _TRANSIENT


def _retried() -> tuple[type[BaseException], ...]:
    """The errors an operation is retried after (when :func:`_transient`): the driver's
    operational errors, and no pooled connection free in time."""
    psycopg, psycopg_pool = _driver()
    return (psycopg.OperationalError, psycopg_pool.PoolTimeout)


class _Backoff:
    """The waits between an operation's attempts, doubling from 0.05 s to 1 s, for as long as
    its errors are transient and the next attempt comes before ``deadline``."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.delay = 0.05

    def wait_after(self, e: BaseException) -> float:
        """How long to wait before trying again after ``e``; ``e`` is raised to give up."""
        if not _transient(e) or time.monotonic() + self.delay > self.deadline:
            raise e
        wait, self.delay = self.delay, min(self.delay * 2, 1.0)
        return wait


def _time_left(deadline: float, what: str, timeout: Any) -> float:
    """The seconds a search has left before ``deadline``; none left is its timeout."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise timed_out(what, timeout)
    return left


#: The longest wait for a pooled connection: the pool's clock overflows past about 10^9 s.
_MAX_POOL_WAIT = 365 * 86_400.0


def _size(value: Any, what: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, got {describe(value)}")
    if value < least:
        raise ValueError(f"{what} must be {least} or more, got {value}")
    return value


def _searched(what: str, timeout: Any, deadline: float | None, e: BaseException) -> BaseException:
    """The error to raise for ``e``, raised by a search with a ``deadline``: a statement cancelled
    by the search's ``statement_timeout`` (57014), or no pooled connection free in time, is the
    search's timeout."""
    if deadline is None:
        return e
    if getattr(e, "sqlstate", None) == "57014" or time.monotonic() >= deadline:
        return timed_out(what, timeout)
    return e


class _Options:
    """What both stores are opened with, and how their pools are made."""

    def __init__(
        self,
        url: str,
        *,
        schema: str = "ptc",
        min_size: int = 1,
        max_size: int = 8,
        timeout: float = 30.0,
        retry_timeout: float = 30.0,
        search: str = "substring",
        search_config: str = "simple",
    ) -> None:
        min_size = _size(min_size, "min_size", 0)
        max_size = _size(max_size, "max_size", max(1, min_size))
        timeout = check_seconds(timeout, "timeout")
        retry_timeout = check_seconds(retry_timeout, "retry_timeout")
        if search not in pgsql.SEARCH_MODES:
            raise ValueError(f"search must be 'substring' or 'words', got {search!r}")
        if not isinstance(search_config, str) or pgsql.CONFIG.fullmatch(search_config) is None:
            raise ValueError(
                "search_config must name a text search configuration ('simple', 'english', "
                f"...), got {search_config!r}"
            )
        self.url = url
        self.schema = pgsql.ident(schema)
        self.search = search
        # the text search configuration of search="words" (None: substring search)
        self._words = search_config if search == "words" else None
        self.min_size = min_size
        self.max_size = max_size
        self.timeout = timeout
        self.retry_timeout = retry_timeout
        self._pool: Any = None
        self._lock = threading.Lock()  # the sync store opens its pool once under it

    def __repr__(self) -> str:
        return f"{type(self).__name__}(schema={self.schema!r})"

    def _pool_options(self, check: Any) -> dict[str, Any]:
        return {
            "min_size": self.min_size,
            "max_size": self.max_size,
            "timeout": min(self.timeout, _MAX_POOL_WAIT),  # an infinite wait: a year
            "open": False,
            "check": check,
            # a SET per connection, not startup options: the URL's own options are kept
            "configure": self._configure,
        }

    def _configure(self, conn: Any) -> Any:
        raise NotImplementedError

    def _extra_indexes(self) -> list[str]:
        return [] if self._words is None else pgsql.words_indexes(self._words)

    @property
    def _search_path(self) -> str:
        return f'SET search_path = "{self.schema}", public'

    def _backoff(self, until: float | None) -> _Backoff:
        """The retries of an operation: for ``retry_timeout``, and not past ``until`` (a
        ``time.monotonic()``)."""
        deadline = time.monotonic() + self.retry_timeout
        return _Backoff(deadline if until is None else min(deadline, until))

    def _search_query(self, search: SearchRequest) -> tuple[pgsql.Query | None, float | None]:
        """The query of ``search`` (``None``: nothing to ask) and the deadline its timeout
        sets."""
        deadline = search_deadline(search.timeout)
        max_chars = search.max_chars
        read = pgsql.READ if max_chars is None else pgsql.hit_columns(max_chars)
        found = pgsql.search_kind(
            search.kind, search.query, search.limit, search.agent_id, self._words, read
        )
        return found, deadline


class PostgresStore(_Options, AppendOne, SearchKinds):
    """The history store on PostgreSQL: the operations of :class:`HistoryStore`.

    ``url`` is a libpq URL (``postgresql://user@host:5432/db``). Tables go in ``schema``
    (created if missing); the pool keeps ``min_size`` to ``max_size`` connections.

    Search matches substrings, as on SQLite (a ``pg_trgm`` index). ``search="words"`` uses
    PostgreSQL's full-text search instead: a ``tsvector`` GIN index per searched column in
    the text search configuration ``search_config`` (``"simple"``: words as written, any
    case; ``"english"``: stemmed), created on first use; a query matches messages holding all
    its words (``websearch_to_tsquery`` syntax), and of more than ``limit`` matches the
    best-ranked (``ts_rank``) are returned, oldest first.
    """

    # -- connections, retries and migrations ---------------------------------------------------
    def _get_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                _, psycopg_pool = _driver()
                pool = psycopg_pool.ConnectionPool(
                    self.url, **self._pool_options(psycopg_pool.ConnectionPool.check_connection)
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

    def _configure(self, conn: Any) -> None:
        conn.execute(self._search_path)
        conn.commit()

    def _migrate(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            for stmt in pgsql.preamble(self.schema):
                conn.execute(stmt)
            version = conn.execute("SELECT max(version) FROM ptc_schema").fetchone()[0] or 0
            trgm = conn.execute(pgsql.TRGM_SCHEMA).fetchone()[0]
            for v, statements in pgsql.pending(self.schema, version):
                for stmt in pgsql.statements(statements, trgm):
                    conn.execute(stmt)
                conn.execute("INSERT INTO ptc_schema (version) VALUES (%s)", (v,))
            for stmt in self._extra_indexes():
                conn.execute(stmt)

    def _retrying(self, op: Callable[[], T], until: float | None = None) -> T:
        """Runs ``op``; a lost connection or an unreachable server is retried with backoff (for
        ``retry_timeout``, and not past ``until``, a ``time.monotonic()``)."""
        errors, backoff = _retried(), self._backoff(until)
        while True:
            try:
                return op()
            except errors as e:
                time.sleep(backoff.wait_after(e))

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

    def _find(self, search: SearchRequest) -> list[Any]:
        """A search's rows, oldest first: StoredMessages, or a search tool's records. With a
        deadline, the wait for a connection, retries and the statement (its
        ``statement_timeout``) all end by it."""
        found, deadline = self._search_query(search)
        if found is None:
            return []
        convert: Callable[[Any], Any] = stored_message
        if search.max_chars is not None:
            convert = functools.partial(hit_record, max_chars=search.max_chars)
        if deadline is None:
            return [convert(r) for r in reversed(self._query(*found))]
        sql, args, what, timeout = found[0], tuple(found[1]), search.what, search.timeout

        def run() -> list[Any]:
            left = _time_left(deadline, what, timeout)
            with self._get_pool().connection(timeout=left) as conn:
                conn.execute(pgsql.STATEMENT_TIMEOUT, (pgsql.timeout_ms(left),))
                return list(conn.execute(sql, args).fetchall())

        try:
            rows = self._retrying(run, deadline)
        except _retried() as e:
            raise _searched(what, timeout, deadline, e) from e
        return [convert(r) for r in reversed(rows)]

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def checkpoint(self) -> PostgresCheckpoint:
        """A checkpoint sink for agent runs in this store (``ptc_runs``, ``ptc_turns``)."""
        from ptc.checkpoint import PostgresCheckpoint

        return PostgresCheckpoint(self)

    # -- writing -------------------------------------------------------------------------------
    def _write_rows(self, rows: list[tuple[Any, ...]]) -> list[int]:
        def write() -> list[int]:
            with self.connection() as conn, conn.transaction():

                def insert(row: tuple[Any, ...]) -> int | None:
                    found = conn.execute(pgsql.INSERT, pgsql.insert_params(row)).fetchone()
                    return None if found is None else int(found[0])

                def stored(agent_id: str, keys: list[str]) -> dict[str, tuple[int, str]]:
                    return pgsql.stored_rows(conn.execute(pgsql.STORED, (agent_id, keys)))

                return written_ids(rows, insert, stored)

        return self._retrying(write)

    # -- reading -------------------------------------------------------------------------------
    def _rows(self, query: pgsql.Query | None) -> list[StoredMessage]:
        return [] if query is None else [stored_message(r) for r in self._query(*query)]

    def count(self, agent_id: str | None = None) -> int:
        return int(self._query(*pgsql.count(agent_id))[0][0])

    def recent(self, agent_id: str = "", limit: int = 20) -> list[Message]:
        """The newest ``limit`` messages of an agent, oldest first (seed 002 scanning window).
        ``limit`` is an int of 0 or more (see :meth:`search_messages`)."""
        return [r.message for r in reversed(self._rows(pgsql.recent(agent_id, limit)))]

    def system_message(self, agent_id: str = "") -> Message | None:
        """The first system message stored for an agent (its system prompt)."""
        rows = self._rows(pgsql.system_message(agent_id))
        return rows[0].message if rows else None

    def all(self, agent_id: str | None = None) -> list[StoredMessage]:
        return self._rows(pgsql.all_rows(agent_id))


class AsyncPostgresStore(_Options):
    """The async twin of :class:`PostgresStore` (``psycopg_pool.AsyncConnectionPool``): the same
    schema, migrations, retries and keys, with every operation a coroutine."""

    _opening: asyncio.Lock | None = None  # made in the running loop, on first use

    async def _get_pool(self) -> Any:
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                _, psycopg_pool = _driver()
                pool = psycopg_pool.AsyncConnectionPool(
                    self.url,
                    **self._pool_options(psycopg_pool.AsyncConnectionPool.check_connection),
                )
                await pool.open(wait=False)
                try:
                    await self._retrying(lambda: self._migrate(pool))
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    async def _configure(self, conn: Any) -> None:
        await conn.execute(self._search_path)
        await conn.commit()

    async def _migrate(self, pool: Any) -> None:
        async with pool.connection() as conn, conn.transaction():
            for stmt in pgsql.preamble(self.schema):
                await conn.execute(stmt)
            row = await (await conn.execute("SELECT max(version) FROM ptc_schema")).fetchone()
            trgm = (await (await conn.execute(pgsql.TRGM_SCHEMA)).fetchone())[0]
            for v, statements in pgsql.pending(self.schema, row[0] or 0):
                for stmt in pgsql.statements(statements, trgm):
                    await conn.execute(stmt)
                await conn.execute("INSERT INTO ptc_schema (version) VALUES (%s)", (v,))
            for stmt in self._extra_indexes():
                await conn.execute(stmt)

    async def _retrying(self, op: Callable[[], Awaitable[T]], until: float | None = None) -> T:
        errors, backoff = _retried(), self._backoff(until)
        while True:
            try:
                return await op()
            except errors as e:
                await asyncio.sleep(backoff.wait_after(e))

    async def _query(self, sql: str, params: Iterable[Any]) -> list[Any]:
        args = tuple(params)
        pool = await self._get_pool()

        async def run() -> list[Any]:
            async with pool.connection() as conn:
                cur = await conn.execute(sql, args)
                return list(await cur.fetchall())

        return await self._retrying(run)

    def checkpoint(self) -> PostgresCheckpoint:
        """A checkpoint sink in this store's schema. Agents save turns synchronously (from the
        loop's worker), so it uses a small sync pool of its own."""
        return PostgresStore(
            self.url, schema=self.schema, max_size=2, retry_timeout=self.retry_timeout
        ).checkpoint()

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def __aenter__(self) -> AsyncPostgresStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def append_many(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        agent_id: str = "",
        run_id: str | None = None,
        key: str | None = None,
    ) -> list[int]:
        rows = message_rows(messages, agent_id, run_id, key)
        if not rows:
            return []
        pool = await self._get_pool()

        async def write() -> list[int]:  # written_ids's steps, each awaited
            async with pool.connection() as conn, conn.transaction():
                inserted: list[int | None] = []
                for row in rows:
                    cur = await conn.execute(pgsql.INSERT, pgsql.insert_params(row))
                    found = await cur.fetchone()
                    inserted.append(None if found is None else int(found[0]))
                stored = {}
                if None in inserted:  # the key was taken: a retry, or a key reused
                    cur = await conn.execute(pgsql.STORED, (agent_id, replay_keys(rows)))
                    stored = pgsql.stored_rows(await cur.fetchall())
                return replayed_ids(rows, inserted, stored)

        return await self._retrying(write)

    async def append(
        self,
        message: Message | Mapping[str, Any],
        *,
        agent_id: str = "",
        run_id: str | None = None,
        key: str | None = None,
    ) -> int | None:
        ids = await self.append_many([message], agent_id=agent_id, run_id=run_id, key=key)
        return ids[0] if ids else None

    async def count(self, agent_id: str | None = None) -> int:
        sql, args = pgsql.count(agent_id)
        return int((await self._query(sql, args))[0][0])

    async def recent(self, agent_id: str = "", limit: int = 20) -> list[Message]:
        rows = await self._query(*pgsql.recent(agent_id, limit))
        return [stored_message(r).message for r in reversed(rows)]

    async def system_message(self, agent_id: str = "") -> Message | None:
        rows = await self._query(*pgsql.system_message(agent_id))
        return stored_message(rows[0]).message if rows else None

    async def all(self, agent_id: str | None = None) -> list[StoredMessage]:
        return [stored_message(r) for r in await self._query(*pgsql.all_rows(agent_id))]

    async def _search(self, search: SearchRequest) -> list[StoredMessage]:
        """As :meth:`PostgresStore._find`."""
        found, deadline = self._search_query(search)
        if found is None:
            return []
        if deadline is None:
            return [stored_message(r) for r in reversed(await self._query(*found))]
        sql, args, what, timeout = found[0], tuple(found[1]), search.what, search.timeout
        pool = await self._get_pool()

        async def run() -> list[Any]:
            left = _time_left(deadline, what, timeout)
            async with pool.connection(timeout=left) as conn:
                await conn.execute(pgsql.STATEMENT_TIMEOUT, (pgsql.timeout_ms(left),))
                cur = await conn.execute(sql, args)
                return list(await cur.fetchall())

        try:
            rows = await self._retrying(run, deadline)
        except _retried() as e:
            raise _searched(what, timeout, deadline, e) from e
        return [stored_message(r) for r in reversed(rows)]

    async def search_messages(
        self,
        query: str,
        limit: int = 20,
        *,
        agent_id: str | None = None,
        timeout: float | None = None,
    ) -> list[StoredMessage]:
        return await self._search(SearchRequest("messages", query, limit, agent_id, timeout))

    async def search_reasoning(
        self,
        query: str,
        limit: int = 20,
        *,
        agent_id: str | None = None,
        timeout: float | None = None,
    ) -> list[StoredMessage]:
        return await self._search(SearchRequest("reasoning", query, limit, agent_id, timeout))

    async def search_broadcasts(
        self, query: str, limit: int = 20, *, timeout: float | None = None
    ) -> list[StoredMessage]:
        return await self._search(SearchRequest("broadcasts", query, limit, None, timeout))
