"""LLM providers and what the agent loop does with their replies: a provider that trickles its
reply, rate limits with a `Retry-After` no server means, replies in content parts, and replies
too large to send back. The providers are loopback HTTP servers (tests/adapters/wire.py) that
the real SDKs talk to."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from . import case

ADAPTERS = Path(__file__).resolve().parents[2] / "adapters"
PROGRAM = "```clojure\n(return (count data/orders))\n```"
ORDERS = [{"id": 1}, {"id": 2}, {"id": 3}]


def _wire() -> object:
    sys.path.insert(0, str(ADAPTERS))
    import wire

    return wire


@case(seconds=60, memory_mb=500)
def case_a_trickling_provider_ends_at_the_request_deadline(tmp: Path) -> None:
    """A provider sends its reply one byte every 0.5 s (each byte well within the SDK's read
    timeout): `SubAgent.run()` and `arun()` end at the adapter's deadline with LLMTimeoutError,
    for openai, anthropic and litellm, headers trickled or body."""
    import asyncio
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import anthropic  # noqa: F401 (imported before the clock starts)
    import litellm
    import openai  # noqa: F401

    # litellm prints a banner to stdout on every error: the sync requests abandoned at their
    # deadline fail when the server stops, after this case has printed PASS
    litellm.suppress_debug_info = True
    import ptc
    import ptc.llm

    wire = _wire()
    once = ptc.llm.RetryPolicy(attempts=1)
    for make, kind in [
        (
            lambda url: ptc.llm.openai("m", base_url=url + "/v1", api_key="k", deadline=1),
            wire.OpenAIServer,
        ),
        (
            lambda url: ptc.llm.anthropic("m", base_url=url, api_key="k", deadline=1),
            wire.AnthropicServer,
        ),
        (
            lambda url: ptc.llm.litellm("openai/m", api_base=url + "/v1", api_key="k", deadline=1),
            wire.OpenAIServer,
        ),
    ]:
        server = kind().start()
        try:
            for headers_too in (False, True):
                for run_async in (False, True):
                    server.script = [wire.Trickle(PROGRAM, every=0.5, headers_too=headers_too)]
                    agent = ptc.SubAgent(
                        "How many?", llm=make(server.url), data={"orders": ORDERS}, retry=once
                    )
                    started = time.monotonic()
                    step = asyncio.run(agent.arun()) if run_async else agent.run()
                    elapsed = time.monotonic() - started
                    assert not step.ok and step.error is not None, step
                    assert step.error.message.startswith("LLM call failed: LLMTimeoutError: "), (
                        step.error.message
                    )
                    assert "no complete reply within the request deadline of 1 s" in (
                        step.error.message
                    )
                    assert elapsed < 2.5, elapsed
        finally:
            server.stop()


@case(seconds=60, memory_mb=400)
def case_retry_after_values_no_server_means_are_retried_after_the_backoff(tmp: Path) -> None:
    """A 429 whose Retry-After is nan, inf, negative, garbage or a date past: retried after
    the policy's backoff (it was `ValueError: Invalid value NaN` and no retry, or giving up)."""
    import ptc
    import ptc.llm

    wire = _wire()
    server = wire.OpenAIServer().start()
    try:
        for header in [
            "nan",
            "inf",
            "-Infinity",
            "-3",
            "soon",
            "1e3",
            "Sun, 06 Nov 1994 08:49:37 GMT",
        ]:
            limited = wire.Error(429, server.error_body("slow down", "rate_limit_error"))
            limited.headers = {"Retry-After": header}
            server.script = [limited, PROGRAM]
            server.received.clear()
            llm = ptc.llm.openai("m", base_url=server.url + "/v1", api_key="k")
            policy = ptc.llm.RetryPolicy(attempts=2, initial_delay=0.01)
            step = ptc.SubAgent("How many?", llm=llm, data={"orders": ORDERS}, retry=policy).run()
            assert step.ok and step.value == 3, (header, step.error)
            assert step.usage.llm_retries == 1, header
            first, second = server.received
            assert second.at - first.at < 2.0, (header, second.at - first.at)
    finally:
        server.stop()


@case(seconds=60, memory_mb=400)
def case_a_reply_in_content_parts_is_read(tmp: Path) -> None:
    """An OpenAI-compatible reply whose content is a list of parts (text, image, reasoning):
    its text parts are the reply (it was read as empty, failing the turn)."""
    import ptc
    import ptc.llm

    wire = _wire()
    server = wire.OpenAIServer().start()
    try:
        server.script = [
            wire.Parts(
                [
                    {"type": "thinking", "thinking": "(return 0)"},
                    {"type": "text", "text": "```clojure\n(return (count"},
                    {"type": "image_url", "image_url": {"url": "data:,"}},
                    {"type": "text", "text": " data/orders))\n```"},
                ]
            )
        ]
        llm = ptc.llm.openai("m", base_url=server.url + "/v1", api_key="k")
        step = ptc.SubAgent("How many?", llm=llm, data={"orders": ORDERS}).run()
        assert step.ok and step.value == 3, step.error
    finally:
        server.stop()


@case(seconds=60, memory_mb=700)
def case_a_20_mb_reply_without_a_program_is_not_sent_back(tmp: Path) -> None:
    """A 20 MB reply with no program: the next requests carry its first 4,000 characters and a
    note with its length, not 20 MB each."""
    from ptc import SubAgent
    from ptc.llm import ScriptedLLM

    reply = "no program here. " * 1_200_000  # 20.4 M characters
    llm = ScriptedLLM([reply, reply, PROGRAM])
    step = SubAgent("How many?", llm=llm, data={"orders": ORDERS}).run()
    assert step.ok and step.value == 3, step.error
    for request in llm.calls[1:]:
        size = sum(len(m["content"]) for m in request)
        assert size < 40_000, size
    note = f"(Your reply was {len(reply):,} characters long: only its first 4,000 are shown above.)"
    assert note in llm.calls[1][3]["content"]
