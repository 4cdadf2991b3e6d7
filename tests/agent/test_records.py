"""Turn/Step records and their JSON form, with hand-made turns (no core needed)."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from agent_helpers import DATA, MISSION, SYSTEM, TOOLS, call, turn, value
from ptc.compression import SingleUserCoalesced
from ptc.step import RunContext, Step, StepError, Usage
from ptc.turn import Turn, decode_value, encode_value


def context(**kw):
    base = dict(
        mission=MISSION,
        system_prompt=SYSTEM,
        max_turns=5,
        tools=TOOLS,
        data=DATA,
        compression="single_user_coalesced",
        compression_opts={"println_limit": 15, "tool_call_limit": 20},
    )
    base.update(kw)
    return RunContext(**base)


def make_step(ctx):
    turns = (
        turn(
            1,
            "(def x 1)",
            calls=[call("t", "1", {"a": 1})],
            memory=[value("x", "integer", "1")],
            defined=["x"],
        ),
        turn(2, "(oops)", error="Undefined variable: oops", memory=[value("x", "integer", "1")]),
    )
    messages = tuple(ctx.messages_for(turns[:k])[0] for k in range(3))
    stats = ctx.messages_for(turns)[1]
    return Step(
        False, None, StepError("llm_error", "down"), turns, messages, Usage(5, 2, 3, 0, stats), ctx
    )


def test_turn_is_frozen():
    """ARC-001, DBG-002: a Turn is an immutable record with the required fields."""
    t = turn(1)
    for name in ("number", "program", "result", "prints", "tool_calls", "memory", "success"):
        assert hasattr(t, name)
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.success = False  # type: ignore[misc]


def test_step_json_roundtrip_rederives_messages():
    """DBG-003: JSON holds turns and context; messages are rendered again, identical."""
    step = make_step(context())
    data = json.loads(step.to_json())
    assert "messages" not in data and data["calls"] == 3
    again = Step.from_json(step.to_json())
    assert again == step


def test_step_json_keeps_messages_when_asked():
    step = make_step(context())
    again = Step.from_json(step.to_json(include_messages=True))
    assert again.messages == step.messages


def test_render_compressed_and_full():
    """DBG-004, DBG-005: the compressed view is what the strategy renders; full shows programs."""
    step = make_step(context(compression=None, compression_opts={}))
    view = step.render("compressed")
    messages, _ = SingleUserCoalesced().to_messages(
        step.turns, step.turns[-1].memory, step.context.render_options()
    )
    assert view.startswith("[SYSTEM] (")
    assert view.endswith(messages[-1]["content"])
    assert SYSTEM in step.render("compressed", include_system=True)
    full = step.render("full")
    assert "--- turn 1 (ok) ---\n(def x 1)" in full and "--- turn 2 (FAILED) ---" in full
    with pytest.raises(ValueError):
        step.render("nope")  # type: ignore[arg-type]


def test_value_codec_roundtrip():
    values = [None, True, 3, 2.5, "s", [1, [2]], {"a": {"b": [1]}}, {1: "x"}, {"$kw": 1}, math.inf]
    for v in values:
        assert decode_value(json.loads(json.dumps(encode_value(v)))) == v
    assert decode_value(encode_value({1, 2})) == {1, 2}
    assert decode_value(encode_value(object())).startswith("<object")


def test_turn_dict_roundtrip():
    t = turn(3, "(x)", prints=["a"], calls=[call("t", '"q"', [1, 2])], error="boom", hint="h")
    assert Turn.from_dict(json.loads(json.dumps(t.to_dict()))) == t


def test_a_run_error_is_a_turn_error_plus_its_value():
    """One error-record shape: StepError has TurnError's fields (type, message, hint, line,
    column) and adds the value; a record written before line and column existed still loads."""
    from ptc.turn import TurnError

    e = StepError("fail", "no stock", value={"sku": "x1"})
    assert isinstance(e, TurnError) and str(e) == "no stock"
    assert e.to_dict() == {
        "type": "fail",
        "message": "no stock",
        "hint": None,
        "line": None,
        "column": None,
        "value": {"sku": "x1"},
    }
    assert StepError.from_dict(e.to_dict()) == e
    old = {"type": "llm_error", "message": "down", "value": None, "hint": "retry"}
    assert StepError.from_dict(old) == StepError("llm_error", "down", "retry")


def test_a_single_shot_error_keeps_where_it_happened():
    import ptc

    step = ptc.SubAgent(
        "p", llm=lambda messages: "```clojure\n(+ 1\n   (undefined-thing))\n```", max_turns=1
    ).run()
    assert step.error is not None and step.error.type == "undefined_variable"
    assert (step.error.line, step.error.column) == (2, 4)


def test_to_dict_without_timings_compares_two_runs_of_one_script():
    import ptc

    def lookup(sku: str) -> int:
        return {"x1": 3}[sku]

    def run() -> Step:
        replies = iter(
            ['```clojure\n(def a (tool/lookup "x1"))\n```', "```clojure\n(return a)\n```"]
        )
        return ptc.SubAgent("p", llm=lambda m: next(replies), tools=[lookup], max_turns=3).run()

    one, two = run(), run()
    d = one.to_dict(timings=False)
    assert "duration_ms" not in d
    assert all("llm_ms" not in t and "run_ms" not in t for t in d["turns"])
    assert [list(c) for c in d["turns"][0]["tool_calls"]] == [
        ["name", "args", "args_text", "result", "error"]
    ]
    assert d == two.to_dict(timings=False)
