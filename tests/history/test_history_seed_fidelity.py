"""Seed fidelity: each strategy's raw output (``result.messages``) is what its seed says;
provider constraints only appear when rendering (``to_anthropic``, ``to_openai``,
``for_provider``).

Seeds: 002 (Zoea Nova, loop slices and turn-aware composition), 003 (Isaac, token-aware
compaction), 004 (zrb, safe-split summarization). Every test quotes the passage it follows;
every expected value is worked out from that passage and the documented API.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any

import history_cases
import pytest
from history_cases import asst, user
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptc.history import (
    CONTINUATION_TEXT,
    SUMMARY_PREFIX,
    DeterministicSummarizer,
    EstimateCounter,
    LoopSlices,
    Message,
    SafeSplitSummarization,
    SummaryRequest,
    TextPart,
    TokenCompaction,
    ensure_alternating_roles,
    extract_latest_tool_loop,
    fallback_summary,
    find_split,
    is_split_safe,
    is_summary_message,
    to_messages,
    tool_pairs,
    validate,
)
from ptc.history.compaction import split_summary
from ptc.history.facts import FILES_HINT_PREFIX, files_hint_variants, shorten_path
from ptc.history.loop_slices import is_complete_loop, latest_complete_tool_loop
from ptc.history.repair import strip_orphans
from ptc.history.safe_split import (
    RESTORATION_PREFIX,
    Split,
    achunk_and_consolidate,
    chunk_and_consolidate,
    split_best_effort,
    split_phase1,
    split_phase2,
    split_phase3,
)
from ptc.history.text import clip, cut_middle

NUDGE_1 = "Continue your mission. Check notifications and coordinate with the swarm."
NUDGE_2 = "You need to respond. Check your notifications and status."
OPEN, CLOSE = "<state_snapshot>", "</state_snapshot>"


# -- small builders (OpenAI-style dicts) ---------------------------------------------------------
def sys_(text: str = "S") -> dict[str, Any]:
    return history_cases.sys_(text)


def call(*ids: str, name: str = "get_status", **args: Any) -> dict[str, Any]:
    """An assistant message calling ``name`` once per id (parallel calls)."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": i, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i in ids
        ],
    }


def result(id: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": id, "content": text}


def rt(messages) -> list[tuple[str, str]]:
    return [(m.role, m.text) for m in messages]


def anthropic_roles(r) -> list[str]:
    return [d["role"] for d in r.to_anthropic()["messages"]]


def block_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b["text"] for b in content if b.get("type") == "text"]


class Capture:
    """A summarizer that records its requests and answers with fixed text."""

    def __init__(self, answer: str = "Summary.") -> None:
        self.answer = answer
        self.requests: list[SummaryRequest] = []

    def __call__(self, req: SummaryRequest) -> str:
        self.requests.append(req)
        return self.answer


def failing(req: SummaryRequest) -> str:
    raise RuntimeError("summarizer down")


class Thousand:
    """An injected counter: every message is 1000 tokens."""

    def __init__(self) -> None:
        self.messages_counted = 0

    def count_text(self, text: str) -> int:
        return len(text) // 4 + 1

    def count_message(self, message: Message) -> int:
        self.messages_counted += 1
        return 1000


# =================================================================================================
# Seed 003: token-aware compaction
# =================================================================================================


def _two_requests() -> list[dict[str, Any]]:
    return [
        sys_("S"),
        user("first request"),
        asst("answer one"),
        user("second request"),
        call("c1"),
        result("c1", "docked"),
        asst("done"),
    ]


def test_compaction_keeps_each_user_message_then_one_summary_last():
    """Seed 003, "Token-Aware Compaction": "it keeps recent user messages (bounded by a token
    budget) and appends a summary message with a fixed summary prefix. Assistant/tool messages are
    not kept directly"."""
    answer = "The user asked twice; status is docked."
    r = TokenCompaction(summarizer=Capture(answer)).apply(_two_requests(), force=True)
    assert r.stats.triggered
    assert rt(r.messages) == [
        ("system", "S"),
        ("user", "first request"),
        ("user", "second request"),
        ("user", SUMMARY_PREFIX + answer),
    ]
    assert sum(m.text.startswith(SUMMARY_PREFIX) for m in r.messages) == 1
    assert not any(m.role in ("assistant", "tool") for m in r.messages)
    # rendering for Anthropic merges the consecutive user messages (roles alternate)
    a = r.to_anthropic()
    assert a["system"] == "S"
    assert [d["role"] for d in a["messages"]] == ["user"]
    assert block_texts(a["messages"][0]["content"]) == [
        "first request",
        "second request",
        SUMMARY_PREFIX + answer,
    ]
    # OpenAI accepts consecutive user messages: they stay apart
    assert [d["role"] for d in r.to_openai()] == ["system", "user", "user", "user"]


def test_compaction_second_run_updates_the_summary_instead_of_summarizing_it():
    """Seed 003, "Codex-Style Summary Prompt and Prefix": "The summary message is stored as a user
    message prefixed with a fixed summary header. Future compactions can detect and exclude this
    summary." """
    first = "The user asked twice; status is docked."
    r1 = TokenCompaction(summarizer=Capture(first)).apply(_two_requests(), force=True)
    h2 = [*r1.to_openai(), asst("reply three"), user("third request")]
    cap = Capture("Updated summary.")
    r2 = TokenCompaction(summarizer=cap).apply(h2, force=True)
    assert len(cap.requests) == 1
    req = cap.requests[0]
    assert req.previous_summary == first
    assert "[context summary]" not in req.content  # the old summary is not conversation
    assert "reply three" in req.content
    assert rt(r2.messages) == [
        ("system", "S"),
        ("user", "first request"),
        ("user", "second request"),
        ("user", "third request"),
        ("user", SUMMARY_PREFIX + "Updated summary."),
    ]
    assert sum(m.text.startswith(SUMMARY_PREFIX) for m in r2.messages) == 1
    assert "[context summary]" not in "".join(m.text for m in r2.messages[:-1])


def _plain_text_effects() -> list[dict[str, Any]]:
    return [
        sys_("S"),
        user("Please fix the API bug and run the tests"),
        asst("Updated src/api.py"),
        asst("Ran `pytest -q` (cwd /repo): 3 passed"),
        # a tool message reporting a command, after a call stored as text (seed 002's
        # "[TOOL_CALLS]" form): no structured call says what it did, so its text does
        asst("[TOOL_CALLS] shell"),
        result("c1", "$ git status\nOn branch main"),
        asst("All done."),
    ]


@pytest.mark.parametrize(
    "summarizer",
    [failing, lambda req: "", lambda req: "No earlier conversation to summarize."],
    ids=["failing", "empty", "refusing"],
)
def test_compaction_fallback_reads_effects_reported_as_plain_text(summarizer):
    """Seed 003, "Compaction Input Trimming and Fallback": "If the summary response is empty or
    clearly unusable (for example: "no earlier conversation"), Isaac replaces it with a
    deterministic fallback summary." and "The fallback summary extracts the last user request,
    recent file updates, commands run, delegate usage, and the last assistant response." and
    "Tool call summaries remain in history as plain text"."""
    r = TokenCompaction(summarizer=summarizer).apply(_plain_text_effects(), force=True)
    assert r.stats.fallbacks_used == 1
    assert [m.role for m in r.messages] == ["system", "user", "user"]
    assert r.messages[1].text == "Please fix the API bug and run the tests"
    summary = r.messages[-1].text
    assert summary.startswith(SUMMARY_PREFIX)
    lines = summary.splitlines()
    assert "Last user request: Please fix the API bug and run the tests" in lines
    assert "Files touched: src/api.py" in lines
    commands = [ln for ln in lines if ln.startswith("Commands run:")]
    assert len(commands) == 1
    assert "pytest -q" in commands[0] and "git status" in commands[0]
    assert any(ln.startswith("Delegations:") for ln in lines)
    assert "Last assistant reply: All done." in lines


