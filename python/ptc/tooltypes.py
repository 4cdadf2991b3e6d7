"""Moved to :mod:`ptc.tools.rich_types`; these names still resolve here."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import ptc.tools.rich_types as moved

    return getattr(moved, name)
