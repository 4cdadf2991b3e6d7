"""Issue 30, item 14: no strategy's output holds a tool call without its result or a result
without its call, in either provider's shape.

Seed 002's unit is a call message and the results right after it; a unit whose calls do not
all have their results (a call in flight, a parallel call partly answered) is dropped, never
sent. The seeds that keep such a call (004's incomplete call, 003's history under its
threshold) answer it with the synthetic error result (or remove it, ``unanswered="remove"``).

The property tests check the output with a pairing checker of their own, not the package's
``validate``.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import pytest
from history_cases import asst, call, calls, loop, result, sys_, user
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptc.history import (
    LoopSlices,
    SafeSplitSummarization,
    TokenCompaction,
    from_openai,
    to_anthropic,
)
from ptc.history.repair import SYNTHETIC_RESULT_TEXT

EXAMPLES = int(os.environ.get("PTC_HISTORY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def rows(messages: Any) -> list[tuple[str, str, tuple[str, ...], str | None]]:
    """``(role, text, call ids, result id)`` of each message."""
    return [(m.role, m.text, tuple(tc.id for tc in m.tool_calls), m.tool_call_id) for m in messages]


def as_anthropic(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same history as a list of Anthropic messages (system first, as a system message)."""
    rendered = to_anthropic(from_openai(history))
    system = rendered.get("system")
    head = [{"role": "system", "content": system}] if system else []
    return head + rendered["messages"]


# -- the two shapes of the issue, exactly ---------------------------------------------------

INCOMPLETE_AT_END = [
    sys_("S"),
    user("sell the ore"),
    *loop("a1", "market", out="12 cr"),
    calls(call("b1", "sell")),  # in flight: no result yet
]
INCOMPLETE_IN_MIDDLE = [
    sys_("S"),
    user("sell the ore"),
    *loop("a1", "market", out="12 cr"),
    calls(call("b1", "sell")),  # its result never came
    asst("The sale timed out."),
]
PARTLY_ANSWERED_AT_END = [
    sys_("S"),
    user("old question"),
    *loop("h1", "dock", out="docked"),
    user("check both"),
    calls(call("p1", "scan"), call("p2", "scan")),
    result("p1", "clear"),  # p2 not answered
]
PARTLY_ANSWERED_IN_MIDDLE = [
    sys_("S"),
    user("old question"),
    *loop("h1", "dock", out="docked"),
    user("check both"),
    calls(call("p1", "scan"), call("p2", "scan")),
    result("p1", "clear"),  # p2 not answered
    asst("p2 gave no answer; scanning again."),
    *loop("p3", "scan", out="clear too"),
]


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
@pytest.mark.parametrize("history", [INCOMPLETE_AT_END, INCOMPLETE_IN_MIDDLE])
def test_loop_slices_send_the_latest_complete_loop_not_one_in_flight(
    history: list[dict[str, Any]], shape: str
) -> None:
    """Before: the output ended with the assistant's call b1 and no result for it."""
    given_history = history if shape == "openai" else as_anthropic(history)
    r = LoopSlices().apply(given_history)
    assert r.shape == shape
    assert rows(r.messages) == [
        ("system", "S", (), None),
        ("user", "sell the ore", (), None),
        ("assistant", "", ("a1",), None),
        ("tool", "12 cr", (), "a1"),
    ]
    assert r.stats.messages_dropped == len(history) - 4
    assert r.stats.repairs.results_synthesized == 0
    if shape == "openai":
        assert r.to_dicts() == [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "sell the ore"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [call("a1", "market")],
            },
            {"role": "tool", "tool_call_id": "a1", "content": "12 cr"},
        ]
    else:
        assert r.to_dicts() == {
            "system": "S",
            "messages": [
                {"role": "user", "content": "sell the ore"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "a1", "name": "market", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "a1", "content": "12 cr"}],
                },
            ],
        }


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
def test_turn_aware_drops_a_partly_answered_parallel_call_at_the_end(shape: str) -> None:
    """Before: the current turn was kept whole, ending with the call of p1 and p2 and only
    p1's result."""
    h = PARTLY_ANSWERED_AT_END
    r = LoopSlices(turn_aware=True).apply(h if shape == "openai" else as_anthropic(h))
    assert rows(r.messages) == [
        ("system", "S", (), None),
        ("assistant", "", ("h1",), None),
        ("tool", "docked", (), "h1"),
        ("user", "check both", (), None),
    ]
    assert r.stats.messages_dropped == 3  # old question, the parallel call, p1's result
    assert r.stats.repairs.results_synthesized == 0
    if shape == "anthropic":
        assert r.to_anthropic()["messages"][-2:] == [
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "h1", "name": "dock", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "h1", "content": "docked"},
                    {"type": "text", "text": "check both"},
                ],
            },
        ]


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
def test_turn_aware_drops_a_partly_answered_parallel_call_in_the_middle(shape: str) -> None:
    h = PARTLY_ANSWERED_IN_MIDDLE
    r = LoopSlices(turn_aware=True).apply(h if shape == "openai" else as_anthropic(h))
    assert rows(r.messages) == [
        ("system", "S", (), None),
        ("assistant", "", ("h1",), None),
        ("tool", "docked", (), "h1"),
        ("user", "check both", (), None),
        ("assistant", "p2 gave no answer; scanning again.", (), None),
        ("assistant", "", ("p3",), None),
        ("tool", "clear too", (), "p3"),
    ]


