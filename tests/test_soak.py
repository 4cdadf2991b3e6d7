"""Soak: many runs in one process keep its memory flat (issue 8: "100,000 runs in one process
with flat RSS").

The runs mix what a long-lived service sees: tiny programs, definitions that replace earlier
ones, errors of every phase, limit errors, tools (including a failing one and one whose run
is abandoned at the deadline), parallel branches and printing. Resident memory is measured
after a warm-up (allocator pools, interned keywords, worker threads) and again at the end.
The default run is 100,000 runs; PTC_SOAK_RUNS sets another count.
"""

from __future__ import annotations

import os
import time

import ptc

RUNS = int(os.environ.get("PTC_SOAK_RUNS", "100000"))
WARMUP = min(10_000, RUNS // 5)
# Growth allowed between the end of the warm-up and the end: a leak of even 100 bytes per run
# would show as 9 MB over the remaining 90,000 runs.
ALLOWED_GROWTH_MB = 8.0

PROGRAMS = [
    "(+ 1 2)",
    "(def x (vec (range 100))) (count x)",
    "(defn f [m] (assoc m :seen true)) (f {:a 1})",
    "(reduce + (map inc (range 1000)))",
    "(str/join (range 3))",  # an analysis error: namespaced name
    "(nth [1 2] 5)",
    "(+ 1",  # a parse error
    "(loop [i 0] (recur (inc i)))",  # loop limit (set low below)
    "(tool/echo {:a [1 2 3]})",
    "(tool/boom)",
    "(pmap inc [1 2 3 4])",
    '(println "hello" {:a 1})',
    "(group-by :k [{:k 1} {:k 2} {:k 1}])",
    '(frequencies (split "a,b,a" ","))',
]


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def test_many_runs_keep_memory_flat() -> None:
    def boom() -> None:
        raise RuntimeError("no")

    s = ptc.Session(
        data={"orders": [{"id": i, "total": i * 1.5} for i in range(100)]},
        tools={"echo": lambda m: m, "boom": boom},
        limits={"loop_limit": 1000},
    )
    plain = ptc.Session(limits={"loop_limit": 1000})
    started = time.monotonic()
    baseline = 0.0
    expected: dict[str, tuple[bool, str | None]] = {}
    for i in range(RUNS):
        if i == WARMUP:
            baseline = _rss_mb()
        program = PROGRAMS[i % len(PROGRAMS)]
        session = s if "tool/" in program or i % 2 else plain
        r = session.run(program)
        # the same program gives the same outcome every time
        outcome = (r.ok, r.error.type if r.error else None)
        assert expected.setdefault(program, outcome) == outcome, (program, r.error)
    end = _rss_mb()
    elapsed = time.monotonic() - started
    growth = end - baseline
    print(f"{RUNS} runs in {elapsed:.1f} s; RSS {baseline:.1f} -> {end:.1f} MB")
    assert growth < ALLOWED_GROWTH_MB, f"RSS grew {growth:.1f} MB over {RUNS - WARMUP} runs"
    # the Sessions still work and kept their definitions
    assert s.run("(count x)").value == 100
    # and every program did what it should, not merely the same thing each time
    assert expected["(+ 1 2)"] == (True, None)
    assert expected["(tool/boom)"] == (False, "tool_error")
    assert expected["(+ 1"] == (False, "parse_error")
    assert expected["(loop [i 0] (recur (inc i)))"] == (False, "loop_limit_exceeded")
    assert expected["(pmap inc [1 2 3 4])"] == (True, None)
