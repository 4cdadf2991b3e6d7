"""A bound on a reply's size (issue 29, second red team): the SDKs read a reply whole and
decompress whatever the server sent, so a 6 MB gzip body that expands to 6 GB took 2.8 GB of
memory and ended in MemoryError. The adapters now read every body their SDK reads (replies,
error bodies) through ptc's own decoder, counted after decompression against
``max_reply_bytes`` (default 32 MiB), and raise ``LLMReplyTooLargeError``: not transient, so
not retried. Real SDKs over loopback HTTP."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import anthropic
import openai
import ptc
import ptc.llm
import pytest
from ptc.llm import (
    LLMReplyError,
    LLMReplyTooLargeError,
    RetryPolicy,
    is_transient,
)
from wire import AnthropicServer, Error, OpenAIServer, Raw, WireServer

MESSAGES = [{"role": "user", "content": "x"}]
MIB = 1 << 20
DEFAULT = 32 * MIB
THREE = RetryPolicy(attempts=3, initial_delay=0.01)

OPENAI_OPEN = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
OPENAI_CLOSE = b'"}}], "usage": {"prompt_tokens": 3, "completion_tokens": 4}}'
ANTHROPIC_OPEN = b'{"type": "message", "content": [{"type": "text", "text": "'
ANTHROPIC_CLOSE = b'"}], "usage": {"input_tokens": 3, "output_tokens": 4}}'


def bomb(opening: bytes, closing: bytes, mib: int) -> bytes:
    """A valid gzip body whose text is ``mib`` MiB of ``x`` between ``opening`` and
    ``closing``: after a full flush every MiB compresses to the same bytes, so the body is
    built without compressing it all (a 256 MiB text makes a 260 KB body)."""
    block = b"x" * MIB
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = packer.compress(opening) + packer.flush(zlib.Z_FULL_FLUSH)
    one = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    tail = (packer.compress(closing) + packer.flush())[:-8]  # its trailer counts one MiB
    crc = zlib.crc32(opening)
    for _ in range(mib):
        crc = zlib.crc32(block, crc)
    size = len(opening) + mib * MIB + len(closing)
    trailer = zlib.crc32(closing, crc).to_bytes(4, "little") + (size % 2**32).to_bytes(4, "little")
    return head + one * mib + tail + trailer


def gzipped(body: bytes) -> Raw:
    return Raw(body, {"content-type": "application/json", "content-encoding": "gzip"})


def too_large(name: str, limit: int) -> str:
    return (
        f"{name}: the reply grew past max_reply_bytes={limit:,} (counted after decompression;"
        " set by the adapter's max_reply_bytes=): reading stopped"
    )


Make = Callable[..., Any]


def openai_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.openai("local-model", base_url=server.url + "/v1", api_key="k", **kw)


def anthropic_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.anthropic("claude-test", base_url=server.url, api_key="k", **kw)


PROVIDERS: list[tuple[str, Make, type[WireServer], bytes, bytes, str]] = [
    (
        "openai",
        openai_llm,
        OpenAIServer,
        OPENAI_OPEN,
        OPENAI_CLOSE,
        "ptc.llm.openai('local-model')",
    ),
    (
        "anthropic",
        anthropic_llm,
        AnthropicServer,
        ANTHROPIC_OPEN,
        ANTHROPIC_CLOSE,
        "ptc.llm.anthropic('claude-test')",
    ),
]


@pytest.fixture(params=PROVIDERS, ids=[p[0] for p in PROVIDERS])
def provider(request: pytest.FixtureRequest) -> Any:
    _, make, kind, opening, closing, name = request.param
    server = kind().start()
    try:
        yield make, server, opening, closing, name
    finally:
        server.stop()


def test_the_default_bound_is_32_mib_and_litellm_has_none() -> None:
    assert ptc.llm.openai("m").max_reply_bytes == DEFAULT
    assert ptc.llm.anthropic("m").max_reply_bytes == DEFAULT
    assert ptc.llm.openai("m", max_reply_bytes=None).max_reply_bytes is None
    # litellm reads replies in clients of its own: ptc cannot count them
    assert ptc.llm.litellm("openai/m").max_reply_bytes is None


@pytest.mark.timeout(60)
def test_a_compressed_reply_that_expands_a_thousandfold_stops_at_the_bound(provider: Any) -> None:
    make, server, opening, closing, name = provider
    body = bomb(opening, closing, 256)
    assert len(body) < 300_000  # 256 MiB of text in under 300 KB
    server.script = [gzipped(body)] * 3
    agent = ptc.SubAgent("How many?", llm=make(server), retry=THREE)
    tracemalloc.start()
    try:
        step = agent.run()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert step.error is not None and step.error.type == "llm_error"
    assert step.error.message == "LLM call failed: LLMReplyTooLargeError: " + too_large(
        name, DEFAULT
    )
    assert len(server.received) == 1  # not transient: not retried
    assert peak < 3 * DEFAULT, peak  # the bound and the pieces in flight, never 256 MiB


@pytest.mark.timeout(60)
async def test_the_async_path_is_bounded_too(provider: Any) -> None:
    make, server, opening, closing, name = provider
    server.script = [gzipped(bomb(opening, closing, 64))]
    with pytest.raises(LLMReplyTooLargeError) as info:
        await make(server).acall(MESSAGES)
    assert str(info.value) == too_large(name, DEFAULT)
    assert info.value.limit == DEFAULT and not is_transient(info.value)


@pytest.mark.parametrize("coding", ["identity", "gzip"])
def test_the_bound_counts_decoded_bytes_to_the_byte(provider: Any, coding: str) -> None:
    make, server, opening, closing, name = provider
    body = opening + b"hello" + closing
    raw = Raw(body) if coding == "identity" else gzipped(gzip.compress(body))
    assert len(raw.body) < len(body) - 1 or coding == "identity"
    server.script = [raw, raw]
    assert make(server, max_reply_bytes=len(body))(MESSAGES).content == "hello"
    with pytest.raises(LLMReplyTooLargeError) as info:
        make(server, max_reply_bytes=len(body) - 1)(MESSAGES)
    assert str(info.value) == too_large(name, len(body) - 1)


@pytest.mark.timeout(60)
def test_an_error_body_is_bounded_too(provider: Any) -> None:
    """A 500 whose body is the bomb: the SDK reads an error's body to quote it."""
    make, server, _, _, name = provider
    body = bomb(b'{"error": {"message": "', b'"}}', 64)
    server.script = [
        Raw(body, {"content-type": "application/json", "content-encoding": "gzip"}, 500)
    ] * 3
    step = ptc.SubAgent("How many?", llm=make(server), retry=THREE).run()
    assert step.error is not None
    assert step.error.message == "LLM call failed: LLMReplyTooLargeError: " + too_large(
        name, DEFAULT
    )
    assert len(server.received) == 1


