"""The LLM protocol: a callable taking chat messages and returning the reply.

An LLM is any ``callable(messages: list[dict]) -> str | {"content": str, "usage": {...}}``, sync or
async. Messages are plain OpenAI-shaped dicts (``{"role": ..., "content": ...}``), so any client can
send them. :class:`ScriptedLLM` replays canned replies for tests and examples.

An LLM whose ``streams`` attribute is true also takes ``on_text``, a function it calls with each
piece of its reply's text as it arrives (the adapters made with ``stream=True``, a
:class:`ScriptedLLM` given ``stream_chunks``); :func:`call_llm` passes it only to those.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Union, cast

from ptc._aio import call_async, call_sync, is_async_callable
from ptc.llm._adapter import Messages, retry_after
from ptc.llm._anthropic import anthropic
from ptc.llm._litellm import litellm
from ptc.llm._openai import openai
from ptc.llm._read import normalize_reply
from ptc.llm._stream import OnText
from ptc.llm.reply import (
    LLMError,
    LLMReply,
    LLMReplyError,
    LLMReplyTooLargeError,
    LLMTimeoutError,
    TransientLLMError,
)
from ptc.llm.scripted import AsyncScriptedLLM, ScriptedLLM, ScriptExhausted

LLM = Callable[[Messages], Union[Any, Awaitable[Any]]]  # noqa: UP007 (runtime alias)

__all__ = [
    "LLM",
    "AsyncScriptedLLM",
    "LLMError",
    "LLMReply",
    "LLMReplyError",
    "LLMReplyTooLargeError",
    "LLMTimeoutError",
    "Messages",
    "OnText",
    "RetryPolicy",
    "ScriptExhausted",
    "ScriptedLLM",
    "TransientLLMError",
    "acall_llm",
    "anthropic",
    "attempts_of",
    "call_llm",
    "from_string",
    "is_async_llm",
    "is_transient",
    "litellm",
    "normalize_reply",
    "openai",
    "retry_after",
]


_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
_TRANSIENT_NAMES = {
    "RateLimitError",
    "APITimeoutError",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "OverloadedError",
    "Timeout",
    "ReadTimeout",
    "ConnectTimeout",
}


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: timeouts, connection problems, 429/5xx from a client."""
    if isinstance(exc, TransientLLMError | TimeoutError | ConnectionError):
        return True
    status = getattr(exc, "status_code", None) or getattr(exc, "status", None)
    if isinstance(status, int) and status in _TRANSIENT_STATUS:
        return True
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


@dataclass(frozen=True)
class RetryPolicy:
    """Retry transient LLM errors with exponential backoff (no jitter: runs stay reproducible)."""

    attempts: int = 3
    initial_delay: float = 0.5
    multiplier: float = 2.0
    max_delay: float = 8.0
    retry_if: Callable[[BaseException], bool] = is_transient

    #: The longest ``Retry-After`` waited for; a server asking for longer is not retried.
    max_retry_after: float = 60.0

    def delay(self, retry_number: int) -> float:
        return min(self.initial_delay * self.multiplier ** (retry_number - 1), self.max_delay)

    def wait_before(self, retry_number: int, exc: BaseException) -> float | None:
        """Seconds to wait before retry ``retry_number`` after ``exc``: the backoff, or longer
        when the server said ``Retry-After``; ``None`` to give up instead."""
        if retry_number >= self.attempts or not self.retry_if(exc):
            return None
        backoff = self.delay(retry_number)
        asked = retry_after(exc)  # never NaN nor negative: unreadable values come as None
        if asked is None:
            return backoff
        if asked > self.max_retry_after:
            return None
        return max(asked, backoff)


#: The providers a ``"provider:model"`` string may name, with the adapter each one makes.
PROVIDERS: dict[str, Callable[..., Any]] = {
    "openai": openai,
    "anthropic": anthropic,
    "litellm": litellm,
}


def from_string(spec: str, **options: Any) -> LLM:
    """The LLM a ``"provider:model"`` string names, as the CLI's ``--model`` takes it:
    ``from_string("openai:gpt-4.1-mini")`` is ``openai("gpt-4.1-mini")``; the providers are
    ``openai``, ``anthropic`` and ``litellm`` (``"litellm:anthropic/claude-..."``: the rest
    after the first ``:`` is the model). ``options`` go to the adapter (``base_url=...``).
    ``SubAgent(llm="openai:gpt-4.1-mini")`` calls this. Raises ``TypeError`` for a value
    that is not a string, ``ValueError`` naming the providers for one of another form."""
    if not isinstance(spec, str):
        raise TypeError(
            f"an LLM name is a 'provider:model' string, got {type(spec).__name__} {spec!r}"
        )
    provider, colon, model = spec.partition(":")
    make = PROVIDERS.get(provider.strip().lower())
    if not colon or make is None or not model.strip():
        names = ", ".join(PROVIDERS)
        raise ValueError(
            f"{_shown(spec)} is not a 'provider:model' string: expected one of {names}, a colon"
            " and the model's name (e.g. 'openai:gpt-4.1-mini'); for a server of your own, pass"
            " an adapter: ptc.llm.openai('MODEL', base_url='http://localhost:11434/v1')"
        )
    return cast(LLM, make(model.strip(), **options))


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 80 else f"{text[:60]!r}... ({len(text)} characters)"


