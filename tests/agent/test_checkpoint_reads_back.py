"""What a run saves reads back as it was saved (issue 29, second hostile batch): a reply holding
a lone surrogate, a provider's impossible token counts. Run ids a host passes are looked up,
never handed to a driver, and quoted short; a replay that diverges says which run, from where
and why; a lease row ptc cannot have written is taken over; the data fingerprint tells every
kind of value apart. (The same on PostgreSQL: tests/history/test_checkpoint_rows.py.)"""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import ptc
import pytest
from ptc import _records
from ptc.checkpoint import (
    CheckpointError,
    JsonlCheckpoint,
    RunLockedError,
    SqliteCheckpoint,
    data_fingerprint,
)
from ptc.llm import LLMReply, ScriptedLLM
from ptc.step import Usage

#: JSON's "\ud800" escape, as a provider may send it, decodes to a lone surrogate in Python
SURROGATE_REPLY = "```clojure\n(def a 1)\n```\nnote: \ud800 (a lone surrogate)"
LIMIT = 2**53


class Crash(BaseException):
    """The process dying in the middle of a run: nothing more is saved."""


def clj(src: str) -> str:
    return "```clojure\n" + src + "\n```"


def crashing(replies: list[Any]) -> Any:
    it = iter(replies)

    def llm(messages: Any) -> Any:
        try:
            return next(it)
        except StopIteration:
            raise Crash from None

    return llm


def sink(kind: str, tmp_path: Path) -> Any:
    if kind == "jsonl":
        return JsonlCheckpoint(tmp_path / "runs.jsonl")
    return SqliteCheckpoint(tmp_path / "runs.db")


# --- a lone surrogate in a reply -----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_reply_with_a_lone_surrogate_is_saved_and_read_back(tmp_path: Path, kind: str) -> None:
    replies = [SURROGATE_REPLY, clj("(return (inc a))")]
    step = ptc.SubAgent("Zähle", llm=ScriptedLLM(replies), checkpoint=sink(kind, tmp_path)).run()
    assert (step.ok, step.value) == (True, 2)
    loaded, _ = sink(kind, tmp_path).load()
    assert (loaded.ok, loaded.value, len(loaded.turns)) == (True, 2, 2)
    assert loaded.turns[0].response == SURROGATE_REPLY
    assert loaded.context.mission == "Zähle"


