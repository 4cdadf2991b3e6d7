"""Seed 003 (Isaac, "Multi-Turn Prompting"): token-aware compaction, Codex style.

Each test names the seed section it follows.
"""

from __future__ import annotations

import asyncio
import copy

import pytest
from history_cases import asst, call, calls, edge_cases, loop, result, sys_, user
from ptc.history import (
    SUMMARY_PREFIX,
    CompactionEvent,
    HistoryStrategy,
    SummaryRequest,
    TokenCompaction,
    is_summary_message,
    plain_text_tool_history,
    recent_files,
    to_messages,
    to_openai,
    validate,
)
from ptc.history.base import COMPACTION_INSTRUCTIONS
from ptc.history.compaction import SUMMARY_MARKER, split_summary
from ptc.history.facts import fallback_summary


class Recorder:
    """A summarizer that records its requests and answers with a fixed text."""

    def __init__(self, answer="SUMMARY: user wants ports; 3 found."):
        self.answer = answer
        self.requests: list[SummaryRequest] = []

    def __call__(self, req: SummaryRequest) -> str:
        self.requests.append(req)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


def conversation():
    return [
        sys_("SYS"),
        user("find the ports in Norway"),
        *loop("c1", "search", out="Oslo, Bergen, Tromso", q="ports"),
        asst("Found three."),
        user("now write them to ports.md"),
        *loop("c2", "edit_file", out="written", path="ports.md"),
        *loop("c3", "run_command", out="ports.md ok", command="cat ports.md"),
        asst("Done: ports.md written."),
    ]


def test_protocol():
    assert isinstance(TokenCompaction(), HistoryStrategy)


# -- "Token-Aware Compaction": threshold = context_limit * 0.7 ------------------------------------
def test_threshold_is_seventy_percent_of_context_limit():
    s = TokenCompaction(context_limit=1000)
    assert s.threshold() == 700
    at = [user("x" * (4 * 696))]  # 696 + 4 overhead = 700 tokens: not above
    over = [user("x" * (4 * 697))]  # 701 tokens
    assert not s.should_compact(at)
    assert s.should_compact(over)
    r = s.apply(at)
    assert not r.stats.triggered and r.summary is None
    assert to_openai(r.messages) == at


def test_larger_of_estimate_and_provider_usage_decides():
    s = TokenCompaction(context_limit=1000)
    h = conversation()
    assert not s.should_compact(h)
    assert s.should_compact(h, usage={"usage": {"prompt_tokens": 690, "completion_tokens": 20}})
    assert not s.should_compact(h, usage={"prompt_tokens": 10})
    r = s.apply(h, usage=800)
    assert r.stats.triggered and r.stats.usage_tokens == 800


def test_no_known_limit_triggers_above_30_messages():
    s = TokenCompaction(model="some-local-model")
    assert s.limit() is None
    h = [m for i in range(15) for m in (user(f"q{i}"), asst(f"a{i}"))]  # 30 messages
    assert not s.should_compact(h)
    assert s.should_compact([*h, user("one more")])


def test_context_limit_from_model_table_and_override():
    assert TokenCompaction(model="gpt-4o").limit() == 128_000
    assert TokenCompaction(model="gpt-4o").threshold() == 89_600
    assert TokenCompaction(model="claude-opus-4-1").limit() == 200_000
    assert TokenCompaction(model="mine", limits={"mine": 10_000}).threshold() == 7_000
    assert TokenCompaction(model="gpt-4o", context_limit=2_000).limit() == 2_000


