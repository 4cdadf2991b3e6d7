"""Full history store (seed 002, "Search Tools", "Store Methods"; issue 5 "Full history store")."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest
from history_cases import call, calls, result, sys_, user
from ptc.history import HistoryStore, Message, search_tools, to_messages

# What child processes import first.
BOOT = textwrap.dedent(
    """
    import json, sys
    from ptc.history import HistoryStore, Message
    from ptc.history.store import open_store
    """
)


def fill(store: HistoryStore) -> None:
    store.append_many(
        [
            sys_("You mine asteroids."),
            user("mine the iron ore belt", source="direct", sender_id=""),
            {
                "role": "assistant",
                "content": "Heading to the belt.",
                "reasoning": "travel cooldown is 30s so go now",
            },
            calls(call("c1", "travel", to="iron belt")),
            result("c1", "arrived at iron belt"),
        ],
        agent_id="m1",
        run_id="r1",
    )
    store.append(user("enemy spotted near Oslo", source="broadcast", sender_id="m2"), agent_id="m1")
    store.append(user("enemy spotted near Oslo", source="broadcast", sender_id="m2"), agent_id="m3")
    store.append(user("all ships regroup", source="broadcast", sender_id=""), agent_id="m1")
    store.append(user("IRON prices fell", source="direct"), agent_id="m2")


def test_created_on_first_use_with_wal_and_fts5(tmp_path):
    path = tmp_path / "deep" / "dir" / "history.db"
    store = HistoryStore(path)
    assert not path.exists()
    assert store.count() == 0
    assert path.exists()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name='messages_fts'").fetchone()[0]
    assert "fts5" in sql.lower()
    conn.close()
    store.close()


def test_append_keeps_every_field_and_round_trips(backend):
    with backend.open() as store:
        fill(store)
        rows = store.all("m1")
        assert [r.role for r in rows] == [
            "system",
            "user",
            "assistant",
            "assistant",
            "tool",
            "user",
            "user",
        ]
        r = rows[1]
        assert (r.source, r.sender_id, r.run_id, r.agent_id) == ("direct", "", "r1", "m1")
        assert rows[2].reasoning == "travel cooldown is 30s so go now"
        assert rows[3].message.tool_calls[0].name == "travel"
        assert rows[4].message.tool_call_id == "c1"
        assert isinstance(rows[0].created_at, float)
        assert store.system_message("m1").text == "You mine asteroids."
        recent = store.recent("m1", limit=3)
        assert [m.text for m in recent] == [
            "arrived at iron belt",
            "enemy spotted near Oslo",
            "all ships regroup",
        ]
        assert all(isinstance(m, Message) for m in recent)


def test_search_messages_newest_n_returned_oldest_first(backend):
    with backend.open() as store:
        for i in range(10):
            store.append(user(f"iron ore report {i}"), agent_id="a")
        store.append(user("copper"), agent_id="a")
        hits = store.search_messages("iron ore", limit=3, agent_id="a")
        assert [h.content for h in hits] == [f"iron ore report {i}" for i in (7, 8, 9)]
        assert store.search_messages("IRON ORE", limit=1)[0].content == "iron ore report 9"
        assert store.search_messages("ore rep", limit=20, agent_id="a")[0].content.endswith("0")
        assert store.search_messages("nothing like it") == []
        assert store.search_messages("iron", limit=0) == []


def test_search_takes_wildcards_and_nul_literally(backend):
    """``%``, ``_`` and ``\\`` match themselves on both backends (not LIKE's wildcards), and
    a NUL in a query is dropped as it is from stored text."""
    texts = ["100% done", "1000 done", "a_b", "axb", "path\\s", "paths", "nul\x00here"]
    with backend.open() as store:
        store.append_many([{"role": "user", "content": t} for t in texts], agent_id="w")

        def found(q):
            return [m.content for m in store.search_messages(q)]

        assert found("0%") == ["100% done"]
        assert found("%") == ["100% done"]
        assert found("a_b") == ["a_b"]
        assert found("_") == ["a_b"]
        assert found("h\\s") == ["path\\s"]
        assert found("l\x00h") == ["nulhere"]
        assert found("ul\x00") == ["nulhere"]


def test_search_reasoning_and_broadcasts(backend):
    with backend.open() as store:
        fill(store)
        (hit,) = store.search_reasoning("travel cooldown", agent_id="m1")
        assert hit.content == "Heading to the belt." and hit.reasoning.startswith("travel")
        assert store.search_reasoning("travel cooldown", agent_id="m2") == []
        hits = store.search_broadcasts("enemy spotted")
        assert len(hits) == 1  # stored by two agents, returned once
        assert hits[0].sender_id == "m2"
        assert [h.content for h in store.search_broadcasts("e", limit=5)] == [
            "enemy spotted near Oslo",
            "all ships regroup",
        ]
        # tool-call arguments are searchable too
        assert store.search_messages("iron belt", agent_id="m1")[0].role == "assistant"


def test_short_and_quoted_queries(backend):
    with backend.open() as store:
        store.append(user('say "hi" to Bo'))
        store.append(user("OR AND NOT * ( )"))
        assert [h.content for h in store.search_messages("Bo")] == ['say "hi" to Bo']
        assert [h.content for h in store.search_messages('"hi"')] == ['say "hi" to Bo']
        assert [h.content for h in store.search_messages("AND NOT *")] == ["OR AND NOT * ( )"]


def test_search_tools_for_agents(backend):
    with backend.open() as store:
        fill(store)
        tools = search_tools(store, agent_id="m1")
        assert sorted(tools) == ["search-broadcasts", "search-messages", "search-reasoning"]
        t = tools["search-messages"]
        assert t.name == "search-messages" and "(query :string" in t.signature
        by_kw = t(query="iron", limit=2)
        by_pos = t("iron", 2)
        by_map = t({"query": "iron", "limit": 2})  # a PTC-Lisp named-argument map
        assert by_kw == by_pos == by_map
        assert [d["content"] for d in by_kw] == [
            'travel({"to": "iron belt"})',
            "arrived at iron belt",
        ]
        assert set(by_kw[0]) >= {"role", "source", "sender_id", "content", "created_at"}
        (r,) = tools["search-reasoning"]("cooldown")
        assert r["reasoning"] == "travel cooldown is 30s so go now"
        assert len(tools["search-broadcasts"]({"query": "Oslo"})) == 1
        assert len(t("i", limit=10_000)) <= 100  # limit clamped


def test_agent_history_feeds_loop_slices(backend):
    from ptc.history import LoopSlices

    with backend.open() as store:
        fill(store)
        window = store.recent("m1", limit=20)
        system = store.system_message("m1")
        r = LoopSlices().apply([system, *[m for m in window if m.role != "system"]])
        assert [m.role for m in r.messages] == ["system", "user", "assistant", "tool"]
        assert r.messages[1].text == "mine the iron ore belt"


WRITER = BOOT + textwrap.dedent(
    """
    url, opts, proc, n = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    store = open_store(url, timeout=60, **opts)
    for i in range(0, n, 5):
        batch = [Message.user(f"proc {proc} msg {j}") for j in range(i, min(i + 5, n))]
        store.append_many(batch, agent_id=proc)
    for j in range(n, n + 20):
        store.append(Message.user(f"proc {proc} msg {j}"), agent_id=proc)
    store.close()
    """
)


@pytest.mark.timeout(120)
def test_several_processes_writing_at_once_lose_nothing(backend):
    n, procs = 100, 4
    backend.create()  # created (and migrated) before the children race for it
    opts = json.dumps(backend.options)
    children = [
        subprocess.Popen([sys.executable, "-c", WRITER, backend.url, opts, f"p{k}", str(n)])
        for k in range(procs)
    ]
    for c in children:
        assert c.wait(timeout=100) == 0
    with backend.open() as store:
        assert store.count() == procs * (n + 20)
        for k in range(procs):
            texts = {r.content for r in store.all(f"p{k}")}
            assert texts == {f"p{k} msg {j}".replace("p", "proc p", 1) for j in range(n + 20)}
        assert len(store.search_messages("msg 7", limit=1000)) == procs * 11  # 7 and 70-79


KILLED = BOOT + textwrap.dedent(
    """
    url, opts = sys.argv[1], json.loads(sys.argv[2])
    store = open_store(url, **opts)
    i = 0
    while True:
        store.append_many([Message.user(f"row {i} " + "x" * 2000) for _ in range(3)], agent_id="k")
        print(i, flush=True)  # reported only after the commit
        i += 1
    """
)


@pytest.mark.timeout(120)
def test_process_killed_mid_write_leaves_every_committed_message(backend):
    backend.create()
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, backend.url, json.dumps(backend.options)],
        stdout=subprocess.PIPE,
        text=True,
    )
    committed = []
    assert child.stdout is not None
    while len(committed) < 60:
        line = child.stdout.readline()
        assert line, "writer died early"
        committed.append(int(line))
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    time.sleep(0.05)
    if backend.name == "sqlite":
        conn = sqlite3.connect(backend.url.removeprefix("sqlite:///"))
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
    with backend.open() as store:
        rows = {int(r.content.split()[1]) for r in store.all("k")}
        assert set(committed) <= rows
        assert store.count("k") % 3 == 0  # batches are all-or-nothing
        assert store.search_messages("row 5 ", limit=10)[0].content.startswith("row 5 ")


STOPPED_IN_TRANSACTION = BOOT + textwrap.dedent(
    """
    import time
    from ptc.history.pgstore import PostgresStore
    from ptc.history.store import HistoryStore

    class Stopping:
        # a connection that stops the process for good after the batch's second INSERT,
        # inside the open transaction, once it has said so
        def __init__(self, conn):
            self._conn, self._inserts = conn, 0
        def __getattr__(self, name):
            return getattr(self._conn, name)
        def execute(self, sql, *args):
            out = self._conn.execute(sql, *args)
            if sql.startswith("INSERT INTO messages"):
                self._inserts += 1
                if self._inserts == 2:
                    print("inside", flush=True)
                    time.sleep(3600)
            return out

    url, opts = sys.argv[1], json.loads(sys.argv[2])
    store = open_store(url, **opts)
    store.append_many([Message.user("before")], agent_id="t")
    if isinstance(store, HistoryStore):
        conn = store._connect()
        store._connect = lambda: Stopping(conn)
    else:
        opened = PostgresStore.connection
        import contextlib
        @contextlib.contextmanager
        def stopping(self):
            with opened(self) as conn:
                yield Stopping(conn)
        PostgresStore.connection = stopping
    store.append_many([Message.user(f"partial {i}") for i in range(3)], agent_id="t")
    """
)


@pytest.mark.timeout(120)
def test_process_killed_inside_a_write_transaction_leaves_none_of_it(backend):
    """Killed for certain between two INSERTs of one batch (the transaction open, one row of
    it written): the batch is not there at all, and the store works on."""
    backend.create()
    child = subprocess.Popen(
        [sys.executable, "-c", STOPPED_IN_TRANSACTION, backend.url, json.dumps(backend.options)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "inside"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    with backend.open() as store:
        assert [m.content for m in store.all("t")] == ["before"]
        assert store.search_messages("partial") == []
        store.append_many([Message.user("after")], agent_id="t")
        assert [m.content for m in store.all("t")] == ["before", "after"]


def test_threads_share_one_store(backend):
    import threading

    store = backend.open()

    def work(k):
        for i in range(50):
            store.append(Message.user(f"t{k} {i}"), agent_id=f"t{k}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert store.count() == 200
    store.close()


def test_in_memory_store_and_dict_input():
    with HistoryStore(":memory:") as store:
        store.append_many(to_messages([user("a"), user("b")]))
        store.append({"role": "assistant", "content": "c", "x_extra": 1})
        assert [m.text for m in store.recent()] == ["a", "b", "c"]
        assert store.recent()[2].extra["x_extra"] == 1
