"""Durable turns: checkpoints after every turn, and resume in a new process after the first
was killed with SIGKILL between turns (issue 10); what a checkpoint holds read back as untrusted
(issue 29: torn and corrupt lines, a run of another agent, an end never saved, absurd counts)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import ptc
import pytest
from ptc.checkpoint import CheckpointError, JsonlCheckpoint, SqliteCheckpoint
from ptc.llm import ScriptedLLM
from ptc.step import StepError

AGENT = '''
import os, signal, sys, json
import ptc
from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint
from ptc.llm import ScriptedLLM

STOCK = {"x1": 3, "x2": 5}

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

def sink(kind, path):
    return JsonlCheckpoint(path) if kind == "jsonl" else SqliteCheckpoint(path)

def agent(replies, checkpoint=None):
    return ptc.SubAgent(prompt="Total stock of x1 and x2?", llm=ScriptedLLM(replies),
                        tools=[lookup], checkpoint=checkpoint, compression=True)

def comparable(step):
    return step.to_dict(include_messages=True, timings=False)
'''


def child(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(AGENT + textwrap.dedent(body))
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_run_killed_between_turns_resumes_in_a_new_process(tmp_path: Path, kind: str) -> None:
    store = tmp_path / ("run.jsonl" if kind == "jsonl" else "run.db")
    killed = child(
        tmp_path,
        f"""
        def kill(messages):
            os.kill(os.getpid(), signal.SIGKILL)
        agent(REPLIES[:2] + [kill], sink({kind!r}, {str(store)!r})).run()
        print("not reached")
        """,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert "not reached" not in killed.stdout

    resumed = child(
        tmp_path,
        f"""
        cp = sink({kind!r}, {str(store)!r})
        saved, run_id = cp.load()
        assert len(saved.turns) == 2 and not saved.ok and saved.error is None
        step = agent(REPLIES[2:], cp).resume(cp)
        print(json.dumps({{"step": comparable(step), "run_id": run_id,
                          "runs": cp.runs(), "again": comparable(cp.load()[0])}}))
        """,
    )
    assert resumed.returncode == 0, resumed.stderr
    out = json.loads(resumed.stdout.strip().splitlines()[-1])

    # uninterrupted, and checkpointed too: a checkpointed run keeps its data's fingerprint
    whole = child(
        tmp_path, "print(json.dumps(comparable(agent(REPLIES, lambda step: None).run())))"
    )
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout.strip().splitlines()[-1])

    assert out["step"]["ok"] and out["step"]["value"] == 8
    assert out["step"] == expected  # the same final Step as the uninterrupted run
    assert out["runs"] == [out["run_id"]]  # one run, continued under its id
    assert out["again"] == expected  # and the checkpoint now holds the finished run


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_every_completed_turn_is_saved(tmp_path: Path, kind: str) -> None:
    path = tmp_path / ("c.jsonl" if kind == "jsonl" else "c.db")
    cp = JsonlCheckpoint(path) if kind == "jsonl" else SqliteCheckpoint(path)
    counts: list[int] = []

    def check_saved(turn: Any) -> None:  # on_turn runs after the checkpoint
        counts.append(len(cp.load()[0].turns))

    replies = [
        "```clojure\n(def a 1)\n```",
        "```clojure\n(def b 2)\n```",
        "```clojure\n(return (+ a b))\n```",
    ]
    step = ptc.SubAgent(
        prompt="p", llm=ScriptedLLM(replies), checkpoint=cp, on_turn=check_saved
    ).run()
    assert step.ok and counts == [1, 2, 3]
    final, _ = cp.load()
    assert final.ok and final.value == 3
    # a finished run is handed back as it ended, the model not asked again (issue 30)
    llm = ScriptedLLM([])
    again = ptc.SubAgent(prompt="p", llm=llm).resume(cp)
    assert (again.ok, again.value, len(again.turns)) == (True, 3, 3) and llm.calls == []


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_saving_the_same_turns_twice_keeps_one_copy(tmp_path: Path, kind: str) -> None:
    path = tmp_path / ("c.jsonl" if kind == "jsonl" else "c.db")
    cp = JsonlCheckpoint(path) if kind == "jsonl" else SqliteCheckpoint(path)
    step = ptc.SubAgent(prompt="p", llm=ScriptedLLM(["```clojure\n(return 1)\n```"])).run()
    cp.save(step, "r1")
    again = JsonlCheckpoint(path) if kind == "jsonl" else SqliteCheckpoint(path)
    again.save(step, "r1")  # a retry from a new process
    loaded, run_id = again.load("r1")
    assert run_id == "r1" and len(loaded.turns) == 1 and loaded.value == 1
    if kind == "jsonl":
        events = [json.loads(x)["event"] for x in path.read_text().splitlines()]
        assert events.count("turn") == 1 and events.count("start") == 1


def test_a_line_cut_short_by_a_crash_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    cp = JsonlCheckpoint(path)
    replies = ["```clojure\n(def a 1)\n```", "```clojure\n(def b 2)\n```"]
    ptc.SubAgent(prompt="p", llm=ScriptedLLM(replies), checkpoint=cp, max_turns=2).run()
    lines = path.read_text().splitlines()
    # keep start and turn 1, then half of turn 2's line
    path.write_text("\n".join(lines[:2]) + "\n" + lines[2][: len(lines[2]) // 2])
    step, _ = JsonlCheckpoint(path).load()
    assert [t.number for t in step.turns] == [1]


def test_a_callable_sink_gets_the_step_so_far(tmp_path: Path) -> None:
    seen: list[tuple[int, bool]] = []
    replies = ["```clojure\n(def a 1)\n```", "```clojure\n(return a)\n```"]
    ptc.SubAgent(
        prompt="p",
        llm=ScriptedLLM(replies),
        checkpoint=lambda step: seen.append((len(step.turns), step.ok)),
    ).run()
    assert seen == [(1, False), (2, False), (2, True)]


def test_loading_what_is_not_there_says_so(tmp_path: Path) -> None:
    with pytest.raises(LookupError, match="no run has been saved"):
        JsonlCheckpoint(tmp_path / "none.jsonl").load()
    with pytest.raises(LookupError, match="no run 'x'"):
        SqliteCheckpoint(tmp_path / "c.db").load("x")
    with pytest.raises(TypeError, match="resume needs a Step or a checkpoint"):
        ptc.SubAgent(prompt="p", llm=ScriptedLLM([])).resume(os.getcwd())  # type: ignore[arg-type]


def test_the_history_store_holds_checkpoints_next_to_its_messages(tmp_path: Path) -> None:
    from ptc.history.store import HistoryStore

    store = HistoryStore(tmp_path / "history.db")
    store.append({"role": "user", "content": "hello there"}, agent_id="agent-1")
    cp = store.checkpoint()
    replies = ["```clojure\n(def a 1)\n```", "```clojure\n(return (inc a))\n```"]
    step = ptc.SubAgent(prompt="p", llm=ScriptedLLM(replies), checkpoint=cp).run()
    assert step.ok and cp.load()[0].value == 2
    assert len(store.search_messages("hello")) == 1  # the messages are still there
    with pytest.raises(ValueError, match="in-memory"):
        HistoryStore(":memory:").checkpoint()


# --- issue 29: what a checkpoint holds is read back as untrusted ---------------------------------


class Crash(BaseException):
    """The process dying in the middle of a run: nothing more is saved."""


def clj(src: str) -> str:
    return "```clojure\n" + src + "\n```"


def crashing(replies: list[str]) -> Any:
    """An LLM that gives ``replies`` in turn, then dies at the next request."""
    it = iter(replies)

    def llm(messages: Any) -> str:
        try:
            return next(it)
        except StopIteration:
            raise Crash from None

    return llm


class Stock:
    """A tool that counts its calls: a resumed run must never call it again for a saved turn."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def lookup(self, sku: str) -> int:
        """Stock for a sku."""
        self.calls.append(sku)
        return {"x1": 3, "x2": 5}[sku]


