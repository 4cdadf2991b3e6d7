"""What both history store backends write and read per message: the rows (columns, keys,
searchable text), the keyed-write check that makes retries idempotent, ``append()``, the
checks of what a search is asked (query, limit, timeout) with their errors, and the searches
the sync stores offer alike (:class:`SearchKinds`)."""

from __future__ import annotations

import json
import math
import numbers
import operator
import re
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Self, cast

from ptc.errors import PtcError

from ._checks import as_message_list, describe, location, short_repr
from .messages import Message
from .openai_codec import from_openai, message_from_openai, message_to_openai


@dataclass(frozen=True, slots=True)
class StoredMessage:
    id: int
    agent_id: str
    run_id: str | None
    role: str
    content: str
    reasoning: str | None
    source: str | None
    sender_id: str | None
    created_at: Any
    message: Message

    def to_dict(self) -> dict[str, Any]:
        """The plain record a search tool returns."""
        d: dict[str, Any] = {
            "id": self.id,
            "agent_id": self.agent_id,
            "role": self.role,
            "source": self.source,
            "sender_id": self.sender_id,
            "content": self.content,
            "created_at": self.created_at,
        }
        if self.reasoning:
            d["reasoning"] = self.reasoning
        return d


def searchable_text(m: Message) -> str:
    """The text searched: content and tool calls."""
    lines = [m.text_with_placeholders()]
    lines.extend(f"{tc.name}({tc.arguments})" for tc in m.tool_calls)
    return "\n".join(x for x in lines if x)


def _reasoning(m: Message) -> str | None:
    if m.meta.reasoning:
        return m.meta.reasoning
    alt = m.extra.get("reasoning_content")
    return alt if isinstance(alt, str) and alt else None


#: Columns written per message, in the order of :func:`message_rows`' tuples.
ROW_COLUMNS = (
    "agent_id, run_id, role, content, reasoning, source, sender_id, tool_call_id, "
    "created_at, stored_at, raw, msg_key"
)


def message_rows(
    messages: Iterable[Message | Mapping[str, Any]],
    agent_id: str,
    run_id: str | None,
    key: str | None,
) -> list[tuple[Any, ...]]:
    """One row per stored message (ephemeral ones are skipped: seed 002 never stores the
    nudge). Without ``key`` the batch gets a fresh one, so the store's own retries of this
    write are idempotent too."""
    for name, value in (("agent_id", agent_id), ("run_id", run_id), ("key", key)):
        if isinstance(value, str) and _SURROGATE.search(value) is not None:
            # an identifier is looked up as given: U+FFFD in its place would name another
            at = cast(re.Match[str], _SURROGATE.search(value))
            raise ValueError(
                f"{name} holds a lone surrogate (U+{ord(at.group()):04X} at index {at.start()}), "
                f"which the database cannot store: got {short_repr(value)}"
            )
    batch = key if key is not None else uuid.uuid4().hex
    rows: list[tuple[Any, ...]] = []
    now = time.time()
    for i, item in enumerate(as_message_list(messages)):
        m = item if isinstance(item, Message) else message_from_openai(item, index=i)
        if m.meta.ephemeral:
            continue
        raw = raw_json(message_to_openai(m, include_meta=True), i)
        # NULL when the message has no timestamp; reads fall back to the storage time
        created = m.meta.created_at
        if created is not None and not isinstance(created, int | float | str):
            created = str(created)
        elif isinstance(created, bool):
            created = int(created)  # as SQLite stores it, on both backends
        elif isinstance(created, int) and not -(2**63) <= created < 2**63:
            created = str(created)  # SQLite integers are 64-bit
        elif isinstance(created, float) and not math.isfinite(created):
            created = str(created)  # JSON (PostgreSQL's JSONB) has no NaN or infinity
        # PostgreSQL text cannot hold NUL, nor either driver a lone surrogate (U+FFFD in the
        # columns); ``raw`` (JSON) escapes both, so the message reads back exactly
        fields = (m.role, searchable_text(m), _reasoning(m), m.meta.source, m.meta.sender_id)
        rows.append(
            (
                agent_id,
                run_id,
                *(_column_text(x) if isinstance(x, str) else x for x in fields),
                _column_text(m.tool_call_id) if m.tool_call_id is not None else None,
                _column_text(created) if isinstance(created, str) else created,
                now,
                raw,
                f"{batch}:{len(rows)}",  # the stored rows numbered 0..n-1 (see replayed_ids)
            )
        )
    return rows


