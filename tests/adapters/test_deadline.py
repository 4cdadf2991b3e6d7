"""A total deadline per LLM request (issue 29, item 13): a provider that trickles its reply one
byte at a time never trips the SDK's read timeout (each byte arrives well within it), and kept
`SubAgent.run()` waiting for as long as it trickled. Every adapter now ends such a request at
its `deadline` with `LLMTimeoutError`, on the sync and the async path, with the real SDKs over
loopback HTTP."""

from __future__ import annotations

import os
import pickle
import threading
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")

# imported here: a first import inside a request (seconds on a loaded machine) would count
import anthropic  # noqa: F401
import litellm  # noqa: F401
import openai  # noqa: F401
import ptc
import ptc.llm
import pytest
from ptc.llm import LLMTimeoutError, RetryPolicy, TransientLLMError, is_transient
from wire import AnthropicServer, Endless, OpenAIServer, Trickle, WireServer

PROGRAM = "```clojure\n(return (count data/orders))\n```"
ORDERS = [{"id": 1}, {"id": 2}]
ONCE = RetryPolicy(attempts=1)
MESSAGES = [{"role": "user", "content": "x"}]


def openai_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.openai("local-model", base_url=server.url + "/v1", api_key="k", **kw)


def anthropic_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.anthropic("claude-test", base_url=server.url, api_key="k", **kw)


def litellm_llm(server: WireServer, **kw: Any) -> Any:
    return ptc.llm.litellm("openai/local-model", api_base=server.url + "/v1", api_key="k", **kw)


ADAPTERS: list[tuple[str, Callable[..., Any], type[WireServer], str]] = [
    ("openai", openai_llm, OpenAIServer, "ptc.llm.openai('local-model')"),
    ("anthropic", anthropic_llm, AnthropicServer, "ptc.llm.anthropic('claude-test')"),
    ("litellm", litellm_llm, OpenAIServer, "ptc.llm.litellm('openai/local-model')"),
]


def timed_out(name: str, seconds: str) -> str:
    return (
        f"{name}: no complete reply within the request deadline of {seconds} s (set by the"
        " adapter's deadline=; each retry has its own)"
    )


@pytest.fixture(params=ADAPTERS, ids=[a[0] for a in ADAPTERS])
def adapter(request: pytest.FixtureRequest) -> Any:
    _, make, kind, name = request.param
    server = kind().start()
    try:
        yield make, server, name
    finally:
        server.stop()


@pytest.mark.timeout(60)
def test_a_trickling_reply_ends_the_step_at_the_deadline(adapter: Any) -> None:
    make, server, name = adapter
    server.script = [Trickle(PROGRAM, every=0.2)]  # the whole reply would take over a minute
    agent = ptc.SubAgent(
        "How many?", llm=make(server, deadline=1.0), data={"orders": ORDERS}, retry=ONCE
    )
    started = time.monotonic()
    step = agent.run()
    elapsed = time.monotonic() - started
    assert not step.ok and step.error is not None and step.error.type == "llm_error"
    assert step.error.message == "LLM call failed: LLMTimeoutError: " + timed_out(name, "1")
    assert 1.0 <= elapsed < 2.5


@pytest.mark.timeout(60)
async def test_a_trickling_reply_ends_the_async_step_at_the_deadline(adapter: Any) -> None:
    make, server, name = adapter
    server.script = [Trickle(PROGRAM, every=0.2)]
    agent = ptc.SubAgent(
        "How many?", llm=make(server, deadline=0.8), data={"orders": ORDERS}, retry=ONCE
    )
    started = time.monotonic()
    step = await agent.arun()
    elapsed = time.monotonic() - started
    assert not step.ok and step.error is not None
    assert step.error.message == "LLM call failed: LLMTimeoutError: " + timed_out(name, "0.8")
    assert 0.8 <= elapsed < 2.3


@pytest.mark.timeout(60)
def test_trickled_headers_end_at_the_deadline_too(adapter: Any) -> None:
    make, server, name = adapter
    server.script = [Trickle(PROGRAM, every=0.1, headers_too=True)]
    llm = make(server, deadline=0.7)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError) as info:
        llm(MESSAGES)
    assert 0.7 <= time.monotonic() - started < 2.2
    assert str(info.value) == timed_out(name, "0.7")
    assert info.value.deadline == 0.7


def _reader_gone(server: WireServer, within: float) -> float:
    """Seconds until the server saw its reader go (a trickled or endless reply ended)."""
    started = time.monotonic()
    while not server.trickled and time.monotonic() - started < within:
        time.sleep(0.01)
    assert server.trickled, f"the request was still being read {within} s after its deadline"
    return time.monotonic() - started


