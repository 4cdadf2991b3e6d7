"""Helpers shared by the language tests: evaluate, expect an error, print a value."""

from __future__ import annotations

from typing import Any

import ptc


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
