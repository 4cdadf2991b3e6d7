"""Resource limits and deep nesting: every limit triggered with a small setting, defaults that let
large inputs run, and hostile nesting that must end in a clear error, never a crash
(LANGUAGE.md §11, §10.2)."""

from __future__ import annotations

import time
from typing import Any

import ptc
import pytest

COUNTING_LOOP = "(loop [i 0] (if (< i 100000) (recur (inc i)) i))"
SIZE_ERRORS = {"execution_error", "memory_exceeded"}  # LANGUAGE.md §11: either is allowed


def _limit_error(source: str, limits: dict[str, int], **kw: Any) -> ptc.LispError:
    with pytest.raises(ptc.LimitError) as info:
        ptc.eval(source, limits=limits, **kw)
    return info.value


def test_fuel() -> None:
    """LANGUAGE.md §11: evaluation steps (fuel) ⇒ `execution_error` naming the limit."""
    err = _limit_error(COUNTING_LOOP, {"fuel": 1000})
    assert err.type == "execution_error"
    assert err.limit == "fuel"
    assert "fuel" in err.message


def test_fuel_is_deterministic() -> None:
    """LANGUAGE.md §1.6/§11: fuel is a deterministic bound: the same program stops the same way."""
    a = ptc.run(COUNTING_LOOP, limits={"fuel": 5000})
    b = ptc.run(COUNTING_LOOP, limits={"fuel": 5000})
    assert a.error is not None and b.error is not None
    assert a.error.to_dict() == b.error.to_dict()
    assert a.steps == b.steps


def test_timeout_with_a_slow_tool() -> None:
    """LANGUAGE.md §11: time spent inside host tools counts ⇒ `timeout`."""

    def slow() -> int:
        time.sleep(0.2)
        return 1

    err = _limit_error("(tool/slow) (tool/slow)", {"timeout_ms": 50}, tools=[slow])
    assert err.type == "timeout"
    assert err.limit == "timeout_ms"
    assert err.message == "execution exceeded 50ms limit"


def test_timeout_with_a_long_loop() -> None:
    """LANGUAGE.md §11: a long loop with a tiny wall-clock limit ⇒ `timeout`."""
    started = time.monotonic()
    err = _limit_error(
        "(loop [i 0] (recur (inc i)))",
        {"timeout_ms": 20, "loop_limit": 10**12, "fuel": 10**15},
    )
    assert err.type == "timeout"
    assert err.limit == "timeout_ms"
    assert err.message == "execution exceeded 20ms limit"
    assert time.monotonic() - started < 5.0


def test_max_depth() -> None:
    """LANGUAGE.md §11: call depth ⇒ `execution_error` (or `memory_exceeded`), never a crash."""
    err = _limit_error(
        "(defn down [n] (if (= n 0) 0 (inc (down (dec n))))) (down 100)", {"max_depth": 10}
    )
    assert err.type in SIZE_ERRORS
    assert err.limit == "max_depth"


def test_deep_recursion_under_default_limits_is_an_error_not_a_crash() -> None:
    """LANGUAGE.md §11: unbounded recursion ends in a clear error under the defaults."""
    r = ptc.run("(defn down [n] (inc (down n))) (down 1)")
    assert r.error is not None
    assert r.error.limit == "max_depth"


def test_max_collection_size() -> None:
    """LANGUAGE.md §11: collection size ⇒ `execution_error` (or `memory_exceeded`)."""
    err = _limit_error("(count (range 1000000))", {"max_collection_size": 1000})
    assert err.type in SIZE_ERRORS
    assert err.limit == "max_collection_size"


def test_max_string_size() -> None:
    """LANGUAGE.md §11: string size ⇒ `execution_error` (or `memory_exceeded`)."""
    err = _limit_error("(count (str (range 100000)))", {"max_string_size": 1000})
    assert err.type in SIZE_ERRORS
    assert err.limit == "max_string_size"


def test_max_output() -> None:
    """LANGUAGE.md §11: println output is bounded ⇒ an error naming `max_output`."""
    r = ptc.run('(doseq [i (range 1000)] (println "line" i))', limits={"max_output": 100})
    assert r.error is not None
    assert isinstance(r.error, ptc.LimitError)
    assert r.error.type == "execution_error"
    assert r.error.limit == "max_output"
    assert 0 < len(r.prints) < 1000
    assert r.prints[0] == "line 0"


def test_loop_limit() -> None:
    """LANGUAGE.md §5.11/§11: the recur/doseq iteration budget ⇒ `loop_limit_exceeded`."""
    err = _limit_error(COUNTING_LOOP, {"loop_limit": 10})
    assert err.type == "loop_limit_exceeded"
    assert err.limit == "loop_limit"


def test_doseq_counts_against_the_loop_limit() -> None:
    """LANGUAGE.md §5.12: each doseq element consumes one unit of the iteration budget."""
    err = _limit_error("(doseq [i (range 100)] i)", {"loop_limit": 10})
    assert err.type == "loop_limit_exceeded"
    assert err.limit == "loop_limit"


