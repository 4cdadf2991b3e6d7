"""Moved to :mod:`ptc.tools.signature` (signatures are about tools); these names still
resolve here."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    import warnings

    import ptc.tools.signature as moved

    warnings.warn(
        f"ptc.compression.signature.{name} is deprecated: import it from ptc.tools.signature",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(moved, name)
