"""Streamed replies: read event by event into the reply a request without streaming gets,
their text handed on a piece at a time as it arrives.

A reader (:class:`StreamedReply`: :class:`OpenAIStream`, :class:`AnthropicStream`,
:class:`LiteLLMStream`) takes a provider's events or chunks, gives the text each adds, keeps
the usage they carry, and raises the error an error event names (:func:`stream_error`).
:func:`read_stream` reads an SDK's HTTP reply with one (its events parsed by
:mod:`ptc.llm._sse`), :func:`read_chunks` litellm's chunks. A sync request runs on a thread
of its own: :class:`Relay` hands its text over to the thread waiting for it.
"""

from __future__ import annotations

import queue
import time
from collections.abc import AsyncIterable, Callable, Iterable, Mapping
from typing import Any

from ptc.llm._fields import (
    anthropic_usage,
    field,
    is_object,
    openai_usage,
    text_parts,
    wrong_type,
)
from ptc.llm._http import Watch
from ptc.llm._sse import (
    aread_events,
    aread_whole,
    event_json,
    is_event_stream,
    read_events,
    read_whole,
)
from ptc.llm.reply import LLMError, LLMReply, LLMReplyError, TransientLLMError, describe_value

#: What receives a streamed reply's text, a piece at a time (``on_text``).
OnText = Callable[[str], object]


def ignore_text(text: str) -> None:
    """An ``on_text`` for a caller that wants no text."""


class Relay:
    """The text a request emits on a thread of its own, handed over to ``on_text`` on the
    thread waiting for it: :attr:`emit` is the request's ``on_text``, :meth:`end` says it
    ended, :meth:`wait` passes each piece on until then."""

    def __init__(self, on_text: OnText | None) -> None:
        self.on_text = on_text
        # the request's text pieces, then None when it ended
        self._pieces: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self.emit: OnText = self._pieces.put if on_text is not None else ignore_text

    def end(self) -> None:
        self._pieces.put(None)

    def wait(self, until: float, abandon: Callable[[], object]) -> bool:
        """Passes each piece to ``on_text`` until the request ended (True) or the monotonic
        clock reached ``until`` (False). An error ``on_text`` raises calls ``abandon`` (the
        request's) and is raised."""
        while True:
            try:
                piece = self._pieces.get(timeout=max(until - time.monotonic(), 0.0))
            except queue.Empty:
                return False
            if piece is None:
                return True
            if self.on_text is not None:
                try:
                    self.on_text(piece)
                except BaseException:
                    abandon()
                    raise


#: Error types (``type`` or ``code``) an error event carries for what a 429 or a 5xx says on
#: a whole reply: worth a retry.
_TRANSIENT_KINDS = frozenset(
    {
        "overloaded_error",
        "rate_limit_error",
        "rate_limit_exceeded",
        "api_error",
        "server_error",
        "internal_server_error",
        "service_unavailable",
        "timeout_error",
    }
)


def stream_error(error: Any) -> LLMError:
    """The error an error event carries, raised in its place: a :class:`TransientLLMError`
    for an overload, a rate limit or the provider's own failure (so ptc's retry policy
    retries it), else an :class:`LLMReplyError`."""
    obj = is_object(error)
    kind, code = (field(error, "type"), field(error, "code")) if obj else (None, None)
    message = field(error, "message") if obj else error
    shown = message if isinstance(message, str) else describe_value(message)
    label = kind if isinstance(kind, str) and kind else "of no type"
    text = f"the reply's event stream carried an error ({label}): {shown[:500]}"
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    named = {v for v in (kind, code) if isinstance(v, str)}
    if (
        named & _TRANSIENT_KINDS
        or status in (408, 409, 425, 429)
        or (status is not None and 500 <= status < 600)
    ):
        return TransientLLMError(text)
    return LLMReplyError(text, "error")


class StreamedReply:
    """A streamed reply read event by event into the reply a request without streaming gets:
    each event gives the text it adds; :meth:`reply` is the whole, once the stream's closing
    event (``closing``) came."""

    closing = ""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.done = False

    def _add(self, text: str) -> str:
        if text:
            self.parts.append(text)
        return text

    def event(self, name: str, data: str, watch: Watch) -> str:
        raise NotImplementedError

    def usage(self) -> dict[str, int]:
        raise NotImplementedError

    def complete(self) -> bool:
        return self.done

    def reply(self) -> LLMReply:
        if not self.complete():
            raise LLMReplyError(
                f"the reply's event stream ended before its closing event ({self.closing}),"
                f" after {sum(map(len, self.parts)):,} characters of text"
            )
        return LLMReply("".join(self.parts), self.usage())


class OpenAIStream(StreamedReply):
    """Chat-completion chunks: the first choice's ``delta.content``, the last ``usage`` sent
    (with ``stream_options={"include_usage": True}``, a chunk of its own before the end)."""

    closing = "data: [DONE]"

    def __init__(self) -> None:
        super().__init__()
        self.raw_usage: Any = None
        #: a chunk gave the first choice's finish_reason
        self.finished = False

    def event(self, name: str, data: str, watch: Watch) -> str:
        if self.done:  # what follows the end is no part of the reply
            return ""
        if data.strip() == "[DONE]":
            self.done = True
            return ""
        chunk = event_json(data, watch)
        if name == "error" or chunk.get("error") is not None:
            raise stream_error(chunk.get("error", chunk))
        return self.chunk(chunk)

    def chunk(self, chunk: Any) -> str:
        """The text a chunk adds (a JSON object, or an SDK's chunk object)."""
        usage = field(chunk, "usage")
        if usage is not None:
            if not is_object(usage):
                raise wrong_type("usage", "an object", usage)
            self.raw_usage = usage
        choices = field(chunk, "choices")
        if choices is None:
            return ""
        if not isinstance(choices, list | tuple):
            raise wrong_type("choices", "a list", choices)
        text = ""
        for position, choice in enumerate(choices):
            if not is_object(choice):
                raise wrong_type(f"choices[{position}]", "an object", choice)
            index = field(choice, "index")
            if (position if index is None else index) != 0:
                continue  # the reply is the first choice's, as without streaming
            if field(choice, "finish_reason") is not None:
                self.finished = True
            delta = field(choice, "delta")
            if delta is None:
                continue
            if not is_object(delta):
                raise wrong_type("choices[0].delta", "an object", delta)
            content = field(delta, "content")
            if isinstance(content, list | tuple):
                content = text_parts(content)
            elif content is not None and not isinstance(content, str):
                raise wrong_type("choices[0].delta.content", "text or a list of parts", content)
            text += self._add(content or "")
        return text

    def usage(self) -> dict[str, int]:
        return openai_usage(self.raw_usage)