def stock_agent(llm: Any, path: Path, stock: Stock) -> ptc.SubAgent:
    return ptc.SubAgent(
        prompt="Total stock of x1 and x2?",
        llm=llm,
        tools={"lookup": stock.lookup},
        checkpoint=JsonlCheckpoint(path),
        max_turns=5,
    )


def test_after_a_torn_last_line_later_saves_are_read_back_and_no_tool_runs_twice(
    tmp_path: Path,
) -> None:
    path, stock = tmp_path / "runs.jsonl", Stock()
    with pytest.raises(Crash):
        stock_agent(crashing([clj('(def a (tool/lookup "x1"))')]), path, stock).run()
    (run_id,) = JsonlCheckpoint(path).runs()
    with path.open("a", encoding="utf-8") as f:
        f.write('{"run_id": "r", "event": "tu')  # what a crash mid-write leaves
    with pytest.raises(Crash):
        agent = stock_agent(crashing([clj('(def b (tool/lookup "x2"))')]), path, stock)
        agent.resume(JsonlCheckpoint(path))
    saved, _ = JsonlCheckpoint(path).load(run_id)
    assert [t.number for t in saved.turns] == [1, 2]  # the resumed turn is read back
    assert not saved.ok and saved.error is None
    step = stock_agent(crashing([clj("(return (+ a b))")]), path, stock).resume(
        JsonlCheckpoint(path)
    )
    assert step.ok and step.value == 8
    assert stock.calls == ["x1", "x2"]  # the second resume replayed both, calling nothing
    final, _ = JsonlCheckpoint(path).load(run_id)
    assert final.ok and final.value == 8 and len(final.turns) == 3
    # the torn fragment was cut off: every line is a whole event of the run
    events = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    assert [e["event"] for e in events] == ["start", "turn", "turn", "turn", "end"]
    assert {e["run_id"] for e in events} == {run_id}


