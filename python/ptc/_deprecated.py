"""Old names that still resolve, with a ``DeprecationWarning``: one way for every module that
renamed or moved something (a module-level ``__getattr__`` made here)."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any


def renamed(module: str, old: str, new: str, value: Any) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``module.old``, now ``module.new`` (which is ``value``)."""

    def __getattr__(name: str) -> Any:
        if name != old:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(
            f"{module}.{old} is deprecated: use {module}.{new}", DeprecationWarning, stacklevel=2
        )
        return value

    return __getattr__


def moved(old_module: str, new_module: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` for a module whose names now live in ``new_module``."""

    def __getattr__(name: str) -> Any:
        value = getattr(importlib.import_module(new_module), name)
        warnings.warn(
            f"{old_module}.{name} is deprecated: import it from {new_module}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value

    return __getattr__
