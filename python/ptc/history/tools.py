"""The history stores' search functions packaged as tools for a program: what a program passes
is checked, and each search is bounded by its tool's timeout and by its run's deadline."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ptc import _core

from ._checks import describe
from .rows import SearchTimeout, StoredMessage, check_limit, check_seconds

if TYPE_CHECKING:
    from .store import Store


@dataclass(frozen=True, slots=True)
class HistoryTool:
    """A search function packaged for an agent: name, description, signature, callable.

    Accepts positional arguments, keyword arguments, or one mapping of named arguments
    (how a PTC-Lisp program's ``(tool/search-messages {:query "iron"})`` arrives).
    """

    name: str
    description: str
    signature: str
    fn: Callable[..., list[dict[str, Any]]]

    def __call__(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        if len(args) == 1 and isinstance(args[0], Mapping) and not kwargs:
            kwargs = {str(k).replace("-", "_"): v for k, v in args[0].items()}
            args = ()
        return self.fn(*args, **kwargs)


_SIGNATURE = "(query :string, limit :int?) -> [:map]"

#: How long one search through :func:`search_tools` may take by default, in seconds (its run's
#: deadline bounds it too): a run's default ``timeout_ms`` (5,000) leaves time for several.
TOOL_TIMEOUT = 1.0


def _within_run(
    what: str, seconds: float, search: Callable[[float], list[StoredMessage]]
) -> list[StoredMessage]:
    """``search(timeout)`` given ``seconds``, or less when the run calling the tool must stop
    sooner: a search never goes on past its run's deadline (the run no longer waits for it, and
    the search would hold the store). A run that has stopped (deadline passed, cancelled)
    starts none."""
    left = _core._tool_time_left()  # None: not called by a run (a host calling the tool)
    if left is None or left >= seconds:
        return search(seconds)
    if left <= 0:
        raise SearchTimeout(
            f"{what} was not started: its run has stopped (its time limit passed, or it was "
            "cancelled)"
        )
    try:
        return search(left)
    except SearchTimeout:
        raise SearchTimeout(
            f"{what} was stopped when its run's time ran out ({left:.2f} s after the search "
            "started): search for a more distinctive text, or give the run more time"
        ) from None


def search_tools(
    store: Store,
    *,
    agent_id: str | None = None,
    max_limit: int = 100,
    timeout: float = TOOL_TIMEOUT,
) -> dict[str, HistoryTool]:
    """``search-messages``, ``search-reasoning`` and ``search-broadcasts`` as tools.

    Messages and reasoning are searched for ``agent_id`` (all agents when ``None``);
    results are plain dicts, newest ``limit`` matches returned oldest first.

    What a program passes is checked, and every refusal is a tool error naming the argument:
    ``query`` must be a string of at most :data:`~ptc.history.MAX_QUERY_CHARS` characters;
    ``limit`` an integer (absent or nil: 20), clamped to 1..``max_limit``. Each search is
    stopped after ``timeout`` seconds, or at its run's deadline if that comes first
    (``SearchTimeout``, naming which), so it never holds the store past its run's time; a tool
    called once its run has stopped (deadline passed, cancelled) searches nothing.
    """
    max_limit = check_limit(max_limit, "max_limit")
    if max_limit < 1:
        raise ValueError(f"max_limit must be 1 or more, got {max_limit}")
    seconds = check_seconds(timeout, "timeout", allow_zero=False)

    def text(query: Any) -> str:
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, got {describe(query)}")
        return query

    def count(limit: Any) -> int:
        if limit is None:
            return min(20, max_limit)
        if isinstance(limit, bool) or not isinstance(limit, int):
            wanted = f"an integer from 1 to {max_limit}"
            raise TypeError(f"limit must be {wanted}, got {describe(limit)}")
        return max(1, min(limit, max_limit))

    def search_messages(query: str, limit: int | None = 20) -> list[dict[str, Any]]:
        q, n = text(query), count(limit)
        found = _within_run(
            "search of content",
            seconds,
            lambda t: store.search_messages(q, n, agent_id=agent_id, timeout=t),
        )
        return [r.to_dict() for r in found]

    def search_reasoning(query: str, limit: int | None = 20) -> list[dict[str, Any]]:
        q, n = text(query), count(limit)
        found = _within_run(
            "search of reasoning",
            seconds,
            lambda t: store.search_reasoning(q, n, agent_id=agent_id, timeout=t),
        )
        return [r.to_dict() for r in found]

    def search_broadcasts(query: str, limit: int | None = 20) -> list[dict[str, Any]]:
        q, n = text(query), count(limit)
        found = _within_run(
            "search of content", seconds, lambda t: store.search_broadcasts(q, n, timeout=t)
        )
        return [r.to_dict() for r in found]

    tools = [
        HistoryTool(
            "search-messages",
            "Search your past messages by text. Returns the newest `limit` matches, oldest "
            "first, each with role, source, sender_id, content and created_at.",
            _SIGNATURE,
            search_messages,
        ),
        HistoryTool(
            "search-reasoning",
            "Search your past reasoning by text. Returns the newest `limit` matches, oldest "
            "first, with the message content and its reasoning.",
            _SIGNATURE,
            search_reasoning,
        ),
        HistoryTool(
            "search-broadcasts",
            "Search broadcasts from the commander and other agents by text. Returns the "
            "newest `limit` matches, oldest first.",
            _SIGNATURE,
            search_broadcasts,
        ),
    ]
    return {t.name: t for t in tools}
