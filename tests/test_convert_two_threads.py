"""Large host input converts on two threads (rust/python/convert/tape.rs): the thread holding
the GIL walks the Python objects and a second thread builds the values. These tests check that
the path is taken, that it gives the values and the errors (type, path, message) of the
one-thread conversion, that Python code run during the walk cannot make it read freed objects,
and that a conversion the process has no memory for is a MemoryError, not an abort.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import ptc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ptc import _core

CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
pytestmark = pytest.mark.skipif(
    CORES < 2, reason="the two-thread conversion needs two cores; this machine has one"
)

#: Items enough for the two-thread path (its threshold is 4,096 items one level down).
PAD = list(range(5_000))


def session(data: dict[str, Any]) -> tuple[ptc.Session, int]:
    """A Session of `data` and how many of its values converted on two threads."""
    before = _core._two_thread_conversions()
    s = ptc.Session(data=data)
    return s, _core._two_thread_conversions() - before


def one_thread(item: Any) -> str:
    """`item` converted alone (small input: one thread), as PTC-Lisp's `str` prints it (so `1`,
    `1.0` and `true`, or `:a` and `"a"`, differ where Python's `==` would not tell them apart)."""
    s, two = session({"x": [item]})
    assert two == 0
    return str(s.run("(str (first data/x))").value)


def test_nested_records_round_trip_on_two_threads() -> None:
    orders = [
        {
            "id": i,
            "total": i / 4,
            "status": "shipped" if i % 5 else "returned",
            "customer": {"id": i % 97, "name": f"customer-{i % 311}", "tier": "gold"},
            "items": [{"sku": f"sku-{i}-{j}", "qty": j, "price": j * 1.5} for j in range(3)],
        }
        for i in range(20_000)
    ]
    s, two = session({"orders": orders, "n": 3})
    assert two == 1
    assert s.run("data/orders").value == orders
    assert s.run("(count data/orders)").value == 20_000
    assert s.run("(:name (:customer (nth data/orders 12345)))").value == "customer-216"
    assert s.run('(count (filter #(= (:status %) "returned") data/orders))').value == 4_000
    assert s.run("(reduce + (map :qty (apply concat (map :items data/orders))))").value == 60_000
    assert s.run("data/n").value == 3


def _mixed(i: int) -> Any:
    """Every kind of value the walk meets, the slow ones (tuples, sets, subclasses, keywords,
    non-string keys) among them."""
    shared_text = "shared-status-text"
    kinds: list[Any] = [
        None,
        True,
        False,
        i,
        -(2**62),
        i * 0.5,
        float("inf"),
        "",
        "short",
        "exactly8",
        "ünïcödé text",
        "🙂" * 3,
        "x" * 300,
        shared_text,
        [],
        {},
        [1, [2, [3, []]]],
        (1, "two", (3.0,)),
        {1, 2, 3},
        frozenset({"a"}),
        ptc.Keyword("kw"),
        {"a": 1, "b": [1, 2], "c": {"d": None}},
        {"b": 1, "a": 2},  # the same keys in another order: another shape
        {1: "int key", 2: "other"},
        {"not a keyword": 1, "ok": 2},
        {("t", 1): "tuple key"},
        {"a": 1, ptc.Keyword("a"): 2} if i % 2 else {"z": 0},
        type("MyStr", (str,), {})("a str subclass"),
        type("MyList", (list,), {})([1, 2]),
        type("MyDict", (dict,), {})({"k": "v"}),
    ]
    return kinds[i % len(kinds)]


def test_every_kind_of_value_converts_as_on_one_thread() -> None:
    mixed = [_mixed(i) for i in range(6_000)]
    s, two = session({"x": mixed})
    assert two == 1
    for i in range(60):  # each kind twice (30 kinds)
        assert s.run(f"(str (nth data/x {i}))").value == one_thread(mixed[i]), i
    got = s.run("data/x").value
    assert len(got) == 6_000
    # the plain ones are also what Python holds
    assert got[8] == "short" and got[10] == "ünïcödé text" and got[12] == "x" * 300
    assert got[17] == [1, "two", [3.0]]
    assert got[23] == {1: "int key", 2: "other"}