def test_compaction_fallback_under_small_limit_still_names_request_files_commands():
    """Seed 003, "Compaction Input Trimming and Fallback": "The fallback summary extracts the last
    user request, recent file updates, commands run, delegate usage, and the last assistant
    response." and "This keeps multi-turn continuity even when the summary model returns a failure."
    (a small context leaves little room: every field is shortened, none is cut to a stub)."""
    request = (
        "Need the CSV exporter to write a header row and quote every field, "
        + "keep the totals column aligned with the rest of the report " * 8
    )
    h = [
        sys_("S"),
        user("Set up the exporter module."),
        call("e1", name="edit_file", path="src/export.py"),
        result("e1", "edited\n" + "+ new line\n" * 200),
        call("r1", name="run_command", command="pytest -q", cwd="/repo"),
        result("r1", "3 passed\n" + "log line\n" * 200),
        user(request),
        asst("I " + "will look into it " * 50),
    ]
    r = TokenCompaction(context_limit=600, summarizer=failing).apply(h, force=True)
    assert r.stats.fallbacks_used == 1
    summary = r.messages[-1].text
    assert r.messages[-1].role == "user" and summary.startswith(SUMMARY_PREFIX)
    assert sum(m.text.startswith(SUMMARY_PREFIX) for m in r.messages) == 1
    request_lines = [ln for ln in summary.splitlines() if ln.startswith("Last user request:")]
    assert len(request_lines) == 1
    assert request_lines[0].startswith("Last user request: Need the CSV")
    assert "src/export.py" in summary
    assert "pytest -q" in summary


@pytest.mark.parametrize(("limit", "slimit"), [(300, 200), (300, 20)])
def test_compaction_summarizer_input_is_never_empty(limit, slimit):
    """Seed 003, "Compaction Input Trimming and Fallback": "If the trimmed history is still too
    large, Isaac drops the oldest messages until the compaction prompt fits within the model context
    budget." (dropping stops at the newest message: there is always something to summarize)."""
    h = [sys_("S"), user("Deploy it"), asst("Deployed version 2 to staging. " * 100)]
    cap = Capture("Summary ok.")
    r = TokenCompaction(context_limit=limit, summarizer_limit=slimit, summarizer=cap).apply(
        h, force=True
    )
    assert len(cap.requests) == 1
    req = cap.requests[0]
    assert req.content.strip() != ""
    assert "Deployed" in req.content
    assert req.messages and req.messages[-1].text.startswith("Deployed version 2")
    assert r.messages[-1].text.startswith(SUMMARY_PREFIX)


def test_compaction_estimate_counter_is_selectable():
    """Seed 003, "Token-Aware Compaction": "Isaac estimates history tokens and also uses provider
    `RunUsage` totals when available" (the seed does not say how; the estimator the issue asks
    for is ceil(utf-8 bytes / 4) + 4 per message, selectable and injectable)."""
    h = [sys_("You are terse."), user("héllo"), asst("hi")]
    # 14 bytes -> 4 + 4 = 8; "héllo" is 6 bytes -> 2 + 4 = 6; 2 bytes -> 1 + 4 = 5
    r = TokenCompaction(model="gpt-4o", counter="estimate").apply(h)
    assert r.stats.tokens_before == 19
    assert not r.stats.triggered  # 19 tokens are far below 70% of gpt-4o's window
    est = EstimateCounter(bytes_per_token=4, per_message_overhead=4)
    assert [est.count_message(m) for m in to_messages(h)] == [8, 6, 5]
    assert est.count_text("héllo") == 2
    halves = EstimateCounter(bytes_per_token=2, per_message_overhead=0)
    r2 = TokenCompaction(model="gpt-4o", counter=halves).apply(h)
    assert r2.stats.tokens_before == 7 + 3 + 1
    # the loop slices report with the same counter
    assert LoopSlices(counter="estimate").apply(h).stats.tokens_before == 19


def test_compaction_exact_counter_without_known_tokenizer_is_an_error():
    """Seed 003, "Token-Aware Compaction": "Isaac estimates history tokens" (an exact count needs
    the model's tokenizer; with no model there is none to use)."""
    with pytest.raises(ValueError):
        TokenCompaction(counter="exact").apply([user("hi")])


def test_compaction_larger_of_estimate_and_usage_decides():
    """Seed 003, "Token-Aware Compaction": "A compaction threshold is computed as `context_limit *
    0.7`." and "the larger value is used to decide if compaction is needed"."""
    h = [sys_("S"), user("hello"), asst("hi")]
    s = TokenCompaction(context_limit=1000, counter="estimate", summarizer=Capture())
    assert not s.apply(h, usage=700).stats.triggered  # 700 is not above 700
    assert s.apply(h, usage=701).stats.triggered
    assert not s.apply(h).stats.triggered


def test_injected_counter_is_the_one_used():
    """Seed 003, "Token-Aware Compaction": "Compaction is triggered by token usage rather than raw
    message count." (with an injected counter, its counts decide)."""
    h = [sys_("S"), user("hello")]
    counter = Thousand()
    r = TokenCompaction(context_limit=2000, counter=counter, summarizer=Capture("s")).apply(h)
    assert r.stats.tokens_before == 2000  # two messages at 1000 each, above 0.7 * 2000
    assert r.stats.triggered
    assert counter.messages_counted > 0
    assert r.messages[-1].text.startswith(SUMMARY_PREFIX)
    # the same history by the estimate is far below the threshold
    assert not TokenCompaction(context_limit=2000, counter="estimate").apply(h).stats.triggered
    # every strategy takes the counter
    assert LoopSlices(counter=Thousand()).apply(h).stats.tokens_before == 2000
    s = SafeSplitSummarization(token_threshold=1500, counter=Thousand(), environ={})
    r3 = s.apply([sys_("S"), user("hello"), asst("hi")])
    assert r3.stats.tokens_before == 3000 and r3.stats.triggered


# -- small limits: the summary keeps what matters most -------------------------------------------
#
# The history of the small-limit tests. By the estimate (ceil(bytes / 4) + 4 per message) the
# system prompt "S" is 1 + 4 = 5 tokens and the summary prefix (98 bytes) 25 tokens. Its facts:
#   R = "Last user request: Please add retries to the HTTP client"   56 bytes
#   F = "Files touched: src/http.py"                                  26 bytes
#   C = "Commands run: pytest -q"                                     23 bytes
#   A = "Last assistant reply: Done, retries added."                  42 bytes
#   H = "Recent files touched (most recent last): src/http.py"       52 bytes (the hint)
# ("Updated src/http.py" and "Ran `pytest -q`" are effects reported as plain text.)
REQUEST = "Please add retries to the HTTP client"
R = "Last user request: " + REQUEST
F = "Files touched: src/http.py"
C = "Commands run: pytest -q"
A = "Last assistant reply: Done, retries added."
H = "Recent files touched (most recent last): src/http.py"


def _retries() -> list[dict[str, Any]]:
    return [
        sys_("S"),
        user(REQUEST),
        asst("Updated src/http.py. Ran `pytest -q`: 12 passed"),
        asst("Done, retries added."),
    ]


def _retries_messages() -> list[Message]:
    return to_messages(_retries())[1:]


# limit 200: threshold 140, room 140 - 5 - 8 = 127, summary cap max(38, min(128, 63), 32) = 63;
# 63 - 25 (prefix) - 13 (H) - 1 = 24 tokens for the body. R + C is 80 bytes = 20 tokens; adding
# A (123 bytes = 31) or F (ranked last, the hint names the file; 107 bytes = 27) does not fit.
# limit 150: threshold 105, room 92, cap max(27, 46, 32) = 46: 21 tokens after the prefix, 7
# beside the hint, where only "Last user request: Please..." (28 bytes) fits and the commands
# go. Without the hint the request stays whole with the commands (R + C = 20 <= 21; + F = 27
# does not fit), so the hint is left out.
# bytes_per_token=1, limit 1000: threshold 700, room 687, cap max(206, 128, 32) = 206, 108 after
# the prefix, 55 beside the hint: R alone (56) no longer fits whole. Without the hint,
# R + F + C = 107 <= 108 (+ A = 150 does not fit): the hint is left out.
# limit 60: threshold 42, room 29, cap 32 (the floor): 32 - 25 = 7 tokens after the prefix. H
# (13 tokens) alone is more than the 7, and no shorter line exists: "\u2026/http.py" is 3 + 8 =
# 11 bytes, as many as "src/http.py". Kept anyway, it would leave no room, and the request's
# first word would go over the cap (32 + 13 + 1 = 46 > 32). Without it "Last user request:
# Please..." (19 + 9 = 28 bytes = 7 tokens) fits exactly: summary 25 + 7 = 32 = the cap, so the
# line is left out and the shortened request still comes first.
SMALL_LIMITS = [
    (200, None, f"{R}\n{C}\n\n{H}"),
    (150, None, f"{R}\n{C}"),
    (1000, EstimateCounter(bytes_per_token=1), f"{R}\n{F}\n{C}"),
    (60, None, "Last user request: Please..."),
]


