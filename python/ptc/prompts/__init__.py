"""Prompt text shipped with the package (loaded with importlib.resources)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def system_prompt() -> str:
    """The default SYSTEM message: a concise PTC-Lisp guide, identical on every turn (MSG-006)."""
    return resources.files(__package__).joinpath("system.md").read_text("utf-8").strip()


__all__ = ["system_prompt"]
