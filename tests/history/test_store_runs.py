"""Agent runs and writes in the history store, on SQLite and PostgreSQL (issue 13): idempotent
appends, schema migrations, URLs, a run resumed by another worker process, one worker at a
time per run, and a server restart in the middle of a run."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import Backend, need_postgres
from ptc.history.store import HistoryStore, open_store

ROOT = Path(__file__).resolve().parents[2]


class Crash(BaseException):
    """A worker dying after turn 1, as a killed process would: no final save."""


def half_run(cp: Any) -> str:
    """Runs an agent that dies after its first turn (``(def a 1)``); returns the run id."""
    import ptc

    replies = iter(["```clojure\n(def a 1)\n```"])

    def first(messages: Any) -> str:
        try:
            return next(replies)
        except StopIteration:
            raise Crash from None

    with pytest.raises(Crash):
        ptc.SubAgent(prompt="p", llm=first, max_turns=3, checkpoint=cp).run()
    (run_id,) = cp.runs()
    return run_id


# -- writes ---------------------------------------------------------------------------------------


def test_a_retried_write_with_its_key_stores_nothing_twice(backend: Backend) -> None:
    with backend.open() as store:
        batch = [{"role": "user", "content": "mine iron"}, {"role": "assistant", "content": "ok"}]
        first = store.append_many(batch, agent_id="a", key="run-1:turn-3")
        again = store.append_many(batch, agent_id="a", key="run-1:turn-3")
        assert again == first and len(first) == 2
        assert store.count("a") == 2
        other = store.append_many(batch, agent_id="a", key="run-1:turn-4")
        assert set(other).isdisjoint(first) and store.count("a") == 4
        # without a key every call is a new write
        store.append_many(batch, agent_id="a")
        assert store.count("a") == 6
        assert store.append({"role": "user", "content": "x"}, key="k") == store.append(
            {"role": "user", "content": "x"}, key="k"
        )


def test_a_key_names_one_batch_of_one_agent(backend: Backend) -> None:
    from ptc.history import KeyReusedError

    one = [{"role": "user", "content": "one"}]
    two = [{"role": "user", "content": "uno"}, {"role": "user", "content": "dos"}]
    with backend.open() as store:
        # the same key for two agents: two batches
        a = store.append_many(one, agent_id="a", key="run-7:turn-3")
        b = store.append_many(one, agent_id="b", key="run-7:turn-3")
        assert a != b and store.count("a") == store.count("b") == 1
        # the same key for other messages of the same agent: refused, nothing of it stored
        reused = "key 'run-7:turn-3' of agent 'a' already names a different batch of messages"
        for other in (two, [{"role": "user", "content": "once"}], one + one):
            with pytest.raises(KeyReusedError, match=reused):
                store.append_many(other, agent_id="a", key="run-7:turn-3")
        assert [m.content for m in store.all("a")] == ["one"]
        # a shorter batch than the one stored under the key is another batch too
        store.append_many(two, agent_id="a", key="k2")
        with pytest.raises(KeyReusedError, match="key 'k2' of agent 'a'"):
            store.append_many(two[:1], agent_id="a", key="k2")
        assert [m.content for m in store.all("a")] == ["one", "uno", "dos"]
        assert isinstance(KeyReusedError("x"), ValueError)
        # an ephemeral message (never stored) does not shift the keys of the others
        from ptc.history import synthetic_nudge

        ids = store.append_many([synthetic_nudge(), *two], agent_id="c", key="k3")
        assert store.append_many(two, agent_id="c", key="k3") == ids


# -- schema versions ------------------------------------------------------------------------------

SQLITE_V1 = [
    "CREATE VIRTUAL TABLE messages_fts USING fts5(content, reasoning, content='messages', "
    "content_rowid='id', tokenize='trigram')",
    """CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT, agent_id TEXT NOT NULL DEFAULT '', run_id TEXT,
        role TEXT NOT NULL, content TEXT NOT NULL DEFAULT '', reasoning TEXT, source TEXT,
        sender_id TEXT, tool_call_id TEXT, created_at, stored_at REAL NOT NULL,
        raw TEXT NOT NULL)""",
    """CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
        INSERT INTO messages_fts(rowid, content, reasoning)
        VALUES (new.id, new.content, coalesce(new.reasoning, '')); END""",
    "INSERT INTO messages (agent_id, role, content, stored_at, raw) VALUES ('old', 'user', "
    '\'kept from v1\', 1.0, \'{"role": "user", "content": "kept from v1"}\')',
    "PRAGMA user_version = 1",
]


def _make_v1(backend: Backend) -> None:
    """A store as the first schema version left it, with one message in it."""
    if backend.name == "sqlite":
        conn = sqlite3.connect(backend.url.removeprefix("sqlite:///"))
        for stmt in SQLITE_V1:
            conn.execute(stmt)
        conn.commit()
        conn.close()
        return
    import psycopg
    from ptc.history._pgsql import MIGRATIONS

    schema = backend.options["schema"]
    with psycopg.connect(backend.url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path = {schema}, public")
        conn.execute("CREATE TABLE ptc_schema (version INTEGER NOT NULL)")
        for stmt in dict(MIGRATIONS)[1]:
            conn.execute(stmt)
        conn.execute("INSERT INTO ptc_schema VALUES (1)")
        conn.execute(
            "INSERT INTO messages (agent_id, role, content, stored_at, raw) VALUES "
            "('old', 'user', 'kept from v1', 1.0, %s)",
            (json.dumps({"role": "user", "content": "kept from v1"}),),
        )


def _version(backend: Backend) -> int:
    if backend.name == "sqlite":
        conn = sqlite3.connect(backend.url.removeprefix("sqlite:///"))
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(backend.url) as conn:
        row = conn.execute(f"SELECT max(version) FROM {backend.options['schema']}.ptc_schema")
        return int(row.fetchone()[0])


def _latest(backend: Backend) -> int:
    """The schema version a store is migrated to: PostgreSQL's 4 added ``ptc_calls`` (the
    SQLite store's checkpoint makes that table itself, its schema stays at 3)."""
    return {"sqlite": 3, "postgres": 4}[backend.name]