@pytest.mark.parametrize(("limit", "counter", "body"), SMALL_LIMITS, ids=["200", "150", "b1", "60"])
@pytest.mark.parametrize("summarizer", [failing, None], ids=["fallback", "default"])
def test_compaction_small_limit_summary_keeps_request_commands_files_by_priority(
    limit, counter, body, summarizer
):
    """Seed 003, "Compaction Input Trimming and Fallback": "The fallback summary extracts the last
    user request, recent file updates, commands run, delegate usage, and the last assistant
    response." Under a small limit the fields are kept by priority (request, commands, files,
    then the rest), whole fields are left out rather than cut into a marker, and the default
    summarizer (no model) writes the same summary, sized with the strategy's counter."""
    s = TokenCompaction(context_limit=limit, counter=counter, summarizer=summarizer)
    r = s.apply(_retries(), force=True)
    assert rt(r.messages) == [("system", "S"), ("user", REQUEST), ("user", SUMMARY_PREFIX + body)]
    assert (r.stats.fallbacks_used, r.stats.summaries_made) == (
        (1, 0) if summarizer is failing else (0, 1)
    )
    assert "[..." not in body and "(none)" not in body


# -- small budgets: the summary stays within its cap -------------------------------------------
#
# The cap is the documented budget rule (TokenCompaction.budgets): threshold int(0.7 * limit),
# room = threshold - system prompt - 8, cap = max(int(0.3 * room), min(128, room // 2), 32). The
# prefix is 98 bytes = 25 tokens; "Recent files touched (most recent last): " is 41 bytes.
#
# A long path. Limit 300: threshold 210, room 210 - 5 - 8 = 197, cap max(59, min(128, 98), 32) =
# 98, so 98 - 25 = 73 tokens for the body and the line. The path "d/" * 200 + "f.py" is 404
# characters: the whole line is 41 + 404 = 445 bytes = 112 tokens, more than the 73 alone. Cut to
# 48 characters (HINT_PATH_CHARS) a path keeps its tail from a separator: "\u2026" + "/d" * 21 +
# "/f.py" is 1 + 42 + 5 = 48 characters, 50 bytes ("\u2026" is 3), a line of 91 bytes = 23
# tokens, which leaves 73 - 23 - 1 = 49 beside it. Shortened, the fallback leaves out the files
# field the line repeats; "Last user request: go" (21 bytes = 6 tokens) is all else there is.
# Summary: 98 + 21 + 2 ("\n\n") + 91 = 212 bytes = 53 tokens <= 98.
LONG_PATH = "d/" * 200 + "f.py"
LONG_PATH_LINE = "Recent files touched (most recent last): \u2026" + "/d" * 21 + "/f.py"


def _long_path() -> list[dict[str, Any]]:
    return [sys_("S"), user("go"), call("e1", name="edit_file", path=LONG_PATH), result("e1")]


@pytest.mark.parametrize("summarizer", [failing, None], ids=["fallback", "default"])
def test_compaction_long_path_in_the_files_line_is_shortened_to_its_file_name_end(summarizer):
    """Seed 003, "Prompt Assembly": the recent-files line lists the files touched (most recent
    last) to anchor follow-ups on "the last edited file". A path too long for the summary's cap
    is shortened to its end (the file name and the directories nearest it), never written whole
    over the cap."""
    s = TokenCompaction(context_limit=300, summarizer=summarizer)
    r = s.apply(_long_path(), force=True)
    summary = r.messages[-1].text
    assert summary == SUMMARY_PREFIX + "Last user request: go\n\n" + LONG_PATH_LINE
    assert s._counter().count_text(summary) == 53
    assert s.budgets(r.messages[:1], s._counter())[2] == 98


def test_compaction_long_path_line_beside_a_summarizer_answer():
    """Seed 003, "Prompt Assembly" and "Codex-Style Summary Prompt and Prefix": a summarizer is
    told the room left beside the shortened line (49 tokens, see above) and that line; its
    answer is written with it, within the cap."""
    cap = Capture("Edited f.py.")
    r = TokenCompaction(context_limit=300, summarizer=cap).apply(_long_path(), force=True)
    (req,) = cap.requests
    assert (req.max_tokens, req.files_hint) == (49, LONG_PATH_LINE)
    assert r.messages[-1].text == SUMMARY_PREFIX + "Edited f.py.\n\n" + LONG_PATH_LINE


def test_files_line_shortens_paths_then_leaves_out_older_ones():
    """The shorter forms of the recent-files line, in the order they are tried: paths cut to
    48, then 24 characters from a separator, then to the file name, before the oldest is left
    out; a cut that would not shorten a path leaves it whole."""
    assert shorten_path(LONG_PATH, 0) == "\u2026/f.py"
    assert shorten_path("src/a.py", 0) == "\u2026/a.py"  # 6 characters (8 bytes) for 8
    assert shorten_path("a/b.py", 0) == "a/b.py"  # "\u2026/b.py" would be no shorter
    assert shorten_path("f.py", 0) == "f.py"  # no directory to leave out
    deep = "a/" * 20 + "m.py"  # 44 characters: fits 48; cut to 24: "\u2026" + "/a" * 9 + "/m.py"
    assert shorten_path(deep, 24) == "\u2026" + "/a" * 9 + "/m.py"  # 1 + 18 + 5 = 24
    p = FILES_HINT_PREFIX
    assert files_hint_variants([deep, "b.py"]) == [
        f"{p}{deep}, b.py",
        f"{p}\u2026{'/a' * 9}/m.py, b.py",
        f"{p}\u2026/m.py, b.py",
        f"{p}b.py",
    ]


# The files line or the body, on a tie of what the body keeps. The history: a request that is one
# long word, then "Updated src/a.py. Ran `pytest`" and "ok". The line "...: src/a.py" is 49 bytes
# = 13 tokens; no shorter one exists ("\u2026/a.py" is 8 bytes, as "src/a.py").
# "x" * 500 at limit 135: threshold 94, room 94 - 5 - 8 = 81, cap max(24, min(128, 40), 32) = 40:
# 15 tokens after the prefix, 15 - 13 - 1 = 1 beside the line, where not even the request's
# label fits: its first word would go over the cap. Without the line (15 tokens = 60 bytes) the
# request clipped to 36 characters fits: "Last user request: " + 33 x + "..." is 19 + 36 = 55 bytes
# = 14 tokens (the commands, 21 bytes more, do not). Fitting ranks above everything, so the line
# goes. Summary 98 + 55 = 153 bytes = 39 <= 40. The kept request is cut to newest_cap max(81 -
# 40, min(64, 40)) = 41 tokens with the message, 37 for its text: the note "\n[... truncated 88
# tokens ...]" (125 - 37 = 88; 30 bytes = 8 tokens) and 116 x (29 tokens, int(500 * 29 / 125)).
# Output 5 + 41 + (39 + 4) = 89 <= 94 (it was 49 and 99: the line and 24 x over the cap).
# "\U0001f525" * 200 + " please\u2026" (4 bytes each; 208 characters, 810 bytes = 203 tokens) at
# limit 145: threshold 101, room 88, cap max(26, min(128, 44), 32) = 44: 19 tokens (76 bytes)
# after the prefix, 5 (20 bytes) beside the line, less than "Last user request: \U0001f525..."
# (19 + 4 + 3 = 26 bytes = 7 tokens). Without the line, the clipped request (24 characters, 106
# bytes) does not fit either; its head does, 13 fires: 19 + 52 + 3 = 74 bytes = 19 tokens.
# Summary 98 + 74 = 172 bytes = 43 <= 44. The request is cut to 44 - 4 = 40 tokens: the note
# (163 tokens cut, 31 bytes = 8) and int(208 * 32 / 203) = 32 fires. Output 5 + 44 + 47 = 96 <=
# 101 (it was 67 tokens of summary: the line and a first word of 24 fires).
FIRE = "\U0001f525"
TIE_BREAKS = [
    (135, "x" * 500, "x" * 33 + "...", "x" * 116 + "\n[... truncated 88 tokens ...]", 39, 89),
    (
        145,
        FIRE * 200 + " please\u2026",
        FIRE * 13 + "...",
        FIRE * 32 + "\n[... truncated 163 tokens ...]",
        43,
        96,
    ),
]


