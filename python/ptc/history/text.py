"""Text helpers shared by the strategies: truncation, plain-text tool summaries,
deterministic transcripts for summarizers, file/command extraction and fallback summaries."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .messages import Message, ToolCall
from .tokens import TokenCounter

TRUNCATION_MARKER = "[... truncated {n} tokens ...]"


def truncate_to_tokens(
    text: str, max_tokens: int, counter: TokenCounter, *, marker: str = TRUNCATION_MARKER
) -> str:
    """Keep the head of ``text`` within ``max_tokens`` (marker included) and say how much went.

    Text already within the limit is returned unchanged. The cut is found from the byte
    ratio and corrected a few times, so it costs a handful of counter calls at most.
    """
    total = counter.count_text(text)
    if total <= max_tokens:
        return text
    max_tokens = max(max_tokens, 0)
    note = "\n" + marker.format(n=total - max_tokens)
    budget = max_tokens - counter.count_text(note)
    if budget <= 0:
        return note.lstrip("\n")
    cut = max(0, int(len(text) * budget / total))
    head = text[:cut]
    for _ in range(8):
        c = counter.count_text(head)
        if c <= budget:
            break
        cut = max(0, int(cut * budget / c) - 1)
        head = text[:cut]
    else:
        head = text[: max(0, budget)]
    return head + note


def cut_middle(text: str, max_chars: int, *, what: str = "characters") -> str:
    """Keep the head and tail of ``text`` (two thirds head), noting what was cut."""
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... {cut} {what} cut ...]\n{text[len(text) - tail :]}"


_DIFF_LINE = re.compile(
    r"^(diff --git |@@ |\+\+\+ |--- |\*\*\* (Begin Patch|Update File|Add File))"
)


def looks_like_diff(text: str) -> bool:
    return any(_DIFF_LINE.match(line) for line in text.splitlines()[:50])


def trim_tool_output(text: str, max_chars: int, *, diff_lines: int = 40) -> str:
    """Shorten a tool output for a summarizer: diffs keep their first lines, others head+tail."""
    if len(text) <= max_chars:
        return text
    if looks_like_diff(text):
        lines = text.splitlines()
        if len(lines) > diff_lines:
            text = (
                "\n".join(lines[:diff_lines])
                + f"\n[... diff cut: {len(lines) - diff_lines} more lines ...]"
            )
    return cut_middle(text, max_chars)


# -- tool classification (seed 003: files touched, commands run, delegations) -----------

FILE_TOOLS = frozenset(
    (
        "edit_file",
        "write_file",
        "create_file",
        "apply_patch",
        "str_replace",
        "str_replace_based_edit_tool",
        "replace_in_file",
        "insert",
        "edit",
        "write",
        "patch",
        "delete_file",
        "move_file",
    )
)
COMMAND_TOOLS = frozenset(
    ("run_command", "shell", "bash", "exec", "execute", "run", "terminal", "run_shell_command")
)
_PATH_KEYS = ("path", "file_path", "filepath", "filename", "file", "target_file")
_COMMAND_KEYS = ("command", "cmd", "script")
_TASK_KEYS = ("task", "prompt", "instructions", "goal")
_PATCH_PATH = re.compile(r"^(?:\*\*\* (?:Update|Add|Delete) File: |\+\+\+ b/)(\S+)", re.MULTILINE)


def is_delegate_tool(name: str) -> bool:
    n = name.lower()
    return n.startswith("delegate") or n in ("subagent", "spawn_agent", "run_agent", "task")


def _first_str(args: dict[str, object], keys: Sequence[str]) -> str | None:
    for k in keys:
        v = args.get(k)
        if isinstance(v, str) and v:
            return v
        if isinstance(v, list) and v and all(isinstance(x, str) for x in v):
            return " ".join(v)
    return None


def call_paths(call: ToolCall) -> list[str]:
    """File paths a file-editing call touched (from its arguments or a patch body)."""
    if call.name.lower() not in FILE_TOOLS:
        return []
    args = call.parsed_arguments()
    paths = []
    p = _first_str(args, _PATH_KEYS)
    if p:
        paths.append(p)
    for v in args.values():
        if isinstance(v, str) and ("*** " in v or "+++ b/" in v):
            paths.extend(_PATCH_PATH.findall(v))
    if not paths and "*** " in call.arguments:
        paths.extend(_PATCH_PATH.findall(call.arguments))
    return paths


def call_command(call: ToolCall) -> str | None:
    if call.name.lower() not in COMMAND_TOOLS:
        return None
    return _first_str(call.parsed_arguments(), _COMMAND_KEYS)


def call_task(call: ToolCall) -> str | None:
    if not is_delegate_tool(call.name):
        return None
    return _first_str(call.parsed_arguments(), _TASK_KEYS) or call.arguments


def _results_by_id(messages: Sequence[Message]) -> dict[str, Message]:
    return {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}


def tool_call_summary(call: ToolCall, result: Message | None, *, max_chars: int = 600) -> str:
    """A plain-text line for one call and its result (seed 003: tool summaries).

    Commands show command, cwd and truncated output; file edits show the path and a cut
    diff; delegations show the task and the delegate's answer; other tools show name,
    arguments and result.
    """
    out = result.text_with_placeholders() if result is not None else "(no result)"
    args = call.parsed_arguments()
    cmd = call_command(call)
    if cmd is not None:
        cwd = args.get("cwd") or args.get("workdir")
        where = f" (cwd {cwd})" if isinstance(cwd, str) else ""
        return f"Ran `{cmd}`{where}: {trim_tool_output(out, max_chars)}"
    paths = call_paths(call)
    if paths:
        return f"{call.name} {', '.join(paths)}: {trim_tool_output(out, max_chars)}"
    task = call_task(call)
    if task is not None:
        return (
            f"Delegated ({call.name}) task: {cut_middle(task, 200)} -> {cut_middle(out, max_chars)}"
        )
    return (
        f"Called {call.name}({cut_middle(call.arguments, 200)}) -> "
        f"{trim_tool_output(out, max_chars)}"
    )


def plain_text_tool_history(history: Iterable[Message], *, max_chars: int = 600) -> list[Message]:
    """History with tool-call metadata turned into plain-text assistant summaries.

    Providers accept such a history whatever was trimmed, because it has no call/result
    pairs left to break (seed 003: tool-call normalization).
    """
    msgs = list(history)
    results = _results_by_id(msgs)
    out: list[Message] = []
    for m in msgs:
        if m.role == "tool":
            continue
        if m.role == "assistant" and m.tool_calls:
            lines = [m.text] if m.text else []
            lines.extend(
                tool_call_summary(tc, results.get(tc.id), max_chars=max_chars)
                for tc in m.tool_calls
            )
            out.append(Message.assistant("\n".join(lines)))
        else:
            out.append(m)
    return out


def render_message(m: Message, *, message_chars: int, tool_chars: int, diff_lines: int = 40) -> str:
    """One message as transcript text for a summarizer; deterministic for the same message."""
    if m.role == "tool":
        body = trim_tool_output(m.text_with_placeholders(), tool_chars, diff_lines=diff_lines)
        return f"[tool result {m.tool_call_id}]: {body}"
    body = cut_middle(m.text_with_placeholders(), message_chars)
    lines = [f"[{m.role}]: {body}"] if body else [f"[{m.role}]:"]
    for tc in m.tool_calls:
        lines.append(f"  called {tc.name}({cut_middle(tc.arguments, tool_chars)}) id={tc.id}")
    return "\n".join(lines)


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
    _PATCH_PATH,
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


def recent_files_hint(files: Sequence[str]) -> str:
    return FILES_HINT_PREFIX + ", ".join(files)


def files_hint_of(summary: str) -> str | None:
    """The last recent-files line of a summary, if it has one."""
    lines = [ln for ln in summary.splitlines() if ln.startswith(FILES_HINT_PREFIX)]
    return lines[-1] if lines else None


def strip_files_hint(summary: str) -> str:
    """A summary without its recent-files lines (so a new one replaces, never stacks)."""
    lines = [ln for ln in summary.splitlines() if not ln.startswith(FILES_HINT_PREFIX)]
    return "\n".join(lines).strip()


def _fallback_lines(
    f: WorkFacts, previous: str | None, max_chars: int, scale: float, earlier: bool
) -> list[str]:
    chars = max(24, int(max_chars * scale))
    item = max(24, int(200 * scale))
    n_files, n_cmds, n_dels = (max(2, int(k * scale)) for k in (20, 10, 5))
    lines: list[str] = []
    if previous and earlier:
        # one bounded earlier block: an earlier fallback summary is flattened into it (its
        # own header and recent-files line removed), so repeated compactions converge
        kept = [
            ln
            for ln in strip_files_hint(previous).splitlines()
            if ln.strip() != EARLIER_SUMMARY_HEADER
        ]
        body = "\n".join(kept).strip()
        if body:
            lines.append(EARLIER_SUMMARY_HEADER)
            lines.append(cut_middle(body, chars * 4))
    tight = scale < 1  # under a tight budget, fields with nothing to say are left out
    fields = (
        (
            "Last user request",
            [cut_middle(f.last_user_request.strip(), chars)] if f.last_user_request else [],
            "",
        ),
        ("Files touched", list(f.files[-n_files:]), ", "),
        ("Commands run", [cut_middle(c, item) for c in f.commands[-n_cmds:]], "; "),
        ("Delegations", [cut_middle(d, item) for d in f.delegations[-n_dels:]], "; "),
        (
            "Last assistant reply",
            [cut_middle(f.last_assistant_reply.strip(), chars)] if f.last_assistant_reply else [],
            "",
        ),
    )
    for label, values, sep in fields:
        if values:
            lines.append(f"{label}: {sep.join(values)}")
        elif not tight:
            lines.append(f"{label}: (none)")
    return lines


def fallback_summary(
    messages: Iterable[Message],
    previous: str | None = None,
    *,
    max_chars: int = 600,
    max_tokens: int | None = None,
    counter: TokenCounter | None = None,
) -> str:
    """Deterministic summary used when a summarizer fails (seed 003).

    Lists the last user request, files touched, commands run, delegations and the last
    assistant reply, from structured tool calls and from effects reported as plain text;
    an earlier summary is carried over first so nothing it held is lost. With
    ``max_tokens`` (and ``counter``) every field is shortened before any is cut off, the
    earlier summary goes first, so a small budget still names the request, files and
    commands.
    """
    f = work_facts(messages)
    text = "\n".join(_fallback_lines(f, previous, max_chars, 1.0, True))
    if max_tokens is None or counter is None or counter.count_text(text) <= max_tokens:
        return text
    for earlier in (True, False):
        for scale in (0.5, 0.25, 0.12, 0.06, 0.0):
            text = "\n".join(_fallback_lines(f, previous, max_chars, scale, earlier))
            if counter.count_text(text) <= max_tokens:
                return text
    return truncate_to_tokens(text, max_tokens, counter)


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
