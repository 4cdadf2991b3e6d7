"""Issue 31, part 3: the plan's API — what ``Check.plan`` and ``Session.plan`` hold, how a person
reads it, and the routes through a session's earlier turns. The soundness property and the
precision table are in test_plan_soundness.py and test_plan_precision.py."""

from __future__ import annotations

from typing import Any

import ptc
import pytest
from ptc import UNKNOWN, Keyword


def get_order(id: int) -> dict[str, Any]:
    """An order."""
    return {"id": id, "late": id == 2}


@ptc.tool(effect="write")
def refund_order(order_id: int, reason: str) -> str:
    """Refund an order."""
    return "refunded"


TOOLS = [get_order, refund_order]

GUIDE = """
(doseq [id [1 2 3]]
  (let [o (tool/get-order id)]
    (when (:late o) (tool/refund-order {:order-id id :reason "late"}))))
(tool/get-order 9)
"""


def plan_of(source: str, **kw: Any) -> ptc.Plan:
    found = ptc.check(source, tools=TOOLS, **kw)
    assert found.ok, found.feedback()
    assert found.plan is not None
    return found.plan


def test_render_is_one_line_per_place_a_tool_can_be_called_from() -> None:
    assert plan_of(GUIDE).render().splitlines() == [
        "May call 2 tools: `get-order`, `refund-order`; writes: `refund-order`.",
        "- `get-order` up to 3 times, unconditionally, at line 3, column 11, with ?",
        "- `refund-order` (write) up to 3 times, if reached, at line 4, column 21,"
        ' with {:order-id ?, :reason "late"}',
        "- `get-order` once, unconditionally, at line 5, column 1, with 9",
    ]
    assert plan_of("(+ 1 2)").render() == "Calls no tools."
    assert plan_of("(map tool/get-order [1 2])").render().splitlines()[1] == (
        "- `get-order` up to 2 times, unconditionally, at line 1, column 6,"
        " with arguments known only when it runs"
    )


def test_the_plan_fields() -> None:
    plan = plan_of(GUIDE)
    assert plan.tools == ("get-order", "refund-order")
    assert plan.writes == ("refund-order",)
    assert plan.any_tool is False
    assert [(c.tool, c.line, c.column, c.bound, c.conditional, c.repeats) for c in plan.calls] == [
        ("get-order", 3, 11, 3, False, True),
        ("refund-order", 4, 21, 3, True, True),
        ("get-order", 5, 1, 1, False, False),
    ]
    assert plan.calls[0].args == (UNKNOWN,)
    assert plan.calls[1].args == ({Keyword("order-id"): UNKNOWN, Keyword("reason"): "late"},)
    assert plan.calls[2].args == (9,)
    assert plan.calls[0].via is None
    assert plan.bound("get-order") == 4
    assert plan.bound("refund-order") == 3
    assert plan.bound("send-email") == 0  # not in the plan
    assert plan_of("(loop [i 0] (tool/get-order i) (recur (inc i)))").bound("get-order") is None


def test_a_program_that_cannot_be_read_has_no_plan() -> None:
    found = ptc.check("(tool/get-order 1", tools=TOOLS)
    assert found.plan is None and not found.ok
    s = ptc.Session(tools=TOOLS)
    with pytest.raises(ptc.ParseError, match="unbalanced brackets"):
        s.plan("(tool/get-order 1")


def test_a_plan_of_a_program_with_check_errors_is_still_given() -> None:
    """The errors stop a run; the plan still says what it would call (a host may show both)."""
    found = ptc.check("(tool/get-order 1 2) (tool/nope)", tools=TOOLS)
    assert not found.ok
    assert found.plan is not None
    assert found.plan.tools == ("get-order", "nope")


def test_data_lengths_bound_loops_when_the_checker_has_the_data() -> None:
    source = "(map (fn [o] (tool/get-order (:id o))) data/orders)"
    assert plan_of(source).calls[0].bound is None
    with_data = plan_of(source, data={"orders": [{"id": 1}, {"id": 2}]})
    assert with_data.calls[0].bound == 2
    assert plan_of(source, data={}).calls == ()  # data/orders is nil: nothing is called