def is_async_llm(llm: Any) -> bool:
    return is_async_callable(llm)


ATTEMPTS_ATTR = "ptc_llm_attempts"


def _note_attempts(exc: BaseException, attempts: int) -> None:
    """Record on the final error how many attempts were made (read by :func:`attempts_of`)."""
    try:
        setattr(exc, ATTEMPTS_ATTR, attempts)
    except (AttributeError, TypeError):  # an exception type that refuses new attributes
        pass


def attempts_of(exc: BaseException) -> int:
    """Attempts :func:`call_llm`/:func:`acall_llm` made before giving up with ``exc`` (>= 1)."""
    value = getattr(exc, ATTEMPTS_ATTR, 1)
    return value if isinstance(value, int) and value >= 1 else 1


def _copy(messages: Messages) -> Messages:
    return [dict(m) for m in messages]


def _streams(llm: Any, on_text: OnText | None) -> bool:
    return on_text is not None and bool(getattr(llm, "streams", False))


def _restart(on_text: OnText | None, attempt: int) -> None:
    """Before a retry: the text a failed attempt streamed is no part of the reply, so a
    receiver with a ``restart()`` is told to drop it."""
    restart = getattr(on_text, "restart", None)
    if attempt > 1 and callable(restart):
        restart()


class _Attempts:
    """The attempts of one call (:func:`call_llm` and :func:`acall_llm` alike; each waits its
    own way): each attempt's arguments, the wait before a retry, the text passed on at the end."""

    def __init__(
        self, llm: Any, messages: Messages, retry: RetryPolicy, on_text: OnText | None
    ) -> None:
        self.streams = _streams(llm, on_text)
        self.messages = messages
        self.retry = retry
        self.on_text = on_text
        self.number = 0

    def start(self) -> None:
        """The next attempt begins (a retry's receiver drops the text streamed so far)."""
        self.number += 1
        _restart(self.on_text, self.number)

    def args(self) -> tuple[Any, ...]:
        """What the LLM is called with: a copy of the messages (and ``on_text`` if it streams)."""
        if self.streams:
            return (_copy(self.messages), self.on_text)
        return (_copy(self.messages),)

    def wait_after(self, exc: Exception) -> float:
        """Seconds to wait before retrying after ``exc``; with no retry left, ``exc`` is raised
        (carrying the number of attempts made)."""
        wait = self.retry.wait_before(self.number, exc)
        if wait is None:
            _note_attempts(exc, self.number)
            raise exc
        return wait

    def done(self, reply: LLMReply) -> tuple[LLMReply, int]:
        """The reply and the retries used; an LLM that does not stream has its text passed to
        ``on_text`` once, whole."""
        if self.on_text is not None and not self.streams:
            self.on_text(reply.content)
        return reply, self.number - 1


def call_llm(
    llm: LLM, messages: Messages, retry: RetryPolicy, on_text: OnText | None = None
) -> tuple[LLMReply, int]:
    """Call a sync LLM with retries; returns the reply and the number of retries used.

    ``on_text`` gets the reply's text: passed to an LLM that ``streams``, which calls it with
    each piece as it arrives; for any other LLM it is called once with the whole text. Before
    each retry, ``on_text.restart()`` is called if it has one (a retry streams anew)."""
    attempts = _Attempts(llm, messages, retry, on_text)
    while True:
        attempts.start()
        try:
            # (a sync-looking callable may return a coroutine: it is run to completion)
            reply = normalize_reply(call_sync(llm, *attempts.args()))
            break
        except Exception as exc:
            time.sleep(attempts.wait_after(exc))
    return attempts.done(reply)


async def acall_llm(
    llm: LLM, messages: Messages, retry: RetryPolicy, on_text: OnText | None = None
) -> tuple[LLMReply, int]:
    """Async twin of :func:`call_llm`; a sync callable runs in a worker thread (and calls
    ``on_text`` there, if it streams)."""
    attempts = _Attempts(llm, messages, retry, on_text)
    while True:
        attempts.start()
        try:
            args = attempts.args()
            acall = getattr(llm, "acall", None)
            if acall is not None and inspect.iscoroutinefunction(acall):
                raw = await acall(*args)  # an adapter's async twin
            else:
                raw = await call_async(llm, *args)
            reply = normalize_reply(raw)
            break
        except Exception as exc:
            await asyncio.sleep(attempts.wait_after(exc))
    return attempts.done(reply)