def test_shared_containers_stay_shared() -> None:
    """A container referenced from many places converts once (the tape refers back to it):
    sixty doublings of one list would otherwise be 2^60 nodes."""
    x: list[Any] = [1]
    for _ in range(60):
        x = [x, x]
    row = {"a": [1, 2], "b": "text that is long enough"}
    s, two = session({"x": {"pad": PAD, "x": x}, "rows": [row] * 5_000 + [[row, row]]})
    assert two == 2
    assert s.run("(count (:x data/x))").value == 2
    assert s.run("(count (first (first (:x data/x))))").value == 2
    assert s.run("(nth data/rows 4999)").value == row
    assert s.run("(last data/rows)").value == [row, row]
    deep = "(reduce (fn [v _] (first v)) (:x data/x) (range 60))"
    assert s.run(deep).value == [1]


def test_data_under_two_names_converts_once() -> None:
    """The same list under two data names (and again inside a tuple) is converted once and
    shared, as on one thread."""
    rows = [{"id": i, "tags": ["a", [i]]} for i in range(5_000)]
    s, two = session({"a": rows, "b": rows, "c": (rows,)})
    assert two == 1
    assert s.run("(and (= data/a data/b) (= data/b (first data/c)))").value is True
    assert s.run("(count data/b)").value == 5_000


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            lambda rows: rows[4321].__setitem__("when", object()),
            "data.rows[4321].when: object is not supported "
            "(use None, bool, int, float, str, list, tuple, dict, set)",
        ),
        (
            lambda rows: rows[5000].__setitem__("n", 2**70),
            "data.rows[5000].n: integer 1180591620717411303424 does not fit in 64 bits "
            "(PTC-Lisp integers are exact i64); pass it as a float or a string",
        ),
        (
            lambda rows: rows[4000].__setitem__("up", rows),
            "data.rows[4000].up: this list contains itself (a cycle); data must be a tree, "
            "so pass a copy without the back-reference",
        ),
        (
            lambda rows: rows[6999]["tags"].append({"x": {"bad": 1j}}),
            "data.rows[6999].tags[2].x.bad: complex is not supported "
            "(use None, bool, int, float, str, list, tuple, dict, set)",
        ),
    ],
)
def test_errors_name_the_same_path_as_on_one_thread(bad: Any, message: str) -> None:
    rows = [{"id": i, "tags": ["a", "b"]} for i in range(7_000)]
    bad(rows)
    before = _core._two_thread_conversions()
    with pytest.raises(TypeError) as e:
        ptc.Session(data={"rows": rows})
    assert _core._two_thread_conversions() == before + 1
    assert str(e.value) == message
    # the session that follows converts normally
    s, two = session({"rows": [{"id": i} for i in range(5_000)]})
    assert two == 1 and s.run("(count data/rows)").value == 5_000


def test_too_deep_input_is_refused_on_two_threads() -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(1_001):
        node.append([])
        node = node[0]
    with pytest.raises(TypeError) as e:
        ptc.Session(data={"rows": [*PAD, deep]})
    assert str(e.value).startswith("data.rows[5000][0][0][0]")
    assert str(e.value).endswith(": nested more than 1000 levels deep")


def test_a_record_value_freed_during_a_two_thread_conversion() -> None:
    """Python code run during the walk (a set subclass's `__iter__`) frees values the walk
    borrowed: they convert as they were."""
    inner: dict[str, Any] = {}
    keep: list[Any] = []

    class Meddling(set):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            inner["b"] = None
            keep.append([[i, str(i)] for i in range(20_000)])
            return super().__iter__()

    inner["a"] = Meddling({1})
    inner["b"] = [[10, 20], {"deep": [30]}]
    s, two = session({"rows": [*PAD, inner]})
    assert two == 1
    assert s.run("(last data/rows)").value == {"a": {1}, "b": [[10, 20], {"deep": [30]}]}
    assert keep


