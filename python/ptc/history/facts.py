"""What a history did (the files it touched, the commands it ran, the work it delegated),
read from tool calls and from plain text, and the deterministic summary made from it: token
compaction's fallback and the default summarizer."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .messages import Message
from .text import (
    ELLIPSIS,
    FILE_TOOLS,
    PATCH_PATH,
    call_command,
    call_paths,
    call_task,
    clip,
)
from .tokens import ESTIMATE, TokenCounter


@dataclass(frozen=True, slots=True)
class WorkFacts:
    """What a history did, extracted without any model: for fallback summaries and hints."""

    last_user_request: str | None
    files: tuple[str, ...]
    commands: tuple[str, ...]
    delegations: tuple[str, ...]
    last_assistant_reply: str | None


def _dedupe_keep_last(items: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for it in items:
        seen.pop(it, None)
        seen[it] = None
    return tuple(seen)


# Effects reported as plain text (seed 003: Isaac keeps tool summaries as text, not calls).
# Our own normalised lines first (see tool_call_summary), then common wordings.
_TEXT_COMMANDS = (
    re.compile(r"^Ran `([^`\n]+)`", re.MULTILINE),
    re.compile(r"^\$ (\S[^\n]*)$", re.MULTILINE),
    re.compile(
        # linear: no two quantifiers compete for the same spaces
        r"^(?:command|cmd|run_command|ran(?: command)?|executed(?: command)?)"
        r"[ \t]*[:=][ \t]*([^\n]*)$",
        re.MULTILINE | re.IGNORECASE,
    ),
    re.compile(r"\b(?:ran|executed|running) (?:the )?(?:command )?`([^`\n]+)`", re.IGNORECASE),
)
_PATHLIKE = r"`?((?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8}|(?:[\w.-]+/)+[\w.-]+)`?"
_TEXT_FILES = (
    re.compile(r"^(?:" + "|".join(sorted(FILE_TOOLS)) + r")[: ]\s*" + _PATHLIKE, re.MULTILINE),
    re.compile(
        r"\b(?:updated|edited|modified|created|wrote(?: to)?|deleted|patched|saved|changed)"
        r"\s+(?:the\s+)?(?:file\s+)?" + _PATHLIKE,
        re.IGNORECASE,
    ),
    re.compile(r"^(?:file|path)\s*[:=]\s*" + _PATHLIKE, re.MULTILINE | re.IGNORECASE),
    PATCH_PATH,
)
_TEXT_DELEGATIONS = (
    re.compile(r"^Delegated \((\w+)\) task: (.+?)(?: -> |$)", re.MULTILINE),
    re.compile(r"^((?:delegate|subagent)\w*)\s*[:(]\s*(?:task\s*[:=]\s*)?([^\n]+)", re.MULTILINE),
)


#: Effects are read from the head of a text, where tool summaries state them; a long tool
#: output's tail is program output, not a report of what the agent did.
EFFECT_SCAN_CHARS = 2_000


# Numbers ("3.5") and abbreviations ("e.g", "i.e") look like file names to the patterns.
_NOT_A_PATH = re.compile(r"[\d.]+|[A-Za-z]\.[A-Za-z]|\.+")


def _scoped(rx: re.Pattern[str]) -> str:
    return f"(?i:{rx.pattern})" if rx.flags & re.IGNORECASE else f"(?:{rx.pattern})"


# One search tells whether a text reports anything (most texts do not), before the patterns
# run one by one to sort what they found.
_ANY_EFFECT = re.compile(
    "|".join(_scoped(rx) for rx in (*_TEXT_FILES, *_TEXT_COMMANDS, *_TEXT_DELEGATIONS)),
    re.MULTILINE,
)


def text_effects(text: str) -> tuple[list[str], list[str], list[str]]:
    """Files, commands and delegations an assistant or tool text reports, in order."""
    if _ANY_EFFECT.search(text) is None:
        return [], [], []
    found: list[tuple[int, str, str]] = []
    for rx in _TEXT_FILES:
        for mt in rx.finditer(text):
            path = mt.group(1).rstrip(".,:;)")
            if _NOT_A_PATH.fullmatch(path) is None:
                found.append((mt.start(), "f", path))
    for rx in _TEXT_COMMANDS:
        for mt in rx.finditer(text):
            cmd = mt.group(1).strip().strip("`").strip()
            if cmd:
                found.append((mt.start(), "c", cmd))
    for rx in _TEXT_DELEGATIONS:
        found.extend(
            (mt.start(), "d", f"{mt.group(1)}: {mt.group(2).strip()}") for mt in rx.finditer(text)
        )
    found.sort(key=lambda x: x[0])
    files = [v for _, k, v in found if k == "f"]
    commands = [v for _, k, v in found if k == "c"]
    delegations = [v for _, k, v in found if k == "d"]
    return files, commands, delegations


def work_facts(messages: Iterable[Message]) -> WorkFacts:
    """Facts from structured tool calls and from effects reported as plain text."""
    last_user = last_reply = None
    files: list[str] = []
    commands: list[str] = []
    delegations: list[str] = []
    answered: set[str] = set()  # results of structured calls: their call says what they did
    for m in messages:
        if m.role == "user" and m.meta.source != "system" and m.text.strip():
            last_user = m.text
            continue
        if m.role not in ("assistant", "tool"):
            continue
        if m.role == "assistant" and m.text.strip():
            last_reply = m.text
        for tc in m.tool_calls:
            answered.add(tc.id)
            files.extend(call_paths(tc))
            cmd = call_command(tc)
            if cmd:
                commands.append(cmd)
            task = call_task(tc)
            if task:
                delegations.append(f"{tc.name}: {task}")
        if m.text and not m.tool_calls and not (m.role == "tool" and m.tool_call_id in answered):
            f, c, d = text_effects(m.text[:EFFECT_SCAN_CHARS])
            files.extend(f)
            commands.extend(c)
            delegations.extend(d)
    return WorkFacts(
        last_user,
        _dedupe_keep_last(files),
        _dedupe_keep_last(commands),
        _dedupe_keep_last(delegations),
        last_reply,
    )


def _message_files(m: Message, answered: set[str]) -> list[str]:
    if m.role not in ("assistant", "tool"):
        return []
    if m.tool_calls:
        return [p for tc in m.tool_calls for p in call_paths(tc)]
    if not m.text or (m.role == "tool" and m.tool_call_id in answered):
        return []
    return text_effects(m.text[:EFFECT_SCAN_CHARS])[0]


def recent_files(messages: Iterable[Message], limit: int = 5) -> list[str]:
    """Paths of the last ``limit`` files edited, most recent last (seed 003): the same as
    the last ``limit`` of :func:`work_facts`' files, read from the newest message back."""
    if limit <= 0:
        return []
    msgs = messages if isinstance(messages, Sequence) else list(messages)
    answered = {tc.id for m in msgs if m.role == "assistant" for tc in m.tool_calls}
    seen: dict[str, None] = {}
    for m in reversed(msgs):
        for path in reversed(_message_files(m, answered)):
            if path not in seen:
                seen[path] = None
                if len(seen) == limit:
                    return list(reversed(seen))
    return list(reversed(seen))


