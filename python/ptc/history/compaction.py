"""Token-aware compaction (seed 003, Codex style).

When the history (by local estimate or provider-reported usage, whichever is larger) passes
``threshold_ratio`` of the model's context limit, it is rebuilt as: system prompt + recent
user messages (newest first within a token budget, the newest verbatim) + one
summary message starting with :data:`SUMMARY_PREFIX`. With a known limit the user budget and
the summary are clamped to shares of the room under the threshold, so the result fits it.
Assistant and tool messages are not kept; their effects are in the summary. An earlier
summary is found by its whole prefix at the start of a message or of one of its content parts
(a plain string holding the prefix further in is the user's text), and updated with what
happened since, never summarized again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .base import (
    DeterministicSummarizer,
    HistoryInput,
    HistoryResult,
    Plan,
    Summarizer,
    SummaryRequest,
    adrive,
    drive,
    finish,
    prepare,
)
from .facts import (
    BEST_RANK,
    FittedSummary,
    fallback_summary,
    files_hint_of,
    files_hint_variants,
    fit_fallback,
    hint_files,
    is_unusable_summary,
    recent_files,
    recent_files_hint,
    strip_files_hint,
    work_facts,
)
from .messages import Message, TextPart
from .repair import RepairReport, SystemPolicy, UnansweredPolicy, place_systems
from .text import TRUNCATION_MARKER, render_message, truncate_to_tokens
from .tokens import CounterChoice, TokenCounter, context_limit, resolve_counter, usage_tokens

#: Start of every summary message; how an earlier summary is recognised.
SUMMARY_MARKER = "[context summary]"
SUMMARY_PREFIX = (
    f"{SUMMARY_MARKER} Earlier parts of this conversation were compacted. "
    "This summary replaces them:\n\n"
)

DEFAULT_THRESHOLD_RATIO = 0.7
DEFAULT_MAX_MESSAGES_WITHOUT_LIMIT = 30
DEFAULT_USER_BUDGET = 20_000
#: With a known limit, kept user messages get at most this share of the room under the
#: trigger threshold (threshold minus the system prompt), the summary at most
#: :data:`SUMMARY_SHARE`, so the rebuilt history always fits under the threshold.
USER_BUDGET_SHARE = 0.5
SUMMARY_SHARE = 0.3
#: Floors for tiny limits: the newest user message and the summary never get less.
_MIN_NEWEST_TOKENS = 64
_MIN_SUMMARY_TOKENS = 128
_SUMMARY_FLOOR = 32
DEFAULT_SUMMARIZER_INPUT_RATIO = 0.8
#: Summarizer context assumed when the model's limit is unknown.
DEFAULT_SUMMARIZER_LIMIT = 32_000
#: Smallest remainder worth keeping as a truncated user message.
_MIN_TRUNCATED_TOKENS = 16


@dataclass(frozen=True, slots=True)
class CompactionEvent:
    """Sent to ``on_compact`` when compaction runs (seed 003: clients are notified)."""

    tokens_before: int
    tokens_after: int
    usage_tokens: int | None
    threshold: int | None
    messages_before: int
    messages_after: int
    summary: str
    fallback_used: bool
    updated_previous_summary: bool


def summary_part_index(m: Message) -> int | None:
    """Index of the text part holding a compaction summary (one that starts with the whole
    :data:`SUMMARY_PREFIX`), or ``None``."""
    if m.role != "user":
        return None
    for i, p in enumerate(m.parts):
        if type(p) is TextPart and p.text.startswith(SUMMARY_PREFIX):
            return i
    return None


def split_summary(text: str) -> str | None:
    """The summary body of a text that starts with the whole :data:`SUMMARY_PREFIX`;
    ``None`` otherwise. The marker alone, or the prefix anywhere further in a plain string
    (a quoted earlier summary, or content parts joined into one string), is the user's own
    text, not a summary: only a content part of its own that starts with the prefix is one
    (see :func:`summary_part_index`)."""
    return text[len(SUMMARY_PREFIX) :] if text.startswith(SUMMARY_PREFIX) else None


def is_summary_message(m: Message) -> bool:
    """A user message whose text (a plain string is one part) or one of whose content parts
    starts with the whole :data:`SUMMARY_PREFIX`."""
    return summary_part_index(m) is not None


def _user_items(m: Message) -> tuple[list[Message], str | None]:
    """A user message as kept items plus its embedded summary, if it holds one."""
    idx = summary_part_index(m)
    if idx is not None:
        # the earlier kept user texts, one item per text part; images and other blocks stay
        # with the text before them (a message's image is not a newer message)
        groups: list[list[Any]] = []
        for i, p in enumerate(m.parts):
            if i == idx:
                continue
            if type(p) is TextPart or not groups:
                groups.append([p])
            else:
                groups[-1].append(p)
        items = [
            Message(
                "user",
                tuple(g),
                meta=m.meta,
                origin=m.origin,
                content_style="parts" if len(g) > 1 else "str",
            )
            for g in groups
        ]
        body = split_summary(m.parts[idx].text)  # type: ignore[union-attr]
        return items, body
    return [m], None


def _summary_source(new: Sequence[Message], user_items: Sequence[Message]) -> list[Message]:
    """The messages a summary covers: those since the earlier summary, led by the latest
    user request when none came after it (so no summary says there was none)."""
    out = list(new)
    asked = any(m.role == "user" and m.meta.source != "system" and m.text.strip() for m in new)
    if not asked and user_items:
        out.insert(0, user_items[-1])
    return out


@dataclass(frozen=True)
class TokenCompaction:
    """Seed 003 compaction. Every number is an option; see the module docstring.

    ``context_limit`` wins over the model table; with no limit at all compaction triggers
    above ``max_messages_without_limit`` messages. ``summarizer`` defaults to a
    :class:`DeterministicSummarizer` counting with this strategy's ``counter``, so its summary
    fits the room exactly. ``on_compact`` receives a :class:`CompactionEvent`. A history
    with nothing to summarize (empty, or only a system prompt) is returned as it is, even
    with ``force=True``.
    """

    model: str | None = None
    context_limit: int | None = None
    limits: Mapping[str, int] | None = None
    threshold_ratio: float = DEFAULT_THRESHOLD_RATIO
    max_messages_without_limit: int = DEFAULT_MAX_MESSAGES_WITHOUT_LIMIT
    user_budget: int = DEFAULT_USER_BUDGET
    summarizer: Summarizer | None = None
    summarizer_limit: int | None = None
    summarizer_input_ratio: float = DEFAULT_SUMMARIZER_INPUT_RATIO
    tool_output_chars: int = 2_000
    message_chars: int = 4_000
    diff_lines: int = 40
    recent_files: int = 5
    truncation_marker: str = TRUNCATION_MARKER
    on_compact: Callable[[CompactionEvent], None] | None = None
    counter: CounterChoice = None
    max_workers: int = 4
    unanswered: UnansweredPolicy = "synthesize"
    misplaced_system: SystemPolicy = "hoist"
    name: str = "token_compaction"

    # -- options ---------------------------------------------------------------------------
    def limit(self) -> int | None:
        if self.context_limit is not None:
            return self.context_limit
        return context_limit(self.model, self.limits)

    def threshold(self) -> int | None:
        limit = self.limit()
        return int(limit * self.threshold_ratio) if limit else None

    def _counter(self) -> TokenCounter:
        return resolve_counter(self.counter, self.model)

    def should_compact(self, history: HistoryInput, *, usage: Any = None) -> bool:
        msgs, _ = prepare(history)
        counter = self._counter()
        tokens = sum(counter.count_message(m) for m in msgs)
        return self._triggered(msgs, tokens, usage_tokens(usage))

    def _triggered(self, msgs: Sequence[Message], tokens: int, usage: int | None) -> bool:
        threshold = self.threshold()
        if threshold is None:
            return len(msgs) > self.max_messages_without_limit
        return max(tokens, usage or 0) > threshold

    # -- public API ------------------------------------------------------------------------
    def apply(
        self, history: HistoryInput, *, usage: Any = None, force: bool = False
    ) -> HistoryResult:
        counter = self._counter()
        plan = self._plan(history, usage, force, counter)
        return drive(plan, self._summarizer(counter), max_workers=1)

    async def aapply(
        self, history: HistoryInput, *, usage: Any = None, force: bool = False
    ) -> HistoryResult:
        counter = self._counter()
        plan = self._plan(history, usage, force, counter)
        return await adrive(plan, self._summarizer(counter))

    def _summarizer(self, counter: TokenCounter) -> Summarizer:
        """The configured summarizer, or the deterministic one counting with ``counter``."""
        return self.summarizer or DeterministicSummarizer(counter=counter)

    # -- algorithm -------------------------------------------------------------------------
    def budgets(
        self, system: Sequence[Message], counter: TokenCounter
    ) -> tuple[int, int | None, int | None]:
        """``(user budget, newest-message cap, summary cap)`` for a rebuilt history.

        Without a known limit: the configured ``user_budget`` and no caps. With one, the room
        under the trigger threshold (minus the system prompt) is shared: the user messages
        get at most :data:`USER_BUDGET_SHARE` of it (and never more than ``user_budget``),
        the summary at most :data:`SUMMARY_SHARE`, so the output fits under the threshold.
        """
        threshold = self.threshold()
        if threshold is None:
            return self.user_budget, None, None
        room = max(0, threshold - sum(counter.count_message(m) for m in system) - 8)
        cap = int(room * USER_BUDGET_SHARE)
        # floors for tiny limits, at most half the room so the output stays under it (a
        # summary always gets its prefix and a line, even where nothing fits)
        summary_cap = max(
            int(room * SUMMARY_SHARE), min(_MIN_SUMMARY_TOKENS, room // 2), _SUMMARY_FLOOR
        )
        # The newest user message stays verbatim whenever it fits beside the summary at all:
        # only a message larger than the whole remaining room is cut (seed 003 keeps it whole).
        newest_cap = max(room - summary_cap, min(_MIN_NEWEST_TOKENS, room // 2))
        return min(self.user_budget, cap), newest_cap, summary_cap

    def select_user_messages(
        self,
        items: Sequence[Message],
        counter: TokenCounter,
        budget: int | None = None,
        newest_cap: int | None = None,
    ) -> tuple[list[Message], int]:
        """Recent user messages newest-first within ``budget`` (default ``user_budget``);
        chronological result.

        The newest is kept verbatim unless it is larger than ``newest_cap`` (set when the
        model's limit is known: then it is cut with the marker so the output fits); the
        first one that overflows the rest of the budget is truncated with a marker and older
        ones are dropped. Returns the kept messages and how many were truncated.
        """
        if not items:
            return [], 0
        budget = self.user_budget if budget is None else budget
        truncated = 0
        newest = items[-1]
        size = counter.count_message(newest)
        if newest_cap is not None and size > newest_cap and newest.text:
            room = newest_cap - (size - counter.count_text(newest.text))
            cut = truncate_to_tokens(
                # the head of the question survives even when images alone overflow the room
                newest.text,
                max(room, _MIN_TRUNCATED_TOKENS),
                counter,
                marker=self.truncation_marker,
            )
            newest = newest.with_text(cut)
            size = counter.count_message(newest)
            truncated += 1
        kept = [newest]
        remaining = budget - size
        for m in reversed(items[:-1]):
            if remaining <= 0:
                break
            t = counter.count_message(m)
            if t <= remaining:
                kept.append(m)
                remaining -= t
                continue
            room = remaining - (t - counter.count_text(m.text))  # keep overhead and images
            if room >= _MIN_TRUNCATED_TOKENS and m.text:
                cut = truncate_to_tokens(m.text, room, counter, marker=self.truncation_marker)
                kept.append(m.with_text(cut))
                truncated += 1
            break
        kept.reverse()
        return kept, truncated

    def build_transcript(
        self, messages: Sequence[Message], counter: TokenCounter, budget: int
    ) -> tuple[str, int]:
        """Deterministic summarizer input: each message rendered with tool outputs, diffs and
        message lengths capped; the oldest are dropped until it fits ``budget`` tokens.
        The newest message is always kept, truncated when it alone is over ``budget``, so
        a history never gives an empty input. Returns the text and how many messages were
        left out."""
        rendered = [
            render_message(
                m,
                message_chars=self.message_chars,
                tool_chars=self.tool_output_chars,
                diff_lines=self.diff_lines,
            )
            for m in messages
        ]
        sizes = [counter.count_text(r) + 1 for r in rendered]
        total = sum(sizes)
        start = 0
        while total > budget and start < len(rendered) - 1:
            total -= sizes[start]
            start += 1
        if rendered and total > budget:
            # seed 003: the summarizer always sees the newest message, cut to fit if needed
            newest = truncate_to_tokens(
                rendered[-1],
                max(budget - 1, _MIN_TRUNCATED_TOKENS),
                counter,
                marker=self.truncation_marker,
            )
            return newest, start
        return "\n".join(rendered[start:]), start

    def _summary_room(
        self,
        source: Sequence[Message],
        previous: str | None,
        files: Sequence[str],
        summary_cap: int | None,
        counter: TokenCounter,
    ) -> tuple[int | None, str | None, FittedSummary | None]:
        """``(room, hint, fallback)``: the tokens the summary body may use, the recent-files
        line written beside it (``None``: none), and the fallback summary for them.

        The room is the summary cap less the prefix and, when kept, the line and the newline
        before it. The line stands for the ``files`` (most recent last); it is written whole
        when that leaves the fallback summary as good a :class:`FittedSummary` rank as it
        gets without the line, else shortened (:func:`~ptc.history.facts.files_hint_variants`:
        paths cut to their file name end, then older paths left out) until it does, else
        left out; so a summary that fits is never given up for the line. Without a cap there
        is no room to size to (``None``).
        """
        hint = recent_files_hint(files) if files else None
        if summary_cap is None:
            return None, hint, None
        facts = work_facts(source)
        total = summary_cap - counter.count_text(SUMMARY_PREFIX)
        alone: FittedSummary | None = None
        tried: int | None = None
        for line in files_hint_variants(files):
            size = counter.count_text(line)
            if size > total or (tried is not None and size >= tried):
                continue  # too large even alone, or no smaller than one already tried
            tried = size
            room = max(total - size - 1, 0)
            kept = fit_fallback(
                facts, previous, max_tokens=room, counter=counter, files_in_hint=True
            )
            if kept.rank < BEST_RANK and alone is None:
                alone = fit_fallback(facts, previous, max_tokens=max(total, 1), counter=counter)
            if kept.rank >= (BEST_RANK if alone is None else alone.rank):
                return room, line, kept
        if alone is None:
            alone = fit_fallback(facts, previous, max_tokens=max(total, 1), counter=counter)
        return max(total, 1), None, alone

    def _fit_answer(
        self,
        summary: str,
        hint: str | None,
        files: Sequence[str],
        summary_cap: int,
        counter: TokenCounter,
    ) -> tuple[str, str | None]:
        """A summary not sized by this strategy (a summarizer's answer, or an earlier summary
        kept as it is) and its recent-files line ``hint`` (naming ``files``), within
        ``summary_cap``: the answer, cut with the marker if it must be, beside ``hint`` or
        the first shorter form of it (see :meth:`_summary_room`) that leaves the cut answer
        room to fit, else in the whole room without the line."""
        total = summary_cap - counter.count_text(SUMMARY_PREFIX)
        variants = files_hint_variants(files) if hint is not None else []
        for line in variants[variants.index(hint) if hint in variants else 0 :]:
            room = total - counter.count_text(line) - (1 if summary else 0)
            if room < (1 if summary else 0):
                continue
            cut = truncate_to_tokens(summary, room, counter)
            if counter.count_text(cut) <= room:
                return cut, line
        return truncate_to_tokens(summary, max(total, 1), counter), None

    def _plan(
        self,
        history: HistoryInput,
        usage_in: Any,
        force: bool,
        counter: TokenCounter | None = None,
    ) -> Plan[HistoryResult]:
        msgs, shape = prepare(history)
        counter = counter or self._counter()
        tokens_before = sum(counter.count_message(m) for m in msgs)
        usage = usage_tokens(usage_in)
        triggered = force or self._triggered(msgs, tokens_before, usage)
        # late system messages: hoisted (or turned into user messages), as the repair does
        system, body, moved = (
            place_systems(msgs, self.misplaced_system) if triggered else ([], [], 0)
        )
        if not triggered or all(m.is_empty for m in body):
            # under the threshold, or nothing to summarize (no messages, or only a system
            # prompt; no summary of nothing): the history is returned as it is
            return finish(
                self.name,
                before=msgs,
                output=msgs,
                counter=counter,
                shape=shape,
                triggered=False,
                tokens_before=tokens_before,
                usage=usage,
                unanswered=self.unanswered,
                misplaced_system=self.misplaced_system,
            )
        user_budget, newest_cap, summary_cap = self.budgets(system, counter)

        # the last earlier summary: everything before it is already in it
        previous: str | None = None
        since = 0
        user_items: list[Message] = []
        for i, m in enumerate(body):
            if m.role != "user":
                continue
            items, found = _user_items(m)
            if found is not None:
                previous, since = found, i + 1
            user_items.extend(it for it in items if it.meta.source != "system" and not it.is_empty)
        new = body[since:]

        kept, truncated = self.select_user_messages(user_items, counter, user_budget, newest_cap)
        body_ids = {id(m) for m in body}
        files = recent_files(body, self.recent_files)
        # the files the recent-files line names: those edited, else the earlier summary's line
        line_files = files or hint_files(files_hint_of(previous or ""))
        hint: str | None = recent_files_hint(line_files) if line_files else None
        summary: str
        fallback = False
        made = 0
        sized = False  # sized to the room by this strategy's counter: not cut again
        if new or previous is None:
            source = _summary_source(new, user_items)
            offered = hint
            room, hint, fitted = self._summary_room(
                source, previous, line_files, summary_cap, counter
            )
            slimit = self.summarizer_limit or self.limit() or DEFAULT_SUMMARIZER_LIMIT
            req_base = SummaryRequest("compaction", "", previous)
            input_budget = int(slimit * self.summarizer_input_ratio) - counter.count_text(
                req_base.instructions + req_base.prompt()
            )
            transcript, left_out = self.build_transcript(new, counter, max(input_budget, 0))
            req = SummaryRequest(
                "compaction",
                transcript,
                previous,
                tuple(new[left_out:]),
                max_tokens=room,
                history=tuple(source),
                files_hint=hint,
            )
            (answer,) = yield [req]
            # an empty answer is fine where the fallback is empty too: the recent-files line
            # beside it already says all there is (a history of file edits only, small room)
            nothing_to_add = fitted is not None and not fitted.text and answer == ""
            if isinstance(answer, BaseException) or (
                is_unusable_summary(answer) and not nothing_to_add
            ):
                if fitted is None:
                    summary = fallback_summary(source, previous, files_in_hint=hint is not None)
                else:
                    summary = fitted.text
                fallback = sized = True
            else:
                summary = str(answer).strip()
                made = 1
                sized = self.summarizer is None
                if offered is None:
                    # a line the answer carried over itself
                    line_files = hint_files(files_hint_of(summary))
                    hint = recent_files_hint(line_files) if line_files else None
        else:
            summary = previous  # nothing new since the last compaction: keep it as it is
        summary = strip_files_hint(summary)  # the hint is replaced, never stacked
        if summary_cap is not None and not sized:
            summary, hint = self._fit_answer(summary, hint, line_files, summary_cap, counter)
        if hint is not None:
            summary = f"{summary}\n\n{hint}" if summary else hint
        # seed 003: the kept user messages, each its own message, then one summary message;
        # merging them for providers that need alternating roles happens when rendering
        summary_msg = Message("user", (TextPart(SUMMARY_PREFIX + summary),))
        output = [*system, *kept, summary_msg]
        result = finish(
            self.name,
            before=msgs,
            output=output,
            counter=counter,
            shape=shape,
            triggered=True,
            tokens_before=tokens_before,
            dropped=len(body) - sum(1 for m in kept if id(m) in body_ids),
            summaries=made,
            fallbacks=1 if fallback else 0,
            usage=usage,
            summary=summary,
            info={
                "threshold": self.threshold(),
                "updated_previous_summary": previous is not None,
                "user_messages_kept": len(kept),
                "user_messages_truncated": truncated,
                "recent_files": files,
            },
            unanswered=self.unanswered,
            misplaced_system=self.misplaced_system,
            pre_repairs=RepairReport(systems_moved=moved),
        )
        if self.on_compact is not None:
            self.on_compact(
                CompactionEvent(
                    tokens_before=tokens_before,
                    tokens_after=result.stats.tokens_after,
                    usage_tokens=usage,
                    threshold=self.threshold(),
                    messages_before=len(msgs),
                    messages_after=len(result.messages),
                    summary=summary,
                    fallback_used=fallback,
                    updated_previous_summary=previous is not None,
                )
            )
        return result
