"""`ptc.Session`: persistence, all-or-nothing runs, definitions metadata (docstrings, type labels,
samples, params, return types), memory, describe, and turn history (LANGUAGE.md §1.3, §1.5, §5.8,
§5.9, §8.5; seed 000 "Type Vocabulary", "Data Samples"; seed 001 DEF-001..DEF-009, TYP-*)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import ptc
import pytest


def _names(s: ptc.Session) -> list[str]:
    return [d.name for d in s.definitions]


def test_definitions_persist_between_runs() -> None:
    """LANGUAGE.md §1.5: the user namespace persists across turns."""
    s = ptc.Session()
    assert s.run("(def a 1) (defn twice [x] (* 2 x))").error is None
    r = s.run("(twice a)")
    assert r.error is None
    assert r.value == 2
    assert _names(s) == ["a", "twice"]


def test_redefinition_latest_wins_first_order_kept() -> None:
    """Seed 001 DEF-001/DEF-002/DEF-009: latest value wins; order of first definition is kept."""
    s = ptc.Session()
    s.run("(def a 1) (def b 2)")
    r = s.run("(def c 3) (def a 10) (def a 11)")
    assert r.error is None
    assert _names(s) == ["a", "b", "c"]
    assert s.memory["a"] == 11
    # a run that defines a symbol twice reports it once, with its final value
    assert sorted((d.name, d.sample) for d in r.defined) == [("a", "11"), ("c", "3")]


def test_defined_lists_only_this_runs_definitions() -> None:
    """`r.defined` holds the definitions made by this run."""
    s = ptc.Session()
    s.run("(def a 1)")
    r = s.run("(def b 2) (+ a b)")
    assert [d.name for d in r.defined] == ["b"]
    assert s.run("(+ a 1)").defined == []


ERROR_RUNS = [
    "(def a 100) (def new-one 1) (+ 1 nope)",
    "(def a 100) (def new-one 1) (tool/log 1) (+ 1 nope)",
    "(def a 100) (def new-one 1) (tool/log 1) (tool/bad)",
    '(def a 100) (def new-one 1) (tool/log 1) (+ 1 "x")',
    "(def a 100) (def new-one 1) (loop [i 0] (recur (inc i)))",
    "(def a 100) (def new-one 1) (defn b [] 1) (if)",
    "(def a 100) (def new-one 1) (+ 1 2",
    "(def a 100) (defn helper [x] (+ x 1)) (def new-one (helper 1)) (* 9223372036854775807 2)",
]


def _bad() -> None:
    raise RuntimeError("down")


@pytest.mark.parametrize("source", ERROR_RUNS)
def test_error_run_leaves_definitions_exactly_as_before(source: str) -> None:
    """LANGUAGE.md §1.3/§11: an error outcome leaves the user namespace unchanged (all-or-nothing),
    even after several `def`s and a tool call."""
    s = ptc.Session(tools={"log": lambda x: x, "bad": _bad}, limits={"loop_limit": 100})
    assert s.run('(def a 1) (defn b "doc" [x] [x x]) (def c {:k "v"})').error is None
    before = s.definitions
    memory_before = dict(s.memory)
    r = s.run(source)
    assert r.error is not None
    assert r.defined == []
    assert s.definitions == before
    assert dict(s.memory) == memory_before
    assert s.memory["a"] == 1
    assert "new-one" not in s.memory


def test_error_run_does_not_change_return_types() -> None:
    """LANGUAGE.md §1.3: after an error the definitions are exactly as before, including the
    `return_type` of a function that the failed run called."""
    s = ptc.Session()
    s.run("(defn pair [x] [x x])")
    before = s.definitions
    assert before[0].return_type is None
    r = s.run("(pair 1) (+ 1 nope)")
    assert r.error is not None
    assert s.definitions == before


def test_return_keeps_definitions_made_before_it() -> None:
    """LANGUAGE.md §1.3: `return` keeps definitions made before it."""
    s = ptc.Session()
    r = s.run("(def kept 1) (return 7) (def never 2)")
    assert r.returned is True
    assert r.value == 7
    assert _names(s) == ["kept"]


def test_fail_keeps_definitions_made_before_it() -> None:
    """LANGUAGE.md §1.3: `fail` keeps definitions made before it."""
    s = ptc.Session()
    r = s.run('(def kept 1) (fail "cannot") (def never 2)')
    assert r.failed is True
    assert r.value == "cannot"
    assert _names(s) == ["kept"]
    assert s.memory["kept"] == 1


def test_turn_history() -> None:
    """LANGUAGE.md §8.5: `*1`, `*2`, `*3` are the previous turns' results; missing ones are nil."""
    s = ptc.Session()
    assert s.run("[*1 *2 *3]").value == [None, None, None]
    s.run("10")
    s.run('"twenty"')
    s.run("[30]")
    assert s.run("[*1 *2 *3]").value == [[30], "twenty", 10]
    assert s.run("*2").value == [30]


