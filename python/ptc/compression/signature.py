"""Moved to :mod:`ptc.tools.signature` (signatures are about tools); these names still
resolve here."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import ptc.tools.signature as moved

    return getattr(moved, name)
