"""The entry points `Session.run` and `ptc.run`: the direct path (a `str` program, no limits:
straight to the core) and the checked path (anything else) behave as one function."""

from __future__ import annotations

import inspect
import types
from typing import Any

import ptc
import pytest


def test_session_run_is_the_core_method_and_keeps_its_signature() -> None:
    s = ptc.Session()
    assert s.run("(+ 1 2)").value == 3
    assert type(s).run is ptc._core.CoreSession.run
    assert type(s).__mro__[1] is ptc._core.CoreSession
    assert str(inspect.signature(ptc.Session.run)) == (
        "(self, /, source, *, limits=None, cancel=None, lazy=False, check=False, approved=None)"
    )
    # keyword-only options, as before
    with pytest.raises(TypeError):
        s.run("1", None)  # type: ignore[misc]


@pytest.mark.parametrize("source", [3, b"(+ 1 2)", None, ["(+ 1 2)"]])
def test_a_program_that_is_not_a_str_is_a_type_error(source: Any) -> None:
    with pytest.raises(TypeError) as info:
        ptc.Session().run(source)
    assert str(info.value) == f"source must be a str, got {type(source).__name__}"
    with pytest.raises(TypeError) as info:
        ptc.run(source)
    assert str(info.value) == f"source must be a str, got {type(source).__name__}"


def test_a_str_subclass_takes_the_direct_path() -> None:
    class Program(str):
        pass

    assert ptc.Session().run(Program("(* 6 7)")).value == 42


