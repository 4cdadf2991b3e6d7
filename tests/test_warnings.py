"""Result.warnings (issue 30, item 13): a `data/` name that is not in the input stays nil by the
language's rule, and the host is told, with the nearest input names. The program never sees it."""

from __future__ import annotations

import ptc


def test_a_mistyped_data_name_is_nil_and_warned_with_the_nearest_name() -> None:
    r = ptc.Session(data={"orders": [1, 2], "users": []}).run("(count data/ordrs)")
    assert r.ok and r.value == 0
    assert r.warnings == ["data/ordrs is nil: there is no such input; did you mean data/orders?"]


def test_with_nothing_near_the_inputs_are_listed() -> None:
    r = ptc.Session(data={"orders": [], "users": []}).run("data/zzz")
    assert r.value is None
    assert r.warnings == [
        "data/zzz is nil: there is no such input; inputs: data/orders, data/users"
    ]


def test_without_input_data_it_says_so() -> None:
    assert ptc.Session().run("data/x").warnings == ["data/x is nil: this run has no input data"]


def test_each_name_is_warned_once_in_the_order_read() -> None:
    s = ptc.Session(data={"orders": []})
    r = s.run("(do data/b data/a (map (fn [_] data/b) [1 2 3]) data/a 1)")
    assert r.warnings == [
        "data/b is nil: there is no such input; inputs: data/orders",
        "data/a is nil: there is no such input; inputs: data/orders",
    ]


def test_present_names_and_present_nil_values_warn_nothing() -> None:
    r = ptc.Session(data={"orders": [1], "note": None}).run("[data/orders data/note]")
    assert r.value == [[1], None]
    assert r.warnings == []


def test_a_name_in_a_branch_not_taken_is_not_warned() -> None:
    r = ptc.Session(data={"orders": []}).run("(if true 1 data/nope)")
    assert r.warnings == []


def test_warnings_are_bounded() -> None:
    names = " ".join(f"data/missing{i}" for i in range(40))
    r = ptc.Session(data={"orders": []}).run(f"(do {names} 1)")
    assert len(r.warnings) == 16
    assert r.warnings[0] == "data/missing0 is nil: there is no such input; inputs: data/orders"
    assert r.warnings[15] == "data/missing15 is nil: there is no such input; inputs: data/orders"


ORDER = "data/order is nil: there is no such input; did you mean data/orders?"


def test_a_run_that_fails_or_errs_keeps_its_warnings() -> None:
    s = ptc.Session(data={"orders": []})
    failed = s.run('(fail (str "no " data/order))')
    assert failed.failed
    assert failed.warnings == [
        "data/order is nil: there is no such input; did you mean data/orders?"
    ]
    errored = s.run("(+ 1 data/order)")
    assert errored.error is not None and errored.error.type == "type_error"
    assert errored.warnings == [
        "data/order is nil: there is no such input; did you mean data/orders?"
    ]


def test_a_run_without_data_reads_warns_nothing() -> None:
    assert ptc.run("(+ 1 2)").warnings == []
