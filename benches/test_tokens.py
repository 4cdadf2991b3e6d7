"""Issue 33 §5: what the LLM is sent, in exact o200k tokens, for the bundled demo and a
large-data scenario: every request with and without compression, with and without the token
budgets (``result_tokens``, ``output_tokens``), next to a one-tool-call-per-round-trip agent
that gets the same tool results as JSON tool messages.

Run: python -m pytest benches/test_tokens.py -s -p no:randomly   (prints the table)

Method and limits: the replies are scripted (``ptc.demo.RECORDED`` and the scenario below), so
this measures what ptc sends for those replies, not what a model would write; a request's count
is the sum of its messages' contents (the few tokens a provider adds per message for roles are
left out on both sides). The baseline agent has no sandbox: it reads the orders through a
``get_orders`` tool whose JSON result stays in its history, calls ``restock`` the same way,
and answers; its system prompt is one sentence and its tool schemas are counted as JSON.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ptc
from ptc import _core
from ptc.demo import MISSION, RECORDED, orders, restock
from ptc.llm import ScriptedLLM
from ptc.prompts import system_prompt as default_system_prompt

ENC = "o200k_base"
BUDGETS = {"result_tokens": 300, "output_tokens": 300}


def tokens(text: str) -> int:
    return _core.count_tokens(text, ENC)


def request_tokens(step: ptc.Step) -> list[int]:
    return [sum(tokens(m["content"]) for m in request) for request in step.messages]


def _clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


#: A model that looks at large values before it aggregates: the budgets matter here.
LARGE = [
    _clj("(take 200 data/orders)"),
    _clj("(doseq [o (take 60 data/orders)] (println (:id o) (:region o) (:items o)))"),
    _clj(
        '(def revenue (->> data/orders (filter #(= (:status %) "shipped"))'
        " (group-by :region) (map (fn [[r os]] [r (reduce + (map :total os))])) (into {})))\n"
        "(def top (first (first (sort-by second > revenue))))\n"
        '(def confirmation (tool/restock "kettle" top 50))\n'
        "[top (get revenue top)]"
    ),
    _clj("(return {:region top :revenue (get revenue top) :restock confirmation})"),
]


def run(replies: list[str], n_orders: int, compression: bool, budgets: bool) -> ptc.Step:
    agent = ptc.SubAgent(
        MISSION,
        llm=ScriptedLLM(list(replies)),
        tools=[restock],
        data={"orders": orders(n_orders)},
        compression=compression,
        max_turns=8,
        **(BUDGETS if budgets else {}),
    )
    step = agent.run()
    assert step.ok, step.error
    return step


def round_trips(schemas: list[dict[str, Any]], opening: str, calls: list[Any]) -> list[int]:
    """Requests of an agent making one JSON tool call per round trip: a one-sentence system
    prompt, the tools' schemas and ``opening`` (the mission, and any data as JSON), then per
    call ``(name, arguments, result)`` the call and its result as JSON; the last request gets
    the answer."""
    system = "You are a helpful assistant. Use the tools to answer."
    history = [system, json.dumps(schemas), opening]
    out = []
    for name, args, result in calls:
        out.append(sum(map(tokens, history)))
        history.append(json.dumps({"name": name, "arguments": json.dumps(args)}))
        history.append(json.dumps(result))
    out.append(sum(map(tokens, history)))  # the request that gets the answer
    return out


def baseline(n_orders: int, restock_args: dict[str, Any]) -> list[int]:
    """The demo's task done one JSON tool call per round trip."""
    schemas = [
        {"name": "get_orders", "description": "All orders.", "parameters": {"type": "object"}},
        {
            "name": "restock",
            "description": (restock.__doc__ or "").strip(),
            "parameters": {
                "type": "object",
                "properties": {
                    "product": {"type": "string"},
                    "region": {"type": "string"},
                    "qty": {"type": "integer"},
                },
            },
        },
    ]
    calls = [
        ("get_orders", {}, orders(n_orders)),
        ("restock", restock_args, restock(**restock_args)),
    ]
    return round_trips(schemas, MISSION, calls)


