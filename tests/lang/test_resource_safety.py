"""Resource safety (LANGUAGE.md §11, §12, §7.11 safety): hostile or careless programs end in a
limit or a clear error quickly — never a hang, an out-of-memory or a crash of the host.

Programs that could hang, exhaust memory or crash run in a worker Python process with a capped
address space, so a runaway allocation or a crash fails the one test instead of the machine or
the test run; the worker reports the outcome, its duration and its peak memory as JSON.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import ptc
import pytest

# Child-side address-space cap: far above what any program here needs under the limits of §11
# (256 MB of values), far below the machine's memory.
ADDRESS_SPACE_BYTES = 3 * 1024**3
# A run that is still busy after this many seconds is a hang (the default wall-clock limit of a
# run is 5 s, §11).
HANG_SECONDS = 6.5
# Growth of resident memory one run may cause: the 256 MB of values of §11 plus generous room
# for temporary working memory; gigabytes mean the run was not bounded.
PEAK_GROWTH_MB = 1024

# The worker runs one job per stdin line and answers one JSON line per job.
WORKER = r"""
import json, resource, sys, time
cap = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
import ptc


def reset_peak():
    # Linux >= 4.0: writing 5 to clear_refs resets the peak resident set size (VmHWM).
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def status_mb(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def summary(value):
    try:
        return repr(value)[:300]
    except RecursionError:
        return "<too deep to repr>"


out = sys.stdout.buffer
out.write(b"ready\n"); out.flush()
for line in sys.stdin.buffer:
    job = json.loads(line)
    data = job["data"]
    if job.get("big_string"):
        char, n = job["big_string"]
        data["s"] = char * n
    per_job = reset_peak()
    rss_before = status_mb("VmRSS") if per_job else 0.0
    started = time.monotonic()
    r = ptc.run(job["src"], data=data, limits=job["limits"])
    seconds = time.monotonic() - started
    e = r.error
    answer = {
        "type": e.type if e else None,
        "message": e.message if e else None,
        "limit": e.limit if e else None,
        "seconds": seconds,
        "growth_mb": status_mb("VmHWM") - rss_before,
        "per_job_peak": per_job,
        "nprints": len(r.prints),
        "print_lengths": [len(p) for p in r.prints[:5]],
        "value": summary(r.value),
    }
    del r, data
    out.write(json.dumps(answer).encode() + b"\n"); out.flush()
"""


class Worker:
    """A child Python process that runs programs one at a time. A hang or a crash fails the
    current test and the next job gets a fresh worker."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.buffer = b""

    def _start(self) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, "-c", WORKER, str(ADDRESS_SPACE_BYTES)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.proc, self.buffer = proc, b""
        assert self._read_line(30.0) == b"ready", "the worker did not start"
        return proc

    def stop(self) -> str:
        """Kills the worker; returns what it wrote to stderr."""
        proc, self.proc = self.proc, None
        if proc is None:
            return ""
        if proc.poll() is None:
            proc.kill()
        try:
            _, stderr = proc.communicate(timeout=5)
        except (subprocess.TimeoutExpired, ValueError, OSError):
            stderr = b""
        return stderr.decode(errors="replace")[-2000:]

    def _read_line(self, timeout: float) -> bytes | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None  # the worker exited
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def run(self, job: dict[str, Any]) -> dict[str, Any]:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        assert proc.stdin is not None
        started = time.monotonic()
        try:
            proc.stdin.write(json.dumps(job).encode() + b"\n")
            proc.stdin.flush()
            line = self._read_line(HANG_SECONDS)
        except TimeoutError:
            self.stop()
            pytest.fail(f"the run did not end within {HANG_SECONDS}s (hang): {job['src'][:100]}")
        except BrokenPipeError:
            line = None
        if line is None:
            code = proc.wait(timeout=5)
            stderr = self.stop()
            pytest.fail(
                f"the host process crashed (exit {code}) after "
                f"{time.monotonic() - started:.1f}s: {stderr}"
            )
        out: dict[str, Any] = json.loads(line)
        if not out["per_job_peak"]:
            self.stop()  # the peak cannot be reset here: one worker per job
        if out["growth_mb"] >= PEAK_GROWTH_MB:
            self.stop()
            pytest.fail(f"the run grew memory by {out['growth_mb']:.0f} MB: {job['src'][:100]}")
        return out


_WORKER = Worker()


@pytest.fixture(scope="module", autouse=True)
def _stop_worker() -> Iterator[None]:
    yield
    _WORKER.stop()


def run_isolated(
    src: str,
    limits: dict[str, int] | None = None,
    data: dict[str, Any] | None = None,
    big_string: tuple[str, int] | None = None,
) -> dict[str, Any]:
    """Runs ``src`` in the worker process; fails the test on a hang, a crash or high memory."""
    return _WORKER.run({"src": src, "limits": limits, "data": data or {}, "big_string": big_string})


def run_here(src: str, limits: dict[str, int] | None = None) -> ptc.Result:
    """Runs a program that cannot hurt the test process (immediate errors)."""
    return ptc.run(src, limits=limits)


LIMIT_ERRORS = {"memory_exceeded", "execution_error", "timeout", "loop_limit_exceeded"}
SIZE_ERRORS = {"memory_exceeded", "execution_error"}  # §11: either, never a host crash


# --------------------------------------------------------------------------- infinite sequences


def test_range_without_arguments() -> None:
    """§7.4/§12: `(range)` has no 0-arity form ⇒ arity_error (no infinite sequence)."""
    r = run_here("(range)")
    assert r.error is not None and r.error.type == "arity_error", r.error


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "src",
    [
        "(count (range 1e12))",
        "(count (range 0 1e18))",
        "(first (range 0 1e18 0.5))",
        "(last (range 9223372036854775807))",
    ],
)
def test_huge_range(src: str) -> None:
    """§11: a range far beyond the collection-size limit ends in a size error at once, without
    allocating it."""
    out = run_isolated(src)
    assert out["type"] in SIZE_ERRORS, out
    assert out["seconds"] < 3, out


