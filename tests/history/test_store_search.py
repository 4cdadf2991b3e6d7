"""Search on both store backends under hostile input (issue 29, items 12 and 21): an agent-scoped
search uses the full-text index first, a query has a length cap, a search has a timeout that
stops it (SQLite: interrupted; PostgreSQL: ``statement_timeout``), and every numeric argument is
checked with an error naming it (never ``OverflowError``)."""

from __future__ import annotations

import asyncio
import math
import random
import re
import sqlite3
import threading
import time
from typing import Any

import pytest
from conftest import Backend, need_postgres
from ptc.history import (
    HIT_CHARS,
    MAX_QUERY_CHARS,
    HistoryStore,
    PostgresStore,
    SearchQueryTooLong,
    SearchTimeout,
    search_tools,
)

# The messages of one agent numbered 0..n-1, written with one statement (the API's appends
# would take most of a test's time at these sizes). Rows are what append_many stores.
SQLITE_FILL = """
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ? - 1)
INSERT INTO messages (agent_id, role, content, stored_at, raw, msg_key)
SELECT ?, 'user', ? || i, 0, json_object('role', 'user', 'content', ? || i), ? || ':' || i FROM n
"""
PG_FILL = """
INSERT INTO messages (agent_id, role, content, stored_at, raw, msg_key)
SELECT %s, 'user', %s || i, 0, json_build_object('role', 'user', 'content', %s || i)::text,
       %s || ':' || i
FROM generate_series(0, %s - 1) i
"""


def fill(backend: Backend, store: Any, n: int, *, agent: str = "a", text: str = "number ") -> None:
    store.count()  # created and migrated
    if backend.name == "sqlite":
        conn = sqlite3.connect(store.path, isolation_level=None)
        conn.execute(SQLITE_FILL, (n, agent, text, text, agent))
        conn.close()
    else:
        import psycopg

        with store.connection() as conn:
            conn.execute(PG_FILL, (agent, text, text, agent, n))
            conn.commit()
        # as autovacuum leaves a table in use: statistics made, the GIN indexes' pending lists
        # merged (the planner prices a trigram search by them)
        with psycopg.connect(backend.url, autocommit=True) as conn:
            conn.execute(f"VACUUM ANALYZE {backend.options['schema']}.messages")


def timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[Any, float]:
    started = time.monotonic()
    out = fn(*args, **kwargs)
    return out, time.monotonic() - started


# -- item 12: the scoped search uses the full-text index first -------------------------------


@pytest.mark.timeout(120)
def test_an_agent_scoped_search_of_20000_messages_takes_milliseconds(backend: Backend) -> None:
    # before: SQLite ran the full-text match once per row of the agent (20-40 s here)
    with backend.open() as store:
        fill(backend, store, 20_000)
        store.search_messages("number 5", agent_id="a")  # warm the caches
        found, scoped = timed(store.search_messages, "number 19999", agent_id="a")
        assert [m.content for m in found] == ["number 19999"]
        found, across = timed(store.search_messages, "number 19999")
        assert [m.content for m in found] == ["number 19999"]
        assert scoped < 0.5, (scoped, across)
        hits, t = timed(store.search_messages, "number 1999", 5, agent_id="a")
        assert [m.content for m in hits] == [f"number 1999{i}" for i in range(5, 10)]
        assert t < 0.5
        reasoning, t = timed(store.search_reasoning, "number 19999", agent_id="a")
        assert reasoning == [] and t < 0.5


def test_a_scoped_search_keeps_other_agents_out_and_returns_the_newest(backend: Backend) -> None:
    with backend.open() as store:
        fill(backend, store, 300, agent="a", text="iron ")
        fill(backend, store, 300, agent="b", text="iron ")
        hits = store.search_messages("iron 29", 3, agent_id="a")
        # "iron 29" and "iron 290".."iron 299" match: the newest three, oldest first
        assert [(m.agent_id, m.content) for m in hits] == [
            ("a", "iron 297"),
            ("a", "iron 298"),
            ("a", "iron 299"),
        ]
        assert [m.agent_id for m in store.search_messages("iron 1", 1000, agent_id="b")] == [
            "b"
        ] * 111  # 1, 10-19, 100-199
        assert store.search_messages("iron 2", 5, agent_id="nobody") == []


