"""The foundation Python API: `ptc.run`, `ptc.eval`, `Result`, the exception classes,
`ptc.to_clojure`, `ptc.type_label` and `ptc.Keyword` (LANGUAGE.md §1.3, §3, §9.1, §10)."""

from __future__ import annotations

import inspect
from typing import Any

import ptc
import pytest

# (source, error type) pairs covering every phase; none of them may raise from `ptc.run`.
PROGRAM_ERRORS: list[tuple[str, str]] = [
    ("(+ 1 2", "parse_error"),
    ("(if)", "analysis_error"),
    ("(no-such-thing 1)", "undefined_variable"),
    ('(+ 1 "a")', "type_error"),
    ("((fn [a] a) 1 2)", "arity_error"),
    ("(1 2)", "not_callable"),
    ("(* 9223372036854775807 2)", "arithmetic_error"),
    ("(def map 1)", "cannot_shadow_builtin"),
    ("(tool/missing)", "unknown_tool"),
    ("(tool/boom)", "tool_error"),
    ("(loop [i 0] (recur (inc i)))", "loop_limit_exceeded"),
]


def _boom() -> None:
    raise RuntimeError("kaput")


@pytest.mark.parametrize(("source", "error_type"), PROGRAM_ERRORS)
def test_run_never_raises_for_program_errors(source: str, error_type: str) -> None:
    """LANGUAGE.md §1.3/§10: `ptc.run` returns program errors in `Result.error`, never raises."""
    r = ptc.run(source, tools={"boom": _boom}, limits={"loop_limit": 50})
    assert isinstance(r, ptc.Result)
    assert r.ok is False
    assert r.returned is False
    assert r.failed is False
    assert r.value is None
    assert isinstance(r.error, ptc.LispError)
    assert r.error.type == error_type
    assert isinstance(r.error.message, str) and r.error.message


def test_result_of_a_value_outcome() -> None:
    """LANGUAGE.md §1.3: normal completion gives the last top-level form's value."""
    r = ptc.run("(def a 1) (+ a 2)")
    assert r.ok is True
    assert r.value == 3
    assert r.returned is False
    assert r.failed is False
    assert r.error is None
    assert r.prints == []
    assert r.tool_calls == []
    assert [d.name for d in r.defined] == ["a"]


def test_empty_program_is_nil() -> None:
    """LANGUAGE.md §1.2: an empty program (only whitespace/comments) evaluates to nil."""
    r = ptc.run("  ; nothing here\n")
    assert r.ok is True
    assert r.value is None
    assert r.error is None


def test_result_of_return() -> None:
    """LANGUAGE.md §5.15: `(return v)` ends the run at once with outcome return."""
    r = ptc.run('(println "before") (return 5) (println "after") 6')
    assert r.ok is True
    assert r.returned is True
    assert r.failed is False
    assert r.value == 5
    assert r.error is None
    assert r.prints == ["before"]


def test_result_of_fail() -> None:
    """LANGUAGE.md §5.15: `(fail v)` ends the run with a failure carrying `v`; not an error."""
    r = ptc.run('(fail {:reason "out of stock"}) 7')
    assert r.ok is False
    assert r.failed is True
    assert r.returned is False
    assert r.error is None
    assert r.value == {"reason": "out of stock"}
    assert all(isinstance(k, ptc.Keyword) for k in r.value)


def test_result_records_prints_tool_calls_and_definitions() -> None:
    """LANGUAGE.md §1.4: a run yields its println lines, tool-call records and definitions."""
    r = ptc.run(
        '(def total (tool/add 2 3)) (println "total:" total) total',
        tools={"add": lambda a, b: a + b},
    )
    assert r.ok is True
    assert r.value == 5
    assert r.prints == ["total: 5"]
    assert len(r.tool_calls) == 1
    call = r.tool_calls[0]
    assert (call.name, call.args, call.result, call.error) == ("add", [2, 3], 5, None)
    assert [(d.name, d.kind, d.type) for d in r.defined] == [("total", "value", "integer")]


def test_eval_returns_the_value() -> None:
    """`ptc.eval(source, **kw)` returns the program's value."""
    assert ptc.eval("(+ 1 2 3)") == 6
    assert ptc.eval("(return [1 2])") == [1, 2]
    assert ptc.eval("(:name data/p)", data={"p": {"name": "Ada"}}) == "Ada"
    assert ptc.eval("(tool/double 21)", tools={"double": lambda x: x * 2}) == 42


