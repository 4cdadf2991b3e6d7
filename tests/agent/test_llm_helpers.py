"""LLM call helpers: reply normalisation, transient errors, retries, sync and async callables,
the scripted LLM, the system prompt."""

from __future__ import annotations

import asyncio

import pytest
from ptc.llm import (
    AsyncScriptedLLM,
    LLMError,
    LLMReply,
    RetryPolicy,
    ScriptedLLM,
    ScriptExhausted,
    TransientLLMError,
    acall_llm,
    call_llm,
    is_transient,
    normalize_reply,
)
from ptc.prompts import system_prompt

# --- LLM helpers ----------------------------------------------------------------------------


def test_normalize_reply_shapes():
    assert normalize_reply("x") == LLMReply("x")
    r = normalize_reply({"content": "y", "usage": {"prompt_tokens": 3, "completion_tokens": 4}})
    assert r == LLMReply("y", {"input_tokens": 3, "output_tokens": 4})

    class Obj:
        def __init__(self) -> None:
            self.content = "z"
            self.usage = {"input_tokens": 1, "output_tokens": 2}

    assert normalize_reply(Obj()).usage == {"input_tokens": 1, "output_tokens": 2}
    with pytest.raises(LLMError):
        normalize_reply({"text": "no content"})


def test_is_transient():
    class RateLimitError(Exception):
        pass

    class Http(Exception):
        status_code = 503

    assert is_transient(TransientLLMError())
    assert is_transient(TimeoutError())
    assert is_transient(RateLimitError())
    assert is_transient(Http())
    assert not is_transient(ValueError("bad request"))


def test_retry_with_backoff():
    llm = ScriptedLLM([TransientLLMError("busy"), TimeoutError(), "ok"])
    reply, retries = call_llm(llm, [{"role": "user", "content": "q"}], RetryPolicy(3, 0.0))
    assert (reply.content, retries, len(llm.calls)) == ("ok", 2, 3)
    llm = ScriptedLLM([TransientLLMError("busy"), "late"])
    with pytest.raises(TransientLLMError):
        call_llm(llm, [], RetryPolicy(1, 0.0))
    llm = ScriptedLLM([ValueError("fatal"), "never"])
    with pytest.raises(ValueError):
        call_llm(llm, [], RetryPolicy(5, 0.0))
    assert RetryPolicy().delay(1) == 0.5 and RetryPolicy().delay(10) == 8.0


def test_async_call_llm_sync_and_async_callables():
    async def main():
        a = await acall_llm(AsyncScriptedLLM(["a"]), [], RetryPolicy())
        b = await acall_llm(ScriptedLLM(["b"]), [], RetryPolicy())
        c = await acall_llm(AsyncScriptedLLM([TransientLLMError(), "c"]), [], RetryPolicy(2, 0))
        return a[0].content, b[0].content, c

    a, b, c = asyncio.run(main())
    assert (a, b, c[0].content, c[1]) == ("a", "b", "c", 1)


def test_scripted_llm_records_copies_and_exhausts():
    msgs = [{"role": "user", "content": "hi"}]
    llm = ScriptedLLM(["one", lambda m: m[-1]["content"] + "!"], usage={"input_tokens": 1})
    assert llm(msgs) == {"content": "one", "usage": {"input_tokens": 1}}
    msgs[0]["content"] = "changed"
    assert llm(msgs) == {"content": "changed!", "usage": {"input_tokens": 1}}
    assert llm.calls[0] == [{"role": "user", "content": "hi"}]
    with pytest.raises(ScriptExhausted):
        llm(msgs)


def test_system_prompt_is_static_and_teaches_the_language():
    """MSG-006: the SYSTEM prompt is fixed text shipped with the package."""
    text = system_prompt()
    assert text == system_prompt()
    for needle in ["(return", "(fail", "println", "data/", "tool/", "defn", "```clojure"]:
        assert needle in text
    assert len(text) < 6000
