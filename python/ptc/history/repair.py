"""Validate and repair what providers reject in a chat history.

The repair is deterministic, idempotent, never mutates its input and works per tool-call
id, so parallel calls in one assistant message are handled one by one. Every strategy in
this package runs it on its output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from .codecs import to_messages
from .messages import NO_META, ChatToolCall, Message, Meta, TextPart

IssueKind = Literal[
    "misplaced_system",
    "empty_message",
    "orphan_result",
    "unanswered_call",
    "duplicate_call_id",
    "missing_call_id",
    "consecutive_role",
    "first_not_user",
]

UnansweredPolicy = Literal["synthesize", "remove", "keep"]
SystemPolicy = Literal["hoist", "to_user"]
#: A provider whose constraints :func:`repair` and :func:`for_provider` apply. ``"strict"``
#: applies every constraint any provider imposes (the default, and what a chat template
#: with strict alternation needs).
Provider = Literal["openai", "anthropic", "strict"]
PROVIDERS: tuple[Provider, ...] = ("openai", "anthropic", "strict")

#: Issue kinds a provider does not reject. OpenAI's chat API accepts system messages
#: anywhere, consecutive messages of one role and an assistant message first.
_ACCEPTED: Mapping[Provider, frozenset[str]] = {
    "openai": frozenset({"misplaced_system", "consecutive_role", "first_not_user"}),
    "anthropic": frozenset(),
    "strict": frozenset(),
}

#: Content prefix of a tool-call message stored as text (seed 002), without structured calls.
TOOL_CALLS_PREFIX = "[TOOL_CALLS]"

#: Text of the result synthesized for a call whose result is missing.
SYNTHETIC_RESULT_TEXT = "Error: the tool call was not completed; no result was recorded."

#: Text of the user message inserted when a history would start with the assistant
#: (Anthropic requires the first non-system message to come from the user).
CONTINUATION_TEXT = "(Continuing an earlier conversation; its latest steps follow.)"


@dataclass(frozen=True, slots=True)
class Issue:
    kind: IssueKind
    index: int
    detail: str
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class RepairReport:
    systems_moved: int = 0
    empty_dropped: int = 0
    orphan_results_dropped: int = 0
    results_synthesized: int = 0
    calls_removed: int = 0
    call_ids_renamed: int = 0
    messages_merged: int = 0
    users_inserted: int = 0
    #: Tool calls with an empty or missing id that were given a generated id.
    call_ids_assigned: int = 0
    #: Results of a ``[TOOL_CALLS]`` text call sent as user text (they have no call to pair).
    text_results_converted: int = 0

    def __add__(self, other: RepairReport) -> RepairReport:
        """Field-wise sum, for a strategy that repairs both its input and its output."""
        return RepairReport(
            *(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__)
        )

    @property
    def total(self) -> int:
        return (
            self.systems_moved
            + self.empty_dropped
            + self.orphan_results_dropped
            + self.results_synthesized
            + self.calls_removed
            + self.call_ids_renamed
            + self.messages_merged
            + self.users_inserted
            + self.call_ids_assigned
            + self.text_results_converted
        )


def validate(
    history: Iterable[Message | Mapping[str, Any]], *, provider: Provider = "strict"
) -> list[Issue]:
    """List every problem ``provider`` would reject, in message order.

    ``"strict"`` (the default) reports everything any provider rejects; ``"openai"`` leaves
    out what OpenAI's chat API accepts (late system messages, consecutive roles, an
    assistant message first).

    A tool call or tool result whose id is empty or missing is a ``missing_call_id`` issue
    (``call_id`` ``None``); such a call is not also reported as a duplicate. Malformed
    input raises ``TypeError``/``ValueError`` (see :func:`~ptc.history.codecs.to_messages`).
    """
    msgs = to_messages(history)
    issues: list[Issue] = []
    seen_non_system = False
    seen_ids: set[str] = set()
    i = 0
    n = len(msgs)
    prev_role: str | None = None
    while i < n:
        m = msgs[i]
        if m.role == "system":
            if seen_non_system:
                issues.append(Issue("misplaced_system", i, "system message after the conversation"))
        else:
            if not seen_non_system and m.role != "user":
                issues.append(
                    Issue("first_not_user", i, f"first non-system message is from {m.role}")
                )
            seen_non_system = True
        if m.role in ("user", "assistant") and m.is_empty:
            issues.append(Issue("empty_message", i, f"{m.role} message has no content"))
        if prev_role is not None and m.role == prev_role and m.role != "tool":
            issues.append(Issue("consecutive_role", i, f"two {m.role} messages in a row"))
        prev_role = m.role
        if m.role == "tool":
            if not m.tool_call_id:
                issues.append(Issue("missing_call_id", i, "tool result without a call id"))
            issues.append(Issue("orphan_result", i, "tool result without its call", m.tool_call_id))
            i += 1
            continue
        if m.role == "assistant" and m.tool_calls:
            open_ids: dict[str, bool] = {}
            for tc in m.tool_calls:
                if not tc.id:
                    issues.append(Issue("missing_call_id", i, "tool call without an id"))
                elif tc.id in open_ids or tc.id in seen_ids:
                    issues.append(Issue("duplicate_call_id", i, "tool call id used twice", tc.id))
                open_ids.setdefault(tc.id, False)
            seen_ids.update(open_ids)
            j = i + 1
            while j < n and msgs[j].role == "tool":
                tcid = msgs[j].tool_call_id or ""
                if not tcid:
                    issues.append(Issue("missing_call_id", j, "tool result without a call id"))
                if open_ids.get(tcid) is False:
                    open_ids[tcid] = True
                else:
                    issues.append(Issue("orphan_result", j, "tool result without its call", tcid))
                j += 1
            for cid, answered in open_ids.items():
                if not answered:
                    issues.append(Issue("unanswered_call", i, "tool call without result", cid))
            if j > i + 1:
                prev_role = "tool"
            i = j
            continue
        i += 1
    accepted = _ACCEPTED[provider_name(provider)]
    return [x for x in issues if x.kind not in accepted] if accepted else issues


def provider_name(provider: Provider) -> Provider:
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")
    return provider


def rendering_policy(policy: UnansweredPolicy) -> UnansweredPolicy:
    """What a provider rendering does with unanswered calls: ``"keep"`` is for the seed's
    output only, since no provider accepts a call without its result."""
    return "synthesize" if policy == "keep" else policy


def is_valid(
    history: Iterable[Message | Mapping[str, Any]], *, provider: Provider = "strict"
) -> bool:
    return not validate(history, provider=provider)


def _merge_two(a: Message, b: Message) -> Message:
    meta = a.meta
    if b.meta.reasoning and a.meta.reasoning:
        meta = replace(meta, reasoning=f"{a.meta.reasoning}\n\n{b.meta.reasoning}")
    elif b.meta.reasoning:
        meta = replace(meta, reasoning=b.meta.reasoning)
    if a.meta != NO_META or b.meta != NO_META or a.meta.merged:
        # the later message's own metadata (source, sender, time, ...) is kept, in order,
        # in ``merged``; its reasoning is already joined above
        own = replace(b.meta, reasoning=None, merged=())
        meta = replace(meta, merged=(*a.meta.merged, own, *b.meta.merged))
    extra = a.extra
    if b.extra and b.origin == a.origin:
        extra = {**b.extra, **a.extra}
    return Message(
        a.role,
        a.parts + b.parts,
        a.tool_calls + b.tool_calls,
        None,
        None,
        meta,
        extra,
        a.origin,
        "parts" if len(a.parts) + len(b.parts) > 1 else a.content_style,
    )


def ensure_alternating_roles(messages: Sequence[Message]) -> tuple[list[Message], int]:
    """Merge consecutive user or assistant messages into new messages (seed 004, step 6).

    Tool results count as the user side: a user message right after tool results is not
    merged into them here, because :func:`to_anthropic` sends the results and that text
    as one user message, and OpenAI accepts a user message after tool results. Returns the
    new list and the number of merges; the input messages are never modified.
    """
    out: list[Message] = []
    merged = 0
    for m in messages:
        if out and m.role == out[-1].role and m.role in ("user", "assistant", "system"):
            # seed 004: consecutive responses are combined, also after a call left without
            # its result (the merged message keeps every call)
            out[-1] = _merge_two(out[-1], m)
            merged += 1
            continue
        out.append(m)
    return out, merged


def continuation_message(like: Message | None = None) -> Message:
    """The user message put first when a history would start with the assistant.

    Source ``"system"`` and ephemeral, like a nudge: it is never a prompt source, never kept
    as a user message by compaction and never stored.
    """
    return Message(
        "user",
        (TextPart(CONTINUATION_TEXT),),
        meta=Meta(source="system", ephemeral=True),
        origin=like.origin if like is not None else None,
    )


def is_continuation_message(m: Message) -> bool:
    return m.role == "user" and m.meta.source == "system" and m.text == CONTINUATION_TEXT


def place_systems(
    messages: Sequence[Message], policy: SystemPolicy = "hoist"
) -> tuple[list[Message], list[Message], int]:
    """Split a history into its system messages and the rest, as :func:`repair` does.

    System messages after the conversation start are hoisted into the leading system
    messages (``"hoist"``) or kept in place as user messages (``"to_user"``). Returns the
    system messages, the other messages and how many were moved.
    """
    lead: list[Message] = []
    body: list[Message] = []
    moved = 0
    for m in messages:
        if m.role == "system":
            if body:
                moved += 1
                if policy == "to_user":
                    body.append(replace(m, role="user"))
                    continue
            lead.append(m)
        else:
            body.append(m)
    return lead, body, moved


def _synthetic_result(call: ChatToolCall, like: Message) -> Message:
    return Message(
        "tool",
        (TextPart(SYNTHETIC_RESULT_TEXT),),
        tool_call_id=call.id,
        is_error=True,
        origin=like.origin,
    )


def is_text_call(m: Message) -> bool:
    """An assistant message calling tools in text (``[TOOL_CALLS]`` prefix, seed 002)."""
    return m.role == "assistant" and not m.tool_calls and m.text.startswith(TOOL_CALLS_PREFIX)


def text_call_result(r: Message) -> Message:
    """A text call's tool result as a user message naming the call id."""
    head = f"[tool result {r.tool_call_id}]" if r.tool_call_id else "[tool result]"
    return Message("user", (TextPart(head), *r.parts), meta=r.meta, origin=r.origin)