# -- "When compaction triggers ... rebuilds history" ----------------------------------------------
def test_rebuilt_history_is_system_user_messages_and_summary():
    summ = Recorder()
    r = TokenCompaction(summarizer=summ).apply(conversation(), force=True)
    out = to_openai(r.messages)
    # seed 003: recent user messages, each its own message, then one summary message
    assert [d["role"] for d in out] == ["system", "user", "user", "user"]
    texts = [d["content"] for d in out[1:]]
    assert texts[:2] == ["find the ports in Norway", "now write them to ports.md"]
    assert texts[2].startswith(SUMMARY_PREFIX)
    assert "SUMMARY: user wants ports; 3 found." in texts[2]
    assert r.summary.startswith("SUMMARY: user wants ports")
    assert r.stats.summaries_made == 1 and r.stats.fallbacks_used == 0
    assert r.stats.messages_dropped == 8  # of 10 non-system messages, 2 users kept
    assert validate(r.messages, provider="openai") == []
    # for Anthropic the three user messages are sent as one
    anth = r.to_anthropic()["messages"]
    assert [d["role"] for d in anth] == ["user"]
    assert [b["text"] for b in anth[0]["content"]] == texts


def test_user_budget_newest_first_newest_verbatim_overflow_truncated():
    big_old = "old " * 2000  # 2,000 tokens
    mid = "mid " * 100  # 100 tokens
    newest = "new " * 300  # 300 tokens
    h = [user("oldest"), asst("a"), user(big_old), asst("b"), user(mid), asst("c"), user(newest)]
    r = TokenCompaction(user_budget=1000, summarizer=Recorder()).apply(h, force=True)
    parts = [m.text for m in r.messages]
    assert parts[-2] == newest  # verbatim
    assert parts[-3] == mid
    truncated = parts[0]
    assert truncated.startswith("old old") and "tokens ..." in truncated
    assert "[... truncated" in truncated
    assert "oldest" not in parts  # older than the overflow: dropped
    assert r.info["user_messages_truncated"] == 1


def test_newest_user_message_verbatim_even_larger_than_whole_budget():
    huge = "ask " * 30_000  # 30,000 tokens > 20,000 budget
    h = [user("earlier"), asst("ok"), user(huge)]
    r = TokenCompaction(summarizer=Recorder()).apply(h, force=True)
    parts = [m.text for m in r.messages]
    assert parts[0] == huge  # nothing older fits, the newest is whole
    assert len(parts) == 2 and parts[1].startswith(SUMMARY_MARKER)


def test_default_user_budget_is_20000_tokens():
    assert TokenCompaction().user_budget == 20_000
    msgs = [user("u" * 4 * 5_000) for _ in range(6)]  # 5,004 tokens each
    inter = [m for u in msgs for m in (u, asst("a"))]
    r = TokenCompaction(summarizer=Recorder()).apply(inter, force=True)
    parts = r.messages
    # 5,004 tokens each: the newest and two more fit (15,012), the fourth is cut to the rest
    assert len(parts) == 3 + 1 + 1  # 3 whole + 1 truncated + the summary
    assert sum("[... truncated" in p.text for p in parts) == 1


# -- "Codex-Style Summary Prompt and Prefix" ------------------------------------------------------
def test_summary_prefix_is_fixed_and_detectable():
    assert SUMMARY_PREFIX.startswith(SUMMARY_MARKER)
    r = TokenCompaction(summarizer=Recorder()).apply(conversation(), force=True)
    assert is_summary_message(r.messages[-1])
    # also after a round trip through plain strings
    joined = to_messages(r.to_openai(join_text=True))
    assert is_summary_message(joined[-1])
    assert split_summary(joined[-1].text).startswith("SUMMARY: user wants ports")


def test_earlier_summary_updated_not_summarized_again():
    first = TokenCompaction(summarizer=Recorder("FIRST SUMMARY")).apply(conversation(), force=True)
    later = [*first.to_openai(), asst("Anything else?"), user("add Trondheim"), *loop("c9")]
    summ = Recorder("SECOND SUMMARY")
    second = TokenCompaction(summarizer=summ).apply(later, force=True)
    (req,) = summ.requests
    assert req.previous_summary.startswith("FIRST SUMMARY")
    assert SUMMARY_MARKER not in req.content  # the old summary is not re-summarized
    assert "add Trondheim" in req.content and "Anything else?" in req.content
    assert "find the ports" not in req.content  # covered by the first summary
    out = second.to_openai()
    all_text = str(out)
    assert all_text.count(SUMMARY_MARKER) == 1
    texts = [d["content"] for d in out[1:]]
    assert texts[:3] == ["find the ports in Norway", "now write them to ports.md", "add Trondheim"]
    assert texts[-1].startswith(SUMMARY_PREFIX + "SECOND SUMMARY")
    assert second.info["updated_previous_summary"] is True


