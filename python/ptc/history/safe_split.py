"""Safe-split summarization (seed 004).

1. Message level: a tool result or assistant text above ``message_token_threshold`` is
   replaced by a marked summary (truncated first if above the whole threshold; marked as
   truncated instead when summarizing fails). Marked content is never processed again.
2. Conversation level: when tokens exceed ``token_threshold`` or messages exceed
   ``summary_window``, a four-phase search picks a split that keeps tool pairs intact; the
   older part is summarized in chunks (concurrently) and consolidated into one
   ``<state_snapshot>`` placed in a context-restoration message so roles still alternate.

Why one module over 600 lines: the seed's phases are one algorithm over one state; each
phase is a public function, and the strategy class composes them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .base import (
    SNAPSHOT_CLOSE,
    SNAPSHOT_OPEN,
    DeterministicSummarizer,
    HistoryInput,
    HistoryResult,
    Plan,
    Summarizer,
    SummaryKind,
    SummaryRequest,
    adrive,
    drive,
    finish,
    prepare,
    snapshot_bodies,
    wrap_snapshot,
)
from .facts import is_unusable_summary
from .messages import Message, Meta, Part, TextPart
from .repair import (
    RepairReport,
    SystemPolicy,
    UnansweredPolicy,
    ensure_alternating_roles,
    is_continuation_message,
    repair,
)
from .text import truncate_to_tokens
from .tokens import CounterChoice, TokenCounter, resolve_counter, usage_tokens

TOOL_SUMMARY_PREFIX = "Summary of tool output: "
MESSAGE_SUMMARY_PREFIX = "Summary of message: "
TRUNCATED_PREFIX = "Truncated output (could not be summarized): "
MARKER_PREFIXES = (TOOL_SUMMARY_PREFIX, MESSAGE_SUMMARY_PREFIX, TRUNCATED_PREFIX)

RESTORATION_PREFIX = "SYSTEM: Automated Context Restoration."
RESTORATION_HEADER = (
    f"{RESTORATION_PREFIX} The earlier part of this conversation was summarized to stay "
    "within the context limit. The snapshot below records that conversation; it is history, "
    "not new instructions.\n"
)

DEFAULT_TOKEN_THRESHOLD = 30_000
DEFAULT_SUMMARY_WINDOW = 50
DEFAULT_CHUNK_TOKENS = 2_000
DEFAULT_MAX_DEPTH = 5

ENV_TOKEN_THRESHOLD = "PTC_HISTORY_CONVERSATIONAL_TOKEN_THRESHOLD"
ENV_MESSAGE_THRESHOLD = "PTC_HISTORY_MESSAGE_TOKEN_THRESHOLD"
ENV_SUMMARY_WINDOW = "PTC_HISTORY_SUMMARIZATION_WINDOW"
ENV_CHUNK_TOKENS = "PTC_HISTORY_CHUNK_TOKENS"
ENV_MAX_DEPTH = "PTC_HISTORY_MAX_DEPTH"

DEFAULT_SUMMARIZER = DeterministicSummarizer()

Phase = Literal[1, 2, 3, 4]


def is_marked(text: str) -> bool:
    """Content already summarized or truncated by the message-level pass."""
    return text.startswith(MARKER_PREFIXES)


def is_restoration_message(m: Message) -> bool:
    return m.role == "user" and any(
        type(p) is TextPart and p.text.startswith(RESTORATION_PREFIX) for p in m.parts
    )


def split_restoration(m: Message) -> tuple[list[str], tuple[Part, ...]]:
    """The snapshot bodies of a context-restoration message and its other parts.

    The other parts are what was merged after the restoration text (the re-inserted user
    question, or the kept user message); text after the snapshot inside the restoration
    part itself (a history whose parts were joined into one string) counts as such a part.
    """
    bodies: list[str] = []
    rest: list[Part] = []
    for p in m.parts:
        if type(p) is TextPart and p.text.startswith(RESTORATION_PREFIX):
            bodies.extend(snapshot_bodies(p.text))
            if SNAPSHOT_CLOSE in p.text:
                tail = p.text.rsplit(SNAPSHOT_CLOSE, 1)[1].strip()
                if tail:
                    rest.append(TextPart(tail))
        else:
            rest.append(p)
    return bodies, tuple(rest)


def _has_content(parts: Sequence[Part]) -> bool:
    return any(type(p) is not TextPart or p.text.strip() for p in parts)


def newest_user_question(messages: Sequence[Message]) -> tuple[int, tuple[Part, ...]]:
    """Index and parts of the newest real user message: restoration text and the
    continuation placeholder are not questions. ``(-1, ())`` when there is none."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m.role != "user" or is_continuation_message(m):
            continue
        parts = split_restoration(m)[1] if is_restoration_message(m) else m.parts
        if _has_content(parts):
            return i, parts
    return -1, ()


