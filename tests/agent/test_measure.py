"""Tokens sent over a 6-turn scripted scenario, with and without compression (docs/COMPRESSION.md).

Run ``python tests/agent/test_measure.py`` to print the table. Tokens are counted with
``ptc.history.tokens.count_tokens``: exact when the core provides a tokenizer, otherwise
estimated as ceil(UTF-8 bytes / 4) per message plus 4 per message for the chat framing (the
usual rule of thumb for English and code with cl100k/o200k-style tokenizers; good to about 15%).
"""

from __future__ import annotations

import dataclasses
import math

from agent_helpers import MISSION, TOOLS, call, func, turn, value
from ptc.compression import DataEntry, FullHistory, SingleUserCoalesced
from ptc.prompts import system_prompt

REVIEWS = "Customer Review Summary for Electronics:\n" + "\n".join(
    f"- {name}: Average rating {score}/5 from {n} reviews. Most mention build quality, "
    "battery life and value for money; a few report shipping delays."
    for name, score, n in [
        ("Laptop", 4.5, 812),
        ("Mouse", 3.2, 1290),
        ("Monitor", 4.7, 344),
        ("Keyboard", 4.1, 655),
    ]
)
INVENTORY = "Warehouse Inventory Report (as of today):\n" + "\n".join(
    f"{name} - {units} units in stock, warehouse {wh}, next delivery in {days} days."
    for name, units, wh, days in [
        ("Laptop", 23, "A", 5),
        ("Mouse", 0, "B", 12),
        ("Monitor", 5, "A", 3),
        ("Keyboard", 12, "C", 7),
    ]
)
E = value("electronics", "list[4]", '{:name "Laptop", :price 1200, ...}')
R = value(
    "reviews",
    "string",
    '"Customer Review Summary for Electronics:\\n- Laptop: Average rating 4.5/...',
)
INV = value(
    "inventory",
    "string",
    '"Warehouse Inventory Report (as of today):\\nLaptop - 23 units in stoc...',
)
RATING = func("rating", ["name"], "Average rating of a product from the reviews text", "float")
SCORES = value("scores", "list[4]", '{:name "Laptop", :rating 4.5, :units 23}')
RANKED = value("ranked", "list[3]", '{:name "Monitor", :rating 4.7, :units 5}')

P1 = """(def electronics (filter (fn [p] (= (:category p) "Electronics")) data/products))
(def reviews (tool/search-reviews "Electronics"))
(def inventory (tool/get-inventory))"""
P2 = """(println "Reviews:" reviews)
(println "Inventory:" inventory)"""
P3 = """(defn rating "Average rating of a product from the reviews text" [name]
  (let [line (first (filter #(includes? % name) (split-lines reviews)))]
    (parse-double (second (re-find (re-pattern "rating ([0-9.]+)") line)))))
(def scores (map (fn [p] {:name (:name p) :rating (rating (:name p))
                          :units (units-of (:name p))}) electronics))
(println scores)"""
P4 = """(defn units-of [name]
  (let [line (first (filter #(starts-with? % name) (split-lines inventory)))]
    (parse-long (second (re-find (re-pattern "- ([0-9]+) units") line)))))
(def scores (map (fn [p] {:name (:name p) :rating (rating (:name p))
                          :units (units-of (:name p))}) electronics))
(def ranked (sort-by :rating > (filter #(and (> (:units %) 0) (>= (:rating %) 4.0)) scores)))
(println (map :name ranked))"""
P5 = """(println (count ranked) "products in stock with rating >= 4.0")"""
P6 = """(return (map :name ranked))"""

SCORES_OUT = (
    '[{:name "Laptop", :rating 4.5, :units 23} {:name "Mouse", :rating 3.2, :units 0} '
    '{:name "Monitor", :rating 4.7, :units 5} {:name "Keyboard", :rating 4.1, :units 12}]'
)


