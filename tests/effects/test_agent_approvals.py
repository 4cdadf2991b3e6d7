"""Issue 32 §3: an agent's turn stops at calls waiting for the host; the checkpoint holds it;
``resume(..., decisions=...)`` finishes the turn and goes on. The LLM never sees the pause."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import ptc
import pytest
from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint
from ptc.llm import ScriptedLLM

TURN_1 = """```clojure
(def orders (mapv tool/get-order ["o1" "o2"]))
(println "orders" (count orders))
```"""
TURN_2 = """```clojure
(def refunds (mapv (fn [o] (tool/refund (:id o) (:amount o))) orders))
(return {:refunded (count refunds) :first (first refunds)})
```"""


class Shop:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def tools(self) -> list[Any]:
        def get_order(id: str) -> dict[str, Any]:
            """The order with this id."""
            self.calls.append(("get-order", id))
            return {"id": id, "amount": {"o1": 30, "o2": 120}[id]}

        def refund(id: str, amount: int) -> str:
            """Refund an order."""
            self.calls.append(("refund", id, amount))
            return f"refunded {amount}"

        return [get_order, ptc.Tool(refund, effect="write", approval=True)]


def agent(shop: Shop, llm: Any, checkpoint: Any = None, approve: Any = None) -> ptc.SubAgent:
    return ptc.SubAgent(
        "Refund the orders.",
        llm=llm,
        tools=shop.tools(),
        max_turns=4,
        checkpoint=checkpoint,
        approve=approve,
    )


def small(call: ptc.PendingCall) -> Any:
    return True if call.args[1] < 50 else None


def test_a_pending_turn_stops_the_run_and_resume_finishes_it() -> None:
    shop = Shop()
    llm = ScriptedLLM([TURN_1, TURN_2])
    a = agent(shop, llm, approve=small)
    step = a.run()
    assert step.outcome == "pending"
    assert not step.ok and step.error is None
    assert len(step.turns) == 1 and step.suspended is not None
    assert step.suspended.number == 2
    assert [p.describe() for p in step.pending] == ['(tool/refund "o2" 120)']
    assert shop.calls == [("get-order", "o1"), ("get-order", "o2"), ("refund", "o1", 30)]
    # the Step goes through JSON and resumes
    saved = ptc.Step.from_json(step.to_json())
    assert saved.outcome == "pending" and saved.suspended == step.suspended
    done = a.resume(saved, decisions={step.pending[0].id: True})
    assert done.ok and done.outcome == "value"
    assert done.value == {"refunded": 2, "first": "refunded 30"}
    assert [t.number for t in done.turns] == [1, 2]
    assert [c.decision for c in done.turns[1].tool_calls] == ["approved", "approved"]
    # every tool once; the LLM was asked twice (the pause cost no request)
    assert shop.calls == [
        ("get-order", "o1"),
        ("get-order", "o2"),
        ("refund", "o1", 30),
        ("refund", "o2", 120),
    ]
    assert len(llm.calls) == 2
    # the messages of the resumed run are those of a run that never paused
    plain_shop = Shop()
    plain_llm = ScriptedLLM([TURN_1, TURN_2])
    plain = agent(plain_shop, plain_llm, approve=lambda call: True).run()
    assert plain.value == done.value
    assert plain_llm.calls == llm.calls

    def shown(t: ptc.Turn) -> Any:
        return (t.program, t.prints, t.result_text, [c.args_text for c in t.tool_calls])

    assert [shown(t) for t in plain.turns] == [shown(t) for t in done.turns]


def test_a_rejection_is_what_the_llm_sees_and_the_loop_goes_on() -> None:
    shop = Shop()
    fix = '```clojure\n(return {:refunded 1 :note "o2 needs a manager"})\n```'
    llm = ScriptedLLM([TURN_1, TURN_2, fix])
    a = agent(shop, llm, approve=small)
    step = a.run()
    done = a.resume(step, decisions={step.pending[0].id: ptc.Reject("over 100: ask a manager")})
    assert done.ok and done.value == {"refunded": 1, "note": "o2 needs a manager"}
    t2 = done.turns[1]
    assert t2.error is not None and t2.error.type == "rejected"
    assert t2.error.message == "tool/refund was not allowed: over 100: ask a manager"
    # the third request shows the model the rejection with its reason
    assert "tool/refund was not allowed: over 100: ask a manager" in llm.calls[2][-1]["content"]


def test_decisions_for_a_run_that_is_not_pending_are_refused() -> None:
    shop = Shop()
    a = agent(shop, ScriptedLLM(["```clojure\n(return 1)\n```"]))
    step = a.run()
    with pytest.raises(ValueError, match="the run is not waiting on any tool call"):
        a.resume(step, decisions={"0": True})


def _checkpoints(tmp_path: Path) -> list[Any]:
    out: list[Any] = [JsonlCheckpoint(tmp_path / "runs.jsonl"), SqliteCheckpoint(tmp_path / "r.db")]
    url = os.environ.get("PTC_TEST_POSTGRES_URL")
    if url:
        from ptc.history.pgstore import PostgresStore

        schema = f"approvals_{uuid.uuid4().hex[:8]}"
        out.append(PostgresStore(url, schema=schema).checkpoint())
    elif os.environ.get("PTC_REQUIRE_POSTGRES"):
        raise AssertionError("PTC_REQUIRE_POSTGRES is set but PTC_TEST_POSTGRES_URL is not")
    return out


def test_the_checkpoint_holds_a_pending_run_and_resume_goes_on(tmp_path: Path) -> None:
    for cp in _checkpoints(tmp_path):
        shop = Shop()
        a = agent(shop, ScriptedLLM([TURN_1, TURN_2]), checkpoint=cp, approve=small)
        step = a.run()
        assert step.outcome == "pending"
        loaded, run_id = cp.load()
        assert loaded.outcome == "pending", cp
        assert [p.id for p in loaded.pending] == [p.id for p in step.pending]
        # a new agent (as a new process would make) resumes from the checkpoint alone
        shop2 = Shop()
        b = agent(shop2, ScriptedLLM([]), checkpoint=cp, approve=small)
        done = b.resume(cp, run_id, decisions={loaded.pending[0].id: True})
        assert done.ok and done.value == {"refunded": 2, "first": "refunded 30"}, cp
        # only the approved refund was called by the second agent: the rest was replayed
        assert shop2.calls == [("refund", "o2", 120)], cp
        again, _ = cp.load(run_id)
        assert again.ok and again.outcome == "value", cp


def _program_tool(shop: Shop) -> Any:
    from ptc.integrations import ProgramTool

    return ProgramTool(tools=shop.tools())


def test_a_program_tool_reports_a_pending_run_and_resumes_it() -> None:
    shop = Shop()
    t = _program_tool(shop)
    src = '(def o (tool/get-order "o2")) (println "asking") (tool/refund (:id o) (:amount o))'
    answer = t.answer(src)
    assert not answer.is_error
    assert answer.text == (
        "asking\nPending: the run is waiting for the host to decide 1 tool call: "
        '(tool/refund "o2" 120) (id 1)'
    )
    assert [p.id for p in answer.pending] == ["1"]
    done = t.resume(answer, {"1": True})
    assert (done.text, done.is_error, done.pending) == ('asking\n=> "refunded 120"', False, ())
    assert shop.calls == [("get-order", "o2"), ("refund", "o2", 120)]
    with pytest.raises(ValueError, match="not waiting on any tool call"):
        t.resume(done, {})


def test_a_pydantic_ai_tool_turns_approvals_into_deferred_tool_calls() -> None:
    import pydantic_ai
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    shop = Shop()
    t = _program_tool(shop)
    program = '(tool/refund "o1" (:amount (tool/get-order "o1")))'

    def model(messages: list[Any], info: AgentInfo) -> Any:
        returns = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("run_program", {"program": program}, "c1")])
        return ModelResponse(parts=[TextPart(f"done: {returns[0].content}")])

    agent = pydantic_ai.Agent(
        FunctionModel(model),
        tools=[t.pydantic_ai_tool()],
        output_type=[str, pydantic_ai.DeferredToolRequests],
    )
    first = agent.run_sync("Refund o1.")
    requests = first.output
    assert isinstance(requests, pydantic_ai.DeferredToolRequests)
    [call] = requests.approvals
    assert call.tool_call_id == "c1"
    assert requests.metadata["c1"] == {
        "pending": [{"id": "1", "tool": "refund", "call": '(tool/refund "o1" 30)'}]
    }
    assert shop.calls == [("get-order", "o1")]
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=pydantic_ai.DeferredToolResults(approvals={"c1": True}),
    )
    assert second.output == 'done: => "refunded 30"'
    assert shop.calls == [("get-order", "o1"), ("refund", "o1", 30)]  # get-order once


def test_the_trace_shows_pending_and_decided_calls() -> None:
    shop = Shop()
    a = agent(shop, ScriptedLLM([TURN_1, TURN_2]), approve=small)
    step = a.run()
    text = step.render("full")
    assert text.endswith(
        "--- turn 2 (PENDING: waiting for the host) ---\n"
        + TURN_2.removeprefix("```clojure\n").removesuffix("\n```")
        + '\n;; waits on 1  (tool/refund "o2" 120)'
        + "\n\n=> pending: decide the calls and resume the run"
    )
    page = step.to_html()
    assert "pending: waiting for the host to decide tool calls" in page
    assert "1  (tool/refund &quot;o2&quot; 120)" in page
    done = a.resume(step, decisions={"1": ptc.Reject("no")})
    text = done.render("full")
    assert ';; tool refund("o1" 30)  [approved]' in text
    assert ';; tool refund("o2" 120)  !! no  [rejected]' in text
    assert "[rejected]" in done.to_html()


def _specs(tmp_path: Path) -> list[str]:
    specs = [f"sqlite:{tmp_path / 'runs.db'}"]
    url = os.environ.get("PTC_TEST_POSTGRES_URL")
    if url:
        specs.append(f"postgres:{url}|refund_{uuid.uuid4().hex[:8]}")
    elif os.environ.get("PTC_REQUIRE_POSTGRES"):
        raise AssertionError("PTC_REQUIRE_POSTGRES is set but PTC_TEST_POSTGRES_URL is not")
    return specs


def test_the_worked_example_survives_sigkill_and_resumes_in_a_new_process(
    tmp_path: Path,
) -> None:
    """docs/EFFECTS.md: killed with SIGKILL while waiting for a person, resumed in a new
    process after the approval, and the same as a run that never waited."""
    import json
    import signal
    import subprocess
    import sys

    script = str(Path(__file__).with_name("refund_agent.py"))
    plain = subprocess.run(
        [sys.executable, script, "plain"], capture_output=True, text=True, timeout=120
    )
    assert plain.returncode == 0, plain.stderr
    expected = json.loads(plain.stdout)
    assert expected["value"] == {"refunded": 3, "total": 195}
    for spec in _specs(tmp_path):
        worker = subprocess.Popen(
            [sys.executable, script, "start", spec],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout is not None
        line = worker.stdout.readline()
        calls_line = worker.stdout.readline()
        assert line == 'pending 1 (tool/refund "o2" 120)\n', (line, worker.stderr)
        first_calls = json.loads(calls_line)["calls"]
        assert first_calls == [
            ["get-order", "o1"],
            ["get-order", "o2"],
            ["get-order", "o3"],
            ["refund", "o1", 30],
        ]
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        assert worker.returncode == -signal.SIGKILL
        resumed = subprocess.run(
            [sys.executable, script, "resume", spec, "1"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr
        out = json.loads(resumed.stdout)
        assert out["outcome"] == "value"
        assert out["value"] == expected["value"]
        # the new process called only what the first had not: no tool twice
        assert out["calls"] == [["refund", "o2", 120], ["refund", "o3", 45]]
        assert first_calls + out["calls"] == expected["calls"]


def test_a_sub_agent_that_would_wait_fails_its_parents_call_saying_why() -> None:
    shop = Shop()
    child = ptc.SubAgent(
        "Refund order {{id}}.",
        llm=ScriptedLLM(['```clojure\n(return (tool/refund "o2" 120))\n```']),
        tools=shop.tools(),
        max_turns=1,
    )
    parent = ptc.SubAgent(
        "Refund o2.",
        llm=ScriptedLLM(['```clojure\n(return (tool/refunder {:id "o2"}))\n```']),
        tools=[child.as_tool("refunder")],
        max_turns=1,
    )
    step = parent.run()
    assert step.error is not None
    assert (
        "sub-agent 'refunder' stopped at tool calls that wait for a decision "
        '((tool/refund "o2" 120)); a sub-agent used as a tool cannot wait'
    ) in step.error.message
    assert shop.calls == []


def _crash_specs(tmp_path: Path) -> list[str]:
    return [f"jsonl:{tmp_path / 'c.jsonl'}", *_specs(tmp_path)]


@pytest.mark.parametrize("idempotent", [False, True])
def test_a_tool_call_cut_by_a_crash_is_never_made_twice_without_a_decision(
    tmp_path: Path, idempotent: bool
) -> None:
    """The process dies inside `ship` (after `charge` returned). The resumed run answers
    `charge` from its record; `ship` is made again only when it is idempotent, else the run
    waits for the host, who answers it (it knows the parcel left)."""
    import json
    import subprocess
    import sys

    script = str(Path(__file__).with_name("crash_agent.py"))
    mode = "idempotent" if idempotent else "once"
    for spec in _crash_specs(tmp_path):
        env = {**os.environ, "CRASH_IN_SHIP": "1"}
        first = subprocess.run(
            [sys.executable, script, "start", spec, mode],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert first.returncode == -9, first.stderr  # killed inside ship
        env.pop("CRASH_IN_SHIP")
        args = [sys.executable, script, "resume", spec, mode]
        if not idempotent:
            args.append("shipped o1 (by hand)")
        second = subprocess.run(args, capture_output=True, text=True, timeout=120, env=env)
        assert second.returncode == 0, second.stderr
        out = json.loads(second.stdout)
        if idempotent:
            assert out["outcome"] == "value", (spec, out)
            assert out["value"] == ["charged 30", "shipped o1"]
            assert out["calls"] == [["ship", "o1"]]  # charge was not made again
        else:
            assert out["outcome"] == "pending", (spec, out)
            assert out["pending"] == [["1", "ship", True]]
            assert out["final"] == "value"
            assert out["value"] == ["charged 30", "shipped o1 (by hand)"]
            assert out["calls"] == []  # neither tool was made again


def test_the_trace_page_shows_each_turns_plan() -> None:
    step = agent(Shop(), ScriptedLLM([TURN_1, TURN_2]), approve=lambda call: True).run()
    page = step.to_html()
    # worked out from each turn's text alone: turn 2 cannot know how many orders turn 1 found
    assert (
        "Plan (before it ran)</div><pre>May call 1 tool: `get-order`.\n- `get-order` up to 2 "
        "times, unconditionally, at line 1, column 19, with arguments known only when it runs"
    ) in page
    assert (
        "May call 1 tool: `refund`.\n- `refund` any number of times, if reached, at line 1, "
        "column 28, with ? ?"
    ) in page