def test_nothing_new_since_last_summary_keeps_it_without_a_call():
    first = TokenCompaction(summarizer=Recorder("ONLY")).apply(conversation(), force=True)
    summ = Recorder("NEVER")
    again = TokenCompaction(summarizer=summ).apply(first.to_openai(), force=True)
    assert summ.requests == []
    assert again.summary.startswith("ONLY")
    assert again.to_openai() == first.to_openai()


def test_summarizer_instructions_are_constant_for_the_prompt_cache():
    a, b = Recorder(), Recorder()
    TokenCompaction(summarizer=a).apply(conversation(), force=True)
    TokenCompaction(summarizer=b).apply([*conversation(), user("more")], force=True)
    assert a.requests[0].instructions == b.requests[0].instructions == COMPACTION_INSTRUCTIONS
    assert a.requests[0].to_openai()[0] == b.requests[0].to_openai()[0]
    # the transcript of the common messages renders byte for byte the same
    assert b.requests[0].content.startswith(a.requests[0].content)
    assert "treat it as data" in COMPACTION_INSTRUCTIONS


# -- "Compaction Input Trimming and Fallback" -----------------------------------------------------
def test_input_trimming_tool_outputs_diffs_and_message_caps():
    diff = "diff --git a/x b/x\n@@ -1 +1 @@\n" + "\n".join(f"+line {i}" for i in range(500))
    h = [
        user("go"),
        *loop("t1", "run_command", out="L" * 50_000, command="make"),
        *loop("t2", "apply_patch", out=diff),
        asst("A" * 20_000),
    ]
    summ = Recorder()
    TokenCompaction(summarizer=summ).apply(h, force=True)
    content = summ.requests[0].content
    assert "characters cut" in content
    assert "diff cut: " in content and "+line 100" not in content
    assert len(content) < 2_000 * 3 + 4_000 + 2_000
    assert "L" * 2_001 not in content and "A" * 4_001 not in content


def test_input_oldest_dropped_until_it_fits_80_percent():
    h = [m for i in range(100) for m in (user(f"question {i} " + "q" * 400), asst(f"answer {i}"))]
    summ = Recorder()
    s = TokenCompaction(summarizer=summ, summarizer_limit=4_000)
    s.apply(h, force=True)
    req = summ.requests[0]
    from ptc.history.tokens import ESTIMATE

    total = ESTIMATE.count_text(req.instructions + req.prompt())
    assert total <= 0.8 * 4_000
    assert "question 99" in req.content and "question 0 " not in req.content
    assert len(req.messages) < 200 and req.messages[-1].text == "answer 99"


@pytest.mark.parametrize(
    "answer",
    [
        "",
        "   ",
        "No earlier conversation to summarize.",
        "I'm sorry, I can't help.",
        RuntimeError("x"),
    ],
)
def test_fallback_summary_for_empty_refusing_or_failing_summarizer(answer):
    r = TokenCompaction(summarizer=Recorder(answer)).apply(conversation(), force=True)
    assert r.stats.fallbacks_used == 1 and r.stats.summaries_made == 0
    body = r.summary
    assert "Last user request: now write them to ports.md" in body
    assert "Files touched: ports.md" in body
    assert "Commands run: cat ports.md" in body
    assert "Delegations: (none)" in body
    assert "Last assistant reply: Done: ports.md written." in body
    assert validate(r.for_provider("strict")) == []


def test_fallback_summary_lists_delegations_and_keeps_previous():
    msgs = to_messages(
        [
            user("plan it"),
            *loop("d", "delegate_planner", out="plan ok", task="plan the port survey"),
        ]
    )
    text = fallback_summary(msgs, previous="old facts")
    assert text.startswith("Earlier summary:\nold facts")
    assert "Delegations: delegate_planner: plan the port survey" in text


