"""Rendering a strategy's output for a provider (issue 12): what each provider gets, text-form
tool calls, cached renderings, and the ``unanswered`` policies."""

from __future__ import annotations

import dataclasses

import pytest
from history_cases import asst, call, calls, result, sys_, user
from ptc.history import (
    CONTINUATION_TEXT,
    LoopSlices,
    SafeSplitSummarization,
    TokenCompaction,
    strip_orphans,
    to_messages,
    validate,
)
from ptc.history.repair import SYNTHETIC_RESULT_TEXT


def test_a_text_form_call_keeps_its_results_and_is_rendered_as_user_text():
    """Seed 002: a loop is the call message ("[TOOL_CALLS]" prefix) and the tool results
    after it. Providers have no call to pair them with, so they get them as user text."""
    h = [user("go"), asst("[TOOL_CALLS] get_status {}"), result("t1", "status ok")]
    r = LoopSlices().apply(h)
    assert [(m.role, m.text) for m in r.messages] == [
        ("user", "go"),
        ("assistant", "[TOOL_CALLS] get_status {}"),
        ("tool", "status ok"),
    ]
    sent = r.to_openai()
    assert sent[-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "[tool result t1]"},
            {"type": "text", "text": "status ok"},
        ],
    }
    assert validate(to_messages(sent), provider="openai") == []
    assert r.stats.repairs.text_results_converted == 1
    assert strip_orphans(to_messages(h))[1] == 0  # they belong to the text call


def test_turn_start_counts_late_system_messages():
    h = [sys_(), user("A"), calls(call("c1")), result("c1"), sys_("late"), user("B"), asst("ok")]
    r = LoopSlices(turn_aware=True).apply(h)
    assert r.info["turn_start"] == 5  # the index of user "B" in the input


def test_renderings_follow_the_messages_they_are_made_from():
    r = LoopSlices(turn_aware=True).apply(
        [sys_(), user("q0"), calls(call("a1")), result("a1"), user("q1"), asst("done")]
    )
    assert r.to_anthropic()["messages"][0] == {"role": "user", "content": CONTINUATION_TEXT}
    shorter = dataclasses.replace(r, messages=r.messages[-2:])
    assert [d["content"] for d in shorter.to_anthropic()["messages"]] == ["q1", "done"]
    with pytest.raises(ValueError, match="provider must be one of openai, anthropic, strict"):
        r.for_provider("gemini")  # type: ignore[arg-type]


@pytest.mark.parametrize("policy", ["keep", "synthesize", "remove"])
def test_unanswered_calls_are_answered_for_every_provider(policy):
    """Issue 30, item 14: no strategy's output holds a call without its result. Loop slices
    drop the incomplete loop (seed 002); a history under the compaction threshold is returned
    with the call answered by the ``unanswered`` policy ("keep" answers it too: no provider
    takes a call without its result)."""
    h = [user("go"), calls(call("c1"))]
    r = LoopSlices(unanswered=policy).apply(h)
    assert [(m.role, m.text) for m in r.messages] == [("user", "go")]
    r = TokenCompaction(context_limit=10**6, unanswered=policy).apply(h)
    assert not r.stats.triggered
    if policy == "remove":
        assert [(m.role, m.text) for m in r.messages] == [("user", "go")]
        assert r.stats.repairs.calls_removed == 1
    else:
        assert [(m.role, m.tool_call_id, m.text) for m in r.messages] == [
            ("user", None, "go"),
            ("assistant", None, ""),
            ("tool", "c1", SYNTHETIC_RESULT_TEXT),
        ]
        assert r.messages[1].tool_calls[0].id == "c1" and r.messages[2].is_error
        assert r.stats.repairs.results_synthesized == 1
    assert validate(r.messages) == []
    for provider in ("openai", "anthropic", "strict"):
        sent = r.for_provider(provider)
        assert validate(sent, provider=provider) == [], (policy, provider)
    tool_results = [
        b
        for d in r.to_anthropic()["messages"]
        for b in d["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    ]
    assert len(tool_results) == (0 if policy == "remove" else 1)


def test_safe_split_merges_text_after_a_call_left_without_its_result():
    """Seed 004 step 6: consecutive responses are combined, also when the first holds a call
    that never got its result."""
    h = [user("a"), asst("b"), user("c"), calls(call("c1")), asst("gave up"), user("d"), asst("e")]
    r = SafeSplitSummarization(token_threshold=10**6, summary_window=50, environ={}).apply(h)
    assert [m.role for m in r.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "user",
        "assistant",
    ]
    merged = r.messages[3]
    assert merged.tool_calls[0].id == "c1" and merged.text == "gave up"
    # issue 30, item 14: the call the seed keeps is answered in the output itself
    assert r.messages[4].tool_call_id == "c1" and r.messages[4].text == SYNTHETIC_RESULT_TEXT
    assert validate(r.messages) == []
    assert validate(r.for_provider("strict")) == []