def test_a_store_of_the_first_schema_is_migrated_on_first_use(backend: Backend) -> None:
    _make_v1(backend)
    assert _version(backend) == 1
    with backend.open() as store:
        assert [r.content for r in store.all("old")] == ["kept from v1"]
        assert store.search_messages("from v1")[0].agent_id == "old"
        ids = store.append_many([{"role": "user", "content": "new"}], agent_id="old", key="k")
        assert (
            store.append_many([{"role": "user", "content": "new"}], agent_id="old", key="k") == ids
        )
        assert store.checkpoint().runs() == []  # the run tables came with version 2
    assert _version(backend) == _latest(backend)
    with backend.open() as store:  # opening again changes nothing
        assert store.count("old") == 2
    assert _version(backend) == _latest(backend)


def _make_v2(backend: Backend) -> None:
    """A store as the second schema version left it: keys unique across all agents."""
    if backend.name == "sqlite":
        from ptc.history import store as sqlite_store

        conn = sqlite3.connect(backend.url.removeprefix("sqlite:///"))
        for stmt in SQLITE_V1[:3]:
            conn.execute(stmt)
        for stmt in sqlite_store._SCHEMA_V2:
            conn.execute(stmt)
        conn.execute("PRAGMA user_version = 2")
        conn.commit()
        conn.close()
        return
    import psycopg
    from ptc.history._pgsql import MIGRATIONS

    schema = backend.options["schema"]
    with psycopg.connect(backend.url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        row = conn.execute(
            "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_trgm'"
        ).fetchone()
        assert row is not None
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"SET search_path = {schema}, public")
        conn.execute("CREATE TABLE ptc_schema (version INTEGER NOT NULL)")
        for version in (1, 2):
            for stmt in dict(MIGRATIONS)[version]:
                conn.execute(stmt.format(trgm=row[0]))
        conn.execute("INSERT INTO ptc_schema VALUES (2)")