def strip_orphans(history: Iterable[Message | Mapping[str, Any]]) -> tuple[list[Message], int]:
    """Drop tool results without their call, and nothing else (seed 004: orphaned returns
    must not be kept).

    A result belongs to the assistant tool-call message right before it (only tool results
    in between) and must answer one of its calls not answered yet; a result with an empty
    id answers the next call with an empty id. Returns the new list and how many were
    dropped; no result is synthesized, no message inserted or merged.
    """
    msgs = to_messages(history)
    out: list[Message] = []
    dropped = 0
    open_ids: list[str] = []  # unanswered call ids of the current call message
    text_call = False  # after a [TOOL_CALLS] text call: its results have no ids to match
    for m in msgs:
        if m.role != "tool":
            open_ids = [tc.id for tc in m.tool_calls] if m.role == "assistant" else []
            text_call = is_text_call(m)
            out.append(m)
            continue
        cid = m.tool_call_id or ""
        if text_call:
            out.append(m)
        elif cid in open_ids:
            open_ids.remove(cid)
            out.append(m)
        else:
            dropped += 1
    return out, dropped


def answer_calls(
    messages: Sequence[Message], unanswered: UnansweredPolicy = "synthesize"
) -> tuple[list[Message], RepairReport]:
    """Answer every tool call of a paired history (the output of :func:`repair` with
    ``unanswered="keep"``) that has no result: a synthetic error result after its message's
    results (``"synthesize"``, and ``"keep"``, since no provider accepts a call without its
    result), or the call removed (``"remove"``; a message left with nothing is dropped).
    Nothing else changes: a ``[TOOL_CALLS]`` text call's results stay tool messages."""
    out: list[Message] = []
    synthesized = removed = empty = 0
    i = 0
    n = len(messages)
    while i < n:
        m = messages[i]
        i += 1
        if m.role != "assistant" or not m.tool_calls:
            out.append(m)
            continue
        j = i
        while j < n and messages[j].role == "tool":
            j += 1
        results = messages[i:j]
        i = j
        have = {r.tool_call_id for r in results}
        missing = [tc for tc in m.tool_calls if tc.id not in have]
        if missing and unanswered == "remove":
            removed += len(missing)
            m = replace(m, tool_calls=tuple(tc for tc in m.tool_calls if tc.id in have))
            if m.is_empty:
                empty += 1
            else:
                out.append(m)
            out.extend(results)
            continue
        out.append(m)
        out.extend(results)
        out.extend(_synthetic_result(tc, m) for tc in missing)
        synthesized += len(missing)
    report = RepairReport(
        empty_dropped=empty, results_synthesized=synthesized, calls_removed=removed
    )
    return out, report


