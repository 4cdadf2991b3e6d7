"""The history stores' search functions packaged as tools for a program: what a program passes
is checked, and each search is bounded by its tool's timeout and by its run's deadline."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ptc import _core

from ._checks import describe
from .rows import (
    SearchTimeout,
    StoredMessage,
    check_limit,
    check_seconds,
    cut_record,
    search_what,
)


class Searchable(Protocol):
    """What the search tools call of a store: its three searches. Every
    :class:`~ptc.history.store.Store` is one (that protocol extends this one)."""

    def search_messages(
        self,
        query: str,
        limit: int = 20,
        *,
        agent_id: str | None = None,
        timeout: float | None = None,
    ) -> list[StoredMessage]: ...

    def search_reasoning(
        self,
        query: str,
        limit: int = 20,
        *,
        agent_id: str | None = None,
        timeout: float | None = None,
    ) -> list[StoredMessage]: ...

    def search_broadcasts(
        self, query: str, limit: int = 20, *, timeout: float | None = None
    ) -> list[StoredMessage]: ...


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

#: The characters of each text of a record that a search tool hands a program by default (its
#: ``content``, ``reasoning``, ...); a longer text is cut, with a note giving its length. Stored
#: messages can be megabytes each: 100 of them would be far past any run's memory.
HIT_CHARS = 4_000


def _within_run(
    what: str, seconds: float, search: Callable[[float], list[dict[str, Any]]]
) -> list[dict[str, Any]]:
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


def _records(
    store: Searchable,
    kind: str,
    query: str,
    limit: int,
    agent_id: str | None,
    timeout: float,
    max_chars: int,
) -> list[dict[str, Any]]:
    """The records of a search, each text cut to ``max_chars``: by the store's query when it
    can (the built-in stores), else from the whole rows it returns."""
    cut = getattr(store, "_search_records", None)
    if cut is not None:
        found: list[dict[str, Any]] = cut(
            kind, query, limit, agent_id=agent_id, timeout=timeout, max_chars=max_chars
        )
        return found
    if kind == "broadcasts":
        rows = store.search_broadcasts(query, limit, timeout=timeout)
    elif kind == "reasoning":
        rows = store.search_reasoning(query, limit, agent_id=agent_id, timeout=timeout)
    else:
        rows = store.search_messages(query, limit, agent_id=agent_id, timeout=timeout)
    return [cut_record(r.to_dict(), max_chars) for r in rows]


def search_tools(
    store: Searchable,
    *,
    agent_id: str | None = None,
    max_limit: int = 100,
    timeout: float = TOOL_TIMEOUT,
    max_chars: int = HIT_CHARS,
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

    Each text of a record (``content``, ``reasoning``, ``sender_id``, ...) is at most
    ``max_chars`` characters (default :data:`HIT_CHARS`, 4,000): a longer one is cut, ending
    ``... [cut: N characters in all, the first 4,000 shown]``, so a search hands a program at
    most about ``max_limit`` x 6 x ``max_chars`` characters whatever the store holds. The
    built-in stores cut in the database and never read a message's stored JSON for a tool.
    """
    max_limit = check_limit(max_limit, "max_limit")
    if max_limit < 1:
        raise ValueError(f"max_limit must be 1 or more, got {max_limit}")
    seconds = check_seconds(timeout, "timeout", allow_zero=False)
    max_chars = check_limit(max_chars, "max_chars")
    if max_chars < 1:
        raise ValueError(f"max_chars must be 1 or more, got {max_chars}")

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

    def search(kind: str, query: Any, limit: Any) -> list[dict[str, Any]]:
        q, n = text(query), count(limit)
        return _within_run(
            search_what(kind),
            seconds,
            lambda t: _records(store, kind, q, n, agent_id, t, max_chars),
        )

    def search_messages(query: str, limit: int | None = 20) -> list[dict[str, Any]]:
        return search("messages", query, limit)

    def search_reasoning(query: str, limit: int | None = 20) -> list[dict[str, Any]]:
        return search("reasoning", query, limit)

    def search_broadcasts(query: str, limit: int | None = 20) -> list[dict[str, Any]]:
        return search("broadcasts", query, limit)

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
