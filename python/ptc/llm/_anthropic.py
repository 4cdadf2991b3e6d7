"""Anthropic's Messages API: ``ptc.llm.anthropic(model)``."""

from __future__ import annotations

from typing import Any

from ptc.llm._adapter import DEFAULT_DEADLINE, Messages, SDKAdapter
from ptc.llm._http import DEFAULT_MAX_REPLY_BYTES
from ptc.llm._read import anthropic_reply
from ptc.llm._stream import AnthropicStream, StreamedReply
from ptc.llm.reply import LLMReply

#: Sent first when a conversation would otherwise open with an assistant message, which the
#: Messages API refuses.
OPENING = "Continue."


def anthropic_request(messages: Messages, *, cache: bool) -> tuple[Any, list[dict[str, Any]]]:
    """The ``system`` parameter and the messages the Messages API accepts: system messages
    joined into ``system`` (marked as a cache breakpoint when ``cache``: it is the prefix every
    turn repeats), consecutive messages of one role merged, and a user message first."""
    system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system")
    rest: list[dict[str, Any]] = []
    for m in messages:
        role = m.get("role")
        if role == "system":
            continue
        role = "assistant" if role == "assistant" else "user"
        if rest and rest[-1]["role"] == role:
            rest[-1]["content"] += "\n\n" + m["content"]
        else:
            rest.append({"role": role, "content": m["content"]})
    if not rest or rest[0]["role"] != "user":
        rest.insert(0, {"role": "user", "content": OPENING})
    if not system:
        return None, rest
    if cache:
        return [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}], rest
    return system, rest


class AnthropicChat(SDKAdapter):
    provider = module = "anthropic"
    sync_class, async_class = "Anthropic", "AsyncAnthropic"
    key_variable = "ANTHROPIC_API_KEY"

    def __init__(
        self,
        model: str,
        params: dict[str, Any],
        *,
        client: Any,
        base_url: str | None,
        api_key: str | None,
        max_tokens: int,
        cache: bool,
        deadline: float | None = DEFAULT_DEADLINE,
        max_reply_bytes: int | None = DEFAULT_MAX_REPLY_BYTES,
        stream: bool = False,
    ) -> None:
        super().__init__(
            model,
            params,
            client=client,
            base_url=base_url,
            api_key=api_key,
            deadline=deadline,
            max_reply_bytes=max_reply_bytes,
            stream=stream,
        )
        self.max_tokens = max_tokens
        self.cache = cache

    def _kwargs(self, messages: Messages) -> dict[str, Any]:
        system, rest = anthropic_request(messages, cache=self.cache)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": rest,
            **self.params,
        }
        if system is not None:
            kwargs["system"] = system
        if self.streams:
            kwargs["stream"] = True
        return kwargs

    def _create(self, client: Any, kwargs: dict[str, Any]) -> Any:
        return client.messages.with_raw_response.create(**kwargs)

    def _reply(self, data: dict[str, Any]) -> LLMReply:
        return anthropic_reply(data)

    def _stream(self) -> StreamedReply:
        return AnthropicStream()


def anthropic(
    model: str,
    *,
    client: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
    max_tokens: int = 4096,
    cache: bool = True,
    deadline: float | None = DEFAULT_DEADLINE,
    max_reply_bytes: int | None = DEFAULT_MAX_REPLY_BYTES,
    stream: bool = False,
    **params: Any,
) -> AnthropicChat:
    """An LLM for an agent, on Anthropic's Messages API.

    The agent's system message goes to ``system=`` and, with ``cache`` (the default), carries a
    cache breakpoint: it is the prefix every turn repeats, so prompt caching reads it back.
    ``client`` may be an ``anthropic.Anthropic`` or ``AsyncAnthropic`` you configured; otherwise
    one is made from ``base_url`` and ``api_key`` (default: ``ANTHROPIC_API_KEY``). A request
    not answered within ``deadline`` seconds (default 600; each retry has its own; ``None``:
    the SDK's read timeout only) raises :class:`~ptc.llm.LLMTimeoutError`. A reply larger
    than ``max_reply_bytes`` (default 32 MiB, counted after decompression; ``None``: no bound)
    is not read further and raises :class:`~ptc.llm.LLMReplyTooLargeError`; one that is not a
    message raises :class:`~ptc.llm.LLMReplyError` naming the field. With ``stream=True`` the
    reply is streamed: ``llm(messages, on_text=f)`` calls ``f`` with each piece of text as it
    arrives and returns the same :class:`~ptc.llm.LLMReply` (input tokens from
    ``message_start``, output tokens from the last ``message_delta``); a stream ending before
    ``message_stop`` raises :class:`~ptc.llm.LLMReplyError`, an ``error`` event an
    :class:`~ptc.llm.LLMReplyError` or, for an overload, a retried
    :class:`~ptc.llm.TransientLLMError`. ptc adds a response hook
    to the httpx client of a ``client`` you pass, which acts only on ptc's requests. Requires
    ``pip install 'ptc-runtime[anthropic]'`` (from a clone, at its root: ``pip install
    '.[anthropic]'``).
    """
    return AnthropicChat(
        model,
        params,
        client=client,
        base_url=base_url,
        api_key=api_key,
        max_tokens=max_tokens,
        cache=cache,
        deadline=deadline,
        max_reply_bytes=max_reply_bytes,
        stream=stream,
    )
