"""Text helpers shared by the strategies: truncation, plain-text tool summaries and
deterministic transcripts for summarizers (what a history did, and the fallback summary made
from it, are in ``facts``)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .messages import ChatToolCall, Message
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
    """Keep the head and tail of ``text`` (two thirds head), noting what was cut.

    A text the note would not make shorter is returned whole: shortening never lengthens.
    """
    if len(text) <= max_chars:
        return text
    head = max_chars * 2 // 3
    tail = max_chars - head
    cut = len(text) - head - tail
    out = f"{text[:head]}\n[... {cut} {what} cut ...]\n{text[len(text) - tail :]}"
    return out if len(out) < len(text) else text


ELLIPSIS = "..."
_SPACE = re.compile(r"\s")


def clip(text: str, max_chars: int) -> str:
    """The head of ``text`` within ``max_chars`` characters, ending with ``...``.

    The cut falls after a whole word when one ends in the second half of the room, else
    mid-word. Text within the limit is returned unchanged, and so is text the cut would not
    make shorter.
    """
    if len(text) <= max(max_chars, 0):
        return text
    keep = max(max_chars - len(ELLIPSIS), 0)
    head = text[:keep]
    if not text[keep].isspace():
        spaces = [m.start() for m in _SPACE.finditer(head)]
        if spaces and spaces[-1] >= keep // 2:
            head = head[: spaces[-1]]
    out = head.rstrip() + ELLIPSIS
    return out if len(out) < len(text) else text


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
PATCH_PATH = re.compile(r"^(?:\*\*\* (?:Update|Add|Delete) File: |\+\+\+ b/)(\S+)", re.MULTILINE)


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


def call_paths(call: ChatToolCall) -> list[str]:
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
            paths.extend(PATCH_PATH.findall(v))
    if not paths and "*** " in call.arguments:
        paths.extend(PATCH_PATH.findall(call.arguments))
    return paths


def call_command(call: ChatToolCall) -> str | None:
    if call.name.lower() not in COMMAND_TOOLS:
        return None
    return _first_str(call.parsed_arguments(), _COMMAND_KEYS)


def call_task(call: ChatToolCall) -> str | None:
    if not is_delegate_tool(call.name):
        return None
    return _first_str(call.parsed_arguments(), _TASK_KEYS) or call.arguments


def _results_by_id(messages: Sequence[Message]) -> dict[str, Message]:
    return {m.tool_call_id: m for m in messages if m.role == "tool" and m.tool_call_id}


def tool_call_summary(call: ChatToolCall, result: Message | None, *, max_chars: int = 600) -> str:
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