def test_a_store_of_the_second_schema_gets_keys_per_agent(backend: Backend) -> None:
    _make_v2(backend)
    assert _version(backend) == 2
    with backend.open() as store:
        a = store.append_many([{"role": "user", "content": "a's"}], agent_id="a", key="turn-1")
        b = store.append_many([{"role": "user", "content": "b's"}], agent_id="b", key="turn-1")
        assert a != b and store.count("a") == store.count("b") == 1
    assert _version(backend) == _latest(backend)


def test_a_store_from_a_newer_ptc_is_refused(backend: Backend) -> None:
    backend.create()
    if backend.name == "sqlite":
        conn = sqlite3.connect(backend.url.removeprefix("sqlite:///"))
        conn.execute("PRAGMA user_version = 99")
        conn.close()
    else:
        import psycopg

        with psycopg.connect(backend.url, autocommit=True) as conn:
            conn.execute(f"INSERT INTO {backend.options['schema']}.ptc_schema VALUES (99)")
    with pytest.raises(RuntimeError, match="version 99, newer than this ptc"):
        backend.open().count()


# -- URLs ---------------------------------------------------------------------------------------


def test_open_store_by_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rel = open_store("sqlite:///rel.db")
    assert isinstance(rel, HistoryStore) and rel.path == "rel.db"
    absolute = open_store(f"sqlite:///{tmp_path}/abs.db")  # four slashes: absolute
    assert absolute.path == f"{tmp_path}/abs.db"
    assert open_store("sqlite:///:memory:").path == ":memory:"
    assert open_store(tmp_path / "plain.db").path == str(tmp_path / "plain.db")
    pg = open_store("postgresql://u@127.0.0.1:1/db", schema="s1")
    assert type(pg).__name__ == "PostgresStore" and pg.schema == "s1"  # connects on first use
    with pytest.raises(ValueError, match="unknown store URL scheme 'mysql'"):
        open_store("mysql://x")
    with pytest.raises(ValueError, match="needs a path"):
        open_store("sqlite://")
    with pytest.raises(ValueError, match="plain identifier"):
        open_store("postgresql://u@h/db", schema="x; drop table y")


# -- runs across workers ----------------------------------------------------------------------

AGENT = textwrap.dedent(
    '''
    import json, os, signal, sys, time
    sys.path.insert(0, {root!r} + "/tests/history")
    import ptc
    from ptc.history.store import open_store
    from ptc.llm import ScriptedLLM

    URL, OPTS = sys.argv[1], json.loads(sys.argv[2])
    STOCK = {{"x1": 3, "x2": 5}}

    def lookup(sku: str) -> int:
        """Stock for a sku."""
        return STOCK[sku]

    def clj(src):
        return "```clojure\\n" + src + "\\n```"

    REPLIES = [
        clj('(def a (tool/lookup "x1"))'),
        clj('(println "a is" a) (def b (tool/lookup "x2"))'),
        clj("(return (+ a b))"),
    ]

    def agent(replies, checkpoint=None):
        return ptc.SubAgent(prompt="Total stock of x1 and x2?", llm=ScriptedLLM(replies),
                            tools=[lookup], checkpoint=checkpoint, compression=True)

    def comparable(step):
        return step.to_dict(include_messages=True, timings=False)

    store = open_store(URL, **OPTS)
    '''
)