FILES_HINT_PREFIX = "Recent files touched (most recent last): "
EARLIER_SUMMARY_HEADER = "Earlier summary:"


#: Stands for the directories left out of a shortened path in the recent-files line.
PATH_ELLIPSIS = "\u2026"
#: The sizes (characters) a path in the recent-files line is shortened to, in turn, before an
#: older path is left out; ``None`` is the whole path, ``0`` the file name alone.
HINT_PATH_CHARS: tuple[int | None, ...] = (None, 48, 24, 0)
_PATH_SEPARATORS = "/\\"


def recent_files_hint(files: Sequence[str]) -> str:
    return FILES_HINT_PREFIX + ", ".join(files)


def hint_files(line: str | None) -> list[str]:
    """The paths a recent-files line names (most recent last); none for ``None``."""
    if not line or not line.startswith(FILES_HINT_PREFIX):
        return []
    return [p for p in line[len(FILES_HINT_PREFIX) :].split(", ") if p]


def shorten_path(path: str, max_chars: int) -> str:
    """``path`` within ``max_chars`` characters where it can be: the longest tail of it that
    starts at a directory separator, after ``\u2026`` (``\u2026/pkg/f.py``). The file name is
    always kept whole (``\u2026/f.py``, however long), and a path the cut would not make
    shorter is returned as it is."""
    if len(path) <= max_chars:
        return path
    seps = [i for i, ch in enumerate(path) if ch in _PATH_SEPARATORS and i < len(path) - 1]
    if not seps:
        return path
    tails = [PATH_ELLIPSIS + path[i:] for i in seps]
    short = next((t for t in tails if len(t) <= max_chars), tails[-1])
    return short if len(short) < len(path) else path