def _column_text(text: str) -> str:
    text = text.replace("\x00", "")
    return text if _SURROGATE.search(text) is None else _SURROGATE.sub("\ufffd", text)


#: A surrogate code point (U+D800..U+DFFF): a Python str may hold one (JSON's "\\udc00", a
#: file name decoded with ``surrogateescape``), UTF-8 cannot, so neither driver can send it.
_SURROGATE = re.compile("[\ud800-\udfff]")
#: A high surrogate followed by a low one: JSON reads their two escapes back as one character.
_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")


def _escaped(found: re.Match[str]) -> str:
    return f"\\u{ord(found.group()):04x}"


def raw_json(d: Mapping[str, Any], index: int) -> str:
    """The stored JSON of message ``index`` (its dict ``d``, as written back): UTF-8 text that
    reads back as ``d``. A lone surrogate is written as its ``\\uXXXX`` escape, so it reads back
    exactly. What JSON cannot hold raises ``ValueError`` naming where in ``messages[index]``:
    a value that contains itself, nesting past what ``json`` can write, and a surrogate pair
    held as two code points (read back, their escapes would be one character)."""
    try:
        raw = json.dumps(d, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):
        raise ValueError(unwritable(d, location(index))) from None
    if _SURROGATE.search(raw) is None:
        return raw
    if _PAIR.search(raw) is not None:
        path, text = _first_str(d, location(index), _PAIR)
        at = cast(re.Match[str], _PAIR.search(text))
        raise ValueError(
            f"{path}: holds the surrogate pair U+{ord(at.group()[0]):04X} U+"
            f"{ord(at.group()[1]):04X} as two code points at index {at.start()}, which the store "
            "would read back as the one character they encode: join them first (encode with "
            "'utf-16', 'surrogatepass' and decode as UTF-16)"
        )
    return _SURROGATE.sub(_escaped, raw)


def _label(key: Any) -> str:
    if isinstance(key, int):
        return f"[{key}]"
    if isinstance(key, str) and key.isidentifier():
        return f".{key}"
    return f"[{short_repr(key)}]"


#: Path labels an error shows: the rest of a deeper path is "...".
_PATH_LABELS = 8


def _path(where: str, labels: Sequence[str]) -> str:
    shown = "".join(labels[:_PATH_LABELS])
    return where + shown + ("..." if len(labels) > _PATH_LABELS else "")


def _children(value: Any) -> Iterator[tuple[Any, Any]]:
    # what json.dumps descends into: dicts (their keys are written as text), lists and tuples
    if isinstance(value, dict):
        return iter(value.items())
    if isinstance(value, list | tuple):
        return enumerate(value)
    return iter(())


def unwritable(d: Any, where: str) -> str:
    """Why ``json.dumps(d)`` failed, as an error text naming the place (``where`` then a path):
    a container that contains itself, or the deepest nesting. Walked with a stack of its own,
    so a value of any depth is measured without recursion, in time linear in its size."""
    labels: list[str] = []
    path_ids: list[int] = [id(d)]  # the containers from d down to the one being walked
    on_path = {id(d)}
    stack = [_children(d)]
    # the deepest nesting: its depth, the field it is in and the path to it as an error shows it
    depth, top, deepest = 0, where, where
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            on_path.discard(path_ids.pop())
            if labels:
                labels.pop()
            continue
        key, child = step
        labels.append(_label(key))
        if len(labels) > depth:
            depth, top, deepest = len(labels), _path(where, labels[:1]), _path(where, labels)
        if isinstance(child, dict | list | tuple) and child:
            if id(child) in on_path:
                back = _path(where, labels[: path_ids.index(id(child))])
                return (
                    f"{_path(where, labels)}: contains itself (it is {back} again), which "
                    "JSON cannot write; store a copy without the cycle"
                )
            path_ids.append(id(child))
            on_path.add(id(child))
            stack.append(_children(child))
        else:
            labels.pop()
    return (
        f"{top}: nests {depth:,} levels deep (at "
        f"{deepest}), deeper than JSON can be written; store it flatter"
    )


def _first_str(d: Any, where: str, pattern: re.Pattern[str]) -> tuple[str, str]:
    """The path and text of the first str in ``d`` (a key or a value) that ``pattern`` finds."""
    labels: list[str] = []
    stack = [_children(d)]
    while stack:
        step = next(stack[-1], None)
        if step is None:
            stack.pop()
            if labels:
                labels.pop()
            continue
        key, child = step
        labels.append(_label(key))
        if isinstance(key, str) and pattern.search(key) is not None:
            return _path(where, labels[:-1]) + f" (the key {short_repr(key)})", key
        if isinstance(child, str) and pattern.search(child) is not None:
            return _path(where, labels), child
        if isinstance(child, dict | list | tuple) and child:
            stack.append(_children(child))
        else:
            labels.pop()
    return where, ""