def worker(tmp_path: Path, backend: Backend, body: str, name: str = "worker") -> Any:
    script = tmp_path / f"{name}.py"
    script.write_text(AGENT.format(root=str(ROOT)) + textwrap.dedent(body))
    return subprocess.Popen(
        [sys.executable, str(script), backend.url, json.dumps(backend.options)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: Any) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out, err


@pytest.mark.timeout(180)
def test_a_run_started_on_one_worker_is_resumed_on_another(
    tmp_path: Path, backend: Backend
) -> None:
    backend.create()
    code, _, err = finish(
        worker(
            tmp_path,
            backend,
            """
            def kill(messages):
                os.kill(os.getpid(), signal.SIGKILL)
            agent(REPLIES[:2] + [kill], store.checkpoint()).run()
            print("not reached")
            """,
            "first",
        )
    )
    assert code == -signal.SIGKILL, err
    code, out, err = finish(
        worker(
            tmp_path,
            backend,
            """
            (run_id,) = store.checkpoint().runs()
            step = agent(REPLIES[2:]).resume(run_id, store=store)
            print(json.dumps({"step": comparable(step), "run_id": run_id,
                              "saved": comparable(store.checkpoint().load(run_id)[0])}))
            """,
            "second",
        )
    )
    assert code == 0, err
    got = json.loads(out.strip().splitlines()[-1])
    code, out, err = finish(
        # uninterrupted, and checkpointed too: a checkpointed run keeps its data's fingerprint
        worker(
            tmp_path,
            backend,
            "print(json.dumps(comparable(agent(REPLIES, lambda step: None).run())))",
            "whole",
        )
    )
    assert code == 0, err
    expected = json.loads(out.strip().splitlines()[-1])
    assert got["step"]["ok"] and got["step"]["value"] == 8
    assert got["step"] == expected  # as if it had never been interrupted
    assert got["saved"] == expected  # and the store holds the finished run


@pytest.mark.timeout(180)
def test_two_workers_resuming_one_run_one_wins(tmp_path: Path, backend: Backend) -> None:
    import ptc
    from ptc.checkpoint import RunLockedError
    from ptc.llm import ScriptedLLM

    store = backend.open()
    cp = store.checkpoint()
    run_id = half_run(cp)
    assert not cp.load(run_id)[0].ok
    gate = tmp_path / "go"
    holder = worker(
        tmp_path,
        backend,
        f"""
        def wait(messages):
            print("holding", flush=True)
            while not os.path.exists({str(gate)!r}):
                time.sleep(0.02)
            return "```clojure\\n(return (inc a))\\n```"
        step = ptc.SubAgent(prompt="p", llm=wait, max_turns=3).resume({run_id!r}, store=store)
        print(json.dumps({{"ok": step.ok, "value": step.value}}))
        """,
        "holder",
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        late = ptc.SubAgent(
            prompt="p", llm=ScriptedLLM(["```clojure\n(return 0)\n```"]), max_turns=3
        )
        with pytest.raises(RunLockedError, match=f"run '{run_id}' is going on in another worker"):
            late.resume(run_id, store=store)
    finally:
        gate.write_text("go")  # the holder finishes, whatever happened here
    code, out, err = finish(holder)
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == {"ok": True, "value": 2}
    # the holder is done and has let go: the run can be opened again, and it is finished
    again = late.resume(run_id, store=store)  # handed back as it ended
    assert (again.ok, again.value) == (True, 2)
    step, _ = cp.load(run_id)
    assert step.ok and step.value == 2
    store.close()


def test_a_run_going_on_cannot_be_resumed_by_another_worker(
    tmp_path: Path, backend: Backend
) -> None:
    """A worker slow in its second LLM call still holds its run: another worker that takes
    the run for abandoned and resumes it gets RunLockedError, so no turn or tool runs twice
    and the stored run is the first worker's."""
    import ptc
    from ptc.checkpoint import RunLockedError
    from ptc.llm import ScriptedLLM

    gate = tmp_path / "go"
    runner = worker(
        tmp_path,
        backend,
        f"""
        replies = iter([clj("(def a 1)")])
        def slow(messages):
            for r in replies:
                return r
            print("second call", flush=True)
            while not os.path.exists({str(gate)!r}):
                time.sleep(0.02)
            return clj("(return (+ a 100))")
        step = ptc.SubAgent(prompt="p", llm=slow, max_turns=3,
                            checkpoint=store.checkpoint()).run()
        print(json.dumps({{"ok": step.ok, "value": step.value}}))
        """,
        "runner",
    )
    try:
        assert runner.stdout is not None
        assert runner.stdout.readline().strip() == "second call"
        store = backend.open()
        (run_id,) = store.checkpoint().runs()
        late = ptc.SubAgent(prompt="p", llm=ScriptedLLM([clj_("(return (inc a))")]), max_turns=3)
        with pytest.raises(RunLockedError, match=f"run '{run_id}' is going on in another worker"):
            late.resume(run_id, store=store)
    finally:
        gate.write_text("go")  # the runner finishes, whatever happened here
    code, out, err = finish(runner)
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1]) == {"ok": True, "value": 101}
    step, _ = store.checkpoint().load(run_id)
    assert step.ok and step.value == 101 and len(step.turns) == 2
    store.close()


