"""Reading a provider's HTTP reply within bounds, and stopping a request that was given up.

The SDKs read a reply whole, decompressing whatever the server sent: a 6 MB gzip body that
expands to 6 GB took the process with it. An adapter's requests therefore carry a
:class:`Watch` (in a context variable), and the SDK client's httpx client gets one response
hook (:func:`hook_client`) that, for ptc's requests only, hands the body through a stream of
ptc's: it decodes gzip and deflate itself in pieces, counts the decoded bytes against
``max_reply_bytes`` and stops when the request was given up. Every body the SDK reads (a
reply, an error's body, a redirect's) passes through it.

A streamed reply's events are read by :mod:`ptc.llm._sse`, within the same bound.

A sync SDK call cannot be interrupted; at its deadline the waiting side calls
:meth:`Watch.abandon`, which shuts down the sockets the request reads from (a blocked ``recv``
returns at once and the SDK fails as on a dropped connection), the ones the hook saw and those
found in the abandoned thread's frames (a request still waiting for headers, or a library
ptc cannot hook, such as litellm's clients).
"""

from __future__ import annotations

import contextlib
import functools
import json
import socket
import sys
import threading
import time
import types
import zlib
from collections.abc import AsyncIterator, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from ptc.llm.reply import LLMError, LLMReplyError, LLMReplyTooLargeError

#: The default bound on one reply's size, in bytes after decompression: a hundred times the
#: longest answer a model writes (128k tokens of about 4 bytes, with their JSON), small
#: enough that a service holding a few replies at once stays in memory.
DEFAULT_MAX_REPLY_BYTES = 32 * 1024 * 1024

#: The most a JSON reply may hold of objects and arrays: one per this many bytes of the bound.
#: Parsing makes about 64 bytes of Python objects of each, so 32 MiB of ``[{},{},...]`` (11
#: million objects) took 640 MB; a chat completion holds one per 50 bytes or fewer.
BYTES_PER_CONTAINER = 16

#: Decoded bytes produced at a time: memory stays bounded while a bomb expands.
_PIECE = 1 << 20

_CURRENT: ContextVar[Watch | None] = ContextVar("ptc_llm_request", default=None)


def check_max_reply_bytes(value: Any) -> int | None:
    """``max_reply_bytes=`` as given to an adapter: a positive number of bytes, or ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"max_reply_bytes must be a number of bytes or None, got {type(value).__name__}"
        )
    if value < 1:
        raise ValueError(f"max_reply_bytes must be a positive number of bytes, got {value}")
    return value


class _Abandoned(Exception):
    """Raised into an abandoned request's reading (its caller has had LLMTimeoutError)."""


class Watch:
    """One request: its bound, whether it was given up, the sockets it reads from, and the
    error ptc raised while reading it (an SDK may wrap it; the adapter raises this one)."""

    def __init__(self, name: str, limit: int | None) -> None:
        self.name = name
        self.limit = limit
        self.abandoned = False
        self.failure: LLMError | None = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def active(self) -> Iterator[Watch]:
        """Marks the requests sent inside as this watch's (for the response hook). An error
        raised inside gives way to ptc's own, when ptc stopped the reading
        (:meth:`raise_failure`)."""
        token = _CURRENT.set(self)
        try:
            yield self
        except Exception:
            self.raise_failure()
            raise
        finally:
            _CURRENT.reset(token)

    def check(self) -> None:
        """Stops the reading of a request that was given up (its caller has had
        LLMTimeoutError)."""
        if self.abandoned:
            raise _Abandoned("the request was given up at its deadline")

    def fail(self, error: LLMError) -> LLMError:
        self.failure = error
        return error

    def raise_failure(self) -> None:
        """Raises the error ptc raised while reading, if it did: an SDK may have wrapped it
        (as a connection error, which the retry policy would retry)."""
        if self.failure is not None:
            raise self.failure from None

    def too_large(self, what: str) -> LLMReplyTooLargeError:
        error = LLMReplyTooLargeError(
            f"{self.name}: the reply {what} past max_reply_bytes={self.limit:,} (counted after"
            " decompression; set by the adapter's max_reply_bytes=): reading stopped",
            limit=self.limit,
        )
        self.fail(error)
        return error

    def adopt(self, response: Any) -> None:
        """Takes over reading ``response``'s body (called by the hook with the headers)."""
        sock = _socket_of(response)
        if sock is not None:
            self._add(sock)
        headers = response.headers
        codings = [
            c.strip().lower()
            for c in (headers.get("content-encoding") or "").split(",")
            if c.strip() and c.strip().lower() != "identity"
        ]
        stream = _wrap(response, _Body(self, codings))
        if stream is None:
            return  # a stream of a kind ptc does not know: read as the client reads it
        if codings:  # decoded by ptc: the client must not decode it again
            del headers["content-encoding"]
        response.stream = stream

    def _add(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            abandoned = self.abandoned
        if abandoned:
            _shut(sock)

    def abandon(self, thread: threading.Thread | None = None) -> None:
        """The request was given up: its reading stops at the next piece, its sockets are shut
        down, and (for a sync request) the sockets in ``thread``'s frames too, until it ends."""
        with self._lock:
            self.abandoned = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)
        if thread is not None and thread.ident is not None and thread.is_alive():
            threading.Thread(
                target=_reap, args=(thread,), name="ptc-llm-abandon", daemon=True
            ).start()


