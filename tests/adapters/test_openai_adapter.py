"""ptc.llm.openai with the real openai SDK over real HTTP to a loopback server that speaks the
chat-completions wire format (never the network)."""

from __future__ import annotations

import asyncio

import openai
import ptc
import pytest
from ptc.llm import LLMReply, RetryPolicy, normalize_reply
from wire import Error, OpenAIServer, Parts, WireServer

PROGRAM = "```clojure\n(return (count (filter #(> (:total %) 100) data/orders)))\n```"
ORDERS = [{"id": 1, "total": 50}, {"id": 2, "total": 150}, {"id": 3, "total": 300}]
FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.01)


def agent(server: WireServer, **kw: object) -> ptc.SubAgent:
    llm = ptc.llm.openai("local-model", base_url=server.url + "/v1", api_key="sk-test", **kw)
    return ptc.SubAgent(
        prompt="How many orders are over 100?", llm=llm, data={"orders": ORDERS}, retry=FAST
    )


def test_an_agent_runs_on_an_openai_compatible_server(openai_server: OpenAIServer) -> None:
    openai_server.script = [PROGRAM]
    step = agent(openai_server, temperature=0).run()
    assert step.ok and step.value == 2
    (req,) = openai_server.received
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.headers["x-stainless-async"] == "false"
    assert req.body["model"] == "local-model"
    assert req.body["temperature"] == 0
    assert [m["role"] for m in req.body["messages"]] == ["system", "user"]
    assert req.body["messages"] == step.messages[0]
    assert (step.usage.input_tokens, step.usage.output_tokens) == (11, 7)
    assert dict(step.turns[0].usage) == {"input_tokens": 11, "output_tokens": 7}


def test_cached_prompt_tokens_are_reported(openai_server: OpenAIServer) -> None:
    openai_server.script = [PROGRAM]
    openai_server.usage = {"prompt_tokens": 1000, "completion_tokens": 9, "cached_tokens": 800}
    step = agent(openai_server).run()
    assert dict(step.turns[0].usage) == {
        "input_tokens": 1000,
        "output_tokens": 9,
        "cache_read_tokens": 800,
    }


async def test_the_async_path_uses_the_async_client(openai_server: OpenAIServer) -> None:
    openai_server.script = [PROGRAM]
    step = await agent(openai_server).arun()
    assert step.ok and step.value == 2
    # the SDK's header says which of its clients sent the request
    assert openai_server.received[0].headers["x-stainless-async"].startswith("async")


def test_a_rate_limit_is_retried_after_the_time_the_server_asked(
    openai_server: OpenAIServer,
) -> None:
    limited = Error(429, openai_server.error_body("slow down", "rate_limit_error"))
    limited.headers = {"Retry-After": "0.4"}
    openai_server.script = [limited, PROGRAM]
    step = agent(openai_server).run()
    assert step.ok and step.value == 2
    first, second = openai_server.received
    assert second.at - first.at >= 0.4  # the backoff alone would wait 0.01 s
    assert step.usage.llm_retries == 1 and step.usage.llm_calls == 1


def test_a_server_error_is_retried(openai_server: OpenAIServer) -> None:
    openai_server.script = [Error(500, openai_server.error_body("boom")), PROGRAM]
    step = agent(openai_server).run()
    assert step.ok and len(openai_server.received) == 2


def test_a_bad_request_is_not_retried_and_fails_the_step(openai_server: OpenAIServer) -> None:
    bad = Error(400, openai_server.error_body("model not found", "invalid_request_error"))
    openai_server.script = [bad, PROGRAM]
    step = agent(openai_server).run()
    assert not step.ok
    assert step.error is not None and step.error.type == "llm_error"
    assert "BadRequestError" in step.error.message and "model not found" in step.error.message
    assert len(openai_server.received) == 1


def test_a_long_retry_after_is_not_waited_for(openai_server: OpenAIServer) -> None:
    limited = Error(429, openai_server.error_body("come back tomorrow", "rate_limit_error"))
    limited.headers = {"Retry-After": "86400"}
    openai_server.script = [limited, PROGRAM]
    step = agent(openai_server).run()
    assert not step.ok and len(openai_server.received) == 1


def test_a_client_you_made_does_not_retry_on_its_own(openai_server: OpenAIServer) -> None:
    """The SDK's retries are switched off: one policy (ptc's) counts every attempt."""
    client = openai.OpenAI(base_url=openai_server.url + "/v1", api_key="k", max_retries=5)
    llm = ptc.llm.openai("m", client=client)
    openai_server.script = [Error(500, openai_server.error_body("boom"))] * 3
    step = ptc.SubAgent(
        prompt="p", llm=llm, retry=RetryPolicy(attempts=2, initial_delay=0.01)
    ).run()
    assert not step.ok and len(openai_server.received) == 2
    assert step.usage.llm_retries == 1


