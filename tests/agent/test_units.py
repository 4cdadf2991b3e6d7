"""Signatures, program extraction, LLM helpers, the scripted LLM, prompts."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from ptc.compression._format import sanitize_doc, turns_left_line
from ptc.compression.signature import (
    SignatureError,
    check_value,
    parse_signature,
    signature_from_callable,
)
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

# --- signatures -----------------------------------------------------------------------------


def test_parse_signature_roundtrip():
    for text in [
        "(category :string) -> :string",
        "() -> :any",
        "(id :int, opts :map?) -> [{name :string, price :float}]",
        "{total :float, items [:string]?}",
        ":int?",
    ]:
        assert str(parse_signature(text)) == text
    assert (
        str(parse_signature("(a :integer b :boolean) -> :vector")) == "(a :int, b :bool) -> :list"
    )
    with pytest.raises(SignatureError):
        parse_signature("(a :strin) -> :int")
    with pytest.raises(SignatureError):
        parse_signature("(a :string")


class Item(TypedDict):
    name: str
    price: float


def test_signature_from_type_hints_fmt004():
    """FMT-004: a tool's signature is derived from its Python type hints."""

    def search_reviews(category: str, max_results: int = 5) -> str:
        """Search reviews.

        Longer text."""
        return ""

    def items(tags: list[str], extra: dict[str, Any] | None) -> list[Item]:
        return []

    def untyped(a, *rest, **opts):
        return None

    assert str(signature_from_callable(search_reviews)) == (
        "(category :string, max-results :int?) -> :string"
    )
    assert str(signature_from_callable(items)) == (
        "(tags [:string], extra :map?) -> [{name :string, price :float}]"
    )
    # *rest is the variadic tail (each of its annotated type); **opts an optional map
    assert str(signature_from_callable(untyped)) == "(a :any, & rest [:any], opts :map?) -> :any"


def test_check_value():
    sig = parse_signature("[{name :string, price :float, tag :keyword?}]").returns
    assert check_value([{"name": "a", "price": 2}], sig) is None
    assert check_value([{"name": "a"}], sig) == "[0].price: missing key :price"
    assert check_value([{"name": 1, "price": 1.0}], sig) == "[0].name: expected :string, got int"
    assert (
        check_value({"a": 1}, sig) == "value: expected [{name :string, price :float, tag "
        ":keyword?}], got dict"
    )
    assert check_value(None, parse_signature(":int?").returns) is None
    assert check_value(True, parse_signature(":int").returns) == "value: expected :int, got bool"


# --- format helpers -------------------------------------------------------------------------


def test_sanitize_doc_def007():
    """DEF-007: semicolons removed entirely; line breaks folded."""
    assert sanitize_doc("a; b;c\nd") == "a bc d"


def test_turns_left_line_msg005():
    """MSG-005: ``Turns left: N`` unless it is the final turn."""
    assert turns_left_line(4) == "Turns left: 4"
    assert turns_left_line(1) == "FINAL TURN - you must call (return result) or (fail reason) now."


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


def test_system_prompt_is_static_and_teaches_the_language_msg006():
    """MSG-006: the SYSTEM prompt is fixed text shipped with the package."""
    text = system_prompt()
    assert text == system_prompt()
    for needle in ["(return", "(fail", "println", "data/", "tool/", "defn", "```clojure"]:
        assert needle in text
    assert len(text) < 6000


# --- program extraction ---------------------------------------------------------------------


def test_extract_program_from_replies():
    from ptc.agent import extract_program

    assert extract_program("Sure:\n```clojure\n(+ 1 2)\n```\nDone.") == "(+ 1 2)"
    assert extract_program("```lisp\n(def a 1)\n```\nthen\n```\n(return a)\n```") == (
        "(def a 1)\n(return a)"
    )
    assert extract_program("```clj\n(println 1)") == "(println 1)"  # unterminated fence
    assert extract_program("(return 42)\n") == "(return 42)"
    assert extract_program("```python\nprint(1)\n```") is None
    assert extract_program("The answer is 42.") is None
    assert extract_program("```clojure\n\n```") is None
