"""The Compression protocol (ARC-003), its options and :func:`normalize` (API-001..006)."""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypedDict, runtime_checkable

from ptc import _core, _records
from ptc.turn import MemoryEntry, Turn

#: A chat message as a strategy renders it and ``Step.messages`` holds it: a plain
#: ``{"role": ..., "content": ...}`` dict (``ptc.history.Message`` is the rich message model).
ChatMessage = dict[str, str]


@dataclass(frozen=True)
class ToolSpec(_records.Record):
    """A tool as shown in the ``tool/`` section (FMT-004)."""

    name: str
    params: tuple[str, ...]
    signature: str
    description: str | None = None


@dataclass(frozen=True)
class DataEntry(_records.Record):
    """An input data key as shown in the ``data/`` section (FMT-005)."""

    name: str
    type: str
    sample: str | None = None


class RenderOptions(TypedDict, total=False):
    """What a strategy receives as ``opts``: its own options plus the run's fixed context."""

    mission: str
    system_prompt: str
    max_turns: int
    tools: Sequence[ToolSpec]
    data: Sequence[DataEntry]
    println_limit: int
    tool_call_limit: int
    sample_limit: int
    sample_printable_limit: int
    tool_args_limit: int
    tool_args_printable_limit: int
    println_max_chars: int
    #: printed output shown after a turn, in exact o200k tokens (``SubAgent(output_tokens=)``)
    output_tokens: int
    #: a turn's error message shown after it, in exact o200k tokens (``SubAgent(result_tokens=)``)
    result_tokens: int
    #: the tool/ section's budget in exact o200k tokens (``SubAgent(tool_listing_tokens=)``)
    tool_listing_tokens: int


@dataclass(frozen=True)
class CompressionStats(_records.Record):
    """What one render kept and dropped; the agent puts the last one in ``step.usage``."""

    strategy: str
    turns_compressed: int = 0
    tool_calls_shown: int = 0
    tool_calls_dropped: int = 0
    printlns_shown: int = 0
    printlns_dropped: int = 0


@runtime_checkable
class Compression(Protocol):
    """A history strategy: a pure function from turns and memory to chat messages (ARC-004).

    ``to_messages`` must not read clocks, sessions or globals: the same arguments must give the
    same messages byte for byte, so prompts can be re-derived from stored turns (DBG-003).
    """

    @property
    def name(self) -> str: ...

    def to_messages(
        self, turns: Sequence[Turn], memory: Sequence[MemoryEntry], opts: RenderOptions
    ) -> tuple[list[ChatMessage], CompressionStats]: ...


_REGISTRY: dict[str, type] = {}


#: What ``compression=`` takes: ``True``/``False``/``None``, a strategy (class or instance), a
#: ``(strategy, {option: value})`` pair, or a mapping of options for the default strategy.
CompressionArg = (
    bool
    | Compression
    | type[Compression]
    | tuple[Compression | type[Compression], Mapping[str, int]]
    | Mapping[str, int]
    | None
)


def register(cls: type) -> type:
    """Class decorator: make a strategy known by name so stored steps can re-render (DBG-003)."""
    _REGISTRY[cls.name] = cls  # type: ignore[attr-defined]
    return cls


def strategy_by_name(name: str) -> Compression:
    try:
        strategy: Compression = _REGISTRY[name]()
        return strategy
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise ValueError(f"unknown compression strategy {name!r} (known: {known})") from None


def _check_value(key: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"compression option {key} must be a non-negative int, got {value!r}")


@dataclass(frozen=True)
class Strategy:
    """Base of the built-in strategies: a frozen dataclass whose fields are its options
    (``SingleUserCoalesced(println_limit=10)``), checked when it is made. Instances with the
    same options are equal. A custom strategy may subclass it to take options the same way,
    or only follow the :class:`Compression` protocol."""

    name: ClassVar[str]

    println_limit: int = 15  # API-004: most recent println calls shown
    tool_call_limit: int = 20  # API-005: most recent tool calls shown
    sample_limit: int = _core.SAMPLE_LIMIT  # TRN-002: collection items in a sample (3)
    sample_printable_limit: int = _core.SAMPLE_PRINTABLE_LIMIT  # TRN-002: characters (80)
    tool_args_limit: int = _core.TOOL_ARGS_LIMIT  # TRN-003 (3)
    tool_args_printable_limit: int = _core.TOOL_ARGS_PRINTABLE_LIMIT  # TRN-003 (60)
    # TRN-011: one println entry is cut after this (2,000, as the core keeps them)
    println_max_chars: int = _core.PRINT_ENTRY_CHARS

    def __post_init__(self) -> None:
        for key, value in self.options().items():
            _check_value(key, value)

    def options(self) -> dict[str, int]:
        """The options as a dict (field name -> value)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def _merged(self, opts: RenderOptions) -> dict[str, Any]:
        """This strategy's options under the render's own (a stored run's options win)."""
        return {**self.options(), **opts}


#: The options' defaults: the fields of :class:`Strategy` (one place).
DEFAULT_OPTIONS: Mapping[str, int] = types.MappingProxyType(Strategy().options())
