"""Red team, LLM providers: loopback servers that misbehave at the HTTP level (wrong content
types, bodies that are not JSON or not a completion, huge headers, redirects, bodies that
never end, compressed bodies that expand a thousandfold, usage no count can hold), spoken to
by the real SDKs through the adapters."""

from __future__ import annotations

import asyncio
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
import zlib
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


def _agent(
    url: str, *, deadline: float = 5, attempts: int = 1, provider: str = "openai", **kw: Any
) -> Any:
    """A SubAgent on ``provider`` at ``url``; ``kw`` go to the adapter (``max_reply_bytes``)."""
    import ptc
    import ptc.llm

    if provider == "openai":
        llm: Any = ptc.llm.openai(
            "m", base_url=url + "/v1", api_key="sk-secret", deadline=deadline, **kw
        )
    elif provider == "anthropic":
        llm = ptc.llm.anthropic("m", base_url=url, api_key="sk-secret", deadline=deadline, **kw)
    else:
        llm = ptc.llm.litellm(
            "openai/m", api_base=url + "/v1", api_key="sk-secret", deadline=deadline, **kw
        )
    policy = ptc.llm.RetryPolicy(attempts=attempts, initial_delay=0.01)
    return ptc.SubAgent("How many?", llm=llm, retry=policy, max_turns=2)


def _peak_mb() -> int:
    """This process's peak RSS so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


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
    connection closed, and memory stays flat afterwards (the size bound lifted: with it, the
    body ends at 32 MiB, before the deadline)."""
    server, url = _endless_server(tmp)
    try:

        async def main() -> Any:
            step = await _agent(url, deadline=1, max_reply_bytes=None).arun()
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


