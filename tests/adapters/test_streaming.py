"""Streamed replies (issue 33, part 3): ``ptc.llm.openai/anthropic/litellm(..., stream=True)``
ask for server-sent events, pass each piece of text to ``on_text`` as it arrives, and return
the reply a request without streaming returns. The real SDKs over loopback HTTP, to servers
that speak each provider's event format (tests/adapters/wire.py)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

# imported here: a first import inside a request (seconds on a loaded machine) would count
import anthropic  # noqa: F401
import litellm
import openai  # noqa: F401
import ptc
import ptc.llm
import pytest
from ptc.llm import (
    AsyncScriptedLLM,
    LLMReply,
    LLMReplyError,
    LLMReplyTooLargeError,
    LLMTimeoutError,
    RetryPolicy,
    ScriptedLLM,
    TransientLLMError,
    acall_llm,
    call_llm,
    is_transient,
)
from ptc.llm._sse import EventStream
from wire import (
    AnthropicServer,
    Error,
    OpenAIServer,
    Parts,
    Raw,
    Stream,
    ToolCalls,
    Trickle,
    WireServer,
    split,
)

litellm.suppress_debug_info = True  # its "Give Feedback" banner on every error

MESSAGES = [{"role": "user", "content": "How many?"}]
# multi-byte characters, and line separators an event stream must not split at
TEXT = '```clojure\n(return "héllo 🎉 wörld — 日本語")\n```\u2028next\x85line\r\nend\rcr'
FAST = RetryPolicy(attempts=3, initial_delay=0.01, max_delay=0.01)
SEEDS = range(50)


def openai_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.openai("local-model", base_url=server.url + "/v1", api_key="k", **kw)


def anthropic_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.anthropic("claude-test", base_url=server.url, api_key="k", **kw)


def litellm_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.litellm("openai/local-model", api_base=server.url + "/v1", api_key="k", **kw)


# name, make, server, repr, the closing event named when it is missing
ADAPTERS: list[tuple[str, Callable[..., Any], type[WireServer], str, str]] = [
    ("openai", openai_llm, OpenAIServer, "ptc.llm.openai('local-model')", "data: [DONE]"),
    (
        "anthropic",
        anthropic_llm,
        AnthropicServer,
        "ptc.llm.anthropic('claude-test')",
        "event: message_stop",
    ),
    (
        "litellm",
        litellm_llm,
        OpenAIServer,
        "ptc.llm.litellm('openai/local-model')",
        "a chunk with a finish_reason",
    ),
]

#: the usage each server reports by default, as ptc maps it (wire.py: 11/7 and 13/5)
DEFAULT_USAGE = {
    "openai": {"input_tokens": 11, "output_tokens": 7},
    "anthropic": {"input_tokens": 13, "output_tokens": 5},
    "litellm": {"input_tokens": 11, "output_tokens": 7},
}


#: the providers whose SDK client ptc reads the bytes of (litellm reads with clients of its own)
SDK_PROVIDERS: dict[str, tuple[type[WireServer], Callable[..., Any]]] = {
    "openai": (OpenAIServer, openai_llm),
    "anthropic": (AnthropicServer, anthropic_llm),
}


@dataclass
class Adapter:
    name: str
    make: Callable[..., Any]
    server: WireServer
    shown: str
    closing: str

    def llm(self, **kw: Any) -> Any:
        return self.make(self.server, stream=True, **kw)


@pytest.fixture(params=ADAPTERS, ids=[a[0] for a in ADAPTERS])
def adapter(request: pytest.FixtureRequest) -> Any:
    name, make, kind, shown, closing = request.param
    server = kind().start()
    try:
        yield Adapter(name, make, server, shown, closing)
    finally:
        server.stop()


class Receiver:
    """An ``on_text`` that logs its pieces (with when they came) and its restarts."""

    RESTART = "<restart>"

    def __init__(self) -> None:
        self.log: list[str] = []
        self.at: list[float] = []

    def __call__(self, piece: str) -> None:
        self.log.append(piece)
        self.at.append(time.monotonic())

    def restart(self) -> None:
        self.log.append(self.RESTART)

    @property
    def text(self) -> str:
        return "".join(p for p in self.log if p != self.RESTART)


def timed_out(name: str, seconds: str) -> str:
    return (
        f"{name}: no complete reply within the request deadline of {seconds} s (set by the"
        " adapter's deadline=; each retry has its own)"
    )


def too_large(name: str, limit: int) -> str:
    return (
        f"{name}: the reply grew past max_reply_bytes={limit:,} (counted after decompression;"
        " set by the adapter's max_reply_bytes=): reading stopped"
    )


def cut_short(closing: str, chars: int) -> str:
    return (
        f"the reply's event stream ended before its closing event ({closing}), after"
        f" {chars:,} characters of text"
    )


def error_kinds(name: str) -> tuple[str, str]:
    """An error type each provider sends for an overload, and one for a refused request."""
    overloaded = "overloaded_error" if name == "anthropic" else "server_error"
    return overloaded, "invalid_request_error"


# --- the text and the usage -------------------------------------------------------------------


def test_streamed_pieces_arrive_in_order_and_make_the_reply(adapter: Adapter) -> None:
    adapter.server.script = [TEXT]
    got = Receiver()
    llm = adapter.llm()
    assert llm.streams is True
    reply = llm(MESSAGES, on_text=got)
    assert reply == LLMReply(TEXT, DEFAULT_USAGE[adapter.name])
    assert got.log == split(TEXT, seed=0)  # one call per chunk the server sent, in order
    (req,) = adapter.server.received
    assert req.body["stream"] is True
    if adapter.name != "anthropic":
        assert req.body["stream_options"] == {"include_usage": True}
    assert req.body["messages"][-1] == MESSAGES[-1]


async def test_streamed_pieces_on_the_async_path(adapter: Adapter) -> None:
    adapter.server.script = [TEXT]
    got = Receiver()
    reply = await adapter.llm().acall(MESSAGES, on_text=got)
    assert reply == LLMReply(TEXT, DEFAULT_USAGE[adapter.name])
    assert got.log == split(TEXT, seed=0)
    assert adapter.server.received[0].headers["x-stainless-async"].startswith("async")


def test_pieces_are_passed_on_as_they_arrive(adapter: Adapter) -> None:
    """Three chunks 0.3 s apart: the first reaches on_text long before the reply ends."""
    adapter.server.script = [Stream("one two six", cuts=[4, 8], delay=0.3)]
    got = Receiver()
    reply = adapter.llm()(MESSAGES, on_text=got)
    returned = time.monotonic()
    assert got.log == ["one ", "two ", "six"] and reply.content == "one two six"
    assert returned - got.at[0] >= 0.5
    assert got.at[1] - got.at[0] >= 0.2


async def test_pieces_are_passed_on_as_they_arrive_async(adapter: Adapter) -> None:
    adapter.server.script = [Stream("one two six", cuts=[4, 8], delay=0.3)]
    got = Receiver()
    reply = await adapter.llm().acall(MESSAGES, on_text=got)
    returned = time.monotonic()
    assert got.log == ["one ", "two ", "six"] and reply.content == "one two six"
    assert returned - got.at[0] >= 0.5


OPENAI_USAGE = {"prompt_tokens": 1000, "completion_tokens": 9, "cached_tokens": 800}
ANTHROPIC_USAGE = {
    "input_tokens": 20,
    "output_tokens": 6,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 1200,
}
#: the usage above as ptc reports it: Anthropic's input tokens exclude cache reads and writes,
#: which ptc adds (20 + 300 + 1200)
MAPPED_USAGE = {
    "openai": {"input_tokens": 1000, "output_tokens": 9, "cache_read_tokens": 800},
    "litellm": {"input_tokens": 1000, "output_tokens": 9, "cache_read_tokens": 800},
    "anthropic": {
        "input_tokens": 1520,
        "output_tokens": 6,
        "cache_read_tokens": 1200,
        "cache_write_tokens": 300,
    },
}


def test_usage_is_what_the_whole_reply_reports(adapter: Adapter) -> None:
    adapter.server.usage = ANTHROPIC_USAGE if adapter.name == "anthropic" else OPENAI_USAGE
    adapter.server.script = [TEXT, TEXT]
    whole = adapter.make(adapter.server)(MESSAGES)
    streamed = adapter.llm()(MESSAGES, on_text=Receiver())
    assert "stream" not in adapter.server.received[0].body
    assert whole == streamed == LLMReply(TEXT, MAPPED_USAGE[adapter.name])


async def test_usage_is_what_the_whole_reply_reports_async(adapter: Adapter) -> None:
    adapter.server.usage = ANTHROPIC_USAGE if adapter.name == "anthropic" else OPENAI_USAGE
    adapter.server.script = [TEXT, TEXT]
    whole = await adapter.make(adapter.server).acall(MESSAGES)
    streamed = await adapter.llm().acall(MESSAGES)
    assert whole == streamed == LLMReply(TEXT, MAPPED_USAGE[adapter.name])


def test_on_text_may_be_left_out(adapter: Adapter) -> None:
    adapter.server.script = [TEXT, TEXT]
    llm = adapter.llm()
    assert llm(MESSAGES) == LLMReply(TEXT, DEFAULT_USAGE[adapter.name])
    assert llm(MESSAGES, on_text=None) == LLMReply(TEXT, DEFAULT_USAGE[adapter.name])


async def test_on_text_may_be_left_out_async(adapter: Adapter) -> None:
    adapter.server.script = [TEXT]
    assert await adapter.llm().acall(MESSAGES) == LLMReply(TEXT, DEFAULT_USAGE[adapter.name])


def test_an_empty_reply_streams_no_piece(adapter: Adapter) -> None:
    adapter.server.script = [""]
    got = Receiver()
    assert adapter.llm()(MESSAGES, on_text=got) == LLMReply("", DEFAULT_USAGE[adapter.name])
    assert got.log == []


def test_without_stream_on_text_gets_the_whole_text_once(adapter: Adapter) -> None:
    adapter.server.script = [TEXT]
    got = Receiver()
    llm = adapter.make(adapter.server)
    assert llm.streams is False
    assert llm(MESSAGES, on_text=got).content == TEXT
    assert got.log == [TEXT]
    assert "stream" not in adapter.server.received[0].body


@pytest.mark.timeout(120)
def test_any_cut_of_the_text_gives_the_same_reply(adapter: Adapter) -> None:
    """50 random cuts, down to a chunk per character: the pieces are the chunks sent, and
    the reply is the text."""
    adapter.server.script = [Stream(TEXT, seed=seed) for seed in SEEDS]
    llm = adapter.llm()
    for seed in SEEDS:
        got = Receiver()
        assert llm(MESSAGES, on_text=got) == LLMReply(TEXT, DEFAULT_USAGE[adapter.name]), seed
        assert got.log == split(TEXT, seed=seed), seed


@pytest.mark.timeout(120)
async def test_any_cut_of_the_text_gives_the_same_reply_async(adapter: Adapter) -> None:
    adapter.server.script = [Stream(TEXT, seed=seed) for seed in SEEDS]
    llm = adapter.llm()
    for seed in SEEDS:
        got = Receiver()
        reply = await llm.acall(MESSAGES, on_text=got)
        assert reply == LLMReply(TEXT, DEFAULT_USAGE[adapter.name]), seed
        assert got.log == split(TEXT, seed=seed), seed


def test_tool_call_deltas_are_no_part_of_the_text(openai_server: OpenAIServer) -> None:
    calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": "x"}'},
        }
    ]
    openai_server.script = [ToolCalls(calls, "Let me look."), ToolCalls(calls, "Let me look.")]
    whole = openai_llm(openai_server)(MESSAGES)
    got = Receiver()
    streamed = openai_llm(openai_server, stream=True)(MESSAGES, on_text=got)
    assert whole == streamed == LLMReply("Let me look.", DEFAULT_USAGE["openai"])
    assert got.text == "Let me look."


def test_only_text_blocks_make_an_anthropic_reply(anthropic_server: AnthropicServer) -> None:
    blocks = [
        {"type": "thinking", "thinking": "(return 0)", "signature": "sig"},
        {"type": "text", "text": "first "},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
        {"type": "text", "text": "second"},
    ]
    anthropic_server.script = [Parts(blocks), Parts(blocks)]
    whole = anthropic_llm(anthropic_server)(MESSAGES)
    got = Receiver()
    streamed = anthropic_llm(anthropic_server, stream=True)(MESSAGES, on_text=got)
    assert whole == streamed == LLMReply("first second", DEFAULT_USAGE["anthropic"])
    assert got.text == "first second"


# --- streams that end wrong -------------------------------------------------------------------


def test_a_stream_cut_before_its_closing_event_is_an_error(adapter: Adapter) -> None:
    """The connection closes cleanly after the text, before [DONE] / message_stop."""
    adapter.server.script = [Stream(TEXT, cuts=[5, 20], ending="close")]
    got = Receiver()
    with pytest.raises(Exception) as info:
        adapter.llm()(MESSAGES, on_text=got)
    assert got.log == [TEXT[:5], TEXT[5:20], TEXT[20:]]
    if adapter.name == "litellm":
        # litellm reads the stream itself and raises its own (transient) error first
        assert type(info.value).__name__ == "MidStreamFallbackError"
        assert "Stream ended before a finish_reason was received" in str(info.value)
        assert is_transient(info.value)
        return
    assert type(info.value) is LLMReplyError
    assert str(info.value) == cut_short(adapter.closing, len(TEXT))
    assert not is_transient(info.value)


async def test_a_stream_cut_before_its_closing_event_is_an_error_async(adapter: Adapter) -> None:
    adapter.server.script = [Stream("abc", cuts=[1], ending="close")]
    with pytest.raises(Exception) as info:
        await adapter.llm().acall(MESSAGES)
    if adapter.name == "litellm":
        assert type(info.value).__name__ == "MidStreamFallbackError"
        assert "Stream ended before a finish_reason was received" in str(info.value)
        return
    assert type(info.value) is LLMReplyError
    assert str(info.value) == cut_short(adapter.closing, 3)


@pytest.mark.parametrize("transient", [True, False], ids=["overloaded", "refused"])
def test_an_error_event_is_raised(adapter: Adapter, transient: bool) -> None:
    overloaded, refused = error_kinds(adapter.name)
    kind = overloaded if transient else refused
    adapter.server.script = [
        Stream("partial", cuts=[3], ending="error", error_kind=kind, error_message="Try later")
    ]
    got = Receiver()
    with pytest.raises(Exception) as info:
        adapter.llm()(MESSAGES, on_text=got)
    assert got.log == ["par", "tial"]
    if adapter.name == "litellm":
        # litellm raises its own connection error for any error event (transient)
        assert type(info.value).__name__ == "MidStreamFallbackError"
        assert "Try later" in str(info.value) and is_transient(info.value)
        return
    expected = f"the reply's event stream carried an error ({kind}): Try later"
    assert str(info.value) == expected
    if transient:
        assert type(info.value) is TransientLLMError and is_transient(info.value)
    else:
        assert type(info.value) is LLMReplyError and info.value.path == "error"
        assert not is_transient(info.value)


async def test_an_error_event_is_raised_async(adapter: Adapter) -> None:
    overloaded, _ = error_kinds(adapter.name)
    adapter.server.script = [Stream("p", ending="error", error_kind=overloaded)]
    with pytest.raises(Exception) as info:
        await adapter.llm().acall(MESSAGES)
    assert is_transient(info.value)
    if adapter.name != "litellm":
        assert type(info.value) is TransientLLMError
        assert str(info.value) == (
            f"the reply's event stream carried an error ({overloaded}): Overloaded"
        )


@pytest.mark.parametrize(
    ("error", "transient", "message"),
    [
        ({"type": "server_error", "message": "boom"}, True, "(server_error): boom"),
        ({"code": 503, "message": "busy"}, True, "(of no type): busy"),
        ({"code": "rate_limit_exceeded", "message": "slow"}, True, "(of no type): slow"),
        ({"type": "invalid_request_error", "code": 400, "message": "no"}, False, "error): no"),
        ({"type": ["odd"], "code": {"x": 1}, "message": 7}, False, "(of no type): the integer 7"),
        ("a plain string", False, "(of no type): a plain string"),
    ],
)
def test_error_events_of_any_shape(
    openai_server: OpenAIServer, error: Any, transient: bool, message: str
) -> None:
    body = sse_body("data: " + OPENAI_CHUNK % ('"a"', "null") + "\n\n")
    body += sse_body("data: " + json.dumps({"error": error}) + "\n\n")
    openai_server.script = [Raw(body, {"content-type": "text/event-stream"})]
    with pytest.raises((TransientLLMError, LLMReplyError)) as info:
        openai_llm(openai_server, stream=True)(MESSAGES)
    assert type(info.value) is (TransientLLMError if transient else LLMReplyError)
    assert str(info.value).startswith("the reply's event stream carried an error ")
    assert str(info.value).endswith(message)


def test_a_status_error_before_the_stream_is_the_sdks(adapter: Adapter) -> None:
    bad = Error(400, adapter.server.error_body("model not found", "invalid_request_error"))
    adapter.server.script = [bad]
    got = Receiver()
    with pytest.raises(Exception) as info:
        adapter.llm()(MESSAGES, on_text=got)
    assert "BadRequestError" in type(info.value).__name__
    assert "model not found" in str(info.value) and not is_transient(info.value)
    assert got.log == []


# --- retries ----------------------------------------------------------------------------------


def limited(server: WireServer) -> Error:
    error = Error(429, server.error_body("slow down", "rate_limit_error"))
    error.headers = {"Retry-After": "0"}
    return error


def test_a_retry_after_a_rate_limit_restarts_the_receiver(adapter: Adapter) -> None:
    adapter.server.script = [limited(adapter.server), TEXT]
    got = Receiver()
    reply, retries = call_llm(adapter.llm(), MESSAGES, FAST, on_text=got)
    assert (reply, retries) == (LLMReply(TEXT, DEFAULT_USAGE[adapter.name]), 1)
    assert got.log == [Receiver.RESTART, *split(TEXT, seed=0)]
    assert len(adapter.server.received) == 2


async def test_a_retry_after_a_rate_limit_restarts_the_receiver_async(adapter: Adapter) -> None:
    adapter.server.script = [limited(adapter.server), TEXT]
    got = Receiver()
    reply, retries = await acall_llm(adapter.llm(), MESSAGES, FAST, on_text=got)
    assert (reply, retries) == (LLMReply(TEXT, DEFAULT_USAGE[adapter.name]), 1)
    assert got.log == [Receiver.RESTART, *split(TEXT, seed=0)]


def test_a_stream_broken_off_by_an_overload_is_retried_from_the_start(adapter: Adapter) -> None:
    """The partial text of the failed attempt reached on_text: restart() tells it to drop it."""
    overloaded, _ = error_kinds(adapter.name)
    broken = Stream("(return", cuts=[3], ending="error", error_kind=overloaded)
    adapter.server.script = [broken, Stream("(return 2)", cuts=[4])]
    got = Receiver()
    reply, retries = call_llm(adapter.llm(), MESSAGES, FAST, on_text=got)
    assert (reply.content, retries) == ("(return 2)", 1)
    assert got.log == ["(re", "turn", Receiver.RESTART, "(ret", "urn 2)"]


async def test_a_stream_broken_off_is_retried_from_the_start_async(adapter: Adapter) -> None:
    overloaded, _ = error_kinds(adapter.name)
    broken = Stream("(return", cuts=[3], ending="error", error_kind=overloaded)
    adapter.server.script = [broken, Stream("(return 2)", cuts=[4])]
    got = Receiver()
    reply, retries = await acall_llm(adapter.llm(), MESSAGES, FAST, on_text=got)
    assert (reply.content, retries) == ("(return 2)", 1)
    assert got.log == ["(re", "turn", Receiver.RESTART, "(ret", "urn 2)"]


# --- the deadline and the size bound ----------------------------------------------------------


def _reader_gone(server: WireServer, within: float) -> float:
    started = time.monotonic()
    while not server.trickled and time.monotonic() - started < within:
        time.sleep(0.01)
    assert server.trickled, f"the stream was still being read {within} s after its deadline"
    return time.monotonic() - started


def _no_request_threads(within: float) -> None:
    until = time.monotonic() + within
    while time.monotonic() < until:
        if not [t for t in threading.enumerate() if t.name.startswith("ptc-llm-")]:
            return
        time.sleep(0.02)
    raise AssertionError("a request's thread outlived its abandonment")


SLOW = Stream(TEXT, cuts=list(range(1, len(TEXT))), delay=0.1)  # 6 s of chunks


def warm(adapter: Adapter) -> None:
    """One request first, without a deadline: a first request's imports and set-up (seconds
    on a loaded machine) would count against the short deadlines below."""
    adapter.server.script = ["warm"]
    assert adapter.llm()(MESSAGES).content == "warm"
    adapter.server.trickled.clear()


@pytest.mark.timeout(60)
def test_the_deadline_bounds_the_whole_stream(adapter: Adapter) -> None:
    warm(adapter)
    adapter.server.script = [SLOW]
    got = Receiver()
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError) as info:
        adapter.llm(deadline=0.8)(MESSAGES, on_text=got)
    assert 0.8 <= time.monotonic() - started < 2.3
    assert str(info.value) == timed_out(adapter.shown, "0.8")
    assert 1 <= len(got.log) < len(TEXT) and TEXT.startswith(got.text)
    assert _reader_gone(adapter.server, 5.0) < 1.0
    seen = len(got.log)
    time.sleep(0.3)
    assert len(got.log) == seen  # nothing reaches on_text after the caller's error
    _no_request_threads(2.0)


@pytest.mark.timeout(60)
async def test_the_deadline_bounds_the_whole_stream_async(adapter: Adapter) -> None:
    warm(adapter)
    adapter.server.script = [SLOW]
    got = Receiver()
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError) as info:
        await adapter.llm(deadline=0.8).acall(MESSAGES, on_text=got)
    assert 0.8 <= time.monotonic() - started < 2.3
    assert str(info.value) == timed_out(adapter.shown, "0.8")
    assert 1 <= len(got.log) < len(TEXT) and TEXT.startswith(got.text)
    seen = len(got.log)
    await asyncio.sleep(0.3)
    assert len(got.log) == seen


@pytest.mark.timeout(60)
def test_a_stalled_stream_is_abandoned_at_the_deadline(adapter: Adapter) -> None:
    warm(adapter)
    adapter.server.script = [Stream("abc", cuts=[1], ending="stall")]
    got = Receiver()
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        adapter.llm(deadline=0.6)(MESSAGES, on_text=got)
    assert 0.6 <= time.monotonic() - started < 2.1
    assert got.log == ["a", "bc"]
    assert _reader_gone(adapter.server, 5.0) < 1.0
    _no_request_threads(2.0)


@pytest.mark.timeout(60)
def test_each_retry_of_a_stream_has_a_deadline_of_its_own(adapter: Adapter) -> None:
    warm(adapter)
    adapter.server.script = [SLOW, Stream("(return 2)", cuts=[4])]
    got = Receiver()
    reply, retries = call_llm(adapter.llm(deadline=0.6), MESSAGES, FAST, on_text=got)
    assert (reply.content, retries) == ("(return 2)", 1)
    restart = got.log.index(Receiver.RESTART)
    assert TEXT.startswith("".join(got.log[:restart]))
    assert got.log[restart + 1 :] == ["(ret", "urn 2)"]


@pytest.mark.parametrize("deadline", [30, None], ids=["deadline", "no-deadline"])
def test_an_error_on_text_raises_ends_the_request(adapter: Adapter, deadline: Any) -> None:
    adapter.server.script = [SLOW]
    seen: list[str] = []

    def on_text(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 3:
            raise KeyError("the receiver is gone")

    started = time.monotonic()
    with pytest.raises(KeyError, match="the receiver is gone"):
        adapter.llm(deadline=deadline)(MESSAGES, on_text=on_text)
    assert time.monotonic() - started < 2.0
    assert seen == list(TEXT[:3])
    assert _reader_gone(adapter.server, 5.0) < 1.5


async def test_an_error_on_text_raises_ends_the_async_request(adapter: Adapter) -> None:
    adapter.server.script = [SLOW]
    seen: list[str] = []

    def on_text(piece: str) -> None:
        seen.append(piece)
        if len(seen) == 2:
            raise KeyError("the receiver is gone")

    with pytest.raises(KeyError, match="the receiver is gone"):
        await adapter.llm(deadline=30).acall(MESSAGES, on_text=on_text)
    assert seen == list(TEXT[:2])


BIG = "x" * 60_000


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_stream_past_max_reply_bytes_stops(provider: str) -> None:
    kind, make = SDK_PROVIDERS[provider]
    server = kind().start()
    try:
        # chunks 10 ms apart: read one by one, the first ones pass before the bound is reached
        server.script = [Stream(BIG, cuts=list(range(1000, len(BIG), 1000)), delay=0.01)]
        llm = make(server, stream=True, max_reply_bytes=20_000)
        got = Receiver()
        with pytest.raises(LLMReplyTooLargeError) as info:
            llm(MESSAGES, on_text=got)
        assert str(info.value) == too_large(repr(llm), 20_000)
        assert info.value.limit == 20_000 and not is_transient(info.value)
        # the event bytes around the text count: the pieces passed on are fewer than the bound
        assert 0 < len(got.text) < 20_000 and set(got.text) == {"x"}
    finally:
        server.stop()


async def test_a_stream_past_max_reply_bytes_stops_async(anthropic_server: AnthropicServer) -> None:
    anthropic_server.script = [Stream(BIG, cuts=list(range(1000, len(BIG), 1000)))]
    llm = anthropic_llm(anthropic_server, stream=True, max_reply_bytes=20_000)
    with pytest.raises(LLMReplyTooLargeError) as info:
        await llm.acall(MESSAGES)
    assert str(info.value) == too_large("ptc.llm.anthropic('claude-test')", 20_000)


def test_litellm_has_no_size_bound_to_keep() -> None:
    """litellm reads replies in clients of its own, streamed or not: ptc bounds their time."""
    assert ptc.llm.litellm("openai/m", stream=True).max_reply_bytes is None


# --- the event stream as servers write it -----------------------------------------------------


def sse_body(*events: str, eol: str = "\n") -> bytes:
    return "".join(e.replace("\n", eol) for e in events).encode()


OPENAI_CHUNK = '{"choices": [{"index": 0, "delta": {"content": %s}, "finish_reason": %s}]}'


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["lf", "crlf", "cr"])
def test_any_line_ending_comments_and_fields_are_read(
    openai_server: OpenAIServer, eol: str
) -> None:
    body = sse_body(
        ": keep-alive\n\n",
        "id: 1\nretry: 100\ndata:" + OPENAI_CHUNK % ('"a"', "null") + "\n\n",
        'data: {"choices": [{"index": 0, "delta": {"content": "b\\u2028"},\n',
        'data: "finish_reason": null}]}\n\n',  # one event's data on two lines
        "data: " + OPENAI_CHUNK % ('"c"', '"stop"') + "\n\n",
        'data: {"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 3}}\n\n',
        "data: [DONE]\n\n",
        "data: " + OPENAI_CHUNK % ('"after the end"', "null") + "\n\n",
        eol=eol,
    )
    openai_server.script = [Raw(body, {"content-type": "text/event-stream"})]
    got = Receiver()
    reply = openai_llm(openai_server, stream=True)(MESSAGES, on_text=got)
    assert reply == LLMReply("ab\u2028c", {"input_tokens": 2, "output_tokens": 3})
    assert got.log == ["a", "b\u2028", "c"]


def test_a_stream_cut_inside_an_event_is_an_error(openai_server: OpenAIServer) -> None:
    body = sse_body("data: " + OPENAI_CHUNK % ('"ab"', "null") + "\n\n", 'data: {"choices": [')
    openai_server.script = [Raw(body, {"content-type": "text/event-stream"})]
    with pytest.raises(LLMReplyError) as info:
        openai_llm(openai_server, stream=True)(MESSAGES)
    assert str(info.value) == cut_short("data: [DONE]", 2)


def test_an_event_that_is_not_json_is_named(anthropic_server: AnthropicServer) -> None:
    body = sse_body("event: message_start\ndata: {nope\n\n")
    anthropic_server.script = [Raw(body, {"content-type": "text/event-stream"})]
    with pytest.raises(LLMReplyError) as info:
        anthropic_llm(anthropic_server, stream=True)(MESSAGES)
    assert str(info.value) == (
        "an event of the reply's stream is not JSON (Expecting property name enclosed in"
        " double quotes: line 1 column 2 (char 1)): '{nope'"
    )


def test_a_field_of_the_wrong_type_is_named(anthropic_server: AnthropicServer) -> None:
    delta = (
        '{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 7}}'
    )
    body = sse_body(f"event: content_block_delta\ndata: {delta}\n\n")
    anthropic_server.script = [Raw(body, {"content-type": "text/event-stream"})]
    with pytest.raises(LLMReplyError) as info:
        anthropic_llm(anthropic_server, stream=True)(MESSAGES)
    assert str(info.value) == "content_block_delta.delta.text: expected text, got the integer 7"
    assert info.value.path == "content_block_delta.delta.text"


def test_a_compressed_stream_is_read(openai_server: OpenAIServer) -> None:
    body = sse_body("data: " + OPENAI_CHUNK % ('"zipped"', '"stop"') + "\n\n", "data: [DONE]\n\n")
    headers = {"content-type": "text/event-stream", "content-encoding": "gzip"}
    openai_server.script = [Raw(gzip.compress(body), headers)]
    got = Receiver()
    assert openai_llm(openai_server, stream=True)(MESSAGES, on_text=got).content == "zipped"
    assert got.log == ["zipped"]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_server_that_does_not_stream_is_read_whole(provider: str) -> None:
    """A server that ignores `"stream": true` answers with the whole reply as JSON: its text
    is one piece."""
    kind, make = SDK_PROVIDERS[provider]
    server = kind().start()
    try:
        server.script = [Raw(json.dumps(server.reply_body(TEXT, {"model": "m"})).encode())]
        got = Receiver()
        reply = make(server, stream=True)(MESSAGES, on_text=got)
        assert reply == LLMReply(TEXT, DEFAULT_USAGE[provider])
        assert got.log == [TEXT]
    finally:
        server.stop()


@pytest.mark.timeout(60)
def test_a_stream_trickled_a_byte_at_a_time_is_read(openai_server: OpenAIServer) -> None:
    """Every read holds one byte: a character's UTF-8 bytes arrive in separate reads."""
    openai_server.script = [Trickle("é🎉", every=0.001)]
    got = Receiver()
    reply = openai_llm(openai_server, stream=True)(MESSAGES, on_text=got)
    assert reply == LLMReply("é🎉", DEFAULT_USAGE["openai"])
    assert got.log == split("é🎉", seed=0)


