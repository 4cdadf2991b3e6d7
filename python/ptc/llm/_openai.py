"""OpenAI and every server that speaks its chat-completions API (vLLM, Ollama, LM Studio,
llama.cpp's server): ``ptc.llm.openai(model, base_url=...)``."""

from __future__ import annotations

from typing import Any

from ptc.llm._adapter import DEFAULT_DEADLINE, Messages, SDKAdapter, openai_reply
from ptc.llm.reply import LLMReply


class OpenAIChat(SDKAdapter):
    provider = module = "openai"
    sync_class, async_class = "OpenAI", "AsyncOpenAI"
    key_variable = "OPENAI_API_KEY"

    def _create(self, client: Any, messages: Messages) -> Any:
        return client.chat.completions.create(model=self.model, messages=messages, **self.params)

    def _reply(self, response: Any) -> LLMReply:
        return openai_reply(response)


def openai(
    model: str,
    *,
    client: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
    deadline: float | None = DEFAULT_DEADLINE,
    **params: Any,
) -> OpenAIChat:
    """An LLM for an agent, on OpenAI's chat completions or any server that speaks them.

    ``client`` may be an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` you configured; otherwise
    one is made from ``base_url`` and ``api_key`` (default: ``OPENAI_API_KEY``; a local server
    at ``base_url`` needs none). ``params`` go to every request (``temperature=0``,
    ``max_tokens=...``). A request not answered within ``deadline`` seconds (default 600; each
    retry has its own; ``None``: the SDK's read timeout only) raises
    :class:`~ptc.llm.LLMTimeoutError`. Requires ``pip install 'ptc-runtime[openai]'``.
    """
    return OpenAIChat(
        model, params, client=client, base_url=base_url, api_key=api_key, deadline=deadline
    )
