"""Helpers shared by the language tests: evaluate, expect an error, print a value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ptc

CASES = Path(__file__).parent / "cases"


def cases(family: str, table: str) -> list[tuple[str, str]]:
    """The (program, printed value) pairs of section ``### table`` of cases/<family>.txt:
    the same file rust/tests/lang_cases.rs runs on the interpreter alone."""
    out: list[tuple[str, str]] = []
    current = None
    for line in (CASES / f"{family}.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("### "):
            current = line[4:].split()[0]
        elif current == table and line and not line.startswith(";;"):
            src, _, expected = line.partition("\t")
            out.append((src, expected))
    assert out, f"no cases in ### {table} of {family}.txt"
    return out


def error_cases(family: str, table: str) -> list[tuple[str, str, str]]:
    """The (program, function, type label) of a section of ``!type_error`` cases: the program
    fails with a type_error whose message names the function and the value's type."""
    out = []
    for src, expected in cases(family, table):
        kind, fn, label = expected.split("\t")
        assert kind == "!type_error", expected
        out.append((src, fn, label))
    return out


def ev(src: str, **kw: Any) -> Any:
    return ptc.eval(src, **kw)


def err(src: str, **kw: Any) -> ptc.LispError:
    r = ptc.run(src, **kw)
    assert r.error is not None, f"expected an error, got value {r.value!r}"
    return r.error


def show(src: str) -> str:
    """The printed form of the value of ``src``, rendered inside the interpreter (keeps order)."""
    text = ev(f"(str (vector {src}))")
    assert isinstance(text, str) and text.startswith("[") and text.endswith("]"), text
    return text[1:-1]


def show_printed(src: str, **kw: Any) -> str:
    """The printed form of the value of ``src``, rendered inside the interpreter."""
    text = ev(f"(str (vector {src}))", **kw)
    assert isinstance(text, str) and text.startswith("[") and text.endswith("]"), text
    return text[1:-1]


def check_type_error(src: str, fn: str, label: str) -> ptc.LispError:
    e = err(src)
    assert e.type == "type_error", (e.type, e.message)
    assert fn in e.message, e.message
    assert label in e.message, e.message
    return e


def check_arity_error(src: str, fn: str, accepted: str, got: int) -> None:
    e = err(src)
    assert e.type == "arity_error", (e.type, e.message)
    assert fn in e.message, e.message
    assert accepted in e.message, e.message
    assert f"got {got}" in e.message, e.message


def full_text(e: ptc.LispError) -> str:
    return f"{e.message} {e.hint or ''}"
