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
    strip_orphans,
    to_messages,
    validate,
)


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
    r = LoopSlices(unanswered=policy).apply([user("go"), calls(call("c1"))])
    assert r.messages[-1].tool_calls[0].id == "c1"  # the seed's output keeps the call
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
        "user",
        "assistant",
    ]
    merged = r.messages[3]
    assert merged.tool_calls[0].id == "c1" and merged.text == "gave up"
    assert [i.kind for i in validate(r.messages)] == ["unanswered_call"]
    assert validate(r.for_provider("strict")) == []
