"""Red-team cases that FAIL on the current code (issue 29's "a fresh batch ... finds nothing
new"): each reproduces a defect found by the second hostile batch and asserts what SAFETY.md
and the issue promise. This module starts with ``_``, so ``collect()`` skips it and CI stays
green; a case moves back to its ``redteam_<surface>.py`` module with the fix of its defect.

Run one as the suite would: ``python tests/hostile/surface_child.py _pending_redteam
case_name_without_prefix /tmp/somewhere 3072`` (PASS as the last line, else the failure);
PostgreSQL cases need ``PTC_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import asyncio
import os
import resource
import signal
import threading
import time
import zlib
from pathlib import Path
from typing import Any

from . import case
from .redteam_llm import (
    PROGRAM,
    Behave,
    RawServer,
    _agent,
    _endless_server,
    _rss_mb,
    completion,
    response,
)


def _peak_mb() -> int:
    """This process's peak RSS so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


# -- tools and their worker threads (redteam_tools.py) --------------------------------------------


@case(seconds=30, memory_mb=300)
def case_an_async_tool_may_run_its_own_session_again(tmp: Path) -> None:
    """SAFETY.md: a tool may run its own Session again, and that nested run does not wait for
    the runs it is nested in. A sync tool's nested run() does so at once; an ``async def``
    tool awaiting ``arun()`` of its own Session waited at the Session's gate until the outer
    run's deadline (5 s), under arun() and under run() alike, and the outer run failed."""
    import ptc

    box: dict[str, ptc.Session] = {}

    async def again() -> Any:
        r = await box["s"].arun("(+ 1 1)")
        return r.value if r.ok else r.error.message

    box["s"] = ptc.Session(tools={"again": again})

    async def under_arun() -> Any:
        return await box["s"].arun("(tool/again)")

    for how, call in (
        ("arun", lambda: asyncio.run(under_arun())),
        ("run", lambda: box["s"].run("(tool/again)")),
    ):
        started = time.monotonic()
        r = call()
        took = time.monotonic() - started
        assert (r.error, r.value) == (None, 2), (how, r)
        assert took < 1.0, (how, took)


@case(seconds=60, memory_mb=300)
def case_an_async_tool_recursing_through_arun_is_bounded(tmp: Path) -> None:
    """The recursion of the issue's item 9, with an ``async def`` tool and arun(): the 17th
    nested run ends with the typed nesting error, promptly; it hung at the gate until the
    deadline at every level instead (10 s for two levels)."""
    import ptc

    box: dict[str, ptc.Session] = {}

    async def deeper() -> Any:
        r = await box["s"].arun("(tool/deeper)")
        return r.value if r.ok else r.error.message

    box["s"] = ptc.Session(tools={"deeper": deeper})

    async def main() -> Any:
        return await box["s"].arun("(tool/deeper)")

    started = time.monotonic()
    r = asyncio.run(main())
    took = time.monotonic() - started
    v = r.value
    assert isinstance(v, str) and v.startswith("runs nested too deeply"), (r, v)
    assert took < 5.0, took


# -- LLM providers (redteam_llm.py) ---------------------------------------------------------------


@case(seconds=90, memory_mb=3100)
def case_a_request_abandoned_at_its_deadline_stops_reading(tmp: Path) -> None:
    """A provider streams an endless body as fast as loopback goes. The sync request ended at
    its 1 s deadline with LLMTimeoutError, but its thread went on reading after the run had
    returned: RSS grew by about 350 MB a second until the process died (an abort under a
    3 GiB address space). An abandoned request must stop (its connection shut down), as the
    async path does: for openai, anthropic and litellm, with the reply's size bound lifted so
    that the deadline is what ends it. With the default bound (32 MiB) the endless body ends
    there, before the deadline."""
    import os

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


# -- host data (redteam_host_data.py) -------------------------------------------------------------


def _interrupt_within(make: Any, prepare: Any, bound: float) -> None:
    """SIGINT 50 ms into ``make()``: KeyboardInterrupt within ``bound`` seconds of it."""
    arg = prepare()
    started = time.monotonic()
    make(arg)
    whole = time.monotonic() - started
    assert whole > 0.5, f"the conversion takes only {whole:.2f} s: the case needs more input"
    timer = threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        make(arg)
    except KeyboardInterrupt:
        took = time.monotonic() - started
        assert took < 0.05 + bound, f"Ctrl-C took {took:.2f} s (the whole conversion {whole:.2f} s)"
    else:
        raise AssertionError(f"the conversion ended without KeyboardInterrupt ({whole:.2f} s)")
    finally:
        timer.cancel()


@case(seconds=60, memory_mb=1200)
def case_ctrl_c_while_a_large_dict_converts(tmp: Path) -> None:
    """SAFETY.md: converting input data checks Ctrl-C every 65,536 objects. A dict of 3,000,000
    keys (about 3 s to convert): KeyboardInterrupt came only when the conversion had finished
    (3 s after the signal); lists of 20,000,000 ints or of records, about 1 s late."""
    import ptc

    _interrupt_within(
        lambda data: ptc.Session(data=data),
        lambda: {"m": {f"k{i}": i for i in range(3_000_000)}},
        0.3,
    )


@case(seconds=60, memory_mb=1200)
def case_ctrl_c_while_a_large_json_text_parses(tmp: Path) -> None:
    """``Session.from_json`` of a 100 MB text (3,000,000 records, about 1.3 s): Ctrl-C 50 ms
    in was answered only after the whole parse."""
    import ptc

    _interrupt_within(
        ptc.Session.from_json,
        lambda: (
            '{"rows": ['
            + ",".join(f'{{"id": {i}, "name": "n{i}"}}' for i in range(3_000_000))
            + "]}"
        ),
        0.3,
    )


# -- regex builtins (redteam_regex.py) ------------------------------------------------------------
