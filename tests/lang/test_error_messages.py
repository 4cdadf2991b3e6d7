"""Error messages for the common mistakes LLMs make (LANGUAGE.md §10, §10.3 hints, §2.9, §5,
§7, §8, §12).

The table below is the documentation: each row is a program, the expected error type, the
expected message (an exact string, or a tuple of substrings the message must contain) and a
substring the hint must contain (None when the reference asks for no particular hint). Hint
wording may vary (§10.3), so only a characteristic fragment is required.

Every row runs against the same host environment: data keys ``cities``, ``order_count``,
``flight-list`` and tools ``geocode``, ``list-ports``.
"""

from __future__ import annotations

from typing import Any

import ptc
import pytest

Message = str | tuple[str, ...]

# (program, error type ("a|b" = either), message (exact, or required substrings), hint fragment)
ERROR_TABLE: list[tuple[str, str, Message, str | None]] = [
    # --- undefined names: suggestions from locals, definitions, builtins, tools and data keys
    ("(filtr odd? [1 2])", "undefined_variable", ("filtr",), "filter"),
    ("(let [price 12] (* prise 2))", "undefined_variable", ("prise",), "price"),
    ("(do (defn summarize [x] x) (sumarize 1))", "undefined_variable", ("sumarize",), "summarize"),
    ('(geocod {:city "Oslo"})', "undefined_variable", ("geocod",), "geocode"),
    ("(count citis)", "undefined_variable", ("citis",), "data/cities"),
    ("(first citys)", "undefined_variable", ("citys",), "data/cities"),
    ("(count flight-lst)", "undefined_variable", ("flight-lst",), "data/flight-list"),
    # snake_case → the hyphenated name
    (
        "(let [total-count 1] (+ total_count 1))",
        "undefined_variable",
        ("total_count",),
        "total-count",
    ),
    ("(sort_by :a [{:a 1}])", "undefined_variable", ("sort_by",), "sort-by"),
    ("(select_keys {:a 1} [:a])", "undefined_variable", ("select_keys",), "select-keys"),
    ("total_count", "undefined_variable", ("total_count",), "total-count"),
    # bare special-form name used as a value (§5, §10.3)
    ("(map return [1])", "undefined_variable", ("return",), "(return"),
    ("(filter and [1])", "undefined_variable", ("and",), "(and"),
    # --- tools
    (
        '(tool/geocod {:city "x"})',
        "unknown_tool",
        "Unknown tool: geocod. Available tools: geocode, list-ports",
        None,
    ),
    (
        '(tool/fetch-ports "NO")',
        "unknown_tool",
        "Unknown tool: fetch-ports. Available tools: geocode, list-ports",
        None,
    ),
    ('(call "geocode" {:city "Oslo"})', "analysis_error", ("call",), "tool/"),
    ('(. "abc" toUpperCase)', "analysis_error", (), "(upper-case s)"),
    # --- Clojure outside the subset: forms ⇒ analysis_error with the alternative
    ("(for [x [1 2]] (* x 2))", "analysis_error", ("for",), "map"),
    ("(case k :a 1 :b 2)", "analysis_error", ("case",), "cond"),
    ("(condp = x 1 :a)", "analysis_error", ("condp",), "cond"),
    ("(if-some [x 1] x)", "analysis_error", ("if-some",), "if-let"),
    ("(when-first [x [1]] x)", "analysis_error", ("when-first",), "-let"),
    ("(as-> 1 x (inc x))", "analysis_error", ("as->",), "->"),
    ("(some-> {:a 1} :a inc)", "analysis_error", ("some->",), "->"),
    ("(cond-> 1 true inc)", "analysis_error", ("cond->",), "->"),
    ("(letfn [(f [x] x)] (f 1))", "analysis_error", ("letfn",), "fn"),
    ("(fn self [x] x)", "analysis_error", (), "(fn [x]"),
    ("(defn f ([a] a) ([a b] b))", "analysis_error", ("f",), "defn"),
    ("(try (/ 1 0) (catch Exception e 0))", "analysis_error|undefined_variable", ("try",), "fail"),
    ("(atom 0)", "analysis_error|undefined_variable", ("atom",), None),
    ("(swap! counter inc)", "analysis_error|undefined_variable", ("swap!",), None),
    # functions commonly expected but absent (§12) ⇒ undefined_variable
    ("(comp inc dec)", "undefined_variable", ("comp",), "#(f (g %))"),
    ("(partial + 1)", "undefined_variable", ("partial",), "#(f a %)"),
    ("(mapcat identity [[1]])", "undefined_variable", ("mapcat",), "(apply concat (map f coll))"),
    ("(quot 7 2)", "undefined_variable", ("quot",), "(int (/ a b))"),
    ('(format "%.2f" 3.14)', "undefined_variable", ("format",), "str"),
    ('(Integer/parseInt "42")', "analysis_error", ("Integer/",), "parse-long"),
    # --- arity: states the accepted arities
    ("(get-in {:a 1})", "arity_error", "get-in expects 2 or 3 argument(s), got 1", None),
    ("(inc 1 2)", "arity_error", ("inc", "1", "got 2"), None),
    ("(range)", "arity_error", ("range", "got 0"), None),
    ("((fn [a b] a) 1)", "arity_error", ("2", "got 1"), None),
    ("((fn [a b & more] a) 1)", "arity_error", ("2+", "got 1"), None),
    ("(do (defn area [w h] (* w h)) (area 3))", "arity_error", ("area", "2", "got 1"), None),
    ("(loop [i 0 j 0] (if (< i 3) (recur (inc i)) i))", "arity_error", ("recur",), None),
    # --- calling a non-function
    ("(7 1)", "not_callable", ("7",), None),
    ('("total" 1)', "not_callable", ('"total"',), None),
    ("([1 2] 0)", "not_callable", ("[1 2]",), None),
    ("(1 2 3)", "not_callable", ("1",), None),
    # --- keyword access on the wrong value
    ("(:k [{:k 1} {:k 2}])", "type_error", (":k", "vector"), "map"),
    ('(:name "Ada")', "type_error", (":name", '"Ada"'), None),
    ("(map :k {:k 1})", "type_error", ("list of maps",), "(:k m)"),
    ("(pluck :k {:k 1})", "type_error", ("pluck",), "(:k m)"),
    # --- recur
    ("(loop [i 0] (inc (recur i)))", "analysis_error", ("recur", "tail"), None),
    ("(defn f [n] (+ 1 (recur n)))", "analysis_error", ("recur", "tail"), None),
    ("(recur 1)", "analysis_error", ("recur",), None),
    # --- reader
    ("(+ 1 2", "parse_error", ("unbalanced brackets: 1 unclosed '('", "1:1"), None),
    ("[1 2", "parse_error", ("unbalanced brackets: 1 unclosed '['", "1:1"), None),
    ("(let [x 1]\n  (+ x 2)", "parse_error", ("1 unclosed '('", "1:1"), None),
    ("(do\n  (let [x [1 2]]\n    x)", "parse_error", ("1 unclosed '('", "1:1"), None),
    ("(do\n  (let [x [1 2]\n    x))", "parse_error", ("']'", "2:8"), None),
    ('(str "abc)', "parse_error", ("string",), None),
    ('"caf\\u00e9"', "parse_error", ("\\u",), None),
    ("{:a 1 :b}", "parse_error", ("map",), None),
    ('(re-find #"\\d+" s)', "parse_error", ('#"',), "re-pattern"),
    ("(inc @x)", "parse_error", ("@",), "atom"),
    ("'x", "parse_error", ("'",), "vector"),
    ("'(1 2 3)", "parse_error", ("'",), "vector"),
    ("(+ 1 #_ 2 3)", "parse_error", ("#_",), ";"),
    ("##Inf", "parse_error", (), "Double/POSITIVE_INFINITY"),
    # --- special-form shapes
    ("(< 1 2 3)", "analysis_error", ("<",), "(and (<"),
    ("(if)", "analysis_error", ("if",), "(if "),
    ("(if (> x 1) :a :b :c)", "analysis_error", ("if",), "(if "),
    ("(let [a 1 b] a)", "analysis_error", ("let", "even"), "(let ["),
    ("(let [a] a)", "analysis_error", ("let", "even"), "(let ["),
    ("(cond 1)", "analysis_error", ("cond",), None),
    ("()", "analysis_error", ("()",), None),
    ("(where :status 3)", "analysis_error", ("where",), "="),
    ("(where :status is 3)", "analysis_error", ("where",), "includes"),
    ('(str/escape "a" {})', "analysis_error", ("escape is not available",), None),
    ('(http/get "x")', "analysis_error", ("unknown namespace http/",), None),
    # --- definitions
    ("(def map {:a 1})", "cannot_shadow_builtin", ("map",), "name"),
    ("(defn filter [x] x)", "cannot_shadow_builtin", ("filter",), "name"),
    ("(def if 1)", "cannot_shadow_builtin", ("if",), "name"),
    # --- argument mistakes with targeted hints (§10.3)
    ("(update {:n 1} :n inc 0)", "arity_error", ("inc",), "fnil"),
    ("(update {:n nil} :n + 1 2 3 4)", "type_error", ("+",), None),
    ("(sort-by :k [{:k 2} {:k 1}] >)", "type_error", ("sort-by",), "(sort-by key cmp coll)"),
    ("(max [3 1 2])", "type_error", ("max", "[3 1 2]"), "(apply max coll)"),
    ("(min [3 1 2])", "type_error", ("min",), "(apply min coll)"),
    ('(includes? ["a" "b"] "a")', "type_error", ("includes?",), "contains?"),
    ("(filter [:k] [{:k 1}])", "type_error", ("filter", "[:k]"), ":k"),
    ("(->> {:a 1} (update-vals inc))", "type_error", ("update-vals",), "->"),
    ("(sort {:b 1 :a 2})", "type_error", ("sort",), "unordered"),
    ("(first #{1 2})", "type_error", ("first",), "unordered"),
    ('(+ 1 "2")', "type_error", ("+", 'got string "2"'), "parse-long"),
    ("(.toString (java.util.Date. 0))", "undefined_variable", (".toString",), ".getTime"),
    ('(split "a1b" (re-pattern "\\\\d"))', "type_error", ("split",), "re-split"),
]


