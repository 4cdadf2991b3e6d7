"""The PTC-Lisp language reference, shipped in the wheel (``ptc.language_reference()``)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def language_reference() -> str:
    """The full language reference (Markdown), as in docs/LANGUAGE.md."""
    return resources.files(__package__).joinpath("LANGUAGE.md").read_text("utf-8")


def functions() -> list[dict[str, object]]:
    """The builtins table of the core: name, arities (``max`` None when variadic), doc, and
    whether the name is a constant (``Double/NaN``) rather than a function."""
    from ptc import _core

    return [
        {"name": n, "min": lo, "max": hi, "doc": doc, "constant": const}
        for n, lo, hi, doc, const in _core.builtins()
    ]
