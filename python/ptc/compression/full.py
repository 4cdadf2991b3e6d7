"""``FullHistory``: no compression (API-003, SS-001).

``[SYSTEM, USER(mission + tool/ data/ + turns left), ASSISTANT(program 1), USER(feedback 1), ...]``
where each feedback shows the output, the result (or the error) and the turns left.
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

RESULT_PREFIX = ";; Result: "


def success_feedback(turn: Turn, max_chars: int, max_tokens: int | None = None) -> str:
    lines = []
    if turn.prints:
        lines.append(f.OUTPUT_HEADER)
        lines.extend(f.output_lines(turn.prints, max_chars, max_tokens))
    lines.append(RESULT_PREFIX + turn.result_text)
    return "\n".join(lines)


@register
@dataclass(frozen=True)
class FullHistory(Strategy):
    """Every program and its feedback, in order. What ``compression=False`` sends."""

    name: ClassVar[str] = "full_history"

    def to_messages(
        self, turns: Sequence[Turn], memory: Sequence[MemoryEntry], opts: RenderOptions
    ) -> tuple[list[ChatMessage], CompressionStats]:
        r = f.Rendering(self, opts)
        messages = r.opening(f.namespace_sections(opts), r.max_turns)
        for turn in turns:
            if turn.success:
                body = success_feedback(turn, r.max_chars, r.max_tokens)
            else:
                body = r.error(turn)
            messages += r.exchange(turn, body, r.max_turns - turn.number)
        n_calls = sum(len(t.tool_calls) for t in turns)
        n_prints = sum(len(t.prints) for t in turns)
        stats = CompressionStats(self.name, 0, n_calls, 0, n_prints, 0)
        return messages, stats