def clj_(src: str) -> str:
    return "```clojure\n" + src + "\n```"


@pytest.mark.timeout(180)
def test_a_server_restart_mid_run_is_retried_and_the_run_completes(tmp_path: Path) -> None:
    """The PostgreSQL server is stopped during the second LLM call and started again a moment
    later; saving that turn waits for it and the run completes with every turn stored."""
    url = need_postgres()
    script = ROOT / "scripts" / "postgres.sh"
    pg_dir = Path(os.environ.get("PTC_PG_DIR", "/tmp/ptc-pg"))
    if not (pg_dir / "data").is_dir():
        msg = f"the test server's data directory {pg_dir}/data is not here (scripts/postgres.sh)"
        if os.environ.get("PTC_REQUIRE_POSTGRES") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    import uuid

    import ptc
    from ptc.history.pgstore import PostgresStore
    from ptc.llm import ScriptedLLM

    schema = "t_" + uuid.uuid4().hex[:12]
    store = PostgresStore(url, schema=schema, retry_timeout=60)
    cp = store.checkpoint()
    cp.runs()  # connected and migrated
    restarted = threading.Event()

    def restart_later() -> None:
        time.sleep(1.0)
        subprocess.run([str(script), "unpause"], check=True, timeout=90)
        restarted.set()

    def second(messages: Any) -> str:
        subprocess.run([str(script), "pause"], check=True, timeout=60)
        threading.Thread(target=restart_later, daemon=True).start()
        return "```clojure\n(def b (+ a 1))\n```"

    replies = ScriptedLLM(["```clojure\n(def a 1)\n```"])
    llm_calls = iter([replies, second, lambda m: "```clojure\n(return (+ a b))\n```"])

    def llm(messages: Any) -> str:
        f = next(llm_calls)
        return str(f(messages))

    try:
        step = ptc.SubAgent(prompt="p", llm=llm, max_turns=4, checkpoint=cp).run()
    finally:
        if not restarted.wait(timeout=120):
            subprocess.run([str(script), "unpause"], timeout=90)
    assert restarted.is_set()
    assert step.ok and step.value == 3
    (run_id,) = cp.runs()
    saved, _ = cp.load(run_id)
    assert saved.ok and [t.number for t in saved.turns] == [1, 2, 3]
    store.close()
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA {schema} CASCADE")


# -- the search tools from a PTC-Lisp program -----------------------------------------------------


def test_search_tools_work_unchanged_from_a_ptc_lisp_subagent(backend: Backend) -> None:
    import ptc
    from ptc.history import search_tools
    from ptc.llm import ScriptedLLM

    with backend.open() as store:
        store.append_many(
            [
                {"role": "user", "content": "mine the iron ore belt", "source": "direct"},
                {"role": "assistant", "content": "Heading out.", "reasoning": "cooldown 30s"},
                {
                    "role": "user",
                    "content": "enemy near Oslo",
                    "source": "broadcast",
                    "sender_id": "m2",
                },
            ],
            agent_id="m1",
        )
        program = (
            '(return {:msgs (map :content (tool/search-messages {:query "IRON" :limit 5}))'
            ' :why (map :reasoning (tool/search-reasoning {:query "cooldown"}))'
            ' :news (map :sender_id (tool/search-broadcasts {:query "oslo"}))})'
        )
        agent = ptc.SubAgent(
            prompt="What do you remember?",
            llm=ScriptedLLM([f"```clojure\n{program}\n```"]),
            tools=search_tools(store, agent_id="m1"),
        )
        step = agent.run()
        assert step.ok, step.error
        assert step.value == {
            "msgs": ["mine the iron ore belt"],
            "why": ["cooldown 30s"],
            "news": ["m2"],
        }