@pytest.mark.parametrize(
    ("limit", "asked", "head", "kept", "tokens", "after"), TIE_BREAKS, ids=["x", "fire"]
)
@pytest.mark.parametrize("summarizer", [failing, None], ids=["fallback", "default"])
def test_compaction_leaves_the_files_line_out_rather_than_go_over_the_cap(
    limit, asked, head, kept, tokens, after, summarizer
):
    """Seed 003, "Token-Aware Compaction": the rebuilt history stays under the threshold; the
    summary keeps the user's request (shortened, never cut into a marker) over the recent-files
    line when both cannot fit."""
    h = [sys_("S"), user(asked), asst("Updated src/a.py. Ran `pytest`"), asst("ok")]
    s = TokenCompaction(context_limit=limit, summarizer=summarizer)
    r = s.apply(h, force=True)
    assert rt(r.messages) == [
        ("system", "S"),
        ("user", kept),
        ("user", SUMMARY_PREFIX + "Last user request: " + head),
    ]
    assert s._counter().count_text(r.messages[-1].text) == tokens
    assert r.stats.tokens_after == after and after <= s.threshold()


# A history of one file edit and nothing else. Limit 131, no system prompt: threshold 91, room
# 91 - 0 - 8 = 83, cap max(24, min(128, 41), 32) = 41: 16 tokens after the prefix. The line
# "...: a/b.py" is 47 bytes = 12 tokens, leaving 16 - 12 - 1 = 3 beside it. The full fallback
# (every field, "(none)" where empty) does not fit in 3; shortened, it leaves out the files field
# the line repeats, and nothing else is to report: the body is empty and the summary is the line,
# 98 + 47 = 145 bytes = 37 tokens <= 41 (it used to be "Files touched: a/b.py" beside the line,
# 42 tokens).
@pytest.mark.parametrize("summarizer", [failing, None], ids=["fallback", "default"])
def test_compaction_of_file_edits_only_does_not_repeat_the_files_line(summarizer):
    """Seed 003, "Prompt Assembly": the recent-files line names the files touched; the summary
    beside it does not say the same again when the room is short."""
    s = TokenCompaction(context_limit=131, summarizer=summarizer)
    r = s.apply([call("c1", name="edit_file", path="a/b.py"), result("c1")], force=True)
    assert rt(r.messages) == [
        ("user", SUMMARY_PREFIX + "Recent files touched (most recent last): a/b.py")
    ]
    assert s._counter().count_text(r.messages[-1].text) == 37
    assert (r.stats.fallbacks_used, r.stats.summaries_made) == (
        (1, 0) if summarizer is failing else (0, 1)
    )


# An earlier summary carried over at full size is bounded to 4 x 600 = 2,400 characters. One line
# of word1 .. word399 is 9 * 6 + 90 * 7 + 300 * 8 - 1 = 3,083 characters: no line end to cut at,
# so it is clipped at a word. "word{k}" for k >= 100 starts at 684 + (k - 100) * 8: the 2,397
# characters clip keeps (2,400 less "...") end one letter into word314 (at 2,396), so the cut
# falls after word313. Lines of 48 characters ("step 01: " + 39 x, 49 with the newline) are cut
# at the last line end within 2,400: 48 + 49 * 48 = 2,400, after line 49.
def test_fallback_shortens_an_earlier_summary_without_a_marker():
    """Seed 003, "Compaction Input Trimming and Fallback": the fallback carries the earlier summary
    over; a long one keeps its head (whole lines, else cut at a word with "..."), never its
    head and tail around a cut marker."""
    later = to_messages([user("next"), asst("ok")])
    words = " ".join(f"word{i}" for i in range(1, 400))
    out = fallback_summary(later, words)
    head = " ".join(f"word{i}" for i in range(1, 314)) + "..."
    assert out == f"Earlier summary:\n{head}\nLast user request: next\nLast assistant reply: ok"
    lines = [f"step {i:02d}: " + "x" * 39 for i in range(1, 61)]
    out = fallback_summary(later, "\n".join(lines))
    kept = "\n".join(lines[:49])
    assert out == f"Earlier summary:\n{kept}\nLast user request: next\nLast assistant reply: ok"
    assert "cut ..." not in out and "[..." not in out


def test_compaction_request_carries_the_whole_history_and_the_room():
    """Seed 003, "Compaction Input Trimming and Fallback": "drops the oldest messages until the
    compaction prompt fits" (the transcript); the request still says which messages the summary
    covers, the room left after the prefix and the hint, and the hint itself."""
    cap = Capture("Retries added.")
    r = TokenCompaction(context_limit=200, summarizer=cap).apply(_retries(), force=True)
    (req,) = cap.requests
    assert req.history == tuple(_retries_messages())
    assert [m.text for m in req.messages] == ["Done, retries added."]  # only the newest fits
    assert (req.max_tokens, req.files_hint) == (24, H)
    assert r.messages[-1].text == SUMMARY_PREFIX + f"Retries added.\n\n{H}"


def test_compaction_default_summarizer_never_denies_an_earlier_request():
    """Seed 003, "Codex-Style Summary Prompt and Prefix": the summary replaces the earlier parts,
    so a second compaction with no new user message still names the last request (one of the
    kept user messages), and writes no "(none)" beside an earlier summary."""
    r1 = TokenCompaction().apply(_retries(), force=True)
    first = f"{R}\n{F}\n{C}\nDelegations: (none)\n{A}"
    assert r1.messages[-1].text == SUMMARY_PREFIX + f"{first}\n\n{H}"
    h2 = [*r1.to_openai(), asst("Also ran `make lint`: clean")]
    r2 = TokenCompaction().apply(h2, force=True)
    second = (
        f"Earlier summary:\n{first}\n"
        f"{R}\nCommands run: make lint\nLast assistant reply: Also ran `make lint`: clean"
    )
    assert rt(r2.messages) == [
        ("system", "S"),
        ("user", REQUEST),
        ("user", SUMMARY_PREFIX + f"{second}\n\n{H}"),
    ]


# fallback_summary counted with bytes_per_token=1 (one token per ASCII character): the full
# summary is R, F, C, "Delegations: (none)" and A, 170 characters with the newlines.
R_036 = "Last user request: Please add retries to the HTTP..."  # request cut to 36 chars
R_024 = "Last user request: Please add retries to..."  # and to 24
FALLBACK_SIZES = [
    (170, False, f"{R}\n{F}\n{C}\nDelegations: (none)\n{A}"),  # everything fits
    (169, False, f"{R}\n{F}\n{C}\n{A}"),  # "(none)" goes first: 150
    (149, False, f"{R_036}\n{F}\n{C}\n{A}"),  # then every field is shortened: 146
    (145, False, f"{R_024}\n{F}\n{C}\n{A}"),  # ... down to 24 characters: 137
    (136, False, f"{R}\n{F}\n{C}"),  # then the reply goes, the rest whole again: 107
    (136, True, f"{R}\n{C}\n{A}"),  # with a hint beside it the files line goes first: 123
    (106, False, f"{R_036}\n{F}\n{C}"),  # 103
    (93, False, f"{R}\n{C}"),  # then the files: 80
    (66, False, R),  # then the commands: 56
    (51, False, R_024),  # 43
    (42, False, "Last user request: Please add retries..."),  # the head that fits: 40
    (10, False, "Last user request: Please..."),  # nothing fits: the first word, 28
]


@pytest.mark.parametrize(("budget", "hinted", "expected"), FALLBACK_SIZES)
def test_fallback_summary_fills_fields_by_priority(budget, hinted, expected):
    """Seed 003, "Compaction Input Trimming and Fallback" (the fallback's fields): every field is
    shortened before a whole field is left out, the lowest priority first; the request is never
    left out and never cut into a truncation marker."""
    ones = EstimateCounter(bytes_per_token=1)
    out = fallback_summary(
        _retries_messages(), max_tokens=budget, counter=ones, files_in_hint=hinted
    )
    assert out == expected


def test_shortening_never_makes_a_field_longer():
    """A shortened text is never longer than the original (the cut note included)."""
    assert cut_middle(REQUEST, 24) == REQUEST  # 16 + 29 (note) + 8 would be 53 > 37
    assert cut_middle("x" * 100, 40) == "x" * 26 + "\n[... 60 characters cut ...]\n" + "x" * 14
    assert clip(REQUEST, 36) == "Please add retries to the HTTP..."
    assert clip(REQUEST, 24) == "Please add retries to..."
    assert clip("abc", 2) == "abc"  # "..." would not be shorter
    assert clip("abcd", 2) == "..."
    assert clip(REQUEST, 37) == REQUEST


