"""Seed 002 (Zoea Nova, "Context Compression"): loop slices and turn-aware composition.

Each test names the seed section it follows.
"""

from __future__ import annotations

import asyncio
import copy

import pytest
from history_cases import asst, call, calls, edge_cases, loop, result, sys_, user
from ptc.history import (
    NUDGE_MESSAGES,
    HistoryStore,
    HistoryStrategy,
    LoopSlices,
    NudgeController,
    extract_latest_tool_loop,
    select_prompt_source,
    synthetic_nudge,
    to_messages,
    validate,
)
from ptc.history.loop_slices import MAX_CONTEXT_MESSAGES, find_turn_start, idle_reason
from ptc.history.repair import CONTINUATION_TEXT

NUDGE_1 = "Continue your mission. Check notifications and coordinate with the swarm."
NUDGE_2 = "You need to respond. Check your notifications and status."
NUDGE_3 = "URGENT: Respond immediately. Check your system status."
IDLE = "Failed to respond after 3 encouragements"


def shape(result):
    return [(m.role, m.text[:40] if m.role != "tool" else m.tool_call_id) for m in result.messages]


def test_protocol():
    assert isinstance(LoopSlices(), HistoryStrategy)


# -- "The Solution: Loop Slices" / "Context Composition Algorithm" --------------------------------
def test_context_composition_system_prompt_source_latest_loop():
    h = [
        sys_("SYS"),
        user("mine iron", source="direct"),
        *loop("a", "mine"),
        asst("mined"),
        *loop("b", "sell"),
        asst("sold"),
    ]
    r = LoopSlices().apply(h)
    assert shape(r) == [
        ("system", "SYS"),
        ("user", "mine iron"),
        ("assistant", ""),
        ("tool", "b"),
    ]
    assert r.messages[2].tool_calls[0].name == "sell"
    assert r.stats.messages_before == 8 and r.stats.messages_dropped == 4
    assert r.stats.tokens_after < r.stats.tokens_before


# -- "Loop Extraction" ----------------------------------------------------------------------------
def test_loop_extraction_collects_consecutive_results_and_stops_at_first_non_tool():
    msgs = to_messages(
        [
            user("u"),
            calls(call("x1"), call("x2")),
            result("x1"),
            result("x2"),
            asst("after"),
            result("stray"),
        ]
    )
    # the newest call message is the one at index 1; the stray result is not part of it
    loop_msgs = extract_latest_tool_loop(msgs)
    assert [m.tool_call_id for m in loop_msgs] == [None, "x1", "x2"]
    assert extract_latest_tool_loop(to_messages([user("u"), asst("no tools")])) == []


def test_loop_extraction_recognises_tool_calls_prefix():
    """Seed 002: tool call messages are identified by role assistant + `[TOOL_CALLS]` prefix."""
    msgs = to_messages([user("u"), asst("[TOOL_CALLS] get_status()"), asst("plain")])
    assert [m.text for m in extract_latest_tool_loop(msgs)] == ["[TOOL_CALLS] get_status()"]


# -- "Prompt Source Priority" ---------------------------------------------------------------------
PRIORITY_HISTORY = [
    user("direct order", source="direct"),
    user("commander says", source="broadcast", sender_id=""),
    user("swarm says", source="broadcast", sender_id="mysis-2"),
    asst("ack"),
]


def test_prompt_source_priority_direct_beats_newer_broadcasts():
    msgs = to_messages(PRIORITY_HISTORY)
    assert msgs[select_prompt_source(msgs, "priority")].text == "direct order"
    # pure recency: the most recent prompt source of any kind
    assert msgs[select_prompt_source(msgs, "recency")].text == "swarm says"


def test_prompt_source_priority_commander_broadcast_identified_by_empty_sender():
    msgs = to_messages(PRIORITY_HISTORY[1:])
    assert msgs[select_prompt_source(msgs)].text == "commander says"
    msgs = to_messages(PRIORITY_HISTORY[2:])
    assert msgs[select_prompt_source(msgs)].text == "swarm says"


def test_prompt_source_most_recent_within_a_category():
    msgs = to_messages([user("old", source="direct"), asst("x"), user("new", source="direct")])
    assert msgs[select_prompt_source(msgs)].text == "new"


