"""Child process of the hostile suite: runs ONE case and reports it as JSON.

Usage: ``python hostile_worker.py <address-space-bytes>`` with the job (one JSON object) on stdin.

Protocol on stdout, one line each:
  ``ready``            data, tools and program are built; the session is created next
  ``session``          the session exists (host data converted); the measured run starts now
  ``{...}``            the report (JSON): outcome, seconds, peak growth, checks
  ``dropped``          the result has been released (a crash before this is a crash on drop)

Only the run is measured: ``Session.run`` (time), plus the release of the session (its
definitions and the converted input; peak memory, and its own time bound),
including the conversion of the result to Python. The session (and the conversion of the host
data) is created just before the baseline, as input data does not count against the limits
(LANGUAGE.md §11). Wall time is ``time.monotonic`` around the run; peak growth is VmHWM after
the run minus VmRSS just before it, VmHWM having been reset through /proc/self/clear_refs.

The stderr of the child carries phase markers (``phase: ...``) so a crash can be located.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import resource
import sys
import time
from typing import Any

CAP = int(sys.argv[1]) if len(sys.argv) > 1 else 3 * 1024**3
resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash must not write gigabytes of core


def phase(name: str) -> None:
    sys.stderr.write(f"phase: {name}\n")
    sys.stderr.flush()


def import_ptc() -> Any:
    # The extension may be rebuilt while the suite runs: wait for it rather than fail the case.
    deadline = time.monotonic() + 120
    while True:
        try:
            import ptc

            return ptc
        except ImportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


# --------------------------------------------------------------------------- value builders


def deep_list(n: int, leaf: Any = 1) -> Any:
    v = leaf
    for _ in range(n):
        v = [v]
    return v


def deep_dict(n: int, leaf: Any = 1) -> Any:
    v = leaf
    for _ in range(n):
        v = {"a": v}
    return v


def shared_list(depth: int, leaf: Any = 1) -> Any:
    v: Any = [leaf]
    for _ in range(depth):
        v = [v, v]
    return v


def cyclic_list() -> Any:
    v: list[Any] = [1]
    v.append(v)
    return v


def permutation(n: int) -> list[int]:
    # 7919 is prime and does not divide 10**k: a fixed permutation of range(n) for such n
    return [(i * 7919) % n for i in range(n)]


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def build(spec: Any) -> Any:
    """A value from a JSON spec: ``{"$": name, ...args}`` builds, anything else is literal."""
    if isinstance(spec, dict) and "$" in spec:
        kind = spec["$"]
        if kind == "str":  # a string of n repetitions of unit, then an optional suffix
            return spec["unit"] * spec["n"] + spec.get("suffix", "")
        if kind == "deep_list":
            return deep_list(spec["n"], spec.get("leaf", 1))
        if kind == "deep_dict":
            return deep_dict(spec["n"], spec.get("leaf", 1))
        if kind == "shared_list":
            return shared_list(spec["depth"], spec.get("leaf", 1))
        if kind == "refs":  # a list of n references to ONE string of m characters
            s = "x" * spec["m"]
            return [s] * spec["n"]
        if kind == "range":
            return list(range(spec["n"]))
        if kind == "perm":
            return permutation(spec["n"])
        if kind == "cyclic":
            return cyclic_list()
        if kind == "big_int":
            return 10 ** spec["digits"]
        if kind == "letters":  # n pseudo-random lowercase letters (seeded: the same each run)
            import random

            return "".join(random.Random(spec.get("seed", 1)).choices(LETTERS, k=spec["n"]))
        raise ValueError(f"unknown value builder {kind!r}")
    if isinstance(spec, dict):
        return {k: build(v) for k, v in spec.items()}
    if isinstance(spec, list):
        return [build(v) for v in spec]
    return spec


# --------------------------------------------------------------------------- tool behaviours


def make_tool(spec: Any) -> Any:
    """A tool from the fixed set of behaviours: ``name`` or ``[name, arg...]``."""
    name, *args = spec if isinstance(spec, list) else [spec]
    if name == "echo":  # returns its first argument (or the named-argument map)

        def echo(*a: Any, **k: Any) -> Any:
            return a[0] if a else k

        return echo
    if name == "sleep":  # sleeps args[0] ms, returns the ms
        ms = args[0]

        def nap(*a: Any, **k: Any) -> Any:
            time.sleep(ms / 1000)
            return ms

        return nap
    if name == "value":  # returns the (pre-built, shared) value of a builder spec
        value = build(args[0])

        def constant(*a: Any, **k: Any) -> Any:
            return value

        return constant
    if name == "raise":  # raises the named exception class

        def boom(*a: Any, **k: Any) -> Any:
            exc = {
                "RuntimeError": RuntimeError,
                "MemoryError": MemoryError,
                "ValueError": ValueError,
            }[args[0]]
            raise exc("tool failed on purpose")

        return boom
    if name == "recurse":  # unbounded Python recursion inside the tool -> RecursionError

        def rec(*a: Any, **k: Any) -> Any:
            def f(n: int) -> int:
                return f(n + 1) + 1

            return f(0)

        return rec
    if name == "unsupported":  # returns a value with no PTC-Lisp counterpart
        kind = args[0]

        def odd(*a: Any, **k: Any) -> Any:
            if kind == "object":
                return object()
            if kind == "generator":
                return (i for i in range(3))
            if kind == "bytes":
                return b"\xff\xfe"
            if kind == "complex":
                return 1 + 2j
            raise ValueError(kind)

        return odd
    if name == "reenter":  # the tool itself runs a program (re-entrancy)
        src = args[0]

        def reenter(*a: Any, **k: Any) -> Any:
            import ptc

            return ptc.run(src).value

        return reenter
    raise ValueError(f"unknown tool behaviour {name!r}")


# --------------------------------------------------------------------------- program generators


def generate(spec: list[Any]) -> str:
    name, *a = spec
    if name == "repeat":  # prefix + body * n + suffix
        prefix, body, n, suffix = a
        return prefix + body * n + suffix
    if name == "nest":  # [prefix] + open * n + middle + close * n + [suffix]
        open_, n, middle, close, *around = a
        prefix, suffix = around if around else ("", "")
        return prefix + open_ * n + middle + close * n + suffix
    if name == "cond":  # (let [x n-1] (cond (= x 0) 0 ... (= x n-1) n-1 [:else -1]))
        n, target, with_else = a
        pairs = " ".join(f"(= x {i}) {i}" for i in range(n))
        tail = " :else -1" if with_else else ""
        return f"(let [x {target}] (cond {pairs}{tail}))"
    if name == "nested_fn":  # ((fn [x] ((fn [x] ... x) x)) 1), n levels
        (n,) = a
        return "(let [x 1] " + "((fn [x] " * n + "x" + ") x)" * n + ")"
    if name == "symbols":  # prefix + n distinct symbols/keywords + suffix
        prefix, fmt, n, suffix = a
        return prefix + " ".join(fmt.format(i) for i in range(n)) + suffix
    if name == "let_bindings":  # (let [s0 0 s1 1 ...] s{n-1})
        (n,) = a
        return "(let [" + " ".join(f"s{i} {i}" for i in range(n)) + f"] s{n - 1})"
    if name == "big":  # about `mb` megabytes of `unit`, between prefix and suffix
        prefix, unit, mb, suffix = a
        return prefix + unit * (mb * 1_000_000 // len(unit)) + suffix
    raise ValueError(f"unknown program generator {name!r}")


# --------------------------------------------------------------------------- bounded checks


def strict_eq(value: Any, expected: Any) -> bool:
    """Equality that tells True from 1 and 1 from 1.0; its depth is the expected value's."""
    if expected is None or isinstance(expected, bool):
        return value is expected
    if isinstance(expected, int):
        return type(value) is int and value == expected
    if isinstance(expected, float):
        return type(value) is float and (
            value == expected or (value != value and expected != expected)
        )
    if isinstance(expected, str):
        return isinstance(value, str) and value == expected
    if isinstance(expected, list):
        return (
            isinstance(value, list)
            and len(value) == len(expected)
            and all(strict_eq(v, e) for v, e in zip(value, expected, strict=True))
        )
    if isinstance(expected, dict):
        return (
            isinstance(value, dict)
            and len(value) == len(expected)
            and all(k in value and strict_eq(value[k], e) for k, e in expected.items())
        )
    raise ValueError(f"unsupported expected value {expected!r}")