def test_an_async_client_you_made_serves_both_paths(openai_server: OpenAIServer) -> None:
    client = openai.AsyncOpenAI(base_url=openai_server.url + "/v1", api_key="k")
    llm = ptc.llm.openai("m", client=client)
    openai_server.script = ["one", "two"]
    assert llm([{"role": "user", "content": "hi"}]).content == "one"
    assert asyncio.run(llm.acall([{"role": "user", "content": "hi"}])).content == "two"


def test_raw_sdk_responses_are_accepted_by_normalize_reply(openai_server: OpenAIServer) -> None:
    openai_server.script = ["hello"]
    client = openai.OpenAI(base_url=openai_server.url + "/v1", api_key="k")
    raw = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert normalize_reply(raw) == LLMReply("hello", {"input_tokens": 11, "output_tokens": 7})
    assert normalize_reply(raw.model_dump()) == normalize_reply(raw)


def test_a_raw_sdk_response_returned_by_your_own_callable_works(
    openai_server: OpenAIServer,
) -> None:
    client = openai.OpenAI(base_url=openai_server.url + "/v1", api_key="k")
    openai_server.script = [PROGRAM]

    def llm(messages: list[dict[str, str]]) -> object:
        return client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]

    step = ptc.SubAgent(prompt="How many?", llm=llm, data={"orders": ORDERS}).run()
    assert step.ok and step.value == 2


def test_without_the_sdk_the_error_says_which_extra_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "openai", None)
    llm = ptc.llm.openai("m", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ImportError, match=r"pip install 'ptc-runtime\[openai\]'"):
        llm([{"role": "user", "content": "x"}])


@pytest.mark.parametrize(
    "header",
    ["nan", "NaN", "inf", "-3", "soon", "1e3", "", "Sun, 06 Nov 1994 08:49:37 GMT"],
)
def test_a_rate_limit_with_an_unreadable_retry_after_is_retried_after_the_backoff(
    openai_server: OpenAIServer, header: str
) -> None:
    """Issue 29, item 20: `Retry-After: nan` ended the step with `ValueError: Invalid value
    NaN` (time.sleep(nan)) and no retry; `inf` gave up at once."""
    limited = Error(429, openai_server.error_body("slow down", "rate_limit_error"))
    limited.headers = {"Retry-After": header}
    openai_server.script = [limited, PROGRAM]
    step = agent(openai_server).run()
    assert step.ok and step.value == 2
    assert step.usage.llm_retries == 1 and len(openai_server.received) == 2
    first, second = openai_server.received
    assert second.at - first.at < 2.0  # the 0.01 s backoff, not a wait the header made up


async def test_an_unreadable_retry_after_on_the_async_path(openai_server: OpenAIServer) -> None:
    limited = Error(429, openai_server.error_body("slow down", "rate_limit_error"))
    limited.headers = {"Retry-After": "nan", "retry-after-ms": "-inf"}
    openai_server.script = [limited, PROGRAM]
    step = await agent(openai_server).arun()
    assert step.ok and step.value == 2 and step.usage.llm_retries == 1


def test_content_as_a_list_of_text_parts_is_read(openai_server: OpenAIServer) -> None:
    """Issue 29, item 20: several OpenAI-compatible servers send `content` as content parts;
    it was read as an empty reply. Text parts are joined in order; other parts are left out."""
    openai_server.script = [
        Parts(
            [
                {"type": "text", "text": "```clojure\n(return (count (filter "},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "thinking", "thinking": "(return 0)"},
                {"type": "text", "text": 7},  # not text: left out
                {"type": "text", "text": "#(> (:total %) 100) data/orders)))\n```"},
            ]
        )
    ]
    step = agent(openai_server).run()
    assert step.ok and step.value == 2
    assert step.turns[0].response == (
        "```clojure\n(return (count (filter #(> (:total %) 100) data/orders)))\n```"
    )


def test_content_parts_without_text_are_an_empty_reply(openai_server: OpenAIServer) -> None:
    openai_server.script = [Parts([{"type": "image_url", "image_url": {"url": "x"}}]), PROGRAM]
    step = agent(openai_server).run()
    assert step.ok and step.value == 2
    assert step.turns[0].response == "" and step.turns[0].error is not None
    assert step.turns[0].error.type == "no_program"
