"""The history stores' search (issue 29, item 12 and part of 21), on SQLite and PostgreSQL: an
agent-scoped search at 100,000 messages, a 4 MB query sent by a program through the search tool,
a search its run abandoned, a search tool whose own timeout is longer than its run, and limits
no database can hold."""

from __future__ import annotations

import contextlib
import math
import os
import random
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from . import case

# A program that builds a 4 MiB query (doubling, so in a few steps) and searches for it.
FOUR_MB_SEARCH = (
    '(def q (loop [s "x"] (if (< (count s) 4194304) (recur (str s s)) s)))'
    " (tool/search-messages {:query q})"
)
FOUR_MB_ERROR = (
    "Tool 'search-messages' failed: SearchQueryTooLong: query is 4,194,304 characters long; "
    "a search takes at most 1,000 (ptc.history.MAX_QUERY_CHARS): search for a shorter, "
    "distinctive part of the text"
)


@contextlib.contextmanager
def _store(backend: str, tmp: Path) -> Iterator[tuple[Any, Callable[[int, str, str], None]]]:
    """A store and ``fill(n, agent, text)``, which adds messages ``text + i`` for i < n in one
    statement (the API's appends would take most of a case's time at these sizes)."""
    if backend == "sqlite":
        from ptc.history.store import HistoryStore

        store = HistoryStore(tmp / "history.db")

        def fill_sqlite(n: int, agent: str, text: str) -> None:
            store.count()
            db = sqlite3.connect(store.path, isolation_level=None)
            db.execute(
                "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1) "
                "INSERT INTO messages (agent_id, role, content, stored_at, raw, msg_key) "
                "SELECT ?, 'user', ? || i, 0, json_object('role', 'user', 'content', ? || i), "
                "? || ':' || i FROM n",
                (n, agent, text, text, agent),
            )
            db.close()

        try:
            yield store, fill_sqlite
        finally:
            store.close()
        return
    import psycopg
    from ptc.history.pgstore import PostgresStore

    url = os.environ["PTC_TEST_POSTGRES_URL"]
    schema = "s_" + uuid.uuid4().hex[:12]
    # the case's own connections are told apart in pg_stat_activity by their name
    named = url + ("&" if "?" in url else "?") + f"application_name={schema}"
    pg = PostgresStore(named, schema=schema)

    def fill_postgres(n: int, agent: str, text: str) -> None:
        with pg.connection() as conn:
            conn.execute(
                "INSERT INTO messages (agent_id, role, content, stored_at, raw, msg_key) "
                "SELECT %s, 'user', %s || i, 0, "
                "json_build_object('role', 'user', 'content', %s || i)::text, %s || ':' || i "
                "FROM generate_series(0, %s - 1) i",
                (agent, text, text, agent, n),
            )
        with psycopg.connect(url, autocommit=True) as conn:  # as autovacuum leaves it
            conn.execute(f"VACUUM ANALYZE {schema}.messages")

    try:
        yield pg, fill_postgres
    finally:
        pg.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _took(fn: Callable[[], Any]) -> tuple[Any, float]:
    started = time.monotonic()
    out = fn()
    return out, time.monotonic() - started


# -- an agent-scoped search at 100,000 messages ------------------------------------------------


def _scoped_search_is_fast(backend: str, tmp: Path) -> None:
    with _store(backend, tmp) as (store, fill):
        fill(100_000, "a", "number ")
        fill(1_000, "b", "number ")
        store.search_messages("number 5", agent_id="a")  # caches warm
        found, took = _took(lambda: store.search_messages("number 19999", agent_id="a"))
        assert [m.content for m in found] == ["number 19999"], found
        assert took < 1.0, f"scoped search took {took:.2f} s"
        found, took = _took(lambda: store.search_messages("number 999", 2, agent_id="b"))
        assert [(m.agent_id, m.content) for m in found] == [("b", "number 999")], found
        assert took < 1.0, f"scoped search of the other agent took {took:.2f} s"
        # a query of the longest length, words of random letters (before, on PostgreSQL: a
        # table scan lowercasing the whole query per row, 1-2 s at this size)
        rnd = random.Random(12)
        long_query = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(1_000))
        found, took = _took(lambda: store.search_messages(long_query, agent_id="a"))
        assert found == [] and took < 0.5, f"a 1,000-character query took {took:.2f} s"


@case(seconds=60, memory_mb=500)
def case_agent_scoped_search_of_100000_messages_sqlite(tmp: Path) -> None:
    """Before: the FTS5 match ran once per row of the agent (72 s at 100,000 messages)."""
    _scoped_search_is_fast("sqlite", tmp)


@case(seconds=60, memory_mb=500, needs=("postgres",))
def case_agent_scoped_search_of_100000_messages_postgres(tmp: Path) -> None:
    """The same on PostgreSQL: the trigram index is used for any query length."""
    _scoped_search_is_fast("postgres", tmp)


