"""The ``compression=`` option made into a strategy and its options (API-001..006): ``True``,
a strategy class or instance, ``(strategy, {option: value})`` or a mapping of options. Above
``base`` (the protocol, the options' checks) and the built-in strategies it defaults to.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

from ptc.compression.base import (
    DEFAULT_OPTIONS,
    Compression,
    CompressionArg,
    Strategy,
    _check_value,
)
from ptc.compression.single_user import SingleUserCoalesced


def _instantiate(strategy: Any) -> Compression:
    obj = strategy() if isinstance(strategy, type) else strategy
    if not (hasattr(obj, "to_messages") and isinstance(getattr(obj, "name", None), str)):
        raise TypeError(
            f"compression strategy must have a 'name' and 'to_messages()', got {strategy!r}"
        )
    return cast(Compression, obj)


def _defaults(strategy: Compression | None) -> dict[str, int]:
    if isinstance(strategy, Strategy):
        return strategy.options()
    # A custom strategy may declare extra options (and their defaults) as `default_options`.
    return {**DEFAULT_OPTIONS, **getattr(strategy, "default_options", {})}


def _check_options(opts: Mapping[str, Any], strategy: Compression | None = None) -> dict[str, int]:
    merged = _defaults(strategy)
    unknown = set(opts) - set(merged)
    if unknown:
        raise ValueError(
            f"unknown compression option(s) {sorted(unknown)}; known: {sorted(merged)}"
        )
    for key, value in opts.items():
        _check_value(key, value)
        merged[key] = value
    return merged


def _with_options(strategy: Compression, opts: Mapping[str, Any]) -> Compression:
    """``strategy`` with ``opts`` applied: a built-in strategy holds them as its fields."""
    if isinstance(strategy, Strategy):
        return dataclasses.replace(strategy, **opts)
    return strategy


def normalize(spec: CompressionArg) -> tuple[Compression | None, dict[str, int]]:
    """Normalize the ``compression=`` option to ``(strategy, opts)`` (API-006).

    ``False``/``None`` -> ``(None, {})``: compression disabled, the full history is sent (API-003).
    ``True`` -> the default :class:`SingleUserCoalesced` with default options (API-001).
    A strategy class or instance -> that strategy with its options
    (``SingleUserCoalesced(println_limit=10)``).
    ``(strategy, {"println_limit": 10})`` -> that strategy with the given options over its own
    (API-002). A bare mapping of options selects the default strategy.
    """
    if spec is None or spec is False:
        return None, {}
    if spec is True:
        spec = SingleUserCoalesced()
    elif isinstance(spec, Mapping):
        spec = (SingleUserCoalesced, spec)
    if isinstance(spec, tuple):
        if len(spec) != 2 or not isinstance(spec[1], Mapping):
            raise TypeError("compression tuple must be (strategy, {option: value})")
        strategy = _instantiate(spec[0])
        opts = _check_options(spec[1], strategy)
        return _with_options(strategy, opts), opts
    strategy = _instantiate(spec)
    return strategy, _defaults(strategy)
