"""Issue 32 §1-2: approval and deferred tools stop a run; decisions, policies, approved plans,
continuations (JSON, sealed), and the clock a resumed run reads."""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

import ptc
import pytest


class Shop:
    """Tools that remember every real call."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def get_order(self, id: str) -> dict[str, Any]:
        self.calls.append(("get-order", id))
        return {"id": id, "amount": {"o1": 30, "o2": 120, "o3": 45}[id]}

    def refund(self, id: str, amount: int) -> str:
        self.calls.append(("refund", id, amount))
        return f"refunded {amount} on {id}"

    def ask_manager(self, question: str) -> str:  # deferred: never called by ptc
        self.calls.append(("ask-manager", question))
        raise AssertionError("a deferred tool must not be called")

    def tools(self) -> dict[str, Any]:
        return {
            "get-order": self.get_order,
            "refund": ptc.Tool(self.refund, effect="write", approval=True),
            "ask-manager": ptc.Tool(self.ask_manager, deferred=True),
        }


REFUNDS = """\
(println "looking")
(def orders (mapv tool/get-order ["o1" "o2"]))
(def done (mapv (fn [o] (tool/refund (:id o) (:amount o))) orders))
(println "refunded" (count done))
done"""


def test_an_approval_tool_stops_the_run_before_it_is_called() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    r = s.run(REFUNDS)
    assert r.outcome == "pending"
    assert r.is_pending and not r.ok and r.error is None and r.value is None
    assert r.prints == ["looking"]  # nothing after the stop was evaluated
    assert r.defined == []
    assert s.definitions == []  # nothing committed: `orders` was not defined
    assert shop.calls == [("get-order", "o1"), ("get-order", "o2")]
    [p] = r.pending
    assert (p.id, p.tool, p.args, p.interrupted) == ("2", "refund", ["o1", 30], False)
    assert (p.line, p.column) == (3, 25)
    assert p.describe() == '(tool/refund "o1" 30)'
    assert [(c.id, c.name, c.decision, c.replayed) for c in r.tool_calls] == [
        ("0", "get-order", None, False),
        ("1", "get-order", None, False),
    ]


def test_resume_calls_each_approved_tool_once_and_ends_as_an_uninterrupted_run() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    r = s.run(REFUNDS)
    r = s.resume(r, {"2": True})
    assert r.outcome == "pending"
    assert [p.id for p in r.pending] == ["3"]
    assert r.pending[0].args == ["o2", 120]
    r = s.resume(r, {"3": True})
    assert r.outcome == "value"
    assert r.value == ["refunded 30 on o1", "refunded 120 on o2"]
    assert r.prints == ["looking", "refunded 2"]
    assert [d.name for d in r.defined] == ["orders", "done"]
    assert [d.name for d in s.definitions] == ["orders", "done"]
    # every tool was really called once, in the program's order
    assert shop.calls == [
        ("get-order", "o1"),
        ("get-order", "o2"),
        ("refund", "o1", 30),
        ("refund", "o2", 120),
    ]
    assert [(c.id, c.name, c.decision, c.replayed) for c in r.tool_calls] == [
        ("0", "get-order", None, True),
        ("1", "get-order", None, True),
        ("2", "refund", "approved", True),
        ("3", "refund", "approved", False),
    ]
    # the same program in a Session whose refunds need no approval
    plain_shop = Shop()
    tools = plain_shop.tools()
    tools["refund"] = plain_shop.refund
    plain = ptc.Session(tools=tools).run(REFUNDS)
    assert (plain.value, plain.prints) == (r.value, r.prints)
    assert plain_shop.calls == shop.calls


def test_a_rejected_call_is_a_typed_error_with_the_reason() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    r = s.resume(s.run(REFUNDS), {"2": ptc.Reject("refunds over 25 need a manager")})
    assert r.outcome == "error"
    assert isinstance(r.error, ptc.RejectedError)
    assert r.error.type == "rejected"
    assert r.error.message == "tool/refund was not allowed: refunds over 25 need a manager"
    assert r.error.hint == "the host rejected this call; do not repeat it unchanged"
    assert (r.error.line, r.error.column) == (3, 25)
    assert r.prints == ["looking"]
    assert [(c.id, c.decision, c.error) for c in r.tool_calls[2:]] == [
        ("2", "rejected", "refunds over 25 need a manager")
    ]
    assert ("refund", "o1", 30) not in shop.calls
    assert s.definitions == []
    # False is a rejection with a standard reason
    r = s.resume(s.run(REFUNDS), {"2": False})
    assert r.error.message == "tool/refund was not allowed: rejected by the host"


def test_a_deferred_tool_is_answered_by_the_host_and_never_called() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    src = '(str "manager says: " (tool/ask-manager "refund o2?"))'
    r = s.run(src)
    [p] = r.pending
    assert (p.tool, p.args) == ("ask-manager", ["refund o2?"])
    with pytest.raises(ValueError, match="tool/ask-manager is deferred: ptc never calls it"):
        s.resume(r, {p.id: True})
    r = s.resume(r, {p.id: ptc.Answer("yes")})
    assert r.value == "manager says: yes"
    assert r.tool_calls[0].decision == "answered"
    assert shop.calls == []


def test_missing_decisions_leave_calls_pending_and_pmap_asks_for_all_at_once() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    src = '(pmap (fn [id] (tool/refund id 1)) ["o1" "o2" "o3"])'
    r = s.run(src)
    assert [(p.id, p.args) for p in r.pending] == [
        ("0.0.0", ["o1", 1]),
        ("0.1.0", ["o2", 1]),
        ("0.2.0", ["o3", 1]),
    ]
    r = s.resume(r, {"0.1.0": True})
    assert [p.id for p in r.pending] == ["0.0.0", "0.2.0"]
    assert shop.calls == [("refund", "o2", 1)]
    r = s.resume(r, {"0.0.0": True, "0.2.0": ptc.Reject("no")})
    assert isinstance(r.error, ptc.RejectedError)
    assert sorted(shop.calls) == [("refund", "o1", 1), ("refund", "o2", 1)]


def test_unknown_ids_and_finished_runs_are_refused() -> None:
    s = ptc.Session(tools=Shop().tools())
    r = s.run(REFUNDS)
    with pytest.raises(ValueError, match=r"no pending call has id '9' \(pending: 2\)"):
        s.resume(r, {"9": True})
    with pytest.raises(TypeError, match="the decision for '2' is True, False"):
        s.resume(r, {"2": "yes"})
    done = s.run("(+ 1 2)")
    with pytest.raises(ValueError, match="this run did not stop at a pending call"):
        s.resume(done, {})
    with pytest.raises(TypeError, match="resume takes a Result or a Continuation"):
        s.resume("(+ 1 2)", {})  # type: ignore[arg-type]


def test_a_policy_decides_where_it_can_and_asks_for_the_rest() -> None:
    shop = Shop()

    def policy(call: ptc.PendingCall) -> Any:
        if call.tool == "refund":
            return True if call.args[1] < 50 else None
        return None

    s = ptc.Session(tools=shop.tools(), approve=policy)
    r = s.run(REFUNDS)
    assert [(p.id, p.args) for p in r.pending] == [("3", ["o2", 120])]
    assert ("refund", "o1", 30) in shop.calls
    assert r.tool_calls[2].decision == "approved"
    r = s.resume(r, {"3": True})
    assert r.value == ["refunded 30 on o1", "refunded 120 on o2"]
    assert shop.calls.count(("refund", "o1", 30)) == 1


def test_policy_answers_false_reject_answer_and_async() -> None:
    s = ptc.Session(tools=Shop().tools(), approve=lambda call: False)
    r = s.run(REFUNDS)
    assert r.error.message == "tool/refund was not allowed: rejected by the approval policy"
    s = ptc.Session(tools=Shop().tools(), approve=lambda call: ptc.Answer("from policy"))
    assert s.run('(tool/ask-manager "q")').value == "from policy"

    async def later(call: ptc.PendingCall) -> Any:
        await asyncio.sleep(0)
        return ptc.Reject("async no")

    s = ptc.Session(tools=Shop().tools(), approve=later)
    assert s.run(REFUNDS).error.message == "tool/refund was not allowed: async no"
    # a policy that says True for a deferred tool cannot make ptc call it: the run asks
    s = ptc.Session(tools=Shop().tools(), approve=lambda call: True)
    assert s.run('(tool/ask-manager "q")').outcome == "pending"


def test_a_policy_that_fails_or_answers_nonsense_raises_and_changes_nothing() -> None:
    def broken(call: ptc.PendingCall) -> Any:
        raise KeyError("policy bug")

    s = ptc.Session(tools=Shop().tools(), approve=broken)
    with pytest.raises(KeyError, match="policy bug"):
        s.run(REFUNDS)
    assert s.definitions == []
    s = ptc.Session(tools=Shop().tools(), approve=lambda call: "sure")
    with pytest.raises(TypeError, match=r"an approval policy returns True, False, None"):
        s.run(REFUNDS)
    with pytest.raises(TypeError, match="approve must be a callable"):
        ptc.Session(tools=Shop().tools(), approve="yes")  # type: ignore[arg-type]


def test_an_approved_plan_runs_what_it_covers_and_stops_at_the_rest() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    plan = s.plan(REFUNDS)
    r = s.run(REFUNDS, approved=plan)
    assert r.outcome == "value"
    assert r.value == ["refunded 30 on o1", "refunded 120 on o2"]
    assert [c.decision for c in r.tool_calls] == [None, None, "approved", "approved"]
    # a plan whose refund site allows one call covers the first refund only
    import dataclasses

    edited = dataclasses.replace(
        plan,
        calls=tuple(
            dataclasses.replace(c, bound=1) if c.tool == "refund" else c for c in plan.calls
        ),
    )
    r = s.run(REFUNDS, approved=edited)
    assert [(p.id, p.args) for p in r.pending] == [("3", ["o2", 120])]
    # a plan with a literal argument covers only that argument
    src = '(tool/refund "o1" 30) (tool/refund "o2" 120)'
    narrow = s.plan('(tool/refund "o1" 30)')
    r = s.run(src, approved=narrow)
    assert [(p.id, p.args) for p in r.pending] == [("1", ["o2", 120])]
    with pytest.raises(TypeError, match=r"approved= takes a ptc\.Plan"):
        s.run(src, approved={"refund": True})


def test_a_continuation_goes_through_json_and_checks_its_seal() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    r = s.run(REFUNDS)
    text = r.continuation.to_json()
    body = json.loads(text)
    assert (body["format"], body["version"]) == ("ptc-continuation", 1)
    assert body["program"] == REFUNDS
    assert [c["id"] for c in body["calls"]] == ["0", "1"]
    assert body["calls"][0]["result"] == {"m": [[{"k": "id"}, "o1"], [{"k": "amount"}, 30]]}
    assert body["pending"] == [
        {
            "id": "2",
            "tool": "refund",
            "args": ["o1", 30],
            "line": 3,
            "column": 25,
            "interrupted": False,
        }
    ]
    assert set(body["seal"]) == {"sha256"}
    cont = ptc.Continuation.from_json(text)
    assert ptc.Continuation.from_json(text.encode()) == cont
    r2 = s.resume(
        cont,
        {
            "2": True,
        },
    )
    assert [p.id for p in r2.pending] == ["3"]

    def broken(reason: str, t: str, key: Any = None) -> None:
        with pytest.raises(ptc.ContinuationError, match=reason):
            ptc.Continuation.from_json(t, key=key)

    broken("not valid JSON, or cut short", text[: len(text) // 2])
    broken("not a ptc continuation", "[1, 2]")
    tampered = text.replace('"amount"},30]', '"amount"},3]')
    assert tampered != text
    broken("the continuation's seal does not match: it was changed", tampered)
    other = json.loads(text)
    other["version"] = 2
    broken("continuation format version 2; this ptc reads version 1", json.dumps(other))
    del other["seal"]
    other["version"] = 1
    broken("the continuation has no seal", json.dumps(other))


def test_a_key_seals_the_continuation_against_tampering() -> None:
    s = ptc.Session(tools=Shop().tools())
    r = s.run(REFUNDS)
    signed = r.continuation.to_json(key="s3cret")
    assert set(json.loads(signed)["seal"]) == {"hmac-sha256"}
    cont = ptc.Continuation.from_json(signed, key=b"s3cret")
    assert [p.id for p in cont.pending] == ["2"]
    with pytest.raises(ptc.ContinuationError, match="the key does not match, or it was changed"):
        ptc.Continuation.from_json(signed, key="other")
    with pytest.raises(ptc.ContinuationError, match="sealed with a key: pass key="):
        ptc.Continuation.from_json(signed)
    # someone who rewrote the record and its checksum cannot pass it off as signed
    forged = json.loads(signed)
    forged["calls"][1]["result"]["m"][1][1] = 10  # o2's amount: under the policy's 50
    del forged["seal"]
    body = ptc.approvals._canonical(forged)
    forged["seal"] = ptc.approvals._seal(body, None)
    with pytest.raises(ptc.ContinuationError, match="not sealed with a key, and a key was given"):
        ptc.Continuation.from_json(json.dumps(forged), key="s3cret")


def test_an_edited_program_or_record_never_gives_a_wrong_result() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    r = s.run(REFUNDS)
    body = json.loads(r.continuation.to_json())

    def resealed(b: dict[str, Any]) -> ptc.Continuation:
        b = dict(b)
        b.pop("seal", None)
        b["seal"] = ptc.approvals._seal(ptc.approvals._canonical(b), None)
        return ptc.Continuation.from_json(json.dumps(b))

    edited = dict(body, program=REFUNDS.replace('["o1" "o2"]', '["o2" "o1"]'))
    with pytest.raises(
        ptc.ReplayDiverged,
        match=r"left its record at call 0: it called "
        r'tool/get-order with \["o2"\] where the record has \["o1"\]',
    ):
        s.resume(resealed(edited), {"2": True})
    # a record claiming a refund happened without a decision is refused before anything runs
    claimed = json.loads(json.dumps(body))
    claimed["calls"].append(
        {"id": "2", "tool": "refund", "args": ["o1", 30], "how": "called", "result": "ok"}
    )
    with pytest.raises(ptc.ContinuationError, match="claims a decision the host did not give"):
        s.resume(resealed(claimed), {})
    assert ("refund", "o1", 30) not in shop.calls
    # a continuation resumed in a Session in another state
    other = ptc.Session(tools=Shop().tools(), data={"x": 1})
    with pytest.raises(ptc.ContinuationError, match=r"data, definitions or \*1\.\.\*3 are not"):
        other.resume(r.continuation, {"2": True})
    s.run("(def y 1)")
    with pytest.raises(ptc.ContinuationError, match="data, definitions"):
        s.resume(r.continuation, {"2": True})


def test_the_clock_is_fixed_or_recorded_and_replayed() -> None:
    fixed = ptc.Session(clock=datetime.datetime(2031, 5, 4, 6, 7, 8, tzinfo=datetime.UTC))
    assert fixed.run("(.getTime (java.util.Date.))").value == 1935641228000
    assert ptc.Session(clock=1_000).run("(System/currentTimeMillis)").value == 1_000
    with pytest.raises(TypeError, match="a clock gives a datetime or milliseconds"):
        ptc.Session(clock="now").run("(System/currentTimeMillis)")
    ticks = iter(range(1_000, 100_000, 1_000))
    shop = Shop()
    s = ptc.Session(tools=shop.tools(), clock=lambda: next(ticks))
    src = """
    (def t0 (System/currentTimeMillis))
    (tool/refund "o1" 1)
    (def t1 (System/currentTimeMillis))
    [t0 t1]"""
    r = s.run(src)
    assert r.outcome == "pending"
    r = s.resume(r, {"0": True})
    # t0 is the reading of the first run (1000), not a new one; t1 is read once, now
    assert r.value == [1_000, 2_000]
    assert json.loads(json.dumps(s.run("(System/currentTimeMillis)").value)) == 3_000


def test_a_continuation_resumes_in_a_new_process() -> None:
    s = ptc.Session(tools=Shop().tools(), data={"ids": ["o1", "o2"]})
    src = "(def n (count data/ids)) (tool/refund (first data/ids) n)"
    r = s.run(src)
    text = r.continuation.to_json(key="k")
    script = textwrap.dedent(
        """
        import sys, ptc
        calls = []
        def refund(id, amount):
            calls.append((id, amount))
            return "ok " + id
        s = ptc.Session(tools={"refund": ptc.Tool(refund, approval=True)},
                        data={"ids": ["o1", "o2"]})
        cont = ptc.Continuation.from_json(sys.stdin.read(), key="k")
        r = s.resume(cont, {cont.pending[0].id: True})
        print(r.outcome, r.value, calls, [d.name for d in s.definitions])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "value ok o1 [('o1', 2)] ['n']"


