"""What the provider adapters share: the SDK imported lazily, retries left to ptc, deadlines,
and a whole reply's fields read into an :class:`LLMReply`.

An adapter is a callable (sync ``__call__``) with an async twin ``acall``; both take the
agent's OpenAI-shaped ``[{"role", "content"}]`` messages (and ``on_text``) and return an
:class:`LLMReply`. The SDK's own retries are switched off so that one policy
(:class:`ptc.llm.RetryPolicy`, which honours ``Retry-After``) governs every provider and is
counted in ``Usage.llm_retries``.

An adapter made with ``stream=True`` (``streams``) asks for a streamed reply and passes each
piece of its text to ``on_text`` as it arrives; the reply returned is the one a request
without streaming gets (its text the pieces joined, its usage read the same way). The
deadline bounds the whole stream and ``max_reply_bytes`` every byte of it; the stream is read
by :mod:`ptc.llm._stream`.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime as dt
import email.utils
import importlib
import math
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar, cast

from ptc._aio import run_blocking
from ptc.llm._http import (
    ACCEPT_ENCODING,
    DEFAULT_MAX_REPLY_BYTES,
    Watch,
    check_max_reply_bytes,
    hook_client,
    reply_json,
)
from ptc.llm._stream import OnText, Relay, StreamedReply, aread_stream, ignore_text, read_stream
from ptc.llm.reply import LLMReply, LLMTimeoutError

T = TypeVar("T")

#: The chat messages of one LLM request (``ptc.compression.ChatMessage`` dicts).
Messages = list[dict[str, str]]


def install_hint(extra: str) -> str:
    """How to install ptc with ``extra``: from the package index (a wheel), and from a clone
    (the contributor's path, and the only one until a release is tagged)."""
    return (
        f"pip install 'ptc-runtime[{extra}]' (from a clone of its repository, at its root:"
        f" pip install '.[{extra}]')"
    )


def require(module: str, extra: str) -> Any:
    """Imports an optional SDK, or says which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        package = module.split(".")[0]
        raise ImportError(
            f"the {package!r} package is needed for this: {install_hint(extra)}"
        ) from exc


#: ``Retry-After`` as delay-seconds: digits (RFC 9110), a fraction and a sign tolerated.
_DELAY = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")


def _delay(text: Any, per_second: float) -> float | None:
    """A header's delay in seconds: ``None`` unless it is a number written as digits (``nan``,
    ``inf``, ``1e3``, ``soon`` are not); never negative; ``inf`` when the digits overflow (a
    wait too long to honour, like any other over ``RetryPolicy.max_retry_after``)."""
    if not isinstance(text, str) or not _DELAY.fullmatch(text.strip()):
        return None
    return max(float(text) / per_second, 0.0)


def _http_date(text: Any) -> float | None:
    """Seconds until an HTTP date (any of its three forms; a date without a zone is GMT, as
    HTTP dates always are); 0 for a date past."""
    if not isinstance(text, str):
        return None
    try:
        when = email.utils.parsedate_to_datetime(text)
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.UTC)
        return max(when.timestamp() - time.time(), 0.0)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait before retrying (``Retry-After`` or ``retry-after-ms``
    on the error's HTTP response, or a ``retry_after`` attribute), if it said so in a form
    that can be read: a value that cannot (``nan``, ``inf``, ``soon``, a broken date) counts
    as not said, so the policy's own backoff applies. Never negative nor NaN; ``inf`` only for
    a delay too large to write as a float (the policy gives up on it, as on any wait over
    ``max_retry_after``)."""
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an int too large for a float
            return math.inf
        return None if math.isnan(seconds) else max(seconds, 0.0)
    headers = getattr(getattr(exc, "response", None), "headers", None)
    get = getattr(headers, "get", None)
    if not callable(get):
        return None
    ms = _delay(get("retry-after-ms"), 1000.0)
    if ms is not None:
        return ms
    text = get("retry-after")
    delay = _delay(text, 1.0)
    return delay if delay is not None else _http_date(text)


#: Seconds one LLM request may take in all (each retry has its own): the SDKs' read timeouts
#: bound each wait for a byte, so a provider that trickles its reply a byte at a time held a
#: request forever. 600 s is the SDKs' own default request timeout (openai and anthropic), so no
#: request they would wait for is cut; a request still unanswered then is stalled.
DEFAULT_DEADLINE = 600.0


def check_deadline(deadline: Any) -> float | None:
    """``deadline=`` as given to an adapter: seconds (a positive, finite number) or ``None``."""
    if deadline is None:
        return None
    if isinstance(deadline, bool) or not isinstance(deadline, int | float):
        raise TypeError(
            f"deadline must be a number of seconds or None, got {type(deadline).__name__}"
        )
    if not (0 < deadline < math.inf):
        raise ValueError(f"deadline must be a positive, finite number of seconds, got {deadline}")
    return float(deadline)