@pytest.mark.parametrize(
    ("src", "kinds"),
    [
        ('(repeat 1e9 "x")', {"undefined_variable"}),
        ("(count (iterate inc 0))", {"undefined_variable", "analysis_error"}),
        ("(cycle [1 2])", {"undefined_variable", "analysis_error"}),
        ("(repeatedly #(+ 1 2))", {"undefined_variable", "analysis_error"}),
        ("(lazy-seq [1])", {"undefined_variable", "analysis_error"}),
    ],
)
def test_lazy_sequence_functions_do_not_exist(src: str, kinds: set[str]) -> None:
    """§12: repeat / iterate / cycle / repeatedly / lazy-seq are not in the language."""
    r = run_here(src)
    assert r.error is not None and r.error.type in kinds, r.error


# --------------------------------------------------------------------------- string blow-up


@pytest.mark.timeout(10)
def test_apply_str_over_ten_million_numbers() -> None:
    """§11: `(apply str (range 10000000))` under default limits ends in a limit error, or
    completes, quickly and within memory — never a hang or OOM."""
    out = run_isolated("(count (apply str (range 10000000)))")
    if out["type"] is not None:
        assert out["type"] in LIMIT_ERRORS, out


@pytest.mark.timeout(10)
def test_doubling_string_ends_in_a_limit() -> None:
    """§11: a string doubled in a loop ⇒ a size/memory limit error within a few steps."""
    out = run_isolated('(count (loop [s "x" i 0] (if (< i 200) (recur (str s s) (inc i)) s)))')
    assert out["type"] in LIMIT_ERRORS, out
    assert out["seconds"] < 3, out


@pytest.mark.timeout(10)
def test_reduce_str_blow_up_ends_in_a_limit() -> None:
    """§11: `(reduce str "" (range 10000000))` (quadratic string building) ends in a limit
    error — string size, memory, fuel or the wall-clock limit, which also bounds the time
    spent inside builtins — close to timeout_ms at the latest."""
    out = run_isolated('(count (reduce str "" (range 10000000)))', limits={"timeout_ms": 1500})
    assert out["type"] in LIMIT_ERRORS, out
    assert out["seconds"] < 4, out