def test_prompt_source_plain_user_messages_are_direct_and_nudges_are_not_sources():
    msgs = to_messages([user("plain"), user("stored nudge", source="system")])
    assert msgs[select_prompt_source(msgs)].text == "plain"
    assert select_prompt_source(to_messages([user("n", source="system")])) is None


def test_strategy_selection_option():
    r = LoopSlices(selection="recency").apply([sys_(), *PRIORITY_HISTORY])
    assert r.messages[1].text == "swarm says"
    r = LoopSlices(selection="priority").apply([sys_(), *PRIORITY_HISTORY])
    assert r.messages[1].text == "direct order"
    with pytest.raises(ValueError):
        LoopSlices(selection="newest")  # type: ignore[arg-type]


# -- "Synthetic Nudge Behavior" -------------------------------------------------------------------
def test_synthetic_nudge_when_no_prompt_source():
    r = LoopSlices().apply([sys_("S"), *loop("a"), asst("done")])
    nudge = r.messages[1]
    assert nudge.role == "user" and nudge.text == NUDGE_1
    assert nudge.meta.source == "system" and nudge.meta.sender_id == ""
    assert nudge.meta.ephemeral
    assert r.info["nudge"] is True
    assert [m.role for m in r.messages] == ["system", "user", "assistant", "tool"]


def test_synthetic_nudge_escalating_wordings():
    assert NUDGE_MESSAGES == (NUDGE_1, NUDGE_2, NUDGE_3)
    assert [synthetic_nudge(i).text for i in (1, 2, 3, 4)] == [NUDGE_1, NUDGE_2, NUDGE_3, NUDGE_3]
    assert LoopSlices(encouragement=2).apply([]).messages[0].text == NUDGE_2
    assert LoopSlices(encouragement=3).apply([]).messages[0].text == NUDGE_3


def test_synthetic_nudge_is_never_stored(tmp_path):
    r = LoopSlices().apply([sys_("S"), *loop("a")])
    with HistoryStore(tmp_path / "h.db") as store:
        ids = store.append_many(r.messages, agent_id="m1")
        assert len(ids) == 3
        assert [m.role for m in store.recent("m1")] == ["system", "assistant", "tool"]
        assert store.search_messages("Continue your mission") == []


# -- "Nudge Circuit Breaker" ----------------------------------------------------------------------
def test_circuit_breaker_three_nudges_then_idle():
    c = NudgeController()
    decisions = [c.tick(now=t) for t in (0, 30, 60, 90)]
    assert [d.action for d in decisions] == ["nudge", "nudge", "nudge", "idle"]
    assert [d.message.text for d in decisions[:3]] == [NUDGE_1, NUDGE_2, NUDGE_3]
    assert decisions[3].reason == IDLE == idle_reason()
    assert c.idle and c.idle_reason == IDLE
    assert not c.should_nudge(1000)


def test_circuit_breaker_reset_on_successful_response():
    c = NudgeController()
    c.tick(0)
    c.tick(30)
    assert c.encouragements == 2
    assert c.strategy().apply([]).messages[0].text == NUDGE_2
    c.on_response(now=35)
    assert c.encouragements == 0 and not c.idle
    assert c.tick(70).message.text == NUDGE_1


def test_nudge_intervals_idle_30s_wait_state_2min():
    c = NudgeController()
    assert c.should_nudge(0)
    c.on_response(now=100)
    assert not c.should_nudge(129.9)
    assert c.should_nudge(130)
    assert not c.should_nudge(219.9, waiting=True)
    assert c.should_nudge(220, waiting=True)


# -- "Bounded Size Guarantees" --------------------------------------------------------------------
@pytest.mark.parametrize("results", [1, 3, 7, 14])
def test_bounded_size_table(results):
    h = [sys_()]
    for turn in range(30):
        h.append(user(f"order {turn}", source="direct"))
        ids = [f"t{turn}-{i}" for i in range(results)]
        h.append(calls(*(call(i) for i in ids)))
        h.extend(result(i) for i in ids)
        h.append(asst(f"done {turn}"))
    r = LoopSlices().apply(h)
    roles = [m.role for m in r.messages]
    assert roles[0] == "system" and roles.count("system") == 1  # system prompt: 1 message
    assert roles.count("user") == 1  # prompt source: 1 message
    assert roles[2] == "assistant" and roles[3:] == ["tool"] * results  # 1 call + its results
    assert len(r.messages) == 3 + results
    assert len(r.messages) <= 2 + 15  # the table's ~17 maximum for up to 14 results
    if results <= 7:
        assert 3 <= len(r.messages) <= 10  # the table's typical 3-10