def _geocode(city: str = "", **_: Any) -> dict[str, float]:
    return {"lat": 59.9, "lon": 10.7}


def _list_ports() -> list[str]:
    return ["NO-OSL", "SE-STO"]


DATA: dict[str, Any] = {"cities": ["Oslo", "Rome"], "order_count": 3, "flight-list": [1, 2]}
TOOLS: dict[str, Any] = {"geocode": _geocode, "list-ports": _list_ports}


def run(src: str, **kw: Any) -> ptc.Result:
    return ptc.run(src, data=kw.pop("data", DATA), tools=kw.pop("tools", TOOLS), **kw)


def err(src: str, **kw: Any) -> ptc.LispError:
    r = run(src, **kw)
    assert r.error is not None, f"expected an error, got value {r.value!r}"
    return r.error


def _row_id(row: tuple[str, str, Message, str | None]) -> str:
    return row[0].replace("\n", "\\n")[:40]


@pytest.mark.parametrize(
    ("program", "kind", "message", "hint"), ERROR_TABLE, ids=[_row_id(r) for r in ERROR_TABLE]
)
def test_error_table(program: str, kind: str, message: Message, hint: str | None) -> None:
    """§10/§10.3: the error type, message and hint for common LLM mistakes."""
    e = err(program)
    kinds = [k for k in kind.split("|") if k]
    assert e.type in kinds, (e.type, e.message)
    if isinstance(message, str):
        assert e.message == message
    else:
        for fragment in message:
            assert fragment in e.message, (fragment, e.message)
    if hint is not None:
        assert e.hint is not None, f"no hint; message: {e.message}"
        assert hint in e.hint, (hint, e.hint)