def _socket_of(response: Any) -> socket.socket | None:
    stream = getattr(response, "extensions", {}).get("network_stream")
    try:
        sock = stream.get_extra_info("socket") if stream is not None else None
    except Exception:  # a stream that keeps no socket
        return None
    return sock if isinstance(sock, socket.socket) else None


def _shut(sock: socket.socket) -> None:
    """Shuts ``sock`` down for both directions: a ``recv`` blocked on it returns at once (what
    the kernel had buffered still reads out). ``close`` from another thread could free the
    descriptor for reuse under the reader; the base class's method also leaves an SSL
    socket's state to its own thread."""
    try:
        socket.socket.shutdown(sock, socket.SHUT_RDWR)
    except OSError:  # closed already, or never connected
        pass


#: How long a sync request's thread is searched for sockets after it was given up.
_REAP_SECONDS = 2.0


def _reap(thread: threading.Thread) -> None:
    """Shuts down the sockets in ``thread``'s frames until it ends (a thread between two reads
    shows none, so it is looked at again)."""
    until = time.monotonic() + _REAP_SECONDS
    while thread.is_alive() and time.monotonic() < until:
        for sock in _sockets_in(thread):
            _shut(sock)
        time.sleep(0.02)


_OPAQUE = (type, types.ModuleType, types.FunctionType, types.MethodType, types.CodeType)


def _sockets_in(thread: threading.Thread) -> list[socket.socket]:
    """Sockets a thread's frames hold: in a local, or one or two attributes away from one
    (``self._sock`` of an httpcore stream, ``self._network_stream._sock`` of a connection)."""
    frame = sys._current_frames().get(thread.ident or -1)
    found: dict[int, socket.socket] = {}
    while frame is not None:
        try:
            values = list(frame.f_locals.values())
        except Exception:  # a frame whose locals cannot be read now
            values = []
        for value in values:
            _collect(value, 2, found)
        frame = frame.f_back
    return list(found.values())


def _collect(value: Any, depth: int, found: dict[int, socket.socket]) -> None:
    if isinstance(value, socket.socket):
        found[id(value)] = value
        return
    if depth == 0 or isinstance(value, _OPAQUE):
        return
    try:  # the instance's own dict only: no __getattr__ runs
        attrs = object.__getattribute__(value, "__dict__")
    except Exception:
        return
    if isinstance(attrs, dict):
        for item in list(attrs.values()):
            _collect(item, depth - 1, found)


