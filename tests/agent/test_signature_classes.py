"""`SubAgent(signature=...)` takes a Pydantic model, a dataclass or a TypedDict as well as a
signature string (issue 30, item 8: a model class raised `AttributeError: replace`). The
class's fields are the return type, and a returned value is checked against that type and then
by the class itself (its validators, ranges, __post_init__): a value it refuses is a
validation error the model sees and fixes, as with a string signature."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from typing import Any, TypedDict

import ptc
import pytest
from ptc.llm import ScriptedLLM
from pydantic import BaseModel, Field


class Order(BaseModel):
    id: int
    total: float = Field(gt=0)


@dataclasses.dataclass
class Refund:
    order: int
    reason: str = "late"

    def __post_init__(self) -> None:
        if self.order < 0:
            raise ValueError("order ids are not negative")


class Row(TypedDict):
    name: str
    qty: int


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


def run(signature: Any, *programs: str) -> ptc.Step:
    llm = ScriptedLLM([clj(p) for p in programs])
    step = ptc.SubAgent("p", llm=llm, signature=signature).run()
    assert llm.remaining == 0
    return step


def errors(step: ptc.Step) -> list[str | None]:
    return [t.error.message if t.error else None for t in step.turns]


def refused(shape: str, problem: str) -> str:
    return (
        f"Returned value does not match the signature {shape}: {problem}. "
        "Fix the value and return again."
    )


def test_a_pydantic_model_is_the_return_type_and_validates_the_value() -> None:
    step = run(
        Order,
        "(return {:id 1 :total -5.0})",  # the model's own check: gt=0
        '(return "x")',  # not a map at all
        '(return {:id "1" :total 5.0})',  # the shape is checked strictly, as it is shown
        "(return {:id 1 :total 5.0})",
    )
    shape = "Order {id :int, total :float}"
    assert errors(step) == [
        refused(shape, "value.total: Input should be greater than 0"),
        refused(shape, "value: expected {id :int, total :float}, got str"),
        refused(shape, "id: expected :int, got str"),
        None,
    ]
    assert (step.ok, step.value) == (True, {"id": 1, "total": 5.0})
    assert Order.model_validate(step.value) == Order(id=1, total=5.0)
    assert step.context.signature == "{id :int, total :float}"


def test_a_dataclass_is_the_return_type_and_its_post_init_validates() -> None:
    step = run(Refund, "(return {:order -1})", "(return {:order 2})")
    assert errors(step) == [
        refused(
            "Refund {order :int, reason :string?}",
            "value: Refund refused it: ValueError: order ids are not negative",
        ),
        None,
    ]
    assert (step.ok, step.value) == (True, {"order": 2})
    assert step.context.signature == "{order :int, reason :string?}"


def test_a_typeddict_is_the_return_type() -> None:
    step = run(
        Row, '(return {:name "a"})', '(return {:name "a" :qty "3"})', '(return {:name "a" :qty 3})'
    )
    shape = "Row {name :string, qty :int}"
    assert errors(step) == [
        refused(shape, "qty: missing key :qty"),
        refused(shape, "qty: expected :int, got str"),
        None,
    ]
    assert (step.ok, step.value) == (True, {"name": "a", "qty": 3})


def test_a_class_signature_is_the_return_type_of_the_agent_as_a_tool() -> None:
    child = ptc.SubAgent("Find the order for {{customer}}", signature=Order)
    spec = child.as_tool("find-order", "Find an order").spec()
    assert spec.signature == "(customer :string) -> {id :int, total :float}"
    assert spec.params == ("customer",)


FORMS = (
    "a signature string such as '{name :string, total :float}' or '(topic :string) ->"
    " :string', a Pydantic model class, a dataclass or a TypedDict"
)


@pytest.mark.parametrize(
    ("signature", "message"),
    [
        (
            Refund(1),
            "signature takes the class, not an instance of it: pass Refund, got"
            f" Refund(order=1, reason='late'); signature is {FORMS}",
        ),
        (
            Order(id=1, total=2.0),
            "signature takes the class, not an instance of it: pass Order, got"
            f" Order(id=1, total=2.0); signature is {FORMS}",
        ),
        (5, f"signature must be {FORMS}, got int 5"),
        (dict, f"signature must be {FORMS}, got type <class 'dict'>"),
        (list[int], f"signature must be {FORMS}, got GenericAlias list[int]"),
    ],
    ids=["dataclass-instance", "model-instance", "int", "dict", "list-of-int"],
)
def test_what_is_not_a_signature_is_a_type_error_in_the_constructor(
    signature: Any, message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        ptc.SubAgent("p", signature=signature)
    assert str(caught.value) == message


@pytest.mark.parametrize("text", ["", "   "])
def test_an_empty_signature_string_is_refused(text: str) -> None:
    with pytest.raises(ValueError) as caught:
        ptc.SubAgent("p", signature=text)
    assert str(caught.value) == (
        "signature is empty: pass a type such as '{name :string}' or"
        " '(topic :string) -> :string', or leave it out"
    )


def test_a_string_signature_that_does_not_parse_is_refused_as_before() -> None:
    with pytest.raises(ValueError) as caught:
        ptc.SubAgent("p", signature=":integerish")
    assert str(caught.value) == "unknown type :integerish in signature ':integerish'"


def test_a_dataclass_signature_imports_no_pydantic() -> None:
    code = (
        "import sys, dataclasses; before = set(sys.modules); import ptc\n"
        "from ptc.llm import ScriptedLLM\n"
        "@dataclasses.dataclass\n"
        "class R:\n"
        "    a: int\n"
        "step = ptc.SubAgent('p', llm=ScriptedLLM(['(return {:a 1})']), signature=R).run()\n"
        "print(step.ok, step.value, 'pydantic' in sys.modules and 'pydantic' not in before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "True {Keyword('a'): 1} False\n"