# --------------------------------------------------------------------------- beyond the table


def test_tool_without_prefix_works_through_fallback() -> None:
    """§8.4: a bare tool name denotes the tool (call position and as a value)."""
    r = run('(geocode {:city "Oslo"})')
    assert r.error is None, r.error
    assert r.value == {"lat": 59.9, "lon": 10.7}
    assert [c.name for c in r.tool_calls] == ["geocode"]
    r = run("(list-ports)")
    assert r.error is None and r.value == ["NO-OSL", "SE-STO"]
    r = run('(map geocode [{:city "a"}])')
    assert r.error is None and len(r.tool_calls) == 1


def test_data_key_typo_reads_nil() -> None:
    """§8.1: `data/` with a missing key gives nil (no error); the exact key works."""
    assert run("data/citis").value is None
    assert run("data/cities").value == ["Oslo", "Rome"]
    assert run("cities").value == ["Oslo", "Rome"]  # bare data key through fallback


def test_ambiguous_reference_names_both() -> None:
    """§8.4: a bare name that is both a tool and a data key ⇒ ambiguous_reference naming
    `tool/x` and `data/x`."""
    e = err("(count ports)", data={"ports": [1]}, tools={"ports": _list_ports})
    assert e.type == "ambiguous_reference", (e.type, e.message)
    assert "tool/ports" in e.message and "data/ports" in e.message, e.message


