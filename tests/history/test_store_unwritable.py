"""What a history store is given that UTF-8 or JSON cannot hold as such (second red-team batch of
issue 29): a lone surrogate is stored and read back exactly, a message that contains itself or
nests past what JSON can write is refused naming the message and the field, on both backends,
and nothing of the batch is stored. Before, the drivers raised ``UnicodeEncodeError`` and
``json`` raised "Circular reference detected" or ``RecursionError``, naming neither."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Backend
from ptc.history import search_tools


def deep_list(levels: int) -> list[Any]:
    top: list[Any] = []
    inner = top
    for _ in range(levels - 1):
        inner.append([])
        inner = inner[0]
    return top


def test_a_lone_surrogate_reads_back_exactly_and_is_searched_as_u_fffd(backend: Backend) -> None:
    message = {
        "role": "assistant",
        "content": "a\udc00b",
        "reasoning": "why\ud800",
        "sender_id": "s\udfff",
        "created_at": "t\udc80",
        "extra_field": {"k\udc01": ["v\ud801"]},
    }
    with backend.open() as store:
        (i,) = store.append_many([message], agent_id="a")
        (stored,) = store.all("a")
        # the message as given, every field and key
        assert stored.id == i
        assert stored.message.text == "a\udc00b"
        assert stored.message.meta.reasoning == "why\ud800"
        assert stored.message.meta.sender_id == "s\udfff"
        assert stored.message.meta.created_at == "t\udc80"
        assert dict(stored.message.extra) == {"extra_field": {"k\udc01": ["v\ud801"]}}
        # the searched columns hold U+FFFD in its place; a query is read the same way
        assert (stored.content, stored.reasoning, stored.sender_id) == (
            "a\ufffdb",
            "why\ufffd",
            "s\ufffd",
        )
        assert [m.id for m in store.search_messages("a\udc00b", agent_id="a")] == [i]
        assert [m.id for m in store.search_messages("a\ufffdb", agent_id="a")] == [i]
        assert [m.id for m in store.search_reasoning("y\ud800", agent_id="a")] == [i]
        # a program gets the searched text: PTC-Lisp strings are UTF-8, U+FFFD is one
        (hit,) = search_tools(store, agent_id="a")["search-messages"]("a\udc00b")
        assert hit["content"] == "a\ufffdb"
        # and a key of a retried write compares the stored JSON: the retry is recognised
        assert store.append_many([message], agent_id="a", key="k") == [i + 1]
        assert store.append_many([message], agent_id="a", key="k") == [i + 1]


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        ("agent_id", "a\udc00", "U+DC00 at index 1"),
        ("run_id", "\ud800run", "U+D800 at index 0"),
        ("key", "k\udfff", "U+DFFF at index 1"),
    ],
)
def test_a_lone_surrogate_in_an_identifier_is_refused_naming_it(
    backend: Backend, field: str, value: str, where: str
) -> None:
    """An identifier is looked up as given, so U+FFFD in its place would name another one."""
    options: dict[str, Any] = {"agent_id": "a", field: value}
    with backend.open() as store:
        with pytest.raises(ValueError) as info:
            store.append({"role": "user", "content": "x"}, **options)
        assert str(info.value) == (
            f"{field} holds a lone surrogate ({where}), which the database cannot store: "
            f"got {value!r}"
        )
        assert store.count() == 0


def test_a_surrogate_pair_held_as_two_code_points_is_refused_naming_the_field(
    backend: Backend,
) -> None:
    """JSON would read the pair's two escapes back as the one character they encode: refused,
    since the store would not give back what it was given."""
    with backend.open() as store:
        with pytest.raises(ValueError) as info:
            store.append_many(
                [
                    {"role": "user", "content": "fine"},
                    {"role": "user", "content": "x", "extra": {"a": [1, {"b": "y\ud83d\ude00"}]}},
                ],
                agent_id="a",
            )
        assert str(info.value) == (
            "messages[1].extra.a[1].b: holds the surrogate pair U+D83D U+DE00 as two code "
            "points at index 1, which the store would read back as the one character they "
            "encode: join them first (encode with 'utf-16', 'surrogatepass' and decode as "
            "UTF-16)"
        )
        with pytest.raises(ValueError) as info:
            store.append({"role": "user", "content": "x", "extra": {"\ud83d\ude00": 1}})
        assert str(info.value).startswith(
            "messages[0].extra (the key '\\ud83d\\ude00'): holds the surrogate pair U+D83D "
            "U+DE00 as two code points at index 0,"
        )
        assert store.count() == 0
        # the character itself is stored and read back
        store.append({"role": "user", "content": "y\U0001f600"}, agent_id="a")
        assert store.recent("a", 1)[0].text == "y\U0001f600"


def test_a_message_that_contains_itself_is_refused_naming_the_cycle(backend: Backend) -> None:
    cyclic: dict[str, Any] = {"role": "user", "content": "x"}
    cyclic["meta"] = cyclic
    inner: list[Any] = [1]
    inner.append({"loop": inner})
    with backend.open() as store:
        with pytest.raises(ValueError) as info:
            store.append_many([{"role": "user", "content": "ok"}, cyclic], agent_id="a")
        assert str(info.value) == (
            "messages[1].meta.meta: contains itself (it is messages[1].meta again), which JSON "
            "cannot write; store a copy without the cycle"
        )
        with pytest.raises(ValueError) as info:
            store.append({"role": "user", "content": "x", "data": inner}, agent_id="a")
        assert str(info.value) == (
            "messages[0].data[1].loop: contains itself (it is messages[0].data again), which "
            "JSON cannot write; store a copy without the cycle"
        )
        assert store.count() == 0


def test_a_message_nested_100000_deep_is_refused_naming_the_field(backend: Backend) -> None:
    with backend.open() as store:
        with pytest.raises(ValueError) as info:
            store.append(
                {"role": "user", "content": "x", "extra": deep_list(100_000)}, agent_id="a"
            )
        assert str(info.value) == (
            "messages[0].extra: nests 100,000 levels deep (at "
            "messages[0].extra[0][0][0][0][0][0][0]...), deeper than JSON can be written; "
            "store it flatter"
        )
        assert store.count() == 0
        # a shared (not cyclic) value and moderate nesting are stored as before
        shared = {"v": 1}
        deep = deep_list(200)
        store.append(
            {"role": "user", "content": "x", "a": [shared, shared], "d": deep}, agent_id="a"
        )
        (m,) = store.recent("a", 1)
        assert m.extra["a"] == [{"v": 1}, {"v": 1}] and m.extra["d"] == deep
