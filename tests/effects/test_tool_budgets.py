"""Issue 31, part 1: tools declare their effects and budgets; a run's tool calls are capped
(``max_tool_calls`` for all tools, ``Tool(max_calls=...)`` for one), across parallel branches."""

from __future__ import annotations

import threading
from typing import Any

import ptc
import pytest
from ptc.llm.scripted import ScriptedLLM

HINT = (
    "make fewer calls: pass many items to one call where the tool takes them, or work on fewer"
    " items"
)


def counter() -> tuple[list[Any], Any]:
    made: list[Any] = []
    lock = threading.Lock()

    def note(x: Any = None) -> str:
        with lock:
            made.append(x)
        return "ok"

    return made, note


# ---- declaring -------------------------------------------------------------------------------


def test_a_tool_declares_effect_and_budget_with_read_defaults() -> None:
    def lookup(sku: str) -> str:
        return sku

    t = ptc.Tool(lookup)
    assert (t.effect, t.max_calls, t.approval, t.deferred, t.idempotent) == (
        "read",
        None,
        False,
        False,
        False,
    )
    assert t("x1") == "x1"  # a Tool is callable as its function is


def test_the_decorator_bare_and_with_fields() -> None:
    @ptc.tool
    def lookup(sku: str) -> str:
        return sku.upper()

    @ptc.tool(effect="write", max_calls=3, idempotent=True, description="Refund an order.")
    def refund(order_id: int) -> str:
        return f"refunded {order_id}"

    assert isinstance(lookup, ptc.Tool) and lookup.effect == "read" and lookup("a") == "A"
    assert isinstance(refund, ptc.Tool)
    assert (refund.effect, refund.max_calls, refund.idempotent) == ("write", 3, True)
    assert refund.description == "Refund an order."
    assert refund(7) == "refunded 7"
    r = ptc.Session(tools=[lookup, refund]).run('[(tool/lookup {:sku "b"}) (tool/refund 1)]')
    assert r.value == ["B", "refunded 1"]