def test_tool_error_message() -> None:
    """§8.2: a tool that raises ⇒ tool_error (`Tool 'geocode' failed: …`)."""

    def geocode(**_: Any) -> None:
        raise ValueError("no such city: Atlantis")

    e = err('(tool/geocode {:city "Atlantis"})', tools={"geocode": geocode})
    assert e.type == "tool_error", (e.type, e.message)
    assert e.message.startswith("Tool 'geocode' failed: "), e.message
    assert "Atlantis" in e.message


def test_undefined_name_suggests_previous_turn_definition() -> None:
    """§8.3/§10.3: definitions from earlier turns are suggestion sources too."""
    s = ptc.Session()
    assert s.run("(def revenue-by-month {:jan 1})").error is None
    r = s.run("(:jan revenue-by-mnth)")
    assert r.error is not None and r.error.type == "undefined_variable"
    assert r.error.hint is not None and "revenue-by-month" in r.error.hint


def test_feedback_shape() -> None:
    """§10.1: hosts show an error to the LLM as `Error: <message>` plus position and hint."""
    e = err("(filtr odd? [1])")
    text = e.feedback()
    assert text.startswith(f"Error: {e.message}")
    assert "filter" in text


# --------------------------------------------------------------------------- positions

PARSE_AND_ANALYSIS_POSITIONS: list[tuple[str, str, int, int]] = [
    ("(+ 1 2", "parse_error", 1, 1),
    ("(do\n  [1 2", "parse_error", 2, 3),
    ('(do\n  "abc', "parse_error", 2, 3),
    ("(do 1)\n(inc @x)", "parse_error", 2, 6),
    ('(do 1)\n  (re-find #"a" s)', "parse_error", 2, 12),
    ("(do\n  (if))", "analysis_error", 2, 3),
    ("(defn f [x]\n  (let [a 1 b]\n    a))", "analysis_error", 2, 3),
    ("(loop [i 0]\n  (inc\n    (recur i)))", "analysis_error", 3, 5),
    ("(println 1)\n(< 1 2 3)", "analysis_error", 2, 1),
    ("(do 1)\n\n   (http/get 1)", "analysis_error", 3, 4),
]


@pytest.mark.parametrize(("src", "kind", "line", "column"), PARSE_AND_ANALYSIS_POSITIONS)
def test_positions_on_parse_and_analysis_errors(
    src: str, kind: str, line: int, column: int
) -> None:
    """§10.1: parse errors always carry a position; analysis errors carry the form's position
    (1-based line and column)."""
    e = err(src)
    assert e.type == kind, (e.type, e.message)
    assert (e.line, e.column) == (line, column), (e.line, e.column, e.message)


MULTILINE_PROGRAM = """\
(def xs [1 2 3])
(defn total [v]
  (reduce + v))
(let [s (total xs)]
  (+ s "x"))
"""


def test_position_of_runtime_error_in_multiline_program() -> None:
    """§10.1: a runtime error inside a multi-line program reports where it happened."""
    e = err(MULTILINE_PROGRAM)
    assert e.type == "type_error"
    assert (e.line, e.column) == (5, 3), (e.line, e.column)


def test_position_of_runtime_error_inside_a_function() -> None:
    """§10.1: an error raised inside a user function points into that function's body."""
    src = "(defn avg [v]\n  (/ (reduce + v)\n     (count v)))\n(avg [1 nil])"
    e = err(src)
    assert e.type == "type_error"
    assert e.line == 2, (e.line, e.column, e.message)


def test_position_of_undefined_name() -> None:
    """§10.1: an undefined name is reported at the symbol."""
    e = err("(let [a 1]\n  (+ a\n     bogus))")
    assert e.type == "undefined_variable"
    assert (e.line, e.column) == (3, 6)
