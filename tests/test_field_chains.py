"""Chains of field reads, `(:tier (:customer o))`, are read in place (no copy of the maps in
between): the values, nils and errors must be exactly those of reading one field at a time."""

from __future__ import annotations

import itertools

import ptc
import pytest

ORDERS = [
    {"id": 1, "customer": {"tier": "gold", "address": {"city": "Oslo"}}},
    {"id": 2, "customer": {"tier": "silver"}},
    {"id": 3, "customer": None},
    {"id": 4},
]


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ('(let [o {:customer {:tier "gold"}}] (:tier (:customer o)))', "gold"),
        ("(let [o {:customer nil}] (:tier (:customer o)))", None),
        ("(let [o {}] (:tier (:customer o)))", None),
        ("(let [o nil] (:tier (:customer o)))", None),
        # the flexible lookup (§4.4): string keys answer keyword reads at every level
        ('(let [o {"customer" {"tier" "gold"}}] (:tier (:customer o)))', "gold"),
        ("(let [o {:a {:b {:c 7}}}] (:c (:b (:a o))))", 7),
        ("(let [o {:a {:b {:c 7}}}] (:b (:a o)))", {"c": 7}),
        # a default applies to the outer read only
        ("(let [o {:a {}}] (:b (:a o) 9))", 9),
        ("(map #(:tier (:customer %)) data/orders)", ["gold", "silver", None, None]),
        ("(map #(:city (:address (:customer %))) data/orders)", ["Oslo", None, None, None]),
        (
            '(group-by #(:tier (:customer %)) [{:customer {:tier "a"}} {:customer {:tier "a"}}])',
            {"a": [{"customer": {"tier": "a"}}, {"customer": {"tier": "a"}}]},
        ),
        # the map read from stays whole and usable after the chain
        ("(let [o {:c {:t 1}} t (:t (:c o))] [t o])", [1, {"c": {"t": 1}}]),
    ],
)
def test_chained_reads_give_the_field(program: str, expected: object) -> None:
    r = ptc.Session(data={"orders": ORDERS}).run(program)
    assert r.error is None, r.error
    assert r.value == expected


@pytest.mark.parametrize(
    ("program", "message", "line", "column"),
    [
        # the inner read fails: its own position and keyword
        (
            "(let [o 5] (:tier (:customer o)))",
            "(:customer ...) expects a map, got integer 5",
            1,
            19,
        ),
        # the outer read fails on what the inner one gave
        (
            "(let [o {:customer 5}]\n  (:tier (:customer o)))",
            "(:tier ...) expects a map, got integer 5",
            2,
            3,
        ),
        (
            '(let [o {:a {:b "x"}}] (:c (:b (:a o))))',
            '(:c ...) expects a map, got string "x"',
            1,
            24,
        ),
        (
            "(let [o {:a [1 2]}] (:c (:b (:a o))))",
            "(:b ...) expects a map, got vector [1 2]",
            1,
            25,
        ),
    ],
)
def test_chained_reads_fail_where_one_read_fails(
    program: str, message: str, line: int, column: int
) -> None:
    r = ptc.Session().run(program)
    assert isinstance(r.error, ptc.LispTypeError)
    assert (r.error.message, r.error.line, r.error.column) == (message, line, column)


def test_a_chain_thousands_of_reads_deep_stays_on_the_stack() -> None:
    depth = 20_000
    chain = "(:a " * depth + "o" + ")" * depth
    session = ptc.Session(limits={"max_nesting": 50_000})
    # two reads reach nil, and :a of nil is nil all the way up
    r = session.run("(let [o {:a {:a nil}}] " + chain + ")")
    assert r.error is None, r.error
    assert r.value is None
    # the third read from the inside meets a number: the error is at that read (the prefix
    # "(let [o {:a {:a 1}}] " is 21 characters; each "(:a " four more)
    r = session.run("(let [o {:a {:a 1}}] " + chain + ")")
    assert isinstance(r.error, ptc.LispTypeError)
    assert r.error.message == "(:a ...) expects a map, got integer 1"
    assert (r.error.line, r.error.column) == (1, 22 + 4 * (depth - 3))


def test_each_read_of_a_chain_counts_as_a_step() -> None:
    # every evaluated read is one step of the run's budget, read in place or not: a chain one
    # read longer takes exactly one step more (fuel and timeouts are checked on steps)
    session = ptc.Session()
    steps = []
    for n in range(1, 12):
        r = session.run("(let [o nil] " + "(:a " * n + "o" + ")" * n + ")")
        assert r.error is None and r.value is None
        steps.append(r.steps)
    assert [b - a for a, b in itertools.pairwise(steps)] == [1] * 10


def test_a_long_chain_from_a_call_is_read_in_linear_time() -> None:
    # a chain that does not start at a local is evaluated read by read; finding that out must
    # not walk the rest of the chain again at every level (99,000 levels: ~5e9 visits if it did)
    depth = 99_000
    program = "(let [o {:a nil}] " + "(:a " * depth + "(identity o)" + ")" * depth + ")"
    r = ptc.Session(limits={"max_nesting": 100_000}).run(program)
    assert r.error is None, r.error
    assert r.value is None