# -- a 4 MB query through the search tool --------------------------------------------------------


def _four_mb_query_ends_with_its_run(backend: str, tmp: Path) -> None:
    import ptc
    from ptc.history import search_tools

    with _store(backend, tmp) as (store, fill):
        fill(20_000, "a", "number ")
        tools = search_tools(store, agent_id="a")
        started = time.monotonic()
        r = ptc.run(FOUR_MB_SEARCH, tools=tools, limits={"timeout_ms": 1000})
        ended = time.monotonic() - started
        assert r.error is not None and r.error.message == FOUR_MB_ERROR, r.error
        assert ended < 1.5, f"the run took {ended:.2f} s"
        # the store is free: before, the search went on holding its lock for over 30 s
        found, took = _took(lambda: store.search_messages("number 19999", agent_id="a"))
        assert len(found) == 1 and took < 0.5, f"the next search waited {took:.2f} s"


@case(seconds=60, memory_mb=700)
def case_four_mb_query_through_the_search_tool_sqlite(tmp: Path) -> None:
    """Item 12: a 4 MB query is refused with a tool error the LLM can read, at once."""
    _four_mb_query_ends_with_its_run("sqlite", tmp)


@case(seconds=60, memory_mb=700, needs=("postgres",))
def case_four_mb_query_through_the_search_tool_postgres(tmp: Path) -> None:
    """The same on PostgreSQL (a connection of the pool is the store's resource)."""
    _four_mb_query_ends_with_its_run("postgres", tmp)


# -- a search abandoned by its run stops at its timeout -----------------------------------------


def _abandoned_search_stops(backend: str, tmp: Path) -> None:
    import ptc
    from ptc.history import SearchTimeout, search_tools

    with _store(backend, tmp) as (store, fill):
        if backend == "sqlite":
            fill(200_000, "a", "number ")
            query = "zz"  # under three characters: every row is scanned with instr()
        else:
            # every row holds the query's first 32 characters: each is checked whole
            fill(60_000, "a", "w" * 32 + " row ")
            query = "w" * 32 + "v" * 968
        store.search_messages(query, agent_id="a")  # caches warm
        _, whole = _took(lambda: store.search_messages(query, agent_id="a"))
        limit = whole / 10  # the run's time limit and the search's
        tools = search_tools(store, agent_id="a", timeout=limit)
        program = f'(tool/search-messages {{:query "{query}"}})'
        started = time.monotonic()
        r = ptc.run(program, tools=tools, limits={"timeout_ms": max(1, int(limit * 1000))})
        assert r.error is not None, r
        # the run ended at its limit (timeout), or the search at its own, first
        assert r.error.type in ("timeout", "tool_error"), r.error
        if r.error.type == "tool_error":
            assert "SearchTimeout: search of content took longer than" in r.error.message
        # the store is free long before the abandoned search would have ended
        if backend == "sqlite":
            found, _ = _took(lambda: store.recent("a", 1))  # waits for the store's lock
            assert len(found) == 1
        else:
            _wait_for_no_statement(store.url, store.schema, whole)
        freed = time.monotonic() - started
        assert freed < whole / 2, (freed, whole)
        try:
            store.search_messages(query, agent_id="a", timeout=limit)
        except SearchTimeout:
            pass
        else:
            raise AssertionError("a search past its timeout returned")


def _wait_for_no_statement(url: str, name: str, within: float) -> None:
    """Until no connection named ``name`` runs a statement (at most ``within`` seconds)."""
    import psycopg

    base = url.split("?")[0]
    end = time.monotonic() + within
    with psycopg.connect(base, autocommit=True) as conn:
        while time.monotonic() < end:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s "
                "AND state = 'active'",
                (name,),
            ).fetchone()
            if row is not None and row[0] == 0:
                return
            time.sleep(0.005)
    raise AssertionError(f"a search of {name} was still running after {within:.2f} s")


@case(seconds=90, memory_mb=500)
def case_a_search_abandoned_by_its_run_stops_at_its_timeout_sqlite(tmp: Path) -> None:
    """Before: the search went on holding the store after its run ended."""
    _abandoned_search_stops("sqlite", tmp)


@case(seconds=90, memory_mb=500, needs=("postgres",))
def case_a_search_abandoned_by_its_run_stops_at_its_timeout_postgres(tmp: Path) -> None:
    """The same on PostgreSQL: the statement is cancelled by its statement_timeout."""
    _abandoned_search_stops("postgres", tmp)


# -- a search tool whose own timeout is longer than its run -------------------------------------