class Adapter:
    """Base of the provider adapters: a sync call and its async twin, each ended by
    :class:`~ptc.llm.LLMTimeoutError` when the request is not answered within ``deadline``
    seconds (``None``: no deadline of ptc's, only the SDK's read timeout). With ``stream``
    (``streams``), the reply is asked for as a stream and its text passed to ``on_text`` a
    piece at a time, as it arrives."""

    provider = "llm"
    #: The bound on one reply's size (bytes after decompression); ``None``: none of ptc's.
    max_reply_bytes: int | None = None
    #: Replies are streamed: ``on_text`` gets their text as it arrives.
    streams = False

    def __init__(
        self,
        model: str,
        params: Mapping[str, Any],
        *,
        deadline: float | None = DEFAULT_DEADLINE,
        stream: bool = False,
    ) -> None:
        self.model = model
        self.params = dict(params)
        self.deadline = check_deadline(deadline)
        if not isinstance(stream, bool):
            raise TypeError(f"stream must be True or False, got {type(stream).__name__}")
        self.streams = stream

    def __repr__(self) -> str:
        return f"ptc.llm.{self.provider}({self.model!r})"

    def _watch(self) -> Watch:
        return Watch(repr(self), self.max_reply_bytes)

    def __call__(self, messages: Messages, on_text: OnText | None = None) -> LLMReply:
        """The reply to ``messages``. ``on_text`` gets its text: each piece as it arrives
        when the adapter streams, else the whole text once, when it came."""
        watch = self._watch()
        streamed = on_text if self.streams else None
        reply = self._within_deadline(
            lambda emit: self._request(messages, watch, emit), watch, streamed
        )
        if on_text is not None and not self.streams:
            on_text(reply.content)
        return reply

    async def acall(self, messages: Messages, on_text: OnText | None = None) -> LLMReply:
        """Async twin of ``__call__`` (``on_text`` is called on the event loop)."""
        watch = self._watch()
        emit = (on_text or ignore_text) if self.streams else ignore_text
        reply = await self._awithin_deadline(self._arequest(messages, watch, emit), watch)
        if on_text is not None and not self.streams:
            on_text(reply.content)
        return reply

    def _request(self, messages: Messages, watch: Watch, on_text: OnText) -> LLMReply:
        """The request, sent and answered (no deadline of its own); ``watch`` bounds it; a
        streamed reply's text goes to ``on_text`` as it arrives."""
        raise NotImplementedError

    async def _arequest(self, messages: Messages, watch: Watch, on_text: OnText) -> LLMReply:
        raise NotImplementedError

    def _timed_out(self) -> LLMTimeoutError:
        assert self.deadline is not None
        return LLMTimeoutError(
            f"{self!r}: no complete reply within the request deadline of {self.deadline:g} s"
            " (set by the adapter's deadline=; each retry has its own)",
            deadline=self.deadline,
        )

    def _within_deadline(
        self, request: Callable[[OnText], T], watch: Watch, on_text: OnText | None = None
    ) -> T:
        """``request(emit)`` on a thread of its own, waited for until the deadline. A blocking
        SDK call cannot be interrupted; past the deadline the caller gets LLMTimeoutError and
        the request is abandoned: its sockets are shut down, so its thread (a daemon) stops
        reading and ends as on a dropped connection (it went on reading an endless body, 350
        MB/s). The text the request emits is passed to ``on_text`` on the caller's thread,
        within the deadline, so none reaches it after the caller has had its error; an error
        ``on_text`` raises abandons the request and is the caller's."""
        if self.deadline is None:
            return request(on_text or ignore_text)
        outcome: list[Any] = []  # [True, value] or [False, exception]
        relay = Relay(on_text)
        context = contextvars.copy_context()

        def work() -> None:
            try:
                outcome.extend((True, context.run(request, relay.emit)))
            except BaseException as exc:  # handed to the caller, whatever it is
                outcome.extend((False, exc))
            finally:
                relay.end()

        thread = threading.Thread(target=work, name=f"ptc-llm-{self.provider}", daemon=True)
        thread.start()
        if not relay.wait(time.monotonic() + self.deadline, lambda: watch.abandon(thread)):
            watch.abandon(thread)
            raise self._timed_out() from None
        ok, value = outcome
        if ok:
            return cast(T, value)
        raise value

    async def _awithin_deadline(self, request: Awaitable[T], watch: Watch) -> T:
        """Awaits ``request`` until the deadline, then cancels it (which closes its
        connection) and raises LLMTimeoutError."""
        if self.deadline is None:
            return await request
        scope = asyncio.timeout(self.deadline)
        try:
            async with scope:
                return await request
        except TimeoutError:
            if scope.expired():
                watch.abandon()
                raise self._timed_out() from None
            raise


