"""A checkpoint's rows in the store (SQLite and PostgreSQL) read back as untrusted (issue 29):
a malformed row names the store, the row and the run, and only that run fails to load; a run
whose end was never saved loads finished; a count no row can hold is refused."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import ptc
import pytest
from conftest import Backend
from ptc.checkpoint import CheckpointError

DEEP = "[" * 100_000 + "]" * 100_000
COUNT = "a count (an integer from 0 to 9007199254740992)"


class Crash(BaseException):
    """A worker dying in the middle of a run: nothing more is saved."""


def clj(src: str) -> str:
    return "```clojure\n" + src + "\n```"


def runs(cp: Any) -> tuple[str, str]:
    """Run A (two turns, then a crash) and run B (finished: 5)."""
    replies = iter([clj("(def a 1)"), clj("(def b 2)")])

    def llm(messages: Any) -> str:
        try:
            return next(replies)
        except StopIteration:
            raise Crash from None

    with pytest.raises(Crash):
        ptc.SubAgent(prompt="p", llm=llm, checkpoint=cp, max_turns=5).run()
    b = ptc.SubAgent(prompt="q", llm=lambda m: clj("(return 5)"), checkpoint=cp).run()
    assert b.ok
    a, b_id = cp.runs()
    return a, b_id


def execute(backend: Backend, store: Any, sql: str, args: tuple[Any, ...]) -> None:
    """Writes behind the checkpoint's back, as a broken or hostile writer would."""
    if backend.name == "sqlite":
        import sqlite3

        with sqlite3.connect(store.path) as db:
            db.execute(sql.replace("%s", "?"), args)
        return
    with store.connection() as conn:
        conn.execute(sql, args)


@pytest.fixture
def opened(backend: Backend) -> Iterator[tuple[Backend, Any]]:
    store = backend.open()
    try:
        yield backend, store
    finally:
        store.close()


def where(backend: Backend, store: Any) -> str:
    return store.path if backend.name == "sqlite" else repr(store)


# (what is written, to which run's row, the row the error names, the reason)
ROWS = [
    (
        "UPDATE ptc_turns SET turn = %s WHERE run_id = %s AND number = 1",
        "[1, 2]",
        "ptc_turns row of turn 1",
        "turn: expected an object, got a list of 2 items",
    ),
    (
        "UPDATE ptc_turns SET turn = %s WHERE run_id = %s AND number = 2",
        DEEP,
        "ptc_turns row of turn 2",
        "the JSON is nested too deeply to load",
    ),
    (
        "UPDATE ptc_turns SET usage = %s WHERE run_id = %s AND number = 2",
        '{"input_tokens": "<script>alert(1)</script>"}',
        "ptc_turns row of turn 2",
        f"usage.input_tokens: expected {COUNT}, got the string '<script>alert(1)</script>'",
    ),
    (
        "UPDATE ptc_turns SET calls = %s WHERE run_id = %s AND number = 2",
        100_000_000,
        "ptc_turns row of turn 2",
        "step.calls: 100000000 LLM requests for 2 turns; a step makes one request per turn and "
        "at most 1000 that went unanswered",
    ),
    (
        "UPDATE ptc_runs SET context = %s WHERE run_id = %s",
        '{"mission": 5}',
        "ptc_runs.context",
        "context.mission: expected a string, got the integer 5",
    ),
    (
        "UPDATE ptc_runs SET final = %s WHERE run_id = %s",
        "[1]",
        "ptc_runs.final",
        "step: expected an object, got a list of 1 item",
    ),
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("sql", "value", "row", "reason"), ROWS, ids=[str(i) for i in range(6)])
def test_a_malformed_row_names_the_store_row_and_run_and_other_runs_still_load(
    opened: tuple[Backend, Any], sql: str, value: Any, row: str, reason: str
) -> None:
    backend, store = opened
    cp = store.checkpoint()
    a, b = runs(cp)
    execute(backend, store, sql, (value, a))
    with pytest.raises(CheckpointError) as e:
        cp.load(a)
    assert str(e.value) == f"{where(backend, store)}, {row} (run {a!r}): {reason}"
    assert (e.value.row, e.value.run_id, e.value.line) == (row, a, None)
    assert cp.load(b)[0].value == 5 and cp.runs() == [a, b]


def test_a_turn_row_whose_text_is_not_json_is_named(opened: tuple[Backend, Any]) -> None:
    backend, store = opened
    cp = store.checkpoint()
    a, b = runs(cp)
    execute(backend, store, "UPDATE ptc_turns SET turn = %s WHERE run_id = %s", ("{", a))
    with pytest.raises(CheckpointError) as e:
        cp.load(a)
    assert str(e.value).startswith(
        f"{where(backend, store)}, ptc_turns row of turn 1 (run {a!r}): not valid JSON ("
    )
    assert cp.load(b)[0].value == 5


def test_a_run_whose_end_was_not_saved_loads_finished(opened: tuple[Backend, Any]) -> None:
    backend, store = opened
    cp = store.checkpoint()
    _, b = runs(cp)
    execute(backend, store, "UPDATE ptc_runs SET final = NULL WHERE run_id = %s", (b,))
    step, _ = cp.load(b)
    assert (step.ok, step.value, step.error, len(step.turns)) == (True, 5, None, 1)