def test_eval_raises_program_failed_with_reason() -> None:
    """`ptc.eval` raises `ptc.ProgramFailed` for `(fail x)`, carrying `x` as `.reason`."""
    with pytest.raises(ptc.ProgramFailed) as info:
        ptc.eval('(fail "no flights")')
    assert info.value.reason == "no flights"
    assert isinstance(info.value, ptc.PtcError)
    assert not isinstance(info.value, ptc.LispError)


@pytest.mark.parametrize(
    ("cls", "parent"),
    [
        (ptc.ParseError, ptc.LispError),
        (ptc.AnalysisError, ptc.LispError),
        (ptc.NameResolutionError, ptc.LispError),
        (ptc.ArgumentError, ptc.LispError),
        (ptc.ToolError, ptc.LispError),
        (ptc.LimitError, ptc.LispError),
        (ptc.InternalError, ptc.LispError),
        (ptc.LispError, ptc.PtcError),
        (ptc.ProgramFailed, ptc.PtcError),
        (ptc.PtcError, Exception),
    ],
)
def test_exception_hierarchy(cls: type[BaseException], parent: type[BaseException]) -> None:
    """The error classes of the Python API are `LispError` subclasses (and `PtcError`s)."""
    assert issubclass(cls, parent)


@pytest.mark.parametrize(
    ("source", "cls", "error_type", "line", "column"),
    [
        ("(+ 1 2)\n(foo ]", ptc.ParseError, "parse_error", 2, 6),
        ("(+ 1 2)\n  (if)", ptc.AnalysisError, "analysis_error", 2, 3),
        ("(+ 1 2)\n(fitler nil? [1 2 3])", ptc.NameResolutionError, "undefined_variable", 2, None),
        ('(+ 1 "a")', ptc.ArgumentError, "type_error", 1, None),
        ("((fn [a] a) 1 2)", ptc.ArgumentError, "arity_error", 1, None),
        ("(tool/boom)", ptc.ToolError, "tool_error", 1, None),
        ("(tool/nope)", ptc.NameResolutionError, "unknown_tool", 1, None),
    ],
)
def test_eval_raises_typed_errors_with_position(
    source: str, cls: type[ptc.LispError], error_type: str, line: int, column: int | None
) -> None:
    """LANGUAGE.md §10.1: errors carry type, message, hint and position; `ptc.eval` raises them
    as `LispError` subclasses."""
    with pytest.raises(cls) as info:
        ptc.eval(source, tools={"boom": _boom})
    err = info.value
    assert err.type == error_type
    assert isinstance(err.message, str) and err.message
    assert str(err) == err.message
    assert err.hint is None or isinstance(err.hint, str)
    assert err.line == line
    if column is not None:
        assert err.column == column
    else:
        assert isinstance(err.column, int) and err.column >= 1


def test_eval_error_hint_for_near_builtin() -> None:
    """LANGUAGE.md §10.3: an undefined name close to a builtin gets `Did you mean: filter`."""
    with pytest.raises(ptc.NameResolutionError) as info:
        ptc.eval("(fitler nil? [1 2 3])")
    assert info.value.message == "fitler is not defined"
    assert info.value.hint is not None
    assert "Did you mean" in info.value.hint
    assert "filter" in info.value.hint


def test_eval_raises_limit_error() -> None:
    """LANGUAGE.md §11: a limit ends the run; `ptc.eval` raises `LimitError` naming the limit."""
    with pytest.raises(ptc.LimitError) as info:
        ptc.eval("(loop [i 0] (recur (inc i)))", limits={"loop_limit": 10})
    assert info.value.type == "loop_limit_exceeded"
    assert info.value.limit == "loop_limit"


def test_arithmetic_overflow_is_an_error_not_a_wrap() -> None:
    """LANGUAGE.md §3: integer overflow is an `arithmetic_error`, never a wrap or a float."""
    with pytest.raises(ptc.LispError) as info:
        ptc.eval("(+ 9223372036854775807 1)")
    assert info.value.type == "arithmetic_error"