class AnthropicStream(StreamedReply):
    """Messages events: text blocks' ``text_delta``; the usage of ``message_start`` (input
    tokens, cache reads and writes) updated by each ``message_delta`` (output tokens)."""

    closing = "event: message_stop"

    def __init__(self) -> None:
        super().__init__()
        self.raw_usage: dict[str, Any] = {}

    def _usage_from(self, usage: Any, path: str) -> None:
        if usage is None:
            return
        if not isinstance(usage, Mapping):
            raise wrong_type(path, "an object", usage)
        self.raw_usage.update((k, v) for k, v in usage.items() if v is not None)

    def event(self, name: str, data: str, watch: Watch) -> str:
        if self.done:
            return ""
        payload = event_json(data, watch)
        kind = payload.get("type") if name == "message" else name
        if kind == "error":
            raise stream_error(payload.get("error"))
        if kind == "message_start":
            message = payload.get("message")
            if not isinstance(message, Mapping):
                raise wrong_type("message_start.message", "an object", message)
            self._usage_from(message.get("usage"), "message_start.message.usage")
        elif kind == "content_block_start":
            block = payload.get("content_block")
            if field(block, "type") == "text" and isinstance(text := field(block, "text"), str):
                return self._add(text)
        elif kind == "content_block_delta":
            delta = payload.get("delta")
            if not isinstance(delta, Mapping):
                raise wrong_type("content_block_delta.delta", "an object", delta)
            if delta.get("type") == "text_delta":
                text = delta.get("text")
                if not isinstance(text, str):
                    raise wrong_type("content_block_delta.delta.text", "text", text)
                return self._add(text)
        elif kind == "message_delta":
            self._usage_from(payload.get("usage"), "message_delta.usage")
        elif kind == "message_stop":
            self.done = True
        return ""  # ping, content_block_stop, and events added to the API later

    def usage(self) -> dict[str, int]:
        return anthropic_usage(self.raw_usage)


class LiteLLMStream(OpenAIStream):
    """litellm's chunks (chat-completion chunks, whatever the provider): litellm reads the
    events itself, so the end it shows is a chunk with the first choice's finish_reason."""

    closing = "a chunk with a finish_reason"

    def complete(self) -> bool:
        return self.finished


def read_stream(
    response: Any,
    watch: Watch,
    stream: StreamedReply,
    whole: Callable[[dict[str, Any]], LLMReply],
    on_text: OnText,
) -> LLMReply:
    """The reply to a streamed request, read from its HTTP response (then closed) by
    ``stream``; a whole reply (JSON) read by ``whole``."""
    try:
        if not is_event_stream(response):
            return _whole(whole(read_whole(response, watch)), on_text)
        for name, data in read_events(response, watch):
            if text := stream.event(name, data, watch):
                on_text(text)
        return stream.reply()
    finally:
        response.close()


async def aread_stream(
    response: Any,
    watch: Watch,
    stream: StreamedReply,
    whole: Callable[[dict[str, Any]], LLMReply],
    on_text: OnText,
) -> LLMReply:
    """Async twin of :func:`read_stream`."""
    try:
        if not is_event_stream(response):
            return _whole(whole(await aread_whole(response, watch)), on_text)
        async for name, data in aread_events(response, watch):
            if text := stream.event(name, data, watch):
                on_text(text)
        return stream.reply()
    finally:
        await response.aclose()


def _whole(reply: LLMReply, on_text: OnText) -> LLMReply:
    """A server that does not stream answered with the whole reply: its text is one piece."""
    if reply.content:
        on_text(reply.content)
    return reply


def read_chunks(
    chunks: Iterable[Any], watch: Watch, stream: OpenAIStream, on_text: OnText
) -> LLMReply:
    """The reply an SDK's chunks make (litellm's: it reads the events itself), read by
    ``stream``; the chunks are closed after."""
    try:
        for chunk in chunks:
            if watch.abandoned:  # its caller has had LLMTimeoutError
                break
            if text := stream.chunk(chunk):
                on_text(text)
    finally:
        _close(chunks)
    return stream.reply()


async def aread_chunks(
    chunks: AsyncIterable[Any], stream: OpenAIStream, on_text: OnText
) -> LLMReply:
    """Async twin of :func:`read_chunks`."""
    try:
        async for chunk in chunks:
            if text := stream.chunk(chunk):
                on_text(text)
    finally:
        await _aclose(chunks)
    return stream.reply()


def _close(chunks: Any) -> None:
    close = getattr(chunks, "close", None)
    if callable(close):
        close()


async def _aclose(chunks: Any) -> None:
    aclose = getattr(chunks, "aclose", None)
    if callable(aclose):
        await aclose()
