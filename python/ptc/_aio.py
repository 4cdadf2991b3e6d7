"""Calling what may be sync or async, one way everywhere: LLM callables, summarizers, adapters
and async tools outside a run's own loop all go through here."""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def awaited(aw: Awaitable[T]) -> T:
    """A coroutine for any awaitable (``asyncio.run`` and friends take coroutines only)."""
    return await aw


def is_async_callable(fn: Any) -> bool:
    """``async def`` functions, and objects whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 (an instance's async __call__)
    )


def call_sync(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` from sync code; an awaitable it returns is run to completion."""
    out = fn(*args)
    return run_blocking(out) if inspect.isawaitable(out) else out


async def call_async(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` from async code: awaited when ``fn`` is async, else run in a worker
    thread (so it does not block the loop), an awaitable it returns awaited too."""
    if is_async_callable(fn):
        return await fn(*args)
    out = await asyncio.to_thread(fn, *args)
    return await out if inspect.isawaitable(out) else out


def run_blocking(aw: Awaitable[T]) -> T:
    """The awaitable's result. Without a running event loop in this thread it runs on a loop
    of its own; inside one (a sync API called from async code, whose loop cannot be entered
    again) it runs on a fresh thread's loop while this thread waits. Exceptions propagate."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaited(aw))
    with concurrent.futures.ThreadPoolExecutor(1, "ptc-run-blocking") as pool:
        return pool.submit(asyncio.run, awaited(aw)).result()
