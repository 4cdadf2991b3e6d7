"""Moved to :mod:`ptc.tools.rich_types`; these names still resolve here."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import warnings

    import ptc.tools.rich_types as moved

    warnings.warn(
        f"ptc.tooltypes.{name} is deprecated: import it from ptc.tools.rich_types",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(moved, name)
