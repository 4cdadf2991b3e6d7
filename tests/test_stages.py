"""Chains of map/filter/remove over data run as one pass (rust/eval/stages.rs). What a program
can observe must be what the calls as written give: values, the order of prints and tool calls,
which error comes first, and the fuel spent (`Result.steps`)."""

from __future__ import annotations

from typing import Any

import ptc

ORDERS = [
    {"id": 1, "status": "shipped", "total": 120.0, "customer": {"tier": "gold"}},
    {"id": 2, "status": "pending", "total": 80.0, "customer": {"tier": "silver"}},
    {"id": 3, "status": "shipped", "total": 40.5, "customer": {"tier": "gold"}},
    {"id": 4, "status": "shipped", "total": 300.0, "customer": None},
]


def run(program: str, **kw: Any) -> ptc.Result:
    return ptc.Session(data={"orders": ORDERS}, **kw).run(program)


def test_chains_over_records_give_the_values_of_the_calls_as_written() -> None:
    cases = {
        # shipped: 1, 3, 4; totals 120 + 40.5 + 300
        '(->> data/orders (filter #(= (:status %) "shipped")) (map :total) (reduce +))': 460.5,
        "(->> data/orders (filter #(> (:total %) 100)) (map :id))": [1, 4],
        "(->> data/orders (map :customer) (remove nil?) (map :tier))": ["gold", "silver", "gold"],
        "(->> data/orders (map #(:tier (:customer %))) (filter some?) count)": 3,
        '(->> data/orders (remove #(= "gold" (:tier (:customer %)))) (map :id))': [2, 4],
    }
    for program, expected in cases.items():
        r = run(program)
        assert r.error is None, (program, r.error)
        assert r.value == expected, program


def test_prints_and_tool_calls_come_in_the_order_written() -> None:
    seen: list[Any] = []

    def check(x: int) -> bool:
        seen.append(("check", x))
        return x % 2 == 1

    def label(x: int) -> str:
        seen.append(("label", x))
        return f"#{x}"

    r = run(
        "(->> data/orders (map :id) (filter #(tool/check %))"
        " (map #(do (println %) (tool/label %))))",
        tools={"check": check, "label": label},
    )
    assert r.error is None, r.error
    assert r.value == ["#1", "#3"]
    assert seen == [
        ("check", 1),
        ("check", 2),
        ("check", 3),
        ("check", 4),
        ("label", 1),
        ("label", 3),
    ]
    assert r.prints == ["1", "3"]
    assert [c.name for c in r.tool_calls] == ["check"] * 4 + ["label"] * 2


def test_the_first_error_is_the_one_the_calls_as_written_raise() -> None:
    # one pass would reach (mod 120.0 0) for order 1 before the filter's test fails on order
    # 4, whose customer is nil; as written the filter tests every order first
    r = run(
        "(->> data/orders (filter #(string? (upper-case (:tier (:customer %)))))"
        " (map #(mod (:total %) 0)))"
    )
    assert isinstance(r.error, ptc.LispTypeError), r.error
    assert str(r.error) == "upper-case expected a string, got nil"


def test_fuel_is_the_same_whether_the_pass_runs_or_is_refused() -> None:
    # the same work; one of them prints once (so the calls run as written), the other calls str
    program = (
        '(->> (range 500) (filter odd?) (map #(do (if (= % 399) ({f} "") nil) (* % 2)))'
        " (remove #(> % 900)) count)"
    )
    refused = ptc.run(program.replace("{f}", "println"))
    one_pass = ptc.run(program.replace("{f}", "str"))
    assert refused.prints == [""] and one_pass.prints == []
    # odd numbers below 500 doubled: 2..998 step 4; those up to 900: 2, 6, ..., 898 = 225
    assert refused.value == one_pass.value == 225
    assert refused.steps == one_pass.steps


# ---- differential: a chain against the same calls with the chain broken by `identity` ----
# (not `do`: the analyzer reduces `(do x)` to `x`)

STAGE_FNS = [
    ":a",
    "inc",
    "odd?",
    "nil?",
    "#(> (:a % 0) 1)",
    "#(+ 1 (:a %))",  # a type error on elements without :a
    "#(mod % 3)",  # a type error on maps and nil
    "#(mod % 0)",  # an arithmetic error on numbers
    '#(do (println "saw" %) %)',  # an effect on every element
    '(fn [x] (when (= x 2) (println "two")) x)',  # an effect on one element
    "(fn [x] (if (= x 4) (return [:early x]) x))",  # the run ends on one element
    "(fn [x] (* (or x 0) (or x 0)))",
    "#(if (map? %) (:a %) %)",
]


def _chain(stages: list[tuple[str, str]], source: str, broken: bool) -> str:
    src = source
    for i, (op, f) in enumerate(stages):
        inner = f"(identity {src})" if broken and i > 0 else src
        src = f"({op} {f} {inner})"
    return src


def _observed(r: ptc.Result) -> tuple[Any, ...]:
    e = r.error
    err = None if e is None else (type(e).__name__, e.message, e.hint)
    return (r.outcome, None if e is not None else repr(r.value), r.prints, err)


def test_chains_run_as_the_calls_as_written() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    element = st.one_of(
        st.integers(-3, 6).map(str),
        st.just("nil"),
        st.integers(-3, 6).map(lambda i: f"{{:a {i}}}"),
        st.just("{:b 1}"),
    )
    stage = st.tuples(st.sampled_from(["map", "filter", "remove"]), st.sampled_from(STAGE_FNS))

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(stage, min_size=2, max_size=4), st.lists(element, max_size=8))
    def check(stages: list[tuple[str, str]], elements: list[str]) -> None:
        source = "[" + " ".join(elements) + "]"
        one_pass = ptc.run(_chain(stages, source, broken=False))
        as_written = ptc.run(_chain(stages, source, broken=True))
        assert _observed(one_pass) == _observed(as_written), _chain(stages, source, False)

    check()
