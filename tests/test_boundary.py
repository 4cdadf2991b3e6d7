"""Issue 9: the typed, lazy boundary. Results, tool-call records and definitions are core
classes; values convert to Python on first access; text is rendered from core values."""

from __future__ import annotations

import dataclasses
from typing import Any

import ptc
import pytest
from ptc import _core
from ptc.turn import Turn

# ---- the classes ----


def test_result_tool_call_and_definition_are_the_core_classes() -> None:
    s = ptc.Session(tools={"echo": lambda x: x})
    r = s.run('(def n 5) (tool/echo {:a [1 2]}) (return "done")')
    assert type(r) is _core.Result is ptc.Result
    assert (r.ok, r.returned, r.failed, r.outcome, r.value) == (True, True, False, "return", "done")
    assert r.error is None
    [call] = r.tool_calls
    assert type(call) is _core.ToolCall is ptc.ToolCall
    assert (call.name, call.args, call.result, call.error) == (
        "echo",
        [{"a": [1, 2]}],
        {"a": [1, 2]},
        None,
    )
    [d] = r.defined
    assert type(d) is _core.Definition is ptc.Definition
    assert (d.name, d.kind, d.type, d.sample, d.doc, d.params) == (
        "n",
        "value",
        "integer",
        "5",
        None,
        None,
    )
    assert s.definitions == [d]  # definitions compare by content


def test_result_fields_of_an_error_and_a_fail() -> None:
    r = ptc.run("(+ 1 nil)")
    assert (r.ok, r.outcome, r.value) == (False, "error", None)
    assert isinstance(r.error, ptc.ArgumentError)
    assert r.error is r.error  # built once
    f = ptc.run('(fail "no data")')
    assert (f.ok, f.failed, f.outcome, f.value) == (False, True, "fail", "no data")


def test_result_repr_shows_a_preview_not_the_whole_value() -> None:
    r = ptc.Session().run("(range 1000000)", lazy=True)
    assert repr(r) == "Result(outcome='value', value=[0 1 2 ...] (1000000 items, showing first 3))"
    assert r.lazy_value.is_converted is False


# ---- lazy values ----


def test_a_lazy_value_converts_on_first_read_and_once() -> None:
    s = ptc.Session()
    r = s.run("(mapv (fn [i] {:i i}) (range 5))", lazy=True)
    lazy = r.lazy_value
    assert type(lazy) is _core.LazyValue
    assert lazy.is_converted is False
    assert lazy.type_label == "list[5]"  # seed 000 type labels
    assert r.preview(2, 10) == "[{:i 0} {:i 1} ...] (5 items, showing first 2)"
    assert lazy.is_converted is False  # previews never convert
    v = r.value
    assert v == [{"i": i} for i in range(5)]
    assert lazy.is_converted is True
    assert r.value is v and lazy.get() is v


def test_the_default_run_converts_when_the_run_ends() -> None:
    r = ptc.Session().run("[1 2]")
    assert r.lazy_value.is_converted is True


def test_return_and_fail_values_convert_even_in_a_lazy_run() -> None:
    """They are answers: a return value Python cannot hold is the run's error, as without lazy."""
    s = ptc.Session()
    r = s.run("(return [1])", lazy=True)
    assert r.lazy_value.is_converted is True
    bad = s.run('(def kept 1) (return {:a 1 "a" 2})', lazy=True)
    assert bad.outcome == "error"
    assert bad.error is not None and bad.error.message.startswith(
        "a map has keys that are different here but equal in Python"
    )
    assert "kept" not in s.memory


def test_a_lazy_value_python_cannot_hold_raises_when_read_and_the_run_commits() -> None:
    """Lazy means the program's run stands (its definitions commit); reading the value raises
    the same explained error an eager run reports."""
    s = ptc.Session()
    r = s.run('(def kept 1) {:a 1 "a" 2}', lazy=True)
    assert r.ok and r.error is None
    assert [d.name for d in r.defined] == ["kept"]
    assert s.memory["kept"] == 1
    assert r.preview() == '{:a 1, "a" 2}'
    with pytest.raises(ptc.LispError) as info:
        _ = r.value
    assert info.value.type == "execution_error"
    assert info.value.message.startswith(
        "a map has keys that are different here but equal in Python"
    )
    assert info.value.hint == "return a flatter value, e.g. (flatten v) or a summary"


def test_reading_a_lazy_value_is_bounded_by_the_session_limits() -> None:
    """2^40 leaves of shared structure: the read ends in a LimitError, not a hang."""
    s = ptc.Session(limits={"timeout_ms": 300})
    r = s.run("(loop [x [1] i 0] (if (< i 40) (recur [x x] (inc i)) x))", lazy=True)
    assert r.ok
    with pytest.raises(ptc.LimitError):
        _ = r.value