def test_turn_aware_keeps_a_parallel_call_answered_out_of_order() -> None:
    h = [
        user("check both"),
        calls(call("p1"), call("p2")),
        result("p2", "B"),
        result("p1", "A"),
        asst("both clear"),
    ]
    r = LoopSlices(turn_aware=True).apply(h)
    assert rows(r.messages) == [
        ("user", "check both", (), None),
        ("assistant", "", ("p1", "p2"), None),
        ("tool", "B", (), "p2"),
        ("tool", "A", (), "p1"),
        ("assistant", "both clear", (), None),
    ]
    assert r.stats.messages_dropped == 0


def test_an_incomplete_loop_drops_its_text_with_it() -> None:
    """The unit is the call message: its text goes with its calls (a provider cannot take the
    calls without their results, and the text announced those calls)."""
    h = [user("go"), calls(call("c1"), text="Looking it up.")]
    for s in (LoopSlices(), LoopSlices(turn_aware=True)):
        assert rows(s.apply(h).messages) == [("user", "go", (), None)]


def test_calls_without_ids_are_complete_with_as_many_results_without_ids() -> None:
    """Ids are paired as the repair pairs them: a call without an id by a result without one."""
    blank = {"id": "", "type": "function", "function": {"name": "scan", "arguments": "{}"}}
    answered = [user("go"), calls(blank, blank), result("", "one"), result("", "two")]
    r = LoopSlices(turn_aware=True).apply(answered)
    assert rows(r.messages) == [
        ("user", "go", (), None),
        ("assistant", "", ("ptc-call-1", "ptc-call-2"), None),
        ("tool", "one", (), "ptc-call-1"),
        ("tool", "two", (), "ptc-call-2"),
    ]
    r = LoopSlices(turn_aware=True).apply(answered[:3])  # one result for two calls
    assert rows(r.messages) == [("user", "go", (), None)]


@pytest.mark.parametrize("shape", ["openai", "anthropic"])
def test_compaction_under_its_threshold_answers_the_partly_answered_call(shape: str) -> None:
    """Seed 003 returns a history under its threshold as it is; the call p2 is answered with
    the synthetic error result, after p1's result."""
    h = PARTLY_ANSWERED_AT_END
    r = TokenCompaction(context_limit=10**6).apply(h if shape == "openai" else as_anthropic(h))
    assert not r.stats.triggered
    assert rows(r.messages)[-3:] == [
        ("assistant", "", ("p1", "p2"), None),
        ("tool", "clear", (), "p1"),
        ("tool", SYNTHETIC_RESULT_TEXT, (), "p2"),
    ]
    assert r.messages[-1].is_error and not r.messages[-2].is_error
    assert r.stats.repairs.results_synthesized == 1


# -- any history: a checker of its own --------------------------------------------------------


def unpaired(messages: Any) -> list[str]:
    """What breaks call/result pairing in ``Message``s: a call whose id has no result among the
    tool messages right after its message, and a tool message that does not answer a call of
    the message right before its run (or answers one twice)."""
    problems: list[str] = []
    open_ids: list[str] | None = None  # the calls of the message before this run of results
    for i, m in enumerate(messages):
        if m.role == "tool":
            if open_ids is None or m.tool_call_id not in open_ids:
                problems.append(f"result {m.tool_call_id!r} at {i} answers no call before it")
            else:
                open_ids.remove(m.tool_call_id)
            continue
        if open_ids:
            problems.append(f"calls {open_ids} before {i} have no result")
        open_ids = [tc.id for tc in m.tool_calls] if m.role == "assistant" else None
    if open_ids:
        problems.append(f"calls {open_ids} at the end have no result")
    return problems


def unpaired_openai(dicts: list[dict[str, Any]]) -> list[str]:
    """The same check on OpenAI chat message dicts."""
    problems: list[str] = []
    open_ids: list[str] | None = None
    for i, d in enumerate(dicts):
        if d["role"] == "tool":
            if open_ids is None or d["tool_call_id"] not in open_ids:
                problems.append(f"result {d['tool_call_id']!r} at {i} answers no call")
            else:
                open_ids.remove(d["tool_call_id"])
            continue
        if open_ids:
            problems.append(f"calls {open_ids} before {i} have no result")
        open_ids = (
            [c["id"] for c in d.get("tool_calls") or []] if d["role"] == "assistant" else None
        )
    if open_ids:
        problems.append(f"calls {open_ids} at the end have no result")
    return problems