def test_deterministic_summarizer_counts_with_its_counter():
    """Seed 003, "Compaction Input Trimming and Fallback": the deterministic summary of the whole
    history, sized with the summarizer's own counter (``counter=``) and ``max_chars``."""
    history = tuple(_retries_messages())
    req = SummaryRequest("compaction", "", history=history, max_tokens=107)
    full = f"{R}\n{F}\n{C}\nDelegations: (none)\n{A}"  # 170 bytes = 43 tokens by the estimate
    assert DeterministicSummarizer()(req) == full
    assert DeterministicSummarizer(counter="estimate")(req) == full
    ones = DeterministicSummarizer(counter=EstimateCounter(bytes_per_token=1))
    assert ones(req) == f"{R}\n{F}\n{C}"  # 107 characters
    # at most max_chars characters: R (cut to 24) + F + C is 94 <= 100
    req = SummaryRequest("compaction", "", history=history)
    assert DeterministicSummarizer(max_chars=100)(req) == f"{R_024}\n{F}\n{C}"
    # without ``history`` it reads ``messages``
    assert DeterministicSummarizer()(SummaryRequest("compaction", "", messages=history)) == full


def test_compaction_marker_inside_user_text_is_not_a_summary():
    """Seed 003, "Codex-Style Summary Prompt and Prefix": "Future compactions can detect and exclude
    this summary." Only the whole prefix at the start of a message (or content part) is one; a
    user quoting the marker keeps the whole message."""
    text = "Paste of the log:\n[context summary] appears in our logs, why?"
    cap = Capture("Asked about a log line.")
    h = [user(text), asst("dunno")]
    r = TokenCompaction(summarizer=cap).apply(h, force=True)
    assert rt(r.messages) == [("user", text), ("user", SUMMARY_PREFIX + "Asked about a log line.")]
    assert cap.requests[0].previous_summary is None
    inline = "see: " + SUMMARY_PREFIX + "not a summary"
    for t in (text, inline, "[context summary] at the start, but not the whole prefix"):
        assert split_summary(t) is None
        assert not is_summary_message(to_messages([user(t)])[0])
        r = TokenCompaction(summarizer=Capture("S.")).apply([user(t), asst("ok")], force=True)
        assert rt(r.messages) == [("user", t), ("user", SUMMARY_PREFIX + "S.")]


def test_compaction_summary_found_in_merged_content_parts_not_inside_a_string():
    """Seed 003, "Codex-Style Summary Prompt and Prefix": "Future compactions can detect and exclude
    this summary." It stays detectable when the kept user messages and the summary are merged
    into one message as content parts (a part starts with the prefix). A plain string counts
    only when it starts with the prefix: joined into one string, or quoted by the user after a
    blank line, the prefix further in is the user's text and the message is kept whole."""
    r1 = TokenCompaction(summarizer=Capture("First.")).apply(_two_requests(), force=True)
    merged = r1.to_openai(alternate_roles=True)
    assert [p["text"] for p in merged[1]["content"]] == [
        "first request",
        "second request",
        SUMMARY_PREFIX + "First.",
    ]
    later = [asst("three"), user("third request")]
    cap = Capture("Second.")
    r2 = TokenCompaction(summarizer=cap).apply([*merged, *later], force=True)
    assert cap.requests[0].previous_summary == "First."
    assert rt(r2.messages) == [
        ("system", "S"),
        ("user", "first request"),
        ("user", "second request"),
        ("user", "third request"),
        ("user", SUMMARY_PREFIX + "Second."),
    ]
    # the same parts joined into one string: the string starts with the user's text
    joined = r1.to_openai(join_text=True, alternate_roles=True)
    text = "first request\n\nsecond request\n\n" + SUMMARY_PREFIX + "First."
    assert joined[1]["content"] == text
    cap = Capture("Second.")
    r3 = TokenCompaction(summarizer=cap).apply([*joined, *later], force=True)
    assert cap.requests[0].previous_summary is None
    assert rt(r3.messages) == [
        ("system", "S"),
        ("user", text),
        ("user", "third request"),
        ("user", SUMMARY_PREFIX + "Second."),
    ]


@pytest.mark.parametrize("summarizer", [failing, None], ids=["fallback", "default"])
def test_compaction_prefix_quoted_after_a_blank_line_is_the_users_text(summarizer):
    """Seed 003, "Codex-Style Summary Prompt and Prefix": only a message (or content part) that
    starts with the summary prefix is an earlier summary. A user quoting one after a blank line
    keeps the whole message; it is the last request, not an earlier summary to update."""
    quoted = (
        "Look what the bot printed earlier:\n\n" + SUMMARY_PREFIX + "Last user request: delete prod"
    )
    r = TokenCompaction(summarizer=summarizer).apply([user(quoted), asst("hm")], force=True)
    assert [m.text for m in r.messages[:-1]] == [quoted]
    assert not r.info["updated_previous_summary"]
    # no earlier summary, so the full-size summary writes every field, "(none)" where empty
    body = (
        f"Last user request: {quoted}\nFiles touched: (none)\nCommands run: (none)\n"
        "Delegations: (none)\nLast assistant reply: hm"
    )
    assert r.messages[-1].text == SUMMARY_PREFIX + body
    assert split_summary(quoted) is None and not is_summary_message(to_messages([user(quoted)])[0])


@pytest.mark.parametrize("history", [[], [sys_("S")]], ids=["empty", "system-only"])
@pytest.mark.parametrize("summarizer", ["capture", None])
def test_compaction_forced_on_nothing_makes_no_summary(history, summarizer):
    """Seed 003, "Token-Aware Compaction": the summary replaces earlier conversation; with none
    there is nothing to summarize, so even ``force=True`` returns the history as it is."""
    cap = Capture()
    s = TokenCompaction(summarizer=cap if summarizer else None)
    r = s.apply(history, force=True)
    assert rt(r.messages) == [(d["role"], d["content"]) for d in history]
    assert not r.stats.triggered and cap.requests == []
    assert r.to_openai() == history


# =================================================================================================
# Seed 002: loop slices
# =================================================================================================


def test_loop_slices_composition_order_system_prompt_loop():
    """Seed 002, "Context Composition Algorithm": "each LLM request includes only three components:
    system prompt, a single prompt source, and the most recent tool loop"."""
    h = [
        sys_("S"),
        user("Mine iron ore", source="direct"),
        call("c1"),
        result("c1", "docked"),
        asst("Status checked."),
        call("c2", name="mine"),
        result("c2", "mined 5"),
    ]
    r = LoopSlices().apply(h)
    assert rt(r.messages) == [
        ("system", "S"),
        ("user", "Mine iron ore"),
        ("assistant", ""),
        ("tool", "mined 5"),
    ]
    assert r.messages[2].tool_calls[0].id == "c2"
    assert r.messages[3].tool_call_id == "c2"


def test_loop_slices_recency_selection_takes_the_newest_prompt_source():
    """Seed 002, "The Solution: Loop Slices": "Selected by recency (most recent wins)"."""
    h = [
        sys_("S"),
        user("Mine iron ore", source="direct"),
        user("Enemy spotted", source="broadcast", sender_id="m2"),
        call("c1"),
        result("c1", "docked"),
    ]
    r = LoopSlices(selection="recency").apply(h)
    assert rt(r.messages) == [
        ("system", "S"),
        ("user", "Enemy spotted"),
        ("assistant", ""),
        ("tool", "docked"),
    ]


def test_loop_slices_synthetic_nudge_when_no_prompt_source():
    """Seed 002, "Synthetic Nudge Behavior": "When no prompt source is found in recent memory, a
    synthetic nudge is generated" with "Attempt 1: "Continue your mission. Check notifications and
    coordinate with the swarm."" and "NOT stored in database"."""
    h = [sys_("S"), call("c1"), result("c1", "docked")]
    r = LoopSlices().apply(h)
    assert rt(r.messages) == [
        ("system", "S"),
        ("user", NUDGE_1),
        ("assistant", ""),
        ("tool", "docked"),
    ]
    assert r.messages[1].meta.source == "system"
    assert r.messages[1].meta.ephemeral is True
    r2 = LoopSlices(encouragement=2).apply(h)
    assert r2.messages[1].text == NUDGE_2