def test_a_lone_surrogate_is_written_escaped_and_other_lines_keep_their_text(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.jsonl"
    replies = [SURROGATE_REPLY, clj("(return (inc a))")]
    ptc.SubAgent("Zähle", llm=ScriptedLLM(replies), checkpoint=JsonlCheckpoint(path)).run()
    start, turn1, _, _ = path.read_bytes().decode("utf-8").splitlines()  # UTF-8 text
    assert "Zähle" in start  # a line without a surrogate keeps its text as it is
    assert "\\ud800" in turn1 and turn1.isascii()  # the line with one is escaped whole
    assert json.loads(turn1)["turn"]["response"] == SURROGATE_REPLY
    assert JsonlCheckpoint(path).problems() == []


def test_a_steps_json_with_a_lone_surrogate_is_text_a_file_can_hold(tmp_path: Path) -> None:
    replies = [SURROGATE_REPLY, clj("(return (inc a))")]
    step = ptc.SubAgent("Zähle", llm=ScriptedLLM(replies)).run()
    text = step.to_json()
    (tmp_path / "step.json").write_text(text, encoding="utf-8")  # raised UnicodeEncodeError
    again = ptc.Step.from_json((tmp_path / "step.json").read_text(encoding="utf-8"))
    assert (again.value, again.turns[0].response) == (2, SURROGATE_REPLY)
    plain = ptc.SubAgent("Zähle", llm=ScriptedLLM([clj("(return 1)")])).run()
    assert '"mission": "Zähle"' in plain.to_json()


# --- token counts no stored record can hold ------------------------------------------------------


def test_usage_clamps_a_providers_counts_and_stops_its_sums_at_the_largest_count() -> None:
    odd: Any = {
        "input_tokens": -5,
        "output_tokens": 10**30,
        "cache_read_tokens": 3.0,
        "cache_write_tokens": float("nan"),
        "flag": True,
        5: 7,
    }
    assert _records.counts(odd) == {
        "input_tokens": 0,
        "output_tokens": LIMIT,
        "cache_read_tokens": 3,
    }
    assert _records.counts(None) == {} and _records.counts([1]) == {}
    usage = Usage().add(odd, retries=-2).add({"input_tokens": 4, "output_tokens": 9})
    assert usage == Usage(4, LIMIT, 2, 0, None, 3, 0)
    assert Usage.from_dict(json.loads(json.dumps(usage.to_dict()))) == usage


def test_a_providers_impossible_usage_still_saves_a_step_that_loads_back(tmp_path: Path) -> None:
    odd: Any = {"input_tokens": -5, "output_tokens": 10**30, "total": "many"}
    replies = [LLMReply(clj("(def a 1)"), odd), LLMReply(clj("(return (inc a))"), odd)]
    path = tmp_path / "runs.jsonl"
    step = ptc.SubAgent("Count", llm=crashing(replies), checkpoint=JsonlCheckpoint(path)).run()
    assert (step.ok, step.value) == (True, 2)
    assert (step.usage.input_tokens, step.usage.output_tokens) == (0, LIMIT)
    assert [t.usage for t in step.turns] == [{"input_tokens": 0, "output_tokens": LIMIT}] * 2
    again = ptc.Step.from_json(step.to_json())
    loaded, _ = JsonlCheckpoint(path).load()
    for other in (again, loaded):
        assert (other.usage, [t.usage for t in other.turns]) == (
            step.usage,
            [t.usage for t in step.turns],
        )


# --- run ids a host passes -----------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_run_id_that_is_not_text_is_a_type_error(tmp_path: Path, kind: str) -> None:
    cp = sink(kind, tmp_path)
    ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return 1)")]), checkpoint=cp).run()
    for bad, shown in (
        (5, "the integer 5"),
        (b"r", "a value of type bytes"),
        (["r"], "a list of 1 item"),
    ):
        with pytest.raises(TypeError) as e:
            cp.load(bad)
        assert str(e.value) == f"run_id: expected a string, got {shown}"
    with pytest.raises(TypeError) as e:
        ptc.SubAgent("Count", llm=ScriptedLLM([])).resume(cp, 5)  # type: ignore[arg-type]
    assert str(e.value) == "run_id: expected a string, got the integer 5"


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("run_id", ["x\x00y", "\ud800", "r" * 100])
def test_a_run_id_no_run_has_is_a_run_that_is_not_there(
    tmp_path: Path, kind: str, run_id: str
) -> None:
    cp = sink(kind, tmp_path)
    ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return 1)")]), checkpoint=cp).run()
    where = str(tmp_path / ("runs.jsonl" if kind == "jsonl" else "runs.db"))
    with pytest.raises(LookupError) as e:
        cp.load(run_id)
    assert str(e.value) == f"{where}: no run {run_id!r}"
    with pytest.raises(LookupError) as e:  # resume locks the run first (SQLite): the same
        ptc.SubAgent("Count", llm=ScriptedLLM([])).resume(cp, run_id)
    assert str(e.value) == f"{where}: no run {run_id!r}"


def test_sqlite_refuses_to_save_under_a_run_id_it_cannot_hold(tmp_path: Path) -> None:
    step = ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return 1)")])).run()
    cp = SqliteCheckpoint(tmp_path / "runs.db")
    with pytest.raises(ValueError) as e:
        cp.save(step, "r\udc80")
    assert str(e.value) == (
        f"{tmp_path / 'runs.db'}: cannot save run 'r\\udc80': it holds a lone surrogate "
        "(U+DC80 at index 1)"
    )
    cp.save(step, "x\x00y")  # SQLite text holds a NUL
    assert cp.load("x\x00y")[0].value == 1


def test_a_jsonl_run_id_with_a_lone_surrogate_reads_back(tmp_path: Path) -> None:
    step = ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return 1)")])).run()
    cp = JsonlCheckpoint(tmp_path / "runs.jsonl")
    cp.save(step, "r\udc80")
    assert JsonlCheckpoint(tmp_path / "runs.jsonl").load("r\udc80")[0].value == 1


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_10_mb_run_id_is_quoted_short(tmp_path: Path, kind: str) -> None:
    cp = sink(kind, tmp_path)
    ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return 1)")]), checkpoint=cp).run()
    where = str(tmp_path / ("runs.jsonl" if kind == "jsonl" else "runs.db"))
    with pytest.raises(LookupError) as e:
        cp.load("r" * 10_000_000)
    assert str(e.value) == f"{where}: no run {'r' * 120!r}... (10000000 characters)"


def test_errors_that_name_a_run_quote_a_long_id_short(tmp_path: Path) -> None:
    long_id = "q" * 5000
    shown = f"{'q' * 120!r}... (5000 characters)"
    err = CheckpointError("f.jsonl", "bad", run_id=long_id, line=3)
    assert str(err) == f"f.jsonl, line 3 (run {shown}): bad"
    with pytest.raises(ValueError) as e:
        ptc.SubAgent("Count", llm=ScriptedLLM([])).resume(long_id, "x" * 200, store="sqlite:///x")
    assert str(e.value) == f"two run ids given: {shown} and {'x' * 120!r}... (200 characters)"
    cp = SqliteCheckpoint(tmp_path / "runs.db")
    with cp.lock(long_id), pytest.raises(RunLockedError) as locked:
        with SqliteCheckpoint(tmp_path / "runs.db").lock(long_id):
            pass
    assert str(locked.value).startswith(f"run {shown} is going on in another worker (")