def test_docstrings_and_function_metadata() -> None:
    """LANGUAGE.md §5.8/§5.9, seed 001 DEF-005, FMT-006..FMT-008: docstrings of `def` and `defn`,
    function params as written, `return_type` None until called."""
    s = ptc.Session()
    r = s.run(
        '(def limit "Max rows" 5) (defn pick "Pick some" [a & more] (vector a a)) (defn f [x] x)'
    )
    assert r.error is None
    by_name = {d.name: d for d in r.defined}
    assert list(by_name) == ["limit", "pick", "f"]
    limit, pick, f = by_name["limit"], by_name["pick"], by_name["f"]
    assert (limit.kind, limit.doc, limit.params, limit.return_type) == (
        "value",
        "Max rows",
        None,
        None,
    )
    assert (limit.type, limit.sample) == ("integer", "5")
    assert (pick.kind, pick.doc, pick.params, pick.return_type) == (
        "function",
        "Pick some",
        ["a", "&", "more"],
        None,
    )
    assert pick.type == "#fn[a & more]"
    assert pick.sample is None
    assert (f.doc, f.params, f.type) == (None, ["x"], "#fn[x]")
    assert s.definitions == r.defined


def test_return_type_after_calls() -> None:
    """Seed 001 FMT-006: a called function shows the type label of its last return value."""
    s = ptc.Session()
    s.run("(defn shape [x] (if (= x 1) 1 [x x]))")
    assert s.definitions[0].return_type is None
    s.run("(shape 1)")
    assert s.definitions[0].return_type == "integer"
    s.run("(shape 2)")
    assert s.definitions[0].return_type == "list[2]"


def test_return_type_in_the_defining_run() -> None:
    """A function defined and called in one run reports the return type in `r.defined`."""
    r = ptc.run("(defn names [] [:a :b :c]) (names)")
    (d,) = r.defined
    assert d.return_type == "list[3]"


@pytest.mark.parametrize(
    ("source", "type_label", "sample"),
    [
        ("[]", "list[0]", None),
        ("[1 2 3]", "list[3]", "1"),
        ('[{:name "Alice" :_id 7} {:name "Bob"}]', "list[2]", '{:name "Alice"}'),
        ("{}", "map[0]", None),
        ("{:a 1}", "map[1]", "{:a 1}"),
        ("#{:only}", "set[1]", ":only"),
        ("#{}", "set[0]", None),
        ('"hello"', "string", '"hello"'),
        ("42", "integer", "42"),
        ("3.14", "float", "3.14"),
        ("true", "boolean", "true"),
        ("false", "boolean", "false"),
        (":active", "keyword", ":active"),
        ("nil", "nil", None),
        ("(fn [a b] a)", "#fn[a b]", None),
    ],
)
def test_value_type_labels_and_samples(source: str, type_label: str, sample: str | None) -> None:
    """Seed 000 "Type Vocabulary" and seed 001 TYP-001..TYP-012, DEF-003/DEF-004: type labels and
    samples (first element of a vector, none for nil/empty/functions)."""
    s = ptc.Session()
    r = s.run(f"(def v {source})")
    assert r.error is None
    (d,) = r.defined
    assert d.type == type_label
    assert d.sample == sample
    desc = s.describe("v")
    assert desc.type == type_label
    assert desc.sample == sample


def test_samples_use_limit_3_printable_80_and_hide_private_keys() -> None:
    """Seed 000 "Truncation" / TRN-002: samples use `limit: 3, printable_limit: 80`, hidden `_`
    keys; a map sample shows at most max(80 // 30, 1) = 2 entries."""
    long = "x" * 200
    s = ptc.Session()
    r = s.run(
        f'(def text "{long}")'
        ' (def user {:_secret "pw" :name "Alice" :email "a@example.com" :age 30})'
        " (def rows [[1 2 3 4 5]])"
    )
    assert r.error is None
    text, user, rows = r.defined
    assert text.sample == '"' + "x" * 80 + '..."'
    assert user.type == "map[4]"
    assert user.sample == '{:name "Alice", :email "a@example.com", ...}'
    assert rows.sample == "[1 2 3 ...] (5 items, showing first 3)"
    assert s.describe("text").truncated is True
    assert s.describe("rows").truncated is True