# -- what a search tool hands a program ---------------------------------------------------------

#: The text fields of a search tool's record, as the stores' hit queries read them: each as
#: its first ``max_chars`` characters and its length (``created_at`` only when it is text).
HIT_FIELDS = ("agent_id", "source", "sender_id", "content", "created_at", "reasoning")


def cut_text(text: Any, length: int | None, max_chars: int) -> Any:
    """``text`` (its first ``max_chars`` characters, of ``length`` in all) with a note saying
    how long it was when it was cut; anything but a cut str as it is."""
    if not isinstance(text, str) or length is None or length <= max_chars:
        return text
    return (
        f"{text[:max_chars]}... [cut: {length:,} characters in all, the first {max_chars:,} shown]"
    )


def hit_record(r: Sequence[Any], max_chars: int) -> dict[str, Any]:
    """A row of a store's hit query (``id``, ``role``, then each of :data:`HIT_FIELDS` as its
    cut text and its length) as the record a search tool returns: ``StoredMessage.to_dict()``
    with each text cut by :func:`cut_text`."""
    text = {
        name: cut_text(r[2 + 2 * k], r[3 + 2 * k], max_chars) for k, name in enumerate(HIT_FIELDS)
    }
    d: dict[str, Any] = {
        "id": int(r[0]),
        "agent_id": text["agent_id"],
        "role": r[1],
        "source": text["source"],
        "sender_id": text["sender_id"],
        "content": text["content"],
        "created_at": text["created_at"],
    }
    if text["reasoning"]:
        d["reasoning"] = text["reasoning"]
    return d


def cut_record(d: Mapping[str, Any], max_chars: int) -> dict[str, Any]:
    """``StoredMessage.to_dict()`` with each text cut as by :func:`hit_record` (for a store
    without a hit query: the whole rows were read)."""
    return {k: cut_text(v, len(v) if isinstance(v, str) else None, max_chars) for k, v in d.items()}


def stored_message(r: Sequence[Any]) -> StoredMessage:
    """A row of ``id`` + the columns of :data:`READ_COLUMNS` as a StoredMessage."""
    msg = from_openai([json.loads(r[9])])[0]
    return StoredMessage(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], msg)


class KeyReusedError(PtcError, ValueError):
    """A keyed write whose key already names a different batch of the same agent's messages:
    a key is for retrying one write, so new messages need a new key."""


def _reused(agent_id: str, key: str) -> KeyReusedError:
    batch = key.rpartition(":")[0]
    return KeyReusedError(
        f"key {batch!r} of agent {agent_id!r} already names a different batch of messages "
        "(a key is for retrying one write; give new messages a new key)"
    )


