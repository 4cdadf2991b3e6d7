"""A scripted fake LLM: replays canned replies and records the messages it was sent."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from ptc.errors import PtcError
from ptc.llm._read import normalize_reply

Reply = Any  # str | {"content": ..., "usage": ...} | Exception | callable(messages) -> reply

#: How a scripted reply is streamed: pieces of this many characters, or a function cutting
#: the reply's text into its pieces.
StreamChunks = int | Callable[[str], Iterable[str]]


class ScriptExhausted(PtcError, AssertionError):
    """The agent asked for more replies than the script holds."""


class ScriptedLLM:
    """Replays ``replies`` in order, one per call.

    A reply may be a string (usually a ```clojure block), a dict with ``content``/``usage``, an
    exception instance (raised, e.g. to test retries) or a callable ``(messages) -> reply`` for
    replies that depend on what the agent sent. ``calls`` keeps a deep copy of every message list
    received, so tests can assert exactly what the LLM saw.

    With ``stream_chunks`` the LLM ``streams``, as an adapter made with ``stream=True`` does:
    ``llm(messages, on_text=f)`` calls ``f`` with the reply's text in pieces (of
    ``stream_chunks`` characters, or those ``stream_chunks(text)`` returns, which must join
    to the text), ``chunk_delay`` seconds before each piece after the first, and returns the
    same reply.
    """

    def __init__(
        self,
        replies: Iterable[Reply],
        *,
        usage: dict[str, int] | None = None,
        stream_chunks: StreamChunks | None = None,
        chunk_delay: float = 0.0,
    ) -> None:
        if isinstance(stream_chunks, bool) or not (
            stream_chunks is None or callable(stream_chunks) or isinstance(stream_chunks, int)
        ):
            raise TypeError(
                "stream_chunks must be a number of characters or a function of the text,"
                f" got {type(stream_chunks).__name__}"
            )
        if isinstance(stream_chunks, int) and stream_chunks < 1:
            raise ValueError(f"stream_chunks must be at least 1 character, got {stream_chunks}")
        self._replies = list(replies)
        self._usage = usage
        self._chunks = stream_chunks
        self._delay = chunk_delay
        self._lock = threading.Lock()
        self.calls: list[list[dict[str, str]]] = []
        #: ``on_text`` gets the text in pieces (as from an adapter with ``stream=True``)
        self.streams = stream_chunks is not None

    @property
    def remaining(self) -> int:
        return len(self._replies) - len(self.calls)

    def _next(self, messages: list[dict[str, str]]) -> Any:
        with self._lock:
            index = len(self.calls)
            self.calls.append(copy.deepcopy(messages))
        if index >= len(self._replies):
            raise ScriptExhausted(f"ScriptedLLM has only {len(self._replies)} replies")
        reply = self._replies[index]
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = _call(reply, messages)
        if self._usage is not None and isinstance(reply, str):
            return {"content": reply, "usage": dict(self._usage)}
        return reply

    def _pieces(self, reply: Any) -> list[str]:
        """The pieces ``on_text`` gets: the text of ``reply`` as ``stream_chunks`` cuts it."""
        text = normalize_reply(reply).content
        if not self.streams:
            return [text]
        if isinstance(self._chunks, int):
            size = self._chunks
            return [text[i : i + size] for i in range(0, len(text), size)]
        assert self._chunks is not None
        pieces = list(self._chunks(text))
        if "".join(pieces) != text or not all(isinstance(p, str) for p in pieces):
            raise ValueError("stream_chunks(text) returned pieces that do not join to the text")
        return [p for p in pieces if p]

    def __call__(
        self, messages: list[dict[str, str]], on_text: Callable[[str], object] | None = None
    ) -> Any:
        reply = self._next(messages)
        if on_text is not None:
            for i, piece in enumerate(self._pieces(reply)):
                if i and self._delay:
                    time.sleep(self._delay)
                on_text(piece)
        return reply


def _call(fn: Callable[[Any], Any], messages: list[dict[str, str]]) -> Any:
    return fn(copy.deepcopy(messages))


class AsyncScriptedLLM(ScriptedLLM):
    """The same script behind an ``async`` call, for ``arun`` tests."""

    async def __call__(
        self, messages: list[dict[str, str]], on_text: Callable[[str], object] | None = None
    ) -> Any:
        reply = self._next(messages)
        if on_text is not None:
            for i, piece in enumerate(self._pieces(reply)):
                if i and self._delay:
                    await asyncio.sleep(self._delay)
                on_text(piece)
        return reply