def scenario():
    """Turns 1-5 of a run whose 6th reply returns; call k is rendered from turns[:k]."""
    return [
        turn(
            1,
            P1,
            calls=[call("search-reviews", '"Electronics"'), call("get-inventory")],
            memory=[E, R, INV],
            defined=["electronics", "reviews", "inventory"],
            result_text="#'inventory",
        ),
        turn(
            2,
            P2,
            prints=[f"Reviews: {REVIEWS}", f"Inventory: {INVENTORY}"],
            memory=[E, R, INV],
            result_text="nil",
        ),
        turn(3, P3, error="Undefined variable: units-of", memory=[E, R, INV]),
        turn(
            4,
            P4,
            prints=['["Monitor" "Laptop" "Keyboard"]'],
            memory=[E, R, INV, RATING, SCORES, RANKED],
            defined=["units-of", "rating", "scores", "ranked"],
            result_text="nil",
        ),
        turn(
            5,
            P5,
            prints=["3 products in stock with rating >= 4.0"],
            memory=[E, R, INV, RATING, SCORES, RANKED],
            result_text="nil",
        ),
    ]


def estimate_tokens(messages) -> int:
    try:  # exact o200k_base counts from the core's tokenizer (plus 4 per message for framing)
        from ptc.history.tokens import count_tokens, default_counter
    except ImportError:
        return sum(math.ceil(len(m["content"].encode()) / 4) + 4 for m in messages)
    return count_tokens(messages, default_counter(encoding="o200k_base"))


def repeating(turns):
    """The same turns as an LLM writes them when it sees its old code: each program starts by
    repeating the definitions of the earlier successful programs (the seed's problem statement)."""
    out, earlier = [], []
    for t in turns:
        program = "\n".join([*earlier, t.program])
        out.append(dataclasses.replace(t, program=program))
        if t.success and t.defined:
            earlier.append(t.program)
    return out


def measure(max_turns: int = 6) -> dict[str, list[int]]:
    o = {
        "mission": MISSION,
        "system_prompt": system_prompt(),
        "max_turns": max_turns,
        "tools": TOOLS,
        "data": (DataEntry("products", "list[7]", '{:name "Laptop", :price 1200, ...}'),),
    }
    out: dict[str, list[int]] = {}
    runs = [
        ("full_history", FullHistory(), scenario()),
        ("full_history_repeating", FullHistory(), repeating(scenario())),
        ("single_user_coalesced", SingleUserCoalesced(), scenario()),
    ]
    for label, strategy, turns in runs:
        per_call = []
        for k in range(len(turns) + 1):
            memory = turns[k - 1].memory if k else ()
            messages, _ = strategy.to_messages(turns[:k], memory, o)
            per_call.append(estimate_tokens(messages))
        out[label] = per_call
    return out


def test_compression_saves_tokens_over_six_turns():
    result = measure()
    full, compressed = result["full_history"], result["single_user_coalesced"]
    assert len(full) == len(compressed) == 6
    assert full[0] == compressed[0]  # turn 1: nothing to compress yet
    assert sum(compressed) < sum(full)
    assert compressed[-1] < full[-1]


if __name__ == "__main__":
    r = measure()
    system = estimate_tokens([{"role": "system", "content": system_prompt()}])
    full, rep, comp = r["full_history"], r["full_history_repeating"], r["single_user_coalesced"]
    print("| LLM call | full history | full history, LLM repeats old code | SingleUserCoalesced |")
    print("|---|---|---|---|")
    for i, row in enumerate(zip(full, rep, comp, strict=True), 1):
        print(f"| {i} | " + " | ".join(str(x) for x in row) + " |")
    print("| total | " + " | ".join(str(sum(x)) for x in (full, rep, comp)) + " |")
    print(
        "| total without the system prompt | "
        + " | ".join(str(sum(x) - 6 * system) for x in (full, rep, comp))
        + " |"
    )