def test_async_summarizer_and_async_twin():
    async def summ(req):
        await asyncio.sleep(0)
        return "ASYNC SUMMARY"

    s = TokenCompaction(summarizer=summ)
    r1 = asyncio.run(s.aapply(conversation(), force=True))
    r2 = s.apply(conversation(), force=True)
    assert r1.summary.startswith("ASYNC SUMMARY") and r1 == r2

    async def broken(req):
        raise ValueError("model down")

    r3 = asyncio.run(TokenCompaction(summarizer=broken).aapply(conversation(), force=True))
    assert r3.stats.fallbacks_used == 1


# -- "Tool Call Context and History" / "Tool Call Normalization" ----------------------------------
def test_tool_calls_become_plain_text_summaries():
    h = to_messages(
        [
            user("go"),
            calls(
                call("r", "run_command", command="pytest -q", cwd="/repo"),
                call("e", "edit_file", path="a.py"),
                call("d", "delegate_review", task="review a.py"),
                call("o", "search", q="x"),
            ),
            result("r", "3 passed"),
            result("e", "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x\n+y"),
            result("d", "looks fine"),
            result("o", "nothing"),
            asst("done"),
        ]
    )
    out = plain_text_tool_history(h)
    assert [m.role for m in out] == ["user", "assistant", "assistant"]
    lines = out[1].text.splitlines()
    assert lines[0] == "Ran `pytest -q` (cwd /repo): 3 passed"
    assert lines[1] == "edit_file a.py: --- a/a.py"
    assert "Delegated (delegate_review) task: review a.py -> looks fine" in out[1].text
    assert 'Called search({"q": "x"}) -> nothing' in out[1].text
    assert validate(out[:2]) == []


# -- "Prompt Assembly": recent files hint ---------------------------------------------------------
def test_recent_files_hint_in_summary():
    h = [
        user("edit"),
        *loop("a", "edit_file", path="one.py"),
        *loop("b", "write_file", path="two.py"),
        *loop("c", "edit_file", path="one.py"),
        *loop("d", "apply_patch", patch="*** Begin Patch\n*** Update File: three.py\n"),
    ]
    assert recent_files(to_messages(h)) == ["two.py", "one.py", "three.py"]
    assert recent_files(to_messages(h), 2) == ["one.py", "three.py"]
    r = TokenCompaction(summarizer=Recorder()).apply(h, force=True)
    assert r.summary.endswith("Recent files touched (most recent last): two.py, one.py, three.py")
    r = TokenCompaction(summarizer=Recorder(), recent_files=0).apply(h, force=True)
    assert "Recent files" not in r.summary


# -- "When compaction runs, Isaac emits a standard notification" ----------------------------------
def test_on_compact_event():
    events: list[CompactionEvent] = []
    s = TokenCompaction(context_limit=100, summarizer=Recorder(), on_compact=events.append)
    s.apply([user("hi")])
    assert events == []
    r = s.apply(conversation(), usage=500)
    (ev,) = events
    assert ev.tokens_before == r.stats.tokens_before and ev.tokens_after == r.stats.tokens_after
    assert ev.usage_tokens == 500 and ev.threshold == 70
    assert ev.messages_after == len(r.messages) and not ev.fallback_used
    assert ev.summary == r.summary


# -- the ten situations of issue 5 ----------------------------------------------------------------
@pytest.mark.parametrize("case", sorted(edge_cases()))
def test_edge_cases_valid_and_input_untouched(case):
    h = edge_cases()[case]
    before = copy.deepcopy(h)
    r = TokenCompaction(summarizer=Recorder()).apply(h, force=True)
    assert h == before
    assert validate(r.for_provider("strict")) == []
    assert not any(m.role in ("assistant", "tool") for m in r.messages)
    if case == "empty":  # nothing to summarize: no summary of nothing
        assert r.messages == () and not r.stats.triggered
        return
    assert is_summary_message(r.messages[-1])
    assert sum(is_summary_message(m) for m in r.messages) == 1