# --------------------------------------------------------------------------- recursion / loops


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "src",
    [
        "(defn f [n] (+ 1 (f n))) (f 1)",
        "(defn a [n] (b n)) (defn b [n] (a n)) (a 1)",
        "(defn deep [n] (map deep [n])) (deep 1)",
        "(defn k [n] (pmap k [n])) (k 1)",
    ],
)
def test_deep_recursion_hits_the_call_depth_limit(src: str) -> None:
    """§5.9/§11: unbounded recursion through defn ends in the call-depth limit error
    (execution_error), never a stack overflow of the host."""
    out = run_isolated(src)
    assert out["type"] in {"execution_error", "memory_exceeded"}, out
    assert "depth" in (out["message"] or "") or out["limit"] == "max_depth", out


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "src", ["(loop [] (recur))", "(doseq [a (range 2000) b (range 2000)] nil)"]
)
def test_endless_loop_hits_the_iteration_budget(src: str) -> None:
    """§5.11/§5.12/§11: each recur / doseq element consumes the iteration budget
    (1,000,000) ⇒ loop_limit_exceeded."""
    out = run_isolated(src)
    assert out["type"] == "loop_limit_exceeded", out


def test_small_loop_limit_is_honoured() -> None:
    """§11: the iteration budget is configurable per run."""
    r = run_here("(loop [i 0] (if (< i 500) (recur (inc i)) i))", limits={"loop_limit": 100})
    assert r.error is not None and r.error.type == "loop_limit_exceeded", r.error


# --------------------------------------------------------------------------- deep values


DEEP_VECTOR = "(loop [i 0 v []] (if (< i 1000000) (recur (inc i) (vector v)) v))"
DEEP_MAP = "(loop [i 0 m {}] (if (< i 1000000) (recur (inc i) {:a m}) m))"


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        (
            f"(let [v {DEEP_VECTOR}] [(= v v) (count (set [v v])) (count (flatten v))])",
            "[True, 1, 0]",
        ),
        (f"(let [v {DEEP_VECTOR}] (count (str v)))", "2000002"),
        (f"(let [m {DEEP_MAP}] (count (str m)))", "5000002"),
        (f"(let [v {DEEP_VECTOR}] (println v) 1)", "1"),
        (DEEP_VECTOR, None),
    ],
)
def test_million_level_nesting_does_not_crash(src: str, expected: str | None) -> None:
    """§11: building a value nested 1,000,000 levels deep with loop/recur, then comparing,
    hashing, flattening, printing or returning it ends with the right value or a clear limit
    error — never a stack overflow of the host, never silently shortened text (§7.9: `str`
    is the printer form, unlimited)."""
    out = run_isolated(src)
    if out["type"] is not None:
        assert out["type"] in LIMIT_ERRORS, out
    elif expected is not None:
        assert out["value"] == expected, out


@pytest.mark.timeout(10)
def test_deeply_nested_program_text() -> None:
    """§11: reader nesting depth is limited ⇒ a parse/limit error, never a crash."""
    out = run_isolated("(inc " * 100000 + "1" + ")" * 100000)
    assert out["type"] in {"parse_error", "execution_error"}, out


# --------------------------------------------------------------------------- huge structures

SHARED = (
    "(let [v (vec (range 1000000)) w [v v v v v v v v v v] x [w w w w w w w w w w]"
    " y [x x x x x x x x x x]] {body})"
)


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "body", ["(count (str y))", '(count (join "," y))', "(println y)", "(count (flatten y))"]
)
def test_operations_on_a_huge_shared_structure(body: str) -> None:
    """§11: a value of 10^9 logical elements built by sharing (cheap to build) must not be
    expanded without bound: `str`, `join`, `println`, `flatten` end in a size limit error (or,
    for println, a cut line) quickly and within memory."""
    out = run_isolated(SHARED.format(body=body))
    if body.startswith("(println"):
        if out["type"] is None:
            assert out["print_lengths"] == [2003], out  # 2,000 characters + "..."
        assert out["seconds"] < 5, out
    else:
        assert out["type"] in SIZE_ERRORS | {"timeout"}, out