class SDKAdapter(Adapter):
    """An adapter over a provider SDK with a sync and an async client class. A client the user
    passes is used as given (either kind serves both paths), with its own retries off and
    ptc's response hook on its httpx client (:func:`ptc.llm._http.hook_client`: it acts only
    on ptc's requests). Replies are read as JSON by ptc, within ``max_reply_bytes``."""

    module = ""  # the SDK's import name (also the extra that installs it)
    sync_class = ""
    async_class = ""
    key_variable = ""

    def __init__(
        self,
        model: str,
        params: Mapping[str, Any],
        *,
        client: Any,
        base_url: str | None,
        api_key: str | None,
        deadline: float | None = DEFAULT_DEADLINE,
        max_reply_bytes: int | None = DEFAULT_MAX_REPLY_BYTES,
        stream: bool = False,
    ) -> None:
        super().__init__(model, params, deadline=deadline, stream=stream)
        self.max_reply_bytes = check_max_reply_bytes(max_reply_bytes)
        self._base_url = base_url
        self._api_key = api_key
        self._sync: Any = None
        self._async: Any = None
        if client is not None:
            sdk = require(self.module, self.module)
            # ptc's retry policy retries, so the SDK must not retry as well
            quiet = client.with_options(max_retries=0)
            if isinstance(client, getattr(sdk, self.async_class)):
                self._async = quiet
                hook_client(quiet, is_async=True)
            else:
                self._sync = quiet
                hook_client(quiet, is_async=False)

    def _options(self) -> dict[str, Any]:
        key = self._api_key or os.environ.get(self.key_variable)
        if key is None and self._base_url is not None:
            key = "unused"  # local servers take any key; the SDKs insist on one
        return {"base_url": self._base_url, "api_key": key, "max_retries": 0}

    def _new_client(self, is_async: bool) -> Any:
        """A client of the SDK's sync or async class, made from the adapter's options."""
        sdk = require(self.module, self.module)
        client = getattr(sdk, self.async_class if is_async else self.sync_class)(**self._options())
        hook_client(client, is_async=is_async)
        return client

    def _client(self) -> Any:
        if self._sync is None:
            self._sync = self._new_client(is_async=False)
        return self._sync

    def _aclient(self) -> Any:
        if self._async is None:
            self._async = self._new_client(is_async=True)
        return self._async

    def _kwargs(self, messages: Messages) -> dict[str, Any]:
        """The SDK call's arguments for ``messages``."""
        raise NotImplementedError

    def _create(self, client: Any, kwargs: dict[str, Any]) -> Any:
        """The SDK's raw-response call (a coroutine for an async client): its
        ``.http_response`` is read by ptc."""
        raise NotImplementedError

    def _reply(self, data: dict[str, Any]) -> LLMReply:
        raise NotImplementedError

    def _stream(self) -> StreamedReply:
        """A reader of the provider's streamed reply."""
        raise NotImplementedError

    def _send_kwargs(self, messages: Messages) -> dict[str, Any]:
        kwargs = self._kwargs(messages)
        headers = dict(kwargs.pop("extra_headers", None) or {})
        if not any(k.lower() == "accept-encoding" for k in headers):
            headers["Accept-Encoding"] = ACCEPT_ENCODING  # only what ptc decodes within bounds
        kwargs["extra_headers"] = headers
        return kwargs

    def __call__(self, messages: Messages, on_text: OnText | None = None) -> LLMReply:
        if self._sync is None and self._async is not None:
            # only an async client was given
            return run_blocking(self.acall(messages, on_text))
        return super().__call__(messages, on_text)

    async def acall(self, messages: Messages, on_text: OnText | None = None) -> LLMReply:
        if self._async is None and self._sync is not None:
            # only a sync client was given: on_text is called on the worker thread
            return await asyncio.to_thread(self, messages, on_text)
        return await super().acall(messages, on_text)

    def _request(self, messages: Messages, watch: Watch, on_text: OnText) -> LLMReply:
        client = self._client()
        with watch.active():
            raw = self._create(client, self._send_kwargs(messages))
        response = raw.http_response
        if not self.streams:
            return self._reply(reply_json(response, watch))
        return read_stream(response, watch, self._stream(), self._reply, on_text)

    async def _arequest(self, messages: Messages, watch: Watch, on_text: OnText) -> LLMReply:
        client = self._aclient()
        with watch.active():
            raw = await self._create(client, self._send_kwargs(messages))
        response = raw.http_response
        if not self.streams:
            return self._reply(reply_json(response, watch))
        return await aread_stream(response, watch, self._stream(), self._reply, on_text)