def deflate_raw(data: bytes) -> bytes:
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


@pytest.mark.parametrize(
    ("coding", "encode"),
    [
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),  # with its zlib header, as RFC 9110 says
        ("deflate", deflate_raw),  # without, as some servers send it
        ("gzip, deflate", lambda b: zlib.compress(gzip.compress(b))),
        ("identity", lambda b: b),
    ],
)
def test_bodies_in_every_coding_ptc_accepts_are_read(
    openai_server: OpenAIServer, coding: str, encode: Callable[[bytes], bytes]
) -> None:
    body = OPENAI_OPEN + b"hello" + OPENAI_CLOSE
    headers = {"content-type": "application/json", "content-encoding": coding}
    openai_server.script = [Raw(encode(body), headers)]
    reply = openai_llm(openai_server)(MESSAGES)
    assert reply.content == "hello"
    assert dict(reply.usage) == {"input_tokens": 3, "output_tokens": 4}


def test_a_gzip_body_of_two_members_is_read_whole(openai_server: OpenAIServer) -> None:
    body = OPENAI_OPEN + b"hello" + OPENAI_CLOSE
    two = gzip.compress(body[:20]) + gzip.compress(body[20:])
    openai_server.script = [gzipped(two)]
    assert openai_llm(openai_server)(MESSAGES).content == "hello"


def test_a_coding_ptc_does_not_decode_is_refused(openai_server: OpenAIServer) -> None:
    openai_server.script = [Raw(b"\x8b\x02\x80{}\x03", {"content-encoding": "br"})] * 2
    step = ptc.SubAgent("How many?", llm=openai_llm(openai_server), retry=THREE).run()
    assert step.error is not None
    assert step.error.message == (
        "LLM call failed: LLMReplyError: the reply's content-encoding is 'br'; ptc decodes"
        " only gzip and deflate (within max_reply_bytes), and asks for no other"
    )
    assert len(openai_server.received) == 1


def test_a_body_coded_many_times_over_is_refused(openai_server: OpenAIServer) -> None:
    """Each coding is a decoder: 10,000 of them in one header would be 10,000 decoders."""
    body = OPENAI_OPEN + b"hello" + OPENAI_CLOSE
    for _ in range(4):
        body = gzip.compress(body)
    four = {"content-type": "application/json", "content-encoding": "gzip, " * 3 + "gzip"}
    many = {"content-type": "application/json", "content-encoding": "gzip, " * 9999 + "gzip"}
    openai_server.script = [Raw(body, four), Raw(body, many)]
    assert openai_llm(openai_server)(MESSAGES).content == "hello"
    with pytest.raises(LLMReplyError) as info:
        openai_llm(openai_server)(MESSAGES)
    assert str(info.value) == (
        "the reply's content-encoding lists 10000 codings; ptc undoes at most 4"
    )