@pytest.mark.parametrize("run", ["session", "function"])
def test_a_lone_surrogate_is_a_value_error_saying_where(run: str) -> None:
    source = '(+ 1 2)\n(str "a\udc80")'
    with pytest.raises(ValueError) as info:
        if run == "session":
            ptc.Session().run(source)
        else:
            ptc.run(source)
    assert str(info.value) == (
        "the program is not valid Unicode text: '\\udc80' (a lone surrogate) at line 2, "
        "column 8; decode the program's bytes as UTF-8 without 'surrogateescape', or remove "
        "the character"
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_limits_take_the_checked_path() -> None:
    s = ptc.Session()
    program = "(reduce + (range 10000))"
    assert s.run(program).value == 49995000
    for limits in ({"fuel": 50}, ptc.Limits(fuel=50)):
        r = s.run(program, limits=limits)
        assert isinstance(r.error, ptc.ExecutionLimitError)
        assert r.error.message == "evaluation step limit (fuel) of 50 exceeded"
    with pytest.raises(ValueError) as info:
        s.run(program, limits={"fule": 5})
    assert str(info.value).startswith("unknown limit(s) ['fule']; known limits: ['fuel', ")


def test_cancel_must_be_a_token() -> None:
    s = ptc.Session()
    token = ptc.CancelToken()
    assert s.run("1", cancel=token).value == 1
    with pytest.raises(TypeError) as info:
        s.run("1", cancel="stop")  # type: ignore[arg-type]
    assert "CancelToken" in str(info.value)
    token.cancel()
    with pytest.raises(ptc.Cancelled):
        s.run("1", cancel=token)


def test_lazy_is_passed_on() -> None:
    r = ptc.Session().run("[1 2 3]", lazy=True)
    assert r.lazy_value.is_converted is False
    assert r.value == [1, 2, 3]


def test_a_subclass_can_override_run() -> None:
    class Logged(ptc.Session):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[str] = []

        def run(self, source: str, **kw: Any) -> ptc.Result:  # type: ignore[override]
            self.seen.append(source)
            return super().run(source, **kw)

    s = Logged()
    assert s.run("(+ 1 2)", lazy=False).value == 3
    assert s.seen == ["(+ 1 2)"]


def test_patching_the_class_reaches_every_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracing integrations wrap `Session.run` on the class: instances must not bypass it."""
    calls: list[str] = []
    original = ptc.Session.run

    def traced(self: ptc.Session, source: str, **kw: Any) -> ptc.Result:
        calls.append(source)
        return original(self, source, **kw)

    monkeypatch.setattr(ptc.Session, "run", traced)
    assert ptc.Session().run("(+ 2 2)").value == 4
    assert calls == ["(+ 2 2)"]


def test_a_subclass_that_skips_init_gets_a_clear_error() -> None:
    class Broken(ptc.Session):
        def __init__(self) -> None:
            pass

    with pytest.raises(RuntimeError) as info:
        Broken().run("1")
    assert str(info.value) == "the Session has no core: its __init__ did not run"


def test_the_core_is_made_once() -> None:
    s = ptc.Session(data={"n": 1})
    s.run("(def x 5)")
    for again in (lambda: ptc._core.CoreSession.__init__(s), lambda: s.__init__()):
        with pytest.raises(RuntimeError) as info:
            again()
        assert str(info.value) == "the Session already has its core"
    # the Session is as it was
    assert s.run("[x data/n]").value == [5, 1]


def test_every_core_method_of_a_session_without_its_core_raises() -> None:
    class Broken(ptc.Session):
        def __init__(self) -> None:
            pass

    s = Broken()
    calls = [
        lambda: s.run("1", limits={"fuel": 5}),
        lambda: s.cancel(),
        lambda: s.definitions,
        lambda: s.data_keys,
        lambda: len(s.memory),
        lambda: s.describe("x"),
        lambda: s.describe_data("x"),
        lambda: s._state_fingerprint(),
    ]
    for call in calls:
        with pytest.raises(RuntimeError) as info:
            call()
        assert str(info.value) == "the Session has no core: its __init__ did not run"


def test_ptc_run_has_fresh_state_each_call() -> None:
    assert ptc.run("(def x 41) (inc x)").value == 42
    r = ptc.run("x")
    assert r.error is not None and "x" in r.error.message
    assert ptc.run("[*1 *2 *3]").value == [None, None, None]


@pytest.mark.parametrize(
    "data",
    [
        {"n": 5},
        types.MappingProxyType({"n": 5}),  # a Mapping, not a dict: through a Session
    ],
)
def test_ptc_run_reads_data(data: Any) -> None:
    assert ptc.run("(* 2 data/n)", data=data).value == 10


def test_ptc_run_with_tools_and_limits() -> None:
    assert ptc.run("(tool/twice 4)", tools={"twice": lambda x: 2 * x}).value == 8
    r = ptc.run("(reduce + (range 10000))", limits={"fuel": 50})
    assert isinstance(r.error, ptc.ExecutionLimitError)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1], "data must be a mapping of name -> value, got list"),
        ({1: 2}, "data keys must be strings, got int"),
    ],
)
def test_ptc_run_bad_data(data: Any, message: str) -> None:
    with pytest.raises(TypeError) as info:
        ptc.run("1", data=data)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("nil", None),
        ("true", True),
        ("-7", -7),
        ("257", 257),
        ("2.5", 2.5),
        ('"short"', "short"),
        # 255 and 256 bytes: either side of the length from which strings are shared
        (f'"{"x" * 255}"', "x" * 255),
        (f'"{"y" * 256}"', "y" * 256),
        (":kw", ptc.Keyword("kw")),
    ],
)
def test_plain_values_convert_as_before(program: str, expected: Any) -> None:
    value = ptc.Session().run(program).value
    assert value == expected and type(value) is type(expected)


def test_turn_history_keeps_plain_values_and_cuts_long_ones() -> None:
    """LANGUAGE.md §8.5: `*1` keeps about 1 KB of a result; shorter ones as they are."""
    texts = ["\x01" * 128, "\x01" * 129, "é" * 64]
    data = {f"t{i}": t for i, t in enumerate(texts)}
    s = ptc.Session(data={**data, "long": "a" * 2000})
    for i, text in enumerate(texts):
        s.run(f"data/t{i}")
        assert s.run("*1").value == text
    s.run("2.5")
    assert s.run("*1").value == 2.5
    s.run("data/long")
    # a long value is kept as its printed text, cut at 1024 characters
    assert s.run("*1").value == '"' + "a" * 1023
