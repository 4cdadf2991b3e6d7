"""Two builds of ptc side by side on the evaluator's and the conversion's rows.

    python benches/compare_builds.py BEFORE_PYTHON AFTER_PYTHON [--runs 3] [--rounds 7]

Each Python is an interpreter with one build of ptc installed (a venv per worktree). The builds
run alternately in fresh processes (`--runs` each; which goes first swaps every run); every row
takes a warm-up round and `--rounds` timed ones. Printed: per row, each build's minimum and
median (ms) over all its runs, and the change. Not a pytest file: pytest-benchmark compares ptc
with CPython in one process; this compares two ptc builds, which cannot share one.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def rows() -> dict[str, Callable[[], Callable[[], Any]]]:
    """Each row: a setup returning the callable to time."""
    import ptc
    from test_bench_scale import make_nested

    nested = make_nested(100_000)
    flat = [
        {"id": i, "customer": f"c{i % 5000}", "region": "nsew"[i % 4], "total": i * 0.5, "n": i % 7}
        for i in range(100_000)
    ]
    many = {str(k): nested[k * 1500 : (k + 1) * 1500] for k in range(60)}
    big_map = {f"key{i}": {"v": i, "t": f"text {i}"} for i in range(100_000)}
    tuples = [(i, f"s{i}", [i, i / 2]) for i in range(100_000)]
    keyed = [{j: f"v{j}" for j in range(i % 7, i % 7 + 4)} for i in range(100_000)]

    def calls(tool: Callable[..., Any], arg: str) -> Callable[[], Any]:
        s = ptc.Session(tools={"f": tool}, limits={"max_tool_calls": 10_000})
        program = f"(reduce + (map (fn [i] (tool/f {arg})) (range 10000)))"
        return lambda: s.run(program)

    def result() -> Callable[[], Any]:
        s = ptc.Session(tools={"rows": lambda: nested[:12_000]})
        return lambda: s.run("(count (tool/rows))")

    def back() -> Callable[[], Any]:
        s = ptc.Session(data={"orders": nested})
        return lambda: s.run("(take 20000 data/orders)").value

    def program(source: str, data: Any = None) -> Callable[[], Callable[[], Any]]:
        def setup() -> Callable[[], Any]:
            s = ptc.Session(
                data=data or {}, limits={"timeout_ms": 60_000, "fuel": 10**9, "loop_limit": 10**7}
            )
            return lambda: s.run(source)

        return setup

    def tiny() -> Callable[[], Any]:
        s = ptc.Session()
        return lambda: [s.run("(+ 1 2)") for _ in range(10_000)]

    return {
        # the evaluator: builtins called by id, closures by their code
        "(+ 1 2), 10,000 Session.run calls": tiny,
        "filter/map/reduce over 100k records": program(
            "(->> data/o (filter #(> (:total %) 100)) (map :total) (reduce +))", {"o": flat}
        ),
        "group-by + aggregate + sort, 100k": program(
            "(->> data/o (group-by :region) (map (fn [[k v]] [k (reduce + (map :total v))]))"
            " (sort-by second))",
            {"o": flat},
        ),
        "a closure reducing 1M": program("(reduce (fn [a x] (+ a x)) 0 (range 1000000))"),
        "loop/recur 1M": program(
            "(loop [i 0 acc 0] (if (< i 1000000) (recur (inc i) (+ acc i)) acc))"
        ),
        "a defn called 100k times": program(
            "(do (defn f [x] (* 2 x)) (reduce + (map f (range 100000))))"
        ),
        # the boundary
        "Session(data=...), 100k nested orders": lambda: lambda: ptc.Session(data={"o": nested}),
        "Session(data=...), 100k flat records": lambda: lambda: ptc.Session(data={"o": flat}),
        "Session(data=...), 60 lists of 1,500 orders": lambda: lambda: ptc.Session(data=many),
        "Session(data=...), one 100k-key map": lambda: lambda: ptc.Session(data={"m": big_map}),
        "Session(data=...), 100k tuples": lambda: lambda: ptc.Session(data={"t": tuples}),
        "Session(data=...), 100k maps with int keys": lambda: (
            lambda: ptc.Session(data={"k": keyed})
        ),
        "10,000 tool calls, an int argument": lambda: calls(lambda x: x, "i"),
        "10,000 tool calls, a map argument": lambda: calls(lambda **kw: kw["a"], '{:a i :b "x"}'),
        "a tool's result of 12,000 orders": result,
        "20,000 orders back to Python": back,
    }


def measure(rounds: int, only: str) -> dict[str, list[float]]:
    sys.path.insert(0, str(HERE))
    out: dict[str, list[float]] = {}
    for name, setup in rows().items():
        if only not in name:
            continue
        f = setup()
        times = []
        for r in range(rounds + 1):
            gc.collect()
            started = time.perf_counter()
            held = f()
            elapsed = time.perf_counter() - started
            del held
            if r:  # the first round warms up
                times.append(elapsed * 1000)
        out[name] = times
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("before")
    p.add_argument("after")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--only", default="", help="the rows whose name contains this text")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(measure(args.rounds, args.only)))
        return
    times: dict[str, dict[str, list[float]]] = {}
    pair = [("before", args.before), ("after", args.after)]
    for run in range(args.runs):
        # the second process of a pair measured up to 13% slower on the memory-heavy rows with
        # the same build in both places: the order swaps every run, so neither build has it
        for label, python in pair if run % 2 == 0 else pair[::-1]:
            cmd = [python, __file__, "-", "-", "--child", "--rounds", str(args.rounds)]
            cmd += ["--only", args.only]
            got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
            for name, ts in got.items():
                times.setdefault(name, {}).setdefault(label, []).extend(ts)
    print("| row | before: min (median) | after: min (median) | change (min) |")
    print("|---|---|---|---|")
    for name, by in times.items():
        b, a = by["before"], by["after"]
        change = min(a) / min(b) - 1
        print(
            f"| {name} | {min(b):.1f} ms ({statistics.median(b):.1f}) "
            f"| {min(a):.1f} ms ({statistics.median(a):.1f}) | {change:+.0%} |"
        )


if __name__ == "__main__":
    main()