def replay_keys(rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """The keys :func:`replayed_ids` needs to see when a keyed write found its key taken: the
    write's own and the one after its last (to tell an earlier, longer write)."""
    batch = rows[0][-1].rpartition(":")[0]
    return [r[-1] for r in rows] + [f"{batch}:{len(rows)}"]


def replayed_ids(
    rows: Sequence[tuple[Any, ...]],
    inserted: Sequence[int | None],
    stored: Mapping[str, tuple[int, str]],
) -> list[int]:
    """The ids of a write, given which rows were inserted (``None``: the key was taken) and
    ``stored``, the agent's rows under :func:`replay_keys` as ``key -> (id, raw)``. A write
    whose rows were all stored before, as the same messages and no more, is a retry: its ids
    are the stored ones. Anything else reuses the key for other messages and raises (the
    caller's transaction is then rolled back, so nothing of the write is kept)."""
    if all(i is not None for i in inserted):
        return [int(i) for i in inserted if i is not None]
    agent_id, first_key = rows[0][0], rows[0][-1]
    ids = []
    for row, new in zip(rows, inserted, strict=True):
        found = stored.get(row[-1])
        if new is not None or found is None or found[1] != row[10]:
            raise _reused(agent_id, first_key)
        ids.append(found[0])
    if replay_keys(rows)[-1] in stored:  # the earlier write had more messages
        raise _reused(agent_id, first_key)
    return ids


def written_ids(
    rows: Sequence[tuple[Any, ...]],
    insert: Callable[[tuple[Any, ...]], int | None],
    stored: Callable[[str, list[str]], Mapping[str, tuple[int, str]]],
) -> list[int]:
    """The ids of a write of ``rows`` made in the caller's transaction: each row inserted by
    ``insert`` (its new id, or None when its key was taken); when a key was taken, the
    agent's rows under :func:`replay_keys` read by ``stored(agent_id, keys)`` and the write
    settled by :func:`replayed_ids`. The async store takes the same steps, awaiting each."""
    inserted = [insert(row) for row in rows]
    found = stored(rows[0][0], replay_keys(rows)) if None in inserted else {}
    return replayed_ids(rows, inserted, found)


class AppendOne:
    """What the sync stores share: ``append_many`` (the messages made into rows here, stored
    by the store's ``_write_rows``), ``append(message)`` (one message through it) and
    ``with store:`` (closed at the end)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_rows(self, rows: list[tuple[Any, ...]]) -> list[int]:
        """Stores ``rows`` in one transaction (by :func:`written_ids`); returns their ids."""
        raise NotImplementedError

    def append_many(
        self,
        messages: Iterable[Message | Mapping[str, Any]],
        *,
        agent_id: str = "",
        run_id: str | None = None,
        key: str | None = None,
    ) -> list[int]:
        """Store messages in one transaction; returns their ids.

        ``key`` makes the write idempotent: the messages are stored under ``key:0``,
        ``key:1``, ..., and writing the same key again stores nothing and returns the ids
        already stored (a retried write after a lost connection never duplicates).

        Ephemeral messages (the synthetic nudge) are skipped: seed 002 never stores them.
        Dicts are parsed as OpenAI messages; malformed input raises ``TypeError`` or
        ``ValueError`` naming the message's index in ``messages`` and the field (see
        :func:`~ptc.history.codecs.to_messages`), and nothing is stored.
        """
        rows = message_rows(messages, agent_id, run_id, key)
        return self._write_rows(rows) if rows else []

    def append(
        self,
        message: Message | Mapping[str, Any],
        *,
        agent_id: str = "",
        run_id: str | None = None,
        key: str | None = None,
    ) -> int | None:
        ids = self.append_many([message], agent_id=agent_id, run_id=run_id, key=key)
        return ids[0] if ids else None


# -- what a search is asked -------------------------------------------------------------------

#: The longest query a search takes, in characters. A query is matched as one substring, so a
#: longer one would only be slower (the work of a match grows with the query's length) without
#: finding anything a distinctive part of it does not.
MAX_QUERY_CHARS = 1_000

#: The largest row count a query can ask for: ``LIMIT`` is a 64-bit integer in SQLite and in
#: PostgreSQL. A larger ``limit`` asks for every match, so it is clamped to this.
MAX_ROWS = 2**63 - 1


class SearchQueryTooLong(PtcError, ValueError):
    """A search query longer than :data:`MAX_QUERY_CHARS` characters."""


class SearchTimeout(PtcError, TimeoutError):
    """A search that ran past its ``timeout`` and was stopped (SQLite: interrupted; PostgreSQL:
    cancelled by ``statement_timeout``); nothing is returned of it."""


def check_query(query: Any, what: str = "query") -> str:
    """``query`` as searched: a str of at most :data:`MAX_QUERY_CHARS` characters, NULs dropped
    and lone surrogates as U+FFFD, as in the searched columns (see :func:`message_rows`)."""
    if not isinstance(query, str):
        raise TypeError(f"{what} must be a str, got {describe(query)}")
    if len(query) > MAX_QUERY_CHARS:
        raise SearchQueryTooLong(
            f"{what} is {len(query):,} characters long; a search takes at most "
            f"{MAX_QUERY_CHARS:,} (ptc.history.MAX_QUERY_CHARS): search for a shorter, "
            "distinctive part of the text"
        )
    return _column_text(query)


def check_limit(limit: Any, what: str = "limit") -> int:
    """``limit`` as a row count: an int (``bool`` is not one) of 0 or more; a count past
    :data:`MAX_ROWS` asks for every row, so it is clamped to it."""
    if isinstance(limit, bool) or not hasattr(type(limit), "__index__"):
        raise TypeError(f"{what} must be an int, got {describe(limit)}")
    n = operator.index(limit)
    if n < 0:
        raise ValueError(f"{what} must be 0 or more, got {n}")
    return min(n, MAX_ROWS)


def check_seconds(value: Any, what: str, *, allow_zero: bool = True) -> float:
    """A duration in seconds: a real number (``bool`` is not one), not NaN, 0 or more (more
    than 0 unless ``allow_zero``); infinity and ints too large for a float are ``inf``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a number of seconds, got {describe(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an int past the float range: longer than any wait (or negative)
        seconds = -math.inf if cast(float, value) < 0 else math.inf
    if math.isnan(seconds) or seconds < 0 or (seconds == 0 and not allow_zero):
        least = "0 or more" if allow_zero else "more than 0"
        raise ValueError(f"{what} must be {least} seconds, got {describe(value)}")
    return seconds


def search_deadline(timeout: Any) -> float | None:
    """The ``time.monotonic()`` by which a search with ``timeout`` (seconds; ``None`` or
    infinity: none) must end."""
    if timeout is None:
        return None
    seconds = check_seconds(timeout, "timeout", allow_zero=False)
    return None if math.isinf(seconds) else time.monotonic() + seconds


def timed_out(what: str, timeout: Any) -> SearchTimeout:
    return SearchTimeout(
        f"{what} took longer than its timeout of {timeout} s and was stopped: search for a "
        "more distinctive text, or give the search more time"
    )


@dataclass(frozen=True, slots=True)
class SearchRequest:
    """One search a store is asked for: the ``kind`` ("messages", "reasoning" or "broadcasts")
    and its arguments; with ``max_chars``, as a search tool's records (:func:`hit_record`)."""

    kind: str
    query: str
    limit: int
    agent_id: str | None
    timeout: float | None
    max_chars: int | None = None

    @property
    def what(self) -> str:
        return search_what(self.kind)


def search_what(kind: str) -> str:
    """What a search ``kind`` is called in its timeout's message."""
    return "search of reasoning" if kind == "reasoning" else "search of content"


class SearchKinds:
    """What the sync stores share of searching: the three searches and the records a search
    tool reads, each a :class:`SearchRequest` answered by the store's ``_find``."""

    def _find(self, search: SearchRequest) -> list[Any]:
        """The newest ``search.limit`` rows of the search, oldest first: StoredMessages, or with
        ``max_chars`` a search tool's records."""
        raise NotImplementedError

    def search_messages(
        self,
        query: str,
        limit: int = 20,
        *,
        agent_id: str | None = None,
        timeout: float | None = None,
    ) -> list[StoredMessage]:
        """Messages whose content contains ``query`` (seed 002: zoea_search_messages): the
        newest ``limit`` matches, oldest first.

        ``query`` is a str of at most :data:`~ptc.history.MAX_QUERY_CHARS` characters (longer:
        ``SearchQueryTooLong``). ``limit`` is an int of 0 or more (``bool``, float, str and
        ``None`` raise ``TypeError``, a negative one ``ValueError``); one past ``2**63 - 1``
        asks for every match. ``timeout`` (seconds, ``None``: no limit) bounds the search,
        waiting for the store included: past it the search is stopped (on PostgreSQL, its
        statement cancelled) and raises ``SearchTimeout``.
        """
        return self._find(SearchRequest("messages", query, limit, agent_id, timeout))

    def search_reasoning(
        self,
        query: str,
        limit: int = 20,
        *,
        agent_id: str | None = None,
        timeout: float | None = None,
    ) -> list[StoredMessage]:
        """Messages whose reasoning contains ``query`` (seed 002: zoea_search_reasoning); the
        arguments as for :meth:`search_messages`."""
        return self._find(SearchRequest("reasoning", query, limit, agent_id, timeout))

    def search_broadcasts(
        self, query: str, limit: int = 20, *, timeout: float | None = None
    ) -> list[StoredMessage]:
        """Broadcasts of every agent containing ``query`` (seed 002: zoea_search_broadcasts);
        the arguments as for :meth:`search_messages`.

        A broadcast stored by each receiving agent is returned once (its first copy): copies
        are the same sender, content and message timestamp.
        """
        return self._find(SearchRequest("broadcasts", query, limit, None, timeout))

    def _search_records(
        self,
        kind: str,
        query: str,
        limit: int,
        *,
        agent_id: str | None,
        timeout: float | None,
        max_chars: int,
    ) -> list[dict[str, Any]]:
        """What a search tool hands a program (:func:`~ptc.history.search_tools`): the search
        ``kind`` as records whose texts are cut to ``max_chars`` characters by the query
        itself, so no more of a long message than that is read into Python (nor its stored
        JSON at all)."""
        return self._find(SearchRequest(kind, query, limit, agent_id, timeout, max_chars))
