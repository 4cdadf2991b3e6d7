"""``ptc demo``: an agent task over a bundled data set, turn by turn.

By default the model's replies are **recorded** (replayed, not generated: no network, no key),
so the run is the same everywhere. ``--model openai:NAME [--base-url URL]`` sends the same task
to a real model through ``ptc.llm.openai``.

Per turn it shows the program, what it printed and returned (or its error and the hint the
LLM got), and the input tokens of what the LLM was sent with ``SingleUserCoalesced`` next to
what the full history would have cost; at the end, the totals and the trace page's path.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

MISSION = (
    "Find the region with the highest revenue from shipped orders, then restock the best-selling"
    " product of that region with 50 units. Return the region, its revenue and the restock"
    " confirmation."
)

REGIONS = ["north", "south", "east", "west"]
PRODUCTS = ["kettle", "toaster", "blender", "grinder", "juicer", "mixer"]
STATUSES = ["shipped", "shipped", "shipped", "pending", "cancelled"]


def orders(n: int = 240, seed: int = 7) -> list[dict[str, Any]]:
    """The bundled data set: ``n`` orders, the same on every machine."""
    rng = random.Random(seed)
    out = []
    for i in range(1, n + 1):
        items: list[dict[str, Any]] = [
            {
                "product": rng.choice(PRODUCTS),
                "qty": rng.randint(1, 4),
                "price": round(rng.uniform(15, 120), 2),
            }
            for _ in range(rng.randint(1, 3))
        ]
        out.append(
            {
                "id": i,
                "region": rng.choice(REGIONS),
                "status": rng.choice(STATUSES),
                "customer": f"c{rng.randint(1, 60):03d}",
                "items": items,
                "total": round(sum(x["qty"] * x["price"] for x in items), 2),
            }
        )
    return out


def restock(product: str, region: str, qty: int) -> dict[str, Any]:
    """Order more units of a product for a region's warehouse."""
    return {"product": product, "region": region, "ordered": qty, "eta_days": 3}


def _clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


#: What a model answered on this task, recorded: exploration, a mistake and its fix, a tool
#: call, the answer.
RECORDED = [
    "Let me look at the data first.\n"
    + _clj('(println "orders:" (count data/orders))\n(first data/orders)'),
    "Now the statuses and regions.\n"
    + _clj(
        "{:statuses (frequencies (map :status data/orders))\n"
        " :regions (frequencies (map :region data/orders))}"
    ),
    "Revenue per region over shipped orders.\n"
    + _clj(
        "(def revenue\n"
        "  (->> data/orders\n"
        '       (filter #(= (:status %) "shipped"))\n'
        "       (group-by :region)\n"
        "       (map (fn [[region os]] [region (sum (map :total os))]))\n"
        "       (into {})))\nrevenue"
    ),
    "`sum` is not available; reduce with + instead.\n"
    + _clj(
        "(def revenue\n"
        "  (->> data/orders\n"
        '       (filter #(= (:status %) "shipped"))\n'
        "       (group-by :region)\n"
        "       (map (fn [[region os]] [region (reduce + (map :total os))]))\n"
        "       (into {})))\n"
        "(def top (first (first (sort-by second > revenue))))\n"
        "[top (get revenue top)]"
    ),
    "Best-selling product in that region, then restock it.\n"
    + _clj(
        "(def best\n"
        "  (->> data/orders\n"
        '       (filter #(and (= (:status %) "shipped") (= (:region %) top)))\n'
        "       (map :items)\n"
        "       (apply concat)\n"
        "       (group-by :product)\n"
        "       (map (fn [[p xs]] [p (reduce + (map :qty xs))]))\n"
        "       (apply max-key second)\n"
        "       first))\n"
        "(def confirmation (tool/restock best top 50))\n"
        "confirmation"
    ),
    _clj("(return {:region top :revenue (get revenue top) :restock confirmation})"),
]


def run_demo(
    model: str | None = None,
    base_url: str | None = None,
    out_dir: str | None = None,
    echo: Any = print,
) -> Any:
    """Runs the task and reports each turn through ``echo``; returns the Step."""
    import ptc
    from ptc.llm import ScriptedLLM
    from ptc.trace import token_series

    if model is None:
        llm: Any = ScriptedLLM(list(RECORDED))
        source = "recorded replies (replayed; no model is called)"
    else:
        provider, _, name = model.partition(":")
        if provider != "openai" or not name:
            raise ValueError(f"--model {model!r}: expected openai:MODEL_NAME")
        llm = ptc.llm.openai(name, base_url=base_url)
        source = f"{name} via {base_url or 'the OpenAI API'}"

    agent = ptc.SubAgent(
        prompt=MISSION,
        llm=llm,
        tools=[restock],
        data={"orders": orders()},
        compression=True,
        max_turns=8,
        name="ptc-demo",
    )
    echo(f"ptc demo: {MISSION}\nmodel: {source}\ndata: data/orders, 240 orders; tool: restock\n")
    run = agent.iter()
    for turn in run:
        echo(f"── turn {turn.number} " + "─" * 60)
        echo(turn.program if turn.program is not None else f"(no program) {turn.response}")
        for line in turn.prints:
            echo(f"  printed: {line}")
        for call in turn.tool_calls:
            echo(f"  tool:    {call.name}({call.args_text})")
        if turn.error is not None:
            echo(f"  error:   {turn.error.message}")
            if turn.error.hint:
                echo(f"  hint:    {turn.error.hint}")
        else:
            echo(f"  =>       {turn.result_text}")
    step = run.step
    assert step is not None
    series = token_series(step)
    echo("\n── what the LLM was sent (input tokens per call, o200k_base) " + "─" * 20)
    echo(f"{'call':>6} {'compressed':>11} {'full history':>13} {'saved':>7}")
    for s in series:
        saved = 1 - s["compressed"] / s["full"] if s["full"] else 0.0
        echo(f"{s['call']:>6} {s['compressed']:>11} {s['full']:>13} {saved:>6.0%}")
    total_c = sum(s["compressed"] for s in series)
    total_f = sum(s["full"] for s in series)
    saved = 1 - total_c / total_f if total_f else 0.0
    echo(f"{'total':>6} {total_c:>11} {total_f:>13} {saved:>6.0%}")
    echo(f"\nresult: {'ok' if step.ok else 'error'} -> {ptc.to_clojure(step.value)[0]}")
    folder = Path(out_dir) if out_dir else Path(tempfile.gettempdir())
    page = folder / "ptc-demo-trace.html"
    step.to_html(page, title="ptc demo: " + MISSION[:70] + "...")
    echo(f"trace page: {page}")
    return step
