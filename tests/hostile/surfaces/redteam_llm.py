"""Red team, LLM providers: loopback servers that misbehave at the HTTP level (wrong content
types, bodies that are not JSON or not a completion, huge headers, redirects, bodies that
never end, compressed bodies that expand a thousandfold, usage no count can hold), spoken to
by the real SDKs through the adapters."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import case

PROGRAM = "```clojure\n(return 7)\n```"

Behave = Callable[[socket.socket, bytes, bytes, int], Any]


class RawServer:
    """An HTTP server on 127.0.0.1 whose every request is answered by ``behave(conn, head,
    body, n)`` writing raw bytes (return True to keep the connection for another request)."""

    def __init__(self, behave: Behave) -> None:
        self.behave = behave
        self.requests: list[tuple[bytes, bytes]] = []
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            while not self.stopping.is_set():
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    key, _, value = line.partition(b":")
                    if key.strip().lower() == b"content-length":
                        length = int(value)
                while len(body) < length:
                    body += conn.recv(65536)
                self.requests.append((head, body))
                if self.behave(conn, head, body, len(self.requests)) is not True:
                    return
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stopping.set()
        self.sock.close()


def response(
    status: str, body: bytes | str, ctype: str = "application/json", extra: bytes = b""
) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: {ctype}\r\ncontent-length: {len(data)}\r\n".encode()
        + extra
        + b"\r\n"
        + data
    )


def completion(text: Any, usage: Any = None) -> str:
    return json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage or {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )


def _agent(url: str, *, deadline: float = 5, attempts: int = 1, provider: str = "openai") -> Any:
    import ptc
    import ptc.llm

    if provider == "openai":
        llm = ptc.llm.openai("m", base_url=url + "/v1", api_key="sk-secret", deadline=deadline)
    else:
        llm = ptc.llm.anthropic("m", base_url=url, api_key="sk-secret", deadline=deadline)
    policy = ptc.llm.RetryPolicy(attempts=attempts, initial_delay=0.01)
    return ptc.SubAgent("How many?", llm=llm, retry=policy, max_turns=2)


def _rss_mb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS")


ENDLESS = """
import socket, threading
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
def serve(c):
    try:
        data = b""
        while b"\\r\\n\\r\\n" not in data:
            data += c.recv(65536)
        c.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\n"
                  b"transfer-encoding: chunked\\r\\n\\r\\n")
        first = b'{"choices": [{"message": {"content": "'
        c.sendall(b"%x\\r\\n" % len(first) + first + b"\\r\\n")
        chunk = b"%x\\r\\n" % (1 << 20) + b"x" * (1 << 20) + b"\\r\\n"
        while True:
            c.sendall(chunk)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"""


def _endless_server(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    script = tmp / "endless.py"
    script.write_text(ENDLESS)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    return proc, f"http://127.0.0.1:{int(proc.stdout.readline())}"


@case(seconds=60, memory_mb=600)
def case_an_abandoned_async_request_stops_reading(tmp: Path) -> None:
    """The same endless body under arun(): the request is cancelled at its deadline, its
    connection closed, and memory stays flat afterwards."""
    server, url = _endless_server(tmp)
    try:

        async def main() -> Any:
            step = await _agent(url, deadline=1).arun()
            base = _rss_mb()
            for _ in range(10):
                await asyncio.sleep(0.2)
                assert _rss_mb() - base < 100, "RSS grew after the run had ended"
            return step

        step = asyncio.run(main())
        assert step.error is not None and "LLMTimeoutError" in step.error.message, step.error
    finally:
        server.kill()
        server.wait()


@case(seconds=60, memory_mb=500)
def case_huge_headers_end_the_request(tmp: Path) -> None:
    """A 50 MB header line, or two million headers: the request fails with a typed LLM error
    in seconds, with bounded memory, and the run says so."""
    behaviours: list[Behave] = [
        lambda c, h, b, n: c.sendall(
            b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * (50 << 20) + b"\r\ncontent-length: 2\r\n\r\n{}"
        ),
        lambda c, h, b, n: c.sendall(
            b"HTTP/1.1 200 OK\r\n" + b"x-h: 1\r\n" * 2_000_000 + b"content-length: 2\r\n\r\n{}"
        ),
    ]
    for behave in behaviours:
        server = RawServer(behave)
        try:
            started = time.monotonic()
            step = _agent(server.url).run()
            assert step.error is not None and step.error.type == "llm_error", step.error
            assert step.error.message.startswith("LLM call failed: "), step.error.message
            assert time.monotonic() - started < 6
        finally:
            server.close()


@case(seconds=30, memory_mb=300)
def case_a_provider_that_never_answers_meets_the_deadline(tmp: Path) -> None:
    """Accepts the connection and reads the request, then sends nothing at all: LLMTimeoutError
    at the adapter's 1 s deadline, sync and async."""
    server = RawServer(lambda c, h, b, n: time.sleep(30))
    try:
        for run_async in (False, True):
            agent = _agent(server.url, deadline=1)
            started = time.monotonic()
            step = asyncio.run(agent.arun()) if run_async else agent.run()
            assert step.error is not None and "LLMTimeoutError" in step.error.message, step.error
            assert time.monotonic() - started < 2.0
    finally:
        server.close()