def test_the_event_parser_reads_any_split_of_its_bytes() -> None:
    body = sse_body(
        "\ufeffevent: a\ndata: é🎉\ndata:\u2028x\n\n",
        ": comment\r\nevent:b\r\ndata: 1\r\n\r\n",
        "data: last\r",
    )
    expected = [("a", "é🎉\n\u2028x"), ("b", "1"), ("message", "last")]
    for size in (1, 2, 3, 5, 7, len(body)):
        events = EventStream()
        got = [e for i in range(0, len(body), size) for e in events.feed(body[i : i + size])]
        assert [*got, *events.end()] == expected, size


def test_an_unfinished_line_at_the_end_is_dropped() -> None:
    events = EventStream()
    assert list(events.feed(b"data: one\n\ndata: two\ndata: tw")) == [("message", "one")]
    assert list(events.end()) == [("message", "two")]


# --- ScriptedLLM ------------------------------------------------------------------------------


def test_a_scripted_llm_streams_in_pieces_of_n_characters() -> None:
    llm = ScriptedLLM(["abcdefg", {"content": "hi", "usage": {"input_tokens": 1}}], stream_chunks=3)
    assert llm.streams is True
    got = Receiver()
    assert llm(MESSAGES, on_text=got) == "abcdefg"
    assert got.log == ["abc", "def", "g"]
    got = Receiver()
    assert llm(MESSAGES, on_text=got) == {"content": "hi", "usage": {"input_tokens": 1}}
    assert got.log == ["hi"]


