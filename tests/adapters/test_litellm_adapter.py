"""ptc.llm.litellm with the real litellm package, routed to a loopback server that speaks the
OpenAI wire format (litellm's `openai/` provider with `api_base`; never the network)."""

from __future__ import annotations

import os

# litellm fetches its model price list from the network at import unless told not to
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

import ptc
from ptc.llm import RetryPolicy
from wire import Error, OpenAIServer, WireServer

PROGRAM = "```clojure\n(return (count (filter #(> (:total %) 100) data/orders)))\n```"
ORDERS = [{"id": 1, "total": 50}, {"id": 2, "total": 150}, {"id": 3, "total": 300}]


def agent(server: WireServer) -> ptc.SubAgent:
    llm = ptc.llm.litellm("openai/local-model", api_base=server.url + "/v1", api_key="k")
    return ptc.SubAgent(
        prompt="How many orders are over 100?",
        llm=llm,
        data={"orders": ORDERS},
        retry=RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.01),
    )


def test_an_agent_runs_through_litellm(openai_server: OpenAIServer) -> None:
    openai_server.script = [PROGRAM]
    step = agent(openai_server).run()
    assert step.ok and step.value == 2
    (req,) = openai_server.received
    assert req.body["model"] == "local-model"
    assert req.body["messages"] == step.messages[0]
    assert dict(step.turns[0].usage) == {"input_tokens": 11, "output_tokens": 7}


async def test_the_async_path(openai_server: OpenAIServer) -> None:
    openai_server.script = [PROGRAM]
    step = await agent(openai_server).arun()
    assert step.ok and step.value == 2


def test_a_rate_limit_is_retried_by_ptc(openai_server: OpenAIServer) -> None:
    limited = Error(429, openai_server.error_body("slow down", "rate_limit_error"))
    limited.headers = {"Retry-After": "0.3"}
    openai_server.script = [limited, PROGRAM]
    step = agent(openai_server).run()
    assert step.ok and step.value == 2
    first, second = openai_server.received
    assert second.at - first.at >= 0.3
    assert step.usage.llm_retries == 1


def test_a_bad_request_is_not_retried(openai_server: OpenAIServer) -> None:
    bad = Error(400, openai_server.error_body("unknown model", "invalid_request_error"))
    openai_server.script = [bad, PROGRAM]
    step = agent(openai_server).run()
    assert not step.ok and step.error is not None and step.error.type == "llm_error"
    assert "unknown model" in step.error.message
    assert len(openai_server.received) == 1


def test_cached_tokens_through_litellm(openai_server: OpenAIServer) -> None:
    openai_server.script = [PROGRAM]
    openai_server.usage = {"prompt_tokens": 900, "completion_tokens": 9, "cached_tokens": 700}
    step = agent(openai_server).run()
    assert dict(step.turns[0].usage) == {
        "input_tokens": 900,
        "output_tokens": 9,
        "cache_read_tokens": 700,
    }
    assert step.usage.cache_read_tokens == 700


def test_an_unreadable_retry_after_is_retried_after_the_backoff(
    openai_server: OpenAIServer,
) -> None:
    """Issue 29, item 20, through litellm's own error types."""
    limited = Error(429, openai_server.error_body("slow down", "rate_limit_error"))
    limited.headers = {"Retry-After": "nan"}
    openai_server.script = [limited, PROGRAM]
    step = agent(openai_server).run()
    assert step.ok and step.value == 2
    assert step.usage.llm_retries == 1 and len(openai_server.received) == 2
