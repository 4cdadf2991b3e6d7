"""One tool call's cost: 1,000 calls in one run, min of 200 runs, 5 times (the figure of
docs/PERFORMANCE.md's issue 32 rows). Run it alternately under two builds to compare them:
``python scripts/bench_tool_calls.py LABEL``."""

from __future__ import annotations

import sys
import time

import ptc

CALLS = "(reduce + (map (fn [i] (tool/f i)) (range 1000)))"


def identity(x: int) -> int:
    return x


def main(label: str) -> None:
    s = ptc.Session(tools={"f": identity})
    for _ in range(50):
        s.run(CALLS)
    best = []
    for _ in range(5):
        times = []
        for _ in range(200):
            t = time.perf_counter()
            s.run(CALLS)
            times.append(time.perf_counter() - t)
        best.append(min(times))
    shown = " ".join(f"{b * 1000:.3f}" for b in best)
    print(f"{label} min per 1000 calls (ms): {shown} best {min(best) * 1000:.3f}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ptc")
