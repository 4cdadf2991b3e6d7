"""Loopback HTTP servers that speak the providers' wire formats (OpenAI chat completions,
Anthropic messages), for running the adapters with their real SDKs over real HTTP.

Each server answers from a script of replies (a text, or an error with a status and headers)
and records every request it received (path, headers, JSON body, arrival time). A request with
``"stream": true`` is answered with server-sent events in the provider's format: the text in
chunks (cut where a :class:`Stream` step says, else at random places the server's
``stream_seed`` picks), the usage and the closing event.
"""

from __future__ import annotations

import itertools
import json
import random
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Error:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class ToolCalls:
    """A reply that calls tools (OpenAI function calling): `calls` in the wire format."""

    calls: list[dict[str, Any]]
    text: str = ""


@dataclass
class Parts:
    """A reply whose message ``content`` is this list of content parts (as several
    OpenAI-compatible servers send it) instead of a string."""

    parts: list[Any]


@dataclass
class Trickle:
    """A reply (``text``, or ``parts``) whose body is sent ``every`` seconds one byte at a
    time, after its headers; the headers too when ``headers_too``."""

    text: str
    every: float = 0.5
    headers_too: bool = False


@dataclass
class Raw:
    """A reply of these bytes as they are (a body that is not JSON, or compressed), with these
    headers; ``content-length`` is added unless given."""

    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: {"content-type": "application/json"})
    status: int = 200


@dataclass
class Endless:
    """A 200 whose body never ends: ``piece`` over and over, as fast as the reader takes it,
    until the reader goes away (the bytes sent then are appended to ``trickled``)."""

    piece: bytes = b"x" * (1 << 20)


@dataclass
class Stream:
    """A streamed reply: ``text`` (for the Anthropic server also a list of content blocks) cut
    into chunks at the character offsets ``cuts``, or at random ones ``seed`` picks (``None``:
    the server's ``stream_seed``), each chunk sent ``delay`` seconds after the one before
    (0.02: a model writing 50 tokens a second, a token a chunk).
    ``calls``: tool calls the OpenAI server streams after the text. ``ending``: ``"done"``
    (the usage and the closing event), ``"close"`` (the connection closes after the chunks,
    with no closing event), ``"stall"`` (nothing more until the reader goes away) or
    ``"error"`` (an error event of type ``error_kind`` saying ``error_message``)."""

    text: str | list[Any]
    cuts: list[int] | None = None
    seed: int | None = None
    delay: float = 0.0
    calls: list[dict[str, Any]] | None = None
    ending: str = "done"
    error_kind: str = "overloaded_error"
    error_message: str = "Overloaded"


