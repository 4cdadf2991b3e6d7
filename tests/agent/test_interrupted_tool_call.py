"""What resume does with a tool call the process died in (issue 30, item 6; issue 32 §3). The
turn under way is saved before its program runs, and each tool call as it starts and as it
ends: resume replays the saved turns, finishes the turn that was under way without asking the
model again (the call that ended is answered from its record), and the call the process died
in, whose tool is not idempotent, waits for the host (`PendingCall.interrupted`): no tool is
called twice unless the host decides so."""

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
                     else REPLIES[2:]), tools=[lookup, charge], checkpoint=cp)
if PART == "first":
    agent.run()
    print("not reached")
else:
    saved, _ = cp.load()
    print(len(saved.turns), saved.outcome)
    step = agent.resume(cp)
    print(step.outcome, [(p.tool, p.args, p.interrupted) for p in step.pending])
    # the host knows the charge did not go through: it lets ptc make it again
    step = agent.resume(cp, decisions={step.pending[0].id: True})
    print(step.ok, step.value, len(step.turns))
'''


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
def test_a_tool_call_the_process_died_in_waits_for_the_host_and_nothing_runs_twice(
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
    # one turn was saved, turn 2 was under way; it stops at the call the process died in
    assert second.stdout.splitlines() == [
        "1 running",
        "pending [('charge', ['o2'], True)]",
        "True [3, 'charged o1', 'charged o2'] 3",
    ]
    # turn 1's lookup and turn 2's first charge were answered from their records; the
    # charge the process died in was made again once, by the host's decision
    assert effects.read_text().splitlines() == [
        "lookup x1",
        "charge o1",
        "charge o2",
        "charge o2",
    ]
