"""Watching a run while it happens: callbacks, the ``ptc`` logger, OpenTelemetry spans and
checkpoints, fed by one :class:`Observer` per run.

- ``on_llm_call(LLMCall)``: after every LLM request (answered or failed);
- ``on_tool_call(ToolCallEvent)``: after every tool call, on the thread that made it (a
  ``pmap`` branch's, the evaluation's worker under ``arun``);
- ``on_turn(Turn)``: after every completed turn, before the next LLM request;
- ``logging.getLogger("ptc")``: one INFO line per turn, one per finished run; DEBUG lines per
  LLM and tool call;
- OpenTelemetry (``telemetry=True``; needs only ``opentelemetry-api``, a no-op without an SDK):
  an ``invoke_agent`` span per run, with a ``chat`` span per LLM request and an
  ``execute_tool`` span per tool call under it, named and attributed after the GenAI semantic
  conventions (``gen_ai.operation.name``, ``gen_ai.request.model``, ``gen_ai.usage.*``,
  ``gen_ai.tool.name``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptc.checkpoint import Sink
    from ptc.llm import LLMReply
    from ptc.step import Step
    from ptc.turn import Turn

logger = logging.getLogger("ptc")


@dataclass(frozen=True)
class LLMCall:
    """One LLM request: the messages sent, the reply (or the error), time and retries."""

    number: int
    messages: Sequence[Mapping[str, str]]
    reply: LLMReply | None
    error: BaseException | None
    duration_ms: float
    retries: int = 0

    @property
    def usage(self) -> Mapping[str, int]:
        return self.reply.usage if self.reply is not None else {}


@dataclass(frozen=True)
class ToolCallEvent:
    """One tool call as the program made it: arguments, result or error, time."""

    name: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    result: Any = None
    error: BaseException | None = None
    duration_ms: float = 0.0


def _model_of(llm: Any) -> str | None:
    model = getattr(llm, "model", None)
    return model if isinstance(model, str) else None


def _provider_of(llm: Any) -> str | None:
    provider = getattr(llm, "provider", None)
    return provider if isinstance(provider, str) else None


class _Spans:
    """OpenTelemetry spans of one run (the API only: without an SDK they record nothing)."""

    def __init__(self, agent_name: str, llm: Any) -> None:
        from ptc.llm._adapter import require

        trace = require("opentelemetry.trace", "otel")
        self._trace = trace
        self.tracer = trace.get_tracer("ptc")
        self.model = _model_of(llm)
        self.provider = _provider_of(llm)
        self.run = self.tracer.start_span(
            f"invoke_agent {agent_name}",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_name},
        )
        self.context = trace.set_span_in_context(self.run)

    def child(self, name: str, attributes: dict[str, Any]) -> Any:
        return self.tracer.start_span(name, context=self.context, attributes=attributes)

    def llm_started(self) -> Any:
        attrs: dict[str, Any] = {"gen_ai.operation.name": "chat"}
        if self.model:
            attrs["gen_ai.request.model"] = self.model
        if self.provider:
            attrs["gen_ai.provider.name"] = self.provider
        return self.child(f"chat {self.model}" if self.model else "chat", attrs)

    def llm_ended(self, span: Any, call: LLMCall) -> None:
        u = call.usage
        if "input_tokens" in u:
            span.set_attribute("gen_ai.usage.input_tokens", u["input_tokens"])
        if "output_tokens" in u:
            span.set_attribute("gen_ai.usage.output_tokens", u["output_tokens"])
        if "cache_read_tokens" in u:
            span.set_attribute("gen_ai.usage.cache_read.input_tokens", u["cache_read_tokens"])
        if "cache_write_tokens" in u:
            span.set_attribute("gen_ai.usage.cache_creation.input_tokens", u["cache_write_tokens"])
        if call.retries:
            span.set_attribute("ptc.llm.retries", call.retries)
        if call.error is not None:
            self._failed(span, call.error)
        span.end()

    def tool_started(self, name: str) -> tuple[Any, Any]:
        """A span for a tool call, made current on the calling thread while the tool runs (a
        sub-agent or a traced client inside the tool nests under it)."""
        from opentelemetry import context

        span = self.child(
            f"execute_tool {name}",
            {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name},
        )
        return span, context.attach(self._trace.set_span_in_context(span))

    def tool_ended(self, handle: tuple[Any, Any], event: ToolCallEvent) -> None:
        from opentelemetry import context

        span, token = handle
        context.detach(token)
        if event.error is not None:
            self._failed(span, event.error)
        span.end()

    def _failed(self, span: Any, error: BaseException) -> None:
        span.record_exception(error)
        span.set_attribute("error.type", type(error).__name__)
        span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, str(error)))

    def finished(self, step: Step) -> None:
        self.run.set_attribute("gen_ai.usage.input_tokens", step.usage.input_tokens)
        self.run.set_attribute("gen_ai.usage.output_tokens", step.usage.output_tokens)
        self.run.set_attribute("ptc.turns", len(step.turns))
        if step.error is not None:
            self.run.set_attribute("error.type", step.error.type)
            self.run.set_status(
                self._trace.Status(self._trace.StatusCode.ERROR, step.error.message)
            )
        self.run.end()


@dataclass
class Hooks:
    """What a SubAgent was asked to report to."""

    on_turn: Callable[[Turn], Any] | None = None
    on_llm_call: Callable[[LLMCall], Any] | None = None
    on_tool_call: Callable[[ToolCallEvent], Any] | None = None
    checkpoint: Sink | None = None
    telemetry: bool = False


class Observer:
    """Reports one run's events to its hooks, the logger and (opt-in) OpenTelemetry."""

    def __init__(self, hooks: Hooks, run_id: str, agent_name: str, llm: Any) -> None:
        self.hooks = hooks
        self.run_id = run_id
        self.spans = _Spans(agent_name, llm) if hooks.telemetry else None
        self._llm_span: Any = None
        self._llm_started = 0.0

    # LLM requests
    def llm_started(self) -> None:
        self._llm_started = time.perf_counter()
        if self.spans is not None:
            self._llm_span = self.spans.llm_started()

    def llm_ended(
        self,
        number: int,
        messages: Sequence[Mapping[str, str]],
        reply: LLMReply | None,
        error: BaseException | None,
        retries: int,
    ) -> None:
        ms = (time.perf_counter() - self._llm_started) * 1000
        call = LLMCall(number, messages, reply, error, ms, retries)
        if self.spans is not None and self._llm_span is not None:
            self.spans.llm_ended(self._llm_span, call)
            self._llm_span = None
        if logger.isEnabledFor(logging.DEBUG):
            what = (
                f"error {type(error).__name__}: {error}" if error else f"usage {dict(call.usage)}"
            )
            logger.debug("run %s: LLM call %d in %.0f ms, %s", self.run_id, number, ms, what)
        if self.hooks.on_llm_call is not None:
            self.hooks.on_llm_call(call)

    # tool calls
    def tool_started(self, name: str) -> Any:
        return self.spans.tool_started(name) if self.spans is not None else None

    def tool_call(self, event: ToolCallEvent, handle: Any) -> None:
        if self.spans is not None and handle is not None:
            self.spans.tool_ended(handle, event)
        if logger.isEnabledFor(logging.DEBUG):
            outcome = f"error {event.error!r}" if event.error is not None else "ok"
            logger.debug(
                "run %s: tool %s in %.1f ms, %s",
                self.run_id,
                event.name,
                event.duration_ms,
                outcome,
            )
        if self.hooks.on_tool_call is not None:
            self.hooks.on_tool_call(event)

    def wants_tool_calls(self) -> bool:
        return (
            self.spans is not None
            or self.hooks.on_tool_call is not None
            or logger.isEnabledFor(logging.DEBUG)
        )

    # turns and the run
    def turn(self, turn: Turn, snapshot: Callable[[], Step]) -> None:
        if logger.isEnabledFor(logging.INFO):
            status = (
                "returned"
                if turn.returned
                else "failed"
                if turn.failed
                else "ok"
                if turn.success
                else f"error {turn.error.type if turn.error else ''}"
            )
            logger.info(
                "run %s: turn %d %s (%d tool calls, llm %.0f ms, program %.1f ms)",
                self.run_id,
                turn.number,
                status,
                len(turn.tool_calls),
                turn.llm_ms,
                turn.run_ms,
            )
        if self.hooks.checkpoint is not None:
            from ptc.checkpoint import save_to

            save_to(self.hooks.checkpoint, snapshot(), self.run_id)
        if self.hooks.on_turn is not None:
            self.hooks.on_turn(turn)

    def finished(self, step: Step) -> None:
        if self.spans is not None:
            self.spans.finished(step)
        logger.info(
            "run %s: %s after %d turns (%d LLM calls, %d input / %d output tokens)",
            self.run_id,
            "ok" if step.ok else f"error {step.error.type if step.error else ''}",
            len(step.turns),
            step.usage.llm_calls,
            step.usage.input_tokens,
            step.usage.output_tokens,
        )
        if self.hooks.checkpoint is not None:
            from ptc.checkpoint import save_to

            save_to(self.hooks.checkpoint, step, self.run_id)
