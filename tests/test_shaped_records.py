"""Issue 9: records (dicts converted from Python, objects parsed from JSON) share their keys in
a shape. Every map operation must behave exactly as on a map a program built: checked operation
by operation against the same data built with `into` (a hashed map)."""

from __future__ import annotations

import json
from typing import Any

import ptc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

RECORDS = [
    {
        "id": 1,
        "name": "Ada",
        "total": 12.5,
        "tags": ["a", "b"],
        "addr": {"city": "Oslo", "zip": "01"},
    },
    {"id": 2, "name": "Bo", "total": 3.0, "tags": [], "addr": {"city": "Rome", "zip": "02"}},
    {"id": 3, "name": "Cy", "total": 7.25, "tags": ["b"], "addr": {"city": "Oslo", "zip": "03"}},
]

OPERATIONS = [
    "(first data/rs)",
    "(:name (first data/rs))",
    '(get (first data/rs) "name")',  # flexible lookup: the string spelling of a keyword key
    "(get (first data/rs) :missing :default)",
    "(assoc (first data/rs) :total 0)",  # a key of the shape: the record keeps its shape
    "(assoc (first data/rs) :new 1)",  # a new key
    "(dissoc (first data/rs) :tags)",
    "(dissoc (first data/rs) :absent)",
    "(update (first data/rs) :total inc)",
    '(update-in (first data/rs) [:addr :city] str "!")',
    '(assoc-in (first data/rs) [:addr :country] "NO")',
    "(merge (first data/rs) {:id 9 :extra true})",
    "(merge {:id 9 :extra true} (first data/rs))",
    "(select-keys (first data/rs) [:id :addr :nope])",
    "(keys (first data/rs))",
    "(vals (second data/rs))",
    "(count (first data/rs))",
    "(contains? (first data/rs) :tags)",
    "(find (first data/rs) :name)",
    "(seq (first data/rs))",
    "(into {} (first data/rs))",
    "(into [] (first data/rs))",
    "(reduce-kv (fn [acc k v] (conj acc k)) [] (first data/rs))",
    "(map (fn [[k v]] k) (first data/rs))",
    "(sort-by :total data/rs)",
    "(group-by #(:city (:addr %)) data/rs)",
    "(frequencies (map :addr data/rs))",
    "(distinct (concat data/rs data/rs))",
    "(set data/rs)",
    "(contains? (set data/rs) (first data/rs))",
    "(= (first data/rs) (first data/rs))",
    "(= (first data/rs) (second data/rs))",
    "(= (first data/rs) (assoc (first data/rs) :id 1))",
    "(= (dissoc (first data/rs) :tags) (dissoc (first data/rs) :tags))",
    "(filter #(> (:total %) 5) data/rs)",
    "(mapv #(select-keys % [:id]) data/rs)",
    "(zipmap (map :id data/rs) data/rs)",
    "(get-in data/rs [0 :addr :zip])",
    "(->> data/rs (map :addr) (map :city) distinct)",
    "(empty? (first data/rs))",
    "(str (first data/rs))",
    "(pr-str (first data/rs))",
    "(compare (:id (first data/rs)) 1)",
    "(let [{:keys [id name]} (first data/rs)] [id name])",
    "(hash-map :a (first data/rs))",
    "(update-vals (first data/rs) str)",
    "(update-keys (first data/rs) name)",
    "(max-key :total (first data/rs) (second data/rs))",
]


def literal(value: Any) -> str:
    """The value built by a program as hashed maps (`(into {} pairs)`; keyword keys, as the
    data converts). Map literals with constant keys are records themselves."""
    if isinstance(value, dict):
        pairs = " ".join(f"[:{k} {literal(v)}]" for k, v in value.items())
        return f"(into {{}} [{pairs}])"
    if isinstance(value, list):
        return "[" + " ".join(literal(v) for v in value) + "]"
    if value is None:
        return "nil"
    return json.dumps(value)


def record_literal(value: Any) -> str:
    """The value written with map literals, which build records at run time (constant keys;
    each scalar through `identity`, so the analyzer cannot fold the literal to a constant)."""
    if isinstance(value, dict):
        return "{" + " ".join(f":{k} {record_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + " ".join(record_literal(v) for v in value) + "]"
    return f"(identity {literal(value)})"


def outcome(r: ptc.Result) -> tuple[str, str]:
    if r.error is not None:
        return ("error", f"{r.error.type}: {r.error.message}")
    return (r.outcome, r.preview(None, None))


@pytest.mark.parametrize("op", OPERATIONS)
def test_a_record_behaves_as_a_map_built_by_a_program(op: str) -> None:
    shaped = ptc.Session(data={"rs": RECORDS}).run(op)
    from_json = ptc.Session.from_json(json.dumps({"rs": RECORDS})).run(op)
    written = ptc.Session().run(f"(let [rs {literal(RECORDS)}] {op.replace('data/rs', 'rs')})")
    rs = record_literal(RECORDS)
    as_literal = ptc.Session().run(f"(let [rs {rs}] {op.replace('data/rs', 'rs')})")
    assert outcome(shaped) == outcome(from_json) == outcome(written) == outcome(as_literal)
    if shaped.error is None:
        assert shaped.value == written.value


