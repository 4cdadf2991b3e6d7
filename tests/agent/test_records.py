"""Turn/Step records and their JSON form, with hand-made turns (no core needed)."""

from __future__ import annotations

import dataclasses
import json
import math

import ptc
import pytest
from agent_helpers import DATA, MISSION, SYSTEM, TOOLS, call, turn, value
from ptc.compression import SingleUserCoalesced
from ptc.step import RunContext, Step, StepError, Usage
from ptc.trace import to_text
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
    # the same text as `ptc trace` prints: the end as the core printed it, not a Python repr
    assert full == to_text(step)
    assert "value=" not in full
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
        ["name", "args", "args_text", "result", "error", "decision"]
    ]
    assert d == two.to_dict(timings=False)


# --- a loaded Step is checked field by field (issue 29) -----------------------------------------

COUNT = "a count (an integer from 0 to 9007199254740992)"
DURATION = "a duration (a finite number, 0 or more)"


def _set(d: dict, path: tuple, value: object) -> None:
    for key in path[:-1]:
        d = d[key]
    d[path[-1]] = value


def _drop(d: dict, path: tuple, _: object) -> None:
    for key in path[:-1]:
        d = d[key]
    del d[path[-1]]


FIELDS = [
    # (how, where, what is put there, the error)
    (_set, ("error", "type"), 5, "step.error.type: expected a string, got the integer 5"),
    (
        _set,
        ("usage", "input_tokens"),
        "<script>alert(1)</script>",
        f"step.usage.input_tokens: expected {COUNT}, got the string '<script>alert(1)</script>'",
    ),
    (
        _set,
        ("usage", "llm_calls"),
        -1,
        f"step.usage.llm_calls: expected {COUNT}, got the integer -1",
    ),
    (
        _set,
        ("usage", "llm_retries"),
        10**30,
        f"step.usage.llm_retries: expected {COUNT}, got the integer 1" + "0" * 30,
    ),
    (
        _set,
        ("turns", 1, "number"),
        "2",
        f"step.turns[1].number: expected {COUNT}, got the string '2'",
    ),
    (
        _set,
        ("turns", 0, "prints"),
        "text",
        "step.turns[0].prints: expected a list, got the string 'text'",
    ),
    (
        _set,
        ("turns", 0, "tool_calls", 0, "name"),
        None,
        "step.turns[0].tool_calls[0].name: expected a string, got null",
    ),
    (
        _set,
        ("turns", 0, "llm_ms"),
        math.nan,
        f"step.turns[0].llm_ms: expected {DURATION}, got the number nan",
    ),
    (
        _set,
        ("turns", 0, "memory", 0),
        [1],
        "step.turns[0].memory[0]: expected an object, got a list of 1 item",
    ),
    (
        _set,
        ("turns", 0, "usage"),
        {"input_tokens": "many"},
        f"step.turns[0].usage['input_tokens']: expected {COUNT}, got the string 'many'",
    ),
    (
        _set,
        ("context", "max_turns"),
        True,
        f"step.context.max_turns: expected {COUNT}, got the boolean true",
    ),
    (
        _set,
        ("context", "tools", 0, "params", 0),
        1,
        "step.context.tools[0].params[0]: expected a string, got the integer 1",
    ),
    (_set, ("ok",), "yes", "step.ok: expected a boolean, got the string 'yes'"),
    (_set, ("value",), {"$kw": 5}, "step.value: a keyword ($kw) holds a string, not the integer 5"),
    (
        _set,
        ("turns", 0, "result"),
        [0, {"$set": [{"a": 1}]}],
        "step.turns[0].result[1]: a $set member cannot be a map object (maps as keys are stored "
        "as pairs)",
    ),
    (
        _set,
        ("turns", 1, "number"),
        5,
        "step.turns[1].number: expected 2 (turns are numbered from 1 in order), got 5",
    ),
    (_drop, ("turns", 0, "number"), None, "step.turns[0]: missing field 'number'"),
    (_drop, ("turns",), None, "step: missing field 'turns'"),
    (
        _set,
        ("calls",),
        10**8,
        "step.calls: 100000000 LLM requests for 2 turns; a step makes one request per turn and at "
        "most 1000 that went unanswered",
    ),
    (
        _set,
        ("calls",),
        1,
        "step.calls: 1 LLM request for 2 turns; a step makes one request per turn and at most "
        "1000 that went unanswered",
    ),
    (_set, ("duration_ms",), -1, f"step.duration_ms: expected {DURATION}, got the integer -1"),
    (_set, ("ok",), True, "step.error: a step that is ok has no error"),
]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("how", "path", "value", "message"), FIELDS, ids=[str(i) for i in range(22)]
)
def test_a_loaded_step_checks_every_field_and_names_its_path(how, path, value, message):
    """Issue 29 (2, 14): a step.json (a shared bug report, a checkpoint row) is untrusted."""
    d = json.loads(make_step(context()).to_json())
    how(d, path, value)
    with pytest.raises(ValueError) as e:
        Step.from_dict(d)
    assert str(e.value) == message
    with pytest.raises(ValueError) as e:  # the same through JSON text
        Step.from_json(json.dumps(d))
    assert str(e.value) == message