def _search_tool_ends_with_its_run(backend: str, tmp: Path) -> None:
    import ptc
    from ptc.history import SearchTimeout, search_tools

    with _store(backend, tmp) as (store, fill):
        if backend == "sqlite":
            # a trigram phrase of 998 tokens checked in rows of 500 matching characters
            fill(2_000, "a", "a" * 500 + " ")
            query = "a" * 1_000
        else:
            # every row holds the query's first 300 characters: each is checked whole
            fill(30_000, "a", "w" * 300 + " row ")
            query = "w" * 300 + "v" * 700
        try:  # the search alone takes seconds
            store.search_messages(query, agent_id="a", timeout=1.5)
        except SearchTimeout:
            pass
        else:
            raise AssertionError("the slow search ended within 1.5 s: it tests nothing")
        # the tool's own bound (30 s) is far past the run's (300 ms)
        tools = search_tools(store, agent_id="a", timeout=30)
        started = time.monotonic()
        r = ptc.run(
            "(tool/search-messages {:query data/q})",
            data={"q": query},
            tools=tools,
            limits={"timeout_ms": 300},
        )
        assert r.error is not None and r.error.type == "timeout", r.error
        # the search ended with its run: the store is free at once
        if backend == "sqlite":
            found, _ = _took(lambda: store.recent("a", 1))  # waits for the store's lock
            assert len(found) == 1
        else:
            _wait_for_no_statement(store.url, store.schema, 5.0)
        freed = time.monotonic() - started
        assert freed < 1.0, f"the store was busy {freed:.2f} s after a run of 300 ms began"


@case(seconds=90, memory_mb=500)
def case_a_search_tool_ends_with_its_run_sqlite(tmp: Path) -> None:
    """Before: a search tool with a timeout past its run's went on holding the store's lock
    after the run had ended (here 4-5 s after a run of 300 ms)."""
    _search_tool_ends_with_its_run("sqlite", tmp)


@case(seconds=90, memory_mb=500, needs=("postgres",))
def case_a_search_tool_ends_with_its_run_postgres(tmp: Path) -> None:
    """The same on PostgreSQL: the statement ran on after its run, holding a connection."""
    _search_tool_ends_with_its_run("postgres", tmp)


# -- limits and other numbers no database holds --------------------------------------------------


def _hostile_limits(backend: str, tmp: Path) -> None:
    import ptc
    from ptc.history import search_tools

    with _store(backend, tmp) as (store, fill):
        fill(30, "a", "iron ")
        for limit in (10**30, 2**63, 10**5000):  # before: OverflowError, bigint out of range
            assert len(store.search_messages("iron", limit, agent_id="a")) == 30
            assert len(store.recent("a", limit)) == 30
        bad: list[tuple[Any, type[Exception], str]] = [
            (-1, ValueError, "limit must be 0 or more, got -1"),
            (True, TypeError, "limit must be an int, got bool True"),
            (2.5, TypeError, "limit must be an int, got float 2.5"),
            (math.inf, TypeError, "limit must be an int, got float inf"),
            (None, TypeError, "limit must be an int, got None"),
            ("5", TypeError, "limit must be an int, got str '5'"),
        ]
        calls: list[Callable[[Any], Any]] = [
            lambda n: store.search_messages("iron", n, agent_id="a"),
            lambda n: store.search_reasoning("iron", n),
            lambda n: store.search_broadcasts("iron", n),
            lambda n: store.recent("a", n),
        ]
        for value, error, message in bad:
            for call in calls:
                try:
                    call(value)
                except Exception as e:
                    assert type(e) is error and str(e) == message, (value, e)
                else:
                    raise AssertionError(f"limit {value!r} was taken")
        # from a program: a tool error naming the argument, never OverflowError
        tools = search_tools(store, agent_id="a")
        for source, shown in [
            ('(tool/search-messages {:query "iron" :limit (/ 1.0 0)})', "float inf"),
            ('(tool/search-messages {:query "iron" :limit 2.5})', "float 2.5"),
            ('(tool/search-messages {:query "iron" :limit "9"})', "str '9'"),
        ]:
            r = ptc.run(source, tools=tools)
            assert r.error is not None and r.error.message == (
                "Tool 'search-messages' failed: TypeError: limit must be an integer from 1 to "
                f"100, got {shown}"
            ), (source, r.error)
        r = ptc.run(
            '(count (tool/search-messages {:query "iron" :limit 9223372036854775807}))',
            tools=tools,
        )
        assert r.value == 30, r


@case(seconds=60, memory_mb=400)
def case_limits_no_database_holds_sqlite(tmp: Path) -> None:
    """Item 21: ``search_messages(q, 10**30)`` raised OverflowError."""
    _hostile_limits("sqlite", tmp)


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_limits_no_database_holds_postgres(tmp: Path) -> None:
    """Item 21 on PostgreSQL: ``bigint out of range`` from the server."""
    _hostile_limits("postgres", tmp)