class _Inflate:
    """A gzip or deflate body decoded a piece at a time (``zlib``'s ``max_length``), so a
    body that expands a thousandfold never exists whole."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self.gzip = coding in ("gzip", "x-gzip")
        self.zlib = zlib.decompressobj(31 if self.gzip else 15)
        self.started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data:
            try:
                out = self.zlib.decompress(data, _PIECE)
            except zlib.error as exc:
                if not self.gzip and not self.started:  # deflate without its zlib header
                    self.zlib, self.started = zlib.decompressobj(-zlib.MAX_WBITS), True
                    continue
                raise LLMReplyError(f"the reply's {self.coding} body is corrupt: {exc}") from None
            self.started = True
            if out:
                yield out
            data = self.zlib.unconsumed_tail
            if self.zlib.eof:
                rest, data = self.zlib.unused_data, b""
                if self.gzip and rest.startswith(b"\x1f\x8b"):  # another gzip member
                    self.zlib, data = zlib.decompressobj(31), rest

    def end(self) -> Iterator[bytes]:
        out = self.zlib.flush()
        if out:
            yield out
        if not self.zlib.eof:  # a body cut short shows only here when no length was sent
            raise LLMReplyError(f"the reply's {self.coding} body ends before its compressed data")


_CODINGS = ("gzip", "x-gzip", "deflate")
_MAX_CODINGS = 4

#: What ptc's requests accept: the codings it decodes within the bound (a server may still
#: send another; it is refused, never decoded unbounded).
ACCEPT_ENCODING = "gzip, deflate"


class _Body:
    """One response body on its way to the client: decoded, counted, stopped when given up."""

    def __init__(self, watch: Watch, codings: list[str]) -> None:
        self.watch = watch
        self.size = 0
        unknown = [c for c in codings if c not in _CODINGS]
        self.refused: LLMReplyError | None = None
        if unknown:
            self.refused = LLMReplyError(
                f"the reply's content-encoding is {', '.join(codings)[:200]!r}; ptc decodes only"
                " gzip and deflate (within max_reply_bytes), and asks for no other"
            )
        elif len(codings) > _MAX_CODINGS:  # each is a decoder, and a level of recursion
            self.refused = LLMReplyError(
                f"the reply's content-encoding lists {len(codings)} codings; ptc undoes at"
                f" most {_MAX_CODINGS}"
            )
        # applied in order by the server, so undone last first
        self.decoders = [] if self.refused else [_Inflate(c) for c in reversed(codings)]

    def _check(self) -> None:
        self.watch.check()
        if self.refused is not None:
            raise self.watch.fail(self.refused)

    def _through(self, data: bytes, stage: int, *, end: bool = False) -> Iterator[bytes]:
        if stage == len(self.decoders):
            if data:
                yield data
            return
        decoder = self.decoders[stage]
        pieces = decoder.end() if end else decoder.feed(data)
        try:
            for piece in pieces:
                yield from self._through(piece, stage + 1)
        except LLMReplyError as exc:
            raise self.watch.fail(exc) from None
        if end:
            yield from self._through(b"", stage + 1, end=True)

    def _counted(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        limit = self.watch.limit
        for piece in pieces:
            self._check()
            self.size += len(piece)
            if limit is not None and self.size > limit:
                raise self.watch.too_large("grew")
            yield piece

    def feed(self, raw: bytes) -> Iterator[bytes]:
        self._check()
        return self._counted(self._through(raw, 0))

    def end(self) -> Iterator[bytes]:
        self._check()
        return self._counted(self._through(b"", 0, end=True))


class _SyncBody:
    def __init__(self, inner: Any, body: _Body) -> None:
        self._inner = inner
        self._body = body

    def __iter__(self) -> Iterator[bytes]:
        for raw in self._inner:
            yield from self._body.feed(raw)
        yield from self._body.end()

    def close(self) -> None:
        self._inner.close()


class _AsyncBody:
    def __init__(self, inner: Any, body: _Body) -> None:
        self._inner = inner
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for raw in self._inner:
            for piece in self._body.feed(raw):
                yield piece
        for piece in self._body.end():
            yield piece

    async def aclose(self) -> None:
        await self._inner.aclose()


@functools.cache
def _stream_class(mixin: type, base: type) -> type:
    """``mixin`` made a stream of the response's own httpx (``httpx`` or ``httpx2``: the
    client checks what it iterates is one of its streams)."""
    return type(f"Bounded{base.__name__}", (mixin, base), {})


def _wrap(response: Any, body: _Body) -> Any | None:
    httpx = sys.modules.get(type(response).__module__.partition(".")[0])
    sync_base = getattr(httpx, "SyncByteStream", None)
    async_base = getattr(httpx, "AsyncByteStream", None)
    stream = response.stream
    if isinstance(async_base, type) and isinstance(stream, async_base):
        return _stream_class(_AsyncBody, async_base)(stream, body)
    if isinstance(sync_base, type) and isinstance(stream, sync_base):
        return _stream_class(_SyncBody, sync_base)(stream, body)
    return None


def _on_response(response: Any) -> None:
    watch = _CURRENT.get()
    if watch is not None:
        watch.adopt(response)


async def _aon_response(response: Any) -> None:
    _on_response(response)


_HOOK_LOCK = threading.Lock()


def hook_client(sdk_client: Any, *, is_async: bool) -> bool:
    """Adds ptc's response hook to the httpx client under an SDK client (once; it acts only
    on requests sent inside :meth:`Watch.active`). False when the client has none."""
    http = getattr(sdk_client, "_client", None)
    hooks = getattr(http, "event_hooks", None)
    responses = hooks.get("response") if isinstance(hooks, Mapping) else None
    if not isinstance(responses, list):
        return False
    hook = _aon_response if is_async else _on_response
    with _HOOK_LOCK:
        if hook not in responses:
            responses.append(hook)
    return True


def _first_bytes(body: bytes, n: int = 200) -> str:
    text = body[:n].decode("utf-8", "replace")
    return repr(text) + (f" ... ({len(body):,} bytes in all)" if len(body) > n else "")


def reply_json(response: Any, watch: Watch) -> dict[str, Any]:
    """The JSON object of a read HTTP reply; :class:`LLMReplyError` saying what came instead
    (its content type and first bytes), :class:`LLMReplyTooLargeError` past the bound."""
    body: bytes = response.content
    limit = watch.limit
    if limit is not None:
        if len(body) > limit:  # a client whose stream ptc could not take over
            raise watch.too_large(f"of {len(body):,} bytes is")
        containers = body.count(b"{") + body.count(b"[")
        if containers > limit // BYTES_PER_CONTAINER:
            raise watch.too_large(
                f"holds {containers:,} JSON objects and arrays, one per"
                f" {BYTES_PER_CONTAINER} bytes of the bound at most; it is"
            )
    ctype = response.headers.get("content-type") or "none"
    try:
        data = json.loads(body)
    except RecursionError:
        raise LLMReplyError(
            f"the reply is JSON nested too deeply to read (content-type: {ctype})"
        ) from None
    except ValueError as exc:  # UnicodeDecodeError too
        raise LLMReplyError(
            f"the reply is not JSON (content-type: {ctype}; {exc}): {_first_bytes(body)}"
        ) from None
    if not isinstance(data, dict):
        raise LLMReplyError(
            f"the reply is JSON but not an object (content-type: {ctype}): {_first_bytes(body)}"
        )
    return data
