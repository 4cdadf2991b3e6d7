"""Speculative runs (the core of eager evaluation, issue 33 §3): a run given ``only=`` commits
nothing, calls only the tools named (the others' calls wait), and keeps its record, so the
real run of the whole program is answered from it: no tool is called twice and the outcome is
the real run's own. Also ``_core.complete_prefix``, what of a streaming program can run."""

from __future__ import annotations

from typing import Any

import ptc
from ptc import _core

CALLS: list[tuple[str, Any]] = []


@ptc.tool(effect="read")
def lookup(x: int) -> int:
    """Doubles x."""
    CALLS.append(("lookup", x))
    return x * 2


@ptc.tool(effect="write")
def save(x: int) -> str:
    """Saves x."""
    CALLS.append(("save", x))
    return "ok"


def session() -> ptc.Session:
    CALLS.clear()
    return ptc.Session(tools=[lookup, save])


def speculate(s: ptc.Session, source: str) -> Any:
    return s._run(source, None, None, True, None, None, ["lookup"])


def tape_of(result: Any) -> dict[str, Any]:
    record = result._suspended()
    return {"calls": record["calls"], "clock": record["clock"]}


PREFIX = "(def a (tool/lookup 2))\n(def b (tool/save a))"


def test_other_tools_wait_and_nothing_is_committed() -> None:
    s = session()
    r = speculate(s, PREFIX)
    assert r.outcome == "pending"
    assert [(p.tool, p.args) for p in r.pending] == [("save", [4])]
    assert CALLS == [("lookup", 2)]
    assert "a" not in s.memory and "b" not in s.memory


def test_the_real_run_is_answered_from_the_speculative_record() -> None:
    s = session()
    tape = tape_of(speculate(s, PREFIX))
    r = s._run(PREFIX + "\n[a b]", None, None, False, None, tape)
    assert r.error is None and r.value == [4, "ok"]
    assert CALLS == [("lookup", 2), ("save", 4)]  # lookup once: its answer came from the record
    assert [(c.name, c.replayed) for c in r.tool_calls] == [("lookup", True), ("save", False)]
    assert s.memory["a"] == 4 and s.memory["b"] == "ok"


def test_a_finished_speculative_run_commits_nothing_and_keeps_its_record() -> None:
    s = session()
    r = speculate(s, "(def a (tool/lookup 5))\n(+ a 1)")
    assert (r.outcome, r.value) == ("value", 11)
    assert "a" not in s.memory
    assert [c["tool"] for c in tape_of(r)["calls"]] == ["lookup"]
    real = s._run("(def a (tool/lookup 5))\n(+ a 1)", None, None, False, None, tape_of(r))
    assert real.value == 11 and CALLS == [("lookup", 5)]


def test_clock_readings_are_replayed() -> None:
    s = session()
    spec = speculate(s, "(def t (System/currentTimeMillis))")
    real = s._run("(def t (System/currentTimeMillis))\nt", None, None, False, None, tape_of(spec))
    assert real.value == s.memory["t"]
    assert [c[1] for c in tape_of(spec)["clock"]] == [real.value]  # the reading, replayed


def test_complete_prefixes_of_a_streaming_program() -> None:
    program = '(def a (tool/lookup 2))\n(println "x)")\n(def b (tool/save a))\n[a b]'
    cuts = sorted({_core.complete_prefix(program[:n]) for n in range(len(program) + 1)})
    ends = [program.index("\n"), program.index("\n", 24), program.index("\n", 40), len(program)]
    assert cuts == [0, *ends]
    assert _core.complete_prefix('(str "é(") (x') == len('(str "é(")')  # characters, not bytes
