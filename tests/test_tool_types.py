"""Tools as people write them: Pydantic models, dataclasses, TypedDict, Enum, Literal,
Optional and dates as parameters and results; names and signatures for partials, bound
methods and callable objects; tool names checked when declared (issue 10)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
from typing import Any, Literal, TypedDict

import ptc
import pydantic
import pytest
from ptc.agent import Tool
from ptc.llm import ScriptedLLM
from ptc.tools.signature import signature_from_callable


class Status(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"


class Address(pydantic.BaseModel):
    city: str
    zip_code: str | None = None


class Customer(pydantic.BaseModel):
    name: str
    tier: Literal["gold", "silver"]
    address: Address
    since: dt.date


@dataclasses.dataclass
class Window:
    start: dt.date
    end: dt.date
    status: Status = Status.OPEN


class Filter(TypedDict, total=False):
    min_total: float
    tags: list[str]


def register(customer: Customer) -> dict[str, Any]:
    """Register a customer."""
    a = customer.address
    return {"name": customer.name, "city": a.city, "zip": a.zip_code, "year": customer.since.year}


def orders_in(window: Window, limit: int = 10) -> list[str]:
    return [f"{window.start.isoformat()}..{window.end.isoformat()} {window.status.value}"][:limit]


def latest_customer() -> Customer:
    return Customer(
        name="Ada", tier="gold", address=Address(city="Oslo"), since=dt.date(2020, 1, 2)
    )


def run(src: str, **tools: Any) -> ptc.Result:
    return ptc.Session(tools=tools).run(src)


def test_a_pydantic_model_parameter_is_validated_from_a_map() -> None:
    r = run(
        '(tool/register {:customer {:name "Ada" :tier "gold" :since "2020-01-02"'
        ' :address {:city "Oslo" :zip-code "0150"}}})',
        register=register,
    )
    assert r.error is None, r.error
    assert r.value == {"name": "Ada", "city": "Oslo", "zip": "0150", "year": 2020}


def test_a_model_that_does_not_validate_is_a_tool_error_naming_the_field() -> None:
    r = run(
        '(tool/register {:customer {:name "Ada" :tier "platinum" :since "2020-01-02"'
        ' :address {:city "Oslo"}}})',
        register=register,
    )
    assert r.error is not None and r.error.type == "tool_error"
    assert "customer.tier" in r.error.message
    assert "gold" in r.error.message  # pydantic's message lists what is allowed


def test_a_dataclass_parameter_with_dates_and_an_enum() -> None:
    r = run(
        '(tool/orders-in {:window {:start "2024-01-01" :end "2024-01-31" :status "closed"}})',
        **{"orders-in": orders_in},
    )
    assert r.error is None, r.error
    assert r.value == ["2024-01-01..2024-01-31 closed"]


@pytest.mark.parametrize(
    ("window", "message"),
    [
        (
            '{:start "2024-01-01" :end "soon"}',
            'window.end: expected an ISO date string ("2024-05-01"), got "soon"',
        ),
        ('{:start "2024-01-01"}', "window: expected a map with :end"),
        (
            '{:start "2024-01-01" :end "2024-01-02" :status "pending"}',
            'window.status: expected one of "open", "closed", got "pending"',
        ),
        ("[1 2]", "window: expected a map for Window, got [1, 2]"),
    ],
)
def test_arguments_that_do_not_fit_say_where_and_what(window: str, message: str) -> None:
    r = run(f"(tool/orders-in {{:window {window}}})", **{"orders-in": orders_in})
    assert r.error is not None and r.error.type == "tool_error"
    assert message in r.error.message


def test_results_become_data() -> None:
    # the fields keep the names the signature shows
    assert run("(:zip_code (:address (tool/latest)))", latest=latest_customer).value is None
    assert run("(:city (:address (tool/latest)))", latest=latest_customer).value == "Oslo"
    r = run("(tool/latest)", latest=latest_customer)
    assert r.value == {
        "name": "Ada",
        "tier": "gold",
        "address": {"city": "Oslo", "zip_code": None},
        "since": "2020-01-02",
    }
    r = run("(tool/w)", w=lambda: [Window(dt.date(2024, 1, 1), dt.date(2024, 2, 1))])
    assert r.value == [{"start": "2024-01-01", "end": "2024-02-01", "status": "open"}]


@dataclasses.dataclass
class Node:
    name: str
    child: Any = None


def test_a_list_or_dict_result_is_walked_by_the_core_and_made_data_only_when_it_must_be(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # plain data goes to the core as it is; a date deep in a list sends the whole result
    # through to_data once (its pre-walk, _needs, counted), then to the core again
    from ptc.tools import rich_types

    walks: list[object] = []
    needs = rich_types._needs
    monkeypatch.setattr(rich_types, "_needs", lambda v: walks.append(v) or needs(v))
    plain = [{"id": i, "tags": ["a", "b"], "total": i / 2} for i in range(3000)]
    r = run("(count (tool/rows))", rows=lambda: plain)
    assert r.value == 3000 and walks == []
    rich = [{"x": 1}, {"x": [{"on": dt.date(2024, 5, 6)}, dt.datetime(2024, 1, 1, 12, 0)]}]
    r = run("(tool/rows)", rows=lambda: rich)
    assert r.value == [{"x": 1}, {"x": [{"on": "2024-05-06"}, "2024-01-01T12:00:00"]}]
    assert walks == [rich]


def test_a_result_the_core_cannot_read_says_where_whether_or_not_python_made_it_data() -> None:
    r = run("(tool/rows)", rows=lambda: [{"x": 1}, {"x": object()}])
    assert r.error is not None and r.error.type == "tool_error"
    assert r.error.message == (
        "Tool 'rows' failed: returned a value that cannot be used: TypeError: result[1].x: "
        "object is not supported (use None, bool, int, float, str, list, tuple, dict, set)"
    )
    loop = Node("a")
    loop.child = loop
    r = run("(tool/rows)", rows=lambda: {"rows": [1, {"n": loop}]})
    assert r.error is not None and r.error.type == "tool_error"
    assert r.error.message == (
        "Tool 'rows' failed: ValueError: result.rows[1].n.child: this Node contains itself "
        "(a cycle); a tool's result must be a tree"
    )


def test_typeddict_and_optional_parameters() -> None:
    def search(query: str, filters: Filter | None = None) -> dict[str, Any]:
        return {"query": query, "filters": filters}

    r = run('(tool/search {:query "x" :filters {:min-total 10 :tags ["a"]}})', search=search)
    assert r.value == {"query": "x", "filters": {"min_total": 10, "tags": ["a"]}}
    assert run('(tool/search {:query "x"})', search=search).value == {
        "query": "x",
        "filters": None,
    }


def test_signatures_show_the_fields_of_models_and_dataclasses() -> None:
    assert str(signature_from_callable(register)) == (
        "(customer {name :string, tier :string, address {city :string, zip_code :string?},"
        " since :string}) -> :map"
    )
    assert str(signature_from_callable(orders_in)) == (
        "(window {start :string, end :string, status :string?}, limit :int?) -> [:string]"
    )

    def f(flt: Filter) -> Status:
        return Status.OPEN

    assert (
        str(signature_from_callable(f)) == "(flt {min_total :float?, tags [:string]?}) -> :string"
    )


def test_partials_bound_methods_and_callable_objects_are_named_and_typed() -> None:
    def lookup(table: str, key: int) -> str:
        """Look a key up."""
        return f"{table}:{key}"

    class SearchOrders:
        """Search the orders."""

        def __call__(self, query: str, limit: int = 5) -> list[str]:
            return [query] * min(limit, 2)

    class Repo:
        def count(self, kind: str) -> int:
            return len(kind)

    tools = [functools.partial(lookup, "users"), SearchOrders(), Repo().count]
    replies = [
        '```clojure\n(return [(tool/lookup 7) (tool/search-orders "x") (tool/count "abc")])\n```'
    ]
    agent = ptc.SubAgent(prompt="p", llm=ScriptedLLM(replies), tools=tools)
    step = agent.run()
    assert step.value == ["users:7", ["x", "x"], 3]
    specs = {t.name: t for t in step.context.tools}
    assert specs["lookup"].signature == "(key :int) -> :string"
    assert specs["search-orders"].signature == "(query :string, limit :int?) -> [:string]"
    assert specs["count"].signature == "(kind :string) -> :int"
    assert specs["search-orders"].description == "Search the orders."


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("search orders", "' ' cannot appear in a symbol"),
        ("1st", "it must start with a letter"),
        ("a/b", "'/' cannot appear"),
        ("", "cannot be empty"),
    ],
)
def test_a_name_the_language_cannot_call_is_refused_when_declared(name: str, why: str) -> None:
    with pytest.raises(ValueError, match="cannot") as exc:
        ptc.Session(tools={name: lambda: 1})
    assert why in str(exc.value)
    with pytest.raises(ValueError):
        ptc.SubAgent(prompt="p", tools={name: lambda: 1})
    with pytest.raises(ValueError):
        ptc.SubAgent(prompt="p", tools=[Tool(lambda: 1, name=name)])


def test_a_lambda_in_a_list_still_needs_a_name() -> None:
    with pytest.raises(TypeError, match="no usable name"):
        ptc.Session(tools=[lambda: 1])


def test_variadic_tools_render_and_convert() -> None:
    def total(*amounts: float) -> float:
        return sum(amounts)

    def days(*when: dt.date) -> list[int]:
        return [d.day for d in when]

    assert str(signature_from_callable(total)) == "(& amounts [:float]) -> :float"
    s = ptc.Session(tools={"total": total, "days": days})
    assert s.run("(tool/total 1 2 3.5)").value == 6.5
    assert s.run('(tool/days "2024-01-05" "2024-02-09")').value == [5, 9]


def test_a_kwargs_tool_takes_its_options_as_a_trailing_map() -> None:
    """`(a :any, opts :map?)`: called the way its signature reads, or with one map."""

    def tag(item: str, **opts: Any) -> dict[str, Any]:
        return {"item": item, **opts}

    assert str(signature_from_callable(tag)) == "(item :string, opts :map?) -> :map"
    s = ptc.Session(tools={"tag": tag})
    assert s.run('(tool/tag "x" {:color "red"})').value == {"item": "x", "color": "red"}
    assert s.run('(tool/tag "x")').value == {"item": "x"}
    assert s.run('(tool/tag {:item "x" :size 2})').value == {"item": "x", "size": 2}


def test_two_tools_with_one_name_are_refused() -> None:
    with pytest.raises(ValueError, match="two tools are named 'tool'"):
        ptc.SubAgent(prompt="p", tools=[lambda: 1, lambda: 2])

    def a() -> int:
        return 1

    b = functools.partial(a)
    with pytest.raises(ValueError, match="two tools are named 'a'"):
        ptc.Session(tools=[a, b])


def test_an_agent_tool_name_is_checked_too() -> None:
    child = ptc.SubAgent(prompt="child")
    with pytest.raises(ValueError, match="cannot be called"):
        ptc.SubAgent(prompt="p", tools={"bad name": child.as_tool("x")})
    with pytest.raises(ValueError, match="cannot be called"):
        ptc.SubAgent(prompt="p", tools=[child.as_tool("bad name")])