def test_bounded_size_never_exceeds_window_plus_two():
    ids = [f"c{i}" for i in range(40)]
    h = [sys_(), user("go"), calls(*(call(i) for i in ids)), *(result(i) for i in ids)]
    r = LoopSlices().apply(h)
    # the call message is outside the 20-message window, so no loop is found at all
    assert [m.role for m in r.messages] == ["system", "user"] or len(r.messages) <= 22
    assert validate(r.messages) == []


# -- "Constants": MaxContextMessages = 20 scanning window -----------------------------------------
def test_scanning_window_is_20_messages():
    assert MAX_CONTEXT_MESSAGES == 20
    filler = [m for i in range(10) for m in loop(f"f{i}")]  # 20 messages
    inside = LoopSlices().apply([sys_(), user("boss", source="direct"), *filler[1:]])
    assert inside.messages[1].text == "boss"  # 20th message back: found
    outside = LoopSlices().apply([sys_(), user("boss", source="direct"), *filler])
    assert outside.messages[1].text == NUDGE_1  # 21st message back: outside the window
    assert LoopSlices(window=21).apply([sys_(), user("boss"), *filler]).messages[1].text == "boss"
    with pytest.raises(ValueError):
        LoopSlices(window=0)


def test_system_prompt_always_first_even_outside_window():
    filler = [m for i in range(30) for m in loop(f"f{i}")]
    r = LoopSlices().apply([sys_("SYS"), user("go"), *filler])
    assert r.messages[0].role == "system" and r.messages[0].text == "SYS"


# -- "Turn-Aware Context Composition (v0.5.0+)" ---------------------------------------------------
def test_turn_aware_seed_example():
    h = [
        sys_("SYS"),
        user("old question"),
        *loop("c1", "tool_call_1", "result_1"),
        *loop("c2", "tool_call_2", "result_2"),
        user("new question"),
        *loop("l", "login_call", "session_id: abc123"),
        *loop("s", "status_call", "status_result"),
    ]
    r = LoopSlices(turn_aware=True).apply(h)
    texts = [(m.role, m.tool_calls[0].name if m.tool_calls else m.text) for m in r.messages]
    # the seed's example starts with the historical loop: so does the strategy's output
    expected = [
        ("system", "SYS"),
        ("assistant", "tool_call_2"),  # only the latest historical loop
        ("tool", "result_2"),
        ("user", "new question"),  # turn boundary
        ("assistant", "login_call"),  # the current turn, all included
        ("tool", "session_id: abc123"),
        ("assistant", "status_call"),
        ("tool", "status_result"),
    ]
    assert texts == expected
    assert r.info["turn_start"] == 6
    assert r.stats.messages_dropped == 3
    # Anthropic rejects an assistant message first: its rendering puts a user message first
    sent = r.for_provider("anthropic")
    assert [(m.role, m.text) for m in sent[:2]] == [("system", "SYS"), ("user", CONTINUATION_TEXT)]
    assert r.to_anthropic()["messages"][0] == {"role": "user", "content": CONTINUATION_TEXT}
    assert r.to_openai()[1]["role"] == "assistant"  # OpenAI accepts the seed's order


def test_turn_aware_keeps_a_long_current_turn_whole():
    turn = [m for i in range(25) for m in loop(f"s{i}")]
    h = [sys_(), user("old"), *loop("h"), user("now"), *turn]
    r = LoopSlices(turn_aware=True, window=60).apply(h)
    assert len(r.messages) == 1 + 2 + 1 + 50  # system, loop, turn
    assert r.stats.messages_dropped == 1
    # seed 002: the boundary is searched among the window's messages only; beyond it the
    # nudge is the boundary, after the latest complete loop of the window
    r = LoopSlices(turn_aware=True).apply(h)
    assert [(m.role, m.tool_call_id or m.text) for m in r.messages[1:]] == [
        ("assistant", ""),
        ("tool", "s24"),
        ("user", NUDGE_1),
    ]
    assert r.info["nudge"] is True


