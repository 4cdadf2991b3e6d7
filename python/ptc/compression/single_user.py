"""``SingleUserCoalesced``: every successful turn folded into one USER message (ARC-005, MSG-001).

Messages: ``[SYSTEM, USER(mission + context + turns left)]`` followed, for each failed turn, by
its full ASSISTANT program and a USER message with the error (ERR-001..003). Successful programs are
never replayed: the LLM sees what exists (``user/`` prelude), what it did (tool calls) and what it
printed (output), which is what it needs to write the next program.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ptc.compression import _format as f
from ptc.compression.base import (
    ChatMessage,
    CompressionStats,
    RenderOptions,
    Strategy,
    register,
)
from ptc.turn import MemoryEntry, Turn


@register
@dataclass(frozen=True)
class SingleUserCoalesced(Strategy):
    """The default strategy (ARC-005); its fields are its options."""

    name: ClassVar[str] = "single_user_coalesced"

    def to_messages(
        self, turns: Sequence[Turn], memory: Sequence[MemoryEntry], opts: RenderOptions
    ) -> tuple[list[ChatMessage], CompressionStats]:
        r = f.Rendering(self, opts)
        o, max_turns = r.o, r.max_turns
        successful = [t for t in turns if t.success]
        failed = [t for t in turns if not t.success]

        sections = f.namespace_sections(opts)

        # user/ prelude (NS-003, NS-011): the memory snapshot, in definition order (DEF-009).
        # A value gets its sample only when the turn that last defined it printed nothing
        # (SAM-001/002): println output and samples are never both shown.
        printed_in: dict[str, bool] = {}
        for turn in turns:
            for name in turn.defined:
                printed_in[name] = bool(turn.prints)
        if memory:
            lines = [f.USER_HEADER]
            lines += [f.memory_line(m, not printed_in.get(m.name, False)) for m in memory]
            sections.append("\n".join(lines))

        # Tool calls from every turn, failed ones included: side effects happened (TC-001),
        # most recent ``tool_call_limit`` kept (TC-002, TC-007). FMT-013's "none made" line only
        # when there are tools that could have been called: without tools it carries no news.
        calls = [c for t in turns for c in t.tool_calls]
        limit = o["tool_call_limit"]
        shown_calls = calls[len(calls) - limit :] if limit else []
        if shown_calls:
            sections.append("\n".join([f.TOOL_CALLS_HEADER, *map(f.tool_call_line, shown_calls)]))
        elif turns and not calls and opts.get("tools"):
            sections.append(f.NO_TOOL_CALLS)

        # Output of successful turns, counted per println call (TRN-006), oldest dropped (TRN-010).
        prints = [p for t in successful for p in t.prints]
        plimit = o["println_limit"]
        shown_prints = prints[len(prints) - plimit :] if plimit else []
        if shown_prints:
            out = [f.OUTPUT_HEADER, *f.output_lines(shown_prints, r.max_chars, r.max_tokens)]
            sections.append("\n".join(out))

        current_left = max_turns - len(turns)
        # With failed turns after it, the coalesced message carries the count it had when the first
        # failed turn was asked for; the last USER message always carries the current count.
        first_left = max_turns - (failed[0].number - 1) if failed else current_left
        messages = r.opening(sections, first_left)
        for i, turn in enumerate(failed):
            left = current_left if i == len(failed) - 1 else max_turns - turn.number
            messages += r.exchange(turn, r.error(turn), left)

        stats = CompressionStats(
            strategy=self.name,
            turns_compressed=len(successful),
            tool_calls_shown=len(shown_calls),
            tool_calls_dropped=len(calls) - len(shown_calls),
            printlns_shown=len(shown_prints),
            printlns_dropped=len(prints) - len(shown_prints),
        )
        return messages, stats
