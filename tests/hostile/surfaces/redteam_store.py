"""Red team, history stores and their search tools (SQLite and PostgreSQL): what the host
appends that the driver cannot take is an error naming the message and field, a program cannot
widen a search beyond its agent nor reach the full-text query syntax, and what a search hands
a program is bounded by the run's memory, not by the store's largest messages."""

from __future__ import annotations

import os
import resource
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import case


@contextmanager
def _store(backend: str, tmp: Path) -> Iterator[Any]:
    if backend == "sqlite":
        from ptc.history import HistoryStore

        store = HistoryStore(tmp / "history.db")
        try:
            yield store
        finally:
            store.close()
        return
    import psycopg
    from ptc.history import PostgresStore

    url = os.environ["PTC_TEST_POSTGRES_URL"]
    schema = "rt_" + uuid.uuid4().hex[:12]
    store = PostgresStore(url, schema=schema)
    try:
        yield store
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


def _error(fn: Callable[[], Any]) -> BaseException | None:
    try:
        fn()
    except Exception as e:
        return e
    return None


def _scope(backend: str, tmp: Path) -> None:
    """The search tools are bound to agent "a": a program passing another agent, a timeout,
    extra positional arguments or a wider limit gets a tool error or a's matches only."""
    import ptc
    from ptc.history import search_tools

    with _store(backend, tmp) as store:
        store.append_many(
            [{"role": "user", "content": f"secret of b {i}"} for i in range(5)], agent_id="b"
        )
        store.append({"role": "user", "content": "secret of a"}, agent_id="a")
        tools = search_tools(store, agent_id="a", max_limit=3)
        for program in [
            '(tool/search-messages {:query "secret" :agent-id "b"})',
            '(tool/search-messages {:query "secret" :agent_id "b"})',
            '(tool/search-messages {:query "secret" :timeout 1000})',
            '(tool/search-messages "secret" 5 "b")',
            '(tool/search-reasoning {:query "secret" :agent-id nil})',
        ]:
            r = ptc.run(program, tools=tools)
            assert r.error is not None and r.error.type == "tool_error", (program, r)
            assert "unexpected keyword argument" in r.error.message or (
                "positional arguments" in r.error.message
            ), (program, r.error.message)
        for program in [
            '(map :content (tool/search-messages "secret" 1000))',
            '(map :content (tool/search-messages {:query "secret" :limit -1}))',
            '(map :content (tool/search-broadcasts "secret"))',
        ]:
            r = ptc.run(program, tools=tools)
            assert r.error is None, (program, r.error)
            assert list(r.value) in ([], ["secret of a"]), (program, r.value)


@case(seconds=30, memory_mb=300)
def case_a_program_cannot_widen_its_search_sqlite(tmp: Path) -> None:
    _scope("sqlite", tmp)


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_a_program_cannot_widen_its_search_postgres(tmp: Path) -> None:
    _scope("postgres", tmp)


#: Query text that means something to FTS5 or LIKE, each stored once literally.
SYNTAX = ['"', "a*", "NEAR(x y)", "content:", "-x", "^x", "x OR y", "100%", "a_b", "\\"]


def _literal(backend: str, tmp: Path) -> None:
    """Each query is matched as the text it is: FTS5 operators, quotes, column filters and
    LIKE's % and _ find the messages that contain them and nothing else (no syntax error, no
    match-everything)."""
    with _store(backend, tmp) as store:
        store.append_many(
            [{"role": "user", "content": f"row {i}: <{text}>"} for i, text in enumerate(SYNTAX)]
            + [{"role": "user", "content": "plain words, x and y, a b and ab"}],
            agent_id="a",
        )
        for i, text in enumerate(SYNTAX):
            found = [m.content for m in store.search_messages(f"<{text}>", agent_id="a")]
            assert found == [f"row {i}: <{text}>"], (text, found)
            found = [m.content for m in store.search_messages(text, agent_id="a")]
            assert f"row {i}: <{text}>" in found, (text, found)
            assert all(text.lower() in c.lower() for c in found), (text, found)


@case(seconds=30, memory_mb=300)
def case_query_syntax_is_literal_text_sqlite(tmp: Path) -> None:
    _literal("sqlite", tmp)


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_query_syntax_is_literal_text_postgres(tmp: Path) -> None:
    _literal("postgres", tmp)


@case(seconds=30, memory_mb=300)
def case_nul_in_a_message_and_a_query(tmp: Path) -> None:
    """A NUL in a message is kept in the stored message (its searchable text drops it, as
    PostgreSQL must), and a query with a NUL finds it."""
    with _store("sqlite", tmp) as store:
        store.append({"role": "user", "content": "left\x00right"}, agent_id="a")
        (found,) = store.search_messages("left\x00right", agent_id="a")
        assert found.content == "leftright"
        assert found.message.text == "left\x00right"
        assert [m.text for m in store.recent("a")] == ["left\x00right"]