def test_panic_becomes_internal_error() -> None:
    """A panic inside the core becomes an `internal_error` result, never a crash."""
    if not hasattr(ptc._core, "_panic_for_tests"):
        pytest.skip("NEEDS A TEST BUILD: built without the test-hooks feature (release wheels are)")
    r = ptc._core._panic_for_tests()
    assert r.outcome == "error"
    assert r.ok is False
    assert isinstance(r.error, ptc.InternalError)
    assert r.error.type == "internal_error"
    # the interpreter is still usable afterwards
    assert ptc.eval("(+ 1 1)") == 2


def test_to_clojure_returns_text_and_flag() -> None:
    """LANGUAGE.md §9.1: `to_clojure(value, limit, printable_limit)` returns `(text, truncated)`."""
    assert ptc.to_clojure({"name": "Alice", "age": 30}) == ('{:name "Alice", :age 30}', False)
    assert ptc.to_clojure([4, 8, 15, 16, 23, 42], 3) == (
        "[4 8 15 ...] (6 items, showing first 3)",
        True,
    )
    assert ptc.to_clojure("abcdefgh", None, 5) == ('"abcde..."', True)
    assert ptc.to_clojure({"a": 1, "_b": 2}, hide_private=True)[0] == "{:a 1}"
    assert ptc.to_clojure({"a": 1, "_b": 2})[0] == "{:a 1, :_b 2}"


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ([], "list[0]"),
        ([1, 2, 3], "list[3]"),
        ((1, 2), "list[2]"),
        ({}, "map[0]"),
        ({"a": 1}, "map[1]"),
        (set(), "set[0]"),
        ({1, 2, 3}, "set[3]"),
        (frozenset({1}), "set[1]"),
        ("hello", "string"),
        (42, "integer"),
        (3.14, "float"),
        (True, "boolean"),
        (False, "boolean"),
        (ptc.Keyword("active"), "keyword"),
        (None, "nil"),
    ],
)
def test_type_label(value: Any, label: str) -> None:
    """Seed 000/001 type vocabulary (TYP-001..TYP-012) through `ptc.type_label`."""
    assert ptc.type_label(value) == label


def test_keyword_is_a_str_equal_and_hash_equal_to_its_text() -> None:
    """LANGUAGE.md §3: keywords come back as `ptc.Keyword`, a `str` subclass equal to its text."""
    k = ptc.Keyword("name")
    assert isinstance(k, str)
    assert k == "name"
    assert "name" == k
    assert hash(k) == hash("name")
    assert {"name": 1}[k] == 1
    assert {k: 1}["name"] == 1
    assert k != ptc.Keyword("other")


def test_keyword_round_trips_as_a_keyword() -> None:
    """LANGUAGE.md §3: a `ptc.Keyword` passed in is a keyword again, and never equals a string."""
    data = {"k": ptc.Keyword("active")}
    assert ptc.eval("(= data/k :active)", data=data) is True
    assert ptc.eval('(= data/k "active")', data=data) is False
    out = ptc.eval("data/k", data=data)
    assert type(out) is ptc.Keyword
    assert out == "active"


def test_to_clojure_signature() -> None:
    """Foundation API: `ptc.to_clojure(value, limit=None, printable_limit=None,
    hide_private=False) -> (text, truncated)`, every parameter positional or keyword; the token
    budget of issue 33 keyword-only after them."""
    params = inspect.signature(ptc.to_clojure).parameters
    assert [(p.name, p.default, p.kind.name) for p in params.values()] == [
        ("value", inspect.Parameter.empty, "POSITIONAL_OR_KEYWORD"),
        ("limit", None, "POSITIONAL_OR_KEYWORD"),
        ("printable_limit", None, "POSITIONAL_OR_KEYWORD"),
        ("hide_private", False, "POSITIONAL_OR_KEYWORD"),
        ("max_tokens", None, "KEYWORD_ONLY"),
        ("encoding", "o200k_base", "KEYWORD_ONLY"),
        ("root", None, "KEYWORD_ONLY"),
    ]
    assert ptc.to_clojure({"_a": 1, "b": [1, 2, 3]}, 2, None, True)[0] == (
        "{:b [1 2 ...] (3 items, showing first 2)}"
    )


def test_eval_returns_python_values() -> None:
    assert ptc.eval("(+ 1 2 3)") == 6
    assert ptc.eval("(/ 12 4)") == 3.0


def test_run_reports_an_error_without_raising() -> None:
    r = ptc.run("(undefined-thing 1)")
    assert not r.ok
    assert r.error is not None
    assert r.error.type == "undefined_variable"
