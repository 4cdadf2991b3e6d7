"""Checkpoints and resume: what a checkpoint (a JSON-lines file, SQLite or PostgreSQL rows) or
a saved Step holds is untrusted. A torn or corrupt line never hides later saves; a bad line or
row is named (file or store, line or row, run) and only its run fails to load; a run is resumed
only by the agent it belongs to; a run whose end was never saved loads finished; and no count
read from a record makes anything of that size."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from . import case

DEEP = "[" * 100_000 + "]" * 100_000


class _Crash(BaseException):
    """The process dying in the middle of a run: nothing more is saved."""


def _clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


def _crashing(replies: list[str]) -> Any:
    it = iter(replies)

    def llm(messages: Any) -> str:
        try:
            return next(it)
        except StopIteration:
            raise _Crash from None

    return llm


def _raises(exc: type[BaseException], fn: Any) -> BaseException:
    try:
        fn()
    except exc as e:
        return e
    raise AssertionError(f"{fn} did not raise {exc.__name__}")


def _two_runs(path: Path) -> tuple[str, str]:
    """Run A (three turns, then a crash) and run B (finished: 5) in one JSON-lines file."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    replies = [_clj("(def a 1)"), _clj("(def b 2)"), _clj("(def c 3)")]
    agent = ptc.SubAgent("p", llm=_crashing(replies), checkpoint=JsonlCheckpoint(path))
    _raises(_Crash, agent.run)
    done = ptc.SubAgent("q", llm=lambda m: _clj("(return 5)"), checkpoint=JsonlCheckpoint(path))
    assert done.run().value == 5
    a, b = JsonlCheckpoint(path).runs()
    return a, b


@case(seconds=60, memory_mb=400)
def case_a_torn_last_line_hides_no_later_save_and_no_tool_runs_twice(tmp: Path) -> None:
    """Item 4: a crash mid-write leaves ``{"run_id": "r", "event": "tu`` with no newline;
    the resumed turns must be read back, a second resume must call no tool again and the
    finished run must load as finished."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    path, calls = tmp / "runs.jsonl", []

    def lookup(sku: str) -> int:
        """Stock for a sku."""
        calls.append(sku)
        return {"x1": 3, "x2": 5}[sku]

    def agent(replies: list[str]) -> ptc.SubAgent:
        return ptc.SubAgent(
            "Total stock?", llm=_crashing(replies), tools=[lookup], checkpoint=JsonlCheckpoint(path)
        )

    _raises(_Crash, agent([_clj('(def a (tool/lookup "x1"))')]).run)
    with path.open("a", encoding="utf-8") as f:
        f.write('{"run_id": "r", "event": "tu')
    _raises(
        _Crash, lambda: agent([_clj('(def b (tool/lookup "x2"))')]).resume(JsonlCheckpoint(path))
    )
    assert len(JsonlCheckpoint(path).load()[0].turns) == 2
    step = agent([_clj("(return (+ a b))")]).resume(JsonlCheckpoint(path))
    assert step.ok and step.value == 8 and calls == ["x1", "x2"], calls
    final, _ = JsonlCheckpoint(path).load()
    assert final.ok and final.value == 8 and len(final.turns) == 3


@case(seconds=60, memory_mb=400)
def case_a_corrupt_middle_line_is_named_and_ends_no_history(tmp: Path) -> None:
    """Item 4: one corrupt line in the middle is reported with file, line and run; the runs
    saved after it still load."""
    from ptc.checkpoint import CheckpointError, JsonlCheckpoint

    path = tmp / "runs.jsonl"
    a, b = _two_runs(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2][:-7] + "\x00garbage"  # A's turn 2: its run id still readable
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = _raises(CheckpointError, lambda: JsonlCheckpoint(path).load(a))
    assert isinstance(err, CheckpointError)
    assert (err.path, err.line, err.run_id) == (str(path), 3, a), err
    assert str(err).startswith(f"{path}, line 3 (run {a!r}): not valid JSON ("), err
    assert JsonlCheckpoint(path).load(b)[0].value == 5


@case(seconds=60, memory_mb=400)
def case_malformed_lines_in_a_shared_file_name_their_run_and_spare_the_others(tmp: Path) -> None:
    """Item 18: a JSON array, no run_id, a turn number as a string, 100,000-deep JSON and wrong
    types: typed errors with file, line and run, never TypeError/KeyError/RecursionError; the
    other runs of the file still load."""
    from ptc.checkpoint import CheckpointError, JsonlCheckpoint

    path = tmp / "runs.jsonl"
    a, b = _two_runs(path)
    start = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    bad = {
        "r-number": '{"run_id": "r-number", "event": "turn", "turn": {"number": "1"}}',
        "r-deep": '{"run_id": "r-deep", "event": "turn", "turn": ' + DEEP + "}",
        "r-types": '{"run_id": "r-types", "event": "turn", "turn": {"number": 1, '
        '"program": 5, "prints": [], "tool_calls": [], "memory": [], "success": true}, '
        '"calls": 1, "usage": {}}',
    }
    with path.open("a", encoding="utf-8") as f:
        for line in ("[1, 2]", '{"event": "turn"}', DEEP):
            f.write(line + "\n")
        for run, line in bad.items():
            f.write(json.dumps({**start, "run_id": run}) + "\n" + line + "\n")
    cp = JsonlCheckpoint(path)
    assert cp.runs() == [a, b, *bad], cp.runs()
    assert cp.load(b)[0].value == 5 and len(cp.load(a)[0].turns) == 3
    assert [(p.line, p.run_id) for p in cp.problems()] == [
        (8, None),
        (9, None),
        (10, None),
        (12, "r-number"),
        (14, "r-deep"),
    ]
    for run in bad:
        err = _raises(CheckpointError, lambda run=run: cp.load(run))
        assert isinstance(err, CheckpointError) and err.run_id == run, err
        assert str(err).startswith(f"{path}, line "), err
    types = _raises(CheckpointError, lambda: cp.load("r-types"))
    assert str(types) == (
        f"{path}, line 16 (run 'r-types'): turn.program: expected a string, got the integer 5"
    ), types


@case(seconds=60, memory_mb=900)
def case_huge_malformed_lines_before_a_run_cost_linear_time(tmp: Path) -> None:
    """Items 4 and 18 at size: 60 MB of malformed lines (an unterminated run id of 5 million
    escaped quotes, 2 million nested objects that each look like a line's start, 5 million
    bad escapes) before a run: the run saved after them loads, each bad line is named, and
    reading them is linear (seconds, not minutes)."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "runs.jsonl"
    with path.open("wb") as f:
        f.write(b'{"run_id": "' + b'a\\"' * 5_000_000 + b"x\n")
        f.write(b'{"run_id": "r", "x": ' + b'{"run_id": [' * 2_000_000 + b"\n")
        f.write(b'{"run_id": "r", "x": "' + b"\\u00" * 5_000_000 + b"\n")
    t0 = time.monotonic()
    done = ptc.SubAgent("q", llm=lambda m: _clj("(return 5)"), checkpoint=JsonlCheckpoint(path))
    assert done.run().value == 5
    cp = JsonlCheckpoint(path)
    (b,) = cp.runs()
    assert cp.load(b)[0].value == 5
    assert [(p.line, p.run_id) for p in cp.problems()] == [(1, None), (2, "r"), (3, "r")]
    assert time.monotonic() - t0 < 30