def _child(code: str) -> dict[str, Any]:
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_ctrl_c_during_a_two_thread_conversion() -> None:
    """A KeyboardInterrupt raised by a signal handler during the walk ends the conversion
    (the building thread stops and is joined); the next conversion works."""
    out = _child(
        """
        import json, signal, ptc
        from ptc import _core
        Session = ptc.Session
        rows = [{"id": i, "tags": ["t", [i]], "v": i / 2} for i in range(1_500_000)]
        def stop(signum, frame):
            raise KeyboardInterrupt
        signal.signal(signal.SIGALRM, stop)
        before = _core._two_thread_conversions()
        try:
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            Session(data={"rows": rows})
            stopped = False
        except KeyboardInterrupt:
            stopped = True
        signal.setitimer(signal.ITIMER_REAL, 0)
        s = Session(data={"rows": rows[:10_000]})
        print(json.dumps({"stopped": stopped, "two": _core._two_thread_conversions() - before,
                          "n": s.run("(count data/rows)").value}))
        """
    )
    assert out == {"stopped": True, "two": 2, "n": 10_000}


@pytest.mark.parametrize(
    "row",
    [
        '{"id": i, "name": "name-%d" % i, "tags": ["a", "b", [i, i]]}',
        '{i: "int keys make a map", -i - 1: [i]}',
    ],
    ids=["records", "maps"],
)
def test_input_the_process_has_no_memory_for_is_a_memory_error(row: str) -> None:
    """Under an address-space limit that leaves too little room, the conversion raises
    MemoryError (both threads count against one allowance, and the building thread checks
    before each list's or map's buffer) instead of aborting; with the limit lifted, the same
    data converts."""
    out = _child(
        """
        import json, resource, ptc
        from ptc import _core
        rows = [ROW for i in range(400_000)]
        def vm():
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmSize:"):
                        return int(line.split()[1]) * 1024
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (vm() + (60 << 20), hard))
        before = _core._two_thread_conversions()
        try:
            ptc.Session(data={"rows": rows})
            outcome = "converted"
        except MemoryError as e:
            outcome = "MemoryError: " + str(e)
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
        s = ptc.Session(data={"rows": rows})
        print(json.dumps({"outcome": outcome, "two": _core._two_thread_conversions() - before,
                          "n": s.run("(count data/rows)").value}))
        """.replace("ROW", row)
    )
    assert out["outcome"].startswith(
        "MemoryError: the input needs more memory than this process has left"
    ), out
    assert out["two"] == 2
    assert out["n"] == 400_000


# ---- property: the two-thread path converts anything as the one-thread path does ----

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=2**63, max_value=2**70),  # too large: an error either way
    st.floats(allow_nan=False),
    st.text(max_size=12),
    st.text(min_size=250, max_size=300),
    st.sampled_from(["shared", "ünï", ptc.Keyword("kw"), ptc.Keyword("a")]),
)
_keys = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["a", "b", "id", "not a keyword", ptc.Keyword("a")]),
    st.integers(-3, 3),
)


def _trees(leaves: Any) -> Any:
    return st.one_of(
        st.lists(leaves, max_size=5),
        st.tuples(leaves, leaves),
        st.dictionaries(_keys, leaves, max_size=5),
        st.frozensets(st.integers(0, 5), max_size=3),
    )


_values = st.recursive(_scalars, _trees, max_leaves=30)


def _outcome(data: dict[str, Any]) -> tuple[str, str, int]:
    """What converting `data` gives: its text as PTC-Lisp prints it, or the error's type and
    message; and how many conversions took two threads."""
    before = _core._two_thread_conversions()
    try:
        s = ptc.Session(data=data)
    except (TypeError, ValueError) as e:
        return type(e).__name__, str(e), _core._two_thread_conversions() - before
    return "ok", str(s.run("(str (:v data/x))").value), _core._two_thread_conversions() - before


@settings(max_examples=150, deadline=None)
@given(value=_values, share=st.booleans())
def test_two_threads_convert_as_one_thread_does(value: Any, share: bool) -> None:
    """Random nested data (keywords, tuples, sets, int and keyword keys, big ints, long
    strings, one container under two names): with 5,000 more items beside it the data takes
    the two-thread path; alone it takes one thread. Both give the same value or error."""
    v = [value, value] if share else value
    alone = _outcome({"x": {"v": v}})
    padded = _outcome({"x": {"pad": PAD, "v": v}})
    assert alone[2] == 0 and padded[2] == 1
    assert padded[:2] == alone[:2]