def test_a_line_glued_to_a_torn_one_by_an_earlier_version_is_read(tmp_path: Path) -> None:
    """Files written before the repair hold the resumed turn on the torn line itself."""
    path, stock = tmp_path / "runs.jsonl", Stock()
    replies = [clj('(def a (tool/lookup "x1"))'), clj('(def b (tool/lookup "x2"))')]
    with pytest.raises(Crash):
        stock_agent(crashing(replies), path, stock).run()
    start, one, two = path.read_text(encoding="utf-8").splitlines()
    torn = one[: len(one) // 2]
    path.write_text(start + "\n" + one + "\n" + torn + two + "\n", encoding="utf-8")
    saved, _ = JsonlCheckpoint(path).load()
    assert [t.number for t in saved.turns] == [1, 2]
    assert JsonlCheckpoint(path).problems() == []


def two_runs(path: Path) -> tuple[str, str]:
    """Run A (three turns, then a crash) and run B (finished: 5) in one file."""
    replies = [clj("(def a 1)"), clj("(def b 2)"), clj("(def c 3)")]
    with pytest.raises(Crash):
        ptc.SubAgent(
            prompt="p", llm=crashing(replies), checkpoint=JsonlCheckpoint(path), max_turns=5
        ).run()
    ptc.SubAgent(
        prompt="q", llm=ScriptedLLM([clj("(return 5)")]), checkpoint=JsonlCheckpoint(path)
    ).run()
    a, b = JsonlCheckpoint(path).runs()
    return a, b


def test_a_corrupt_line_in_the_middle_is_reported_with_its_file_line_and_run(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.jsonl"
    a, b = two_runs(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[2])["turn"]["number"] == 2
    lines[2] = lines[2].replace('"turn": {', '"turn": {{', 1)  # line 3: A's turn 2
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cp = JsonlCheckpoint(path)
    with pytest.raises(CheckpointError) as e:
        cp.load(a)
    assert (e.value.path, e.value.line, e.value.run_id, e.value.row) == (str(path), 3, a, None)
    assert str(e.value).startswith(f"{path}, line 3 (run {a!r}): not valid JSON (")
    assert isinstance(e.value, ValueError) and isinstance(e.value, ptc.PtcError)
    # the history is not cut there: B, saved after it, still loads
    assert cp.load(b)[0].value == 5 and cp.runs() == [a, b]
    # and A is neither resumed nor saved to
    with pytest.raises(CheckpointError, match="line 3"):
        ptc.SubAgent(prompt="p", llm=ScriptedLLM([]), max_turns=5).resume(cp, a)
    with pytest.raises(CheckpointError, match="line 3"):
        JsonlCheckpoint(path).save(cp.load(b)[0], a)


def test_a_line_that_names_no_run_is_skipped_with_a_warning_and_a_gap_is_an_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "runs.jsonl"
    a, b = two_runs(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = "[1, 2]"  # line 3 held A's turn 2
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    cp = JsonlCheckpoint(path)
    (problem,) = cp.problems()
    assert (problem.line, problem.run_id) == (3, None)
    assert str(problem) == f"{path}, line 3: expected a JSON object, got a list of 2 items"
    assert cp.load(b)[0].value == 5
    assert f"{problem} (skipped: the line names no run)" in caplog.messages
    with pytest.raises(CheckpointError) as e:
        cp.load(a)
    assert (e.value.line, e.value.run_id) == (None, a)
    assert str(e.value) == (
        f"{path} (run {a!r}): turn 2 is missing (turns saved: 1, 3); lines that could not be "
        "read: 3"
    )


DEEP = "[" * 100_000 + "]" * 100_000
BAD_LINES = [
    # (the line, the run it names, what is wrong)
    ("[1, 2]", None, "expected a JSON object, got a list of 2 items"),
    ('{"event": "turn"}', None, "the line has no run_id"),
    (
        '{"run_id": 5, "event": "start", "context": {}}',
        None,
        "run_id: expected a string, got the integer 5",
    ),
    (
        '{"run_id": "r2", "event": "begin"}',
        "r2",
        "event: expected 'start', 'turn', 'end', 'started' or 'call', got the string 'begin'",
    ),
    (
        '{"run_id": "r2", "event": "turn", "turn": {"number": "1"}}',
        "r2",
        "turn.number: expected a turn number (1 or more), got the string '1'",
    ),
    (
        '{"run_id": "r2", "event": "start", "context": {"mission": 5}}',
        "r2",
        "context.mission: expected a string, got the integer 5",
    ),
    (DEEP, None, "the JSON is nested too deeply to load"),
    (
        '{"run_id": "r2", "event": "turn", "turn": ' + DEEP + "}",
        "r2",
        "the JSON is nested too deeply to load",
    ),
    (
        '{"run_id": "r2", "event": "end", "step": {"version": 1, "ok": true, "turns": [], '
        '"context": {"mission": "m", "system_prompt": "s", "max_turns": 1}, "calls": 100000000}}',
        "r2",
        "step.calls: 100000000 LLM requests for 0 turns; a step makes one request per turn "
        "and at most 1000 that went unanswered",
    ),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("line", "run", "reason"), BAD_LINES, ids=[str(i) for i in range(9)])
def test_a_malformed_line_names_its_file_line_and_run_and_other_runs_still_load(
    tmp_path: Path, line: str, run: str | None, reason: str
) -> None:
    path = tmp_path / "runs.jsonl"
    a, b = two_runs(path)
    if run is not None and '"event": "start"' not in line:  # only the bad line is wrong
        good = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        good["run_id"] = run
        with path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(good) + "\n")
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    number = len(path.read_text(encoding="utf-8").splitlines())
    cp = JsonlCheckpoint(path)
    where = f"{path}, line {number}" + (f" (run {run!r})" if run is not None else "")
    expected = f"{where}: {reason}"
    assert cp.load(b)[0].value == 5 and len(cp.load(a)[0].turns) == 3
    if run is None:
        assert [str(p) for p in cp.problems()] == [expected]
        assert cp.runs() == [a, b]
        return
    with pytest.raises(CheckpointError) as e:
        cp.load(run)
    assert str(e.value) == expected
    assert (e.value.line, e.value.run_id) == (number, run)


def test_a_line_that_is_not_utf8_names_its_run(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    a, _ = two_runs(path)
    with path.open("ab") as f:
        f.write(b'{"run_id": "r2", "event": "turn", "turn": "\xff"}\n')
    with pytest.raises(CheckpointError) as e:
        JsonlCheckpoint(path).load("r2")
    assert str(e.value) == (
        f"{path}, line 8 (run 'r2'): not UTF-8 text (invalid start byte at byte 43)"
    )
    assert len(JsonlCheckpoint(path).load(a)[0].turns) == 3


# the signal between the returning turn's save and the end's: the sink dies (SIGKILL) when
# it is handed the finished Step, before saving it
KILL_AT_END = """
class KillAtEnd:
    def __init__(self, inner):
        self.inner = inner
    def save(self, step, run_id):
        if step.ok or step.error is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        self.inner.save(step, run_id)
"""


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize(
    ("program", "ok", "value", "error"),
    [
        ("(return (+ a 1))", True, 3, None),
        (
            '(fail "out of stock")',
            False,
            None,
            StepError("fail", "out of stock", value="out of stock"),
        ),
    ],
    ids=["return", "fail"],
)
def test_a_run_killed_before_its_end_was_saved_loads_finished(
    tmp_path: Path, kind: str, program: str, ok: bool, value: Any, error: Any
) -> None:
    store = tmp_path / ("run.jsonl" if kind == "jsonl" else "run.db")
    killed = child(
        tmp_path,
        KILL_AT_END
        + f"""
agent([clj("(def a 2)"), clj({program!r})], KillAtEnd(sink({kind!r}, {str(store)!r}))).run()
print("not reached")
""",
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    cp = JsonlCheckpoint(store) if kind == "jsonl" else SqliteCheckpoint(store)
    step, _ = cp.load()
    assert (step.ok, step.value, step.error) == (ok, value, error)
    assert len(step.turns) == 2 and len(step.messages) == step.usage.llm_calls == 2
    same = {"lookup": count}  # the child's tool: same name and signature
    llm = ScriptedLLM([])
    again = ptc.SubAgent(prompt="Total stock of x1 and x2?", llm=llm, tools=same).resume(cp)
    assert (again.ok, again.value, again.error, len(again.turns)) == (ok, value, error, 2)
    assert llm.calls == []  # the run had ended: nothing is asked again


def test_a_run_out_of_turns_before_its_end_was_saved_loads_finished(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    replies = ScriptedLLM([clj("(def a 1)"), clj("(def b 2)")])
    ptc.SubAgent(prompt="p", llm=replies, checkpoint=JsonlCheckpoint(path), max_turns=2).run()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[-1])["event"] == "end"
    path.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")  # the end never saved
    step, _ = JsonlCheckpoint(path).load()
    assert not step.ok and step.value is None
    assert step.error == StepError(
        "max_turns_exceeded", "max_turns (2) reached without (return value) or (fail reason)"
    )


# --- a resumed run must be the resuming agent's ------------------------------------------------


def wipe(order: str) -> str:
    """Wipe an order."""
    return "wiped"


def count(sku: str) -> int:
    """Count a product."""
    return 1


def started(path: Path, prompt: str, tools: Any = None, data: Any = None) -> str:
    """A run of ``prompt`` that defined ``plan`` and died; its run id."""
    with pytest.raises(Crash):
        ptc.SubAgent(
            prompt=prompt,
            llm=crashing([clj('(def plan "wipe every order")')]),
            tools=tools,
            data=data,
            checkpoint=JsonlCheckpoint(path),
            max_turns=3,
        ).run()
    return JsonlCheckpoint(path).runs()[-1]


def test_resume_refuses_a_run_with_another_mission(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    run_id = started(path, "wipe every order")
    llm = ScriptedLLM([clj("(return plan)")])
    agent = ptc.SubAgent(prompt="Count the products", llm=llm, max_turns=3)
    with pytest.raises(ptc.RunMismatchError) as e:
        agent.resume(JsonlCheckpoint(path))
    assert str(e.value) == (
        f"cannot resume run {run_id!r}: it belongs to another agent; its mission is "
        "'wipe every order', this agent's is 'Count the products'"
    )
    assert (e.value.what, e.value.stored, e.value.resuming, e.value.run_id) == (
        "mission",
        "wipe every order",
        "Count the products",
        run_id,
    )
    assert isinstance(e.value, ValueError) and llm.calls == []  # nothing asked, nothing run


def test_resume_refuses_a_run_with_other_tools(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    run_id = started(path, "Handle the orders", tools=[wipe])
    agent = ptc.SubAgent(prompt="Handle the orders", llm=ScriptedLLM([]), tools=[count])
    with pytest.raises(ptc.RunMismatchError) as e:
        agent.resume(JsonlCheckpoint(path))
    assert str(e.value) == (
        f"cannot resume run {run_id!r}: it belongs to another agent; its tools is "
        "['wipe (order :string) -> :string'], this agent's is ['count (sku :string) -> :int']"
    )


def test_resume_refuses_a_run_with_other_data_and_takes_the_runs_data(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    run_id = started(path, "Handle the orders", data={"orders": [1, 2]})
    other = ptc.SubAgent(prompt="Handle the orders", llm=ScriptedLLM([]), data={"orders": [1, 3]})
    with pytest.raises(ptc.RunMismatchError) as e:
        other.resume(JsonlCheckpoint(path))
    stored, resuming = e.value.stored, e.value.resuming
    assert e.value.what == "data" and stored["keys"] == resuming["keys"] == ["orders"]
    assert stored["fingerprint"] != resuming["fingerprint"]
    assert all(
        x["fingerprint"].startswith("v2:sha256:") and len(x["fingerprint"]) == 10 + 64
        for x in (stored, resuming)
    )
    assert str(e.value) == (
        f"cannot resume run {run_id!r}: it belongs to another agent; its data is {stored!r}, "
        f"this agent's is {resuming!r}"
    )
    # the data a run was started with (run(data=...)) is passed to resume the same way
    step = ptc.SubAgent(
        prompt="Handle the orders", llm=ScriptedLLM([clj("(return (count data/orders))")])
    ).resume(JsonlCheckpoint(path), data={"orders": [1, 2]})
    assert step.ok and step.value == 2


def test_a_run_saved_without_a_fingerprint_is_compared_by_its_data_keys_and_types(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.jsonl"
    run_id = started(path, "Handle the orders", data={"orders": [1, 2]})
    lines = path.read_text(encoding="utf-8").splitlines()
    start = json.loads(lines[0])
    del start["context"]["data_fingerprint"]  # as saved before fingerprints existed
    path.write_text(json.dumps(start) + "\n" + "\n".join(lines[1:]) + "\n", encoding="utf-8")
    shorter = ptc.SubAgent(prompt="Handle the orders", llm=ScriptedLLM([]), data={"orders": [1]})
    with pytest.raises(ptc.RunMismatchError) as e:
        shorter.resume(JsonlCheckpoint(path))
    assert str(e.value) == (
        f"cannot resume run {run_id!r}: it belongs to another agent; its data is "
        "{'keys and types': ['orders list[2]']}, this agent's is "
        "{'keys and types': ['orders list[1]']}"
    )
    same = ptc.SubAgent(
        prompt="Handle the orders",
        llm=ScriptedLLM([clj("(return plan)")]),
        data={"orders": [1, 2]},
    )
    assert same.resume(JsonlCheckpoint(path)).value == "wipe every order"


def test_the_data_fingerprint_is_the_same_in_every_process(tmp_path: Path) -> None:
    """Sets and map keys are sorted: hash randomization (another PYTHONHASHSEED) and insertion
    order do not change it; any other change of the data does."""
    script = tmp_path / "fp.py"
    script.write_text(
        "from ptc.checkpoint import data_fingerprint as f\n"
        "print(f({'tags': {'red', 'green', 'blue', 'teal'}, 'by': {'b': 1, 'a': {2, 1}}}))\n"
        "print(f({'by': {'a': {1, 2}, 'b': 1}, 'tags': {'teal', 'blue', 'green', 'red'}}))\n"
        "print(f({'items': [{'sku': 'x1', 'n': 3}], 'k': {'y': 1.5}}))\n"
        "print(f({'k': {'y': 1.5}, 'items': [{'n': 3, 'sku': 'x1'}]}))\n"
        "print(f({'tags': {'red', 'green', 'blue'}, 'by': {'b': 1, 'a': {2, 1}}}))\n"
        "print(f({'items': [{'sku': 'x1', 'n': 4}], 'k': {'y': 1.5}}))\n"
        # keys the JSON encoder cannot take (a tuple, mixed types), and 990 levels of nesting
        "print(f({'m': {(1, 2): {'b', 'a'}, 'x': 1, 3: [frozenset({2, 1})]}}))\n"
        "print(f({'m': {3: [frozenset({1, 2})], 'x': 1, (1, 2): {'a', 'b'}}}))\n"
        "print(f({'m': {(2, 1): {'b', 'a'}, 'x': 1, 3: [frozenset({2, 1})]}}))\n"
        "deep = 1\n"
        "for _ in range(990): deep = [{'k': deep, 's': {'q', 'r'}}]\n"
        "print(f({'deep': deep}))\n"
    )
    outs = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, check=True
        )
        outs.append(done.stdout.split())
    assert outs[0] == outs[1] == outs[2]
    sets, sets_reordered, plain, plain_reordered, fewer, changed = outs[0][:6]
    keys, keys_reordered, keys_changed, deep = outs[0][6:]
    assert sets == sets_reordered and plain == plain_reordered and keys == keys_reordered
    assert len({sets, plain, fewer, changed, keys, keys_changed, deep}) == 7
    assert all(x.startswith("v2:sha256:") and len(x) == 10 + 64 for x in outs[0])


# --- counts read from a file are checked before anything is made from them ----------------------


@pytest.mark.timeout(60)
def test_a_saved_turn_claiming_1e8_llm_calls_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    a, _ = two_runs(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    turn = json.loads(lines[3])  # A's turn 3, its last
    turn["calls"] = 10**8
    lines[3] = json.dumps(turn)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(CheckpointError) as e:
        JsonlCheckpoint(path).load(a)
    assert str(e.value) == (
        f"{path}, line 4 (run {a!r}): step.calls: 100000000 LLM requests for 3 turns; a step "
        "makes one request per turn and at most 1000 that went unanswered"
    )


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_run_resumed_after_an_outage_loads_as_it_went_on_not_as_the_outage(
    tmp_path: Path, kind: str
) -> None:
    """The outage saved an end (llm_error); the resumed run's turns come after it."""
    path = tmp_path / ("runs.jsonl" if kind == "jsonl" else "runs.db")

    def cp() -> Any:
        return JsonlCheckpoint(path) if kind == "jsonl" else SqliteCheckpoint(path)

    stock = Stock()

    def agent(llm: Any) -> ptc.SubAgent:
        return ptc.SubAgent(
            prompt="Total stock of x1 and x2?",
            llm=llm,
            tools={"lookup": stock.lookup},
            checkpoint=cp(),
            max_turns=5,
        )

    outage = ScriptedLLM([clj('(def a (tool/lookup "x1"))'), ValueError("provider down")])
    assert agent(outage).run().error.type == "llm_error"  # type: ignore[union-attr]
    with pytest.raises(Crash):  # resumed: turn 2, then the process dies
        agent(crashing([clj('(def b (tool/lookup "x2"))')])).resume(cp())
    saved, _ = cp().load()
    assert [t.number for t in saved.turns] == [1, 2] and saved.error is None
    step = agent(crashing([clj("(return (+ a b))")])).resume(cp())
    assert step.ok and step.value == 8 and stock.calls == ["x1", "x2"]
    final, _ = cp().load()
    assert final.ok and final.value == 8 and len(final.turns) == 3


def test_a_save_waits_for_a_line_another_writer_is_writing(tmp_path: Path) -> None:
    """The torn tail is cut only under the file's lock: a line another writer is in the middle
    of writing (holding the lock, as every save does) is not taken for a torn one."""
    import fcntl
    import threading
    import time

    step = ptc.SubAgent(prompt="p", llm=ScriptedLLM([clj("(return 1)")])).run()
    other = tmp_path / "other.jsonl"
    JsonlCheckpoint(other).save(step, "a")
    line = other.read_bytes()  # run a's start, turn and end
    path = tmp_path / "shared.jsonl"
    halfway = threading.Event()

    def slow_writer() -> None:
        with path.open("ab") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            f.write(line[: len(line) // 2])
            f.flush()
            halfway.set()
            time.sleep(0.5)
            f.write(line[len(line) // 2 :])

    writer = threading.Thread(target=slow_writer)
    writer.start()
    assert halfway.wait(10)
    JsonlCheckpoint(path).save(step, "b")  # waits for the lock, then appends after a's lines
    writer.join()
    cp = JsonlCheckpoint(path)
    assert cp.runs() == ["a", "b"] and cp.problems() == []
    assert cp.load("a")[0].value == cp.load("b")[0].value == 1


async def test_aresume_refuses_a_run_of_another_agent_too(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    run_id = started(path, "wipe every order")
    agent = ptc.SubAgent(prompt="Count the products", llm=ScriptedLLM([]), max_turns=3)
    with pytest.raises(ptc.RunMismatchError) as e:
        await agent.aresume(JsonlCheckpoint(path))
    assert (e.value.what, e.value.run_id) == ("mission", run_id)
