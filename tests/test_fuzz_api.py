"""Fuzzing through the public Python API: programs x data x limits x tools.

Random PTC-Lisp programs from a grammar biased to what a hostile LLM writes (deep loops,
shared ``[x x]`` doubling, long threading chains, many ``cond`` clauses, nested ``pmap``, big
ranges, string blow-ups, long paths, recursion, tool calls), random JSON-like data (deep, wide,
odd keys and numbers), small random limits and tools that echo, raise, sleep or return odd
values. The property: ``ptc.run`` / ``Session.run`` return a ``Result`` (never raise anything
but the documented exceptions, never end in ``internal_error``), within a generous bound of
their timeout, and never crash the process.

The examples run in a child process (this file run as a script) with a 3 GiB address-space cap
and a per-example watchdog, so a native crash, a hang or a memory blow-up fails this test with
the offending example instead of killing pytest. Hypothesis uses a fixed seed.

- ``PTC_FUZZ_EXAMPLES`` (default 300): number of examples; raise it for long runs.
- ``PTC_FUZZ_SEED``: another seed. ``PTC_FUZZ_SHRINK=1``: shrink failures (slower).
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = int(os.environ.get("PTC_FUZZ_EXAMPLES", "300"))
SEED = int(os.environ.get("PTC_FUZZ_SEED", "20260526"))
ADDRESS_SPACE = 3 * 1024**3
#: One example (at most 3 runs plus tool sleeps) taking longer than this is a hang.
EXAMPLE_WATCHDOG_S = 60.0


# --------------------------------------------------------------------------------------------
# The pytest side
# --------------------------------------------------------------------------------------------


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def test_public_api_fuzz(tmp_path: Path) -> None:
    last = tmp_path / "last-example.txt"
    env = dict(os.environ)
    env.update(
        PTC_FUZZ_LAST=str(last),
        PTC_FUZZ_EXAMPLES=str(EXAMPLES),
        PTC_FUZZ_SEED=str(SEED),
        PYTHONFAULTHANDLER="1",
    )
    overall = max(240.0, EXAMPLES * 1.0)
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, __file__, "--worker"],
            env=env,
            capture_output=True,
            text=True,
            timeout=overall,
            preexec_fn=_cap_address_space,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        example = last.read_text() if last.exists() else "?"
        pytest.fail(f"the fuzz worker hung (> {overall:.0f} s); last example:\n{example}\n{e}")
    took = time.monotonic() - started
    if proc.returncode != 0:
        rc = proc.returncode
        how = f"killed by signal {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
        example = last.read_text() if last.exists() else "?"
        pytest.fail(
            f"the fuzz worker failed ({how}) after {took:.1f} s.\n"
            f"--- last example ---\n{example[:4000]}\n"
            f"--- stdout (tail) ---\n{proc.stdout[-4000:]}\n"
            f"--- stderr (tail) ---\n{proc.stderr[-6000:]}"
        )
    assert f"FUZZ-DONE {EXAMPLES}" in proc.stdout, proc.stdout[-2000:]


# --------------------------------------------------------------------------------------------
# The worker side (run as a script; imports ptc and hypothesis only here)
# --------------------------------------------------------------------------------------------

INTS = [0, 1, -1, 2, 7, 100, 65536, 2**31, 2**63 - 1, -(2**63), 2**62]
INT_LITS = [str(i) for i in INTS]
FLOAT_LITS = ["0.0", "-0.0", "1.5", "1e308", "5e-324", "Double/NaN", "Double/POSITIVE_INFINITY"]
STR_LITS = [
    '""',
    '"a"',
    '"ab,c,"',
    '"é"',
    '"e\u0301\u0301"',
    '"🇸🇪👨‍👩‍👧"',
    '"\\n\\t"',
    '"ß"',
    '"["',
    '"123"',
    '"_x"',
    '"\ufeff"',
]
WRAPS = [
    "[{x}]",
    "[{x} {x}]",
    "{{:a {x}}}",
    "#{{{x}}}",
    "{{{x} 1}}",
    "(conj [{x}] {x})",
    "(fn [] {x})",
    "(fn [y] ({x} y))",
    "(juxt {x})",
    "(fnil {x} 0)",
    "(str {x} {x})",
    "(conj {x} {i})",
    "(assoc {x} {i} {i})",
    "(vec (concat {x} {x}))",
    "(inc {x})",
    "(+ {x} {x})",
    "(assoc {{}} {i} {x})",
    "(pmap identity [{x}])",
    "(tool/echo {x})",
]
SEEDS = ["[]", "0", "{}", "#{}", '"ab"', "identity", "inc", "[1 2 3]", "data/x", "nil", ":k"]
CONSUMERS = [
    "{x}",
    "(= {x} {x})",
    "(compare {x} {x})",
    "(sort [{x} {x}])",
    "(set [{x} {x}])",
    "(frequencies [{x} {x}])",
    "(count (str {x}))",
    "(println {x})",
    "(flatten {x})",
    "(pmap identity [{x} {x}])",
    "(def saved {x})",
    "(return {x})",
    "(fail {x})",
    "({x} 1)",
    "(tool/echo {x})",
    '(join "," {x})',
    "(get-in {x} [0 0 0])",
    "(count {x})",
    "(distinct [{x} {x}])",
]
THREAD_STEPS = ["inc", "(+ 1)", "vector", "(conj 1)", "identity", "str", "(do)", "first"]
TOOLS_CALLS = [
    "(tool/echo 1 2)",
    "(tool/echo {:a-b 1 :c [1 2]})",
    "(tool/echo :k 1 :j 2)",
    '(tool/raise "x")',
    "(tool/slow 0.05)",
    "(tool/odd {kind})",
    "(tool/missing 1)",
    "(pmap #(tool/echo %) (range 8))",
    "(pcalls #(tool/slow 0.02) #(tool/odd {kind}))",
    '(tool/reenter "(+ 1 2)")',
    "(map tool/echo [1 2 3])",
    "(echo 1)",
    "(tool/echo data/x)",
]
ODD_KINDS = [
    '"nan"',
    '"bigint"',
    '"bytes"',
    '"object"',
    '"surrogate"',
    '"deep"',
    '"cycle"',
    '"wide"',
    '"huge-string"',
    '"set"',
    '"tuple-key"',
    '"generator"',
    '"bad-str"',
    '"none"',
]


def _fill(template: str, x: str, i: str = "i") -> str:
    return template.replace("{x}", x).replace("{i}", i).replace("{{", "{").replace("}}", "}")


def _odd_value(kind: str) -> Any:
    if kind == "nan":
        return [float("nan"), float("inf"), -0.0]
    if kind == "bigint":
        return 2**100
    if kind == "bytes":
        return b"\x00\xff"
    if kind == "object":
        return object()
    if kind == "surrogate":
        return "\ud800"
    if kind == "deep":
        v: Any = 1
        for _ in range(100_000):
            v = [v]
        return v
    if kind == "cycle":
        c: list[Any] = []
        c.append(c)
        return c
    if kind == "wide":
        return list(range(200_000))
    if kind == "huge-string":
        return "x" * 5_000_000
    if kind == "set":
        return {frozenset({1, 2}), (1, 2), None}
    if kind == "tuple-key":
        return {(1, 2): 3, None: 4, 1.5: 5}
    if kind == "generator":
        return (i for i in range(3))
    if kind == "bad-str":

        class Bad:
            def __str__(self) -> str:
                raise RuntimeError("no str")

            __repr__ = __str__

        return Bad()
    return None


def worker_main() -> None:
    import hypothesis
    import ptc
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st

    last_path = Path(os.environ["PTC_FUZZ_LAST"]) if "PTC_FUZZ_LAST" in os.environ else None
    shrink = os.environ.get("PTC_FUZZ_SHRINK") == "1"

    # ---- tools ------------------------------------------------------------------------------

    def echo(*args: Any, **kwargs: Any) -> Any:
        return {"args": list(args), "kwargs": kwargs}

    def raise_(*args: Any, **kwargs: Any) -> Any:
        kind = len(args) % 4
        if kind == 0:
            raise ValueError(f"tool failed on {args!r}")
        if kind == 1:
            raise RuntimeError("x" * 100_000)
        if kind == 2:
            raise RecursionError("deep")

        class Weird(Exception):
            def __str__(self) -> str:
                raise RuntimeError("no message either")

        raise Weird()

    def slow(seconds: Any = 0.05, *_: Any, **__: Any) -> Any:
        s = seconds if isinstance(seconds, (int, float)) and seconds == seconds else 0.05
        time.sleep(min(max(float(s), 0.0), 0.2))
        return "slept"

    def odd(kind: Any = "nan", *_: Any, **__: Any) -> Any:
        return _odd_value(str(kind))

    def reenter(src: Any = "(+ 1 2)", *_: Any, **__: Any) -> Any:
        r = ptc.run(str(src), limits={"timeout_ms": 100, "fuel": 100_000})
        return r.value if r.ok else str(r.error)

    tools = {"echo": echo, "raise": raise_, "slow": slow, "odd": odd, "reenter": reenter}
    max_tool_sleep = 0.2

    # ---- programs ---------------------------------------------------------------------------

    sizes = st.one_of(
        st.integers(0, 20),
        st.sampled_from([32, 60, 64, 100, 500, 1000, 10_000, 50_000, 100_000, 200_000, 10**6]),
    )
    atoms = st.one_of(
        st.sampled_from(INT_LITS + FLOAT_LITS + STR_LITS),
        st.sampled_from([":a", ":b", "nil", "true", "[1 2 3]", "{:a 1}", "#{1}", "data/x"]),
        st.sampled_from(["data/s", "data/_secret", "data/missing", "*1", "saved"]),
    )

    @st.composite
    def deep_loop(draw: Any) -> str:
        n = draw(sizes)
        wrap = draw(st.sampled_from(WRAPS))
        seed = draw(st.sampled_from(SEEDS))
        consume = draw(st.sampled_from(CONSUMERS))
        return (
            f"(loop [x {seed} i 0] (if (< i {n}) (recur {_fill(wrap, 'x')} (inc i)) "
            f"{_fill(consume, 'x')}))"
        )

    @st.composite
    def two_deep(draw: Any) -> str:
        n = draw(sizes)
        wrap = draw(st.sampled_from(WRAPS[:6]))
        op = draw(st.sampled_from(["=", "compare", "not=", "(fn [a b] (set [a b]))"]))
        build = f"(loop [x [] i 0] (if (< i {n}) (recur {_fill(wrap, 'x')} (inc i)) x))"
        return f"(let [a {build} b {build}] ({op} a b))"

    @st.composite
    def threading_macro(draw: Any) -> str:
        n = draw(st.sampled_from([1, 10, 100, 1000, 10_000, 50_000]))
        step = draw(st.sampled_from(THREAD_STEPS))
        arrow = draw(st.sampled_from(["->", "->>"]))
        seed = draw(st.sampled_from(["0", "[]", '"a"']))
        return f"({arrow} {seed} " + " ".join([step] * n) + ")"

    @st.composite
    def many_cond(draw: Any) -> str:
        n = draw(st.sampled_from([1, 10, 100, 1000, 10_000, 50_000]))
        clauses = " ".join(f"(= c {k}) {k}" for k in range(n))
        return f"(let [c {draw(atoms)}] (cond {clauses} :else c))"

    @st.composite
    def pmap_nest(draw: Any) -> str:
        depth = draw(st.integers(1, 5))
        width = draw(st.sampled_from([1, 2, 4, 8, 100]))
        inner = draw(st.one_of(atoms, deep_loop(), st.sampled_from(TOOLS_CALLS)))
        inner = inner.replace("{kind}", draw(st.sampled_from(ODD_KINDS)))
        for k in range(depth):
            if draw(st.booleans()):
                inner = f"(pmap (fn [p{k}] {inner}) (range {width}))"
            else:
                inner = f"(pcalls (fn [] {inner}) (fn [] {inner}))"
        return inner

    @st.composite
    def big_range(draw: Any) -> str:
        n = draw(st.sampled_from(["10", "1000000", "100000000", str(2**62), "-1"]))
        op = draw(
            st.sampled_from(
                ["count", "sort", "frequencies", "set", "(partial str)", "reverse", "distinct"]
            )
        )
        if op.startswith("("):
            return f"(apply str (range {n}))"
        return f"({op} (range {n}))"

    @st.composite
    def strings(draw: Any) -> str:
        n = draw(sizes)
        grow = draw(st.sampled_from(["(str s s)", '(str s "ab")', "(str [s])", "(upper-case s)"]))
        op = draw(
            st.sampled_from(
                [
                    "(count s)",
                    '(split s "")',
                    '(re-split (re-pattern "a*") s)',
                    "(println s)",
                    '(join "," (split s ""))',
                    "(reverse s)",
                    "s",
                ]
            )
        )
        seed = draw(st.sampled_from(STR_LITS))
        return f"(let [s (loop [s {seed} i 0] (if (< i {n}) (recur {grow} (inc i)) s))] {op})"

    @st.composite
    def paths(draw: Any) -> str:
        n = draw(sizes)
        key = draw(st.sampled_from(["i", ":a", '"a"', "0"]))
        op = draw(st.sampled_from(["(get-in m p)", "(update-in m p (fnil inc 0))", "(= m m)", "m"]))
        return f"(let [p (vec (map (fn [i] {key}) (range {n}))) m (assoc-in {{}} p 1)] {op})"

    @st.composite
    def recursion(draw: Any) -> str:
        n = draw(sizes)
        body = draw(st.sampled_from(["[(f (dec n))]", "(+ 1 (f (dec n)))", "(pmap f [(dec n)])"]))
        return f"(defn f [n] (if (<= n 0) 0 {body})) (f {n})"

    @st.composite
    def chain(draw: Any) -> str:
        n = draw(sizes)
        wrap = draw(st.sampled_from(["(fn [y] (f y))", "(juxt f)", "(fnil f 0)", "(all-of f)"]))
        end = draw(st.sampled_from(["(f 1)", "1", "f", "(str f)"]))
        return f"(loop [f identity i 0] (if (< i {n}) (recur {wrap} (inc i)) {end}))"

    @st.composite
    def tool_call(draw: Any) -> str:
        call = draw(st.sampled_from(TOOLS_CALLS))
        return call.replace("{kind}", draw(st.sampled_from(ODD_KINDS)))

    def call_of(children: Any) -> Any:
        fns = st.sampled_from(
            [
                "count", "first", "str", "vector", "conj", "into", "sort", "reverse", "+", "=",
                "get", "assoc", "merge", "frequencies", "flatten", "distinct", "println",
                "compare", "max", "keys", "vals", "set", "range", "take", "nth", "subs",
            ]
        )  # fmt: skip
        return st.builds(
            lambda f, args: f"({f} {' '.join(args)})", fns, st.lists(children, max_size=3)
        )

    def special_of(children: Any) -> Any:
        return st.one_of(
            st.builds(lambda a, b: f"(let [v {a}] {b})", children, children),
            st.builds(lambda a, b, c: f"(if {a} {b} {c})", children, children, children),
            st.builds(lambda a, b: f"(map (fn [v] {b}) {a})", children, children),
            st.builds(lambda a, b: f"[{a} {b}]", children, children),
            st.builds(lambda a: f"(-> {a} vector first)", children),
        )

    templates = st.one_of(
        deep_loop(),
        two_deep(),
        threading_macro(),
        many_cond(),
        pmap_nest(),
        big_range(),
        strings(),
        paths(),
        recursion(),
        chain(),
        tool_call(),
    )
    exprs = st.recursive(
        st.one_of(atoms, templates),
        lambda children: st.one_of(call_of(children), special_of(children)),
        max_leaves=6,
    )
    programs = st.one_of(
        st.lists(st.one_of(templates, exprs), min_size=1, max_size=3).map("\n".join),
        st.text(alphabet="()[]{}#\"\\:;'@^ abc019.-/%&\n", max_size=60),
    )

    # ---- data -------------------------------------------------------------------------------

    keys = st.one_of(
        st.sampled_from(["a", "b", "x", "_secret", "a b", "", ":a", "1", "ok?", "a-b", "a_b"]),
        st.text(max_size=5),
    )
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from(INTS),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=20),
        st.sampled_from(["e\u0301", "🇸🇪", "\x00", "\u2028", "ß"]),
    )
    json_like = st.recursive(
        scalars,
        lambda ch: st.one_of(
            st.lists(ch, max_size=5),
            st.dictionaries(keys, ch, max_size=5),
            st.lists(ch, max_size=3).map(tuple),
        ),
        max_leaves=20,
    )

    # Deep and wide values are drawn as a description and built in the test, so that
    # hypothesis never has to print (or shrink) a 5000-level structure.
    shapes = st.one_of(
        st.tuples(st.just("plain"), json_like),
        st.tuples(
            st.just("deep"),
            scalars,
            st.sampled_from([10, 100, 1000, 5000, 100_000]),
            st.sampled_from(["list", "dict"]),
        ),
        st.tuples(st.just("wide"), st.sampled_from([100, 10_000, 100_000])),
        st.tuples(st.just("odd"), st.sampled_from(["set", "tuple-key", "frozenset"])),
    )

    def build(shape: tuple[Any, ...]) -> Any:
        kind = shape[0]
        if kind == "plain":
            return shape[1]
        if kind == "deep":
            _, v, depth, wrap = shape
            for _ in range(depth):
                v = [v] if wrap == "list" else {"a": v}
            return v
        if kind == "wide":
            return [{"id": i, "v": str(i)} for i in range(shape[1])]
        return {"set": {1, 2, 3}, "tuple-key": {(1, 2): "t"}, "frozenset": {"s": frozenset("a")}}[
            shape[1]
        ]

    data_st = st.dictionaries(keys, shapes, max_size=4)

    def build_data(spec: dict[str, Any]) -> dict[str, Any]:
        data = {k: build(v) for k, v in spec.items()}
        data.setdefault("x", [1, 2])
        data["s"] = "a\x00b"
        return data

    # ---- limits -----------------------------------------------------------------------------

    limit_values = {
        "fuel": [0, 1, 1000, 100_000, 2_000_000],
        "timeout_ms": [0, 1, 10, 50, 200],  # drawn separately: always small
        "max_depth": [0, 1, 10, 100, 1000],
        "max_collection_size": [0, 1, 100, 10_000, 1_000_000],
        "max_string_size": [0, 1, 100, 1 << 20],
        "max_output": [0, 1, 100, 10_000],
        "max_memory": [0, 1 << 16, 1 << 20, 64 << 20],
        "loop_limit": [0, 1, 100, 10_000, 1_000_000],
        "max_nesting": [0, 1, 16, 512],
        "max_symbols": [0, 1, 100, 10_000],
    }
    limits_st = st.fixed_dictionaries(
        {"timeout_ms": st.sampled_from(limit_values["timeout_ms"])},
        optional={k: st.sampled_from(v) for k, v in limit_values.items() if k != "timeout_ms"},
    )

    # ---- the property -----------------------------------------------------------------------

    counter = {"n": 0, "slowest": 0.0}
    allowed_setup_errors = (TypeError, ValueError, OverflowError)

    def bound_s(limits: dict[str, int]) -> float:
        timeout = limits.get("timeout_ms", 5000) / 1000.0
        return max(5 * timeout, 1.0) + 2 * max_tool_sleep

    def check_result(r: Any, limits: dict[str, int], took: float, what: str) -> None:
        assert isinstance(r, ptc.Result), f"{what} returned {type(r).__name__}"
        if r.error is not None:
            assert isinstance(r.error, ptc.LispError), r.error
            assert not isinstance(r.error, ptc.InternalError), f"internal error: {r.error!r}"
            assert r.error.type != "internal_error", r.error
            assert not r.ok
        assert took <= bound_s(limits), f"{what} took {took:.2f} s with limits {limits}"
        # what a host does with a result
        ptc.to_clojure(r.value, 10, 512)
        for line in r.prints:
            assert isinstance(line, str)
        for call in r.tool_calls:
            assert isinstance(call, ptc.ToolCall)

    def record(example: dict[str, Any]) -> None:
        if last_path is None:
            return
        try:
            text = json.dumps(example, default=repr, indent=1)
        except (ValueError, RecursionError):
            text = repr(example)
        last_path.write_text(text[:200_000])

    watchdog: dict[str, Any] = {"deadline": None}

    def watch() -> None:
        while True:
            time.sleep(0.5)
            d = watchdog["deadline"]
            if d is not None and time.monotonic() > d:
                sys.stdout.write("FUZZ-HANG: an example ran past the watchdog\n")
                sys.stdout.flush()
                os._exit(3)

    threading.Thread(target=watch, daemon=True).start()

    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        phases=phases,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
    )
    @hypothesis.seed(SEED)
    @given(
        program=programs,
        program2=st.one_of(st.none(), programs),
        data_spec=data_st,
        limits=limits_st,
        mode=st.sampled_from(["run", "session", "json", "to_clojure"]),
        print_limits=st.tuples(
            st.sampled_from([None, 0, 1, 3, 10]), st.sampled_from([None, 0, 10, 512])
        ),
    )
    def one(
        program: str,
        program2: str | None,
        data_spec: dict[str, Any],
        limits: dict[str, int],
        mode: str,
        print_limits: tuple[int | None, int | None],
    ) -> None:
        counter["n"] += 1
        record(
            {
                "mode": mode,
                "program": program,
                "program2": program2,
                "limits": limits,
                "print_limits": print_limits,
                "data": data_spec,
            }
        )
        data = build_data(data_spec)
        watchdog["deadline"] = time.monotonic() + EXAMPLE_WATCHDOG_S
        started = time.monotonic()
        try:
            if mode == "to_clojure":
                try:
                    ptc.to_clojure(data, *print_limits)
                except allowed_setup_errors:
                    pass
                took = time.monotonic() - started
                assert took < 5.0, f"to_clojure took {took:.2f} s"
                r = ptc.run(program, data={"x": 1}, tools=tools, limits=limits)
                check_result(r, limits, time.monotonic() - started, "run")
                return
            if mode == "json":
                try:
                    text = json.dumps(data, allow_nan=True)
                except (TypeError, ValueError, RecursionError):
                    text = '{"x": [1, 2]}'
                try:
                    session = ptc.Session.from_json(text, tools=tools, limits=limits)
                except allowed_setup_errors:  # invalid or too deep JSON is refused
                    session = ptc.Session.from_json('{"x": 1}', tools=tools, limits=limits)
            else:
                try:
                    session = ptc.Session(data=data, tools=tools, limits=limits)
                except allowed_setup_errors:
                    session = ptc.Session(data={"x": 1}, tools=tools, limits=limits)
            for k, src in enumerate([program, program2] if mode != "run" else [program]):
                if src is None:
                    continue
                t0 = time.monotonic()
                r = session.run(src)
                check_result(r, limits, time.monotonic() - t0, f"run {k + 1}")
            if mode == "session":
                for d in session.definitions:
                    assert isinstance(d, ptc.Definition)
                for name in list(session.memory)[:3]:
                    session.describe(name)
        finally:
            watchdog["deadline"] = None
            counter["slowest"] = max(counter["slowest"], time.monotonic() - started)

    started = time.monotonic()
    one()
    print(
        f"FUZZ-DONE {EXAMPLES} examples ({counter['n']} calls) in "
        f"{time.monotonic() - started:.1f} s, slowest {counter['slowest']:.2f} s"
    )


if __name__ == "__main__" and "--worker" in sys.argv:
    worker_main()
