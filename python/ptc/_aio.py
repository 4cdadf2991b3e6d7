"""Running an awaitable to completion from synchronous code, one way everywhere: LLM callables,
summarizers, adapters and async tools outside a run's own loop all go through here."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def _awaited(aw: Awaitable[T]) -> T:
    return await aw


def run_blocking(aw: Awaitable[T]) -> T:
    """The awaitable's result. Without a running event loop in this thread it runs on a loop
    of its own; inside one (a sync API called from async code, whose loop cannot be entered
    again) it runs on a fresh thread's loop while this thread waits. Exceptions propagate."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(aw))
    with concurrent.futures.ThreadPoolExecutor(1, "ptc-run-blocking") as pool:
        return pool.submit(asyncio.run, _awaited(aw)).result()