def files_hint_variants(files: Sequence[str]) -> list[str]:
    """Recent-files lines for ``files`` (most recent last), from the whole line down to the
    smallest: every path shortened in turn to the sizes of :data:`HINT_PATH_CHARS` (down to
    its file name), then the oldest path left out and the rest tried the same way, down to
    the newest file's name alone. The file name end of a path is never cut."""
    out: list[str] = []
    for n in range(len(files), 0, -1):
        for limit in HINT_PATH_CHARS:
            newest = files[-n:] if limit is None else [shorten_path(p, limit) for p in files[-n:]]
            line = recent_files_hint(newest)
            if line not in out:
                out.append(line)
    return out


def files_hint_of(summary: str) -> str | None:
    """The last recent-files line of a summary, if it has one."""
    lines = [ln for ln in summary.splitlines() if ln.startswith(FILES_HINT_PREFIX)]
    return lines[-1] if lines else None


def strip_files_hint(summary: str) -> str:
    """A summary without its recent-files lines (so a new one replaces, never stacks)."""
    lines = [ln for ln in summary.splitlines() if not ln.startswith(FILES_HINT_PREFIX)]
    return "\n".join(lines).strip()


FALLBACK_LABELS: Mapping[str, str] = {
    "request": "Last user request",
    "files": "Files touched",
    "commands": "Commands run",
    "delegations": "Delegations",
    "reply": "Last assistant reply",
}
#: The order a fallback summary writes its fields in ("earlier" is the earlier summary).
FALLBACK_ORDER = ("earlier", "request", "files", "commands", "delegations", "reply")
#: The order they are kept in when the room is short: the last ones go first. With a
#: recent-files line beside the summary, the files field it repeats is left out first of all.
FALLBACK_PRIORITY = ("request", "commands", "files", "earlier", "delegations", "reply")
#: Shares of the full size tried, largest first, before whole fields are left out.
FALLBACK_SCALES = (1.0, 0.5, 0.25, 0.12, 0.06, 0.0)
#: Shortest size a shortened field gets (characters).
MIN_FIELD_CHARS = 24


@dataclass(frozen=True, slots=True)
class FittedSummary:
    """A fallback summary fitted to a size, and how much of its first two fields it kept.

    ``rank`` is ``(fits, request, commands)``: ``fits`` is 1 when the text is within the
    size and 0 when it is not (only the first word of the top field was left, over the
    size), so being over the size ranks below anything that fits; then, for the request and
    the commands, 2 when the field is kept as at full size (or there is nothing to report),
    1 when it is shortened, 0 when it is left out. A larger rank keeps more of what matters
    most.
    """

    text: str
    rank: tuple[int, int, int]


#: The rank of a summary that fits and keeps the request and the commands as they are.
BEST_RANK = (1, 2, 2)


def _earlier_body(previous: str | None) -> str:
    """An earlier summary flattened for the ``Earlier summary:`` block: its own header and
    recent-files line removed, so repeated compactions converge instead of stacking."""
    if not previous:
        return ""
    kept = [
        ln for ln in strip_files_hint(previous).splitlines() if ln.strip() != EARLIER_SUMMARY_HEADER
    ]
    return "\n".join(kept).strip()