@case(seconds=90, memory_mb=3100)
def case_a_request_abandoned_at_its_deadline_stops_reading(tmp: Path) -> None:
    """A provider streams an endless body as fast as loopback goes. The sync request ended at
    its 1 s deadline with LLMTimeoutError, but its thread went on reading after the run had
    returned: RSS grew by about 350 MB a second until the process died (an abort under a
    3 GiB address space). An abandoned request must stop (its connection shut down), as the
    async path does: for openai, anthropic and litellm, with the reply's size bound lifted so
    that the deadline is what ends it. With the default bound (32 MiB) the endless body ends
    there, before the deadline."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True  # its banner on every error would follow PASS
    server, url = _endless_server(tmp)
    try:
        for provider, unbounded in (
            ("openai", {"max_reply_bytes": None}),
            ("anthropic", {"max_reply_bytes": None}),
            ("litellm", {}),  # litellm reads replies itself: ptc bounds their time only
        ):
            started = time.monotonic()
            step = _agent(url, deadline=1, provider=provider, **unbounded).run()
            assert step.error is not None, provider
            assert "LLMTimeoutError" in step.error.message, (provider, step.error)
            assert time.monotonic() - started < 2.5, provider
            base = _rss_mb()
            for _ in range(10):
                time.sleep(0.2)
                grown = _rss_mb() - base
                assert grown < 300, f"{provider}: RSS grew by {grown} MB after the run ended"
        started = time.monotonic()
        step = _agent(url, deadline=30).run()
        assert step.error is not None and step.error.type == "llm_error", step.error
        assert step.error.message.startswith("LLM call failed: LLMReplyTooLargeError: "), (
            step.error.message
        )
        assert time.monotonic() - started < 10
    finally:
        server.kill()
        server.wait()


def _gzip_bomb() -> bytes:
    """A valid gzip body of a completion whose content is 6,000 MiB of ``x``: a full flush
    after each MiB makes every MiB compress to the same bytes, so the body is built in
    seconds (compressing 6 GB took 48 s)."""
    prefix = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
    suffix, block, count = b'"}}]}', b"x" * (1 << 20), 6000
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = packer.compress(prefix) + packer.flush(zlib.Z_FULL_FLUSH)
    one = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    assert packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH) == one
    tail = (packer.compress(suffix) + packer.flush())[:-8]  # its trailer counts 2 MiB
    crc = zlib.crc32(prefix)
    for _ in range(count):
        crc = zlib.crc32(block, crc)
    size = len(prefix) + count * len(block) + len(suffix)
    trailer = zlib.crc32(suffix, crc).to_bytes(4, "little") + (size % 2**32).to_bytes(4, "little")
    return head + one * count + tail + trailer


@case(seconds=60, memory_mb=1000)
def case_a_compressed_reply_that_expands_a_thousandfold(tmp: Path) -> None:
    """A 6 MB gzip body that decompresses to 6 GB of one string (a 'zip bomb'): the SDK
    decompressed it all (2.8 GB of RSS under a 3 GiB address space, then MemoryError after
    10 s; without the cap the process is killed). SAFETY.md does not promise a bound on a
    reply's size in memory; a service calling a provider through a proxy it does not control
    needs one: a typed LLM error, memory bounded."""
    body = _gzip_bomb()
    assert len(body) < 8 << 20
    server = RawServer(
        lambda c, h, b, n: c.sendall(response("200 OK", body, extra=b"content-encoding: gzip\r\n"))
    )
    try:
        started, before = time.monotonic(), _peak_mb()
        step = _agent(server.url, deadline=30).run()
        assert step.error is not None and step.error.type == "llm_error", step.error
        assert time.monotonic() - started < 10
        grown = _peak_mb() - before
        assert grown < 500, f"peak RSS grew by {grown} MB for a {len(body):,}-byte reply"
    finally:
        server.close()


@case(seconds=30, memory_mb=300)
def case_usage_no_count_holds_is_not_taken_as_given(tmp: Path) -> None:
    """A provider reports ``prompt_tokens: -7`` and ``completion_tokens: 10**30``: the Step's
    usage held them as given, so the step the run returned cannot be loaded back
    (Step.from_json: expected a count) nor resumed from its checkpoint."""
    import ptc

    usage = {"prompt_tokens": -7, "completion_tokens": 10**30, "total_tokens": "x"}
    server = RawServer(lambda c, h, b, n: c.sendall(response("200 OK", completion(PROGRAM, usage))))
    try:
        step = _agent(server.url).run()
        assert (step.ok, step.value) == (True, 7), step.error
        for n in (step.usage.input_tokens, step.usage.output_tokens):
            assert 0 <= n <= 2**53, step.usage
        again = ptc.Step.from_json(step.to_json())
        assert (again.ok, again.value) == (True, 7)
    finally:
        server.close()


@case(seconds=60, memory_mb=400)
def case_errors_say_what_the_provider_did(tmp: Path) -> None:
    """A 200 with an HTML page (a proxy's login page), a redirect loop and a body cut short:
    the run's error said "the chat completion has no choices" for the first (it was not JSON
    at all) and "APIConnectionError: Connection error." for the others. An error says what
    went wrong: the content type, the redirects, the cut body."""
    cases: list[tuple[Behave, tuple[str, ...]]] = [
        (
            lambda c, h, b, n: c.sendall(response("200 OK", "<html>login</html>", "text/html")),
            ("text/html", "not JSON"),
        ),
        (
            lambda c, h, b, n: (
                bool(
                    c.sendall(
                        b"HTTP/1.1 307 Temporary Redirect\r\nlocation: /v1/chat/completions\r\n"
                        b"content-length: 0\r\n\r\n"
                    )
                )
                or True
            ),
            ("redirect",),
        ),
        (
            lambda c, h, b, n: c.sendall(b'HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n{"ch'),
            ("incomplete", "closed", "cut", "peer"),
        ),
    ]
    for behave, words in cases:
        server = RawServer(behave)
        try:
            step = _agent(server.url).run()
            assert step.error is not None and step.error.type == "llm_error", step.error
            message = step.error.message
            assert any(w.lower() in message.lower() for w in words), (words, message)
        finally:
            server.close()


@case(seconds=30, memory_mb=300)
def case_a_completion_of_the_wrong_shape_is_named(tmp: Path) -> None:
    """``{"choices": "abc"}``, a message that is null, content that is a number: each was read
    as an empty reply (the agent then spent its turns on "no program found"). A completion
    that is not one is an LLMError naming the field."""
    bodies = [
        '{"choices": "abc"}',
        '{"choices": [{"message": null}]}',
        '{"choices": [{"message": {"content": 5}}]}',
    ]
    for body in bodies:
        server = RawServer(lambda c, h, b, n, body=body: c.sendall(response("200 OK", body)))
        try:
            step = _agent(server.url).run()
            assert step.error is not None and step.error.type == "llm_error", (body, step.error)
            assert len(server.requests) == 1, (body, len(server.requests))
        finally:
            server.close()
