"""What resume does with a tool call the process died in (issue 30, item 6: AGENT.md said no
tool is called twice). A turn is saved when it is complete, so the turn under way when the
process is killed is not saved: resume replays the saved turns with their recorded results (no
tool runs again for them) and asks the model for that turn again, and the tool calls its new
program makes are made again, the one that was running and those already done in that turn.
Tool calls are at least once; this test keeps the documented behaviour true."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

CHILD = '''
import os, sys, time
import ptc
from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint
from ptc.llm import ScriptedLLM

EFFECTS, STORE, KIND, PART = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

def effect(line):
    with open(EFFECTS, "a", encoding="utf-8") as f:
        f.write(line + "\\n")
        f.flush()
        os.fsync(f.fileno())

def lookup(sku: str) -> int:
    """Stock for a sku."""
    effect("lookup " + sku)
    return 3

def charge(order: str) -> str:
    """Charge an order."""
    effect("charge " + order)
    if PART == "first" and order == "o2":
        time.sleep(600)  # killed here, inside the tool
    return "charged " + order

def clj(src):
    return "```clojure\\n" + src + "\\n```"

TURN_2 = clj('(def c1 (tool/charge "o1")) (def c2 (tool/charge "o2"))')
REPLIES = [clj('(def a (tool/lookup "x1"))'), TURN_2, clj("(return [a c1 c2])")]
cp = JsonlCheckpoint(STORE) if KIND == "jsonl" else SqliteCheckpoint(STORE)
agent = ptc.SubAgent(prompt="Charge the orders", llm=ScriptedLLM(REPLIES if PART == "first"
                     else REPLIES[1:]), tools=[lookup, charge], checkpoint=cp)
if PART == "first":
    agent.run()
    print("not reached")
else:
    saved, _ = cp.load()
    print(len(saved.turns), saved.ok, saved.error)
    step = agent.resume(cp)
    print(step.ok, step.value, len(step.turns))
'''


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_tool_call_the_process_died_in_is_made_again_by_the_resumed_run(
    tmp_path: Path, kind: str
) -> None:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD), encoding="utf-8")
    effects = tmp_path / "effects.log"
    store = tmp_path / ("run.jsonl" if kind == "jsonl" else "run.db")
    args = [sys.executable, str(script), str(effects), str(store), kind]

    first = subprocess.Popen(
        [*args, "first"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while "charge o2" not in (effects.read_text() if effects.exists() else ""):
            assert first.poll() is None, first.communicate()
            assert time.monotonic() < deadline, "the child never reached the tool"
            time.sleep(0.02)
        os.kill(first.pid, signal.SIGKILL)  # the process dies inside tool/charge "o2"
        out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == -signal.SIGKILL, err
    assert "not reached" not in out
    assert effects.read_text().splitlines() == ["lookup x1", "charge o1", "charge o2"]

    second = subprocess.run([*args, "resume"], capture_output=True, text=True, timeout=120)
    assert second.returncode == 0, second.stderr
    # one turn was saved (turn 2 was under way); the run went on and ended
    assert second.stdout.splitlines() == [
        "1 False None",
        "True [3, 'charged o1', 'charged o2'] 3",
    ]
    # turn 1's lookup was replayed from its record, not called again; turn 2's calls were
    # all made again: the one the process died in and the one already done in that turn
    assert effects.read_text().splitlines() == [
        "lookup x1",
        "charge o1",
        "charge o2",
        "charge o1",
        "charge o2",
    ]