def _head_of(text: str, max_chars: int) -> str:
    """The head of a multi-line ``text`` within ``max_chars`` characters, never cut into a
    marker: its first lines whole when they fill at least half of the size (the later lines
    are left out), else :func:`~ptc.history.text.clip` at a word, ending with ``...``."""
    if len(text) <= max_chars:
        return text
    end = text.rfind("\n", 0, max_chars + 1)
    if end >= max_chars // 2:
        return text[:end].rstrip()
    return clip(text, max_chars)


def _fallback_fields(f: WorkFacts, earlier: str, max_chars: int, scale: float) -> dict[str, str]:
    """The fields with something to report, each as its text, sized by ``scale``."""
    chars = max(MIN_FIELD_CHARS, int(max_chars * scale))
    item = max(MIN_FIELD_CHARS, int(200 * scale))
    n_files, n_cmds, n_dels = (max(2, int(k * scale)) for k in (20, 10, 5))
    out: dict[str, str] = {}
    if earlier:
        out["earlier"] = f"{EARLIER_SUMMARY_HEADER}\n{_head_of(earlier, chars * 4)}"
    values: dict[str, str] = {}
    if f.last_user_request:
        values["request"] = clip(f.last_user_request.strip(), chars)
    if f.files:
        values["files"] = ", ".join(f.files[-n_files:])
    if f.commands:
        values["commands"] = "; ".join(clip(c, item) for c in f.commands[-n_cmds:])
    if f.delegations:
        values["delegations"] = "; ".join(clip(d, item) for d in f.delegations[-n_dels:])
    if f.last_assistant_reply:
        values["reply"] = clip(f.last_assistant_reply.strip(), chars)
    for key, value in values.items():
        out[key] = f"{FALLBACK_LABELS[key]}: {value}"
    return out


def _field_value(f: WorkFacts, earlier: str, key: str) -> tuple[str, str]:
    """``(label text, value)`` of one field at full length, for cutting its head to fit."""
    if key == "earlier":
        return EARLIER_SUMMARY_HEADER + "\n", earlier
    value = {
        "request": f.last_user_request or "",
        "files": f.files[-1] if f.files else "",
        "commands": f.commands[-1] if f.commands else "",
        "delegations": f.delegations[-1] if f.delegations else "",
        "reply": f.last_assistant_reply or "",
    }[key]
    return f"{FALLBACK_LABELS[key]}: ", value.strip()


def _head_to_fit(label: str, value: str, fits: Callable[[str], bool]) -> str:
    """``label`` and the longest head of ``value`` that fits (whole words first, ending
    with ``...``); when none fits, the first word: over the size, but still naming it."""
    v = value[:MIN_FIELD_CHARS]
    words = [i for i in range(len(v), 0, -1) if i == len(value) or value[i].isspace()]
    for i in [*words, *(i for i in range(len(v), 0, -1) if i not in words)]:
        head = value[:i].rstrip()
        if head:
            line = label + head + ("" if i >= len(value) else ELLIPSIS)
            if fits(line):
                return line
    first = value[: words[-1]] if words else v
    return label + first.rstrip() + ("" if len(first) >= len(value) else ELLIPSIS)


def _rank(full: Mapping[str, str], kept: Mapping[str, str], fits: bool) -> tuple[int, int, int]:
    def level(key: str) -> int:
        if key not in full:
            return 2
        if key not in kept:
            return 0
        return 2 if kept[key] == full[key] else 1

    return int(fits), level("request"), level("commands")