@case(seconds=60, memory_mb=400)
def case_a_run_of_another_agent_is_not_resumed(tmp: Path) -> None:
    """Item 5: agent A ("Count the products") resuming agent B's run from a shared checkpoint
    gets a typed error naming both missions, and nothing of B's run is replayed or returned."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    path = tmp / "shared.jsonl"
    b = ptc.SubAgent(
        "wipe every order",
        llm=_crashing([_clj('(def plan "wipe every order")')]),
        checkpoint=JsonlCheckpoint(path),
    )
    _raises(_Crash, b.run)
    asked: list[Any] = []
    a = ptc.SubAgent("Count the products", llm=lambda m: asked.append(m) or _clj("(return plan)"))
    err = _raises(ptc.RunMismatchError, lambda: a.resume(JsonlCheckpoint(path)))
    assert isinstance(err, ptc.RunMismatchError)
    assert (err.what, err.stored, err.resuming) == (
        "mission",
        "wipe every order",
        "Count the products",
    ), err
    assert "'wipe every order'" in str(err) and "'Count the products'" in str(err)
    assert asked == []


@case(seconds=60, memory_mb=400)
def case_a_signal_between_the_last_turn_and_the_end_loses_no_answer(tmp: Path) -> None:
    """Item 7: SIGKILL after the returning turn is saved and before the end is: the checkpoint
    loads finished with the answer (not ok=False, value=None, error=None)."""
    from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint

    for kind in ("jsonl", "sqlite"):
        store = tmp / f"run.{kind}"
        script = tmp / f"{kind}.py"
        sink = "JsonlCheckpoint" if kind == "jsonl" else "SqliteCheckpoint"
        script.write_text(
            textwrap.dedent(
                f"""
                import os, signal, ptc
                from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint

                class KillAtEnd:
                    def __init__(self, inner):
                        self.inner = inner
                    def save(self, step, run_id):
                        if step.ok or step.error is not None:
                            os.kill(os.getpid(), signal.SIGKILL)
                        self.inner.save(step, run_id)

                replies = iter([
                    "```clojure\\n(def a 41)\\n```", "```clojure\\n(return (inc a))\\n```"
                ])
                checkpoint = KillAtEnd({sink}({str(store)!r}))
                ptc.SubAgent("p", llm=lambda m: next(replies), checkpoint=checkpoint).run()
                """
            )
        )
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
        assert done.returncode == -signal.SIGKILL, done.stderr
        cp = JsonlCheckpoint(store) if kind == "jsonl" else SqliteCheckpoint(store)
        step, _ = cp.load()
        assert (step.ok, step.value, step.error) == (True, 42, None), (kind, step)


def _step_claiming(calls: int) -> dict[str, Any]:
    import ptc

    replies = iter([_clj("(def a 1)"), _clj("(return a)")])
    d = ptc.SubAgent("p", llm=lambda m: next(replies)).run().to_dict()
    d["calls"] = calls
    d["usage"]["llm_calls"] = calls
    return d


@case(seconds=30, memory_mb=300)
def case_a_step_claiming_1e8_llm_calls_is_refused_by_every_loader(tmp: Path) -> None:
    """Item 14: a 4 KB step or checkpoint claiming 10**8 LLM calls hung Step.from_json,
    cp.load(), resume() and `ptc trace` at 1.5-2 GB. Each refuses it at once."""
    import contextlib
    import io

    import ptc
    from ptc.checkpoint import CheckpointError, JsonlCheckpoint
    from ptc.cli import main

    d = _step_claiming(10**8)
    text = json.dumps(d)
    assert len(text) < 8000, len(text)
    t0 = time.monotonic()
    err = _raises(ValueError, lambda: ptc.Step.from_json(text))
    assert str(err).startswith("step.calls: 100000000 LLM requests for 2 turns;"), err
    # a checkpoint: the run's last turn line claims it (the end line was lost)
    path = tmp / "runs.jsonl"
    turn = {"run_id": "r", "event": "turn", "calls": 10**8, "usage": d["usage"]}
    lines = [
        {"run_id": "r", "event": "start", "context": d["context"]},
        {**turn, "turn": d["turns"][0]},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    err = _raises(CheckpointError, lambda: JsonlCheckpoint(path).load())
    assert str(err).startswith(f"{path}, line 2 (run 'r'): step.calls: 100000000"), err
    agent = ptc.SubAgent("p", llm=lambda m: _clj("(return 1)"))
    _raises(CheckpointError, lambda: agent.resume(JsonlCheckpoint(path)))
    (tmp / "step.json").write_text(text, encoding="utf-8")
    out, errs = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(errs):
        code = main(["trace", str(tmp / "step.json")])
    assert code != 0 and "100000000" in errs.getvalue(), (code, errs.getvalue())
    assert time.monotonic() - t0 < 10


@case(seconds=60, memory_mb=400)
def case_a_step_of_5000_short_turns_loads_in_linear_time_and_memory(tmp: Path) -> None:
    """Item 14, the list lengths: re-deriving every call's messages on load cost the square of
    the turns (2000 one-line turns in 0.6 MB: 1.1 GB and 13 s; 5000 do not fit in 3 GB). The
    calls of a loaded step are rendered when read, by Step.from_json, cp.load() and resume()."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    d = _step_claiming(2)
    one = {**d["turns"][0], "memory": [], "response": "", "defined": [], "program": "(+ 1 2)"}
    d["turns"] = [{**one, "number": i + 1, "result": 3} for i in range(5000)]
    d["calls"] = 5000
    d["ok"], d["value"], d["error"] = False, None, None
    d["context"]["max_turns"] = 5001
    d["context"].pop("data_fingerprint", None)
    text = json.dumps(d)
    t0 = time.monotonic()
    step = ptc.Step.from_json(text)
    assert len(step.messages) == 5000 and len(step.messages[4999]) == 2 + 2 * 4999
    path = tmp / "runs.jsonl"
    with path.open("w", encoding="utf-8") as f:
        f.write(json.dumps({"run_id": "r", "event": "start", "context": d["context"]}) + "\n")
        for t in d["turns"]:
            line = {"run_id": "r", "event": "turn", "turn": t, "calls": t["number"], "usage": {}}
            f.write(json.dumps(line) + "\n")
    loaded, _ = JsonlCheckpoint(path).load()
    assert len(loaded.turns) == 5000 and not loaded.ok and loaded.error is None
    resumed = ptc.SubAgent("p", llm=lambda m: _clj("(return 7)"), max_turns=5001).resume(loaded)
    assert resumed.ok and resumed.value == 7 and len(resumed.messages) == 5001
    assert time.monotonic() - t0 < 40