def test_an_approval_on_a_read_tool_is_allowed() -> None:
    # some reads are sensitive (docs/EFFECTS.md)
    assert ptc.Tool(print, approval=True).approval is True


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"effect": "delete"}, ValueError, "Tool(effect=...) is 'read' or 'write', got 'delete'"),
        ({"effect": None}, ValueError, "Tool(effect=...) is 'read' or 'write', got None"),
        (
            {"max_calls": -1},
            ValueError,
            "Tool(max_calls=...) is a whole number of calls per run, 0 or more (None: no cap of"
            " its own), got -1",
        ),
        (
            {"max_calls": True},
            ValueError,
            "Tool(max_calls=...) is a whole number of calls per run, 0 or more (None: no cap of"
            " its own), got True",
        ),
        (
            {"max_calls": 2.0},
            ValueError,
            "Tool(max_calls=...) is a whole number of calls per run, 0 or more (None: no cap of"
            " its own), got 2.0",
        ),
        ({"approval": "yes"}, TypeError, "Tool(approval=...) is True or False, got 'yes'"),
        ({"deferred": 1}, TypeError, "Tool(deferred=...) is True or False, got 1"),
        ({"idempotent": None}, TypeError, "Tool(idempotent=...) is True or False, got None"),
    ],
)
def test_bad_declarations_are_refused_where_written(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        ptc.Tool(print, **kwargs)
    assert str(caught.value) == message
    with pytest.raises(error) as caught:
        ptc.tool(**kwargs)(print)
    assert str(caught.value) == message


def test_a_tool_needs_a_callable() -> None:
    with pytest.raises(TypeError) as caught:
        ptc.Tool("print")  # type: ignore[arg-type]
    assert str(caught.value) == "Tool(fn=...) takes a callable, got str"


# ---- a tool's own cap ------------------------------------------------------------------------


def test_a_tools_own_cap_ends_the_run_before_the_call_past_it() -> None:
    made, note = counter()
    refund = ptc.Tool(note, name="refund", effect="write", max_calls=2)
    r = ptc.Session(tools=[refund]).run("(doseq [i [1 2 3 4]] (tool/refund i)) :done")
    assert made == [1, 2]  # the third call was not made
    e = r.error
    assert isinstance(e, ptc.ToolLimitError) and isinstance(e, ptc.ToolError)
    assert isinstance(e, ptc.LimitError)
    assert (e.type, e.limit, e.message, e.hint) == (
        "tool_error",
        "max_calls",
        "tool call limit reached: tool/refund may be called 2 times per run (its max_calls),"
        " and 2 calls of it were made",
        HINT,
    )
    assert (e.line, e.column) == (1, 22)
    assert [c.args for c in r.tool_calls] == [[1], [2]]  # the calls made stay recorded


def test_a_cap_of_one_and_of_zero_say_so() -> None:
    _, note = counter()
    once = ptc.Session(tools=[ptc.Tool(note, name="send", max_calls=1)])
    assert once.run("(tool/send 1)").ok
    assert once.run("(tool/send 1) (tool/send 2)").error.message == (  # type: ignore[union-attr]
        "tool call limit reached: tool/send may be called once per run (its max_calls), and 1"
        " call of it was made"
    )
    never = ptc.Session(tools=[ptc.Tool(note, name="send", max_calls=0)])
    assert never.run("(tool/send 1)").error.message == (  # type: ignore[union-attr]
        "tool call limit reached: tool/send may not be called (its max_calls is 0)"
    )


def test_the_cap_is_per_run_and_other_tools_are_not_counted_against_it() -> None:
    made, note = counter()
    s = ptc.Session(tools={"capped": ptc.Tool(note, max_calls=2), "free": note})
    for _ in range(3):
        r = s.run("(tool/capped 1) (tool/free 0) (tool/free 0) (tool/free 0) (tool/capped 2)")
        assert r.ok, r.error
    assert len(made) == 15


def test_a_cap_holds_across_parallel_branches() -> None:
    made, note = counter()
    s = ptc.Session(tools=[ptc.Tool(note, name="hit", max_calls=5)])
    r = s.run("(pmap (fn [i] (tool/hit i)) (range 40))")
    assert isinstance(r.error, ptc.ToolLimitError) and r.error.limit == "max_calls"
    assert len(made) == 5 and len(r.tool_calls) == 5


# ---- all tools of a run ----------------------------------------------------------------------


def test_max_tool_calls_defaults_to_a_thousand() -> None:
    assert ptc.Limits().max_tool_calls == 1000
    made, note = counter()
    r = ptc.Session(tools={"f": note}).run("(mapv (fn [i] (tool/f i)) (range 1001))")
    assert len(made) == 1000
    e = r.error
    assert isinstance(e, ptc.ToolLimitError)
    assert (e.limit, e.message, e.hint) == (
        "max_tool_calls",
        "tool call limit reached: a run may make 1000 tool calls (max_tool_calls), 1000 were"
        " made; tool/f was not called",
        HINT,
    )
    assert ptc.Session(tools={"f": note}).run("(mapv (fn [i] (tool/f i)) (range 1000))").ok


def test_max_tool_calls_counts_every_tool_and_every_branch() -> None:
    made, note = counter()
    s = ptc.Session(tools={"a": note, "b": note}, limits={"max_tool_calls": 7})
    r = s.run("(pcalls (fn [] (mapv tool/a (range 5))) (fn [] (mapv tool/b (range 5))))")
    assert isinstance(r.error, ptc.ToolLimitError) and r.error.limit == "max_tool_calls"
    assert len(made) == 7
    r = s.run("(tool/a 1) (tool/b 2)", limits={"max_tool_calls": 1})
    assert r.error is not None and r.error.message == (
        "tool call limit reached: a run may make 1 tool calls (max_tool_calls), 1 were made;"
        " tool/b was not called"
    )


def test_a_nested_runs_calls_count_on_their_own() -> None:
    inner_made, inner_note = counter()
    inner = ptc.Session(tools={"leaf": inner_note}, limits={"max_tool_calls": 5})

    def outer_tool() -> int:
        return len(inner.run("(mapv tool/leaf (range 4))").value)

    r = ptc.Session(tools={"outer": outer_tool}, limits={"max_tool_calls": 2}).run(
        "[(tool/outer) (tool/outer)]"
    )
    assert r.value == [4, 4] and len(inner_made) == 8


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (-1, "limit max_tool_calls must be a non-negative integer, got -1"),
        ("many", "limit max_tool_calls must be a non-negative integer, got 'many'"),
    ],
)
def test_a_bad_max_tool_calls_is_refused(value: Any, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        ptc.Session(limits={"max_tool_calls": value})
    assert str(caught.value) == message


# ---- agents ----------------------------------------------------------------------------------


def test_an_agents_turn_ends_at_a_tools_cap_and_the_model_is_told() -> None:
    made, note = counter()
    send = ptc.Tool(note, name="send", effect="write", max_calls=1)
    llm = ScriptedLLM(
        [
            '```clojure\n(tool/send "a")\n(tool/send "b")\n```',
            "```clojure\n(return :done)\n```",
        ]
    )
    step = ptc.SubAgent("Send", llm=llm, tools=[send], max_turns=2).run()
    assert made == ["a"]
    first = step.turns[0]
    assert first.error is not None
    assert (first.error.type, first.error.message) == (
        "tool_error",
        "tool call limit reached: tool/send may be called once per run (its max_calls), and 1"
        " call of it was made",
    )
    assert step.ok and step.value == "done"


# ---- every call made stays on the Result -----------------------------------------------------


def test_a_comparator_that_contradicts_itself_is_the_programs_error_and_keeps_its_calls(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The standard sort stops on contradictory answers (a before b and b before a): that is
    an execution_error of the program, not an internal error, nothing is printed on stderr,
    and the tool calls the comparator made stay recorded."""
    made: list[int] = []

    def flag(x: int) -> bool:
        made.append(x)
        return x % 3 == 0

    s = ptc.Session(tools=[flag])
    r = s.run("(sort (fn [a b] (tool/flag (+ a b))) [3 3 0 1 2 2 2 3 0 2 1 2 1 3 3 2 1 0 0 3 1])")
    assert r.error is not None and r.error.type == "execution_error", r.error
    assert r.error.message.startswith("sort: the comparator's answers contradict each other")
    assert len(r.tool_calls) == len(made) > 20
    assert capfd.readouterr().err == ""


def test_calls_of_branches_that_raced_a_failing_branch_are_recorded() -> None:
    """pmap branches run in parallel: when one fails, the calls the others made are still
    recorded (a tool that ran is never left out of the run's calls)."""
    for _ in range(20):
        made, note = counter()
        s = ptc.Session(tools=[ptc.Tool(note, name="hit", max_calls=5)])
        r = s.run("(pmap (fn [i] (tool/hit i)) (range 40))")
        assert isinstance(r.error, ptc.ToolLimitError)
        assert sorted(c.args[0] for c in r.tool_calls) == sorted(made)


def test_an_agent_offered_as_a_tool_declares_its_effect_and_cap() -> None:
    child = ptc.SubAgent(
        "Say hi", llm=ScriptedLLM(['```clojure\n(return "hi")\n```'] * 3), max_turns=1
    )
    notify = child.as_tool("notify", "Notify someone.", effect="write", max_calls=1)
    assert (notify.effect, notify.max_calls, notify.approval) == ("write", 1, False)
    with pytest.raises(ValueError, match=r"as_tool\(effect=\.\.\.\) is 'read' or 'write'"):
        child.as_tool("notify", effect="send")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"as_tool\(max_calls=\.\.\.\) is a whole number"):
        child.as_tool("notify", max_calls=-1)

    plan = ptc.check("(tool/notify) (tool/notify)", tools=[notify]).plan
    assert plan is not None and plan.writes == ("notify",) and plan.bound("notify") == 2

    parent = ptc.SubAgent(
        "Notify twice",
        llm=ScriptedLLM(
            ["```clojure\n(tool/notify)\n(tool/notify)\n```", "```clojure\n(return 1)\n```"]
        ),
        tools=[notify],
        max_turns=2,
    )
    first = parent.run().turns[0]
    assert first.error is not None and first.error.type == "tool_error"
    assert "tool/notify may be called once per run (its max_calls)" in first.error.message


def test_calls_made_before_a_limit_met_deep_in_the_native_stack_are_recorded() -> None:
    """A limit met while the native stack grows ends the run by unwinding the interpreter:
    the calls it had made are still the Result's (they were lost)."""
    made, note = counter()
    s = ptc.Session(tools=[ptc.Tool(note, name="f")])
    r = s.run(
        "(tool/f 1) (defn g [n] (inc (g (inc n)))) (g 0)",
        limits={"max_memory": 3_000_000, "max_depth": 100_000},
    )
    assert r.error is not None and r.error.type == "memory_exceeded", r.error
    assert made == [1] and [c.args for c in r.tool_calls] == [[1]]