# --- a lease row ptc cannot have written ---------------------------------------------------------


def crashed_run(path: Path) -> str:
    agent = ptc.SubAgent(
        "Count", llm=crashing([clj("(def a 1)")]), checkpoint=SqliteCheckpoint(path)
    )
    with pytest.raises(Crash):
        agent.run()
    (run,) = SqliteCheckpoint(path).runs()
    return run


@pytest.mark.parametrize(
    ("owner", "expires", "reason"),
    [
        (
            "elsewhere:1:x",
            "soon",
            "ptc_leases.expires: expected a time (seconds since 1970), got the string 'soon'",
        ),
        (
            "elsewhere:1:x",
            float("inf"),
            "ptc_leases.expires: expected a time (seconds since 1970), got the number inf",
        ),
        (
            "elsewhere:1:x",
            None,
            "ptc_leases.expires: expected a time (seconds since 1970), got null",
        ),
        (b"\x00", 4e9, "ptc_leases.owner: expected text, got a value of type bytes"),
    ],
    ids=["text", "infinite", "null", "blob-owner"],
)
def test_a_lease_row_ptc_cannot_have_written_is_taken_over_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, owner: Any, expires: Any, reason: str
) -> None:
    path = tmp_path / "runs.db"
    run = crashed_run(path)
    with sqlite3.connect(path) as db:  # a foreign schema: no NOT NULL on expires
        db.execute("DROP TABLE ptc_leases")
        db.execute("CREATE TABLE ptc_leases (run_id TEXT PRIMARY KEY, owner, expires)")
        db.execute("INSERT INTO ptc_leases VALUES (?, ?, ?)", (run, owner, expires))
    resuming = ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return (inc a))")]))
    with caplog.at_level(logging.WARNING, logger="ptc"):
        step = resuming.resume(SqliteCheckpoint(path), run)
    assert (step.ok, step.value) == (True, 2)
    assert [r.getMessage() for r in caplog.records] == [
        f"{path}, its ptc_leases row (run {run!r}): {reason} (taken as lapsed)"
    ]


def test_a_lease_of_a_worker_on_another_machine_still_holds_the_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    run = crashed_run(path)
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO ptc_leases VALUES (?, ?, ?)", (run, "elsewhere:1:x", 4e9))
    with pytest.raises(RunLockedError) as e:
        ptc.SubAgent("Count", llm=ScriptedLLM([])).resume(SqliteCheckpoint(path), run)
    assert str(e.value) == (
        f"run {run!r} is going on in another worker (elsewhere:1:x); only one worker may "
        "continue a run at a time"
    )


# --- a replay that diverges ----------------------------------------------------------------------


def lookup(sku: str) -> int:
    """Stock for a sku."""
    return 3


def run_that_called_lookup(path: Path) -> list[dict[str, Any]]:
    agent = ptc.SubAgent(
        "Total stock?",
        llm=crashing([clj('(def a (tool/lookup "x1"))')]),
        tools=[lookup],
        checkpoint=JsonlCheckpoint(path),
    )
    with pytest.raises(Crash):
        agent.run()
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def rewritten(path: Path, lines: list[dict[str, Any]], program: str) -> None:
    lines = json.loads(json.dumps(lines))
    lines[1]["turn"]["program"] = program
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


@pytest.mark.parametrize(
    ("program", "why"),
    [
        (
            '(def a (tool/lookup "x1")) (def b (tool/lookup "wipe"))',
            "the program called tool 'lookup' where the turn recorded no more calls",
        ),
        (
            "(def a 3)",
            "the program made fewer tool calls than the turn recorded (not made: 'lookup')",
        ),
        ("(def a (nope 1))", "undefined_variable: nope is not defined"),
    ],
    ids=["another-call", "fewer-calls", "an-error"],
)
def test_a_replay_that_diverges_names_the_run_where_it_is_and_why(
    tmp_path: Path, program: str, why: str
) -> None:
    lines = run_that_called_lookup(tmp_path / "runs.jsonl")
    bad = tmp_path / "bad.jsonl"
    rewritten(bad, lines, program)
    agent = ptc.SubAgent("Total stock?", llm=ScriptedLLM([]), tools=[lookup])
    with pytest.raises(ValueError) as e:
        agent.resume(JsonlCheckpoint(bad))
    assert str(e.value) == (
        f"cannot resume run {lines[0]['run_id']!r} from JsonlCheckpoint({str(bad)!r}): "
        f"replaying turn 1 diverged: {why}"
    )
    step = JsonlCheckpoint(bad).load()[0]  # a Step has no run id or file to name
    with pytest.raises(ValueError) as e:
        agent.resume(step)
    assert str(e.value) == f"cannot resume the run from a Step: replaying turn 1 diverged: {why}"


