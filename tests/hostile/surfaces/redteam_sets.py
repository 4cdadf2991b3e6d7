"""Red team, sets and maps crossing to Python: collisions one level down (sets of sets, maps
as members or keys), collisions deep inside a tool's arguments, values that are distinct on
both sides, sets through a checkpoint's replay, and the CLI's ``--json`` view of maps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from . import case

SAME = "their elements are equal in Python"


def _set_message(a: str, b: str, whole: str) -> str:
    return (
        "a set has members that are different here but equal in Python, which would keep only "
        f"one: {a} and {b} ({SAME}) in {whole}"
    )


def _map_message(a: str, b: str, whole: str) -> str:
    return (
        "a map has keys that are different here but equal in Python, which would keep only "
        f"one: {a} and {b} ({SAME}) in {whole}"
    )


@case(seconds=30, memory_mb=300)
def case_collisions_one_level_down_are_named(tmp: Path) -> None:
    """Sets of sets, sets of maps and maps keyed by maps, sets or vectors whose members differ
    only in ways Python does not see (1 and 1.0, :a and "a", 1 and true): refused naming both,
    as a run's value; nothing is committed."""
    import ptc

    cases = {
        "#{#{1} #{1.0}}": _set_message("#{1}", "#{1.0}", "#{#{1} #{1.0}}"),
        "#{{:a 1} {:a 1.0}}": _set_message("{:a 1}", "{:a 1.0}", "#{{:a 1} {:a 1.0}}"),
        '#{{:a 1} {"a" 1}}': _set_message("{:a 1}", '{"a" 1}', '#{{:a 1} {"a" 1}}'),
        "{{:a 1} :x {:a 1.0} :y}": _map_message("{:a 1}", "{:a 1.0}", "{{:a 1} :x, ...}"),
        "{#{1} :x #{true} :y}": _map_message("#{1}", "#{true}", "{#{1} :x, ...}"),
        '{[:a] 1 ["a"] 2}': _map_message("[:a]", '["a"]', "{[:a] 1, ...}"),
    }
    s = ptc.Session()
    for program, message in cases.items():
        r = s.run(f"(def v {program}) v")
        assert r.error is not None and r.error.type == "execution_error", (program, r)
        assert r.error.message == message, (program, r.error.message)
        assert "v" not in s.memory


@case(seconds=30, memory_mb=300)
def case_collisions_deep_in_tool_arguments_never_reach_the_tool(tmp: Path) -> None:
    """A colliding set three levels down a tool's arguments (in a vector in a map in a vector,
    and as a keyword argument's value): the tool is not called and the error names the set."""
    import ptc

    got: list[Any] = []

    def t(*args: Any, **kwargs: Any) -> int:
        got.append((args, kwargs))
        return 1

    s = ptc.Session(tools={"t": t})
    for program, a, b in (
        ("(tool/t [{:s [#{1 1.0}]}])", "1", "1.0"),
        ("(tool/t {:a {:b #{1.0 1}}})", "1.0", "1"),
    ):
        message = (
            "a set has members that are different here but equal in Python, which would keep "
            f"only one: {a} and {b} (an integer and a float of the same value) in #{{{a} {b}}}"
        )
        r = s.run(program)
        assert r.error is not None and r.error.message.endswith(message), (program, r.error)
    assert got == []


@case(seconds=30, memory_mb=300)
def case_values_distinct_on_both_sides_cross_whole(tmp: Path) -> None:
    """Members and keys that differ in the program and in Python cross whole: 2**53+1 and
    2.0**53 (Python compares int and float exactly), "1" and 1, vectors as tuples, nil and
    "nil"; -0.0 and 0.0 are one member in the program already, and one in Python."""
    import ptc

    assert ptc.run("{9007199254740993 :a 9007199254740992.0 :b}").value == {
        9007199254740993: "a",
        9007199254740992.0: "b",
    }
    assert ptc.run('#{1 "1" :b 2.5 [1] [1 2] nil "nil"}').value == {
        1,
        "1",
        "b",
        2.5,
        (1,),
        (1, 2),
        None,
        "nil",
    }
    assert ptc.run("(count #{0.0 -0.0})").value == 1
    assert ptc.run("#{0.0 -0.0}").value == {0.0}


@case(seconds=30, memory_mb=300)
def case_sets_come_back_equal_through_a_checkpoints_replay(tmp: Path) -> None:
    """A tool returns a set of a frozenset, a tuple, a keyword, a string, a float and None;
    the run crashes; on resume the recorded result is replayed (the tool is not called) and
    the definition equals the original set."""
    import ptc
    from ptc.checkpoint import JsonlCheckpoint

    class Crash(BaseException):
        pass

    original = {frozenset({1, 2}), (1, "a"), ptc.Keyword("k"), "k2", 2.5, None}
    replies = iter(["```clojure\n(def a (tool/tags))\n```"])

    def llm(messages: Any) -> str:
        try:
            return next(replies)
        except StopIteration:
            raise Crash from None

    calls: list[int] = []

    def tags() -> Any:
        """The tags."""
        calls.append(1)
        return original

    path = tmp / "runs.jsonl"
    try:
        ptc.SubAgent("Tags", llm=llm, tools=[tags], checkpoint=JsonlCheckpoint(path)).run()
    except Crash:
        pass
    assert calls == [1]
    step = ptc.SubAgent("Tags", llm=lambda m: "```clojure\n(return a)\n```", tools=[tags]).resume(
        JsonlCheckpoint(path)
    )
    assert (step.ok, step.value) == (True, original), step
    assert calls == [1]


@case(seconds=30, memory_mb=300)
def case_json_output_never_merges_keys(tmp: Path) -> None:
    """``ptc eval --json`` prints a map whose keys are not strings with the keys as PTC-Lisp
    text: ``{1 :a "1" :b}`` printed ``{"1": "b"}`` (the entry of 1 silently gone), and so did
    nil and "nil", [1 2] and "[1 2]". Keys that collide as text are an error (exit 1, as for
    :a and "a") naming both keys; never merged."""
    for program, keys in (
        ('{1 :a "1" :b}', 'the keys 1 and "1"'),
        ('{nil 1 "nil" 2}', 'the keys nil and "nil"'),
        ('{[1 2] :a "[1 2]" :b}', 'the keys [1 2] and "[1 2]"'),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "ptc", "eval", program, "--json"],
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        # stdout is one JSON document whatever happens (issue 30): here its error
        doc = json.loads(done.stdout)
        assert done.returncode == 1 and doc["ok"] is False and doc["value"] is None, (program, done)
        message = f"--json cannot print the value: the map has {keys}, which are both the JSON"
        assert doc["error"]["type"] == "json_error", doc
        assert doc["error"]["message"].startswith(message), doc
        assert done.stderr.startswith(f"Error [json_error]: {message}"), (program, done.stderr)