def unpaired_anthropic(dicts: list[dict[str, Any]]) -> list[str]:
    """The check on Anthropic messages: every ``tool_use`` of an assistant message has its
    ``tool_result`` in the user message right after it, and every ``tool_result`` answers a
    ``tool_use`` of the assistant message right before it."""
    problems: list[str] = []

    def blocks(d: dict[str, Any], kind: str, key: str) -> list[str]:
        content = d["content"]
        if not isinstance(content, list):
            return []
        return [b[key] for b in content if isinstance(b, dict) and b.get("type") == kind]

    for i, d in enumerate(dicts):
        if d["role"] == "assistant":
            uses = blocks(d, "tool_use", "id")
            following = dicts[i + 1] if i + 1 < len(dicts) else None
            answers = (
                blocks(following, "tool_result", "tool_use_id")
                if following and following["role"] == "user"
                else []
            )
            missing = [u for u in uses if u not in answers]
            if missing:
                problems.append(f"tool_use {missing} at {i} has no tool_result after it")
        else:
            results = blocks(d, "tool_result", "tool_use_id")
            before = dicts[i - 1] if i > 0 and dicts[i - 1]["role"] == "assistant" else None
            uses = blocks(before, "tool_use", "id") if before else []
            stray = [r for r in results if r not in uses]
            if stray or len(results) != len(set(results)):
                problems.append(f"tool_result {results} at {i} answers no tool_use before it")
    return problems


IDS = st.sampled_from(["a", "b", "c", "d"])
TEXT = st.sampled_from(["", "hi", "scan the ports", "word " * 50])


@st.composite
def tool_unit(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A call message of 1-3 calls, then any subset of its results in any order, an orphan
    result sometimes among them: complete, partly answered or in flight."""
    ids = draw(st.lists(IDS, min_size=1, max_size=3, unique=True))
    text = draw(st.sampled_from([None, "Checking."]))
    answered = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
    results = [result(i, draw(TEXT)) for i in answered]
    if draw(st.booleans()) and draw(st.booleans()):
        results.insert(draw(st.integers(0, len(results))), result("zz", "stray"))
    return [calls(*(call(i, "scan") for i in ids), text=text), *results]


UNIT = st.one_of(
    tool_unit(),
    tool_unit(),
    TEXT.map(lambda t: [user(t or "q")]),
    TEXT.map(lambda t: [asst(t)]),
    st.just([sys_("late")]),
    st.sampled_from(
        [[user("b", source="broadcast", sender_id="m2")], [user("n", source="system")]]
    ),
    IDS.map(lambda i: [result(i, "orphan")]),
)
HISTORIES = st.lists(UNIT, max_size=12).map(
    lambda units: [sys_("S"), *(m for u in units for m in u)]
)

STRATEGIES = [
    LoopSlices(),
    LoopSlices(turn_aware=True),
    LoopSlices(window=3),
    LoopSlices(turn_aware=True, window=4),
    LoopSlices(unanswered="remove"),
    TokenCompaction(context_limit=10**6),  # under the threshold: the history as it is
    TokenCompaction(context_limit=10**6, unanswered="remove"),
    TokenCompaction(context_limit=10**6, unanswered="keep"),
    TokenCompaction(context_limit=300),  # compacted
    SafeSplitSummarization(token_threshold=10**6, summary_window=50, environ={}),
    SafeSplitSummarization(token_threshold=200, summary_window=3, chunk_tokens=80, environ={}),
    SafeSplitSummarization(
        token_threshold=200, summary_window=3, chunk_tokens=80, environ={}, unanswered="remove"
    ),
]


def check_paired(r: Any) -> None:
    assert unpaired(r.messages) == [], rows(r.messages)
    assert unpaired_openai(r.to_openai()) == []
    assert unpaired_anthropic(r.to_anthropic()["messages"]) == []


@SETTINGS
@given(HISTORIES, st.sampled_from(STRATEGIES))
def test_no_strategy_output_holds_an_unpaired_call_or_result(history, strategy):
    before = copy.deepcopy(history)
    check_paired(strategy.apply(history))
    assert history == before
    anthropic = as_anthropic(history)
    r = strategy.apply(anthropic)
    check_paired(r)
    if r.shape == "anthropic":  # read, and given back, in Anthropic's shape
        assert unpaired_anthropic(r.to_dicts()["messages"]) == []


def test_the_checkers_find_what_they_look_for() -> None:
    """The checkers themselves: each problem shape is found, in both renderings."""
    msgs = from_openai(PARTLY_ANSWERED_AT_END)
    assert unpaired(msgs) == ["calls ['p2'] at the end have no result"]
    assert unpaired(from_openai([user("q"), result("x")])) == [
        "result 'x' at 1 answers no call before it"
    ]
    assert unpaired_openai(PARTLY_ANSWERED_AT_END) == ["calls ['p2'] at the end have no result"]
    anth = as_anthropic(PARTLY_ANSWERED_AT_END)
    assert unpaired_anthropic(anth) == ["tool_use ['p2'] at 4 has no tool_result after it"]
    stray = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "text"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}]},
    ]
    assert unpaired_anthropic(stray) == ["tool_result ['x'] at 2 answers no tool_use before it"]