def test_loop_slices_prompt_source_searched_only_within_window():
    """Seed 002, "Tuning": "Scanning window for finding turn boundaries and tool loops." (a prompt
    older than the window is not found: the nudge is used)."""
    h = [sys_("S"), user("old order", source="direct"), asst("ack"), call("c1"), result("c1", "x")]
    r = LoopSlices(window=3).apply(h)
    assert rt(r.messages) == [("system", "S"), ("user", NUDGE_1), ("assistant", ""), ("tool", "x")]
    r20 = LoopSlices(window=20).apply(h)
    assert rt(r20.messages)[1] == ("user", "old order")


@pytest.mark.parametrize("blank", ["", "  "])
def test_loop_slices_empty_user_message_is_not_a_prompt_source(blank):
    """Seed 002, "Prompt Source Priority": "Prompt sources are user messages that drive Mysis
    behavior" and "(generated, not stored) - Fallback when no prompt sources exist" (a message with
    no content drives nothing; the output always has a prompt)."""
    only_blank = [sys_("S"), user(blank)]
    assert rt(LoopSlices().apply(only_blank).messages) == [("system", "S"), ("user", NUDGE_1)]
    h = [sys_("S"), user("Mine iron"), call("c1"), result("c1", "docked"), user(blank)]
    assert rt(LoopSlices().apply(h).messages) == [
        ("system", "S"),
        ("user", "Mine iron"),
        ("assistant", ""),
        ("tool", "docked"),
    ]


@pytest.mark.parametrize("blank", ["", "  "])
def test_turn_aware_empty_user_message_is_not_a_turn_boundary(blank):
    """Seed 002, "Turn-Aware Context Composition": "Detected by finding the most recent
    user-initiated prompt (direct message, broadcast, or system nudge)." (an empty message is no
    prompt: the boundary is the prompt before it, or the nudge)."""
    only_blank = [sys_("S"), user(blank)]
    r = LoopSlices(turn_aware=True).apply(only_blank)
    assert rt(r.messages) == [("system", "S"), ("user", NUDGE_1)]
    h = [sys_("S"), user("Mine iron"), call("c1"), result("c1", "docked"), user(blank)]
    assert rt(LoopSlices(turn_aware=True).apply(h).messages) == [
        ("system", "S"),
        ("user", "Mine iron"),
        ("assistant", ""),
        ("tool", "docked"),
    ]


def _turn_history() -> list[dict[str, Any]]:
    return [
        sys_("S"),
        user("Scout the belt", source="direct"),
        call("c1", name="travel"),
        result("c1", "arrived"),
        user("Enemy spotted near Sol", source="broadcast", sender_id="m2"),
        call("c2"),
        result("c2", "hull 90%"),
        asst("Holding position."),
    ]


def test_turn_aware_composition_has_no_continuation_until_rendered():
    """Seed 002, "Turn-Aware Context Composition": "Context: `[system] + [historical compressed] +
    [current turn complete]`" and "Detected by finding the most recent user-initiated prompt (direct
    message, broadcast, or system nudge)."."""
    r = LoopSlices(turn_aware=True).apply(_turn_history())
    assert rt(r.messages) == [
        ("system", "S"),
        ("assistant", ""),
        ("tool", "arrived"),
        ("user", "Enemy spotted near Sol"),
        ("assistant", ""),
        ("tool", "hull 90%"),
        ("assistant", "Holding position."),
    ]
    assert [m.tool_calls[0].id for m in r.messages if m.tool_calls] == ["c1", "c2"]
    assert [m.tool_call_id for m in r.messages if m.role == "tool"] == ["c1", "c2"]
    assert CONTINUATION_TEXT not in [m.text for m in r.messages]
    # OpenAI accepts an assistant message first: nothing is inserted
    assert rt(r.for_provider("openai")) == rt(r.messages)
    # strict providers get the continuation placeholder first
    assert rt(r.for_provider("strict")) == [
        ("system", "S"),
        ("user", CONTINUATION_TEXT),
        ("assistant", ""),
        ("tool", "arrived"),
        ("user", "Enemy spotted near Sol"),
        ("assistant", ""),
        ("tool", "hull 90%"),
        ("assistant", "Holding position."),
    ]
    a = r.to_anthropic()["messages"]
    assert [d["role"] for d in a] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert a[0]["content"] == CONTINUATION_TEXT


def test_turn_aware_history_skips_incomplete_loop_for_earlier_complete_one():
    """Seed 002, "Turn-Aware Context Composition": "Only the most recent complete tool loop is
    included"."""
    h = [
        sys_("S"),
        user("old question"),
        call("h1"),
        result("h1", "docked"),
        call("h2", "h3", name="scan"),
        result("h2", "clear"),  # h3 never answered: this loop is incomplete
        user("new question"),
        asst("On it."),
    ]
    r = LoopSlices(turn_aware=True).apply(h)
    assert rt(r.messages) == [
        ("system", "S"),
        ("assistant", ""),
        ("tool", "docked"),
        ("user", "new question"),
        ("assistant", "On it."),
    ]
    assert r.messages[1].tool_calls[0].id == "h1"
    assert r.messages[2].tool_call_id == "h1"
    body = to_messages(h[1:6])  # old question .. the incomplete loop
    assert latest_complete_tool_loop(body) == (1, 3)
    assert [m.tool_call_id or m.tool_calls[0].id for m in extract_latest_tool_loop(body)] == [
        "h2",
        "h2",
    ]
    assert [m.text for m in extract_latest_tool_loop(body, complete=True)] == ["", "docked"]
    assert is_complete_loop(body[1:3])
    assert not is_complete_loop(body[3:5])


def test_turn_aware_boundary_searched_only_within_window():
    """Seed 002, "Tuning": "Scanning window for finding turn boundaries and tool loops." (no user
    message in the window: the nudge is the boundary, after the historical loop)."""
    h = [sys_("S"), user("old question"), call("c1"), result("c1", "docked"), asst("Docked.")]
    r = LoopSlices(turn_aware=True, window=3).apply(h)
    assert rt(r.messages) == [
        ("system", "S"),
        ("assistant", ""),
        ("tool", "docked"),
        ("user", NUDGE_1),
    ]
    assert r.messages[-1].meta.source == "system" and r.messages[-1].meta.ephemeral is True
    # with the user message inside the window it is the boundary, and nothing precedes it
    r20 = LoopSlices(turn_aware=True, window=20).apply(h)
    assert rt(r20.messages) == [
        ("system", "S"),
        ("user", "old question"),
        ("assistant", ""),
        ("tool", "docked"),
        ("assistant", "Docked."),
    ]


def test_turn_aware_stored_nudge_is_a_turn_boundary():
    """Seed 002, "Turn-Aware Context Composition": "Detected by finding the most recent
    user-initiated prompt (direct message, broadcast, or system nudge)."."""
    h = [
        sys_("S"),
        user("Mine iron", source="direct"),
        call("c1"),
        result("c1", "docked"),
        user(NUDGE_1, source="system"),
        asst("Checking."),
    ]
    r = LoopSlices(turn_aware=True).apply(h)
    assert rt(r.messages) == [
        ("system", "S"),
        ("assistant", ""),
        ("tool", "docked"),
        ("user", NUDGE_1),
        ("assistant", "Checking."),
    ]


def test_turn_aware_seed_example_reproduced_exactly():
    """Seed 002, "Turn-Aware Context Composition", "Example": "[assistant: tool_call_2]  ←
    Only latest loop included" and "[user: "new question"]      ← Turn boundary"."""
    h = [
        sys_("S"),
        user("old question"),
        call("tc1", name="tool_call_1"),
        result("tc1", "result_1"),
        call("tc2", name="tool_call_2"),
        result("tc2", "result_2"),
        user("new question"),
        call("login", name="login"),
        result("login", "session_id: abc123"),
        call("status", name="get_status"),
        result("status", "status_result"),
    ]
    r = LoopSlices(turn_aware=True).apply(h)
    assert rt(r.messages) == [
        ("system", "S"),
        ("assistant", ""),
        ("tool", "result_2"),
        ("user", "new question"),
        ("assistant", ""),
        ("tool", "session_id: abc123"),
        ("assistant", ""),
        ("tool", "status_result"),
    ]
    assert [m.tool_calls[0].id for m in r.messages if m.tool_calls] == ["tc2", "login", "status"]
    assert [m.tool_call_id for m in r.messages if m.role == "tool"] == ["tc2", "login", "status"]
    assert CONTINUATION_TEXT not in [m.text for m in r.messages]
    strict = r.for_provider("strict")
    assert rt(strict)[:3] == [("system", "S"), ("user", CONTINUATION_TEXT), ("assistant", "")]
    assert validate(strict) == []
    roles = anthropic_roles(r)
    assert roles[0] == "user" and all(a != b for a, b in itertools.pairwise(roles))


