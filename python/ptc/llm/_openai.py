"""OpenAI and every server that speaks its chat-completions API (vLLM, Ollama, LM Studio,
llama.cpp's server): ``ptc.llm.openai(model, base_url=...)``."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from ptc.llm._adapter import Adapter, Messages, openai_reply, require
from ptc.llm.reply import LLMReply


class OpenAIChat(Adapter):
    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        **params: Any,
    ) -> None:
        super().__init__(model, params)
        self._base_url = base_url
        self._api_key = api_key
        self._sync: Any = None
        self._async: Any = None
        if client is not None:
            sdk = require("openai", "openai")
            # ptc's retry policy retries, so the SDK must not retry as well
            quiet = client.with_options(max_retries=0)
            if isinstance(client, sdk.AsyncOpenAI):
                self._async = quiet
            else:
                self._sync = quiet

    def _options(self) -> dict[str, Any]:
        key = self._api_key or os.environ.get("OPENAI_API_KEY")
        if key is None and self._base_url is not None:
            key = "unused"  # local servers take any key; the SDK insists on one
        return {"base_url": self._base_url, "api_key": key, "max_retries": 0}

    def _client(self) -> Any:
        if self._sync is None:
            self._sync = require("openai", "openai").OpenAI(**self._options())
        return self._sync

    def _aclient(self) -> Any:
        if self._async is None:
            self._async = require("openai", "openai").AsyncOpenAI(**self._options())
        return self._async

    def __call__(self, messages: Messages) -> LLMReply:
        if self._sync is None and self._async is not None:
            return asyncio.run(self.acall(messages))  # only an async client was given
        response = self._client().chat.completions.create(
            model=self.model, messages=messages, **self.params
        )
        return openai_reply(response)

    async def acall(self, messages: Messages) -> LLMReply:
        if self._async is None and self._sync is not None:
            return await asyncio.to_thread(self, messages)  # only a sync client was given
        response = await self._aclient().chat.completions.create(
            model=self.model, messages=messages, **self.params
        )
        return openai_reply(response)


def openai(
    model: str,
    *,
    client: Any = None,
    base_url: str | None = None,
    api_key: str | None = None,
    **params: Any,
) -> OpenAIChat:
    """An LLM for an agent, on OpenAI's chat completions or any server that speaks them.

    ``client`` may be an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` you configured; otherwise
    one is made from ``base_url`` and ``api_key`` (default: ``OPENAI_API_KEY``; a local server
    at ``base_url`` needs none). ``params`` go to every request (``temperature=0``,
    ``max_tokens=...``). Requires ``pip install 'ptc-runtime[openai]'``.
    """
    return OpenAIChat(model, client=client, base_url=base_url, api_key=api_key, **params)