def split(text: str, cuts: list[int] | None = None, seed: int | None = 0) -> list[str]:
    """``text`` cut at the character offsets ``cuts`` (never inside a character's UTF-8 bytes:
    a delta travels as a JSON string), or at random offsets ``seed`` picks: from none (one
    chunk) to every one (a chunk per character). Empty chunks are left out."""
    if cuts is None:
        rng = random.Random(seed)
        inner = range(1, len(text))
        cuts = sorted(rng.sample(inner, rng.randint(0, len(inner))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


#: One event of a stream: whether it carries a chunk (sent after the step's delay), its bytes.
Event = tuple[bool, bytes]


def sse(data: dict[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event; JSON as the providers send it (UTF-8, not escaped)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return ((f"event: {event}\n" if event else "") + f"data: {text}\n\n").encode()


def _text_of(parts: list[Any]) -> str:
    return "".join(
        p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str)
    )


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float


Usage = dict[str, int]


def _peer_closed(conn: socket.socket) -> bool:
    """The client has closed or shut down its side (it sends nothing after its request)."""
    readable, _, _ = select.select([conn], [], [], 0)
    if not readable:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class WireServer:
    """A scripted provider on 127.0.0.1 (a free port)."""

    def __init__(self) -> None:
        self.script: list[str | Error | ToolCalls | Parts | Trickle | Raw | Endless | Stream] = []
        #: where a streamed reply of a plain text step is cut (see :func:`split`)
        self.stream_seed: int | None = 0
        self.stopping = threading.Event()
        #: bytes a trickled reply had sent when its reader went away (or when it ended)
        self.trickled: list[int] = []
        self.usage: Usage = {}
        self.received: list[Received] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.received.append(
                        Received(
                            self.path,
                            {k.lower(): v for k, v in self.headers.items()},
                            body,
                            time.monotonic(),
                        )
                    )
                    step = (
                        server.script.pop(0)
                        if server.script
                        else Error(500, server.error_body("the test script is exhausted"))
                    )
                streamed = body.get("stream") is True
                if streamed and isinstance(step, str | ToolCalls | Parts):
                    step = server.as_stream(step)
                if isinstance(step, Error):
                    self._send(step.status, step.body, step.headers)
                elif isinstance(step, Stream):
                    self._stream(step, body)
                elif isinstance(step, Trickle) and streamed:
                    events, _ = server.stream_events(server.as_stream(step.text), body)
                    self._trickle(step, b"".join(data for _, data in events), "text/event-stream")
                elif isinstance(step, ToolCalls):
                    self._send(200, server.reply_body(step.text, body, step.calls), {})
                elif isinstance(step, Parts):
                    self._send(200, server.reply_body(step.parts, body), {})
                elif isinstance(step, Trickle):
                    data = json.dumps(server.reply_body(step.text, body)).encode()
                    self._trickle(step, data, "application/json")
                elif isinstance(step, Raw):
                    self._raw(step)
                elif isinstance(step, Endless):
                    self._endless(step)
                else:
                    self._send(200, server.reply_body(step, body), {})

            def _trickle(self, step: Trickle, data: bytes, ctype: str) -> None:
                head = (
                    f"HTTP/1.1 200 OK\r\ncontent-type: {ctype}\r\n"
                    f"content-length: {len(data)}\r\n\r\n"
                ).encode()
                sent = 0
                if not step.headers_too:
                    self.wfile.write(head)
                    self.wfile.flush()
                    head = b""
                try:
                    for i in range(len(head + data)):
                        if server.stopping.wait(step.every):
                            break
                        self.wfile.write((head + data)[i : i + 1])
                        self.wfile.flush()
                        sent += 1
                except OSError:  # the reader went away
                    pass
                self.close_connection = True
                server.trickled.append(sent)

            def _stream(self, step: Stream, request: dict[str, Any]) -> None:
                # HTTP/1.0: no length, the body ends when the connection does
                events, closing = server.stream_events(step, request)
                if step.ending != "done":
                    events = events[:closing]
                if step.ending == "error":
                    events.append((False, server.error_event(step.error_kind, step.error_message)))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream; charset=utf-8")
                self.send_header("cache-control", "no-cache")
                self.end_headers()
                conn = self.connection
                sent = 0
                try:
                    for chunk, data in events:
                        if chunk and step.delay and server.stopping.wait(step.delay):
                            break
                        if _peer_closed(conn):
                            break
                        self.wfile.write(data)
                        sent += len(data)
                    if step.ending == "stall":
                        while not server.stopping.wait(0.02) and not _peer_closed(conn):
                            pass
                except OSError:  # the reader went away
                    pass
                self.close_connection = True
                server.trickled.append(sent)

            def _raw(self, step: Raw) -> None:
                self.send_response(step.status)
                headers = {k.lower(): v for k, v in step.headers.items()}
                headers.setdefault("content-length", str(len(step.body)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(step.body)

            def _endless(self, step: Endless) -> None:
                # no content-length: the body ends only when the connection does
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("connection", "close")
                self.end_headers()
                sent = 0
                conn = self.connection
                try:
                    conn.sendall(b'{"choices": [{"message": {"content": "')
                    # a reader that shuts its socket down sends FIN and stops the window: a
                    # send may then block (rather than fail) until the kernel gives up
                    conn.settimeout(0.2)
                    while not server.stopping.is_set() and not _peer_closed(conn):
                        try:
                            conn.sendall(step.piece)
                            sent += len(step.piece)
                        except TimeoutError:
                            pass
                except OSError:  # the reader went away
                    pass
                self.close_connection = True
                server.trickled.append(sent)

            def _send(self, status: int, body: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> WireServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def reply_body(
        self,
        text: str | list[Any],
        request: dict[str, Any],
        calls: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def error_body(self, message: str, kind: str = "server_error") -> dict[str, Any]:
        raise NotImplementedError

    def as_stream(self, step: str | list[Any] | ToolCalls | Parts) -> Stream:
        """A step of the script, answered to a streamed request."""
        if isinstance(step, ToolCalls):
            return Stream(step.text, calls=step.calls)
        if isinstance(step, Parts):
            return Stream(step.parts)
        return Stream(step)

    def chunks(self, text: str, step: Stream) -> list[str]:
        return split(text, step.cuts, self.stream_seed if step.seed is None else step.seed)

    def stream_events(self, step: Stream, request: dict[str, Any]) -> tuple[list[Event], int]:
        """The events of ``step``'s complete stream, and where its closing part begins (what a
        stream cut short or ended by an error leaves out)."""
        raise NotImplementedError

    def error_event(self, kind: str, message: str) -> bytes:
        raise NotImplementedError


class OpenAIServer(WireServer):
    #: tool calls the next replies carry (function calling), in the wire format
    reply_tool_calls: list[dict[str, Any]] | None = None

    def usage_body(self) -> dict[str, Any]:
        u = {"prompt_tokens": 11, "completion_tokens": 7, "cached_tokens": 0, **self.usage}
        usage: dict[str, Any] = {
            "prompt_tokens": u["prompt_tokens"],
            "completion_tokens": u["completion_tokens"],
            "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
        }
        if u["cached_tokens"]:
            usage["prompt_tokens_details"] = {"cached_tokens": u["cached_tokens"]}
        return usage

    def reply_body(
        self,
        text: str | list[Any],
        request: dict[str, Any],
        calls: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        calls = calls or self.reply_tool_calls
        usage = self.usage_body()
        return {
            "id": f"chatcmpl-{len(self.received)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": request.get("model", ""),
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": text or None,
                        **({"tool_calls": calls} if calls else {}),
                    },
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": usage,
        }

    def error_body(self, message: str, kind: str = "server_error") -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def stream_events(self, step: Stream, request: dict[str, Any]) -> tuple[list[Event], int]:
        """Chat-completion chunks as OpenAI sends them: the role first, a delta per chunk, the
        tool calls, the finish reason, the usage (only when ``stream_options.include_usage``
        asks for it: every chunk then has ``"usage": null``) and ``data: [DONE]``."""
        options = request.get("stream_options") or {}
        with_usage = options.get("include_usage") is True
        head = {
            "id": f"chatcmpl-{len(self.received)}",
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": request.get("model", ""),
            "system_fingerprint": None,
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return sse({**head, "choices": [choice], **({"usage": None} if with_usage else {})})

        text = step.text if isinstance(step.text, str) else _text_of(step.text)
        calls = step.calls or self.reply_tool_calls
        role = {"role": "assistant", "content": "", "refusal": None}
        events: list[Event] = [(False, chunk(role))]
        events += [(True, chunk({"content": c})) for c in self.chunks(text, step)]
        closing = len(events)
        for i, call in enumerate(calls or []):
            events.append((True, chunk({"tool_calls": [{"index": i, **call}]})))
        events.append((False, chunk({}, "tool_calls" if calls else "stop")))
        if with_usage:
            events.append((False, sse({**head, "choices": [], "usage": self.usage_body()})))
        events.append((False, sse("[DONE]")))
        return events, closing

    def error_event(self, kind: str, message: str) -> bytes:
        return sse(self.error_body(message, kind))


class AnthropicServer(WireServer):
    def reply_body(
        self,
        text: str | list[Any],
        request: dict[str, Any],
        calls: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        u = self.usage_body()
        return {
            "id": f"msg_{len(self.received)}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", ""),
            "content": [{"type": "text", "text": text}] if isinstance(text, str) else text,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": u,
        }

    def usage_body(self) -> dict[str, int]:
        return {
            "input_tokens": 13,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            **self.usage,
        }

    def error_body(self, message: str, kind: str = "api_error") -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}

    def stream_events(self, step: Stream, request: dict[str, Any]) -> tuple[list[Event], int]:
        """Messages events as Anthropic sends them: ``message_start`` with the input usage (and
        one output token), each content block's start, deltas and stop (a ``ping`` after the
        first start), ``message_delta`` with the output tokens, ``message_stop``."""
        usage = self.usage_body()
        message = {
            "id": f"msg_{len(self.received)}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", ""),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        events: list[Event] = [
            (False, sse({"type": "message_start", "message": message}, "message_start"))
        ]
        blocks = [{"type": "text", "text": step.text}] if isinstance(step.text, str) else step.text
        for index, block in enumerate(blocks):
            kind = block.get("type")
            empty = {"text": {"text": ""}, "thinking": {"thinking": ""}}.get(kind, {})
            start = {**block, **empty} if kind in ("text", "thinking") else block
            if kind == "tool_use":
                start = {**block, "input": {}}
            events.append(
                (
                    False,
                    sse(
                        {"type": "content_block_start", "index": index, "content_block": start},
                        "content_block_start",
                    ),
                )
            )
            if index == 0:
                events.append((False, sse({"type": "ping"}, "ping")))
            if kind == "text":
                pieces = self.chunks(block["text"], step)
                deltas = [{"type": "text_delta", "text": p} for p in pieces]
            elif kind == "thinking":
                deltas = [{"type": "thinking_delta", "thinking": block["thinking"]}]
            elif kind == "tool_use":
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
            else:
                deltas = []
            for delta in deltas:
                event = {"type": "content_block_delta", "index": index, "delta": delta}
                events.append((True, sse(event, "content_block_delta")))
            stop = {"type": "content_block_stop", "index": index}
            events.append((False, sse(stop, "content_block_stop")))
        closing = len(events)
        end = {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        }
        events.append((False, sse(end, "message_delta")))
        events.append((False, sse({"type": "message_stop"}, "message_stop")))
        return events, closing

    def error_event(self, kind: str, message: str) -> bytes:
        return sse(self.error_body(message, kind), "error")


def serve(kind: type[WireServer]) -> Iterator[WireServer]:
    server = kind().start()
    try:
        yield server
    finally:
        server.stop()


#: The fields of a Step's dict that timing changes.
TIMINGS = frozenset({"duration_ms", "llm_ms", "run_ms"})


def untimed(value: Any) -> Any:
    """A Step's dict (``step.to_dict()``) without the fields timing changes: two runs that did
    the same compare equal."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value
