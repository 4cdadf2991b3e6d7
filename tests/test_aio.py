"""One way to finish an awaitable from synchronous code (`ptc._aio.run_blocking`), and the
sync entry points that use it behave alike inside a running event loop."""

from __future__ import annotations

import asyncio
import threading

import pytest
from ptc._aio import run_blocking
from ptc.history import DeterministicSummarizer, SafeSplitSummarization
from ptc.llm import RetryPolicy, call_llm


async def answer(x: int) -> tuple[int, str]:
    await asyncio.sleep(0)
    return x * 2, threading.current_thread().name


async def boom() -> None:
    raise KeyError("lost")


def test_without_a_loop_it_runs_on_this_thread() -> None:
    value, thread = run_blocking(answer(21))
    assert value == 42 and thread == threading.current_thread().name


def test_inside_a_running_loop_it_runs_on_a_fresh_thread() -> None:
    async def caller() -> tuple[int, str]:
        return run_blocking(answer(4))  # a sync API called from async code

    value, thread = asyncio.run(caller())
    assert value == 8 and thread.startswith("ptc-run-blocking")


def test_exceptions_propagate_with_their_type() -> None:
    with pytest.raises(KeyError, match="lost"):
        run_blocking(boom())

    async def caller() -> None:
        run_blocking(boom())

    with pytest.raises(KeyError, match="lost"):
        asyncio.run(caller())


def test_an_llm_returning_a_coroutine_works_from_sync_code_inside_a_loop() -> None:
    async def reply(messages: object) -> str:
        return "(return 1)"

    def llm(messages: object) -> object:
        return reply(messages)  # a sync-looking callable that hands back a coroutine

    async def caller() -> str:
        got, _retries = call_llm(llm, [{"role": "user", "content": "hi"}], RetryPolicy())
        return got.content

    assert asyncio.run(caller()) == "(return 1)"


def test_an_async_summarizer_works_from_sync_apply_inside_a_loop() -> None:
    seen: list[str] = []

    async def summarize(req: object) -> str:
        seen.append(threading.current_thread().name)
        return "short"

    history = [
        {"role": "user", "content": "show the log"},
        {"role": "assistant", "content": "GET / 200\n" * 3000},
    ]
    strategy = SafeSplitSummarization(token_threshold=4000, summarizer=summarize)

    async def caller() -> str:
        return strategy.apply(history).messages[-1].text

    assert asyncio.run(caller()).startswith("Summary of message: short")
    # never on the thread whose loop is running (it cannot be entered again)
    assert seen and threading.current_thread().name not in seen
    plain = SafeSplitSummarization(token_threshold=4000, summarizer=DeterministicSummarizer())
    assert plain.apply(history).messages[-1].text.startswith("Summary of message: ")