def check(value: Any, spec: list[Any]) -> bool:
    """Bounded, iterative checks of a returned value (never repr or == on deep values)."""
    kind, *a = spec
    try:
        if kind == "any":
            return True
        if kind == "eq":
            return strict_eq(value, a[0])
        if kind == "len":
            return hasattr(value, "__len__") and len(value) == a[0]
        if kind == "str":  # a string of n characters, all equal to unit
            n, unit = a
            return isinstance(value, str) and len(value) == n and value[:1] == unit[:1]
        if kind == "deep":  # n levels of list / dict {"a": ...} / set, then leaf
            n, leaf, shape = a
            v = value
            for _ in range(n):
                if shape == "list":
                    if not (isinstance(v, list) and len(v) == 1):
                        return False
                    v = v[0]
                elif shape == "dict":
                    if not (isinstance(v, dict) and len(v) == 1 and "a" in v):
                        return False
                    v = v["a"]
                elif shape == "set":
                    if not (isinstance(v, (set, frozenset)) and len(v) == 1):
                        return False
                    v = next(iter(v))
                else:
                    return False
            return v == leaf
        if kind == "shared":  # depth levels of 2-element lists down the first path, then [leaf]
            depth, leaf = a
            v = value
            for _ in range(depth):
                if not (isinstance(v, list) and len(v) == 2):
                    return False
                v = v[0]
            return v == [leaf]
        if kind == "refs":  # n strings of m characters
            n, m = a
            return (
                isinstance(value, list)
                and len(value) == n
                and all(isinstance(s, str) and len(s) == m for s in value)
            )
        if kind == "nan":
            return value != value
    except Exception:
        return False
    raise ValueError(f"unknown check {kind!r}")


