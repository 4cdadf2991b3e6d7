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
from collections.abc import Callable
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


def baseline(n_orders: int, restock_args: dict[str, Any]) -> list[int]:
    """Requests of an agent making one JSON tool call per round trip for the same task."""
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
    history = [
        "You are a helpful assistant. Use the tools to answer.",
        json.dumps(schemas),
        MISSION,
    ]
    out = []
    for name, args, result in [
        ("get_orders", {}, orders(n_orders)),
        ("restock", restock_args, restock(**restock_args)),
    ]:
        out.append(sum(map(tokens, history)))
        history.append(json.dumps({"name": name, "arguments": json.dumps(args)}))
        history.append(json.dumps(result))
    out.append(sum(map(tokens, history)))  # the request that gets the answer
    return out


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
    # the demo's requests do not grow with the budgets (its values are small)
    assert totals["compressed, budgets 300/300"] <= totals["compressed, no budgets"]
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
    n = tokens(default_system_prompt())
    print(f"\nsystem prompt: {n} tokens")
    assert n <= 900