def test_a_corrupt_or_cut_gzip_body_is_named(openai_server: OpenAIServer) -> None:
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
    whole = gzip.compress(OPENAI_OPEN + b"hello" + OPENAI_CLOSE)
    openai_server.script = [gzipped(header + b"\xff\xff"), gzipped(whole[: len(whole) // 2])]
    with pytest.raises(LLMReplyError) as info:
        openai_llm(openai_server)(MESSAGES)
    # 0xff: a final block of the reserved type 3
    assert str(info.value) == (
        "the reply's gzip body is corrupt: Error -3 while decompressing data: invalid block type"
    )
    with pytest.raises(LLMReplyError) as info:
        openai_llm(openai_server)(MESSAGES)
    assert str(info.value) == "the reply's gzip body ends before its compressed data"


def test_requests_accept_only_the_codings_ptc_decodes(provider: Any) -> None:
    make, server, opening, closing, _ = provider
    server.script = [Raw(opening + b"hi" + closing)]
    assert make(server)(MESSAGES).content == "hi"
    assert server.received[0].headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.timeout(60)
def test_a_client_you_pass_is_bounded_and_your_own_requests_are_not(
    openai_server: OpenAIServer,
) -> None:
    """ptc's hook on your client's httpx client acts on ptc's requests only."""
    client = openai.OpenAI(base_url=openai_server.url + "/v1", api_key="k", max_retries=0)
    llm = ptc.llm.openai("m", client=client, max_reply_bytes=1000)
    big = Raw(OPENAI_OPEN + b"y" * 5000 + OPENAI_CLOSE)
    openai_server.script = [big, big]
    with pytest.raises(LLMReplyTooLargeError):
        llm(MESSAGES)
    own = client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    assert own.choices[0].message.content == "y" * 5000


async def test_an_async_client_you_pass_is_bounded(anthropic_server: AnthropicServer) -> None:
    client = anthropic.AsyncAnthropic(base_url=anthropic_server.url, api_key="k")
    llm = ptc.llm.anthropic("m", client=client, max_reply_bytes=1000)
    anthropic_server.script = [Raw(ANTHROPIC_OPEN + b"y" * 5000 + ANTHROPIC_CLOSE)]
    with pytest.raises(LLMReplyTooLargeError) as info:
        await llm.acall(MESSAGES)
    assert str(info.value) == too_large("ptc.llm.anthropic('m')", 1000)


def test_a_reply_of_many_small_arrays_is_refused_before_it_is_parsed(
    openai_server: OpenAIServer,
) -> None:
    """Parsing makes ~64 bytes of objects of each `[]`: 32 MiB of them took 640 MB. A reply
    holds at most one object or array per 16 bytes of the bound."""
    body = json.dumps({"choices": [{"message": {"content": "hi"}}], "pad": [[]] * 80}).encode()
    containers = body.count(b"{") + body.count(b"[")
    assert containers == 5 + 80 and len(body) < 1600
    openai_server.script = [Raw(body), Raw(body)]
    with pytest.raises(LLMReplyTooLargeError) as info:
        openai_llm(openai_server, max_reply_bytes=16 * 84)(MESSAGES)
    assert str(info.value) == (
        "ptc.llm.openai('local-model'): the reply holds 85 JSON objects and arrays, one per 16"
        " bytes of the bound at most; it is past max_reply_bytes=1,344 (counted after"
        " decompression; set by the adapter's max_reply_bytes=): reading stopped"
    )
    assert openai_llm(openai_server, max_reply_bytes=16 * 85)(MESSAGES).content == "hi"


def test_a_status_error_under_the_bound_is_the_sdks(openai_server: OpenAIServer) -> None:
    openai_server.script = [Error(400, openai_server.error_body("bad model", "invalid"))]
    with pytest.raises(openai.BadRequestError):
        openai_llm(openai_server)(MESSAGES)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (0, ValueError, "max_reply_bytes must be a positive number of bytes, got 0"),
        (-5, ValueError, "max_reply_bytes must be a positive number of bytes, got -5"),
        (1.5, TypeError, "max_reply_bytes must be a number of bytes or None, got float"),
        (True, TypeError, "max_reply_bytes must be a number of bytes or None, got bool"),
        ("32M", TypeError, "max_reply_bytes must be a number of bytes or None, got str"),
    ],
)
def test_a_bad_bound_is_refused(value: Any, error: type[Exception], message: str) -> None:
    for make in (ptc.llm.openai, ptc.llm.anthropic):
        with pytest.raises(error) as info:
            make("m", max_reply_bytes=value)
        assert str(info.value) == message


def test_the_errors_keep_their_fields_when_pickled() -> None:
    import pickle

    big = pickle.loads(pickle.dumps(LLMReplyTooLargeError("big", 7)))
    assert type(big) is LLMReplyTooLargeError and str(big) == "big" and big.limit == 7
    bad = pickle.loads(pickle.dumps(LLMReplyError("bad", "choices[0]")))
    assert type(bad) is LLMReplyError and str(bad) == "bad" and bad.path == "choices[0]"
    assert not is_transient(big) and not is_transient(bad)