@pytest.mark.timeout(10)
def test_frequencies_under_a_small_collection_limit() -> None:
    """§11: every limit is settable per run; `(frequencies (range 2000000))` under a small
    max_collection_size ⇒ a size error."""
    out = run_isolated(
        "(count (frequencies (range 2000000)))", limits={"max_collection_size": 100000}
    )
    assert out["type"] in SIZE_ERRORS, out
    assert out["limit"] == "max_collection_size", out


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "src",
    [
        "(count (frequencies (map (fn [i] [i]) (range 300000))))",
        "(count (group-by identity (range 300000)))",
        "(count (reduce (fn [m i] (assoc m i i)) {} (range 300000)))",
    ],
)
def test_collection_builders_respect_the_size_limit(src: str) -> None:
    """§11: maps, sets and vectors built step by step are bounded by max_collection_size."""
    out = run_isolated(src, limits={"max_collection_size": 100000})
    assert out["type"] in SIZE_ERRORS, out


# --------------------------------------------------------------------------- regex


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    ("pattern", "char"), [("(a|a)*b", "a"), ("(x+x+)+y", "x"), ("^(a+)+$", "a")]
)
def test_regex_on_a_five_million_character_string(pattern: str, char: str) -> None:
    """§7.11 safety: matching is linear-time, so pathological patterns over a 5,000,000
    character subject complete quickly (the whole input is searched)."""
    src = (
        f'(let [re (re-pattern "{pattern}")]'
        f" [(some? (re-find re data/s)) (count (re-seq re (subs data/s 0 100000)))])"
    )
    out = run_isolated(src, big_string=(char, 5_000_000))
    assert out["type"] is None, out
    assert out["seconds"] < 5, out


@pytest.mark.parametrize("pattern", ["a" * 257, "(?:ab)" * 50])
def test_regex_pattern_over_256_bytes(pattern: str) -> None:
    """§7.11/§11: a pattern over 256 bytes ⇒ execution_error."""
    r = run_here(f'(re-pattern "{pattern}")')
    assert r.error is not None and r.error.type == "execution_error", r.error


# --------------------------------------------------------------------------- output


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "src",
    [
        '(loop [i 0] (println "xxxxxxxxxxxxxxxxxxxx") (recur (inc i)))',
        "(loop [i 0] (println (vec (range 300))) (recur (inc i)))",
    ],
)
def test_println_in_a_tight_loop(src: str) -> None:
    """§11: println output is bounded (max_output) ⇒ a limit error, quickly."""
    out = run_isolated(src)
    assert out["type"] in LIMIT_ERRORS, out
    assert out["seconds"] < 5, out


def test_small_max_output() -> None:
    """§11: max_output is settable per run and names the limit."""
    r = run_here('(doseq [i (range 100)] (println "0123456789"))', limits={"max_output": 200})
    assert r.error is not None and r.error.type in LIMIT_ERRORS, r.error
    assert r.error.limit == "max_output"


@pytest.mark.timeout(10)
def test_long_println_line_is_cut() -> None:
    """§9.3: a single println of a 20 MB string is one entry cut to 2,000 characters + `...`."""
    out = run_isolated(
        '(let [s (apply str (map (fn [_] "ab") (range 10000000)))] (println s) (count s))'
    )
    if out["type"] is None:
        assert out["print_lengths"] == [2003], out
    else:
        assert out["type"] in LIMIT_ERRORS, out


# --------------------------------------------------------------------------- time


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "src",
    [
        "(loop [i 0] (if (< i 100000000) (recur (inc i)) i))",
        "(sort (map (fn [i] (mod (* i 7919) 10007)) (range 5000000)))",
    ],
)
def test_wall_clock_limit(src: str) -> None:
    """§11: a long computation stops near timeout_ms (or earlier on another limit)."""
    out = run_isolated(src, limits={"timeout_ms": 300, "loop_limit": 10**9})
    assert out["type"] in LIMIT_ERRORS, out
    assert out["seconds"] < 3, out