def fit_fallback(
    facts: WorkFacts,
    previous: str | None = None,
    *,
    max_chars: int = 600,
    max_tokens: int | None = None,
    counter: TokenCounter | None = None,
    max_total_chars: int | None = None,
    files_in_hint: bool = False,
) -> FittedSummary:
    """The fallback summary of ``facts`` within ``max_tokens`` (and ``max_total_chars``).

    When the whole summary does not fit, fields with nothing to report are left out, then
    every field is shortened together (down to :data:`MIN_FIELD_CHARS` characters); when
    even that does not fit, whole fields are left out from the lowest priority up (see
    :data:`FALLBACK_PRIORITY`). When the first field alone does not fit at its shortest,
    the head of it that fits is kept (or its first word, over the size: see
    :class:`FittedSummary`'s ``rank``). ``files_in_hint``: the caller writes the recent files
    beside the summary, so once the summary must be shortened the files field, which would
    repeat that line, is left out first (the text is empty when nothing else is to report).
    ``max_chars`` bounds each field at full size, ``max_total_chars`` the whole text.
    """
    count = (counter or ESTIMATE).count_text

    def fits(text: str) -> bool:
        if max_total_chars is not None and len(text) > max_total_chars:
            return False
        return max_tokens is None or count(text) <= max_tokens

    earlier = _earlier_body(previous)
    full = _fallback_fields(facts, earlier, max_chars, 1.0)
    # at full size, a field with nothing to report says so, unless an earlier summary may
    # hold what it would deny
    text = "\n".join(
        full.get(k) or f"{FALLBACK_LABELS[k]}: (none)"
        for k in FALLBACK_ORDER
        if k in full or (k != "earlier" and not previous)
    )
    if fits(text):
        return FittedSummary(text, BEST_RANK)
    order = [k for k in FALLBACK_PRIORITY if k in full and not (files_in_hint and k == "files")]
    if not order:
        return FittedSummary("", BEST_RANK)
    sized = [full, *(_fallback_fields(facts, earlier, max_chars, s) for s in FALLBACK_SCALES[1:])]
    for n in range(len(order), 0, -1):
        keep = set(order[:n])
        for fields in sized:
            kept = {k: v for k, v in fields.items() if k in keep}
            text = "\n".join(kept[k] for k in FALLBACK_ORDER if k in kept)
            if fits(text):
                return FittedSummary(text, _rank(full, kept, fits=True))
    top = order[0]
    line = _head_to_fit(*_field_value(facts, earlier, top), fits)
    return FittedSummary(line, _rank(full, {top: line}, fits=fits(line)))


def fallback_summary(
    messages: Iterable[Message],
    previous: str | None = None,
    *,
    max_chars: int = 600,
    max_tokens: int | None = None,
    counter: TokenCounter | None = None,
    files_in_hint: bool = False,
) -> str:
    """Deterministic summary used when a summarizer fails (seed 003).

    Lists the last user request, files touched, commands run, delegations and the last
    assistant reply, from structured tool calls and from effects reported as plain text;
    an earlier summary is carried over first as one ``Earlier summary:`` block. With
    ``max_tokens`` (counted with ``counter``, the estimate by default) the fields are
    filled by priority: the request, the commands, the files, the earlier summary, the
    delegations, the last reply. Every field is shortened before a whole field is left out,
    from the lowest priority up; no field is cut into a truncation marker, and at the
    smallest sizes the request still comes first, shortened if it must be (an earlier
    summary keeps its first lines, or its head cut at a word with ``...``). ``max_chars``
    bounds each field at full size (the earlier summary to four times that), not the whole
    summary. ``files_in_hint``: the caller writes the recent files beside the summary (as
    compaction does), so once the summary must be shortened the files field, which would
    repeat that line, is left out first. See :func:`ptc.history.facts.fit_fallback`.
    """
    return fit_fallback(
        work_facts(messages),
        previous,
        max_chars=max_chars,
        max_tokens=max_tokens,
        counter=counter,
        files_in_hint=files_in_hint,
    ).text


_REFUSAL = re.compile(
    r"(no (earlier|previous|prior) (conversation|context|messages)"
    r"|nothing to summari[sz]e"
    r"|^(i'?m sorry|sorry,|i cannot|i can'?t|i am unable|i'?m unable|i won'?t|as an ai))",
    re.IGNORECASE,
)


def is_unusable_summary(text: object) -> bool:
    """Empty, non-text, or a refusal such as "no earlier conversation" (seed 003)."""
    if not isinstance(text, str):
        return True
    s = text.strip()
    return not s or _REFUSAL.search(s[:200]) is not None
