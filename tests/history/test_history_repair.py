"""Validator and repair: what providers reject (issue 5, "Messages")."""

from __future__ import annotations

import copy

from history_cases import asst, call, calls, result, sys_, user
from ptc.history import (
    Message,
    ensure_alternating_roles,
    is_valid,
    repair,
    to_messages,
    to_openai,
    validate,
)
from ptc.history.repair import SYNTHETIC_RESULT_TEXT


def kinds(history):
    return [(i.kind, i.call_id) for i in validate(history)]


def test_valid_history_has_no_issues_and_repair_is_identity():
    h = [sys_(), user("q"), calls(call("a"), call("b")), result("b"), result("a"), asst("done")]
    assert validate(h) == []
    fixed, report = repair(h)
    assert report.total == 0
    assert to_openai(fixed) == h


def test_orphan_result_dropped():
    h = [user("q"), asst("a"), result("ghost")]
    assert kinds(h) == [("orphan_result", "ghost")]
    fixed, report = repair(h)
    assert [m.role for m in fixed] == ["user", "assistant"]
    assert report.orphan_results_dropped == 1


def test_parallel_calls_partly_answered_get_synthetic_results_per_id():
    h = [user("q"), calls(call("p1"), call("p2"), call("p3")), result("p2", "B")]
    assert kinds(h) == [("unanswered_call", "p1"), ("unanswered_call", "p3")]
    fixed, report = repair(h)
    out = to_openai(fixed)
    assert [(d["role"], d.get("tool_call_id")) for d in out] == [
        ("user", None),
        ("assistant", None),
        ("tool", "p2"),
        ("tool", "p1"),
        ("tool", "p3"),
    ]
    assert out[3]["content"] == SYNTHETIC_RESULT_TEXT
    assert "call was not completed" in SYNTHETIC_RESULT_TEXT
    assert fixed[3].is_error is True
    assert report.results_synthesized == 2


def test_unanswered_calls_removed_by_option():
    h = [user("q"), calls(call("p1"), call("p2"), text="thinking"), result("p2", "B"), asst("ok")]
    fixed, report = repair(h, unanswered="remove")
    assert [tc.id for tc in fixed[1].tool_calls] == ["p2"]
    assert report.calls_removed == 1
    # a call message left with nothing at all disappears
    fixed, report = repair([user("q"), calls(call("z")), asst("later")], unanswered="remove")
    assert [m.role for m in fixed] == ["user", "assistant"]
    assert report.calls_removed == 1 and report.empty_dropped == 1


def test_result_separated_from_its_call_by_a_user_message_is_an_orphan():
    h = [user("q"), calls(call("a")), user("hurry"), result("a")]
    fixed, _ = repair(h)
    assert validate(fixed) == []
    assert [(m.role, m.tool_call_id) for m in fixed] == [
        ("user", None),
        ("assistant", None),
        ("tool", "a"),  # synthesized, placed right after the call
        ("user", None),
    ]
    assert fixed[2].text == SYNTHETIC_RESULT_TEXT


def test_consecutive_same_role_merged_without_mutating_input():
    h = [user("one"), user("two"), asst("a"), asst("b")]
    snapshot = copy.deepcopy(h)
    msgs = to_messages(h)
    originals = list(msgs)
    fixed, report = repair(msgs)
    assert h == snapshot
    assert msgs == originals and all(a is b for a, b in zip(msgs, originals, strict=True))
    assert [m.role for m in fixed] == ["user", "assistant"]
    assert [p.text for p in fixed[0].parts] == ["one", "two"]
    assert report.messages_merged == 2
    assert to_openai(fixed)[0]["content"] == [
        {"type": "text", "text": "one"},
        {"type": "text", "text": "two"},
    ]
    assert to_openai(fixed, join_text=True)[0]["content"] == "one\n\ntwo"


def test_misplaced_system_hoisted_or_turned_into_user():
    h = [sys_("rules"), user("q"), {"role": "system", "content": "late rule"}, asst("a")]
    assert kinds(h) == [("misplaced_system", None)]
    fixed, report = repair(h)
    assert [m.role for m in fixed] == ["system", "user", "assistant"]
    assert [p.text for p in fixed[0].parts] == ["rules", "late rule"]
    assert report.systems_moved == 1
    fixed, _ = repair(h, misplaced_system="to_user")
    assert [m.role for m in fixed] == ["system", "user", "assistant"]
    assert [p.text for p in fixed[1].parts] == ["q", "late rule"]


def test_duplicate_call_ids_renamed_and_deduplicated():
    h = [
        user("q"),
        calls(call("a"), call("a")),
        result("a", "first"),
        user("again"),
        calls(call("a")),
        result("a", "second"),
    ]
    issues = kinds(h)
    assert issues.count(("duplicate_call_id", "a")) == 2
    fixed, report = repair(h)
    assert validate(fixed) == []
    assert report.calls_removed == 1 and report.call_ids_renamed == 1
    assert fixed[4].tool_calls[0].id == "a~2" and fixed[5].tool_call_id == "a~2"
    assert fixed[5].text == "second"


def test_empty_messages_dropped():
    h = [user("q"), {"role": "assistant", "content": ""}, {"role": "user", "content": "  "}]
    fixed, report = repair(h)
    assert [m.text for m in fixed] == ["q"]
    assert report.empty_dropped == 2


def test_repair_is_idempotent_and_deterministic():
    h = [
        {"role": "system", "content": "late"},
        result("x"),
        user("a"),
        user("b"),
        calls(call("c1"), call("c2")),
        result("c2"),
        result("c9"),
        {"role": "system", "content": "later"},
        asst(""),
        asst("end"),
        calls(call("c1")),
    ]
    once, r1 = repair(h)
    twice, r2 = repair(once)
    assert r1.total > 0 and r2.total == 0
    assert twice == once
    assert repair(h)[0] == once
    assert is_valid(once)


def test_ensure_alternating_roles_keeps_tool_sequences():
    msgs = to_messages(
        [user("a"), calls(call("c")), result("c"), user("b"), user("c"), asst("x"), asst("y")]
    )
    out, merged = ensure_alternating_roles(msgs)
    assert [m.role for m in out] == ["user", "assistant", "tool", "user", "assistant"]
    assert merged == 2
    assert out[3] is not msgs[3] and msgs[3].text == "b"
    assert out[4].text == "x\n\ny"


def test_merge_keeps_reasoning_of_both():
    a = Message.assistant("one", reasoning="r1")
    b = Message.assistant("two", reasoning="r2")
    out, _ = ensure_alternating_roles([a, b])
    assert out[0].meta.reasoning == "r1\n\nr2"
