"""Loopback HTTP servers that speak the providers' wire formats (OpenAI chat completions,
Anthropic messages), for running the adapters with their real SDKs over real HTTP.

Each server answers from a script of replies (a text, or an error with a status and headers)
and records every request it received (path, headers, JSON body, arrival time).
"""

from __future__ import annotations

import json
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
        self.script: list[str | Error | ToolCalls | Parts | Trickle | Raw | Endless] = []
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
                if isinstance(step, Error):
                    self._send(step.status, step.body, step.headers)
                elif isinstance(step, ToolCalls):
                    self._send(200, server.reply_body(step.text, body, step.calls), {})
                elif isinstance(step, Parts):
                    self._send(200, server.reply_body(step.parts, body), {})
                elif isinstance(step, Trickle):
                    self._trickle(step, server.reply_body(step.text, body))
                elif isinstance(step, Raw):
                    self._raw(step)
                elif isinstance(step, Endless):
                    self._endless(step)
                else:
                    self._send(200, server.reply_body(step, body), {})

            def _trickle(self, step: Trickle, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                head = (
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
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


class OpenAIServer(WireServer):
    #: tool calls the next replies carry (function calling), in the wire format
    reply_tool_calls: list[dict[str, Any]] | None = None

    def reply_body(
        self,
        text: str | list[Any],
        request: dict[str, Any],
        calls: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        calls = calls or self.reply_tool_calls
        u = {"prompt_tokens": 11, "completion_tokens": 7, "cached_tokens": 0, **self.usage}
        usage: dict[str, Any] = {
            "prompt_tokens": u["prompt_tokens"],
            "completion_tokens": u["completion_tokens"],
            "total_tokens": u["prompt_tokens"] + u["completion_tokens"],
        }
        if u["cached_tokens"]:
            usage["prompt_tokens_details"] = {"cached_tokens": u["cached_tokens"]}
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


class AnthropicServer(WireServer):
    def reply_body(
        self,
        text: str | list[Any],
        request: dict[str, Any],
        calls: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        u = {
            "input_tokens": 13,
            "output_tokens": 5,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            **self.usage,
        }
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

    def error_body(self, message: str, kind: str = "api_error") -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}


def serve(kind: type[WireServer]) -> Iterator[WireServer]:
    server = kind().start()
    try:
        yield server
    finally:
        server.stop()