def test_the_async_postgres_store_does_what_the_sync_one_does() -> None:
    import asyncio
    import uuid

    import psycopg
    from ptc.history import AsyncPostgresStore

    url = need_postgres()
    schema = "t_" + uuid.uuid4().hex[:12]

    async def main() -> None:
        async with AsyncPostgresStore(url, schema=schema) as store:
            batch = [{"role": "system", "content": "S"}, {"role": "user", "content": "iron ore"}]
            ids = await store.append_many(batch, agent_id="a", key="k1")
            assert await store.append_many(batch, agent_id="a", key="k1") == ids
            await asyncio.gather(
                *(
                    store.append({"role": "user", "content": f"ore {i}"}, agent_id="a")
                    for i in range(20)
                )
            )
            assert await store.count("a") == 22
            hits = await store.search_messages("ORE", limit=3, agent_id="a")
            assert len(hits) == 3 and all("ore" in h.content for h in hits)
            assert (await store.system_message("a")).text == "S"
            assert len(await store.recent("a", 5)) == 5
            assert await store.search_reasoning("x") == []
            assert await store.search_broadcasts("x") == []

    try:
        asyncio.run(main())
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


# -- review cases: locks, indexes, fresh databases, odd values -----------------------------------


@contextlib.contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty database on the test server (for what is database-wide: extensions)."""
    import uuid

    import psycopg

    url = need_postgres()
    name = "ptc_t_" + uuid.uuid4().hex[:10]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_stores_in_several_schemas_of_a_fresh_database_start_together() -> None:
    from ptc.history import PostgresStore

    with fresh_database() as url:
        errors: list[BaseException] = []

        def open_one(k: int) -> None:
            try:
                with PostgresStore(url, schema=f"s{k}") as store:
                    store.append({"role": "user", "content": f"hello {k}"})
                    assert store.count() == 1
            except BaseException as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=open_one, args=(k,)) for k in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert errors == []


def test_pg_trgm_installed_in_another_schema_is_used() -> None:
    import psycopg
    from ptc.history import PostgresStore

    with fresh_database() as url:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE SCHEMA extensions")
            conn.execute("CREATE EXTENSION pg_trgm SCHEMA extensions")
        with PostgresStore(url, schema="app") as store:
            store.append({"role": "user", "content": "iron ore"})
            assert [r.content for r in store.search_messages("ron o")] == ["iron ore"]


def test_search_uses_the_trigram_index() -> None:
    from ptc.history import PostgresStore
    from ptc.history._pgsql import search_messages

    with fresh_database() as url, PostgresStore(url, schema="app") as store:
        store.append_many([{"role": "user", "content": f"row {i} copper"} for i in range(300)])
        store.append({"role": "user", "content": "one iron row"})
        sql, params = search_messages("iron", 20, None)  # across agents: the trigram index
        with store.connection() as conn:
            conn.execute("ANALYZE messages")
            # on a table this small a scan is cheaper; switched off, the plan shows whether the
            # query can use the trigram index at all (a coalesce() around the column cannot)
            conn.execute("SET enable_seqscan = off")
            conn.execute("SET enable_indexscan = off")
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())
        assert "messages_content_trgm" in plan, plan


def test_options_in_the_url_are_kept() -> None:
    from ptc.history import PostgresStore

    with fresh_database() as url:
        with PostgresStore(url + "?options=-c%20statement_timeout%3D1234", schema="app") as store:
            with store.connection() as conn:
                assert conn.execute("SHOW statement_timeout").fetchone()[0] == "1234ms"
                assert conn.execute("SHOW search_path").fetchone()[0] == "app, public"


def test_odd_values_are_stored_alike_on_both_backends(backend: Backend) -> None:
    with backend.open() as store:
        store.append({"role": "user", "content": "nul\x00byte", "reasoning": "r\x00"}, agent_id="o")
        store.append({"role": "user", "content": "nan time", "created_at": float("nan")})
        store.append({"role": "user", "content": "inf time", "created_at": float("inf")})
        (row,) = store.all("o")
        assert row.content == "nulbyte"  # the searchable text
        assert row.message.text == "nul\x00byte"  # the message itself, whole
        assert [r.created_at for r in store.search_messages(" time")] == ["nan", "inf"]


def test_a_lost_lock_session_is_taken_again_and_the_run_completes() -> None:
    """The connection holding a run's advisory lock is killed mid-run (as a restart or a
    network cut would): the next save takes the lock again and the resumed run completes."""
    import psycopg
    import ptc
    from ptc.history import PostgresStore

    with fresh_database() as url, PostgresStore(url, schema="app") as store:
        cp = store.checkpoint()
        run_id = half_run(cp)

        def cut_the_lock(messages: Any) -> str:
            with psycopg.connect(url, autocommit=True) as admin:
                killed = admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks "
                    "WHERE locktype = 'advisory' AND granted"
                ).fetchall()
            assert killed == [(True,)]
            return "```clojure\n(return (inc a))\n```"

        step = ptc.SubAgent(prompt="p", llm=cut_the_lock, max_turns=3).resume(run_id, store=store)
        assert step.ok and step.value == 2
        assert cp.load(run_id)[0].ok


def test_a_sqlite_lease_taken_over_stops_the_old_holder(tmp_path: Path) -> None:
    import ptc
    from ptc.checkpoint import RunLockedError

    store = HistoryStore(tmp_path / "h.db")
    cp = store.checkpoint()
    run_id = half_run(cp)

    def taken_over(messages: Any) -> str:
        conn = sqlite3.connect(tmp_path / "h.db")
        conn.execute("UPDATE ptc_leases SET owner = 'other-host:1:x'")
        conn.commit()
        conn.close()
        return "```clojure\n(return (inc a))\n```"

    with pytest.raises(RunLockedError, match="other-host:1:x"):
        ptc.SubAgent(prompt="p", llm=taken_over, max_turns=3).resume(run_id, store=store)


def test_resume_with_a_store_url_or_an_async_store(backend: Backend) -> None:
    import ptc
    from ptc.llm import ScriptedLLM

    store = backend.open()
    run_id = half_run(store.checkpoint())
    target: Any = backend.url
    if backend.name == "postgres":
        from ptc.history import AsyncPostgresStore

        target = AsyncPostgresStore(backend.url, **backend.options)
    agent = ptc.SubAgent(prompt="p", llm=ScriptedLLM(["```clojure\n(return (inc a))\n```"]))
    step = agent.resume(run_id, store=target)
    assert step.ok and step.value == 2
    store.close()


# -- word search on PostgreSQL (opt-in) -----------------------------------------------------------

WORDS = [
    "mining iron ore",  # 1
    "the ironclad sailed",  # 2
    "ports of call",  # 3
    "the port authority",  # 4
    "iron, iron and more iron",  # 5
]


def test_word_search_matches_whole_words_and_ranks() -> None:
    """``search="words"``: a tsvector GIN index, whole words instead of substrings, and with
    more matches than ``limit`` the best-ranked ones (returned oldest first, as always)."""
    from ptc.history import PostgresStore

    with fresh_database() as url:
        with (
            PostgresStore(url, schema="subs") as subs,
            PostgresStore(url, schema="words", search="words") as words,
            PostgresStore(url, schema="stems", search="words", search_config="english") as stems,
        ):
            for store in (subs, words, stems):
                store.append_many([{"role": "user", "content": t} for t in WORDS], agent_id="a")

            def found(store: Any, q: str, limit: int = 20) -> list[str]:
                return [m.content for m in store.search_messages(q, limit)]

            # substrings: "iron" is in "ironclad" too
            assert found(subs, "iron") == [WORDS[0], WORDS[1], WORDS[4]]
            # words: not in "ironclad"; "ports" is not "port" without stemming
            assert found(words, "iron") == [WORDS[0], WORDS[4]]
            assert found(words, "ports") == [WORDS[2]]
            assert found(words, "IRON ore") == [WORDS[0]]  # every word, any case
            # the english configuration stems: "ports" finds "port" too
            assert found(stems, "ports") == [WORDS[2], WORDS[3]]
            # limit 1 of two matches: the newest by substring, the best-ranked by words
            # (three occurrences of "iron" outrank one, whatever the age)
            assert found(subs, "iron", 1) == [WORDS[4]]
            stored = words.append({"role": "user", "content": "iron"}, agent_id="a")
            assert stored is not None
            assert found(words, "iron", 1) == [WORDS[4]]
            # nothing to match: no words, no rows
            assert found(words, "") == []
            with words.connection() as conn:
                conn.execute("ANALYZE messages")
                conn.execute("SET enable_seqscan = off")
                from ptc.history._pgsql import search_messages

                sql, params = search_messages("iron", 20, None, "simple")
                plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params).fetchall())
            assert "messages_content_words_simple" in plan, plan


def test_word_search_options_are_checked() -> None:
    from ptc.history import PostgresStore

    with pytest.raises(ValueError, match="search must be 'substring' or 'words', got 'fuzzy'"):
        PostgresStore("postgresql://u@127.0.0.1:1/db", search="fuzzy")
    with pytest.raises(ValueError, match="search_config must name a text search configuration"):
        PostgresStore("postgresql://u@127.0.0.1:1/db", search="words", search_config="x'; --")


def test_word_search_in_the_async_store() -> None:
    import asyncio

    from ptc.history import AsyncPostgresStore

    async def main(url: str) -> list[str]:
        store = AsyncPostgresStore(url, schema="aw", search="words")
        try:
            await store.append_many([{"role": "user", "content": t} for t in WORDS])
            return [m.content for m in await store.search_messages("iron")]
        finally:
            await store.close()

    with fresh_database() as url:
        assert asyncio.run(main(url)) == [WORDS[0], WORDS[4]]


# -- run locks under load ----------------------------------------------------------------------


def test_runs_at_once_do_not_starve_the_store(backend: Backend) -> None:
    """Each run holds its lock for its whole life; on PostgreSQL that is a session of its own,
    so more runs than the pool has connections still save their turns (a pool of 2, 4 runs
    meeting in their LLM calls)."""
    import ptc

    extra = {"max_size": 2, "timeout": 5, "retry_timeout": 5} if backend.name == "postgres" else {}
    store = backend.open(**extra)
    cp = store.checkpoint()
    meet = threading.Barrier(4, timeout=30)
    results: list[Any] = []

    def run(i: int) -> None:
        replies = iter([clj_(f"(def a {i})"), clj_("(return (* a 10))")])

        def llm(messages: Any) -> str:
            reply = next(replies)
            if reply.startswith("```clojure\n(def"):
                meet.wait()  # every run is going on, each holding its lock
            return reply

        results.append(ptc.SubAgent(prompt="p", llm=llm, max_turns=3, checkpoint=cp).run())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(s.value for s in results if s.ok) == [0, 10, 20, 30]
    assert len(cp.runs()) == 4
    store.close()


def test_a_run_left_before_its_end_frees_its_lock_when_closed(backend: Backend) -> None:
    import ptc

    store = backend.open()
    cp = store.checkpoint()
    replies = iter([clj_("(def a 1)"), clj_("(return a)")])
    agent = ptc.SubAgent(prompt="p", llm=lambda m: next(replies), max_turns=3, checkpoint=cp)
    with agent.iter() as turns:
        first = next(turns)  # the run goes on, holding its lock
        assert first.number == 1
    (run_id,) = cp.runs()
    # closed: another worker may take the run over
    done = ptc.SubAgent(prompt="p", llm=lambda m: clj_("(return (+ a 1))"), max_turns=3)
    step = done.resume(run_id, store=store)
    assert step.ok and step.value == 2
    store.close()


def test_a_sink_with_a_lock_attribute_that_is_no_lock_factory_still_saves() -> None:
    import ptc

    class Sink:
        def __init__(self) -> None:
            self.lock = threading.Lock()  # the sink's own mutex, not a run lock
            self.saved: list[int] = []

        def save(self, step: Any, run_id: str) -> None:
            with self.lock:
                self.saved.append(len(step.turns))

    sink = Sink()
    step = ptc.SubAgent(prompt="p", llm=lambda m: clj_("(return 1)"), checkpoint=sink).run()
    assert step.ok and step.value == 1 and sink.saved[-1] == 1
