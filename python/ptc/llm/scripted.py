"""A scripted fake LLM: replays canned replies and records the messages it was sent."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterable
from typing import Any

Reply = Any  # str | {"content": ..., "usage": ...} | Exception | callable(messages) -> reply


class ScriptExhausted(AssertionError):
    """The agent asked for more replies than the script holds."""


class ScriptedLLM:
    """Replays ``replies`` in order, one per call.

    A reply may be a string (usually a ```clojure block), a dict with ``content``/``usage``, an
    exception instance (raised, e.g. to test retries) or a callable ``(messages) -> reply`` for
    replies that depend on what the agent sent. ``calls`` keeps a deep copy of every message list
    received, so tests can assert exactly what the LLM saw.
    """

    def __init__(self, replies: Iterable[Reply], *, usage: dict[str, int] | None = None) -> None:
        self._replies = list(replies)
        self._usage = usage
        self._lock = threading.Lock()
        self.calls: list[list[dict[str, str]]] = []

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

    def __call__(self, messages: list[dict[str, str]]) -> Any:
        return self._next(messages)


def _call(fn: Callable[[Any], Any], messages: list[dict[str, str]]) -> Any:
    return fn(copy.deepcopy(messages))


class AsyncScriptedLLM(ScriptedLLM):
    """The same script behind an ``async`` call, for ``arun`` tests."""

    async def __call__(self, messages: list[dict[str, str]]) -> Any:
        return self._next(messages)