def for_provider(
    history: Iterable[Message | Mapping[str, Any]],
    provider: Provider,
    *,
    unanswered: UnansweredPolicy = "synthesize",
    misplaced_system: SystemPolicy = "hoist",
    alternate_roles: bool | None = None,
) -> list[Message]:
    """The history with ``provider``'s constraints applied (see :func:`repair`)."""
    return repair(
        history,
        unanswered=unanswered,
        misplaced_system=misplaced_system,
        provider=provider,
        alternate_roles=alternate_roles,
    )[0]


def repair(
    history: Iterable[Message | Mapping[str, Any]],
    *,
    unanswered: UnansweredPolicy = "synthesize",
    misplaced_system: SystemPolicy = "hoist",
    provider: Provider = "strict",
    alternate_roles: bool | None = None,
) -> tuple[list[Message], RepairReport]:
    """Return a history ``provider`` accepts, and what was changed.

    ``"strict"`` (the default) and ``"anthropic"`` apply every pass below. ``"openai"``
    skips the two that only role-alternating providers need (the user message put first and
    the merging of consecutive roles) unless ``alternate_roles=True``; ``alternate_roles=
    False`` skips them for any provider. ``unanswered="keep"`` leaves calls without a
    result in place: what the strategies use to clean their input without changing what
    the seeds say they keep.

    Passes, in order: system messages after the conversation start are hoisted into the
    leading system message (or turned into user messages with ``misplaced_system="to_user"``);
    empty user/assistant messages are dropped; each assistant tool-call message is checked
    against the tool results right after it, per call id: results without their call are
    dropped, calls without a result get a synthetic error result with the same id (or are
    removed with ``unanswered="remove"``), repeated call ids are renamed, and calls with an
    empty or missing id get a generated one (``ptc-call-1``, ...; the results with an empty
    id right after them are matched to them in order); finally
    a history whose first non-system message is not from the user gets
    :func:`continuation_message` first; finally consecutive user or assistant messages are
    merged (the later messages' metadata is kept in ``Meta.merged``).
    """
    alternate = provider_name(provider) != "openai" if alternate_roles is None else alternate_roles
    msgs = to_messages(history)
    systems_moved = empty_dropped = orphans = synthesized = removed = renamed = assigned = 0
    text_results = 0

    # 1. system messages
    lead, body, systems_moved = place_systems(msgs, misplaced_system)

    # 2. empty messages
    kept: list[Message] = []
    for m in body:
        if m.role in ("user", "assistant") and m.is_empty:
            empty_dropped += 1
        else:
            kept.append(m)

    # 3. tool-call pairing, per call id
    paired: list[Message] = []
    used_ids: set[str] = set()
    taken: set[str] = set()  # every id in the history, collected when one is first generated
    last = 0

    def generated_id() -> str:
        nonlocal last
        if not taken:
            taken.add("")
            for x in kept:
                taken.update(tc.id for tc in x.tool_calls)
                if x.tool_call_id:
                    taken.add(x.tool_call_id)
        last += 1
        while f"ptc-call-{last}" in taken:
            last += 1
        taken.add(f"ptc-call-{last}")
        return f"ptc-call-{last}"

    i = 0
    n = len(kept)
    while i < n:
        m = kept[i]
        if m.role == "tool":
            orphans += 1
            i += 1
            continue
        if m.role != "assistant" or not m.tool_calls:
            paired.append(m)
            i += 1
            if is_text_call(m):
                # seed 002's text-form call: its results have no call to pair with. Kept as
                # they are (unanswered="keep"), else sent as user text, which every provider
                # accepts and which keeps what the tools returned
                while i < n and kept[i].role == "tool":
                    r = kept[i]
                    if unanswered == "keep":
                        paired.append(r)
                    else:
                        paired.append(text_call_result(r))
                        text_results += 1
                    i += 1
            continue
        calls: list[ChatToolCall] = []
        in_msg: set[str] = set()
        rename: dict[str, str] = {}
        blank: list[str] = []  # generated ids of the calls that had none, in order
        for tc in m.tool_calls:
            if not tc.id:
                tc = replace(tc, id=generated_id())
                assigned += 1
                blank.append(tc.id)
            if tc.id in in_msg:
                removed += 1  # the same id twice in one message: keep the first call
                continue
            in_msg.add(tc.id)
            if tc.id in used_ids:
                k = 2
                while f"{tc.id}~{k}" in used_ids or f"{tc.id}~{k}" in in_msg:
                    k += 1
                new_id = f"{tc.id}~{k}"
                rename[tc.id] = new_id
                renamed += 1
                in_msg.add(new_id)
                tc = replace(tc, id=new_id)
            calls.append(tc)
        ids_assigned = bool(blank)
        by_id = {tc.id: tc for tc in calls}
        answered: dict[str, Message] = {}
        order: list[str] = []
        j = i + 1
        while j < n and kept[j].role == "tool":
            r = kept[j]
            tcid = r.tool_call_id or ""
            if not tcid and blank:
                tcid = blank.pop(0)
            else:
                tcid = rename.get(tcid, tcid)
            if tcid in by_id and tcid not in answered:
                answered[tcid] = r if r.tool_call_id == tcid else replace(r, tool_call_id=tcid)
                order.append(tcid)
            else:
                orphans += 1
            j += 1
        missing = [tc for tc in calls if tc.id not in answered]
        if missing and unanswered == "remove":
            removed += len(missing)
            calls = [tc for tc in calls if tc.id in answered]
        if len(calls) != len(m.tool_calls) or rename or ids_assigned:
            m = replace(m, tool_calls=tuple(calls))
        used_ids.update(tc.id for tc in calls)
        if m.is_empty:
            empty_dropped += 1
        else:
            paired.append(m)
        paired.extend(answered[cid] for cid in order)
        if unanswered == "synthesize":
            for tc in missing:
                synthesized += 1
                paired.append(_synthetic_result(tc, m))
        i = j

    # 4. the first non-system message must come from the user (Anthropic rejects others)
    inserted = 0
    if alternate and paired and paired[0].role != "user":
        inserted = 1
        paired.insert(0, continuation_message(paired[0]))

    # 5. consecutive roles (system messages are merged into one leading message too)
    if alternate:
        merged_list, merges = ensure_alternating_roles(lead + paired)
    else:
        merged_list, merges = lead + paired, 0
    report = RepairReport(
        systems_moved=systems_moved,
        empty_dropped=empty_dropped,
        orphan_results_dropped=orphans,
        results_synthesized=synthesized,
        calls_removed=removed,
        call_ids_renamed=renamed,
        messages_merged=merges,
        users_inserted=inserted,
        call_ids_assigned=assigned,
        text_results_converted=text_results,
    )
    return merged_list, report