def test_records_and_literal_maps_are_equal_and_hash_alike() -> None:
    s = ptc.Session(data={"r": {"a": 1, "b": [2]}})
    assert s.run("(= data/r {:a 1 :b [2]})").value is True
    assert s.run("(= data/r {:b [2] :a 1})").value is True  # order does not matter
    assert s.run("(count (set [data/r {:b [2] :a 1}]))").value == 1
    assert s.run("(get {data/r :found} {:a 1 :b [2]})").value == "found"
    assert s.run("(get {{:a 1 :b [2]} :found} data/r)").value == "found"


def test_records_with_colliding_keys_stay_maps() -> None:
    """A dict whose keys collide once converted ("a" and Keyword a) cannot be a record."""
    s = ptc.Session(data={"r": {"a": 1, ptc.Keyword("a"): 2}})
    assert s.run("(count data/r)").value == 1


def test_records_of_many_shapes_and_wide_records() -> None:
    rows = [{f"k{i}": i for i in range(n)} for n in range(1, 80)]
    s = ptc.Session(data={"rows": rows})
    assert s.run("(map count data/rows)").value == list(range(1, 80))
    assert s.run("(:k70 (last data/rows))").value == 70
    assert s.run("(get (last data/rows) :k3)").value == 3
    assert s.run("(:k70 (first data/rows))").value is None


keys = st.sampled_from(["id", "name", "total", "a-b", "x_y", "z"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.sampled_from(["s", "t"]))
records = st.lists(st.dictionaries(keys, scalars, max_size=6), max_size=6)


@settings(max_examples=100, deadline=None)
@given(rs=records, op=st.sampled_from(OPERATIONS))
def test_random_records(rs: list[dict[str, Any]], op: str) -> None:
    shaped = ptc.Session(data={"rs": rs}).run(op)
    from_json = ptc.Session.from_json(json.dumps({"rs": rs})).run(op)
    written = ptc.Session().run(f"(let [rs {literal(rs)}] {op.replace('data/rs', 'rs')})")
    assert outcome(shaped) == outcome(from_json) == outcome(written)


# ---- JSON objects read with the previous object's keys as the guess ----

GUESS_CASES = [
    # same keys each time
    '[{"a": 1, "b": 2}, {"a": 3, "b": 4}, {"a": 5, "b": 6}]',
    # fewer keys than the guess (a prefix), then more (a superset), then none
    '[{"a": 1, "b": 2, "c": 3}, {"a": 4}, {"a": 5, "b": 6, "c": 7, "d": 8}, {}]',
    # the same keys in another order, then other keys altogether
    '[{"a": 1, "b": 2}, {"b": 3, "a": 4}, {"x": 5, "y-z": 6}]',
    # a repeated key after the guess matched a prefix: the last value wins, at the first place
    '[{"a": 1, "b": 2}, {"a": 3, "a": 4}, {"a": 5, "b": 6, "a": 7}]',
    # keys that are not keyword text, matched and mismatched
    '[{"a b": 1, "": 2}, {"a b": 3, "": 4}, {"a b": 5, " ": 6}]',
    # records nested at several depths, with objects of other shapes between them
    '[{"a": {"p": 1}, "b": [{"q": 2}]}, {"a": {"p": 3, "r": 4}, "b": [{"q": 5}, {"s": 6}]},'
    ' {"a": {"p": 7}, "b": []}]',
]


@pytest.mark.parametrize("text", GUESS_CASES)
def test_json_objects_guessed_from_their_neighbours_keep_their_own_keys(text: str) -> None:
    """Every object keeps its own keys in its own order, keyword or string as its text says."""
    expected = json.loads(text)  # Python's reader: the last value wins, at the first key's place
    got = ptc.Session.from_json('{"rs": ' + text + "}").run("data/rs").value

    def entries(v: Any, keyword: Any) -> Any:
        if isinstance(v, dict):
            return [(keyword(k), str(k), entries(x, keyword)) for k, x in v.items()]
        if isinstance(v, list):
            return [entries(x, keyword) for x in v]
        return v

    def is_keyword_text(k: str) -> bool:
        return k != "" and " " not in k

    assert entries(got, lambda k: isinstance(k, ptc.Keyword)) == entries(expected, is_keyword_text)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        # the error inside a value whose key matched the guess
        ('{"rs": [{"a": 1, "b": 2}, {"a": 1, "b": [1,]}]}', "data.rs[1].b"),
        # the error after the guess was dropped
        ('{"rs": [{"a": 1, "b": 2}, {"a": 1, "c": [1,]}]}', "data.rs[1].c"),
        ('{"rs": [{"a": 1}, {"x y": {"z": }}]}', 'data.rs[1]["x y"].z'),
    ],
)
def test_json_errors_under_a_guessed_key_name_that_key(text: str, where: str) -> None:
    with pytest.raises(ValueError) as info:
        ptc.Session.from_json(text)
    assert str(info.value).startswith(f"invalid JSON data at {where}: ")


@pytest.mark.parametrize("n", [0, 1, 3, 1023, 1024, 1025, 2049, 5000])
def test_json_arrays_short_and_long_keep_their_elements_in_order(n: int) -> None:
    """Short arrays gather on the loader's value stack and long ones move to their own buffer
    on the way: either way, with arrays and objects nested in them, every element in place."""
    doc = {
        "xs": list(range(n)),
        "rows": [{"i": i, "pair": [i, [str(i)]], "tags": ["t"] * (i % 4)} for i in range(n)],
        "after": [n, {"n": n}],
    }
    s = ptc.Session.from_json(json.dumps(doc))
    assert s.run("data/xs").value == doc["xs"]
    assert s.run("data/rows").value == doc["rows"]
    assert s.run("data/after").value == doc["after"]
