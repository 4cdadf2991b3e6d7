"""Tokens sent over a 6-turn scripted scenario, with and without compression (docs/COMPRESSION.md).

Run ``python tests/agent/test_measure.py`` to print the table. Tokens are counted with
``ptc.history.tokens.count_tokens``: exact when the core provides a tokenizer, otherwise
estimated as ceil(UTF-8 bytes / 4) per message plus 4 per message for the chat framing (the
usual rule of thumb for English and code with cl100k/o200k-style tokenizers; good to about 15%).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from agent_helpers import MISSION, PRODUCTS, TOOLS, call, func, turn, value
from ptc.compression import DataEntry, FullHistory, SingleUserCoalesced
from ptc.prompts import system_prompt
from ptc.turn import MemoryEntry

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
ELECTRONICS = [p for p in PRODUCTS if p["category"] == "Electronics"]
SCORES = [
    {"name": "Laptop", "rating": 4.5, "units": 23},
    {"name": "Mouse", "rating": 3.2, "units": 0},
    {"name": "Monitor", "rating": 4.7, "units": 5},
    {"name": "Keyboard", "rating": 4.1, "units": 12},
]
RANKED = sorted(
    (s for s in SCORES if s["units"] > 0 and s["rating"] >= 4.0),
    key=lambda s: -float(s["rating"]),
)
SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT = 3, 80  # TRN-002
ARGS_LIMIT, ARGS_PRINTABLE_LIMIT = 3, 60  # TRN-003


def core_sample(v: Any) -> str:
    """The sample the core shows for ``v`` (TRN-001/002): a list's first element, else ``v``,
    through ``ptc.to_clojure`` - so the hand-built turns carry exactly what a run would record."""
    import ptc

    shown = v[0] if isinstance(v, list) and v else v
    return ptc.to_clojure(shown, SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT, hide_private=True)[0]


def args_text(*args: Any) -> str:
    import ptc

    return " ".join(
        ptc.to_clojure(a, ARGS_LIMIT, ARGS_PRINTABLE_LIMIT, hide_private=True)[0] for a in args
    )


# name -> (value, type label): the definitions of the scenario, with the values they hold.
VALUES: dict[str, tuple[Any, str]] = {
    "electronics": (ELECTRONICS, "list[4]"),
    "reviews": (REVIEWS, "string"),
    "inventory": (INVENTORY, "string"),
    "scores": (SCORES, "list[4]"),
    "ranked": (RANKED, "list[3]"),
}


def defined(name: str) -> MemoryEntry:
    v, type_label = VALUES[name]
    return value(name, type_label, core_sample(v))


RATING = func("rating", ["name"], "Average rating of a product from the reviews text", "float")
UNITS_OF = func("units-of", ["name"], None, "integer")

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
P4 = """(defn rating "Average rating of a product from the reviews text" [name]
  (let [line (first (filter #(includes? % name) (split-lines reviews)))]
    (parse-double (second (re-find (re-pattern "rating ([0-9.]+)") line)))))
(defn units-of [name]
  (let [line (first (filter #(starts-with? % name) (split-lines inventory)))]
    (parse-long (second (re-find (re-pattern "- ([0-9]+) units") line)))))
(def scores (map (fn [p] {:name (:name p) :rating (rating (:name p))
                          :units (units-of (:name p))}) electronics))
(def ranked (sort-by :rating > (filter #(and (> (:units %) 0) (>= (:rating %) 4.0)) scores)))
(println (map :name ranked))"""
P5 = """(println (count ranked) "products in stock with rating >= 4.0")"""
P6 = """(return (map :name ranked))"""


def scenario():
    """Turns 1-5 of a run whose 6th reply returns; call k is rendered from turns[:k]."""
    e, r, inv = defined("electronics"), defined("reviews"), defined("inventory")
    scores, ranked = defined("scores"), defined("ranked")
    return [
        turn(
            1,
            P1,
            calls=[
                call("search-reviews", args_text("Electronics")),
                call("get-inventory", args_text()),
            ],
            memory=[e, r, inv],
            defined=["electronics", "reviews", "inventory"],
            result_text="#'inventory",
        ),
        turn(
            2,
            P2,
            prints=[f"Reviews: {REVIEWS}", f"Inventory: {INVENTORY}"],
            memory=[e, r, inv],
            result_text="nil",
        ),
        turn(3, P3, error="Undefined variable: units-of", memory=[e, r, inv]),
        turn(
            4,
            P4,
            prints=['["Monitor" "Laptop" "Keyboard"]'],
            memory=[e, r, inv, RATING, UNITS_OF, scores, ranked],
            defined=["rating", "units-of", "scores", "ranked"],
            result_text="nil",
        ),
        turn(
            5,
            P5,
            prints=["3 products in stock with rating >= 4.0"],
            memory=[e, r, inv, RATING, UNITS_OF, scores, ranked],
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
        "data": (DataEntry("products", "list[7]", core_sample(PRODUCTS)),),
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


def test_samples_are_what_the_core_records():
    """The hand-built samples are the core's: equal to what a Session describes for the same
    values (a map sample at printable_limit 80 shows at most 80 // 30 = 2 entries)."""
    import ptc

    session = ptc.Session(data={"products": PRODUCTS, **{k: v for k, (v, _) in VALUES.items()}})
    for key in ["products", *VALUES]:
        desc = session.describe_data(key, SAMPLE_LIMIT, SAMPLE_PRINTABLE_LIMIT)
        expected = core_sample(PRODUCTS if key == "products" else VALUES[key][0])
        assert desc.sample == expected
        if key in VALUES:
            assert desc.type == VALUES[key][1]
    assert core_sample(SCORES) == '{:name "Laptop", :rating 4.5, ...}'

    # The successful programs, run for real, leave exactly the memory the hand-built turns carry
    # (the failed turn 3 changes nothing, so it is not run).
    tools = {"search-reviews": lambda category: REVIEWS, "get-inventory": lambda: INVENTORY}
    live = ptc.Session(data={"products": PRODUCTS}, tools=tools)
    for t in scenario():
        if not t.success:
            continue
        result = live.run(t.program)
        assert result.error is None and list(result.prints) == list(t.prints)
        recorded = [
            MemoryEntry(
                d.name,
                d.kind,
                d.type,
                d.sample,
                d.doc,
                tuple(d.params) if d.params is not None else None,
                d.return_type,
            )
            for d in live.definitions
        ]
        assert recorded == list(t.memory)


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
