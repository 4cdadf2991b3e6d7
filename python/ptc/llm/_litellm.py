"""Any provider litellm reaches: ``ptc.llm.litellm("anthropic/claude-...")``."""

from __future__ import annotations

from typing import Any

from ptc.llm._adapter import DEFAULT_DEADLINE, Adapter, Messages, require
from ptc.llm._http import Watch
from ptc.llm._read import openai_reply
from ptc.llm._stream import LiteLLMStream, OnText, aread_chunks, read_chunks
from ptc.llm.reply import LLMReply


class LiteLLMChat(Adapter):
    """litellm reads replies in clients of its own: ptc bounds a request's time (and stops
    its reading at the deadline, by shutting down its sockets), not a reply's size."""

    provider = "litellm"

    def _stream_params(self) -> dict[str, Any]:
        params = {**self.params, "stream": True}
        # the usage comes in a chunk of its own only when asked for
        params.setdefault("stream_options", {"include_usage": True})
        return params

    def _request(self, messages: Messages, watch: Watch, on_text: OnText) -> LLMReply:
        sdk = require("litellm", "litellm")
        if not self.streams:
            return openai_reply(sdk.completion(model=self.model, messages=messages, **self.params))
        chunks = sdk.completion(model=self.model, messages=messages, **self._stream_params())
        return read_chunks(chunks, watch, LiteLLMStream(), on_text)

    async def _arequest(self, messages: Messages, watch: Watch, on_text: OnText) -> LLMReply:
        sdk = require("litellm", "litellm")
        if not self.streams:
            response = await sdk.acompletion(model=self.model, messages=messages, **self.params)
            return openai_reply(response)
        chunks = await sdk.acompletion(model=self.model, messages=messages, **self._stream_params())
        return await aread_chunks(chunks, LiteLLMStream(), on_text)


def litellm(
    model: str,
    *,
    deadline: float | None = DEFAULT_DEADLINE,
    stream: bool = False,
    **params: Any,
) -> LiteLLMChat:
    """An LLM for an agent through litellm (``model`` in its ``provider/name`` form; ``params``
    such as ``api_base=`` go to every request). A request not answered within ``deadline``
    seconds (default 600; each retry has its own; ``None``: litellm's ``timeout`` only) raises
    :class:`~ptc.llm.LLMTimeoutError`. With ``stream=True`` the reply is streamed
    (``stream_options={"include_usage": True}`` unless ``params`` set it):
    ``llm(messages, on_text=f)`` calls ``f`` with each piece of text as it arrives and returns
    the same :class:`~ptc.llm.LLMReply`; litellm reads the stream itself and raises its own
    errors for one cut short. Requires ``pip install 'ptc-runtime[litellm]'`` (from a clone, at
    its root: ``pip install '.[litellm]'``)."""
    # ptc's retry policy retries: litellm's own retries (and its client's) are switched off
    return LiteLLMChat(
        model, {"max_retries": 0, "num_retries": 0, **params}, deadline=deadline, stream=stream
    )