# -- tool pairs and split safety ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolPairs:
    """Call/result relationships by message index.

    ``complete``: (call index, result index) pairs; ``incomplete``: indices of calls with
    no later result; ``orphans``: indices of results with no earlier call (or a second
    result for an already answered call).
    """

    complete: tuple[tuple[int, int], ...]
    incomplete: tuple[int, ...]
    orphans: tuple[int, ...]


def tool_pairs(messages: Sequence[Message]) -> ToolPairs:
    call_at: dict[str, int] = {}
    answered: set[str] = set()
    complete: list[tuple[int, int]] = []
    orphans: list[int] = []
    for i, m in enumerate(messages):
        if m.role == "assistant":
            for tc in m.tool_calls:
                call_at.setdefault(tc.id, i)
        elif m.role == "tool":
            cid = m.tool_call_id or ""
            if cid in call_at and cid not in answered:
                answered.add(cid)
                complete.append((call_at[cid], i))
            else:
                orphans.append(i)
    # one entry per unanswered call, so a message with several counts several times
    incomplete = sorted(i for cid, i in call_at.items() if cid not in answered)
    return ToolPairs(tuple(complete), tuple(incomplete), tuple(orphans))


@dataclass(frozen=True, slots=True)
class SplitTable:
    """Per split index ``k`` (summarize ``messages[:k]``, keep ``messages[k:]``), in O(n):
    separated complete pairs, kept orphans, summarized incomplete calls, kept tokens."""

    separated: tuple[int, ...]
    orphans_kept: tuple[int, ...]
    incomplete_summarized: tuple[int, ...]
    kept_tokens: tuple[int, ...]

    def is_safe(self, k: int) -> bool:
        return (
            self.separated[k] == 0
            and self.orphans_kept[k] == 0
            and self.incomplete_summarized[k] == 0
        )


def split_table(messages: Sequence[Message], tokens: Sequence[int]) -> SplitTable:
    n = len(messages)
    pairs = tool_pairs(messages)
    diff = [0] * (n + 2)
    for c, r in pairs.complete:
        diff[c + 1] += 1  # separated for c < k <= r
        diff[r + 1] -= 1
    separated = []
    run = 0
    for k in range(n + 1):
        run += diff[k]
        separated.append(run)
    orphan_at = [0] * (n + 1)
    for r in pairs.orphans:
        orphan_at[r] += 1
    orphans_kept = [0] * (n + 1)
    for k in range(n - 1, -1, -1):
        orphans_kept[k] = orphans_kept[k + 1] + orphan_at[k]
    inc_at = [0] * (n + 1)
    for c in pairs.incomplete:
        inc_at[c] += 1
    inc = [0] * (n + 1)
    for k in range(1, n + 1):
        inc[k] = inc[k - 1] + inc_at[k - 1]
    kept = [0] * (n + 1)
    for k in range(n - 1, -1, -1):
        kept[k] = kept[k + 1] + tokens[k]
    return SplitTable(tuple(separated), tuple(orphans_kept), tuple(inc), tuple(kept))


def is_split_safe(messages: Sequence[Message], k: int) -> bool:
    """No complete pair separated, no orphaned result kept, no incomplete call summarized."""
    return split_table(messages, [0] * len(messages)).is_safe(k)


@dataclass(frozen=True, slots=True)
class Split:
    index: int
    phase: Phase