def _plan(store: PostgresStore, sql: str, params: list[Any]) -> str:
    with store.connection() as conn:
        return "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())


@pytest.mark.timeout(120)
def test_postgres_searches_use_the_trigram_index_for_any_query_length() -> None:
    """Scoped or not, and for a query of the longest length too: before, a query past about 100
    characters at 20,000 rows was planned as a table scan lowercasing the whole query per row."""
    from ptc.history import _pgsql

    url = need_postgres()
    backend = Backend("postgres", url, {"schema": "t_plan_" + str(threading.get_ident())})
    with backend.open() as store:
        try:
            fill(backend, store, 20_000)
            # words of random letters: about as many distinct trigrams as characters
            rnd = random.Random(29)
            letters = "abcdefghijklmnopqrstuvwxyz "
            long_query = "".join(rnd.choice(letters) for _ in range(MAX_QUERY_CHARS))
            for query in ("number 19999", "q" + long_query[:200], long_query[:MAX_QUERY_CHARS]):
                for agent in (None, "a"):
                    found = _pgsql.search_messages(query, 20, agent)
                    assert found is not None
                    plan = _plan(store, *found)
                    assert "messages_content_trgm" in plan, (len(query), agent, plan)
            found = _pgsql.search_reasoning("number 19999", 20, "a")
            assert found is not None
            with store.connection() as conn:
                conn.execute("SET enable_seqscan = off")
                conn.execute("SET enable_indexscan = off")
                plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + found[0], found[1]))
            assert "messages_reasoning_trgm" in plan, plan
        finally:
            with store.connection() as conn:
                conn.execute(f"DROP SCHEMA {backend.options['schema']} CASCADE")
                conn.commit()


def test_a_long_query_finds_what_its_first_characters_and_the_rest_match(backend: Backend) -> None:
    """On PostgreSQL a query past 32 characters is looked up by its start, then checked whole:
    the same matches as a short query, in any case, with LIKE's wildcards as plain text."""
    head = "The convoy left the iron belt at"
    assert len(head) == 32
    odd = "rate 50% of 100_000 at a\\b, then the rest of a long line"
    with backend.open() as store:
        store.append_many(
            [
                {"role": "user", "content": head + " dawn, heading for Oslo station."},
                {"role": "user", "content": head + " dusk, heading for Oslo station."},
                {"role": "user", "content": "x" + head.upper() + " DAWN, HEADING FOR OSLO"},
                {"role": "user", "content": odd},
            ],
            agent_id="a",
        )
        hits = store.search_messages(head + " dawn, heading for Oslo", agent_id="a")
        assert [m.content for m in hits] == [
            head + " dawn, heading for Oslo station.",
            "x" + head.upper() + " DAWN, HEADING FOR OSLO",
        ]
        assert store.search_messages(head + " dawn, heading for Oslo station._%") == []
        assert [m.content for m in store.search_messages(odd[2:], agent_id="a")] == [odd]
        for changed in (odd.replace("_", "x"), odd.replace("%", "x"), odd.replace("\\", "x")):
            assert store.search_messages(changed, agent_id="a") == []


# -- item 12: the length cap -----------------------------------------------------------------


TOO_LONG = (
    "query is 1,001 characters long; a search takes at most 1,000 "
    "(ptc.history.MAX_QUERY_CHARS): search for a shorter, distinctive part of the text"
)


