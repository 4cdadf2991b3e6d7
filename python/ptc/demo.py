"""``ptc demo``: an agent task over a bundled data set, turn by turn.

By default the model's replies are **recorded** (replayed, not generated: no network, no key),
so the run is the same everywhere. ``--model openai:NAME [--base-url URL]`` sends the same task
to a real model through ``ptc.llm.openai``.

Per turn it shows the program, what it printed and returned (or its error and the hint the
LLM got), and the input tokens of what the LLM was sent with ``SingleUserCoalesced`` next to
what the full history would have cost; at the end, the totals, how the run ended (its value,
or its error's type and message), and the paths of the trace page and of the Step saved as
JSON beside it (``ptc trace ptc-demo-step.json`` prints it again).
"""

from __future__ import annotations

import os
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


#: What the demo writes in its folder: the run's trace page and its Step (for ``ptc trace``).
PAGE_NAME = "ptc-demo-trace.html"
STEP_NAME = "ptc-demo-step.json"


def check_options(model: str | None, base_url: str | None, out_dir: str | None) -> Path:
    """The folder the demo writes to, once the options are known to be usable; a
    ``ValueError`` saying which option is wrong and what to pass otherwise (before anything
    runs, so a mistyped folder costs no model calls)."""
    if model is not None:
        provider, _, name = model.partition(":")
        if provider != "openai" or not name:
            raise ValueError(
                f"--model {model!r}: expected openai:MODEL_NAME (e.g. openai:gpt-4.1-mini)"
            )
    elif base_url is not None:
        raise ValueError("--base-url needs --model openai:MODEL_NAME (the model to ask there)")
    if out_dir is None:
        return Path(tempfile.gettempdir())
    folder = Path(out_dir)
    if not folder.exists():
        raise ValueError(f"--out {out_dir}: no such directory (create it, or pass an existing one)")
    if not folder.is_dir():
        raise ValueError(f"--out {out_dir}: not a directory (pass the folder to write the page in)")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"--out {out_dir}: the directory is not writable by this user")
    return folder


def run_demo(
    model: str | None = None,
    base_url: str | None = None,
    out_dir: str | None = None,
    echo: Any = print,
) -> Any:
    """Runs the task and reports each turn through ``echo``; returns the Step. Writes the
    trace page (:data:`PAGE_NAME`) and the Step as JSON (:data:`STEP_NAME`, for ``ptc trace``)
    to ``out_dir`` (default: the system's temporary folder). Raises ``ValueError`` for an
    unusable option (:func:`check_options`), before anything runs, and ``OSError`` when a file
    cannot be written."""
    import ptc
    from ptc.llm import ScriptedLLM
    from ptc.trace import error_line, terminal_safe, token_series, value_text

    folder = check_options(model, base_url, out_dir)

    def say(text: str) -> None:  # a real model's text must not drive the terminal
        echo(terminal_safe(text))

    if model is None:
        llm: Any = ScriptedLLM(list(RECORDED))
        source = "recorded replies (replayed; no model is called)"
    else:
        name = model.partition(":")[2]
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
    say(f"ptc demo: {MISSION}\nmodel: {source}\ndata: data/orders, 240 orders; tool: restock\n")
    run = agent.iter()
    for turn in run:
        say(f"── turn {turn.number} " + "─" * 60)
        say(turn.program if turn.program is not None else f"(no program) {turn.response}")
        for line in turn.prints:
            say(f"  printed: {line}")
        for call in turn.tool_calls:
            say(f"  tool:    {call.name}({call.args_text})")
        if turn.error is not None:
            say(f"  error:   {turn.error.message}")
            if turn.error.hint:
                say(f"  hint:    {turn.error.hint}")
        else:
            say(f"  =>       {turn.result_text}")
    step = run.step
    assert step is not None
    series = token_series(step)
    say("\n── what the LLM was sent (input tokens per call, o200k_base) " + "─" * 20)
    say(f"{'call':>6} {'compressed':>11} {'full history':>13} {'saved':>7}")
    for s in series:
        saved = 1 - s["compressed"] / s["full"] if s["full"] else 0.0
        say(f"{s['call']:>6} {s['compressed']:>11} {s['full']:>13} {saved:>6.0%}")
    total_c = sum(s["compressed"] for s in series)
    total_f = sum(s["full"] for s in series)
    saved = 1 - total_c / total_f if total_f else 0.0
    say(f"{'total':>6} {total_c:>11} {total_f:>13} {saved:>6.0%}")
    if step.ok:
        say(f"\nresult: ok -> {value_text(step)}")
    elif step.error is not None:  # why it failed: a dead server, no key, out of turns, ...
        say(f"\nresult: {error_line(step.error)}")
        if step.error.hint:
            say(f"hint:   {step.error.hint}")
    page, saved_step = folder / PAGE_NAME, folder / STEP_NAME
    step.to_html(page, title="ptc demo: " + MISSION[:70] + "...")
    saved_step.write_text(step.to_json(), encoding="utf-8")
    say(f"trace page: {page}")
    say(f"step:       {saved_step} (ptc trace {saved_step} prints every turn)")
    return step