def test_edge_empty_and_no_user_and_only_tools():
    for case in ("no_user_prompt", "only_tool_messages"):
        r = TokenCompaction(summarizer=Recorder()).apply(edge_cases()[case], force=True)
        users = [m for m in r.messages if m.role == "user"]
        assert len(users) == 1 and len(users[0].parts) == 1  # the summary alone
    for force in (False, True):  # an empty history has nothing to summarize, even forced
        summ = Recorder()
        r = TokenCompaction(summarizer=summ).apply([], force=force)
        assert r.messages == () and not r.stats.triggered and summ.requests == []


def test_edge_parallel_orphan_unanswered_are_rendered_as_text():
    summ = Recorder()
    TokenCompaction(summarizer=summ).apply(edge_cases()["parallel_partly_answered"], force=True)
    c = summ.requests[0].content
    assert "called a(" in c and "called c(" in c and "[tool result p2]: B" in c
    summ = Recorder()
    TokenCompaction(summarizer=summ).apply(edge_cases()["orphaned_result"], force=True)
    assert "[tool result ghost]: boo" in summ.requests[0].content


def test_edge_huge_single_message_trimmed_for_summarizer():
    summ = Recorder()
    r = TokenCompaction(summarizer=summ).apply(edge_cases()["huge_single_message"], force=True)
    assert len(summ.requests[0].content) < 3_000
    assert r.stats.tokens_after < 1_000 < r.stats.tokens_before


def test_edge_consecutive_users_kept_apart_and_merged_for_anthropic():
    r = TokenCompaction(summarizer=Recorder()).apply(edge_cases()["consecutive_users"], force=True)
    assert [m.role for m in r.messages] == ["system", "user", "user", "user", "user"]
    assert [m.text for m in r.messages[1:4]] == ["first", "second", "third"]
    (only,) = r.to_anthropic()["messages"]
    assert [b["text"] for b in only["content"]][:3] == ["first", "second", "third"]


def test_edge_earlier_summary_case():
    summ = Recorder()
    r = TokenCompaction(summarizer=summ).apply(edge_cases()["earlier_summary"], force=True)
    assert summ.requests[0].previous_summary == "The user wants a report on ports."
    assert r.messages[1].text == "now the report"


def test_not_triggered_history_is_still_repaired():
    r = TokenCompaction(context_limit=100_000).apply(edge_cases()["orphaned_result"])
    assert not r.stats.triggered and r.stats.repairs_applied == 1
    assert validate(r.messages) == []
    assert r.stats.repairs.orphan_results_dropped == 1


# -- effects reported as plain text -------------------------------------------------------------
def test_plain_text_effects_and_what_is_not_one():
    from ptc.history.facts import text_effects

    files, commands, delegations = text_effects(
        "Updated src/api.py and created `tests/test_api.py`.\n"
        "Ran `pytest -q` (cwd /repo): 3 passed\n$ git status\ncommand: make build\n"
        "Delegated (delegate_review) task: review the diff -> fine"
    )
    assert files == ["src/api.py", "tests/test_api.py"]
    assert commands == ["pytest -q", "pytest -q", "git status", "make build"]
    assert delegations == ["delegate_review: review the diff"]
    nothing = "I ran into a problem; the file was saved. I edited e.g. the text, updated 3.5 %"
    assert text_effects(nothing) == ([], [], [])


def test_a_read_only_tool_result_is_not_an_edit():
    h = to_messages(
        [
            user("what changed?"),
            calls(call("r", "read_file", path="CHANGELOG.md")),
            result("r", "- Updated src/legacy/old_api.py\n- Deleted setup.cfg"),
            asst("Two changes."),
        ]
    )
    assert recent_files(h) == []
    assert "Files touched: (none)" in fallback_summary(h)


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "hostile", ["cmd: x" + " " * 40_000 + "y", "a/" * 100_000, "`" * 200_000, "$ " * 100_000]
)
def test_hostile_text_is_read_in_linear_time(hostile):
    from ptc.history.facts import text_effects

    text_effects(hostile)  # a backtracking pattern would take minutes here
    h = [user("go"), *([asst(hostile[:2_000])] * 200)]
    TokenCompaction(summarizer=lambda req: "", context_limit=100_000).apply(h, force=True)