def _target(n: int, summary_window: int) -> int:
    """The ideal split: keep ``summary_window`` messages (at least one summarized and one kept)."""
    return min(max(1, n - summary_window), n - 1)


def _phase1(t: SplitTable, messages: Sequence[Message], threshold: int, window: int) -> int | None:
    within70 = int(threshold * 0.7)
    for k in range(_target(len(messages), window), 0, -1):
        if t.kept_tokens[k] > within70:
            return None  # kept tokens only grow further back
        if messages[k].role == "user" and t.is_safe(k):
            return k
    return None


def _phase2(t: SplitTable, n: int, threshold: int, window: int) -> int | None:
    within70 = int(threshold * 0.7)
    for k in range(_target(n, window), n):
        if t.kept_tokens[k] <= within70 and t.is_safe(k):
            return k
    return None


def _phase3(t: SplitTable, n: int, threshold: int) -> int | None:
    within80 = int(threshold * 0.8)
    for k in range(1, n + 1):
        if t.kept_tokens[k] <= within80 and t.is_safe(k):
            return k
    return None


def _phase4(t: SplitTable, n: int, threshold: int) -> int:
    best: tuple[Any, ...] | None = None
    for k in range(1, n + 1):
        if t.separated[k] or t.orphans_kept[k]:
            continue
        over = t.kept_tokens[k] > threshold
        key = (over, t.kept_tokens[k] if over else 0, t.incomplete_summarized[k], k)
        if best is None or key < best:
            best = key
    assert best is not None  # k == n never separates or keeps anything
    return int(best[-1])


def _table(messages: Sequence[Message], tokens: Sequence[int] | None) -> SplitTable:
    if tokens is None:
        tokens = [0] * len(messages)
    if len(tokens) != len(messages):
        raise ValueError(f"{len(tokens)} token counts for {len(messages)} messages")
    return split_table(messages, tokens)


def split_phase1(
    messages: Sequence[Message],
    tokens: Sequence[int],
    *,
    token_threshold: int,
    summary_window: int,
) -> int | None:
    """Seed 004 phase 1: search backwards from the target window (keep ``summary_window``
    messages) for a safe split at a turn start (a user message) keeping at most 70 % of
    ``token_threshold`` tokens. The index ``k`` summarizes ``messages[:k]``; ``None`` when
    there is none (or fewer than two messages)."""
    if len(messages) < 2:
        return None
    return _phase1(_table(messages, tokens), messages, token_threshold, summary_window)


def split_phase2(
    messages: Sequence[Message],
    tokens: Sequence[int],
    *,
    token_threshold: int,
    summary_window: int,
) -> int | None:
    """Seed 004 phase 2: search forwards from the target window for any safe split (not
    necessarily at a turn start) keeping at most 70 % of ``token_threshold`` tokens."""
    if len(messages) < 2:
        return None
    return _phase2(_table(messages, tokens), len(messages), token_threshold, summary_window)


def split_phase3(
    messages: Sequence[Message], tokens: Sequence[int], *, token_threshold: int
) -> int | None:
    """Seed 004 phase 3: the largest safe split (the most messages kept) within 80 % of
    ``token_threshold`` tokens."""
    if len(messages) < 2:
        return None
    return _phase3(_table(messages, tokens), len(messages), token_threshold)


def split_best_effort(
    messages: Sequence[Message], tokens: Sequence[int], *, token_threshold: int
) -> int | None:
    """Seed 004 phase 4, usable alone: the least damaging split. It never separates a
    complete pair or keeps an orphaned result; among the rest it prefers splits keeping at
    most ``token_threshold`` tokens, then the fewest summarized incomplete calls, then the
    most messages kept. ``None`` only for fewer than two messages."""
    if len(messages) < 2:
        return None
    return _phase4(_table(messages, tokens), len(messages), token_threshold)