def test_a_scripted_llm_streams_in_the_pieces_a_function_cuts() -> None:
    llm = ScriptedLLM([TEXT], stream_chunks=lambda text: split(text, seed=7))
    got = Receiver()
    reply, retries = call_llm(llm, MESSAGES, FAST, on_text=got)
    assert (reply, retries) == (LLMReply(TEXT), 0)
    assert got.log == split(TEXT, seed=7)
    bad = ScriptedLLM(["abc"], stream_chunks=lambda text: ["ab"])
    with pytest.raises(ValueError, match="do not join to the text"):
        bad(MESSAGES, on_text=Receiver())


def test_a_scripted_llm_waits_between_pieces() -> None:
    llm = ScriptedLLM(["abc"], stream_chunks=1, chunk_delay=0.1)
    got = Receiver()
    llm(MESSAGES, on_text=got)
    assert got.log == ["a", "b", "c"]
    assert got.at[2] - got.at[0] >= 0.18


async def test_an_async_scripted_llm_streams() -> None:
    llm = AsyncScriptedLLM([TransientLLMError("busy"), "abcde"], stream_chunks=2, chunk_delay=0.01)
    got = Receiver()
    reply, retries = await acall_llm(llm, MESSAGES, FAST, on_text=got)
    assert (reply, retries) == (LLMReply("abcde"), 1)
    assert got.log == [Receiver.RESTART, "ab", "cd", "e"]