def _no_request_threads(within: float) -> None:
    until = time.monotonic() + within
    while time.monotonic() < until:
        if not [t for t in threading.enumerate() if t.name.startswith("ptc-llm-")]:
            return
        time.sleep(0.02)
    raise AssertionError("a request's thread outlived its abandonment")


@pytest.mark.timeout(60)
def test_a_request_abandoned_at_its_deadline_stops_reading(adapter: Any) -> None:
    """A provider streams an endless body as fast as loopback goes: the sync request ends at
    its deadline, and its thread read on (350 MB/s, until the process died). Its sockets are
    now shut down: the server sees the reader go at once and the thread ends. (The size bound
    is lifted: with it, the body ends at 32 MiB first.)"""
    make, server, name = adapter
    server.script = [Endless()]
    unbounded = {} if "litellm" in name else {"max_reply_bytes": None}
    with pytest.raises(LLMTimeoutError):
        make(server, deadline=0.5, **unbounded)(MESSAGES)
    assert _reader_gone(server, 5.0) < 1.0
    _no_request_threads(2.0)


@pytest.mark.timeout(60)
def test_a_request_still_waiting_for_headers_is_released_at_its_deadline(adapter: Any) -> None:
    """Headers trickled a byte every 0.1 s: the abandoned thread would wait for all of them
    (tens of seconds; the SDK's read timeout never trips). Its socket, found in its frames,
    is shut down at the deadline."""
    make, server, _ = adapter
    server.script = [Trickle(PROGRAM, every=0.1, headers_too=True)]
    with pytest.raises(LLMTimeoutError):
        make(server, deadline=0.5)(MESSAGES)
    assert _reader_gone(server, 5.0) < 1.0
    _no_request_threads(2.0)


@pytest.mark.timeout(60)
def test_each_retry_has_a_deadline_of_its_own() -> None:
    server = OpenAIServer().start()
    try:
        server.script = [Trickle(PROGRAM, every=0.2), PROGRAM]
        agent = ptc.SubAgent(
            "How many?",
            llm=openai_llm(server, deadline=0.6),
            data={"orders": ORDERS},
            retry=RetryPolicy(attempts=2, initial_delay=0.01),
        )
        started = time.monotonic()
        step = agent.run()
        assert step.ok and step.value == 2
        assert step.usage.llm_retries == 1 and len(server.received) == 2
        assert 0.6 <= time.monotonic() - started < 2.0
    finally:
        server.stop()


def test_a_reply_within_the_deadline_is_unchanged(adapter: Any) -> None:
    make, server, _ = adapter
    server.script = [PROGRAM, PROGRAM]
    assert make(server, deadline=5).deadline == 5.0
    assert make(server, deadline=5)(MESSAGES).content == PROGRAM
    assert make(server, deadline=None)(MESSAGES).content == PROGRAM


def test_the_default_deadline_is_600_seconds() -> None:
    """The SDKs' own default request timeout (openai, anthropic): no request they would wait
    for is cut."""
    assert ptc.llm.openai("m").deadline == 600.0
    assert ptc.llm.anthropic("m").deadline == 600.0
    assert ptc.llm.litellm("openai/m").deadline == 600.0


@pytest.mark.parametrize(
    ("deadline", "error", "message"),
    [
        (0, ValueError, "deadline must be a positive, finite number of seconds, got 0"),
        (-1.5, ValueError, "deadline must be a positive, finite number of seconds, got -1.5"),
        (
            float("nan"),
            ValueError,
            "deadline must be a positive, finite number of seconds, got nan",
        ),
        (
            float("inf"),
            ValueError,
            "deadline must be a positive, finite number of seconds, got inf",
        ),
        (True, TypeError, "deadline must be a number of seconds or None, got bool"),
        ("600", TypeError, "deadline must be a number of seconds or None, got str"),
    ],
)
def test_a_bad_deadline_is_refused(deadline: Any, error: type[Exception], message: str) -> None:
    for make in (ptc.llm.openai, ptc.llm.anthropic, ptc.llm.litellm):
        with pytest.raises(error) as info:
            make("m", deadline=deadline)
        assert str(info.value) == message


def test_the_error_is_transient_and_keeps_its_deadline_when_pickled() -> None:
    exc = LLMTimeoutError("slow", 2.5)
    assert isinstance(exc, TransientLLMError) and is_transient(exc)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is LLMTimeoutError and str(back) == "slow" and back.deadline == 2.5