def test_max_nesting() -> None:
    """LANGUAGE.md §11: reader nesting depth is bounded; too deep is a parse error naming
    `max_nesting`."""
    r = ptc.run("((((((((((1))))))))))", limits={"max_nesting": 5})
    assert r.error is not None
    assert r.error.type == "parse_error"
    assert r.error.limit == "max_nesting"
    assert r.error.line == 1
    assert isinstance(r.error.column, int)
    assert ptc.eval("[[[1]]]", limits={"max_nesting": 5}) == [[[1]]]


def test_max_symbols() -> None:
    """LANGUAGE.md §10.2/§11: too many distinct symbols and keywords ⇒ `symbol_limit_exceeded`,
    found during analysis (nothing runs)."""
    calls: list[int] = []
    defs = " ".join(f"(def v{i} {i})" for i in range(50))
    r = ptc.run(f"(tool/log 1) {defs}", tools={"log": calls.append}, limits={"max_symbols": 10})
    assert r.error is not None
    assert isinstance(r.error, ptc.LimitError)
    assert r.error.type == "symbol_limit_exceeded"
    assert r.error.limit == "max_symbols"
    assert calls == []


def test_core_forms_operators_and_else_do_not_count_as_symbols() -> None:
    """LANGUAGE.md §11: core forms, operators and `:else` are not counted; `a`, `b`, `:x` are."""
    source = "(def a 1) (def b 2) (cond (= a b) :x :else (+ a b))"
    assert ptc.run(source, limits={"max_symbols": 3}).value == 3
    r = ptc.run(source, limits={"max_symbols": 2})
    assert r.error is not None
    assert r.error.type == "symbol_limit_exceeded"


def test_limits_accept_a_limits_object_and_per_run_overrides() -> None:
    """LANGUAGE.md §11: every limit is settable per session and per run."""
    assert ptc.run(COUNTING_LOOP, limits=ptc.Limits(fuel=1000)).error is not None
    s = ptc.Session(limits={"fuel": 1000})
    r = s.run(COUNTING_LOOP)
    assert r.error is not None and r.error.limit == "fuel"
    r = s.run(COUNTING_LOOP, limits={"fuel": 10**9})
    assert r.error is None
    assert r.value == 100000
    assert s.run(COUNTING_LOOP).error is not None


def test_defaults_let_large_inputs_run() -> None:
    """LANGUAGE.md §11: default limits let a filter/map/reduce over 200,000 records run."""
    records = [
        {"id": i, "amount": i % 100, "status": "ok" if i % 3 else "bad"} for i in range(200_000)
    ]
    expected = sum(r["amount"] for r in records if r["status"] == "ok")
    r = ptc.run(
        '(reduce + 0 (map :amount (filter (fn [o] (= (:status o) "ok")) data/orders)))',
        data={"orders": records},
    )
    assert r.error is None
    assert r.value == expected


# ---- deep nesting ------------------------------------------------------------------------


@pytest.mark.timeout(30)
def test_100k_nested_brackets_is_a_parse_error_with_position() -> None:
    """LANGUAGE.md §10.1/§11: 100,000 nested `[` in program text is a ParseError with line and
    column, not a crash."""
    with pytest.raises(ptc.ParseError) as info:
        ptc.eval("[" * 100_000)
    assert info.value.type == "parse_error"
    assert info.value.line == 1
    assert isinstance(info.value.column, int)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("source", ["(" * 100_000, "(" * 100_000 + ")" * 100_000, "{:a " * 50_000])
def test_100k_nested_parens_is_a_parse_error(source: str) -> None:
    """LANGUAGE.md §11: deeply nested program text is a parse error, never a host crash."""
    r = ptc.run(source)
    assert r.error is not None
    assert r.error.type == "parse_error"
    assert r.error.line == 1


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_deeply_nested_input_data_is_a_type_error(kind: str) -> None:
    """LANGUAGE.md §11 / ARCHITECTURE "never crash the host": input nested 5,000 levels deep is a
    clear TypeError naming the path, not a crash or RecursionError."""
    value: Any = []
    for _ in range(5000):
        value = [value] if kind == "list" else {"a": value}
    with pytest.raises(TypeError) as info:
        ptc.run("1", data={"x": value})
    assert type(info.value) is TypeError
    message = str(info.value)
    assert message.startswith("data.x[0][0]" if kind == "list" else "data.x.a.a")
    assert "nested" in message or "deep" in message


DEEP_VECTOR = "(loop [i 0 v []] (if (< i 200000) (recur (inc i) [v]) v))"


@pytest.mark.timeout(60)
def test_program_built_deep_vector_count() -> None:
    """LANGUAGE.md §11: a 200,000-deep vector built with loop/recur can be counted."""
    r = ptc.run(f"(count {DEEP_VECTOR})")
    assert r.error is None
    assert r.value == 1


@pytest.mark.timeout(60)
def test_program_built_deep_vector_dropped() -> None:
    """LANGUAGE.md §11: dropping a 200,000-deep vector does not crash (no recursive drop)."""
    r = ptc.run(f"{DEEP_VECTOR} :done")
    assert r.error is None
    assert r.value == "done"
    s = ptc.Session()
    assert s.run(f"(def deep {DEEP_VECTOR}) (def deep 1) 2").value == 2
    del s
    assert ptc.eval("(+ 1 1)") == 2
