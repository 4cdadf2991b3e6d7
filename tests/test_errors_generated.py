"""Issue 9: one Python exception class per core error kind, generated from rust/error.rs
(scripts/gen_errors.py), all under `ptc.LispError`."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import ptc
import pytest
from ptc import _core
from ptc.errors import ERROR_CLASSES

ROOT = Path(__file__).resolve().parent.parent


def _generator():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("gen_errors", ROOT / "scripts" / "gen_errors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_generated_block_is_up_to_date() -> None:
    """Fails after a kind is added to rust/error.rs until `python scripts/gen_errors.py` runs."""
    gen = _generator()
    current = (ROOT / "python" / "ptc" / "errors.py").read_text(encoding="utf-8")
    assert gen.render(current, _core.error_kinds()) == current


def test_every_kind_has_its_own_class_under_lisp_error() -> None:
    kinds = _core.error_kinds()
    assert len(kinds) == 24
    assert sorted(ERROR_CLASSES) == sorted(k for k, _, _, _ in kinds)
    classes = list(ERROR_CLASSES.values())
    assert len(set(classes)) == len(classes)  # no two kinds share a class
    for type_, name, base, _doc in kinds:
        cls = ERROR_CLASSES[type_]
        assert cls.__name__ == name
        assert issubclass(cls, ptc.LispError)
        assert base in [b.__name__ for b in cls.__mro__]
        assert getattr(ptc, name) is cls  # exported from the package


LIMITS = {"timeout_ms": 200, "loop_limit": 10**9, "fuel": 10**12}


@pytest.mark.parametrize(
    ("program", "limits", "cls", "families"),
    [
        ("(foo 1)", None, "UndefinedVariable", ["NameResolutionError"]),
        ("(tool/nope 1)", None, "UnknownTool", ["NameResolutionError"]),
        ('(+ 1 "a")', None, "LispTypeError", ["ArgumentError"]),
        ("((fn [a] a))", None, "ArityError", ["ArgumentError"]),
        ("(+ 9223372036854775807 1)", None, "LispArithmeticError", []),
        ("(1 2)", None, "NotCallable", ["ArgumentError"]),
        ("(let [[a] 5] a)", None, "DestructureError", ["ArgumentError"]),
        ("(def map 1)", None, "CannotShadowBuiltin", ["AnalysisError"]),
        ("(loop [i 0] (recur (inc i)))", {"loop_limit": 100}, "LoopLimitExceeded", ["LimitError"]),
        ("(loop [i 0] (recur (inc i)))", LIMITS, "TimeoutExceeded", ["LimitError"]),
        (
            "(loop [i 0] (recur (inc i)))",
            {"fuel": 1000},
            "ExecutionLimitError",
            ["ExecutionError", "LimitError"],
        ),
        ("[[[[1]]]]", {"max_nesting": 2}, "NestingLimitError", ["ParseError", "LimitError"]),
        (
            "(count (vec (range 9000000)))",
            {"max_memory": 16 << 20},
            "MemoryExceeded",
            ["LimitError"],
        ),
        ("(pmap (fn [x] (return x)) [1])", None, "PmapError", []),
        ("(pcalls 5)", None, "PcallsError", []),
        ('(str "a" (', None, "ParseError", []),
    ],
)
def test_errors_come_back_as_their_kind_class(
    program: str, limits: dict[str, int] | None, cls: str, families: list[str]
) -> None:
    r = ptc.run(program, limits=limits)
    assert r.error is not None, program
    assert type(r.error).__name__ == cls, (program, r.error.type, r.error.message)
    for family in families:
        assert isinstance(r.error, getattr(ptc, family))
    assert ERROR_CLASSES[r.error.type] in type(r.error).__mro__