def test_a_query_longer_than_the_cap_is_refused_naming_its_length(backend: Backend) -> None:
    assert MAX_QUERY_CHARS == 1_000
    with backend.open() as store:
        store.append({"role": "user", "content": "y" * 1_000}, agent_id="a")
        assert [len(m.content) for m in store.search_messages("y" * 1_000)] == [1_000]
        for search in (
            lambda q: store.search_messages(q, agent_id="a"),
            lambda q: store.search_messages(q),
            lambda q: store.search_reasoning(q, agent_id="a"),
            store.search_broadcasts,
        ):
            with pytest.raises(SearchQueryTooLong) as e:
                search("y" * 1_001)
            assert str(e.value) == TOO_LONG
            assert isinstance(e.value, ValueError)
        with pytest.raises(SearchQueryTooLong, match=r"^query is 4,194,304 characters long;"):
            store.search_messages("y" * 4 * 1024 * 1024, agent_id="a")


@pytest.mark.parametrize(
    ("query", "shown"),
    [(5, "int 5"), (None, "None"), (b"iron", "bytes b'iron'"), (["a"], "list ['a']")],
)
def test_a_query_that_is_not_a_str_is_a_type_error(
    backend: Backend, query: Any, shown: str
) -> None:
    with backend.open() as store:
        for search in (store.search_messages, store.search_reasoning, store.search_broadcasts):
            with pytest.raises(TypeError) as e:
                search(query)
            assert type(e.value) is TypeError
            assert str(e.value) == f"query must be a str, got {shown}"


def test_nul_in_a_query_is_dropped_as_in_stored_text(backend: Backend) -> None:
    with backend.open() as store:
        store.append({"role": "user", "content": "iron\x00ore"}, agent_id="a")
        assert [m.message.text for m in store.search_messages("on\x00or")] == ["iron\x00ore"]
        assert [m.content for m in store.search_messages("\x00" * 1000)] == ["ironore"]


# -- item 21: limits -------------------------------------------------------------------------


def test_a_limit_past_64_bits_asks_for_every_match(backend: Backend) -> None:
    # before: OverflowError on SQLite, NumericValueOutOfRange on PostgreSQL
    with backend.open() as store:
        fill(backend, store, 30)
        for limit in (10**30, 2**63, 2**63 - 1, 10**5000):
            assert len(store.search_messages("number", limit, agent_id="a")) == 30
            assert len(store.search_messages("number", limit)) == 30
            assert store.search_reasoning("number", limit) == []
            assert store.search_broadcasts("number", limit) == []
            assert len(store.recent("a", limit)) == 30
        assert store.search_messages("number", 0) == []
        assert store.recent("a", 0) == []


BAD_LIMITS = [
    (-1, ValueError, "limit must be 0 or more, got -1"),
    (-(10**30), ValueError, f"limit must be 0 or more, got {-(10**30)}"),
    (True, TypeError, "limit must be an int, got bool True"),
    (False, TypeError, "limit must be an int, got bool False"),
    (2.5, TypeError, "limit must be an int, got float 2.5"),
    (20.0, TypeError, "limit must be an int, got float 20.0"),
    (math.inf, TypeError, "limit must be an int, got float inf"),
    (math.nan, TypeError, "limit must be an int, got float nan"),
    (None, TypeError, "limit must be an int, got None"),
    ("5", TypeError, "limit must be an int, got str '5'"),
]


@pytest.mark.parametrize(("limit", "error", "message"), BAD_LIMITS)
def test_a_limit_that_is_not_a_count_is_refused_naming_it(
    backend: Backend, limit: Any, error: type[Exception], message: str
) -> None:
    with backend.open() as store:
        store.append({"role": "user", "content": "iron ore"}, agent_id="a")
        calls = [
            lambda: store.search_messages("iron", limit),
            lambda: store.search_messages("ir", limit, agent_id="a"),  # the short-query scan
            lambda: store.search_reasoning("iron", limit),
            lambda: store.search_broadcasts("iron", limit),
            lambda: store.recent("a", limit),
        ]
        for call in calls:
            with pytest.raises(error) as e:
                call()
            assert type(e.value) is error and str(e.value) == message