def test_turn_boundary_includes_stored_nudges():
    msgs = to_messages([user("q"), asst("a"), user("nudge", source="system"), asst("b")])
    assert find_turn_start(msgs) == 2


# -- the ten situations of issue 5 ----------------------------------------------------------------
@pytest.mark.parametrize("turn_aware", [False, True])
@pytest.mark.parametrize("case", sorted(edge_cases()))
def test_edge_cases_valid_and_input_untouched(case, turn_aware):
    h = edge_cases()[case]
    before = copy.deepcopy(h)
    r = LoopSlices(turn_aware=turn_aware).apply(h)
    assert h == before
    assert validate(r.for_provider("strict")) == []
    assert validate(r.for_provider("openai"), provider="openai") == []
    assert r.messages, "there is always at least a prompt or a nudge"


def test_edge_empty_history():
    r = LoopSlices().apply([])
    assert [m.text for m in r.messages] == [NUDGE_1]
    assert r.stats.tokens_before == 0 and r.stats.messages_dropped == 0


def test_edge_only_tool_messages():
    r = LoopSlices().apply(edge_cases()["only_tool_messages"])
    assert [m.text for m in r.messages] == [NUDGE_1]
    assert r.stats.messages_dropped == 2


def test_edge_parallel_calls_partly_answered():
    """Issue 30, item 14: a parallel call with p3 unanswered is an incomplete loop. Seed 002
    sends only complete loops, so it is dropped with the results it has: the prompt alone."""
    r = LoopSlices().apply(edge_cases()["parallel_partly_answered"])
    assert shape(r) == [("system", "You are a helpful agent."), ("user", "check both")]
    assert validate(r.messages) == []
    assert r.stats.messages_dropped == 3 and r.stats.repairs_applied == 0
    assert r.for_provider("openai") == list(r.messages)


def test_edge_orphaned_result_and_unanswered_call():
    h = [sys_(), user("q"), calls(call("a")), result("zzz"), result("a")]
    r = LoopSlices().apply(h)
    assert [(m.role, m.tool_call_id) for m in r.messages[2:]] == [
        ("assistant", None),
        ("tool", "a"),
    ]
    assert r.stats.repairs.orphan_results_dropped == 1
    # a call still waiting for its result is no loop to send: the prompt alone
    r = LoopSlices().apply(edge_cases()["unanswered_call"])
    assert shape(r) == [("system", "You are a helpful agent."), ("user", "run it")]
    assert r.stats.messages_dropped == 1 and r.stats.repairs.results_synthesized == 0


def test_edge_single_message_larger_than_any_budget_is_kept_whole():
    h = edge_cases()["huge_single_message"]
    r = LoopSlices().apply(h)
    assert r.messages[-1].text == h[-1]["content"]  # loop slices bound messages, not tokens
    assert r.stats.tokens_after > 40_000


def test_edge_consecutive_user_messages():
    r = LoopSlices().apply(edge_cases()["consecutive_users"])
    assert [m.text for m in r.messages] == ["You are a helpful agent.", "third"]
    r = LoopSlices(turn_aware=True).apply([sys_(), asst("hi"), user("a"), user("b")])
    assert [m.role for m in r.messages] == ["system", "user"]  # current turn merged
    assert [p.text for p in r.messages[1].parts] == ["b"]


def test_edge_earlier_summary_present():
    r = LoopSlices().apply(edge_cases()["earlier_summary"])
    assert r.messages[1].text == "now the report"
    r = LoopSlices().apply(edge_cases()["earlier_summary"][:-1])
    assert r.messages[1].text.startswith("[context summary]")  # it carries the user's request


def test_edge_no_summarizer_failure_possible_and_async_twin():
    """Loop slices never call a summarizer; the async twin gives the same result."""
    h = edge_cases()["user_then_tools"]
    assert asyncio.run(LoopSlices().aapply(h)) == LoopSlices().apply(h)
    assert LoopSlices().apply(h).stats.fallbacks_used == 0


def test_anthropic_history_in_anthropic_out():
    h = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]},
    ]
    r = LoopSlices().apply(h)
    assert r.shape == "anthropic"
    assert r.to_dicts() == {"messages": h}