@case(seconds=30, memory_mb=300)
def case_a_body_that_is_not_json_fails_once_quickly(tmp: Path) -> None:
    """A 200 whose body is cut JSON: a typed LLM error at once (no retry storm, no hang)."""
    server = RawServer(lambda c, h, b, n: c.sendall(response("200 OK", '{"choices": [')))
    try:
        started = time.monotonic()
        step = _agent(server.url, attempts=3).run()
        assert step.error is not None and step.error.type == "llm_error", step.error
        assert step.error.message.startswith("LLM call failed: "), step.error.message
        assert time.monotonic() - started < 5
    finally:
        server.close()


@case(seconds=60, memory_mb=300)
def case_a_redirect_never_carries_the_key_to_another_origin(tmp: Path) -> None:
    """A provider answers 307/308 to another origin (another port): whatever the SDK does with
    the redirect, the API key is not sent there."""
    other = RawServer(lambda c, h, b, n: c.sendall(response("200 OK", completion(PROGRAM))))
    try:
        for code in (301, 302, 307, 308):
            for provider in ("openai", "anthropic"):
                target = (
                    f"{other.url}/v1/{'chat/completions' if provider == 'openai' else 'messages'}"
                )
                front = RawServer(
                    lambda c, h, b, n, code=code, target=target: c.sendall(
                        f"HTTP/1.1 {code} Moved\r\nlocation: {target}\r\n"
                        "content-length: 0\r\n\r\n".encode()
                    )
                )
                try:
                    _agent(front.url, deadline=3, provider=provider).run()
                finally:
                    front.close()
        leaked = [h for h, _ in other.requests if b"sk-secret" in h]
        assert leaked == [], leaked[0][:300]
    finally:
        other.close()


@case(seconds=30, memory_mb=300)
def case_a_retry_after_no_run_can_wait_for_gives_up_at_once(tmp: Path) -> None:
    """A 429 asking to wait 10**23 s, until the year 9999, or an hour: past the policy's
    max_retry_after (60 s), so the request gives up at once with the rate-limit error (no
    sleep, no second request)."""
    for header in ("99999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "3600"):
        limited = response(
            "429 Too Many Requests",
            '{"error": {"message": "slow down", "type": "rate_limit_error"}}',
            extra=f"retry-after: {header}\r\n".encode(),
        )
        server = RawServer(lambda c, h, b, n, limited=limited: c.sendall(limited))
        try:
            started = time.monotonic()
            step = _agent(server.url, attempts=3).run()
            assert step.error is not None and "RateLimitError" in step.error.message, step.error
            assert time.monotonic() - started < 2 and len(server.requests) == 1, header
        finally:
            server.close()
