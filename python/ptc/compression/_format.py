"""Line formats shared by the strategies (FMT-001..016, MSG-005, ERR-003), and
:class:`Rendering`, the start both built-in strategies render from."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from typing import Any

from ptc import _core
from ptc.compression.base import ChatMessage, DataEntry, RenderOptions, Strategy, ToolSpec
from ptc.turn import MemoryEntry, ToolCallRecord, Turn

TOOL_HEADER = ";; === tool/ ==="  # FMT-001
DATA_HEADER = ";; === data/ ==="  # FMT-002
USER_HEADER = ";; === user/ (your prelude) ==="  # FMT-003
TOOL_CALLS_HEADER = ";; Tool calls made:"  # FMT-011
NO_TOOL_CALLS = ";; No tool calls made"  # FMT-013
OUTPUT_HEADER = ";; Output:"  # FMT-014
FINAL_TURN = "FINAL TURN - you must call (return result) or (fail reason) now."  # MSG-005

# Comments start in this column (when the entry is shorter), so entries line up in every section.
COMMENT_COLUMN = 32


def aligned(left: str, comment: str | None) -> str:
    if not comment:
        return left
    return f"{left}{' ' * max(2, COMMENT_COLUMN - len(left))}; {comment}"


def turns_left_line(turns_left: int) -> str:
    """``Turns left: N``, N counting the turn about to be taken; the last one gets FINAL_TURN."""
    return FINAL_TURN if turns_left <= 1 else f"Turns left: {turns_left}"


def sanitize_doc(doc: str) -> str:
    """DEF-007: ``;`` removed; line breaks folded so a docstring stays on its comment line."""
    return " ".join(doc.replace(";", "").split())


def tool_line(tool: ToolSpec) -> str:
    """FMT-004: ``(tool/name params)      ; signature`` with the description appended."""
    left = f"(tool/{tool.name}{''.join(' ' + p for p in tool.params)})"
    comment = tool.signature
    if tool.description:
        comment += f' - "{sanitize_doc(tool.description)}"'
    return aligned(left, comment)


def data_line(entry: DataEntry) -> str:
    """FMT-005: ``data/name      ; type, sample: ...``."""
    comment = entry.type if entry.sample is None else f"{entry.type}, sample: {entry.sample}"
    return aligned(f"data/{entry.name}", comment)


def memory_line(entry: MemoryEntry, show_sample: bool) -> str:
    """FMT-006..010: functions with params/docstring/return type, values with type/sample."""
    if entry.kind == "function":
        left = f"({entry.name} [{' '.join(entry.params or ())}])"
        parts = []
        if entry.doc:
            parts.append(f'"{sanitize_doc(entry.doc)}"')
        if entry.return_type:
            parts.append(f"-> {entry.return_type}")
        return aligned(left, " ".join(parts))
    comment = f"= {entry.type}"
    if entry.doc:
        comment = f'"{sanitize_doc(entry.doc)}" {comment}'
    if show_sample and entry.sample is not None:
        comment += f", sample: {entry.sample}"
    return aligned(entry.name, comment)


def tool_call_line(call: ToolCallRecord) -> str:
    """FMT-012: ``;   name(args)``; results are never listed here (TC-004)."""
    return f";   {call.name}({call.args_text})"


def cut_print(text: str, max_chars: int) -> str:
    """TRN-011: one println entry is kept as-is up to ``max_chars`` characters."""
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def output_lines(prints: Sequence[str], max_chars: int, max_tokens: int | None = None) -> list[str]:
    """The println entries as shown (:func:`cut_print`), within ``max_tokens`` exact o200k
    tokens when given: the newest entries are kept (the oldest go first, as TRN-010 drops
    them) after a line ``...N earlier lines``; when not even the newest fits, its head is kept
    and ends ``...N more chars``."""
    lines = [cut_print(p, max_chars) for p in prints]
    if max_tokens is None or _tokens("\n".join(lines)) <= max_tokens:
        return lines
    kept: list[str] = []
    for i in range(len(lines) - 1, -1, -1):
        candidate = [*_earlier(i), lines[i], *kept]
        if _tokens("\n".join(candidate)) > max_tokens:
            break
        kept = [lines[i], *kept]
    else:
        return lines  # unreachable: the whole did not fit
    if kept:
        return [*_earlier(len(lines) - len(kept)), *kept]
    # not even the newest entry fits: its head, as long as fits
    earlier = _earlier(len(lines) - 1)
    head = _longest_head(lines[-1], max_tokens, earlier)
    return [] if head is None else [*earlier, head]


def _earlier(n: int) -> list[str]:
    return [f"...{n:,} earlier {'line' if n == 1 else 'lines'}"] if n else []


def _head(line: str, n: int) -> str:
    return f"{line[:n]}...{len(line) - n:,} more chars"


def _tokens(text: str) -> int:
    return _core.count_tokens(text, "o200k_base")


def _longest_head(text: str, max_tokens: int, before: Sequence[str] = ()) -> str | None:
    """The longest head of ``text`` marked ``...N more chars`` that fits ``max_tokens`` exact
    o200k tokens after the lines ``before`` (bisection: a longer head never costs fewer
    tokens); None when not even the marker alone fits."""

    def fits(n: int) -> bool:
        return _tokens("\n".join([*before, _head(text, n)])) <= max_tokens

    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return _head(text, lo) if fits(lo) else None


def namespace_sections(opts: RenderOptions) -> list[str]:
    """The ``tool/`` and ``data/`` sections: fixed for a run so providers cache them (NS-012)."""
    sections = []
    tools: Sequence[ToolSpec] = opts.get("tools", ())
    if tools:
        sections.append(tool_section(tuple(tools), opts.get("tool_listing_tokens")))
    data: Sequence[DataEntry] = opts.get("data", ())
    if data:
        sections.append("\n".join([DATA_HEADER, *(data_line(d) for d in data)]))
    return sections


#: How a deferred listing (issue 33 §2) tells the program to find the tools it does not show.
FIND_TOOLS = (
    ';; Find tools with (tools "words"): up to 10 best matches by the words of their names and'
    "\n;; docs, as {:name :doc :signature :effect}. (doc tool/name) gives a tool's parameters,"
    "\n;; signature and description."
)

#: Words a group's summary leaves out: they say nothing about what its tools are for.
SUMMARY_STOPWORDS = frozenset(
    "a about all an and any are as at be been by can do does each for from get gets given has"
    " have how in into is it its list lists may new now of on one or our out over per so than"
    " that the their them then there these this those to up via was what when where which who"
    " will with you your".split()
)


@functools.lru_cache(maxsize=16)
def tool_section(tools: tuple[ToolSpec, ...], max_tokens: int | None = None) -> str:
    """The ``tool/`` section (FMT-001): every tool's FMT-004 line, when that takes at most
    ``max_tokens`` exact o200k tokens (or there is no budget). Past it (issue 33 §2) the tools'
    names, grouped by their first word, each group with the words its tools' descriptions use
    most, then how to find tools; when even that is too long, only how many tools each group
    has. A function of the tools and the budget alone, so the first message stays the same
    from turn to turn (prompt caching)."""
    full = "\n".join([TOOL_HEADER, *(tool_line(t) for t in tools)])
    if max_tokens is None or _tokens(full) <= max_tokens:
        return full
    groups = tool_groups(tools)
    n = f"{len(tools)} tool{'s' if len(tools) != 1 else ''}"
    by_name = [
        TOOL_HEADER,
        f";; {n} by group, names only: look a tool up before calling it",
        *(group_line(g, members) for g, members in groups.items()),
        FIND_TOOLS,
    ]
    listed = "\n".join(by_name)
    if _tokens(listed) <= max_tokens:
        return listed
    counts = ", ".join(f"{g} ({len(members)})" for g, members in groups.items())
    return "\n".join([TOOL_HEADER, f";; {n} in {len(groups)} groups: {counts}", FIND_TOOLS])


def tool_group(name: str) -> str:
    """A tool's group: its name's first word (``crm`` of ``crm-get-contact``)."""
    return re.split(r"[-_]", name, maxsplit=1)[0] or name


def tool_groups(tools: Sequence[ToolSpec]) -> dict[str, list[ToolSpec]]:
    """The tools by group, groups in the order their first tool comes."""
    groups: dict[str, list[ToolSpec]] = {}
    for t in tools:
        groups.setdefault(tool_group(t.name), []).append(t)
    return groups


def group_line(group: str, members: Sequence[ToolSpec]) -> str:
    """``;; crm: crm-get-contact, crm-list-contacts - contact, owner, email``: the group's
    names, then the four words its descriptions use most (each counted once per tool; ties
    in the order they first come; the group's own name and common words left out)."""
    line = f";; {group}: {', '.join(t.name for t in members)}"
    counts: dict[str, int] = {}
    for t in members:
        for w in dict.fromkeys(re.findall(r"[^\W_]+", (t.description or "").lower())):
            if len(w) > 2 and w != group and w not in SUMMARY_STOPWORDS:
                counts[w] = counts.get(w, 0) + 1
    top = sorted(counts, key=lambda w: -counts[w])[:4]  # stable: ties keep first-seen order
    return f"{line} - {', '.join(top)}" if top else line


def first_user_message(opts: RenderOptions, body_sections: Sequence[str], tail: str) -> str:
    """Mission, a blank line, the context sections, then the turns-left line (MSG-002..005)."""
    return "\n\n".join([opts.get("mission", ""), *body_sections, tail])


#: Characters of a reply without a program that are shown back to the LLM; the rest is cut
#: (the turn's error says so and gives the length). A reply can be megabytes, and every later
#: request would carry it again; 4,000 characters show what the LLM wrote instead of a program.
REPLY_ECHO_CHARS = 4_000


def assistant_text(turn: Turn) -> str:
    """What the LLM wrote, as it is replayed: the program in a fence, or the raw reply (its
    first ``REPLY_ECHO_CHARS`` characters)."""
    if turn.program is None:
        return turn.response[:REPLY_ECHO_CHARS]
    return f"```clojure\n{turn.program}\n```"


#: Characters of an error's message shown back to the LLM (and to an MCP client); the rest is
#: cut, and a note gives the full length. A tool's exception text can be megabytes, and every
#: later request would carry it again; the turn keeps the whole message for the record.
ERROR_ECHO_CHARS = 4_000


def error_echo(message: str, after: str = "") -> str:
    """``message`` then ``after`` as shown back: past ``ERROR_ECHO_CHARS`` characters the message
    is cut (ending ``...``), and a note on a line of its own says how long it was."""
    if len(message) <= ERROR_ECHO_CHARS:
        return message + after
    return (
        f"{message[:ERROR_ECHO_CHARS]}...{after}\n(The error message was {len(message):,}"
        f" characters long: only its first {ERROR_ECHO_CHARS:,} are shown.)"
    )


def fit_text(text: str, max_tokens: int) -> str:
    """``text`` within ``max_tokens`` exact o200k tokens: whole when it fits, else its longest
    head that fits with ``...N more chars`` after it (empty when not even the marker fits)."""
    if _tokens(text) <= max_tokens:
        return text
    return _longest_head(text, max_tokens) or ""


def error_feedback(
    turn: Turn, max_chars: int, max_tokens: int | None = None, message_tokens: int | None = None
) -> str:
    """ERR-003: ``Error: <message>`` (LANGUAGE §10.1; a long message cut by :func:`error_echo`,
    or to ``message_tokens`` by :func:`fit_text`), the hint, and output printed before it
    (within ``max_tokens``: :func:`output_lines`)."""
    lines = []
    if turn.error is not None:
        message = turn.error.message
        if message_tokens is not None:
            lines.append(f"Error: {fit_text(message, message_tokens)}")
        else:
            lines.append(f"Error: {error_echo(message)}")
        if turn.error.hint:
            lines.append(f"Hint: {turn.error.hint}")
    if turn.prints:
        lines.append(OUTPUT_HEADER)
        lines.extend(output_lines(turn.prints, max_chars, max_tokens))
    return "\n".join(lines)


def with_turns_left(text: str, turns_left: int) -> str:
    line = turns_left_line(turns_left)
    return f"{text}\n\n{line}" if text else line


class Rendering:
    """One render of a built-in strategy: its options (the strategy's under the render's own,
    ``o``), the turn budget and the output limits, read once; the opening messages and a
    turn's exchange, which every render of ``full.py`` and ``single_user.py`` is made of."""

    def __init__(self, strategy: Strategy, opts: RenderOptions) -> None:
        self.opts = opts
        self.o: dict[str, Any] = strategy._merged(opts)
        self.max_turns: int = self.o.get("max_turns", 5)
        self.max_chars: int = self.o["println_max_chars"]
        self.max_tokens: int | None = self.o.get("output_tokens")

    def opening(self, sections: Sequence[str], turns_left: int) -> list[ChatMessage]:
        """The SYSTEM message, then the first USER one: the mission, ``sections`` and the
        turns left."""
        first = first_user_message(self.opts, sections, turns_left_line(turns_left))
        return [
            {"role": "system", "content": self.o.get("system_prompt", "")},
            {"role": "user", "content": first},
        ]

    def error(self, turn: Turn) -> str:
        """A failed turn's feedback (ERR-001..003)."""
        return error_feedback(turn, self.max_chars, self.max_tokens, self.o.get("result_tokens"))

    def exchange(self, turn: Turn, feedback: str, turns_left: int) -> list[ChatMessage]:
        """A turn's program (ASSISTANT), then its ``feedback`` and the turns left (USER)."""
        return [
            {"role": "assistant", "content": assistant_text(turn)},
            {"role": "user", "content": with_turns_left(feedback, turns_left)},
        ]