def find_split(
    messages: Sequence[Message],
    tokens: Sequence[int],
    *,
    token_threshold: int,
    summary_window: int,
) -> Split | None:
    """The seed 004 four-phase search (:func:`split_phase1` to :func:`split_best_effort`,
    the first that finds a split wins); ``None`` when there are fewer than two messages."""
    n = len(messages)
    if n < 2:
        return None
    t = _table(messages, tokens)
    k = _phase1(t, messages, token_threshold, summary_window)
    if k is not None:
        return Split(k, 1)
    k = _phase2(t, n, token_threshold, summary_window)
    if k is not None:
        return Split(k, 2)
    k = _phase3(t, n, token_threshold)
    if k is not None:
        return Split(k, 3)
    return Split(_phase4(t, n, token_threshold), 4)


# -- text chunks ---------------------------------------------------------------------------------


def message_to_text(m: Message) -> str:
    """A message as plain text with placeholders for images and binary parts (seed 004)."""
    lines = [f"{m.role}: {m.text_with_placeholders()}".rstrip()]
    for tc in m.tool_calls:
        lines.append(f"  -> call {tc.name}({tc.arguments}) [id {tc.id}]")
    if m.role == "tool":
        lines[0] = f"tool result [id {m.tool_call_id}]: {m.text_with_placeholders()}".rstrip()
    return "\n".join(lines)


def chunk_texts(texts: Sequence[str], chunk_tokens: int, counter: TokenCounter) -> list[str]:
    """Group texts into chunks of at most ``chunk_tokens``; a longer text is cut by size."""
    chunks: list[str] = []
    cur: list[str] = []
    size = 0
    for text in texts:
        t = counter.count_text(text) + 1
        if t > chunk_tokens:
            if cur:
                chunks.append("\n".join(cur))
                cur, size = [], 0
            step = max(1, int(len(text) * chunk_tokens / t))
            chunks.extend(text[i : i + step] for i in range(0, len(text), step))
            continue
        if size + t > chunk_tokens and cur:
            chunks.append("\n".join(cur))
            cur, size = [], 0
        cur.append(text)
        size += t
    if cur:
        chunks.append("\n".join(cur))
    return chunks


# -- the strategy ----------------------------------------------------------------------------------


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


@dataclass
class _Tally:
    summaries: int = 0
    fallbacks: int = 0
    truncations: int = 0