def test_describe_definition() -> None:
    """`s.describe(name)`: type label and sample of a user definition; KeyError when missing."""
    s = ptc.Session()
    s.run("(def big (range 100000))")
    desc = s.describe("big")
    assert (desc.type, desc.sample) == ("list[100000]", "0")
    with pytest.raises(KeyError):
        s.describe("missing")


def test_describe_data() -> None:
    """Seed 001 FMT-005/NS-008: input values are summarized with the same type/sample rules."""
    s = ptc.Session(
        data={
            "users": [{"name": "Alice", "_pw": "x"}, {"name": "Bob"}],
            "limit": 5,
            "title": "Quarterly report",
            "none": None,
        }
    )
    users = s.describe_data("users")
    assert (users.type, users.sample) == ("list[2]", '{:name "Alice"}')
    assert (s.describe_data("limit").type, s.describe_data("limit").sample) == ("integer", "5")
    title = s.describe_data("title")
    assert (title.type, title.sample, title.truncated) == ("string", '"Quarterly report"', False)
    assert (s.describe_data("none").type, s.describe_data("none").sample) == ("nil", None)
    with pytest.raises(KeyError):
        s.describe_data("missing")


def test_memory_is_a_lazily_converted_mapping() -> None:
    """`s.memory` maps name -> value (converted when read), in definition order."""
    s = ptc.Session()
    s.run('(def xs [1 2 3]) (def m {:k "v"}) (def n nil)')
    mem = s.memory
    assert isinstance(mem, Mapping)
    assert not isinstance(mem, dict)
    assert list(mem) == ["xs", "m", "n"]
    assert len(mem) == 3
    assert "xs" in mem and "nope" not in mem
    assert mem["xs"] == [1, 2, 3]
    assert mem["m"] == {"k": "v"}
    assert type(next(iter(mem["m"]))) is ptc.Keyword
    assert mem["n"] is None
    with pytest.raises(KeyError):
        mem["nope"]
    # values are converted on each read: mutating one does not touch the definition
    mem["xs"].append(4)
    assert s.memory["xs"] == [1, 2, 3]
    assert s.run("(count xs)").value == 3


def test_session_data_and_tools_are_used_by_every_run() -> None:
    """LANGUAGE.md §1.1: a Session's data and tools serve each run."""
    s = ptc.Session(data={"rate": 2}, tools={"twice": lambda x: x * 2})
    assert s.run("(* data/rate 10)").value == 20
    assert s.run("(tool/twice data/rate)").value == 4
    assert s.run("(twice rate)").value == 4


def test_session_from_json_reads_data_straight_into_the_core(tmp_path: Path) -> None:
    """ARCHITECTURE "convert once": JSON data can be loaded in Rust without Python objects;
    keys read like Python data (keyword text becomes keywords)."""
    s = ptc.Session.from_json('{"orders": [{"id": 1, "total": 250.0}, {"id": 2, "total": 40}]}')
    assert s.run("(sum-by :total data/orders)").value == 290.0
    assert s.describe_data("orders").sample == "{:id 1, :total 250.0}"
    path = tmp_path / "data.json"
    path.write_text('{"xs": [1, 2, 3]}', encoding="utf-8")
    assert ptc.Session.from_json(path).run("(count data/xs)").value == 3
    assert ptc.Session.from_json(b'{"k": "v"}').run("data/k").value == "v"
    with pytest.raises(ValueError, match="must be an object"):
        ptc.Session.from_json("[1, 2]")
    with pytest.raises(ValueError, match="invalid JSON"):
        ptc.Session.from_json('{"a": ')


def test_a_bare_core_session_refuses_what_only_session_checks() -> None:
    """`ptc._core.CoreSession` is `ptc.Session`'s Rust half: alone it runs a plain program,
    and anything `Session` checks first (limits, a check, a cancel that is not a token, a
    program that is not a str) is a TypeError that says so, not an AttributeError naming a
    private method."""
    message = (
        "a bare CoreSession runs a str program with no limits, check or approved plan, and a "
        "CancelToken or None as cancel; ptc.Session checks the rest (use it)"
    )
    core = ptc._core.CoreSession(None, {})
    assert core.run("(+ 1 2)").value == 3
    calls: list[tuple[object, dict[str, object]]] = [
        ("(+ 1 2)", {"limits": {"fuel": 10}}),
        ("(+ 1 2)", {"check": True}),
        ("(+ 1 2)", {"cancel": "not a token"}),
        (b"(+ 1 2)", {}),
    ]
    for source, kwargs in calls:
        with pytest.raises(TypeError) as e:
            core.run(source, **kwargs)
        assert str(e.value) == message