def test_session_plan_follows_earlier_turns_definitions_and_results() -> None:
    calls: list[Any] = []

    def fetch_row(id: int) -> int:
        calls.append(id)
        return id

    s = ptc.Session(tools=[fetch_row, refund_order], data={"ids": [1, 2, 3]})
    s.run("(defn fetch [id] (tool/fetch-row id)) (def pay tool/refund-order)")
    s.run('(fn [] (tool/refund-order {:order-id 7 :reason "x"}))')
    calls.clear()

    plan = s.plan("(map fetch data/ids)")
    assert [(c.tool, c.via, c.bound, c.args) for c in plan.calls] == [
        ("fetch-row", "fetch", 3, (UNKNOWN,))
    ]
    assert (plan.calls[0].line, plan.calls[0].column) == (1, 18)  # in the earlier program

    plan = s.plan("(*1)")
    assert [(c.tool, c.via, c.bound) for c in plan.calls] == [("refund-order", "*1", 1)]
    assert plan.calls[0].args == ({Keyword("order-id"): 7, Keyword("reason"): "x"},)
    assert plan.writes == ("refund-order",)
    assert "in *1 (an earlier turn's result)" in plan.render()

    plan = s.plan("(pay 1 2)")
    assert [(c.tool, c.via, c.args) for c in plan.calls] == [("refund-order", "pay", UNKNOWN)]
    assert (plan.calls[0].line, plan.calls[0].column) == (0, 0)  # a value with no written place

    # planning ran nothing and defined nothing
    assert calls == []
    assert s.plan("(defn late [] (tool/fetch-row 1))").calls == ()
    assert "late" not in s.definitions


def test_a_definition_made_again_in_this_program_is_followed_statement_by_statement() -> None:
    """A name defined only by top-level statements means, in each statement, the last def
    before it (or what it meant before the run); read inside a function, any of them."""
    s = ptc.Session(tools=[get_order, refund_order])
    s.run("(defn act [x] (tool/get-order x))")
    plan = s.plan('(act 1) (defn act [x] (tool/refund-order x "again")) (act 2) (act 3)')
    assert sorted((c.tool, c.bound, c.via) for c in plan.calls) == [
        ("get-order", 1, "act"),
        ("refund-order", 2, None),
    ]
    plan = s.plan('(defn go [] (act 1)) (go) (defn act [x] (tool/refund-order x "y")) (go)')
    assert sorted((c.tool, c.bound, c.via) for c in plan.calls) == [
        ("get-order", 2, "act"),
        ("refund-order", 2, None),
    ]


def test_long_chains_and_deep_programs_do_not_exhaust_the_stack() -> None:
    chain = "\n".join(f"(defn f{i} [x] (f{i + 1} x))" for i in range(3000))
    source = chain + "\n(defn f3000 [x] (tool/get-order x))\n(f0 1)"
    plan = plan_of(source)
    assert [(c.tool, c.bound) for c in plan.calls] == [("get-order", 1)]
    deep = "(do " * 400 + "(tool/get-order 1)" + ")" * 400
    assert plan_of(deep).calls[0].bound == 1
    recursive = (
        "(defn a [n] (when (pos? n) (b (dec n)))) (defn b [n] (tool/get-order n) (a n)) (a 3)"
    )
    assert [(c.tool, c.bound) for c in plan_of(recursive).calls] == [("get-order", None)]


def test_planning_is_bounded_by_the_limits_given() -> None:
    source = "(do " * 6 + "(tool/get-order 1)" + ")" * 6
    found = ptc.check(source, tools=TOOLS, limits=ptc.Limits(max_nesting=3))
    assert not found.ok and found.plan is None
    assert found.errors[0].type == "parse_error"


def test_arguments_computed_from_literals_are_worked_out() -> None:
    """A pure builtin's call on known values is worked out (in a throwaway run with small
    limits); a call that fails, or whose value is not plain data, stays UNKNOWN."""

    def args(source: str) -> Any:
        return plan_of(source).calls[0].args

    assert args('(tool/get-order (str "order-" 7))') == ("order-7",)
    assert args('(let [base "x"] (tool/get-order (str base "-" (+ 1 2))))') == ("x-3",)
    assert args("(def w 3) (tool/get-order {:id (* w 2)})") == ({Keyword("id"): 6},)
    assert args('(tool/refund-order (first (range 4 9)) (subs "late!" 0 4))') == (4, "late")
    assert args("(tool/get-order (/ 1 0))") == (UNKNOWN,)  # ##Inf is not plain data
    assert args("(tool/get-order (range 100000000))") == (UNKNOWN,)  # past the small limits
    assert args("(tool/get-order (inc data/n))") == (UNKNOWN,)