def test_tool_values_and_earlier_definitions_stop_too() -> None:
    shop = Shop()
    s = ptc.Session(tools=shop.tools(), approve=lambda c: True)
    s.run("(defn pay [id] (tool/refund id 5))")
    s2 = ptc.Session(tools=shop.tools())
    s2.run("(defn pay [id] (tool/refund id 5))")
    r = s2.run('(map pay ["o1"])')
    [p] = r.pending
    assert (p.tool, p.args, p.line, p.column) == ("refund", ["o1", 5], 1, 16)
    r = s2.run('(map tool/refund ["o1"] [7])')
    [p] = r.pending
    assert (p.args, p.line, p.column) == (["o1", 7], None, None)
    assert s2.resume(r, {p.id: True}).value == ["refunded 7 on o1"]


def test_max_tool_calls_counts_replayed_calls_as_the_uninterrupted_run_does() -> None:
    s = ptc.Session(tools=Shop().tools(), limits=ptc.Limits(max_tool_calls=3))
    r = s.run(REFUNDS)
    assert r.outcome == "pending"
    # the fourth call is refused before it could stop the run, as in a run without approvals
    r = s.resume(r, {"2": True})
    assert r.outcome == "error"
    assert isinstance(r.error, ptc.ToolLimitError)
    assert [c.id for c in r.tool_calls] == ["0", "1", "2"]