def test_the_async_postgres_store_checks_the_same() -> None:
    from ptc.history import AsyncPostgresStore

    url = need_postgres()
    schema = "t_async_" + str(threading.get_ident())

    async def go() -> None:
        async with AsyncPostgresStore(url, schema=schema) as store:
            try:
                await store.append_many(
                    [{"role": "user", "content": f"iron {i}"} for i in range(3)], agent_id="a"
                )
                assert len(await store.search_messages("iron", 10**30, agent_id="a")) == 3
                assert len(await store.recent("a", 2**64)) == 3
                with pytest.raises(ValueError, match=r"^limit must be 0 or more, got -1$"):
                    await store.search_reasoning("iron", -1)
                with pytest.raises(TypeError, match=r"^limit must be an int, got bool True$"):
                    await store.search_broadcasts("iron", True)
                with pytest.raises(SearchQueryTooLong):
                    await store.search_messages("i" * 1_001)
                with pytest.raises(ValueError, match=r"^timeout must be more than 0 seconds"):
                    await store.search_messages("iron", timeout=0)
                hits = await store.search_messages("iron 2", agent_id="a", timeout=5)
                assert [m.content for m in hits] == ["iron 2"]
            finally:
                pool = await store._get_pool()
                async with pool.connection() as conn:
                    await conn.execute(f"DROP SCHEMA {schema} CASCADE")

    asyncio.run(go())


# -- item 12: a search's timeout -------------------------------------------------------------


BAD_TIMEOUTS = [
    (0, ValueError, "timeout must be more than 0 seconds, got int 0"),
    (-1.5, ValueError, "timeout must be more than 0 seconds, got float -1.5"),
    (math.nan, ValueError, "timeout must be more than 0 seconds, got float nan"),
    (True, TypeError, "timeout must be a number of seconds, got bool True"),
    ("1", TypeError, "timeout must be a number of seconds, got str '1'"),
]


@pytest.mark.parametrize(("timeout", "error", "message"), BAD_TIMEOUTS)
def test_a_search_timeout_that_is_not_a_duration_is_refused(
    backend: Backend, timeout: Any, error: type[Exception], message: str
) -> None:
    with backend.open() as store:
        for search in (store.search_messages, store.search_reasoning, store.search_broadcasts):
            with pytest.raises(error) as e:
                search("iron", timeout=timeout)
            assert type(e.value) is error and str(e.value) == message


def test_an_unlimited_timeout_is_no_limit(backend: Backend) -> None:
    with backend.open() as store:
        store.append({"role": "user", "content": "iron ore"}, agent_id="a")
        for timeout in (math.inf, 10**400, None, 60):
            assert len(store.search_messages("iron", agent_id="a", timeout=timeout)) == 1


def _slow_search(backend: Backend, store: Any) -> str:
    """Fill agent a's messages so that one search takes a while on any machine: the query."""
    if backend.name == "sqlite":
        fill(backend, store, 100_000)
        return "zz"  # under three characters: a scan of every row with instr()
    # every row holds the query's first 32 characters, so each is checked against all 1,000
    head = "w" * 32
    fill(backend, store, 60_000, text=head + " row ")
    return head + "v" * (MAX_QUERY_CHARS - 32)


@pytest.mark.timeout(180)
def test_a_search_past_its_timeout_is_stopped_and_the_store_goes_on(backend: Backend) -> None:
    # before: no timeout; a search abandoned by its run went on holding the store (30 s and more)
    with backend.open() as store:
        query = _slow_search(backend, store)
        store.search_messages(query, agent_id="a")  # warm the caches
        found, whole = timed(store.search_messages, query, agent_id="a")
        assert found == []
        timeout = whole / 20
        started = time.monotonic()
        with pytest.raises(SearchTimeout) as e:
            store.search_messages(query, agent_id="a", timeout=timeout)
        stopped = time.monotonic() - started
        assert stopped < whole / 2, (stopped, whole)
        assert str(e.value) == (
            f"search of content took longer than its timeout of {timeout} s and was stopped: "
            "search for a more distinctive text, or give the search more time"
        )
        assert isinstance(e.value, TimeoutError)
        # the store is as it was: the next calls, searches with and without a timeout, complete
        assert len(store.recent("a", 1)) == 1
        assert store.search_messages(query, agent_id="a", timeout=whole * 10 + 5) == []
        assert store.search_messages(query, agent_id="a") == []


