"""History strategies for ordinary chat/tool-call agents.

Three ways to keep an agent's context bounded, behind one protocol (a strategy is a pure
function of the history and its options, returning messages and stats):

- :class:`LoopSlices` (seed 002): system prompt + prompt source + latest tool loop, or the
  turn-aware variant; with :class:`NudgeController` for nudges and the circuit breaker.
- :class:`TokenCompaction` (seed 003): token-triggered rebuild from recent user messages
  and one detectable summary.
- :class:`SafeSplitSummarization` (seed 004): message-level summaries, then a tool-pair-safe
  split and a chunked ``<state_snapshot>``.

Plus OpenAI/Anthropic conversion, a validator and repair for each provider, pluggable token
counting, and the searchable log: :class:`HistoryStore` on SQLite, :class:`PostgresStore` (and
:class:`AsyncPostgresStore`) on PostgreSQL, chosen by URL with :func:`open_store`. This
subpackage depends on the standard library only, except PostgreSQL, which needs psycopg
(``pip install 'ptc-runtime[postgres]'``; from a clone: ``pip install '.[postgres]'``).
"""

from __future__ import annotations

from .anthropic_codec import from_anthropic, to_anthropic
from .base import (
    DeterministicSummarizer,
    HistoryResult,
    HistoryStats,
    HistoryStrategy,
    Summarizer,
    SummaryRequest,
)
from .codecs import to_messages
from .compaction import SUMMARY_PREFIX, CompactionEvent, TokenCompaction, is_summary_message
from .facts import fallback_summary, recent_files
from .loop_slices import (
    NUDGE_MESSAGES,
    LoopSlices,
    NudgeController,
    NudgeDecision,
    extract_latest_tool_loop,
    find_turn_start,
    is_complete_loop,
    select_prompt_source,
    synthetic_nudge,
)
from .messages import ChatToolCall, ImagePart, Message, Meta, OtherPart, TextPart
from .openai_codec import from_openai, to_openai
from .pgstore import AsyncPostgresStore, PostgresStore
from .repair import (
    CONTINUATION_TEXT,
    PROVIDERS,
    Issue,
    Provider,
    RepairReport,
    continuation_message,
    ensure_alternating_roles,
    for_provider,
    is_valid,
    repair,
    strip_orphans,
    validate,
)
from .rows import (
    MAX_QUERY_CHARS,
    KeyReusedError,
    SearchQueryTooLong,
    SearchTimeout,
    StoredMessage,
)
from .safe_split import (
    RESTORATION_PREFIX,
    SafeSplitSummarization,
    Split,
    achunk_and_consolidate,
    chunk_and_consolidate,
    find_split,
    is_split_safe,
    split_best_effort,
    split_phase1,
    split_phase2,
    split_phase3,
    tool_pairs,
)
from .store import HistoryStore, Store, open_store
from .text import plain_text_tool_history
from .tokens import (
    MODEL_CONTEXT_LIMITS,
    CounterChoice,
    EstimateCounter,
    ExactCounter,
    TokenCounter,
    context_limit,
    count_tokens,
    default_counter,
    encoding_for_model,
    resolve_counter,
    usage_tokens,
)
from .tools import HIT_CHARS, HistoryTool, search_tools

__all__ = [
    "CONTINUATION_TEXT",
    "HIT_CHARS",
    "MAX_QUERY_CHARS",
    "MODEL_CONTEXT_LIMITS",
    "NUDGE_MESSAGES",
    "PROVIDERS",
    "RESTORATION_PREFIX",
    "SUMMARY_PREFIX",
    "AsyncPostgresStore",
    "ChatToolCall",
    "CompactionEvent",
    "CounterChoice",
    "DeterministicSummarizer",
    "EstimateCounter",
    "ExactCounter",
    "HistoryResult",
    "HistoryStats",
    "HistoryStore",
    "HistoryStrategy",
    "HistoryTool",
    "ImagePart",
    "Issue",
    "KeyReusedError",
    "LoopSlices",
    "Message",
    "Meta",
    "NudgeController",
    "NudgeDecision",
    "OtherPart",
    "PostgresStore",
    "Provider",
    "RepairReport",
    "SafeSplitSummarization",
    "SearchQueryTooLong",
    "SearchTimeout",
    "Split",
    "Store",
    "StoredMessage",
    "Summarizer",
    "SummaryRequest",
    "TextPart",
    "TokenCompaction",
    "TokenCounter",
    "achunk_and_consolidate",
    "chunk_and_consolidate",
    "context_limit",
    "continuation_message",
    "count_tokens",
    "default_counter",
    "encoding_for_model",
    "ensure_alternating_roles",
    "extract_latest_tool_loop",
    "fallback_summary",
    "find_split",
    "find_turn_start",
    "for_provider",
    "from_anthropic",
    "from_openai",
    "is_complete_loop",
    "is_split_safe",
    "is_summary_message",
    "is_valid",
    "open_store",
    "plain_text_tool_history",
    "recent_files",
    "repair",
    "resolve_counter",
    "search_tools",
    "select_prompt_source",
    "split_best_effort",
    "split_phase1",
    "split_phase2",
    "split_phase3",
    "strip_orphans",
    "synthetic_nudge",
    "to_anthropic",
    "to_messages",
    "to_openai",
    "tool_pairs",
    "usage_tokens",
    "validate",
]