# =================================================================================================
# Seed 004: safe-split summarization
# =================================================================================================

PHASE1 = [user("u0"), asst("a1"), user("u2"), asst("a3"), user("u4"), asst("a5")]


def test_safe_split_phase1_backwards_to_a_turn_start():
    """Seed 004, "Four-Phase Splitting Strategy": "Starting from the ideal split point (keeping
    `summary_window` messages), search backwards to find a safe split at a conversation turn
    boundary that stays under 70% of token threshold."."""
    msgs = to_messages(PHASE1)
    tokens = [10] * 6
    # target k = 6 - 3 = 3 (an assistant message); backwards, k = 2 is a user message
    assert split_phase1(msgs, tokens, token_threshold=100, summary_window=3) == 2
    assert find_split(msgs, tokens, token_threshold=100, summary_window=3) == Split(2, 1)
    # forwards (phase 2) would have taken the target itself; phase 3 the most kept
    assert split_phase2(msgs, tokens, token_threshold=100, summary_window=3) == 3
    assert split_phase3(msgs, tokens, token_threshold=100) == 1


PHASE2 = [
    user("u0"),
    call("c1"),
    result("c1"),
    asst("a3"),
    call("c2"),
    result("c2"),
    asst("a6"),
]


def test_safe_split_phase2_forwards_when_no_turn_start():
    """Seed 004, "Four-Phase Splitting Strategy": "If no turn start is found, search forwards from
    the target window to find any safe split (even if not at a turn boundary)."."""
    msgs = to_messages(PHASE2)
    tokens = [10] * 7
    # target k = 7 - 3 = 4; k = 4..1 hold no user message: phase 1 finds nothing
    assert split_phase1(msgs, tokens, token_threshold=100, summary_window=3) is None
    # k = 4 keeps the pair c2 whole and summarizes c1 whole, 30 tokens <= 70
    assert split_phase2(msgs, tokens, token_threshold=100, summary_window=3) == 4
    assert find_split(msgs, tokens, token_threshold=100, summary_window=3) == Split(4, 2)
    assert is_split_safe(msgs, 4)
    assert not is_split_safe(msgs, 2)  # would separate c1 from its result
    pairs = tool_pairs(msgs)
    assert pairs.complete == ((1, 2), (4, 5))
    assert pairs.incomplete == () and pairs.orphans == ()


PHASE3 = [user("u0"), asst("a1"), user("u2"), call("c1"), result("c1"), asst("a5")]
PHASE3_TOKENS = [10, 10, 10, 2, 2, 75]


def test_safe_split_phase3_largest_safe_split_under_80_percent():
    """Seed 004, "Four-Phase Splitting Strategy": "If no safe split is found near the window, find
    the largest safe split that stays under 80% of token threshold."."""
    msgs = to_messages(PHASE3)
    t = PHASE3_TOKENS
    # target 3: keeps 79 > 70, phase 1 stops; forwards k = 3, 4, 5 keep 79, 77, 75 > 70
    assert split_phase1(msgs, t, token_threshold=100, summary_window=3) is None
    assert split_phase2(msgs, t, token_threshold=100, summary_window=3) is None
    # k = 1 keeps 99, k = 2 keeps 89 (> 80); k = 3 keeps 79 with the pair whole
    assert split_phase3(msgs, t, token_threshold=100) == 3
    assert find_split(msgs, t, token_threshold=100, summary_window=3) == Split(3, 3)


PHASE4_CASES = {
    # keeping 90 tokens (<= threshold, > 80%) summarizes no incomplete call: preferred
    "fewest_incomplete": (
        [user("u0"), call("c1"), user("u2"), call("c2"), user("u4"), asst("a5")],
        [10, 50, 10, 10, 10, 10],
        2,
        1,
    ),
    # k = 4 would keep 10 tokens but separates c1 from its result: never chosen
    "pair_never_separated": (
        [user("u0"), call("c0"), user("u2"), call("c1"), result("c1"), asst("a5")],
        [10, 10, 10, 10, 200, 10],
        2,
        5,
    ),
}


@pytest.mark.parametrize("case", list(PHASE4_CASES))
def test_safe_split_phase4_best_effort(case):
    """Seed 004, "Four-Phase Splitting Strategy": "If no safe split exists, use a scoring-based
    best-effort approach that minimizes damage to incomplete tool pairs." and "MUST NOT be
    separated. Both must be either summarized or kept together."."""
    dicts, t, window, expected = PHASE4_CASES[case]
    msgs = to_messages(dicts)
    assert split_phase1(msgs, t, token_threshold=100, summary_window=window) is None
    assert split_phase2(msgs, t, token_threshold=100, summary_window=window) is None
    assert split_phase3(msgs, t, token_threshold=100) is None
    assert split_best_effort(msgs, t, token_threshold=100) == expected
    assert find_split(msgs, t, token_threshold=100, summary_window=window) == Split(expected, 4)


def test_safe_split_apply_restores_context_in_one_snapshot():
    """Seed 004, "5. Context Restoration": "The final summary is wrapped in a system message" and
    "6. Role Alternation Enforcement"."""
    h = [
        sys_("S"),
        user("first question"),
        asst("first answer"),
        user("second question"),
        asst("second answer"),
        user("third question"),
        asst("third answer"),
    ]
    r = SafeSplitSummarization(token_threshold=10_000, summary_window=2, environ={}).apply(h)
    assert r.stats.triggered
    assert [m.role for m in r.messages] == ["system", "user", "assistant"]
    restored = r.messages[1].text
    assert restored.startswith(RESTORATION_PREFIX)
    assert restored.count(OPEN) == 1 and restored.count(CLOSE) == 1
    assert restored.endswith("third question")
    assert r.messages[2].text == "third answer"


class SnapshotSummarizer:
    def __init__(self, consolidate_answer: str) -> None:
        self.consolidate_answer = consolidate_answer
        self.kinds: list[str] = []
        self.chunks: list[str] = []

    def __call__(self, req: SummaryRequest) -> str:
        self.kinds.append(req.kind)
        if req.kind == "chunk":
            self.chunks.append(req.content)
            return f"{OPEN}\npart {len(self.chunks)}\n{CLOSE}"
        return self.consolidate_answer


def _long_chat() -> list[dict[str, Any]]:
    out = []
    for i in range(8):
        text = f"message {i}: " + "the convoy moved ore between stations " * 3
        out.append(user(text) if i % 2 == 0 else asst(text))
    return out


@pytest.mark.parametrize(
    "consolidated",
    [f"{OPEN}\nmerged\n{CLOSE}", f"{OPEN}a{CLOSE}\n{OPEN}b{CLOSE}"],
    ids=["one_block", "two_blocks_from_summarizer"],
)
def test_chunk_and_consolidate_gives_exactly_one_snapshot(consolidated):
    """Seed 004, "4. Chunked Summarization": "If the text is too large for a single context window,
    it is split into chunks" and "If the result is still too large or contains multiple
    `<state_snapshot>` tags, a final consolidation pass merges them into a single coherent
    `<state_snapshot>`."."""
    s = SnapshotSummarizer(consolidated)
    out = chunk_and_consolidate(_long_chat(), summarizer=s, chunk_tokens=60, counter="estimate")
    assert s.kinds.count("chunk") >= 2
    assert all(EstimateCounter().count_text(c) <= 60 for c in s.chunks)
    assert "consolidate" in s.kinds
    assert out.count(OPEN) == 1 and out.count(CLOSE) == 1
    assert out.strip().startswith(OPEN) and out.strip().endswith(CLOSE)
    if consolidated.count(OPEN) == 1:
        assert "merged" in out


def test_chunk_and_consolidate_default_and_async_give_one_snapshot():
    """Seed 004, "4. Chunked Summarization": "a final consolidation pass merges them into a single
    coherent `<state_snapshot>`."."""
    for out in (
        chunk_and_consolidate(_long_chat(), chunk_tokens=60),
        asyncio.run(achunk_and_consolidate(_long_chat(), chunk_tokens=60)),
    ):
        assert out.count(OPEN) == 1 and out.count(CLOSE) == 1