def test_hostile_continuations_are_refused_with_where_they_are_wrong() -> None:
    s = ptc.Session(tools=Shop().tools())
    good = json.loads(s.run(REFUNDS).continuation.to_json())

    def load(edit: Any) -> ptc.Continuation:
        b = json.loads(json.dumps(good))
        edit(b)
        b.pop("seal", None)
        b["seal"] = ptc.approvals._seal(ptc.approvals._canonical(b), None)
        return ptc.Continuation.from_json(json.dumps(b))

    def refused(edit: Any, reason: str) -> None:
        with pytest.raises(ptc.ContinuationError, match=reason):
            load(edit)

    def deep(b: dict[str, Any]) -> None:
        v: Any = 1
        for _ in range(950):
            v = [v]
        b["calls"][0]["result"] = v

    refused(deep, r"calls\[0\]\.result(\[0\])+: nested more than 900 levels deep")
    refused(
        lambda b: b["calls"][0].update(result={"zz": 1}), r'calls\[0\]\.result: unknown tag "zz"'
    )
    refused(lambda b: b["calls"][1].pop("how"), r'calls\[1\]: no "how"')
    refused(lambda b: b["calls"][1].update(result=2**70), r"calls\[1\]\.result: an integer out")
    refused(lambda b: b["calls"][1].update(how="maybe"), r'calls\[1\]\.how: unknown "maybe"')
    refused(lambda b: b["calls"].append(b["calls"][0]), "a second entry for call 0")
    refused(lambda b: b["pending"][0].pop("args"), r"pending\[0\]\.args: expected a list")
    refused(lambda b: b.update(limits={"fuel": "lots"}), "'limits' is not a mapping")
    refused(lambda b: b.update(clock=[["t0"]]), "'clock' is not a list of")
    # 100,000 levels of JSON nesting: refused without a RecursionError escaping
    with pytest.raises(ptc.ContinuationError, match="nested too deeply"):
        ptc.Continuation.from_json('{"format": "ptc-continuation", "x": ' + "[" * 100_000)
    with pytest.raises(ptc.ContinuationError, match="not UTF-8"):
        ptc.Continuation.from_json(b"\xff\xfe")


