"""A streamed reply's server-sent events, read within the bounds of its request.

A streamed reply is read by ptc a piece at a time as it arrives: :func:`read_events` counts its
bytes against ``max_reply_bytes`` (the response hook of :mod:`ptc.llm._http` may not have taken
the stream over) and parses its events (:class:`EventStream`), and :func:`event_json` reads
each event's JSON within the same bound. A server that answers a streamed request with the
whole reply is read as one (:func:`read_whole`).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ptc.llm._http import BYTES_PER_CONTAINER, Watch, reply_json
from ptc.llm.reply import LLMError, LLMReplyError, TransientLLMError, describe_error

#: A line of an event stream ends at CRLF, LF or CR, and nowhere else (``str.splitlines`` would
#: also split at U+2028, U+0085 and others, which a model's text may hold).
_EOL = re.compile(rb"\r\n|\r|\n")

#: One server-sent event: its name (``"message"`` unless it says) and its data.
Event = tuple[str, str]


class EventStream:
    """Server-sent events parsed from a body's bytes as they arrive, by the WHATWG rules: an
    event ends at a blank line, its ``data:`` lines are joined with newlines, a line opening
    with ``:`` is a comment, one space after a field's colon is dropped. Lines are split as
    bytes (a UTF-8 character never holds CR or LF) and decoded whole, so a character split
    between two pieces is read as one."""

    def __init__(self) -> None:
        self._line: list[bytes] = []  # the line being read, in pieces
        self._cr = False  # the last piece ended with CR: a LF opening the next is its end too
        self._first = True
        self._name = ""
        self._data: list[str] = []

    def feed(self, piece: bytes) -> Iterator[Event]:
        if not piece:
            return
        if self._cr and piece.startswith(b"\n"):
            piece = piece[1:]
        self._cr = piece.endswith(b"\r")
        start = 0
        for end in _EOL.finditer(piece):
            self._line.append(piece[start : end.start()])
            line = b"".join(self._line)
            self._line.clear()
            start = end.end()
            event = self._take(line)
            if event is not None:
                yield event
        if start < len(piece):
            self._line.append(piece[start:])

    def end(self) -> Iterator[Event]:
        """The body ended: an event whose lines all ended is complete without the blank line
        after it; an unfinished line is dropped (the body was cut inside it)."""
        self._line.clear()
        if self._data:
            yield self._name or "message", "\n".join(self._data)
        self._name, self._data = "", []

    def _take(self, raw: bytes) -> Event | None:
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LLMReplyError(f"the reply's event stream is not UTF-8 text: {exc}") from None
        if self._first:
            line, self._first = line.removeprefix("\ufeff"), False
        if not line:
            event = (self._name or "message", "\n".join(self._data)) if self._data else None
            self._name, self._data = "", []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._name = value
        elif name == "data":
            self._data.append(value)
        return None  # id, retry and unknown fields mean nothing to a reply


def is_event_stream(response: Any) -> bool:
    """Whether a streamed request's reply is read as events: anything but a JSON body (which
    a server that does not stream answers with; one that streams may not say
    ``text/event-stream``)."""
    ctype = (response.headers.get("content-type") or "").partition(";")[0].strip().lower()
    return ctype != "application/json"


def _broken(exc: Exception) -> Exception:
    """A transport's failure in the middle of a stream is what the SDKs call a connection
    error on a whole reply: transient (the retry policy retries it)."""
    if isinstance(exc, OSError) or any(c.__name__ == "TransportError" for c in type(exc).__mro__):
        return TransientLLMError(f"the reply's event stream broke off: {describe_error(exc, 500)}")
    return exc


class _Counter:
    """The bytes of a streamed body, counted against the bound here too: the hook may not
    have taken the stream over (a client of a kind ptc does not know)."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.size = 0

    def take(self, piece: bytes) -> bytes:
        """``piece``, counted; an error past the bound or once the request was given up."""
        self.watch.check()
        self.size += len(piece)
        limit = self.watch.limit
        if limit is not None and self.size > limit:
            raise self.watch.too_large("grew")
        return piece


@contextlib.contextmanager
def _reading(watch: Watch) -> Iterator[None]:
    """Errors of reading a streamed body: ptc's own as raised (the client may have wrapped
    them), a transport's as :func:`_broken` makes them."""
    try:
        yield
    except LLMError:
        raise
    except Exception as exc:
        error = watch.failure or _broken(exc)
        if error is exc:
            raise
        raise error from exc


def read_events(response: Any, watch: Watch) -> Iterator[Event]:
    """The events of a streamed reply, as its bytes arrive."""
    events, counter = EventStream(), _Counter(watch)
    pieces = iter(response.iter_bytes())
    while True:
        with _reading(watch):
            piece = next(pieces, None)
        if piece is None:
            break
        yield from events.feed(counter.take(piece))
    yield from events.end()


async def aread_events(response: Any, watch: Watch) -> AsyncIterator[Event]:
    """Async twin of :func:`read_events`."""
    events, counter = EventStream(), _Counter(watch)
    pieces = aiter(response.aiter_bytes())
    while True:
        with _reading(watch):
            piece = await anext(pieces, None)
        if piece is None:
            break
        for event in events.feed(counter.take(piece)):
            yield event
    for event in events.end():
        yield event


def read_whole(response: Any, watch: Watch) -> dict[str, Any]:
    """The JSON reply of a server that answered a streamed request with the whole reply."""
    with _reading(watch):
        response.read()
    return reply_json(response, watch)


async def aread_whole(response: Any, watch: Watch) -> dict[str, Any]:
    with _reading(watch):
        await response.aread()
    return reply_json(response, watch)


def event_json(data: str, watch: Watch) -> dict[str, Any]:
    """The JSON object an event carries, within the bounds :func:`reply_json` keeps (each
    event is read on its own: its text and the objects parsing it makes)."""
    limit = watch.limit
    if limit is not None:
        containers = data.count("{") + data.count("[")
        if containers > limit // BYTES_PER_CONTAINER:
            raise watch.too_large(
                f"holds an event of {containers:,} JSON objects and arrays, one per"
                f" {BYTES_PER_CONTAINER} bytes of the bound at most; it is"
            )
    try:
        value = json.loads(data)
    except RecursionError:
        raise LLMReplyError("an event of the reply's stream is JSON nested too deeply") from None
    except ValueError as exc:
        raise LLMReplyError(
            f"an event of the reply's stream is not JSON ({exc}): {_first_chars(data)}"
        ) from None
    if not isinstance(value, dict):
        raise LLMReplyError(
            f"an event of the reply's stream is JSON but not an object: {_first_chars(data)}"
        )
    return value


def _first_chars(text: str, n: int = 200) -> str:
    return repr(text[:n]) + (f" ... ({len(text):,} characters in all)" if len(text) > n else "")