def test_strip_orphans_drops_orphans_and_nothing_else():
    """Seed 004, "Tool Pair Integrity Constraints": "MUST NOT be kept in `to_keep` segment. These
    indicate corrupted history." and "Can be summarized if necessary, but prefer to keep them."."""
    h = [
        sys_("S"),
        user("A"),
        result("x", "orphan one"),
        user("B"),
        call("c1"),
        result("c1", "fine"),
        result("c9", "orphan two"),
        call("c2"),  # unanswered: kept as is, nothing synthesized
        user("C"),
    ]
    out, dropped = strip_orphans(h)
    assert dropped == 2
    assert rt(out) == [
        ("system", "S"),
        ("user", "A"),
        ("user", "B"),
        ("assistant", ""),
        ("tool", "fine"),
        ("assistant", ""),
        ("user", "C"),
    ]
    assert out[3].tool_calls[0].id == "c1" and out[4].tool_call_id == "c1"
    assert out[5].tool_calls[0].id == "c2"


def test_strip_orphans_is_exported_from_ptc_history():
    """Seed 004, "Edge Case Handling": "Orphaned returns must be summarized away." (the API names it
    ``ptc.history.strip_orphans``)."""
    import ptc.history

    assert getattr(ptc.history, "strip_orphans", None) is strip_orphans


def test_safe_split_orphan_dropped_then_request_messages_merged():
    """Seed 004, "6. Role Alternation Enforcement": "Creates a new `ModelRequest` with combined
    parts" and "Orphaned Tool Return": "Orphaned returns must be summarized away."."""
    h = [sys_("S"), user("Alpha request"), result("x", "ghost"), user("Bravo request"), asst("ok")]
    r = SafeSplitSummarization(token_threshold=10_000, environ={}).apply(h)
    assert [m.role for m in r.messages] == ["system", "user", "assistant"]
    text = r.messages[1].text
    assert "Alpha request" in text and "Bravo request" in text
    assert text.index("Alpha request") < text.index("Bravo request")
    assert "ghost" not in text
    assert r.messages[2].text == "ok"
    assert anthropic_roles(r) == ["user", "assistant"]


def test_ensure_alternating_roles_merges_without_mutating():
    """Seed 004, "6. Role Alternation Enforcement": "Creates a new `ModelRequest` with combined
    parts" and "Uses `dataclasses.replace()` to create a new `ModelResponse` with combined
    parts"."""
    msgs = to_messages([user("A"), user("B"), asst("x"), asst("y")])
    snapshot = list(msgs)
    out, merges = ensure_alternating_roles(msgs)
    assert merges == 2
    assert [m.role for m in out] == ["user", "assistant"]
    assert out[0].parts == (TextPart("A"), TextPart("B"))
    assert out[1].parts == (TextPart("x"), TextPart("y"))
    assert msgs == snapshot


# =================================================================================================
# Property-style: raw output follows the seed, rendered output is valid
# =================================================================================================

PROPS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

IDS = st.sampled_from(["a", "b", "c", "d"])
TEXTS = st.sampled_from(["", " ", "hi", "check status", "edit src/app.py", "é日本", "word " * 40])
METAS = st.sampled_from(
    [
        {},
        {"source": "direct"},
        {"source": "broadcast", "sender_id": ""},
        {"source": "broadcast", "sender_id": "m2"},
        {"source": "system"},
    ]
)


def _gen_call(ids: list[str], text: str) -> dict[str, Any]:
    d = call(*ids, name="search")
    d["content"] = text or None
    return d


MESSAGE = st.one_of(
    st.builds(sys_, TEXTS),
    st.builds(lambda t, m: user(t, **m), TEXTS, METAS),
    st.builds(asst, TEXTS),
    st.builds(_gen_call, st.lists(IDS, min_size=1, max_size=3), TEXTS),
    st.builds(result, IDS, TEXTS),
    st.just(user(SUMMARY_PREFIX + "Earlier: the user wanted the ports.")),
)
LOOP = st.builds(
    lambda ids, keep, t: [_gen_call(ids, ""), *(result(i, t) for i in ids[:keep])],
    st.lists(IDS, min_size=1, max_size=3, unique=True),
    st.integers(0, 3),
    TEXTS,
)
HISTORY = st.lists(st.one_of(MESSAGE.map(lambda m: [m]), LOOP), max_size=16).map(
    lambda chunks: [m for c in chunks for m in c]
)


def _split_system(r) -> list[Message]:
    msgs = list(r.messages)
    lead = 0
    while lead < len(msgs) and msgs[lead].role == "system":
        lead += 1
    rest = msgs[lead:]
    assert all(m.role != "system" for m in rest)
    return rest


def _rendered_valid(r) -> None:
    assert strip_orphans(r.messages)[1] == 0
    assert validate(r.for_provider("strict")) == []
    assert validate(r.for_provider("openai"), provider="openai") == []
    roles = anthropic_roles(r)
    assert all(a != b for a, b in itertools.pairwise(roles)), roles
    assert not roles or roles[0] == "user"


@PROPS
@given(HISTORY, st.integers(1, 20), st.sampled_from(["priority", "recency"]))
def test_property_loop_slices_prompt_then_at_most_one_loop(history, window, selection):
    """Seed 002, "Context Composition Algorithm": "each LLM request includes only three components:
    system prompt, a single prompt source, and the most recent tool loop"."""
    r = LoopSlices(window=window, selection=selection).apply(history)
    rest = _split_system(r)
    assert rest and rest[0].role == "user", rt(rest)
    assert sum(m.role == "user" for m in rest) == 1, rt(rest)
    loop = rest[1:]
    if loop:
        assert loop[0].role == "assistant" and loop[0].tool_calls, rt(rest)
        assert all(m.role == "tool" for m in loop[1:]), rt(rest)
    _rendered_valid(r)


@PROPS
@given(HISTORY, st.integers(1, 20))
def test_property_turn_aware_optional_complete_loop_then_user_boundary(history, window):
    """Seed 002, "Turn-Aware Context Composition": "Context: `[system] + [historical compressed] +
    [current turn complete]`" and "Only the most recent complete tool loop is included"."""
    r = LoopSlices(turn_aware=True, window=window).apply(history)
    rest = _split_system(r)
    j = 0
    if rest and rest[0].role == "assistant" and rest[0].tool_calls:
        j = 1
        while j < len(rest) and rest[j].role == "tool":
            j += 1
        answered = {m.tool_call_id for m in rest[1:j]}
        assert all(tc.id in answered for tc in rest[0].tool_calls), rt(rest)
    assert j < len(rest) and rest[j].role == "user", rt(rest)
    _rendered_valid(r)


@PROPS
@given(
    HISTORY,
    st.booleans(),
    st.sampled_from([None, 200, 2_000]),
    st.sampled_from([None, failing, lambda req: "No earlier conversation."]),
)
def test_property_compaction_users_then_one_summary(history, force, limit, summarizer):
    """Seed 003, "Token-Aware Compaction": "it keeps recent user messages (bounded by a token
    budget) and appends a summary message with a fixed summary prefix. Assistant/tool messages are
    not kept directly"."""
    r = TokenCompaction(context_limit=limit, summarizer=summarizer).apply(history, force=force)
    if r.stats.triggered:
        rest = _split_system(r)
        assert rest and all(m.role == "user" for m in rest), rt(rest)
        assert rest[-1].text.startswith(SUMMARY_PREFIX)
        assert sum(m.text.startswith(SUMMARY_PREFIX) for m in rest) == 1
    _rendered_valid(r)


@PROPS
@given(HISTORY, st.sampled_from([60, 200, 1_000, 10_000]), st.integers(1, 20))
def test_property_safe_split_no_orphans_one_snapshot_roles_merged(history, threshold, window):
    """Seed 004, "Tool Pair Integrity Constraints": "MUST NOT be kept in `to_keep` segment.", "4.
    Chunked Summarization": "a final consolidation pass merges them into a single coherent
    `<state_snapshot>`." and "6. Role Alternation Enforcement": "Creates a new `ModelRequest` with
    combined parts"."""
    s = SafeSplitSummarization(
        token_threshold=threshold,
        summary_window=window,
        chunk_tokens=80,
        max_workers=1,
        environ={},
    )
    r = s.apply(history)
    if r.summary is not None:
        text = "\n".join(m.text for m in r.messages)
        assert text.count(OPEN) == 1 and text.count(CLOSE) == 1
    # step 6 is part of the seed's pipeline: the raw output has no user -> user, and no
    # assistant -> assistant (a message left with an unanswered call is merged into too)
    for a, b in itertools.pairwise(r.messages):
        assert not (a.role == b.role == "user"), rt(r.messages)
        assert not (a.role == b.role == "assistant"), rt(r.messages)
    _rendered_valid(r)