def table(name: str, make: Callable[[bool, bool], ptc.Step], base: list[int]) -> dict[str, int]:
    totals = {}
    print(f"\n{name}: input tokens per request (o200k_base)")
    for compression in (True, False):
        for budgets in (False, True):
            series = request_tokens(make(compression, budgets))
            label = f"{'compressed' if compression else 'full history'}, " + (
                "budgets 300/300" if budgets else "no budgets"
            )
            totals[label] = sum(series)
            print(f"  {label:<34} {sum(series):>8,}  {series}")
    print(f"  {'one tool call per round trip (JSON)':<34} {sum(base):>8,}  {base}")
    totals["baseline"] = sum(base)
    return totals


def test_demo_requests() -> None:
    def make(compression: bool, budgets: bool) -> ptc.Step:
        return run(RECORDED, 240, compression, budgets)

    step = make(True, False)
    args = step.turns[-2].tool_calls[0].args
    totals = table(
        "demo (240 orders)",
        make,
        baseline(240, dict(zip(["product", "region", "qty"], args, strict=True))),
    )
    # its values are small: with the budgets its requests grow only by the system prompt's
    # line on the markers (in each of its six requests), not by what the values show
    line = tokens(default_system_prompt(True)) - tokens(default_system_prompt())
    print(f"  (the budgets' line in the system prompt: {line} tokens a request)")
    assert totals["compressed, budgets 300/300"] <= totals["compressed, no budgets"] + 6 * line
    assert totals["compressed, no budgets"] < totals["baseline"]


def test_large_values_requests() -> None:
    def make(compression: bool, budgets: bool) -> ptc.Step:
        return run(LARGE, 5_000, compression, budgets)

    step = make(True, False)
    args = step.turns[-2].tool_calls[0].args
    totals = table(
        "large values (5,000 orders)",
        make,
        baseline(5_000, dict(zip(["product", "region", "qty"], args, strict=True))),
    )
    assert totals["compressed, budgets 300/300"] < totals["compressed, no budgets"]
    assert totals["compressed, budgets 300/300"] < totals["baseline"]


def test_the_system_prompt_stays_small() -> None:
    n, elided = tokens(default_system_prompt()), tokens(default_system_prompt(True))
    print(f"\nsystem prompt: {n} tokens ({elided} with the budgets' line on markers)")
    assert n <= 900 and elided <= 900


def test_scenario_suite_requests() -> None:
    """The scenario suite's seed example (tests/agent/test_scenarios.py): products as data,
    a reviews tool and an inventory tool; one exploration turn, then the answer."""
    sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "agent"))
    import test_scenarios as sc
    from agent_helpers import PRODUCTS

    def make(compression: bool, budgets: bool) -> ptc.Step:
        agent = ptc.SubAgent(
            sc.MISSION,
            llm=ScriptedLLM([_clj(sc.SEED_PROGRAM), _clj(sc.FINISH_PROGRAM)]),
            tools=[sc.search_reviews, sc.get_inventory],
            data={"products": PRODUCTS},
            compression=compression,
            **(BUDGETS if budgets else {}),
        )
        step = agent.run()
        assert step.ok, step.error
        return step

    schemas = [
        {
            "name": "search_reviews",
            "description": "Search product reviews by category.",
            "parameters": {"type": "object", "properties": {"category": {"type": "string"}}},
        },
        {"name": "get_inventory", "description": "Current warehouse inventory report."},
    ]
    calls = [
        ("search_reviews", {"category": "Electronics"}, sc.REVIEWS),
        ("get_inventory", {}, sc.INVENTORY),
    ]
    opening = f"{sc.MISSION}\nProducts: {json.dumps(PRODUCTS)}"
    totals = table("scenario: reviews and inventory", make, round_trips(schemas, opening, calls))
    assert totals["compressed, no budgets"] < totals["full history, no budgets"]
