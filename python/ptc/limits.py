"""Resource limits of a run (LANGUAGE.md §11)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields

from . import _core

_DEFAULTS: dict[str, int] = dict(_core.DEFAULT_LIMITS)


@dataclass(frozen=True)
class Limits:
    """Limits of one run. Every field has a default; exceeding one ends the run with a
    `LimitError` whose ``limit`` names the field.

    - ``fuel``: evaluation steps (a deterministic bound on work).
    - ``timeout_ms``: wall-clock time, time inside tools included.
    - ``max_depth``: nested function calls.
    - ``max_collection_size``: elements in any vector, map or set the program builds.
    - ``max_string_size``: bytes in any string the program builds.
    - ``max_output``: total bytes of println output.
    - ``max_memory``: bytes the program allocates (input data and earlier definitions excluded).
    - ``loop_limit``: ``recur``/``doseq`` iterations per function invocation.
    - ``max_nesting``: bracket nesting depth of the program text.
    - ``max_symbols``: distinct symbols and keywords in one program.
    - ``max_tool_calls``: tool calls of one run, all tools together (parallel branches'
      included; a nested agent's runs count on their own). A tool may also cap its own
      calls (``Tool(max_calls=...)``).
    """

    fuel: int = _DEFAULTS["fuel"]
    timeout_ms: int = _DEFAULTS["timeout_ms"]
    max_depth: int = _DEFAULTS["max_depth"]
    max_collection_size: int = _DEFAULTS["max_collection_size"]
    max_string_size: int = _DEFAULTS["max_string_size"]
    max_output: int = _DEFAULTS["max_output"]
    max_memory: int = _DEFAULTS["max_memory"]
    loop_limit: int = _DEFAULTS["loop_limit"]
    max_nesting: int = _DEFAULTS["max_nesting"]
    max_symbols: int = _DEFAULTS["max_symbols"]
    max_tool_calls: int = _DEFAULTS["max_tool_calls"]

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


LIMIT_NAMES = frozenset(f.name for f in fields(Limits))

LimitsArg = Limits | Mapping[str, int] | None


def limits_dict(limits: LimitsArg) -> dict[str, int] | None:
    """Normalizes a `Limits` or a mapping of overrides to the dict the core takes."""
    if limits is None:
        return None
    if isinstance(limits, Limits):
        return limits.to_dict()
    if isinstance(limits, Mapping):
        unknown = set(limits) - LIMIT_NAMES
        if unknown:
            raise ValueError(
                f"unknown limit(s) {sorted(unknown)}; known limits: {sorted(LIMIT_NAMES)}"
            )
        return dict(limits)
    raise TypeError(f"limits must be a ptc.Limits or a mapping, got {type(limits).__name__}")