def test_sqlite_a_search_waiting_for_the_store_gives_up_at_its_timeout(tmp_path: Any) -> None:
    store = HistoryStore(tmp_path / "h.db")
    store.append({"role": "user", "content": "iron ore"}, agent_id="a")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with store._lock:  # another thread's long operation on the same store
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    try:
        held.wait(5)
        started = time.monotonic()
        with pytest.raises(SearchTimeout, match=r"^search of reasoning took longer than its "):
            store.search_reasoning("iron", timeout=0.2)
        assert 0.19 < time.monotonic() - started < 2
    finally:
        release.set()
        t.join()
    assert len(store.search_messages("iron", timeout=1)) == 1
    store.close()


def test_postgres_a_search_waiting_for_a_connection_gives_up_at_its_timeout() -> None:
    url = need_postgres()
    schema = "t_pool_" + str(threading.get_ident())
    with PostgresStore(url, schema=schema, max_size=1) as store:
        try:
            store.append({"role": "user", "content": "iron ore"}, agent_id="a")
            with store.connection():  # the pool's one connection, held
                started = time.monotonic()
                with pytest.raises(SearchTimeout, match=r"^search of content took longer "):
                    store.search_messages("iron", timeout=0.3)
                assert 0.29 < time.monotonic() - started < 3
            assert len(store.search_messages("iron", timeout=1)) == 1
            # the URL's (or the server's) statement_timeout is back once the search is done
            with store.connection() as conn:
                assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"
        finally:
            with store.connection() as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
                conn.commit()


# -- the search tools ------------------------------------------------------------------------


def test_search_tools_check_what_a_program_passes(backend: Backend) -> None:
    with backend.open() as store:
        fill(backend, store, 150, text="iron ")
        tools = search_tools(store, agent_id="a", max_limit=100)
        t = tools["search-messages"]
        assert len(t("iron", 10**30)) == 100  # clamped to max_limit
        assert len(t("iron", -5)) == 1  # clamped to 1
        assert len(t({"query": "iron", "limit": None})) == 20  # nil: the default
        assert len(t({"query": "iron"})) == 20
        for limit, shown in [(2.5, "float 2.5"), ("5", "str '5'"), (True, "bool True")]:
            with pytest.raises(TypeError) as e:
                t({"query": "iron", "limit": limit})
            assert str(e.value) == f"limit must be an integer from 1 to 100, got {shown}"
        for name in ("search-messages", "search-reasoning", "search-broadcasts"):
            with pytest.raises(TypeError) as e:
                tools[name]({"query": {"a": 1}})
            assert str(e.value) == "query must be a string, got dict {'a': 1}"
            with pytest.raises(SearchQueryTooLong) as e:
                tools[name]("q" * 1_001)
            assert str(e.value) == TOO_LONG


# -- what a search tool hands a program is bounded (second red-team batch) --------------------


def test_the_default_cut_is_four_thousand_characters() -> None:
    assert HIT_CHARS == 4_000


def _long_messages(store: Any) -> list[int]:
    return store.append_many(
        [
            {"role": "user", "content": "needle " + "é" * 9_993},  # 10,000 characters
            {"role": "assistant", "content": "needle short", "reasoning": "r" * 4_001},
            {
                "role": "user",
                "content": "needle " + "x" * 3_993,  # exactly 4,000: whole
                "sender_id": "s" * 5_000,
                "source": "broadcast",
                "created_at": "t" * 4_500,
            },
        ],
        agent_id="a",
    )