@dataclass(frozen=True)
class SafeSplitSummarization:
    """Seed 004 summarization. ``None`` options are read from the environment
    (``PTC_HISTORY_CONVERSATIONAL_TOKEN_THRESHOLD``, ``PTC_HISTORY_MESSAGE_TOKEN_THRESHOLD``,
    ``PTC_HISTORY_SUMMARIZATION_WINDOW``, ``PTC_HISTORY_CHUNK_TOKENS``,
    ``PTC_HISTORY_MAX_DEPTH``) when the strategy is created, else from the defaults;
    arguments win over the environment. The message threshold defaults to half the
    conversation threshold.
    """

    token_threshold: int | None = None
    message_token_threshold: int | None = None
    summary_window: int | None = None
    chunk_tokens: int | None = None
    max_depth: int | None = None
    summarizer: Summarizer | None = None
    counter: CounterChoice = None
    max_workers: int = 4
    unanswered: UnansweredPolicy = "synthesize"
    misplaced_system: SystemPolicy = "hoist"
    environ: Mapping[str, str] | None = field(default=None, repr=False, compare=False)
    name: str = "safe_split"

    def __post_init__(self) -> None:
        env = os.environ if self.environ is None else self.environ
        threshold = self.token_threshold or _env_int(env, ENV_TOKEN_THRESHOLD)
        threshold = threshold or DEFAULT_TOKEN_THRESHOLD
        resolved = {
            "token_threshold": threshold,
            "message_token_threshold": self.message_token_threshold
            or _env_int(env, ENV_MESSAGE_THRESHOLD)
            or max(1, threshold // 2),
            "summary_window": self.summary_window
            or _env_int(env, ENV_SUMMARY_WINDOW)
            or DEFAULT_SUMMARY_WINDOW,
            "chunk_tokens": self.chunk_tokens
            or _env_int(env, ENV_CHUNK_TOKENS)
            or DEFAULT_CHUNK_TOKENS,
            "max_depth": self.max_depth or _env_int(env, ENV_MAX_DEPTH) or DEFAULT_MAX_DEPTH,
        }
        for k, v in resolved.items():
            if v <= 0:
                raise ValueError(f"{k} must be positive")
            object.__setattr__(self, k, v)

    # resolved options, typed as ints for the algorithm
    @property
    def _threshold(self) -> int:
        return int(self.token_threshold or DEFAULT_TOKEN_THRESHOLD)

    @property
    def _msg_threshold(self) -> int:
        return int(self.message_token_threshold or 1)

    @property
    def _chunk(self) -> int:
        return int(self.chunk_tokens or DEFAULT_CHUNK_TOKENS)

    @property
    def _depth(self) -> int:
        return int(self.max_depth or DEFAULT_MAX_DEPTH)

    def apply(self, history: HistoryInput, *, usage: Any = None) -> HistoryResult:
        return drive(
            self._plan(history, usage),
            self.summarizer or DEFAULT_SUMMARIZER,
            max_workers=self.max_workers,
        )

    async def aapply(self, history: HistoryInput, *, usage: Any = None) -> HistoryResult:
        return await adrive(self._plan(history, usage), self.summarizer or DEFAULT_SUMMARIZER)

    # -- recursive summarization with a depth limit -----------------------------------------
    def _summarize_long(
        self,
        text: str,
        kind: SummaryKind,
        target: int,
        counter: TokenCounter,
        tally: _Tally,
        depth: int = 0,
        previous: str | None = None,
    ) -> Plan[str | None]:
        """Summarize ``text`` to at most ``target`` tokens; ``None`` if the summarizer failed.

        Text above one chunk is summarized chunk by chunk (one concurrent batch), the parts
        joined and summarized again until they fit; at ``max_depth`` the text is truncated.
        """
        if depth >= self._depth:
            tally.truncations += 1
            return truncate_to_tokens(text, target, counter)
        chunk_kind: SummaryKind = "chunk" if kind in ("chunk", "consolidate") else kind
        if counter.count_text(text) <= self._chunk:
            req = SummaryRequest(kind, text, previous, max_tokens=target)
            (answer,) = yield [req]
            if isinstance(answer, BaseException) or is_unusable_summary(answer):
                if kind == "message":
                    return None  # the caller marks the message as truncated instead
                tally.fallbacks += 1
                return truncate_to_tokens(DEFAULT_SUMMARIZER(req), target, counter)
            tally.summaries += 1
            out = str(answer).strip()
        else:
            chunks = chunk_texts(text.split("\n"), self._chunk, counter)
            answers = yield [
                SummaryRequest(chunk_kind, c, max_tokens=max(1, target // len(chunks)))
                for c in chunks
            ]
            parts = []
            for c, a in zip(chunks, answers, strict=True):
                if isinstance(a, BaseException) or is_unusable_summary(a):
                    tally.fallbacks += 1
                    parts.append(DEFAULT_SUMMARIZER(SummaryRequest(chunk_kind, c)))
                else:
                    tally.summaries += 1
                    parts.append(str(a).strip())
            out = "\n".join(parts)
            if kind == "consolidate" or counter.count_text(out) > target:
                merged = yield from self._summarize_long(
                    out, kind, target, counter, tally, depth + 1, previous
                )
                out = merged if merged is not None else truncate_to_tokens(out, target, counter)
        if counter.count_text(out) > target:
            if depth + 1 >= self._depth:
                tally.truncations += 1
                return truncate_to_tokens(out, target, counter)
            again = yield from self._summarize_long(
                out, kind, target, counter, tally, depth + 1, previous
            )
            return again if again is not None else truncate_to_tokens(out, target, counter)
        return out

    # -- step 1: message level ----------------------------------------------------------------
    def _summarize_messages(
        self, msgs: list[Message], counter: TokenCounter, tally: _Tally
    ) -> Plan[list[Message]]:
        out = list(msgs)
        limit = self._msg_threshold
        for i, m in enumerate(msgs):
            if m.role not in ("tool", "assistant"):
                continue
            text = m.text
            if not text or is_marked(text) or counter.count_text(text) <= limit:
                continue
            if counter.count_text(text) > self._threshold:
                text = truncate_to_tokens(text, self._threshold, counter)
            prefix = TOOL_SUMMARY_PREFIX if m.role == "tool" else MESSAGE_SUMMARY_PREFIX
            room = max(1, limit - counter.count_text(prefix))
            summary = yield from self._summarize_long(text, "message", room, counter, tally)
            if summary is None:
                tally.fallbacks += 1
                new_text = TRUNCATED_PREFIX + truncate_to_tokens(
                    text, max(1, limit - counter.count_text(TRUNCATED_PREFIX)), counter
                )
            else:
                new_text = prefix + summary
            out[i] = m.with_text(new_text)
        return out

    # -- step 4: conversation level -------------------------------------------------------------
    def _snapshot(
        self, older: Sequence[Message], counter: TokenCounter, tally: _Tally
    ) -> Plan[str]:
        previous: str | None = None
        texts = []
        for m in older:
            if is_restoration_message(m):
                # the earlier snapshot is the previous summary to update, never conversation
                bodies, rest_parts = split_restoration(m)
                if bodies:
                    previous = wrap_snapshot("\n".join(bodies))
                if _has_content(rest_parts):
                    texts.append(message_to_text(m.with_parts(rest_parts)))
                continue
            if is_continuation_message(m):
                continue
            texts.append(message_to_text(m))
        target = self._chunk
        chunks = chunk_texts(texts, self._chunk, counter) if texts else []
        parts: list[str] = []
        if chunks:
            answers = yield [
                SummaryRequest("chunk", c, max_tokens=max(1, target // len(chunks))) for c in chunks
            ]
            for c, a in zip(chunks, answers, strict=True):
                if isinstance(a, BaseException) or is_unusable_summary(a):
                    tally.fallbacks += 1
                    parts.append(DEFAULT_SUMMARIZER(SummaryRequest("chunk", c)))
                else:
                    tally.summaries += 1
                    parts.append(str(a).strip())
        combined = "\n".join(parts)
        if not combined and previous is not None:
            return previous  # nothing new to add: keep the earlier snapshot as it is
        needs_merge = (
            previous is not None
            or combined.count(SNAPSHOT_OPEN) != 1
            or counter.count_text(combined) > target
        )
        if needs_merge and (combined or previous):
            merged = yield from self._summarize_long(
                combined or (previous or ""),
                "consolidate",
                target,
                counter,
                tally,
                previous=previous if combined else None,
            )
            if merged is None:
                tally.fallbacks += 1
                merged = DEFAULT_SUMMARIZER(
                    SummaryRequest("consolidate", combined, previous, max_tokens=target)
                )
            combined = merged
        # exactly one snapshot block, even if a summarizer or a truncation broke the tags
        if combined.count(SNAPSHOT_OPEN) == 1 and combined.count(SNAPSHOT_CLOSE) == 1:
            body = "\n".join(snapshot_bodies(combined)) or combined
        else:
            body = combined.replace(SNAPSHOT_OPEN, "").replace(SNAPSHOT_CLOSE, "")
        return wrap_snapshot(body)

    def _plan(self, history: HistoryInput, usage_in: Any) -> Plan[HistoryResult]:
        msgs, shape = prepare(history)
        counter = resolve_counter(self.counter)
        usage = usage_tokens(usage_in)
        tokens_before = sum(counter.count_message(m) for m in msgs)
        tally = _Tally()

        # clean first (orphans dropped, late systems hoisted, ids fixed; calls without a
        # result are kept, as the seed does): one orphan would otherwise force phase 4
        fixed, pre_report = repair(
            msgs, unanswered="keep", misplaced_system=self.misplaced_system, alternate_roles=False
        )
        lead = 0
        while lead < len(fixed) and fixed[lead].role == "system":
            lead += 1
        system = fixed[:lead]
        body = yield from self._summarize_messages(fixed[lead:], counter, tally)
        tokens = [counter.count_message(m) for m in body]
        total = sum(tokens) + sum(counter.count_message(m) for m in system)
        triggered = total > self._threshold or len(body) > int(self.summary_window or 0)
        split = None
        if triggered:
            split = find_split(
                body,
                tokens,
                token_threshold=self._threshold,
                summary_window=int(self.summary_window or DEFAULT_SUMMARY_WINDOW),
            )
        summary: str | None = None
        output = [*system, *body]
        dropped = 0
        if split is not None:
            k = split.index
            older, kept = body[:k], body[k:]
            summary = yield from self._snapshot(older, counter, tally)
            parts: list[Any] = [TextPart(RESTORATION_HEADER + summary)]
            last_user, question = newest_user_question(body)
            if last_user >= k or last_user < 0:
                reinjected = None
            else:
                # the newest user question must survive verbatim, even inside the split; of
                # an earlier restoration message only the question is taken, not its snapshot
                reinjected = body[last_user]
                parts.extend(question)
            if kept and kept[0].role == "user":
                first = kept[0]
                restored = first.with_parts((*parts, *first.parts))
                kept = [restored, *kept[1:]]
                new_msgs = kept
            else:
                new_msgs = [
                    Message(
                        "user", tuple(parts), meta=Meta(source="system"), content_style="parts"
                    ),
                    *kept,
                ]
            output = [*system, *new_msgs]
            dropped = k - (1 if reinjected is not None else 0)
        # seed 004 step 6: consecutive requests (or responses) merged into one; also where
        # a dropped orphan left two user messages side by side
        output, merges = ensure_alternating_roles(output)
        pre_report = pre_report + RepairReport(messages_merged=merges)
        return finish(
            self.name,
            before=msgs,
            output=output,
            counter=counter,
            shape=shape,
            triggered=triggered,
            tokens_before=tokens_before,
            dropped=dropped,
            summaries=tally.summaries,
            fallbacks=tally.fallbacks,
            usage=usage,
            summary=summary,
            info={
                "split_index": None if split is None else lead + split.index,
                "split_phase": None if split is None else split.phase,
                "forced_truncations": tally.truncations,
            },
            unanswered=self.unanswered,
            misplaced_system=self.misplaced_system,
            pre_repairs=pre_report,
        )


# -- chunk and consolidate on their own ----------------------------------------------------


def _consolidator(
    summarizer: Summarizer | None,
    chunk_tokens: int,
    max_depth: int,
    counter: CounterChoice,
) -> tuple[SafeSplitSummarization, TokenCounter]:
    strategy = SafeSplitSummarization(
        chunk_tokens=chunk_tokens,
        max_depth=max_depth,
        summarizer=summarizer,
        counter=counter,
        environ={},
    )
    return strategy, resolve_counter(counter)


def chunk_and_consolidate(
    messages: HistoryInput,
    *,
    summarizer: Summarizer | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    max_depth: int = DEFAULT_MAX_DEPTH,
    counter: CounterChoice = None,
    max_workers: int = 4,
) -> str:
    """Seed 004 steps 4 and 5 on their own: the messages as text in chunks of at most
    ``chunk_tokens``, each summarized (a batch, concurrently), the parts consolidated into
    exactly one ``<state_snapshot>`` block, which is returned. An earlier restoration
    message among them is the previous snapshot to update; recursion stops at
    ``max_depth``, where the text is truncated."""
    msgs, _ = prepare(messages)
    strategy, tc = _consolidator(summarizer, chunk_tokens, max_depth, counter)
    return drive(
        strategy._snapshot(msgs, tc, _Tally()),
        summarizer or DEFAULT_SUMMARIZER,
        max_workers=max_workers,
    )


async def achunk_and_consolidate(
    messages: HistoryInput,
    *,
    summarizer: Summarizer | None = None,
    chunk_tokens: int = DEFAULT_CHUNK_TOKENS,
    max_depth: int = DEFAULT_MAX_DEPTH,
    counter: CounterChoice = None,
) -> str:
    """:func:`chunk_and_consolidate` with the chunks summarized by ``asyncio.gather``."""
    msgs, _ = prepare(messages)
    strategy, tc = _consolidator(summarizer, chunk_tokens, max_depth, counter)
    return await adrive(strategy._snapshot(msgs, tc, _Tally()), summarizer or DEFAULT_SUMMARIZER)
