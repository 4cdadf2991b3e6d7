"""ptc.llm.anthropic with the real anthropic SDK over real HTTP to a loopback server that
speaks the Messages wire format (never the network)."""

from __future__ import annotations

import anthropic
import ptc
from ptc.llm import LLMReply, RetryPolicy, normalize_reply
from ptc.llm._anthropic import OPENING, anthropic_request
from wire import AnthropicServer, Error, WireServer

PROGRAM = "```clojure\n(return (count (filter #(> (:total %) 100) data/orders)))\n```"
ORDERS = [{"id": 1, "total": 50}, {"id": 2, "total": 150}, {"id": 3, "total": 300}]
FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.01)


def agent(server: WireServer, **kw: object) -> ptc.SubAgent:
    llm = ptc.llm.anthropic("claude-test", base_url=server.url, api_key="sk-ant", **kw)
    return ptc.SubAgent(
        prompt="How many orders are over 100?", llm=llm, data={"orders": ORDERS}, retry=FAST
    )


def test_an_agent_runs_on_the_messages_api(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script = [PROGRAM]
    step = agent(anthropic_server).run()
    assert step.ok and step.value == 2
    (req,) = anthropic_server.received
    assert req.path == "/v1/messages"
    # the key travels as `x-api-key` or as a bearer token, depending on the SDK's version
    assert "sk-ant" in (req.headers.get("x-api-key", ""), req.headers.get("authorization", "")[7:])
    assert req.body["model"] == "claude-test" and req.body["max_tokens"] == 4096
    system, user = step.messages[0]
    # the system prompt goes to `system=`, marked as the cache breakpoint
    assert req.body["system"] == [
        {"type": "text", "text": system["content"], "cache_control": {"type": "ephemeral"}}
    ]
    assert req.body["messages"] == [{"role": "user", "content": user["content"]}]


def test_usage_counts_cache_reads_and_writes_as_input(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script = [PROGRAM]
    anthropic_server.usage = {
        "input_tokens": 20,
        "output_tokens": 6,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 1200,
    }
    step = agent(anthropic_server).run()
    assert dict(step.turns[0].usage) == {
        "input_tokens": 1520,
        "output_tokens": 6,
        "cache_read_tokens": 1200,
        "cache_write_tokens": 300,
    }
    assert step.usage.input_tokens == 1520
    assert (step.usage.cache_read_tokens, step.usage.cache_write_tokens) == (1200, 300)


def test_without_cache_the_system_prompt_is_plain_text(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script = [PROGRAM]
    step = agent(anthropic_server, cache=False, max_tokens=100, stop_sequences=["END"]).run()
    body = anthropic_server.received[0].body
    assert body["system"] == step.messages[0][0]["content"]
    assert body["max_tokens"] == 100 and body["stop_sequences"] == ["END"]


async def test_the_async_path_uses_the_async_client(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script = [PROGRAM]
    step = await agent(anthropic_server).arun()
    assert step.ok and step.value == 2
    assert anthropic_server.received[0].headers["x-stainless-async"].startswith("async")


def test_overloaded_and_rate_limited_are_retried(anthropic_server: AnthropicServer) -> None:
    limited = Error(429, anthropic_server.error_body("slow down", "rate_limit_error"))
    limited.headers = {"retry-after": "0.3"}
    overloaded = Error(529, anthropic_server.error_body("busy", "overloaded_error"))
    anthropic_server.script = [limited, overloaded, PROGRAM]
    step = agent(anthropic_server).run()
    assert step.ok and step.value == 2
    first, second, _ = anthropic_server.received
    assert second.at - first.at >= 0.3
    assert step.usage.llm_retries == 2


def test_an_invalid_request_fails_the_step_once(anthropic_server: AnthropicServer) -> None:
    bad = Error(400, anthropic_server.error_body("max_tokens too big", "invalid_request_error"))
    anthropic_server.script = [bad]
    step = agent(anthropic_server).run()
    assert not step.ok and step.error is not None and step.error.type == "llm_error"
    assert "max_tokens too big" in step.error.message
    assert len(anthropic_server.received) == 1


def test_raw_messages_are_accepted_by_normalize_reply(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script = ["hello"]
    client = anthropic.Anthropic(base_url=anthropic_server.url, api_key="k")
    raw = client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    )
    assert normalize_reply(raw) == LLMReply("hello", {"input_tokens": 13, "output_tokens": 5})
    assert normalize_reply(raw.model_dump()) == normalize_reply(raw)


def test_messages_are_shaped_for_the_api() -> None:
    """System messages joined into `system`; roles merged where they repeat (the API wants
    them alternating); a user message first."""
    system, rest = anthropic_request(
        [
            {"role": "system", "content": "S1"},
            {"role": "assistant", "content": "A0"},
            {"role": "user", "content": "U1"},
            {"role": "user", "content": "U2"},
            {"role": "system", "content": "S2"},
            {"role": "assistant", "content": "A1"},
        ],
        cache=False,
    )
    assert system == "S1\n\nS2"
    assert rest == [
        {"role": "user", "content": OPENING},
        {"role": "assistant", "content": "A0"},
        {"role": "user", "content": "U1\n\nU2"},
        {"role": "assistant", "content": "A1"},
    ]
    assert anthropic_request([{"role": "user", "content": "hi"}], cache=True) == (
        None,
        [{"role": "user", "content": "hi"}],
    )


def test_an_unreadable_retry_after_is_retried_after_the_backoff(
    anthropic_server: AnthropicServer,
) -> None:
    """Issue 29, item 20: `Retry-After: nan` ended the step with a ValueError, no retry."""
    limited = Error(429, anthropic_server.error_body("slow down", "rate_limit_error"))
    limited.headers = {"Retry-After": "nan"}
    anthropic_server.script = [limited, PROGRAM]
    step = agent(anthropic_server).run()
    assert step.ok and step.value == 2
    assert step.usage.llm_retries == 1 and len(anthropic_server.received) == 2
