"""Issue 31, part 2 (first increment): ``ptc.check`` / ``Session.check`` read a program without
running it and report every tool call site that cannot work, in source order."""

from __future__ import annotations

from typing import Any

import ptc
import pytest


def refund(order_id: int, reason: str = "") -> str:
    """Refund an order."""
    raise AssertionError("check never calls a tool")


def lookup(sku: str) -> dict[str, Any]:
    raise AssertionError("check never calls a tool")


SIG = "its signature: (order-id :int reason :string?)"


def errors(source: str, **kwargs: Any) -> list[tuple[str, str, str | None, int | None, int | None]]:
    c = ptc.check(source, tools=[refund, lookup], **kwargs)
    return [(e.type, e.message, e.hint, e.line, e.column) for e in c.errors]


def test_a_program_that_can_run_checks_ok_and_nothing_runs() -> None:
    c = ptc.check('(tool/refund 1) (tool/lookup {:sku "a"})', tools=[refund, lookup])
    assert c.ok and c.errors == () and c.warnings == ()
    assert [(s.tool, s.args, s.line, s.column) for s in c.calls] == [
        ("refund", (1,), 1, 1),
        ("lookup", ({"sku": "a"},), 1, 17),
    ]


def test_every_error_is_reported_in_source_order() -> None:
    source = (
        "(tool/refnd 1)\n"
        '(tool/refund {:order-id "x" :why 2})\n'
        '(tool/refund 1 "a" 3)\n'
        "(tool/lookup)\n"
    )
    assert errors(source) == [
        (
            "unknown_tool",
            "Unknown tool: refnd. Available tools: refund, lookup",
            "did you mean tool/refund?",
            1,
            1,
        ),
        ("type_error", 'tool/refund argument order-id: expected :int, got string "x"', SIG, 2, 1),
        (
            "arity_error",
            "tool/refund has no argument :why; its arguments: :order-id, :reason",
            SIG,
            2,
            1,
        ),
        ("arity_error", "tool/refund takes 1 to 2 arguments, got 3", SIG, 3, 1),
        (
            "arity_error",
            "tool/lookup takes 1 argument, got 0",
            "its signature: (sku :string)",
            4,
            1,
        ),
    ]


def test_a_missing_required_named_argument() -> None:
    assert errors('(tool/refund {:reason "late"})') == [
        ("arity_error", "tool/refund needs :order-id (:int)", SIG, 1, 1)
    ]


def test_arguments_computed_at_run_time_are_not_judged() -> None:
    c = ptc.check("(tool/refund {:order-id (inc 1)}) (tool/lookup (str 1))", tools=[refund, lookup])
    assert c.ok
    assert c.calls[0].args == ({"order-id": ptc.UNKNOWN},)
    assert c.calls[1].args == (ptc.UNKNOWN,)
    assert repr(ptc.UNKNOWN) == "ptc.UNKNOWN"


def test_calls_under_conditions_and_in_functions_are_marked() -> None:
    c = ptc.check(
        "(when (> 1 0) (tool/refund 1)) (defn f [x] (tool/refund x))"
        " (doseq [i [1]] (tool/refund i))",
        tools=[refund],
    )
    assert [(s.conditional, s.repeats) for s in c.calls] == [
        (True, False),
        (True, True),
        (True, True),
    ]


def test_a_tool_used_as_a_value_must_exist() -> None:
    assert errors("(map tool/lookp [1])") == [
        (
            "unknown_tool",
            "Unknown tool: lookp. Available tools: refund, lookup",
            "did you mean tool/lookup?",
            None,
            None,
        )
    ]


def test_a_parse_error_is_the_one_error() -> None:
    c = ptc.check("(tool/refund 1", tools=[refund])
    assert [type(e) for e in c.errors] == [ptc.ParseError]
    assert c.calls == ()


def test_data_names_not_in_the_input_are_warnings() -> None:
    c = ptc.check("(count data/ordrs) data/zz data/orders", data={"orders": []})
    assert c.ok
    assert c.warnings == (
        "data/ordrs is nil: there is no such input; did you mean data/orders?",
        "data/zz is nil: there is no such input; inputs: data/orders",
    )
    assert ptc.check("data/x").warnings == ()  # no data given: nothing to compare with


def test_session_check_sees_its_tools_and_data_and_changes_nothing() -> None:
    s = ptc.Session(data={"orders": [1]}, tools=[refund])
    c = s.check("(def x 1) (tool/refund data/order)")
    assert c.ok
    assert c.warnings == ("data/order is nil: there is no such input; did you mean data/orders?",)
    assert s.definitions == []


def test_feedback_joins_the_errors_as_the_llm_reads_them() -> None:
    c = ptc.check("(tool/nope) (tool/refund)", tools=[refund])
    assert c.feedback() == "\n\n".join(e.feedback() for e in c.errors)
    assert len(c.errors) == 2


def test_check_takes_text_only() -> None:
    with pytest.raises(TypeError) as caught:
        ptc.check(b"(+ 1 2)")  # type: ignore[arg-type]
    assert str(caught.value) == "check takes the program as a str, got bytes"