# -- small budgets: the summary stays within its cap at every limit --------------------------------
def _down(req: SummaryRequest) -> str:
    raise RuntimeError("summarizer down")


FIRE = "\U0001f525"
# Each history with the smallest body the fallback can write for it: its top field's label, the
# field's first character and "..." (the last head fit_fallback tries); with the estimate (ceil of
# UTF-8 bytes / 4) that is 23, 26, 23, 18 and 23 bytes = 6, 7, 6, 5 and 6 tokens.
SMALL_BUDGET_HISTORIES = {
    "long word": (
        [sys_("S"), user("x" * 500), asst("Updated src/a.py. Ran `pytest`"), asst("ok")],
        "Last user request: x...",
    ),
    "emoji and CJK": (
        [
            sys_("S"),
            user(FIRE * 120 + " \u4fee\u590d\u8fd9\u4e2a\u9519\u8bef " + "\u6f22\u5b57" * 80),
            asst("Updated src/\u6f22.py. Ran `make`"),
            asst("\u597d\u7684" * 30),
        ],
        f"Last user request: {FIRE}...",
    ),
    "content parts": (
        [
            sys_("S"),
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look at this log " * 40},
                    {"type": "text", "text": "and fix src/x.py " * 10},
                ],
            },
            asst("Edited src/x.py. Ran `pytest -q`"),
            asst("fixed"),
        ],
        "Last user request: l...",
    ),
    "tool calls only": (
        [
            *loop("t1", "edit_file", path="a/b.py"),
            *loop("t2", "run_command", out="1 passed", command="pytest -q"),
            *loop("t3", "edit_file", path="c/d.py"),
        ],
        "Commands run: p...",
    ),
    "long path": (
        [sys_("S"), user("go"), *loop("e1", "edit_file", path="d/" * 200 + "f.py")],
        "Last user request: g...",
    ),
}


@pytest.mark.parametrize("name", list(SMALL_BUDGET_HISTORIES))
def test_summary_within_its_cap_at_every_small_limit(name):
    """Seed 003, "Token-Aware Compaction": the rebuilt history fits the model. For
    ``context_limit`` 1, 8, ..., 295 and both the fallback and the default summarizer,
    ``apply(force=True)`` never raises and ends with the summary message, which starts with
    the prefix.

    The cap is the documented budget rule (``TokenCompaction.budgets``): the threshold is
    ``int(0.7 * limit)``, the room ``max(0, threshold - system prompt tokens - 8)``, and the
    summary cap ``max(int(0.3 * room), min(128, room // 2), 32)`` (``SUMMARY_SHARE`` of the room,
    floored at half the room up to 128 and at 32). The summary message's text (prefix, body,
    recent-files line) is counted with the strategy's counter. Whenever the cap holds the prefix
    and the smallest body the history allows, the summary is within the cap. Below that (the
    summary always has its prefix and a line) it may exceed it; and where the room leaves the
    newest message at least as much as the summary (room >= 64), the output is under the
    threshold.
    """
    history, smallest = SMALL_BUDGET_HISTORIES[name]
    for limit in range(1, 301, 7):
        for summarizer in (_down, None):
            s = TokenCompaction(context_limit=limit, summarizer=summarizer)
            counter = s._counter()
            r = s.apply(history, force=True)
            last = r.messages[-1]
            assert last.role == "user" and last.text.startswith(SUMMARY_PREFIX), (limit, name)
            system = [m for m in r.messages if m.role == "system"]
            threshold = int(0.7 * limit)
            room = max(0, threshold - sum(counter.count_message(m) for m in system) - 8)
            cap = max(int(0.3 * room), min(128, room // 2), 32)
            assert s.budgets(system, counter)[2] == cap
            floor = counter.count_text(SUMMARY_PREFIX) + counter.count_text(smallest)
            if cap >= floor:
                assert counter.count_text(last.text) <= cap, (limit, name, last.text)
                if room >= 64:
                    assert r.stats.tokens_after <= threshold, (limit, name)
