"""Message-history compression strategies (ARC-003..005).

``normalize(spec)`` turns the ``compression=`` option into ``(strategy, opts)``; a strategy's
``to_messages(turns, memory, opts)`` renders the chat messages for the next LLM call.
"""

from __future__ import annotations

from ptc.compression.base import (
    DEFAULT_OPTIONS,
    ChatMessage,
    Compression,
    CompressionArg,
    CompressionStats,
    DataEntry,
    RenderOptions,
    Strategy,
    ToolSpec,
    register,
    strategy_by_name,
)
from ptc.compression.full import FullHistory
from ptc.compression.options import normalize
from ptc.compression.single_user import SingleUserCoalesced

__all__ = [
    "DEFAULT_OPTIONS",
    "ChatMessage",
    "Compression",
    "CompressionArg",
    "CompressionStats",
    "DataEntry",
    "FullHistory",
    "RenderOptions",
    "SingleUserCoalesced",
    "Strategy",
    "ToolSpec",
    "normalize",
    "register",
    "strategy_by_name",
]