def test_an_llm_that_does_not_stream_gets_no_on_text() -> None:
    """call_llm calls on_text with the whole text once, and restarts it before a retry."""
    received: list[tuple[Any, ...]] = []

    def llm(*args: Any) -> str:
        received.append(args)
        if len(received) == 1:
            raise TransientLLMError("busy")
        return "whole"

    got = Receiver()
    reply, retries = call_llm(llm, MESSAGES, FAST, on_text=got)
    assert (reply, retries) == (LLMReply("whole"), 1)
    assert [len(args) for args in received] == [1, 1]  # never passed on_text
    assert got.log == [Receiver.RESTART, "whole"]
    plain = ScriptedLLM(["x"])
    assert plain.streams is False
    assert call_llm(plain, MESSAGES, FAST, on_text=got)[0] == LLMReply("x")
    assert got.log[-1] == "x"


async def test_an_llm_that_does_not_stream_gets_no_on_text_async() -> None:
    seen: list[str] = []
    reply, _ = await acall_llm(AsyncScriptedLLM(["whole"]), MESSAGES, FAST, on_text=seen.append)
    assert reply == LLMReply("whole") and seen == ["whole"]


def test_a_receiver_without_restart_is_fine() -> None:
    seen: list[str] = []
    llm = ScriptedLLM([TransientLLMError("busy"), "ok"], stream_chunks=1)
    assert call_llm(llm, MESSAGES, FAST, on_text=seen.append)[0] == LLMReply("ok")
    assert seen == ["o", "k"]


@pytest.mark.parametrize(
    ("chunks", "error", "message"),
    [
        (0, ValueError, "stream_chunks must be at least 1 character, got 0"),
        (True, TypeError, "stream_chunks must be a number of characters or a function of the"),
        ("3", TypeError, "stream_chunks must be a number of characters or a function of the"),
    ],
)
def test_a_bad_stream_chunks_is_refused(chunks: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        ScriptedLLM(["x"], stream_chunks=chunks)


def test_stream_must_be_a_boolean() -> None:
    for make in (ptc.llm.openai, ptc.llm.anthropic, ptc.llm.litellm):
        with pytest.raises(TypeError, match="stream must be True or False, got str"):
            make("m", stream="yes")
        assert make("m").streams is False and make("m", stream=True).streams is True
