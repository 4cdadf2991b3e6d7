"""A bounded load test of the history store (issue 13), loopback only and opt-in.

N worker processes each drive M agents; every agent appends a turn (a batch of messages) and
then searches its history, R rounds. Prints one Markdown row per backend: throughput and the
p50/p99 latency of appends and searches, as docs/PERFORMANCE.md shows them.

    python scripts/store_load.py --procs 4 --agents 8 --rounds 50 \
        --backend sqlite --backend postgresql://ptc@127.0.0.1:54329/postgres
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time
import uuid
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

WORDS = ["iron", "copper", "ore", "belt", "Oslo", "cooldown", "market", "dock", "fuel", "scan"]


def _turn(agent: str, r: int) -> list[dict[str, Any]]:
    w = WORDS[r % len(WORDS)]
    return [
        {"role": "user", "content": f"{agent} round {r}: check the {w} prices", "source": "direct"},
        {"role": "assistant", "content": f"Looking up {w}.", "reasoning": f"{w} first"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"c{r}",
                    "type": "function",
                    "function": {"name": "market", "arguments": json.dumps({"item": w})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": f"c{r}", "content": f"{w}: {r * 7 % 100} credits " * 8},
        {"role": "assistant", "content": f"{w} is at {r * 7 % 100}."},
    ]


def worker(url: str, options: dict[str, Any], proc: int, agents: int, rounds: int, q: Any) -> None:
    from ptc.history.store import open_store

    store = open_store(url, **options)
    appends: list[float] = []
    searches: list[float] = []
    for r in range(rounds):
        for a in range(agents):
            agent = f"p{proc}-a{a}"
            t = time.perf_counter()
            store.append_many(_turn(agent, r), agent_id=agent, run_id=f"{agent}-run")
            appends.append(time.perf_counter() - t)
            t = time.perf_counter()
            store.search_messages(WORDS[(r + a) % len(WORDS)], limit=20, agent_id=agent)
            searches.append(time.perf_counter() - t)
    store.close()
    q.put((appends, searches))


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))] * 1000


def run(url: str, procs: int, agents: int, rounds: int) -> str:
    from ptc.history.store import open_store

    options: dict[str, Any] = {}
    name = "SQLite (WAL)"
    if url.startswith("postgres"):
        options = {"schema": "load_" + uuid.uuid4().hex[:8]}
        name = "PostgreSQL"
    store = open_store(url, **options)
    store.count()  # created and migrated before the workers start
    store.close()
    q: Any = mp.Queue()
    ps = [
        mp.Process(target=worker, args=(url, options, p, agents, rounds, q)) for p in range(procs)
    ]
    t = time.perf_counter()
    for p in ps:
        p.start()
    results = [q.get(timeout=600) for _ in ps]
    for p in ps:
        p.join()
    wall = time.perf_counter() - t
    appends = [x for a, _ in results for x in a]
    searches = [x for _, s in results for x in s]
    messages = len(appends) * 5
    if url.startswith("postgres"):
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {options['schema']} CASCADE")
    return (
        f"| {name} | {procs} × {agents} | {messages:,} | {messages / wall:,.0f} | "
        f"{len(searches) / wall:,.0f} | {pct(appends, 50):.1f} / {pct(appends, 99):.1f} | "
        f"{pct(searches, 50):.1f} / {pct(searches, 99):.1f} | "
        f"{statistics.mean(appends) * 1000:.1f} |"
    )


def _loopback(url: str) -> bool:
    """Whether a PostgreSQL URL names a server on this machine (a load test is not for others)."""
    from urllib.parse import urlsplit

    host = urlsplit(url).hostname
    return host in ("127.0.0.1", "::1", "localhost") or (host or "").startswith("/")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument(
        "--backend", action="append", help="'sqlite' (a temporary file) or a PostgreSQL URL"
    )
    args = ap.parse_args()
    for b in args.backend or []:
        if b != "sqlite" and not _loopback(b):
            ap.error(f"{b}: the load test runs against a server on this machine only (127.0.0.1)")
    print(
        "| Backend | processes × agents | messages | messages/s | searches/s | "
        "append p50 / p99 ms | search p50 / p99 ms | append mean ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for b in args.backend or ["sqlite"]:
        if b == "sqlite":
            with tempfile.TemporaryDirectory() as d:
                print(run(f"sqlite:///{d}/load.db", args.procs, args.agents, args.rounds))
        else:
            print(run(b, args.procs, args.agents, args.rounds))


if __name__ == "__main__":
    main()