# ---- previews are rendered from core values ----


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        # what the program built, not what Python received: string keys stay strings,
        # a set keeps both :a and "a", dates, functions and regexes print as values
        ('{"a" 1 :b 2}', '{"a" 1, :b 2}'),
        ('#{:a "a"}', '#{:a "a"}'),
        ('(java.time.LocalDate/parse "2024-01-02")', '"2024-01-02"'),
        ("(fn [x] x)", "#fn[x]"),
        ('(re-pattern "a+")', '#"a+"'),
        ("{:_private 1 :x 2}", "{:x 2}"),
        ("(range 30)", "[0 1 2 3 4 5 6 7 8 9 ...] (30 items, showing first 10)"),
    ],
)
def test_preview_text(program: str, expected: str) -> None:
    assert ptc.Session().run(program, lazy=True).preview() == expected


def test_preview_of_ten_million_elements_is_o_shown() -> None:
    """Without converting: a 10M-element vector previews its first elements only."""
    s = ptc.Session(limits={"max_memory": 1 << 30})
    r = s.run("(vec (range 10000000))", lazy=True)
    assert r.preview(3) == "[0 1 2 ...] (10000000 items, showing first 3)"
    assert r.lazy_value.is_converted is False


# ---- tool-call records ----


def test_tool_call_arguments_and_result_convert_on_first_access() -> None:
    s = ptc.Session(tools={"echo": lambda x: x})
    r = s.run('(tool/echo {:name "Ada" :tags #{:x}})')
    [c] = r.tool_calls
    assert c.args_text() == '{:name "Ada", :tags #{:x}}'
    # LANGUAGE §9.2: one entry shown (P=2 allows max(2/30, 1)); each value keeps 10 characters
    assert c.args_text(1, 2) == '{:name "Ada", ...}'
    lazy_args, lazy_result = c.lazy_args, c.lazy_result
    assert (lazy_args.is_converted, lazy_result.is_converted) == (False, False)
    assert c.args == [{"name": "Ada", "tags": {"x"}}]
    assert c.args is c.args  # converted once
    assert lazy_args.get() == [{"name": "Ada", "tags": {"x"}}]
    assert c.result == {"name": "Ada", "tags": {"x"}}


def test_a_failed_tool_call_has_no_result() -> None:
    def boom(x: Any) -> Any:
        raise ValueError("nope")

    r = ptc.Session(tools={"boom": boom}).run("(tool/boom 1)")
    [c] = r.tool_calls
    assert c.result is None and c.error is not None and "nope" in c.error


# ---- the agent turn keeps values in the core ----


class Replies:
    def __init__(self, *programs: str) -> None:
        self.programs = list(programs)

    def __call__(self, request: Any) -> str:
        return f"```clojure\n{self.programs.pop(0)}\n```"


def test_an_agent_turn_does_not_convert_a_value_nobody_reads() -> None:
    orders = [{"id": i, "total": i % 97} for i in range(20_000)]
    agent = ptc.SubAgent(
        "Summarize the orders.",
        llm=Replies("(filter #(> (:total %) 10) data/orders)", "(return 1)"),
        max_turns=3,
    )
    step = agent.run(data={"orders": orders})
    assert step.ok and step.value == 1
    first = step.turns[0]
    raw = first.__dict__["result"]
    assert type(raw) is _core.LazyValue and raw.is_converted is False
    assert first.result_text.startswith("[{:id 11, :total 11} {:id 12, :total 12}")
    # reading it converts it, once
    value = first.result
    assert len(value) == sum(1 for o in orders if o["total"] > 10)
    assert first.result is value
    assert dataclasses.replace(first).result == value


def test_a_turn_to_dict_encodes_a_value_python_cannot_hold_as_its_preview() -> None:
    agent = ptc.SubAgent("x", llm=Replies('{:a 1 "a" 2}', "(return 2)"), max_turns=3)
    step = agent.run()
    d = step.turns[0].to_dict()
    assert d["result"] == {"$repr": '{:a 1, "a" 2}'}
    assert Turn.from_dict(d).result == '{:a 1, "a" 2}'


# ---- the fixed cost per run: programs are cached by source ----


def test_a_cached_program_sees_the_current_definitions() -> None:
    """The same text run again skips reading and analysis, never the Session's state."""
    s = ptc.Session()
    first = s.run("(inc x)")
    assert first.error is not None and first.error.type == "undefined_variable"
    s.run("(def x 41)")
    assert s.run("(inc x)").value == 42
    s.run("(def x 1)")
    assert s.run("(inc x)").value == 2
    s.run("(defn x [] 5)")
    second = s.run("(inc x)")
    assert second.error is not None and second.error.type == "type_error"


def test_a_cached_program_is_rechecked_under_stricter_limits() -> None:
    s = ptc.Session()
    src = "[[[[1]]]]"
    assert s.run(src).value == [[[[1]]]]
    r = s.run(src, limits={"max_nesting": 2})
    assert r.error is not None and r.error.limit == "max_nesting"


def test_definitions_compare_and_hash_by_content() -> None:
    s = ptc.Session()
    s.run('(def a "doc" 1) (defn f [x] x)')
    first, again = s.definitions, s.definitions
    assert first == again and first[0] is not again[0]
    assert len({*first, *again}) == 2
    assert repr(first[0]) == "Definition(name='a', kind='value', type='integer', sample='1')"