def test_search_tools_cut_each_text_with_a_note_of_its_length(backend: Backend) -> None:
    with backend.open() as store:
        ids = _long_messages(store)
        tools = search_tools(store, agent_id="a")
        long, short, exact = tools["search-messages"]("needle")
        assert long == {
            "id": ids[0],
            "agent_id": "a",
            "role": "user",
            "source": None,
            "sender_id": None,
            "content": "needle "
            + "é" * 3_993
            + "... [cut: 10,000 characters in all, the first 4,000 shown]",
            "created_at": long["created_at"],
        }
        assert isinstance(long["created_at"], float)  # the storage time: a number, kept
        assert short["content"] == "needle short"
        assert short["reasoning"] == (
            "r" * 4_000 + "... [cut: 4,001 characters in all, the first 4,000 shown]"
        )
        assert exact["content"] == "needle " + "x" * 3_993
        assert exact["sender_id"] == (
            "s" * 4_000 + "... [cut: 5,000 characters in all, the first 4,000 shown]"
        )
        assert exact["created_at"] == (
            "t" * 4_000 + "... [cut: 4,500 characters in all, the first 4,000 shown]"
        )
        (r,) = tools["search-reasoning"]("rrr")
        assert r == {**short, "id": ids[1]}
        (b,) = tools["search-broadcasts"]("needle")
        assert b == exact
        # the store's own search is not cut: the host asked for the messages
        assert len(store.search_messages("needle", agent_id="a")[0].content) == 10_000
        # max_chars= sets the cut
        (first, *_) = search_tools(store, agent_id="a", max_chars=7)["search-messages"]("needle")
        assert first["content"] == ("needle ... [cut: 10,000 characters in all, the first 7 shown]")


