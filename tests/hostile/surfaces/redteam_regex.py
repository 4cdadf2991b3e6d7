"""Red team, the regex builtins (re-pattern, re-find, re-matches, re-seq, re-split) at the
run's limits, aimed where the first batch did not: compiling many patterns (each compile is
milliseconds of work between two budget checks), patterns that match everywhere over 16 MiB,
patterns the engine refuses, and regex work in parallel branches."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from . import case

MiB = 1 << 20

#: Compiles a fresh Unicode pattern per item: about 20 ms each, under the compile size limit.
COMPILE_LOOP = (
    '(count (map (fn [i] (re-find (re-pattern (str "\\\\w{20}" i)) "x")) (range 1000000)))'
)


def _p(pattern: str) -> str:
    return f'(re-pattern "{pattern}")'


@case(seconds=60, memory_mb=600)
def case_patterns_that_match_everywhere_over_16_mib(tmp: Path) -> None:
    """The empty pattern, ``x*`` and ``(a)(a)?`` over 16 MiB of one letter with re-seq and
    re-split: a typed limit (time or memory) within 1.2 x the 1 s limit + 150 ms."""
    import ptc

    s = ptc.Session(data={"s": "a" * (16 * MiB)}, limits={"timeout_ms": 1000})
    for fn in ("re-seq", "re-split"):
        for pattern in ("", "x*", "(a)(a)?"):
            started = time.monotonic()
            r = s.run(f"(count ({fn} {_p(pattern)} data/s))")
            took = time.monotonic() - started
            assert r.error is not None, (fn, pattern, r)
            assert r.error.type in ("timeout", "memory_exceeded"), (fn, pattern, r.error)
            assert took < 1.2 + 0.15, (fn, pattern, took)


@case(seconds=60, memory_mb=300)
def case_matches_over_16_mib_stay_within_a_small_memory_limit(tmp: Path) -> None:
    """With max_memory 64 MB, re-seq of a one-letter pattern and of two groups and re-split
    over 16 MiB end in memory_exceeded, and the process's peak stays near the limit."""
    import ptc

    s = ptc.Session(
        data={"s": "a" * (16 * MiB)}, limits={"max_memory": 64 * MiB, "timeout_ms": 10_000}
    )
    for program in (
        f"(count (re-seq {_p('a')} data/s))",
        f"(count (re-seq {_p('(a)(a)')} data/s))",
        f"(count (re-split {_p('a')} data/s))",
    ):
        r = s.run(program)
        assert r.error is not None and r.error.type == "memory_exceeded", (program, r)


@case(seconds=30, memory_mb=300)
def case_patterns_the_engine_refuses_are_typed_errors(tmp: Path) -> None:
    """Look-around, back-references, an incomplete escape, and a pattern whose compiled form is
    too large (``\\w{40}``, nested repeats): each an execution error at once."""
    import ptc

    for pattern, says in [
        ("(?<=a)b", "look-around"),
        ("(a)\\\\1", "backreferences"),
        ("\\\\", "incomplete escape"),
        ("\\\\w{40}", "too complex"),
        ("((a{100}){100}){100}", "too complex"),
    ]:
        started = time.monotonic()
        r = ptc.run(f'(re-find {_p(pattern)} "ab")')
        assert r.error is not None and says in r.error.message.lower(), (pattern, r)
        assert time.monotonic() - started < 0.5, pattern


@case(seconds=30, memory_mb=400)
def case_an_alternation_that_explodes_elsewhere_is_linear_here(tmp: Path) -> None:
    """``(a|aa)*b`` against 16 MiB of "a" (exponential for a backtracking engine): nil at
    once with re-matches and re-find."""
    import ptc

    s = ptc.Session(data={"s": "a" * (16 * MiB)}, limits={"timeout_ms": 2000})
    for fn in ("re-matches", "re-find"):
        started = time.monotonic()
        r = s.run(f"({fn} {_p('(a|aa)*b')} data/s)")
        assert (r.error, r.value) == (None, None), (fn, r)
        assert time.monotonic() - started < 1.0, fn


@case(seconds=30, memory_mb=600)
def case_regex_work_in_branches_meets_the_deadline(tmp: Path) -> None:
    """Four pmap branches each re-seq a group over 16 MiB, or re-split it: the run ends at its
    500 ms deadline (+20%, +150 ms)."""
    import ptc

    s = ptc.Session(data={"s": "a" * (16 * MiB)}, limits={"timeout_ms": 500})
    for body in (f"(count (re-seq {_p('(a)')} data/s))", f"(count (re-split {_p('(a)')} data/s))"):
        started = time.monotonic()
        r = s.run(f"(count (pmap (fn [_] {body}) (range 4)))")
        took = time.monotonic() - started
        assert r.error is not None and r.error.type in ("timeout", "memory_exceeded"), (body, r)
        assert took < 0.5 * 1.2 + 0.15, (body, took)


@case(seconds=30, memory_mb=400)
def case_compiling_patterns_in_a_loop_meets_the_deadline(tmp: Path) -> None:
    """A program that compiles a new pattern per item: with timeout_ms 100 it ran 2.2-2.5 s
    (1 s limit: 1.8 s). The hostile suite's bound: 1.2 x the limit + 150 ms."""
    import ptc

    for limit in (100, 1000):
        started = time.monotonic()
        r = ptc.Session(limits={"timeout_ms": limit}).run(COMPILE_LOOP)
        took = time.monotonic() - started
        assert r.error is not None and r.error.type == "timeout", r
        assert took < limit / 1000 * 1.2 + 0.15, f"{took:.2f} s against {limit} ms"


@case(seconds=30, memory_mb=400)
def case_cancel_while_compiling_patterns(tmp: Path) -> None:
    """cancel() 100 ms into the compile loop: Cancelled 2.1 s later (SAFETY.md: within
    milliseconds)."""
    import ptc

    s = ptc.Session(limits={"timeout_ms": 60_000})
    timer = threading.Timer(0.1, s.cancel)
    started = time.monotonic()
    timer.start()
    try:
        s.run(COMPILE_LOOP)
    except ptc.Cancelled:
        took = time.monotonic() - started - 0.1
        assert took < 0.2, f"Cancelled {took:.2f} s after cancel()"
    else:
        raise AssertionError("the run was not cancelled")


@case(seconds=30, memory_mb=400)
def case_ctrl_c_while_compiling_patterns(tmp: Path) -> None:
    """SIGINT 100 ms into the compile loop: KeyboardInterrupt at once, not seconds later."""
    import ptc

    s = ptc.Session(limits={"timeout_ms": 60_000})
    timer = threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        s.run(COMPILE_LOOP)
    except KeyboardInterrupt:
        took = time.monotonic() - started - 0.1
        assert took < 0.2, f"KeyboardInterrupt {took:.2f} s after the signal"
    else:
        raise AssertionError("the run was not interrupted")
