"""Durable turns: checkpoints after every turn, and resume in a new process after the first
was killed with SIGKILL between turns (issue 10)."""

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
from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint
from ptc.llm import ScriptedLLM

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

    whole = child(tmp_path, "print(json.dumps(comparable(agent(REPLIES).run())))")
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
    with pytest.raises(ValueError, match="already finished"):
        ptc.SubAgent(prompt="p", llm=ScriptedLLM([])).resume(cp)


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