def test_sqlite_rows_of_the_wrong_type_are_named(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite keeps what it is given whatever the column's type: a turn number as text, a run
    id as bytes."""
    import sqlite3

    store = Backend("sqlite", f"sqlite:///{tmp_path}/history.db").open()
    cp = store.checkpoint()
    a, b = runs(cp)
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE ptc_turns SET number = 'two' WHERE run_id = ? AND number = 2", (a,))
        db.execute("INSERT INTO ptc_runs (run_id, context) VALUES (?, '{}')", (b"\xff",))
    with pytest.raises(CheckpointError) as e:
        cp.load(a)
    assert str(e.value) == (
        f"{store.path}, a ptc_turns row (run {a!r}): number: expected a turn number (1 or "
        "more), got the string 'two'"
    )
    with caplog.at_level(logging.WARNING, logger="ptc"):
        assert cp.runs() == [a, b]
    assert (
        f"{store.path}, a ptc_runs row: run_id: expected a string, got a value of type bytes "
        "(skipped)" in caplog.messages
    )
    with pytest.raises(CheckpointError) as e:
        cp.load()  # the last run started is the one with the bytes id
    assert str(e.value) == (
        f"{store.path}, the last ptc_runs row: run_id: expected a string, got a value of type bytes"
    )
    store.close()


def test_a_run_resumed_after_an_outage_loads_its_later_turns(opened: tuple[Backend, Any]) -> None:
    """The outage saved the run's final Step (llm_error, one turn); the resumed run saved a
    second turn and died: loading gives the two turns, not the stale final."""
    _, store = opened
    cp = store.checkpoint()
    replies = iter([clj("(def a 1)")])

    def outage(messages: Any) -> str:
        try:
            return next(replies)
        except StopIteration:
            raise ValueError("provider down") from None

    step = ptc.SubAgent(prompt="p", llm=outage, checkpoint=cp, max_turns=5).run()
    assert step.error is not None and step.error.type == "llm_error"
    later = iter([clj("(def b 2)")])

    def crash(messages: Any) -> str:
        try:
            return next(later)
        except StopIteration:
            raise Crash from None

    with pytest.raises(Crash):
        ptc.SubAgent(prompt="p", llm=crash, max_turns=5).resume(store.checkpoint())
    saved, _ = cp.load()
    assert [t.number for t in saved.turns] == [1, 2] and saved.error is None and not saved.ok


# --- what a run saves reads back; run ids a host passes (second hostile batch) -----------------


def test_a_reply_with_a_lone_surrogate_is_saved_and_read_back(
    opened: tuple[Backend, Any],
) -> None:
    """The drivers refuse a lone surrogate: the save raised UnicodeEncodeError out of run()."""
    _, store = opened
    cp = store.checkpoint()
    reply = clj("(def a 1)") + "\nnote: \ud800 (a lone surrogate)"
    step = ptc.SubAgent(
        prompt="Zähle", llm=iter_llm([reply, clj("(return (inc a))")]), checkpoint=cp
    ).run()
    assert (step.ok, step.value) == (True, 2)
    loaded, _ = cp.load()
    assert (loaded.ok, loaded.value, loaded.turns[0].response) == (True, 2, reply)
    assert loaded.context.mission == "Zähle"


def iter_llm(replies: list[str]) -> Any:
    it = iter(replies)
    return lambda messages: next(it)


@pytest.mark.parametrize(
    "run_id", ["x\x00y", "\ud800", "r" * 100], ids=["nul", "surrogate", "long"]
)
def test_a_run_id_no_run_has_is_a_run_that_is_not_there(
    opened: tuple[Backend, Any], run_id: str
) -> None:
    """PostgreSQL text holds no NUL and neither driver takes a lone surrogate: each reached the
    driver (DataError, UnicodeEncodeError) when loaded, locked or resumed."""
    backend, store = opened
    cp = store.checkpoint()
    runs(cp)
    missing = f"{where(backend, store)}: no run {run_id!r}"
    with pytest.raises(LookupError) as e:
        cp.load(run_id)
    assert str(e.value) == missing
    with pytest.raises(LookupError) as e:
        ptc.SubAgent(prompt="p", llm=iter_llm([])).resume(cp, run_id)
    assert str(e.value) == missing


def test_a_run_id_that_is_not_text_is_a_type_error(opened: tuple[Backend, Any]) -> None:
    """An int reached the SQL (PostgreSQL: text = smallint) or the driver."""
    _, store = opened
    cp = store.checkpoint()
    runs(cp)
    for bad, shown in ((5, "the integer 5"), (b"r", "a value of type bytes")):
        with pytest.raises(TypeError) as e:
            cp.load(bad)
        assert str(e.value) == f"run_id: expected a string, got {shown}"
        with pytest.raises(TypeError) as e, cp.lock(bad):
            pass
        assert str(e.value) == f"run_id: expected a string, got {shown}"


def test_a_run_id_the_database_cannot_hold_is_refused_when_saved(
    opened: tuple[Backend, Any],
) -> None:
    backend, store = opened
    cp = store.checkpoint()
    step = ptc.SubAgent(prompt="p", llm=iter_llm([clj("(return 1)")])).run()
    bad = ["r\udc80"] + (["x\x00y"] if backend.name == "postgres" else [])
    reasons = [
        "it holds a lone surrogate (U+DC80 at index 1)",
        "it holds a NUL character (at index 1)",
    ]
    for run_id, reason in zip(bad, reasons, strict=False):
        with pytest.raises(ValueError) as e:
            cp.save(step, run_id)
        assert str(e.value) == f"{where(backend, store)}: cannot save run {run_id!r}: {reason}"
    assert cp.runs() == []