def _surrogates(backend: str, tmp: Path) -> None:
    """A message holding a lone surrogate (JSON's "\\udc00" from a provider) is stored and
    reads back exactly (its JSON keeps the escape), and a search for it finds it (the searched
    text holds U+FFFD in its place, and so does the query). The driver's UnicodeEncodeError
    said neither the message nor the field."""
    with _store(backend, tmp) as store:
        err = _error(lambda: store.append({"role": "user", "content": "a\udc00b"}, agent_id="a"))
        assert err is None, repr(err)
        (found,) = store.recent("a", 5)
        assert found.text == "a\udc00b", found
        (hit,) = store.search_messages("\udc00", agent_id="a")
        assert hit.message.text == "a\udc00b" and hit.content == "a\ufffdb", hit


@case(seconds=30, memory_mb=300)
def case_a_lone_surrogate_in_a_message_sqlite(tmp: Path) -> None:
    _surrogates("sqlite", tmp)


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_a_lone_surrogate_in_a_message_postgres(tmp: Path) -> None:
    _surrogates("postgres", tmp)


def _cyclic_and_deep(backend: str, tmp: Path) -> None:
    """A message that contains itself, or holds 100,000 nested lists in an extra field: an
    error naming the message (as the store's other checks do: ``messages[0].content[0].text:
    expected a str``), never ``ValueError: Circular reference detected`` or RecursionError."""
    with _store(backend, tmp) as store:
        cyclic: dict[str, Any] = {"role": "user", "content": "x"}
        cyclic["meta"] = cyclic
        deep: list[Any] = []
        inner = deep
        for _ in range(100_000):
            inner.append([])
            inner = inner[0]
        for message in (cyclic, {"role": "user", "content": "x", "extra": deep}):
            err = _error(lambda message=message: store.append(message, agent_id="a"))
            assert isinstance(err, TypeError | ValueError), repr(err)
            assert "messages[0]" in str(err), err
        assert store.count() == 0


@case(seconds=30, memory_mb=300)
def case_a_message_that_contains_itself_or_nests_100000_deep_sqlite(tmp: Path) -> None:
    _cyclic_and_deep("sqlite", tmp)


@case(seconds=60, memory_mb=400, needs=("postgres",))
def case_a_message_that_contains_itself_or_nests_100000_deep_postgres(tmp: Path) -> None:
    _cyclic_and_deep("postgres", tmp)


def _peak_mb() -> int:
    """This process's peak RSS so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _bounded_search(backend: str, tmp: Path) -> None:
    """40 stored messages of 4 MB each (a model's long replies); a program asks the search tool
    for 100 matches with max_memory 64 MB. The store and the tool built every match in Python
    first (the stored JSON, the searched text and the message: peak RSS grew by 446 MB during
    the search); what a search hands a program is bounded: each text cut to 4,000 characters
    (ptc.history.HIT_CHARS) with a note of its length, cut by the query itself."""
    import ptc
    from ptc.history import search_tools

    with _store(backend, tmp) as store:
        words = "w " * 2_000_000
        for i in range(40):
            store.append({"role": "user", "content": f"needle {i} {words}"}, agent_id="a")
        if backend == "sqlite":
            db = sqlite3.connect(store.path)
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            db.close()
        before = _peak_mb()
        r = ptc.run(
            '(let [found (tool/search-messages {:query "needle" :limit 100})]'
            " [(count found) (count (:content (first found)))])",
            # PostgreSQL's ILIKE over 160 MB takes about 2 s on a loaded machine
            tools=search_tools(store, agent_id="a", timeout=20),
            limits={"max_memory": 64 << 20, "timeout_ms": 30_000},
        )
        grown = _peak_mb() - before  # SAFETY.md's bound for a run: 1.2 x max_memory + 32 MB
        assert r.error is None, r.error
        note = len("... [cut: 4,000,009 characters in all, the first 4,000 shown]")
        assert r.value == [40, 4_000 + note], r.value
        assert grown < 64 * 1.2 + 32, f"peak RSS grew by {grown} MB during the search"


@case(seconds=90, memory_mb=300)
def case_search_results_are_bounded_by_the_runs_memory(tmp: Path) -> None:
    _bounded_search("sqlite", tmp)


@case(seconds=120, memory_mb=400, needs=("postgres",))
def case_search_results_are_bounded_by_the_runs_memory_postgres(tmp: Path) -> None:
    _bounded_search("postgres", tmp)