def summary(value: Any, budget: int = 300) -> str:
    """A short, bounded description of a value (iterative; never repr of the whole)."""
    out: list[str] = []
    size = 0
    stack: list[Any] = [value]
    depth = 0
    while stack and size < budget:
        v = stack.pop()
        if isinstance(v, str) and v in ("\x00]", "\x00}"):
            out.append(v[1])
            size += 1
            continue
        if isinstance(v, list):
            out.append("[")
            stack.append("\x00]")
            stack.extend(reversed(v[:5]))
            depth += 1
        elif isinstance(v, dict):
            out.append("{")
            stack.append("\x00}")
            for k, x in list(itertools.islice(v.items(), 3))[::-1]:
                stack.append(x)
                stack.append(str(k)[:20] + ":")
        elif isinstance(v, str):
            text = repr(v[:40]) + (f"...<{len(v)} chars>" if len(v) > 40 else "")
            out.append(text + " ")
        else:
            try:
                text = repr(v)[:60]
            except Exception:
                text = f"<{type(v).__name__}>"
            out.append(text + " ")
        size = sum(len(x) for x in out)
    return "".join(out)[:budget]


# --------------------------------------------------------------------------- measurement


def reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def main() -> None:
    job = json.loads(sys.stdin.read())
    out = sys.stdout
    phase("import")
    ptc = import_ptc()

    phase("build")
    src = generate(job["gen"]) if job.get("gen") else job["src"]
    data = build(job.get("data") or {})
    tools = {name: make_tool(spec) for name, spec in (job.get("tools") or {}).items()}
    limits = job.get("limits")
    checks = job.get("checks") or []

    core = os.stat(ptc._core.__file__)
    report: dict[str, Any] = {"src_chars": len(src), "core": f"{int(core.st_mtime)}:{core.st_size}"}
    gc.collect()
    out.write("ready\n")
    out.flush()

    phase("session")  # data conversion; limits are validated here
    session = None
    raised: BaseException | None = None
    try:
        session = ptc.Session(data=data, tools=tools, limits=limits)
    except BaseException as e:
        raised = e
        report["raised_at"] = "Session"
    out.write("session\n")  # the measured run starts now
    out.flush()

    r = None
    peak_ok = reset_peak()
    rss0 = status_kb("VmRSS")
    started = time.monotonic()
    released = started
    if session is not None:
        phase("run")
        try:
            r = session.run(src)
        except BaseException as e:
            raised = e
            report["raised_at"] = "run"
        released = time.monotonic()
        phase("release session")
        del session
    seconds = released - started
    report["release_seconds"] = time.monotonic() - released
    growth_mb = (status_kb("VmHWM") - rss0) / 1024 if peak_ok else None
    phase("report")

    report.update(seconds=seconds, growth_mb=growth_mb, peak_reset=peak_ok)
    if raised is not None:
        report.update(
            kind="raise",
            exc=[c.__name__ for c in type(raised).__mro__],
            message=str(raised)[:500],
        )
    elif r is not None:
        e = r.error
        if e is not None:
            report.update(kind="error", type=e.type, limit=e.limit, message=e.message[:500])
        else:
            report.update(kind="fail" if r.failed else "ok")
            report["value"] = summary(r.value)
            report["checks"] = [check(r.value, c) for c in checks]
        lens = [len(p) for p in r.prints]
        report["prints"] = {
            "count": len(lens),
            "first": lens[:5],
            "max": max(lens, default=0),
            "min": min(lens, default=0),
        }
    out.write(json.dumps(report) + "\n")
    out.flush()

    phase("drop result")
    del r
    gc.collect()
    out.write("dropped\n")
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