class _Delegate:
    """A store of the Store protocol that is not one of ptc's (no query of its own for tools)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def search_messages(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.search_messages(*args, **kwargs)

    def search_reasoning(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.search_reasoning(*args, **kwargs)

    def search_broadcasts(self, *args: Any, **kwargs: Any) -> Any:
        return self.store.search_broadcasts(*args, **kwargs)


def test_search_tools_cut_the_records_of_any_store_the_same(backend: Backend) -> None:
    with backend.open() as store:
        _long_messages(store)
        ours = search_tools(store, agent_id="a")
        theirs = search_tools(_Delegate(store), agent_id="a")  # type: ignore[arg-type]
        for name, query in [
            ("search-messages", "needle"),
            ("search-reasoning", "rrr"),
            ("search-broadcasts", "needle"),
        ]:
            assert theirs[name](query) == ours[name](query)


def test_search_tools_never_read_the_stored_json(backend: Backend) -> None:
    """The built-in stores' tools read the searched columns, cut, and not the message's JSON
    (``raw``, at least as long as the text): a row whose JSON is unreadable is still found."""
    with backend.open() as store:
        (i,) = store.append_many([{"role": "user", "content": "needle 1"}], agent_id="a")
        if backend.name == "sqlite":
            conn = sqlite3.connect(store.path, isolation_level=None)
            conn.execute("UPDATE messages SET raw = 'not json' WHERE id = ?", (i,))
            conn.close()
        else:
            with store.connection() as conn:
                conn.execute("UPDATE messages SET raw = 'not json' WHERE id = %s", (i,))
                conn.commit()
        with pytest.raises(ValueError):
            store.search_messages("needle", agent_id="a")  # reads the JSON
        (hit,) = search_tools(store, agent_id="a")["search-messages"]("needle")
        assert (hit["id"], hit["content"]) == (i, "needle 1")


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"max_chars": 0}, ValueError, "max_chars must be 1 or more, got 0"),
        ({"max_chars": 4e3}, TypeError, "max_chars must be an int, got float 4000.0"),
        ({"max_chars": None}, TypeError, "max_chars must be an int, got None"),
        ({"max_limit": 0}, ValueError, "max_limit must be 1 or more, got 0"),
        ({"max_limit": 2.0}, TypeError, "max_limit must be an int, got float 2.0"),
        ({"timeout": 0}, ValueError, "timeout must be more than 0 seconds, got int 0"),
        ({"timeout": None}, TypeError, "timeout must be a number of seconds, got None"),
    ],
)
def test_search_tools_options_are_checked(
    tmp_path: Any, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as e:
        search_tools(HistoryStore(tmp_path / "h.db"), **options)
    assert type(e.value) is error and str(e.value) == message


def test_a_program_sending_a_4mb_query_gets_a_tool_error_it_can_read(backend: Backend) -> None:
    import ptc

    with backend.open() as store:
        store.append({"role": "user", "content": "iron ore"}, agent_id="a")
        program = (
            '(def q (loop [s "x"] (if (< (count s) 4194304) (recur (str s s)) s)))'
            " (tool/search-messages {:query q})"
        )
        started = time.monotonic()
        r = ptc.run(program, tools=search_tools(store, agent_id="a"), limits={"timeout_ms": 1000})
        assert time.monotonic() - started < 1.5
        assert r.error is not None and r.error.type == "tool_error"
        assert r.error.message == (
            "Tool 'search-messages' failed: SearchQueryTooLong: query is 4,194,304 characters "
            "long; a search takes at most 1,000 (ptc.history.MAX_QUERY_CHARS): search for a "
            "shorter, distinctive part of the text"
        )


# -- the search tools and their run's deadline -----------------------------------------------


def _search_of_seconds(backend: Backend, store: Any) -> str:
    """Fill agent a's messages so that one search takes seconds (about 5 s here): the query.
    SQLite: a trigram phrase of 998 tokens checked in rows of 500 matching characters, a few
    ms a row; PostgreSQL: every row holds the query's first 300 characters, so each is checked
    against all 1,000."""
    if backend.name == "sqlite":
        fill(backend, store, 2_000, text="a" * 500 + " ")
        return "a" * MAX_QUERY_CHARS
    head = "w" * 300
    fill(backend, store, 30_000, text=head + " row ")
    return head + "v" * (MAX_QUERY_CHARS - 300)


STOPPED_BY_THE_RUN = (
    r"^search of content was stopped when its run's time ran out \((\d\.\d\d) s after the "
    r"search started\): search for a more distinctive text, or give the run more time$"
)


@pytest.mark.timeout(120)
def test_a_search_tool_stops_at_its_runs_deadline_and_frees_the_store(backend: Backend) -> None:
    # before: only the tool's own timeout (30 s here) bounded the search: it went on after its
    # run had ended, holding the SQLite store's lock (the PostgreSQL pool's one connection)
    import ptc

    one_connection = {"max_size": 1} if backend.name == "postgres" else {}
    with backend.open(**one_connection) as store:
        query = _search_of_seconds(backend, store)
        store.append({"role": "user", "content": "iron ore"}, agent_id="a")
        with pytest.raises(SearchTimeout):  # alone, the search runs past 1.5 s
            store.search_messages(query, agent_id="a", timeout=1.5)
        search = search_tools(store, agent_id="a", timeout=30)["search-messages"]
        outcome: list[Any] = []

        def watched(q: str) -> Any:  # the search tool, and when and how it ended
            try:
                return search(q)
            except Exception as e:
                outcome.append(e)
                raise
            finally:
                outcome.append(time.monotonic() - started)

        started = time.monotonic()
        r = ptc.run(
            "(tool/search {:q data/q})",
            data={"q": query},
            tools={"search": watched},
            limits={"timeout_ms": 300},
        )
        assert r.error is not None
        assert (r.error.type, r.error.message) == ("timeout", "execution exceeded 300ms limit")
        # the store is free once the run has ended: the next search gets it at once
        hits = store.search_messages("iron", agent_id="a", timeout=1)
        freed = time.monotonic() - started
        assert [m.content for m in hits] == ["iron ore"]
        assert freed < 1.0, freed
        error, ended = outcome
        assert type(error) is SearchTimeout
        match = re.match(STOPPED_BY_THE_RUN, str(error))
        assert match is not None, str(error)
        assert 0.1 < float(match[1]) <= 0.3  # the time the run had left when the tool began
        assert ended < 0.6, ended


def test_a_search_tool_called_once_its_run_stopped_refuses_at_once(backend: Backend) -> None:
    # before: the search ran (and returned its hits to a run that had ended)
    import ptc

    with backend.open() as store:
        store.append(
            {"role": "user", "content": "iron ore", "reasoning": "iron near"}, agent_id="a"
        )
        store.append(
            {"role": "user", "content": "iron for all", "source": "broadcast"}, agent_id="b"
        )
        tools = search_tools(store, agent_id="a")
        # outside a run there is no deadline: each finds its message
        assert [len(tools[n]("iron")) for n in tools] == [1, 1, 1]
        outcome: list[Any] = []
        done = threading.Event()

        def late() -> None:  # calls each search tool after the run's deadline has passed
            time.sleep(0.3)
            for name in ("search-messages", "search-reasoning", "search-broadcasts"):
                asked = time.monotonic()
                try:
                    outcome.append((name, tools[name]("iron")))
                except Exception as e:
                    outcome.append((name, e))
                outcome.append(time.monotonic() - asked)
            done.set()

        r = ptc.run("(tool/late)", tools={"late": late}, limits={"timeout_ms": 100})
        assert r.error is not None and r.error.type == "timeout"
        assert done.wait(10)
        for i, column in enumerate(["content", "reasoning", "content"]):
            (name, error), took = outcome[2 * i], outcome[2 * i + 1]
            assert type(error) is SearchTimeout, (name, error)
            assert str(error) == (
                f"search of {column} was not started: its run has stopped (its time limit "
                "passed, or it was cancelled)"
            )
            assert took < 0.05, (name, took)


# -- item 21: the stores' other numbers ------------------------------------------------------


def test_sqlite_store_timeout_is_checked(tmp_path: Any) -> None:
    # before: inf raised OverflowError when the store opened, nan ValueError from int()
    for ok in (math.inf, 10**30, 0, 2.5):
        store = HistoryStore(tmp_path / "ok.db", timeout=ok)
        assert store.count() == 0
        store.close()
    bad = [
        (math.nan, ValueError, "timeout must be 0 or more seconds, got float nan"),
        (-1, ValueError, "timeout must be 0 or more seconds, got int -1"),
        (True, TypeError, "timeout must be a number of seconds, got bool True"),
        ("3", TypeError, "timeout must be a number of seconds, got str '3'"),
        (None, TypeError, "timeout must be a number of seconds, got None"),
    ]
    for value, error, message in bad:
        with pytest.raises(error) as e:
            HistoryStore(tmp_path / "bad.db", timeout=value)
        assert type(e.value) is error and str(e.value) == message


def test_postgres_store_options_are_checked() -> None:
    url = need_postgres()
    bad: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"min_size": -1}, ValueError, "min_size must be 0 or more, got -1"),
        ({"min_size": True}, TypeError, "min_size must be an int, got bool True"),
        ({"max_size": 2.5}, TypeError, "max_size must be an int, got float 2.5"),
        ({"max_size": 0}, ValueError, "max_size must be 1 or more, got 0"),
        ({"min_size": 5, "max_size": 2}, ValueError, "max_size must be 5 or more, got 2"),
        ({"timeout": math.nan}, ValueError, "timeout must be 0 or more seconds, got float nan"),
        ({"timeout": -1}, ValueError, "timeout must be 0 or more seconds, got int -1"),
        ({"timeout": "3"}, TypeError, "timeout must be a number of seconds, got str '3'"),
        (
            {"retry_timeout": math.nan},
            ValueError,
            "retry_timeout must be 0 or more seconds, got float nan",
        ),
    ]
    for options, error, message in bad:
        with pytest.raises(error) as e:
            PostgresStore(url, schema="t_never_made", **options)
        assert type(e.value) is error and str(e.value) == message
    schema = "t_opts_" + str(threading.get_ident())
    # before: timeout=inf raised OverflowError from the pool
    with PostgresStore(url, schema=schema, timeout=math.inf, retry_timeout=10**400) as store:
        try:
            assert store.count() == 0
        finally:
            with store.connection() as conn:
                conn.execute(f"DROP SCHEMA {schema} CASCADE")
                conn.commit()
