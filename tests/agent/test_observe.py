"""Watching a run: on_turn / on_llm_call / on_tool_call, iter() and aiter(), the `ptc` logger,
and OpenTelemetry spans recorded by the SDK's in-memory exporter (issue 10)."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import ptc
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from ptc.llm import AsyncScriptedLLM, ScriptedLLM
from ptc.observe import LLMCall, ToolCallEvent


def lookup(sku: str) -> dict[str, Any]:
    """Stock for a sku."""
    if sku == "missing":
        raise KeyError(sku)
    return {"sku": sku, "stock": 3}


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


REPLIES = [
    clj('(def a (tool/lookup "x1"))'),
    clj('(tool/lookup "missing")'),
    clj("(return (:stock a))"),
]


def agent(replies: list[str] | None = None, **kw: Any) -> ptc.SubAgent:
    return ptc.SubAgent(
        prompt="How many x1 are in stock?",
        llm=ScriptedLLM(list(replies or REPLIES)),
        tools=[lookup],
        **kw,
    )


def test_callbacks_see_every_llm_call_tool_call_and_turn_in_order() -> None:
    events: list[tuple[str, Any]] = []
    step = agent(
        on_turn=lambda t: events.append(("turn", t.number)),
        on_llm_call=lambda c: events.append(("llm", c.number)),
        on_tool_call=lambda c: events.append(("tool", (c.name, c.args, c.error is None))),
    ).run()
    assert step.ok and step.value == 3
    assert events == [
        ("llm", 1),
        ("tool", ("lookup", ("x1",), True)),
        ("turn", 1),
        ("llm", 2),
        ("tool", ("lookup", ("missing",), False)),
        ("turn", 2),
        ("llm", 3),
        ("turn", 3),
    ]


def test_the_records_handed_to_callbacks() -> None:
    calls: list[LLMCall] = []
    tools: list[ToolCallEvent] = []
    step = agent(on_llm_call=calls.append, on_tool_call=tools.append).run()
    assert [list(c.messages) for c in calls] == [list(m) for m in step.messages]
    assert [c.reply.content for c in calls if c.reply] == REPLIES
    assert all(c.error is None for c in calls)
    assert tools[0].result == {"sku": "x1", "stock": 3}
    assert isinstance(tools[1].error, KeyError) and tools[1].result is None


def test_a_failed_llm_call_is_reported() -> None:
    calls: list[LLMCall] = []
    step = agent([RuntimeError("provider down")], on_llm_call=calls.append).run()
    assert not step.ok
    (call,) = calls
    assert isinstance(call.error, RuntimeError) and call.reply is None


def test_iter_yields_turns_as_they_complete_then_the_step() -> None:
    seen: list[int] = []
    run = agent(on_turn=lambda t: seen.append(t.number)).iter()
    numbers = []
    for turn in run:
        numbers.append(turn.number)
        assert seen[-1] == turn.number  # on_turn fired before the turn was yielded
    assert numbers == [1, 2, 3]
    assert run.step is not None and run.step.ok and run.step.value == 3
    assert [t.number for t in run.step.turns] == numbers


def test_aiter_yields_turns_as_they_complete_then_the_step() -> None:
    async def main() -> tuple[list[int], ptc.Step | None]:
        a = ptc.SubAgent(prompt="p", llm=AsyncScriptedLLM(list(REPLIES)), tools=[lookup])
        run = a.aiter()
        numbers = [turn.number async for turn in run]
        return numbers, run.step

    numbers, step = asyncio.run(main())
    assert numbers == [1, 2, 3]
    assert step is not None and step.value == 3


def test_iter_refuses_an_async_llm() -> None:
    a = ptc.SubAgent(prompt="p", llm=AsyncScriptedLLM(list(REPLIES)))
    with pytest.raises(RuntimeError, match="aiter"):
        a.iter()


def test_the_logger_has_one_info_line_per_turn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="ptc"):
        step = agent().run()
    lines = [r.getMessage() for r in caplog.records if r.name == "ptc"]
    turns = [line for line in lines if ": turn " in line]
    assert len(turns) == 3
    assert "turn 1 ok (1 tool calls" in turns[0]
    assert "turn 2 error tool_error" in turns[1]
    assert "turn 3 returned" in turns[2]
    assert lines[-1].endswith("ok after 3 turns (3 LLM calls, 0 input / 0 output tokens)")
    assert step.ok


def test_tool_callbacks_come_from_parallel_branches_too() -> None:
    threads: set[int] = set()
    names: list[str] = []
    lock = threading.Lock()

    def record(e: ToolCallEvent) -> None:
        with lock:
            threads.add(threading.get_ident())
            names.append(e.args[0])

    step = agent(
        [clj('(return (pmap #(:stock (tool/lookup %)) ["a" "b" "c"]))')], on_tool_call=record
    ).run()
    assert step.value == [3, 3, 3]
    assert sorted(names) == ["a", "b", "c"]
    # the branches' calls are reported from the branches' threads, not the driving one
    assert threads - {threading.get_ident()}


@pytest.fixture
def spans() -> Any:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    # the global provider can be set once per process: tests share it, each reads its spans
    trace.set_tracer_provider(provider)
    real = trace.get_tracer_provider()
    if real is not provider:  # set by an earlier test: attach this exporter to that one
        real.add_span_processor(SimpleSpanProcessor(exporter))  # type: ignore[attr-defined]
    yield exporter
    exporter.clear()


def test_telemetry_spans_follow_the_genai_conventions(spans: InMemorySpanExporter) -> None:
    llm = ScriptedLLM(
        [
            {"content": REPLIES[0], "usage": {"input_tokens": 100, "output_tokens": 10}},
            {"content": REPLIES[1], "usage": {"input_tokens": 120, "output_tokens": 12}},
            {"content": REPLIES[2], "usage": {"input_tokens": 130, "output_tokens": 8}},
        ]
    )
    step = ptc.SubAgent(
        prompt="p", llm=llm, tools=[lookup], telemetry=True, name="stock-agent"
    ).run()
    assert step.ok
    finished = spans.get_finished_spans()
    by_name: dict[str, list[Any]] = {}
    for s in finished:
        by_name.setdefault(s.name, []).append(s)
    (run,) = by_name["invoke_agent stock-agent"]
    chats = by_name["chat"]
    tools = by_name["execute_tool lookup"]
    assert len(chats) == 3 and len(tools) == 2
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.usage.input_tokens"] == 350
    assert run.attributes["gen_ai.usage.output_tokens"] == 30
    assert [c.attributes["gen_ai.usage.input_tokens"] for c in chats] == [100, 120, 130]
    assert all(c.attributes["gen_ai.operation.name"] == "chat" for c in chats)
    assert all(t.attributes["gen_ai.tool.name"] == "lookup" for t in tools)
    assert tools[1].attributes["error.type"] == "KeyError"
    assert tools[1].status.status_code == trace.StatusCode.ERROR
    # every child span hangs under the run's span, in the run's trace
    for child in chats + tools:
        assert child.parent is not None and child.parent.span_id == run.context.span_id
        assert child.context.trace_id == run.context.trace_id


def test_telemetry_names_the_model_of_an_adapter(spans: InMemorySpanExporter) -> None:
    class Model:
        provider = "openai"
        model = "gpt-test"

        def __call__(self, messages: Any) -> str:
            return clj("(return 1)")

    ptc.SubAgent(prompt="p", llm=Model(), telemetry=True).run()
    (chat,) = [s for s in spans.get_finished_spans() if s.name.startswith("chat")]
    assert chat.name == "chat gpt-test"
    assert chat.attributes["gen_ai.request.model"] == "gpt-test"
    assert chat.attributes["gen_ai.provider.name"] == "openai"


def test_without_telemetry_no_spans(spans: InMemorySpanExporter) -> None:
    agent().run()
    assert spans.get_finished_spans() == ()


def test_telemetry_without_opentelemetry_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "opentelemetry.trace", None)
    with pytest.raises(ImportError, match=r"pip install 'ptc-runtime\[otel\]'"):
        agent(telemetry=True).run()


def test_a_sub_agents_spans_nest_under_the_tool_call_that_ran_it(
    spans: InMemorySpanExporter,
) -> None:
    child = ptc.SubAgent(
        prompt="Say 7.", llm=ScriptedLLM([clj("(return 7)")]), telemetry=True, name="child"
    )
    parent = ptc.SubAgent(
        prompt="Ask the child.",
        llm=ScriptedLLM([clj("(return (tool/kid {}))")]),
        tools=[child.as_tool("kid")],
        telemetry=True,
        name="parent",
    )
    assert parent.run().value == 7
    by_name = {s.name: s for s in spans.get_finished_spans()}
    run, call, inner = (
        by_name["invoke_agent parent"],
        by_name["execute_tool kid"],
        by_name["invoke_agent child"],
    )
    assert call.parent is not None and call.parent.span_id == run.context.span_id
    assert inner.parent is not None and inner.parent.span_id == call.context.span_id
    assert inner.context.trace_id == run.context.trace_id


def test_telemetry_without_an_sdk_costs_nothing_and_records_nothing() -> None:
    """Only opentelemetry-api in a fresh process (no provider set): the spans are the API's
    non-recording ones and the run is unchanged."""
    import subprocess
    import sys

    code = (
        "import ptc\n"
        "from opentelemetry import trace\n"
        "from ptc.llm import ScriptedLLM\n"
        "step = ptc.SubAgent(prompt='p', llm=ScriptedLLM(['```clojure\\n(return 5)\\n```']),"
        " telemetry=True).run()\n"
        "span = trace.get_tracer('x').start_span('probe')\n"
        "print(step.value, span.is_recording(), type(trace.get_tracer_provider()).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.split() == ["5", "False", "ProxyTracerProvider"]


def test_times_measure_the_llm_and_the_program() -> None:
    """`llm_ms`, `LLMCall.duration_ms` and `run_ms` measure what they name: an LLM that takes
    40 ms and a tool that takes 30 ms show up in them."""
    import time

    script = iter([clj("(return (tool/slow))")])

    def slow_llm(messages: Any) -> str:
        time.sleep(0.04)
        return next(script)

    def slow() -> int:
        """Takes a while."""
        time.sleep(0.03)
        return 1

    calls: list[LLMCall] = []
    step = ptc.SubAgent(
        prompt="Call the slow tool", llm=slow_llm, tools=[slow], on_llm_call=calls.append
    ).run()
    assert step.ok and step.value == 1
    (turn,) = step.turns
    assert turn.llm_ms >= 40 and calls[0].duration_ms >= 40
    assert turn.run_ms >= 30 and turn.tool_calls[0].duration_ms >= 30