# --- the data fingerprint ------------------------------------------------------------------------


def test_the_fingerprint_tells_every_kind_of_value_apart() -> None:
    """Each value below is data a program tells from every other; each pair once collided or
    would collide in an encoding that does not tag every kind (a set and a map spelling its
    tag, integer and text keys, a keyword and a string, ...)."""
    kw = ptc.Keyword
    values: list[dict[str, Any]] = [
        {"x": {"a", "b"}},
        {"x": {"$set:str": ["a", "b"]}},
        {"x": {1, 2}},
        {"x": {"$set:int": [1, 2]}},
        {"x": {1, "1"}},
        {"x": {"$set": ['"1"', "1"]}},
        {"x": set()},
        {"x": {"$set:str": []}},
        {"x": {}},
        {"x": []},
        {"x": {1: "v"}},
        {"x": {"1": "v"}},
        {"x": {1.5: "v"}},
        {"x": {"1.5": "v"}},
        {"x": {True: "v"}},
        {"x": {"true": "v"}},
        {"x": {None: "v"}},
        {"x": {"null": "v"}},
        {"x": kw("a")},
        {"x": "a"},
        {"x": [kw("a")]},
        {"x": ["a"]},
        {"x": {kw("a")}},
        {"x": {"a"}},
        {"x": {kw("a"): 1}},
        {"x": {"a": 1}},
        {"x": 1},
        {"x": 1.0},
        {"x": True},
    ]
    prints = [data_fingerprint(v) for v in values]
    assert len(set(prints)) == len(values)
    assert all(p.startswith("v2:sha256:") and len(p) == 10 + 64 for p in prints)
    assert data_fingerprint({"x": (1, 2)}) == data_fingerprint({"x": [1, 2]})  # both vectors
    assert data_fingerprint({"x": {"b": 1, "a": {2, 1}}}) == data_fingerprint(
        {"x": {"a": {1, 2}, "b": 1}}
    )


def test_the_fingerprint_of_data_that_contains_itself_is_a_value_error() -> None:
    data: dict[str, Any] = {"x": []}
    data["x"].append(data)
    with pytest.raises(ValueError) as e:
        data_fingerprint(data)
    assert str(e.value) == "the data contains itself (a dict in itself)"


def test_a_run_over_a_set_is_not_resumed_by_a_map_that_spells_its_tag(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    started = ptc.SubAgent(
        "Count",
        llm=crashing([clj("(def n (count data/tags))")]),
        data={"tags": {"a", "b"}},
        checkpoint=JsonlCheckpoint(path),
    )
    with pytest.raises(Crash):
        started.run()
    other = ptc.SubAgent("Count", llm=ScriptedLLM([]), data={"tags": {"$set:str": ["a", "b"]}})
    with pytest.raises(ptc.RunMismatchError) as e:
        other.resume(JsonlCheckpoint(path))
    assert e.value.what == "data"
    same = ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return n)")]), data={"tags": {"b", "a"}})
    assert same.resume(JsonlCheckpoint(path)).value == 2


def test_a_fingerprint_of_an_earlier_version_is_taken_as_unknown(tmp_path: Path) -> None:
    """A run saved with version 1's ``sha256:<hex>`` is compared by its data keys and types, as
    a run saved without a fingerprint is: version 1 cannot be compared with version 2."""
    path = tmp_path / "runs.jsonl"
    started = ptc.SubAgent(
        "Count",
        llm=crashing([clj("(def n (count data/orders))")]),
        data={"orders": [1, 2]},
        checkpoint=JsonlCheckpoint(path),
    )
    with pytest.raises(Crash):
        started.run()
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["context"]["data_fingerprint"].startswith("v2:sha256:")
    lines[0]["context"]["data_fingerprint"] = "sha256:" + "0" * 64
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    shorter = ptc.SubAgent("Count", llm=ScriptedLLM([]), data={"orders": [1]})
    with pytest.raises(ptc.RunMismatchError) as e:
        shorter.resume(JsonlCheckpoint(path))
    assert (e.value.stored, e.value.resuming) == (
        {"keys and types": ["orders list[2]"]},
        {"keys and types": ["orders list[1]"]},
    )
    same = ptc.SubAgent("Count", llm=ScriptedLLM([clj("(return n)")]), data={"orders": [1, 2]})
    assert same.resume(JsonlCheckpoint(path)).value == 2