def test_a_record_cannot_carry_a_decision_or_a_deferred_call_in_flight() -> None:
    """Decisions come from the host at each resume; a record that claims one (or claims ptc
    was calling a deferred tool) is refused, even with a valid checksum."""
    shop = Shop()
    s = ptc.Session(tools=shop.tools())
    r = s.run('(tool/refund "o1" 30)')
    body = json.loads(r.continuation.to_json())

    def resealed(edit: Any) -> ptc.Continuation:
        b = json.loads(json.dumps(body))
        edit(b)
        b.pop("seal", None)
        b["seal"] = ptc.approvals._seal(ptc.approvals._canonical(b), None)
        return ptc.Continuation.from_json(json.dumps(b))

    forged = [
        {"id": "0", "tool": "refund", "how": "approved", "approved": True},
        {"id": "0", "tool": "refund", "how": "approved", "result": "ok", "decision": True},
        {"id": "0", "tool": "ask-manager", "how": "approved", "interrupted": True},
    ]
    for record in forged:
        cont = resealed(lambda b, record=record: b["calls"].append(record))
        with pytest.raises(ptc.ContinuationError, match="claims a decision the host did not"):
            s.resume(cont, {})
    assert shop.calls == []


def test_an_interrupted_approved_call_of_an_idempotent_tool_stays_approved() -> None:
    calls = []

    def refund(id: str) -> str:
        calls.append(id)
        return "ok " + id

    s = ptc.Session(tools={"refund": ptc.Tool(refund, approval=True, idempotent=True)})
    state = s._state_fingerprint()
    cont = ptc.Continuation(
        program='(tool/refund "a") (tool/refund "b")',
        limits={},
        state=state,
        calls=({"id": "0", "tool": "refund", "how": "approved", "interrupted": True},),
        clock=(),
        pending_records=(),
    )
    r = s.resume(cont, {})
    assert [p.id for p in r.pending] == ["1"] and calls == ["a"]
    assert r.tool_calls[0].decision == "approved"
    # the next resume reads that record as decided, as it was
    r = s.resume(r, {"1": True})
    assert r.value == "ok b" and calls == ["a", "b"]


def test_more_hostile_continuations_are_typed_errors() -> None:
    s = ptc.Session(tools=Shop().tools())
    good = json.loads(s.run(REFUNDS).continuation.to_json())
    with pytest.raises(ptc.ContinuationError, match="a value JSON has not"):
        ptc.Continuation.from_json('{"format":"ptc-continuation","version":1,"x":NaN}')

    def load(edit: Any) -> None:
        b = json.loads(json.dumps(good))
        edit(b)
        b.pop("seal", None)
        b["seal"] = ptc.approvals._seal(ptc.approvals._canonical(b), None)
        ptc.Continuation.from_json(json.dumps(b))

    with pytest.raises(ptc.ContinuationError, match="cannot be read"):
        load(lambda b: b["pending"][0].update(line=2**40))
    with pytest.raises(ptc.ContinuationError, match="'fuel' = -1 is not a limit of ptc"):
        load(lambda b: b["limits"].update(fuel=-1))
    with pytest.raises(ptc.ContinuationError, match="'speed' = 1 is not a limit of ptc"):
        load(lambda b: b["limits"].update(speed=1))
