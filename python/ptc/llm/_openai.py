"""OpenAI and every server that speaks its chat-completions API (vLLM, Ollama, LM Studio,
llama.cpp's server): ``ptc.llm.openai(model, base_url=...)``."""

from __future__ import annotations

from typing import Any

from ptc.llm._adapter import DEFAULT_DEADLINE, Messages, SDKAdapter
from ptc.llm._http import DEFAULT_MAX_REPLY_BYTES
from ptc.llm._read import openai_reply
from ptc.llm._stream import OpenAIStream, StreamedReply
from ptc.llm.reply import LLMReply


class OpenAIChat(SDKAdapter):
    provider = module = "openai"
    sync_class, async_class = "OpenAI", "AsyncOpenAI"
    key_variable = "OPENAI_API_KEY"

    def _kwargs(self, messages: Messages) -> dict[str, Any]:
        kwargs = {"model": self.model, "messages": messages, **self.params}
        if self.streams:
            kwargs["stream"] = True
            # the usage comes in a chunk of its own only when asked for
            kwargs.setdefault("stream_options", {"include_usage": True})
        return kwargs

    def _create(self, client: Any, kwargs: dict[str, Any]) -> Any:
        return client.chat.completions.with_raw_response.create(**kwargs)

    def _reply(self, data: dict[str, Any]) -> LLMReply:
        return openai_reply(data)

    def _stream(self) -> StreamedReply:
        return OpenAIStream()


def openai(
    model: str,
    *,
    client: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
    deadline: float | None = DEFAULT_DEADLINE,
    max_reply_bytes: int | None = DEFAULT_MAX_REPLY_BYTES,
    stream: bool = False,
    **params: Any,
) -> OpenAIChat:
    """An LLM for an agent, on OpenAI's chat completions or any server that speaks them.

    ``client`` may be an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` you configured; otherwise
    one is made from ``base_url`` and ``api_key`` (default: ``OPENAI_API_KEY``; a local server
    at ``base_url`` needs none). ``params`` go to every request (``temperature=0``,
    ``max_tokens=...``). A request not answered within ``deadline`` seconds (default 600; each
    retry has its own; ``None``: the SDK's read timeout only) raises
    :class:`~ptc.llm.LLMTimeoutError`. A reply larger than ``max_reply_bytes`` (default 32 MiB,
    counted after decompression; ``None``: no bound) is not read further and raises
    :class:`~ptc.llm.LLMReplyTooLargeError`; one that is not a chat completion raises
    :class:`~ptc.llm.LLMReplyError` naming the field. With ``stream=True`` the reply is
    streamed (``stream_options={"include_usage": True}`` unless ``params`` set it):
    ``llm(messages, on_text=f)`` calls ``f`` with each piece of text as it arrives and returns
    the same :class:`~ptc.llm.LLMReply`; a stream ending before ``data: [DONE]`` raises
    :class:`~ptc.llm.LLMReplyError`, an error event an :class:`~ptc.llm.LLMReplyError` or, for
    a server error or an overload, a retried :class:`~ptc.llm.TransientLLMError`. ptc adds a
    response hook to the httpx client of a ``client`` you pass, which acts only on ptc's
    requests. Requires
    ``pip install 'ptc-runtime[openai]'`` (from a clone, at its root: ``pip install '.[openai]'``).
    """
    return OpenAIChat(
        model,
        params,
        client=client,
        base_url=base_url,
        api_key=api_key,
        deadline=deadline,
        max_reply_bytes=max_reply_bytes,
        stream=stream,
    )