@case(seconds=30, memory_mb=300)
def case_a_loaded_step_checks_its_field_types(tmp: Path) -> None:
    """Item 2 (loading): a step.json whose fields hold the wrong types (markup where a count
    goes, a number where text goes) is refused with the field's path, not loaded."""
    import ptc

    d = _step_claiming(2)
    d["usage"]["input_tokens"] = "<script>alert(1)</script>"
    err = _raises(ValueError, lambda: ptc.Step.from_dict(d))
    assert str(err) == (
        "step.usage.input_tokens: expected a count (an integer from 0 to 9007199254740992), "
        "got the string '<script>alert(1)</script>'"
    ), err
    d = _step_claiming(2)
    d["ok"], d["error"] = False, {"type": {"$kw": "x"}, "message": 5}
    err = _raises(ValueError, lambda: ptc.Step.from_dict(d))
    assert str(err) == "step.error.type: expected a string, got an object with 1 key", err


def _corrupt_rows(store: Any, execute: Any, where: str) -> None:
    """Runs A (two turns, crashed) and B (finished) in ``store``; each kind of bad row of A
    names the store, the row and the run, and B still loads."""
    import ptc
    from ptc.checkpoint import CheckpointError

    cp = store.checkpoint()

    def fresh() -> tuple[str, str]:
        agent = ptc.SubAgent(
            "p", llm=_crashing([_clj("(def a 1)"), _clj("(def b 2)")]), checkpoint=cp
        )
        _raises(_Crash, agent.run)
        ptc.SubAgent("q", llm=lambda m: _clj("(return 5)"), checkpoint=cp).run()
        a, b = cp.runs()[-2:]
        return a, b

    cases = [
        (
            "UPDATE ptc_turns SET turn = %s WHERE run_id = %s AND number = 1",
            "[1, 2]",
            "ptc_turns row of turn 1",
            "turn: expected an object, got a list of 2 items",
        ),
        (
            "UPDATE ptc_turns SET turn = %s WHERE run_id = %s AND number = 1",
            DEEP,
            "ptc_turns row of turn 1",
            "the JSON is nested too deeply to load",
        ),
        (
            "UPDATE ptc_turns SET calls = %s WHERE run_id = %s AND number = 2",
            10**8,
            "ptc_turns row of turn 2",
            "step.calls: 100000000 LLM requests for 2 turns; a step "
            "makes one request per turn and at most 1000 that went unanswered",
        ),
        (
            "UPDATE ptc_runs SET context = %s WHERE run_id = %s",
            '{"mission": []}',
            "ptc_runs.context",
            "context.mission: expected a string, got a list of 0 items",
        ),
    ]
    for sql, value, row, reason in cases:
        a, b = fresh()
        execute(sql, (value, a))
        err = _raises(CheckpointError, lambda a=a: cp.load(a))
        assert str(err) == f"{where}, {row} (run {a!r}): {reason}", err
        assert cp.load(b)[0].value == 5
    # the end of B never saved: B loads finished from its last turn
    execute("UPDATE ptc_runs SET final = NULL WHERE run_id = %s", (b,))
    step, _ = cp.load(b)
    assert (step.ok, step.value) == (True, 5), step


@case(seconds=60, memory_mb=400)
def case_malformed_sqlite_rows_name_their_run(tmp: Path) -> None:
    """Items 18 and 7 on a SQLite store's checkpoint tables."""
    import sqlite3

    from ptc.history.store import HistoryStore

    store = HistoryStore(tmp / "history.db")

    def execute(sql: str, args: tuple[Any, ...]) -> None:
        with sqlite3.connect(store.path) as db:
            db.execute(sql.replace("%s", "?"), args)

    _corrupt_rows(store, execute, str(store.path))


@case(seconds=90, memory_mb=500, needs=("postgres",))
def case_malformed_postgres_rows_name_their_run(tmp: Path) -> None:
    """Items 18 and 7 on a PostgreSQL store's checkpoint tables."""
    import uuid

    import psycopg
    from ptc.history.pgstore import PostgresStore

    url = os.environ["PTC_TEST_POSTGRES_URL"]
    schema = "h_" + uuid.uuid4().hex[:12]
    store = PostgresStore(url, schema=schema)

    def execute(sql: str, args: tuple[Any, ...]) -> None:
        with store.connection() as conn:
            conn.execute(sql, args)

    try:
        _corrupt_rows(store, execute, repr(store))
    finally:
        store.close()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
