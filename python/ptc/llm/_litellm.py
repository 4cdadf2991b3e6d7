"""Any provider litellm reaches: ``ptc.llm.litellm("anthropic/claude-...")``."""

from __future__ import annotations

from typing import Any

from ptc.llm._adapter import DEFAULT_DEADLINE, Adapter, Messages, openai_reply, require
from ptc.llm._http import Watch
from ptc.llm.reply import LLMReply


class LiteLLMChat(Adapter):
    """litellm reads replies in clients of its own: ptc bounds a request's time (and stops
    its reading at the deadline, by shutting down its sockets), not a reply's size."""

    provider = "litellm"

    def _request(self, messages: Messages, watch: Watch) -> LLMReply:
        sdk = require("litellm", "litellm")
        return openai_reply(sdk.completion(model=self.model, messages=messages, **self.params))

    async def _arequest(self, messages: Messages, watch: Watch) -> LLMReply:
        sdk = require("litellm", "litellm")
        response = await sdk.acompletion(model=self.model, messages=messages, **self.params)
        return openai_reply(response)


def litellm(model: str, *, deadline: float | None = DEFAULT_DEADLINE, **params: Any) -> LiteLLMChat:
    """An LLM for an agent through litellm (``model`` in its ``provider/name`` form; ``params``
    such as ``api_base=`` go to every request). A request not answered within ``deadline``
    seconds (default 600; each retry has its own; ``None``: litellm's ``timeout`` only) raises
    :class:`~ptc.llm.LLMTimeoutError`. Requires ``pip install 'ptc-runtime[litellm]'`` (from a
    clone, at its root: ``pip install '.[litellm]'``)."""
    # ptc's retry policy retries: litellm's own retries (and its client's) are switched off
    return LiteLLMChat(model, {"max_retries": 0, "num_retries": 0, **params}, deadline=deadline)
