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


def test_every_form_with_an_analysis_error_is_reported_and_the_others_are_checked() -> None:
    """A parse error stops the reading (what follows cannot be read reliably); an analysis
    error is one form's: each top-level form is analyzed on its own, so every such error comes
    at once, with the tool errors of the forms that can be read, in source order."""
    source = "(let [x] 1)\n(tool/refnd 1)\n(if)\n(tool/refund 5)"
    found = ptc.check(source, tools=[refund])
    assert [(e.type, e.line, e.column) for e in found.errors] == [
        ("analysis_error", 1, 1),
        ("unknown_tool", 2, 1),
        ("analysis_error", 3, 1),
    ]
    assert found.errors[0].message == (
        "let bindings need an even number of forms (name value pairs), got 1"
    )
    assert found.errors[2].message == (
        "if takes a test, a then branch and an optional else branch; got 0 form(s)"
    )
    assert [(c.tool, c.line) for c in found.calls] == [("refnd", 2), ("refund", 4)]
    assert found.plan is None  # a plan of part of a program would leave calls out


def test_a_map_literal_against_declared_fields_unknown_and_missing_keys() -> None:
    def place(order: dict[str, Any]) -> str:
        raise AssertionError("check never calls a tool")

    tool = ptc.Tool(place, signature="(order {id :int, note :string?}) -> :string")
    found = ptc.check('(tool/place {:id 1 :nte "x"}) (tool/place {:note "y"})', tools=[tool])
    sig = "its signature: (order {id :int, note :string?})"
    assert [(e.type, e.message, e.hint, e.column) for e in found.errors] == [
        ("type_error", "tool/place argument order: unknown key :nte; its keys: :id, :note", sig, 1),
        ("type_error", "tool/place argument order.id: missing key :id", sig, 31),
    ]
    assert ptc.check("(tool/place {:id 2})", tools=[tool]).ok


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


def test_tools_that_take_any_arguments_are_only_checked_to_exist() -> None:
    def rest(*items: int) -> int:
        return len(items)

    def options(query: str, **more: Any) -> str:
        return query

    def named_only(*, q: str) -> str:
        return q

    c = ptc.check(
        '(tool/rest 1 2 3 "x") (tool/options {:query "a" :k 1}) (tool/named-only {:q 1})'
        " (tool/print 1 2 3)",
        tools={"rest": rest, "options": options, "named-only": named_only, "print": print},
    )
    assert c.ok, [e.message for e in c.errors]


def test_an_explicit_signature_is_the_one_judged() -> None:
    tool = ptc.Tool(lambda *a: a, name="find", signature="(query :string limit :int?) -> :any")
    c = ptc.check('(tool/find "a" "b")', tools=[tool])
    assert [e.message for e in c.errors] == [
        'tool/find argument limit: expected :int?, got string "b"'
    ]


def test_an_agent_runs_no_part_of_a_program_that_fails_its_check() -> None:
    from ptc.llm.scripted import ScriptedLLM

    sent: list[str] = []

    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        return "sent"

    llm = ScriptedLLM(
        [
            '```clojure\n(tool/send "ops")\n(def n 1)\n(tool/sned "x")\n(tool/send 5)\n```',
            '```clojure\n(return (tool/send "ops"))\n```',
        ]
    )
    step = ptc.SubAgent("Send it", llm=llm, tools=[send], max_turns=2).run()
    first = step.turns[0]
    assert sent == ["ops"]  # only the second turn's call: the first program never ran
    assert first.tool_calls == () and first.defined == ()
    assert first.error is not None
    assert (first.error.type, first.error.line, first.error.column) == ("unknown_tool", 3, 1)
    assert first.error.message == (
        "Unknown tool: sned. Available tools: send\n"
        "Also at line 4, column 1: tool/send argument to: expected :string, got integer 5"
        " (hint: its signature: (to :string))"
    )
    assert first.error.hint == "did you mean tool/send?"
    assert step.ok and step.value == "sent"


def test_an_agents_program_that_checks_ok_runs_as_before() -> None:
    from ptc.llm.scripted import ScriptedLLM

    def lookup(sku: str) -> int:
        return 3

    llm = ScriptedLLM(['```clojure\n(return (tool/lookup "a"))\n```'])
    step = ptc.SubAgent("Count", llm=llm, tools=[lookup]).run()
    assert step.ok and step.value == 3


def test_session_run_with_check_runs_nothing_of_a_program_with_errors() -> None:
    made: list[int] = []

    def lookup(sku: str) -> int:
        made.append(1)
        return 1

    s = ptc.Session(tools=[lookup])
    r = s.run('(def x 1) (tool/lookup "a") (tool/lookp "b")', check=True)
    assert made == [] and s.definitions == [] and r.tool_calls == []
    assert not r.ok and isinstance(r.error, ptc.UnknownTool)
    assert (r.error.message, r.error.hint, r.error.line, r.error.column) == (
        "Unknown tool: lookp. Available tools: lookup",
        "did you mean tool/lookup?",
        1,
        29,
    )
    # unchanged without check=True: the run goes until the unknown tool
    r = s.run('(def x 1) (tool/lookup "a") (tool/lookp "b")')
    assert made == [1] and isinstance(r.error, ptc.UnknownTool)
    # a program that checks clean runs as usual
    assert s.run('(tool/lookup "a")', check=True).value == 1


ORDERS = {"orders": [{"id": 1, "total": 5.0, "status": "paid"}, {"id": 2, "total": 7.5}]}


def test_a_key_no_record_has_but_one_is_near_is_a_warning() -> None:
    source = "(->> data/orders (map :totl) (filter #(= (get % :staus) 1)))"
    expected = (
        ":totl (line 1, column 18) is a key no record of data/orders has; did you mean :total?"
        " Its records' keys: :id, :total, :status",
        ":staus (line 1, column 42) is a key no record of data/orders has; did you mean"
        " :status? Its records' keys: :id, :total, :status",
    )
    assert ptc.check(source, data=ORDERS).warnings == expected
    assert ptc.Session(data=ORDERS).check(source).warnings == expected


def test_keys_the_records_have_or_far_from_them_are_not_warned() -> None:
    source = "(map (fn [o] [(:total o) (:id o) (:shipping-address o)]) data/orders)"
    assert ptc.check(source, data=ORDERS).warnings == ()
    assert ptc.Session(data=ORDERS).check(source).warnings == ()
    assert ptc.check("(:totl {:totl 1})").warnings == ()  # no data: nothing to compare with
    # a key written, or a keyword used as a value, is not a read
    assert ptc.check("(map #(assoc % :totals 1) data/orders)", data=ORDERS).warnings == ()
    assert ptc.check("(= (:status (first data/orders)) :paid) (str :stats)", data=ORDERS).ok