def test_a_stored_step_that_is_not_an_object_or_too_deep_is_refused():
    with pytest.raises(ValueError) as e:
        Step.from_dict([1])  # type: ignore[arg-type]
    assert str(e.value) == "step: expected an object, got a list of 1 item"
    with pytest.raises(ValueError) as e:
        Step.from_json("[" * 100_000 + "]" * 100_000)
    assert str(e.value) == "step: the JSON is nested too deeply to load"
    d = json.loads(make_step(context()).to_json(include_messages=True))
    d["messages"][0][0] = {"role": 1, "content": "x"}
    with pytest.raises(ValueError) as e:
        Step.from_dict(d)
    assert str(e.value) == "step.messages[0][0]['role']: expected a string, got the integer 1"


def test_requests_past_the_last_turn_saw_every_turn():
    """An outage ends a run with an unanswered request, and a resume after it may add one
    more: each of those message lists is the one rendered after the last turn."""
    step = make_step(context())
    d = json.loads(step.to_json())
    d["calls"] = 5
    again = Step.from_dict(d)
    assert again.messages[:3] == step.messages
    assert again.messages[3] == again.messages[4] == step.messages[2]
    assert again.messages[3] is not again.messages[4]  # lists of their own


class _Counting:
    """A strategy that counts its renders (and renders as single-user coalesced)."""

    name = "single_user_coalesced"

    def __init__(self):
        self.renders = 0

    def to_messages(self, turns, memory, opts):
        self.renders += 1
        return SingleUserCoalesced().to_messages(turns, memory, opts)


def test_a_loaded_step_renders_a_call_only_when_it_is_read():
    """Issue 29 (14): re-deriving every call's messages on load costs the square of the turns
    (2000 one-line turns: 1.1 GB and 13 s); a loaded step renders a call when it is read."""
    step = make_step(context())
    counting = _Counting()
    again = Step.from_json(step.to_json(), strategy=counting)
    assert counting.renders == 0 and len(again.messages) == 3
    assert "3 LLM calls" in repr(again.messages) and counting.renders == 0
    assert again.messages[1] == step.messages[1] and counting.renders == 1
    assert again.messages[-1] == step.messages[2] and counting.renders == 2
    assert again.messages[1:] == step.messages[1:] and counting.renders == 4
    assert again.messages == step.messages and step.messages == again.messages
    assert again.messages != step.messages[:2] and again.messages != "abc"
    with pytest.raises(IndexError):
        again.messages[3]
    with pytest.raises(IndexError):
        again.messages[-4]


def test_a_stored_step_naming_an_unknown_strategy_says_so_on_load():
    d = json.loads(make_step(context()).to_json())
    d["context"]["compression"] = "nope"
    with pytest.raises(ValueError) as e:
        Step.from_dict(d)
    assert str(e.value).startswith(
        "step.context.compression: unknown compression strategy 'nope' (known: "
    )


def test_a_fail_reason_reads_as_the_core_printed_it() -> None:
    """Issue 30: a reason that is not text was shown through its Python conversion, so
    ``{"a" 1}`` read ``{:a 1}``; the message is the core's text, the value the data."""
    from ptc.llm.scripted import ScriptedLLM

    llm = ScriptedLLM(['```clojure\n(fail {"a" 1 :b [1 2]})\n```'])
    step = ptc.SubAgent("x", llm=llm).run()
    assert step.error is not None
    assert (step.error.type, step.error.message) == ("fail", '{"a" 1, :b [1 2]}')
    assert step.error.value == {"a": 1, "b": [1, 2]}
