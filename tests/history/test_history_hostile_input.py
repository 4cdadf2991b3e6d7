"""Hostile input to the history entry points gives clear errors (issue: malformed tool_calls).

Every public entry point that takes a message list is called with every malformed shape. The
error format is defined in ``ptc.history.messages`` ("Input checking"):

    <path>: expected <what>, got <value>

``<path>`` names the message's index in the list the caller passed and the field
(``messages[2].tool_calls[0].function``), or ``messages`` for the list itself and ``system``
for ``from_anthropic``'s ``system``. ``<value>`` is ``<type name> <repr>`` (the repr cut to
60 characters, the last three ``...``), ``None``, or ``nothing`` when the key is missing. A
wrong Python type (``None`` included, for a required field) is a ``TypeError``; a missing
required key or a value of the right type that is not allowed is a ``ValueError`` (an
unknown role reads ``unsupported message role, expected ...``). An optional field set to
``None`` counts as absent. Only assistant messages may carry ``tool_calls``.

Accepted on purpose: empty or missing tool-call ids (``validate`` reports them as
``missing_call_id``, ``repair`` assigns ``ptc-call-N`` ids), ``arguments`` text that is not
valid JSON (kept as text), and bare strings in a content list (text parts).

The expected messages below are written from that format, not copied from output.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptc.history import (
    EstimateCounter,
    ExactCounter,
    HistoryStore,
    Issue,
    LoopSlices,
    SafeSplitSummarization,
    TokenCompaction,
    chunk_and_consolidate,
    count_tokens,
    for_provider,
    from_anthropic,
    from_openai,
    is_valid,
    repair,
    strip_orphans,
    to_messages,
    to_openai,
    validate,
)
from ptc.history.codecs import detect_shape
from ptc.history.tokens import count_messages

ROLES = '"system", "developer", "user", "assistant" or "tool"'
ANTHROPIC_ROLES = '"user" or "assistant"'
CONTENT = "a str, a list of content parts or None"
FUNCTION = 'a dict with "name" and "arguments"'

# Two well-formed messages first, so the malformed one is messages[2]. They are valid in
# both shapes (from_anthropic takes them too).
PREFIX: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {"role": "assistant", "content": "Let me check."},
]


def fake_count(text: str, encoding: str) -> int:
    return len(text) // 3 + 1


def _store(history: Any) -> Any:
    store = HistoryStore(":memory:")
    try:
        return store.append_many(history, agent_id="a1")
    finally:
        store.close()


def _split() -> SafeSplitSummarization:
    return SafeSplitSummarization(token_threshold=40, summary_window=2, environ={})


# name -> callable taking the history. Grouped by the entry points the report lists:
# the parse/normalize functions, validate, repair, the strategies, the store, the counter.
ENTRY_POINTS: dict[str, Callable[[Any], Any]] = {
    "to_messages": to_messages,
    "from_openai": from_openai,
    "from_anthropic": from_anthropic,
    "validate": validate,
    "is_valid": is_valid,
    "repair": repair,
    "strip_orphans": strip_orphans,
    "for_provider(anthropic)": lambda h: for_provider(h, "anthropic"),
    "chunk_and_consolidate": lambda h: chunk_and_consolidate(h, chunk_tokens=80),
    "LoopSlices.apply": lambda h: LoopSlices().apply(h),
    "LoopSlices(turn_aware).apply": lambda h: LoopSlices(turn_aware=True).apply(h),
    "LoopSlices.aapply": lambda h: asyncio.run(LoopSlices().aapply(h)),
    "TokenCompaction.apply": lambda h: TokenCompaction().apply(h, force=True),
    "TokenCompaction.aapply": lambda h: asyncio.run(TokenCompaction().aapply(h, force=True)),
    "TokenCompaction.should_compact": lambda h: TokenCompaction().should_compact(h),
    "SafeSplitSummarization.apply": lambda h: _split().apply(h),
    "SafeSplitSummarization.aapply": lambda h: asyncio.run(_split().aapply(h)),
    "HistoryStore.append_many": _store,
    "count_tokens": count_tokens,
    "count_tokens(exact)": lambda h: count_tokens(h, ExactCounter("o200k_base", fake_count)),
}

# Entry points that read dicts as OpenAI messages only: Anthropic blocks are kept there as
# opaque content, so the Anthropic cases do not apply to them.
OPENAI_ONLY = {"from_openai", "HistoryStore.append_many"}
# from_anthropic ignores OpenAI's tool_calls/tool_call_id (kept as unknown keys).
ANTHROPIC_ONLY = {"from_anthropic"}


def case(
    id: str, messages: Any, exc: type[Exception], message: str, *, anthropic: str | None = None
) -> Any:
    """``messages`` replaces the whole list when it is not a list, else follows PREFIX.

    ``anthropic`` is the message ``from_anthropic`` gives when it differs (roles).
    """
    return pytest.param(messages, exc, message, anthropic, id=id)


# -- shapes every entry point rejects -----------------------------------------------------------

CONTAINER = [
    case(
        "messages-dict",
        {"role": "user", "content": "hi"},
        TypeError,
        "messages: expected a list of message dicts, got dict {'role': 'user', 'content': 'hi'}",
    ),
    case(
        "messages-str",
        "hello",
        TypeError,
        "messages: expected a list of message dicts, got str 'hello'",
    ),
    case("messages-none", None, TypeError, "messages: expected a list of message dicts, got None"),
    case("messages-int", 7, TypeError, "messages: expected a list of message dicts, got int 7"),
]

GENERIC = [
    # the message itself
    case("msg-none", [None], TypeError, "messages[2]: expected a message dict, got None"),
    case("msg-str", ["hi"], TypeError, "messages[2]: expected a message dict, got str 'hi'"),
    case(
        "msg-list",
        [["user", "hi"]],
        TypeError,
        "messages[2]: expected a message dict, got list ['user', 'hi']",
    ),
    case("msg-int", [3], TypeError, "messages[2]: expected a message dict, got int 3"),
    # role
    case(
        "role-missing",
        [{"content": "hi"}],
        ValueError,
        f"messages[2].role: expected {ROLES}, got nothing",
        anthropic=f"messages[2].role: expected {ANTHROPIC_ROLES}, got nothing",
    ),
    case(
        "role-none",
        [{"role": None, "content": "hi"}],
        TypeError,
        f"messages[2].role: expected {ROLES}, got None",
        anthropic=f"messages[2].role: expected {ANTHROPIC_ROLES}, got None",
    ),
    case(
        "role-int",
        [{"role": 1, "content": "hi"}],
        TypeError,
        f"messages[2].role: expected {ROLES}, got int 1",
        anthropic=f"messages[2].role: expected {ANTHROPIC_ROLES}, got int 1",
    ),
    case(
        "role-list",
        [{"role": ["user"], "content": "hi"}],
        TypeError,
        f"messages[2].role: expected {ROLES}, got list ['user']",
        anthropic=f"messages[2].role: expected {ANTHROPIC_ROLES}, got list ['user']",
    ),
    case(
        "role-unknown",
        [{"role": "function", "content": "hi"}],
        ValueError,
        f"messages[2].role: unsupported message role, expected {ROLES}, got str 'function'",
        anthropic=(
            "messages[2].role: unsupported message role, "
            f"expected {ANTHROPIC_ROLES}, got str 'function'"
        ),
    ),
    # content
    case(
        "content-int",
        [{"role": "user", "content": 5}],
        TypeError,
        f"messages[2].content: expected {CONTENT}, got int 5",
    ),
    case(
        "content-dict",
        [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        TypeError,
        f"messages[2].content: expected {CONTENT}, got dict {{'type': 'text', 'text': 'hi'}}",
    ),
    case(
        "content-bool",
        [{"role": "user", "content": True}],
        TypeError,
        f"messages[2].content: expected {CONTENT}, got bool True",
    ),
    case(
        "part-none",
        [{"role": "user", "content": [None]}],
        TypeError,
        "messages[2].content[0]: expected a content part dict or a str, got None",
    ),
    case(
        "part-int",
        [{"role": "user", "content": ["look:", 7]}],
        TypeError,
        "messages[2].content[1]: expected a content part dict or a str, got int 7",
    ),
    case(
        "part-list",
        [{"role": "user", "content": [["text", "hi"]]}],
        TypeError,
        "messages[2].content[0]: expected a content part dict or a str, got list ['text', 'hi']",
    ),
    case(
        "part-type-missing",
        [{"role": "user", "content": [{"text": "hi"}]}],
        ValueError,
        "messages[2].content[0].type: expected a str, got nothing",
    ),
    case(
        "part-type-int",
        [{"role": "user", "content": [{"type": 3, "text": "hi"}]}],
        TypeError,
        "messages[2].content[0].type: expected a str, got int 3",
    ),
    case(
        "text-part-text-int",
        [{"role": "user", "content": [{"type": "text", "text": 5}]}],
        TypeError,
        "messages[2].content[0].text: expected a str, got int 5",
    ),
    case(
        "text-part-text-missing",
        [{"role": "user", "content": [{"type": "text"}]}],
        ValueError,
        "messages[2].content[0].text: expected a str, got nothing",
    ),
    case(
        "image-url-int",
        [{"role": "user", "content": [{"type": "image_url", "image_url": 5}]}],
        TypeError,
        'messages[2].content[0].image_url: expected a dict with "url" or a str, got int 5',
    ),
    case(
        "image-url-missing",
        [{"role": "user", "content": [{"type": "image_url"}]}],
        ValueError,
        'messages[2].content[0].image_url: expected a dict with "url" or a str, got nothing',
    ),
    case(
        "image-url-url-missing",
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "low"}}]}],
        ValueError,
        "messages[2].content[0].image_url.url: expected a str, got nothing",
    ),
    case(
        "image-url-detail-int",
        [
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": "u", "detail": 1}}],
            }
        ],
        TypeError,
        "messages[2].content[0].image_url.detail: expected a str, got int 1",
    ),
    # metadata
    case(
        "source-int",
        [{"role": "user", "content": "hi", "source": 1}],
        TypeError,
        "messages[2].source: expected a str, got int 1",
    ),
    case(
        "sender-id-list",
        [{"role": "user", "content": "hi", "source": "broadcast", "sender_id": ["m2"]}],
        TypeError,
        "messages[2].sender_id: expected a str, got list ['m2']",
    ),
    case(
        "reasoning-dict",
        [{"role": "user", "content": "hi", "reasoning": {"effort": "high"}}],
        TypeError,
        "messages[2].reasoning: expected a str, got dict {'effort': 'high'}",
    ),
    case(
        "merged-meta-str",
        [{"role": "user", "content": "hi", "merged_meta": "x"}],
        TypeError,
        "messages[2].merged_meta: expected a list of dicts, got str 'x'",
    ),
    case(
        "merged-meta-item-int",
        [{"role": "user", "content": "hi", "merged_meta": [5]}],
        TypeError,
        "messages[2].merged_meta[0]: expected a dict, got int 5",
    ),
    case(
        "merged-meta-item-source-int",
        [{"role": "user", "content": "hi", "merged_meta": [{}, {"source": 5}]}],
        TypeError,
        "messages[2].merged_meta[1].source: expected a str, got int 5",
    ),
]


# -- OpenAI tool calls (every entry point but from_anthropic) -----------------------------------


def _call(**fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [fields]}


def _good_call(id: str = "c1") -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


OPENAI = [
    # the three shapes of the issue
    case(
        "tool-calls-str",
        [{"role": "assistant", "content": None, "tool_calls": "get_weather"}],
        TypeError,
        "messages[2].tool_calls: expected a list of tool call dicts, got str 'get_weather'",
    ),
    case(
        "tool-calls-list-of-str",
        [{"role": "assistant", "content": None, "tool_calls": ["get_weather"]}],
        TypeError,
        "messages[2].tool_calls[0]: expected a tool call dict, got str 'get_weather'",
    ),
    case(
        "function-str",
        [_call(id="c1", type="function", function="get_weather")],
        TypeError,
        f"messages[2].tool_calls[0].function: expected {FUNCTION}, got str 'get_weather'",
    ),
    # more of the same class
    case(
        "tool-calls-dict",
        [{"role": "assistant", "content": None, "tool_calls": {"id": "c1"}}],
        TypeError,
        "messages[2].tool_calls: expected a list of tool call dicts, got dict {'id': 'c1'}",
    ),
    case(
        "tool-calls-empty-str",
        [{"role": "assistant", "content": "ok", "tool_calls": ""}],
        TypeError,
        "messages[2].tool_calls: expected a list of tool call dicts, got str ''",
    ),
    case(
        "tool-calls-on-user",
        [{"role": "user", "content": "hi", "tool_calls": [_good_call()]}],
        ValueError,
        "messages[2].tool_calls: expected no tool calls on a user message, got list "
        "[{'id': 'c1', 'type': 'function', 'function': {'name': 'f...",
    ),
    case(
        "second-call-none",
        [{"role": "assistant", "content": None, "tool_calls": [_good_call(), None]}],
        TypeError,
        "messages[2].tool_calls[1]: expected a tool call dict, got None",
    ),
    case(
        "function-missing",
        [_call(id="c1", type="function")],
        ValueError,
        f"messages[2].tool_calls[0].function: expected {FUNCTION}, got nothing",
    ),
    case(
        "function-none",
        [_call(id="c1", function=None)],
        TypeError,
        f"messages[2].tool_calls[0].function: expected {FUNCTION}, got None",
    ),
    case(
        "function-list",
        [_call(id="c1", function=["f", "{}"])],
        TypeError,
        f"messages[2].tool_calls[0].function: expected {FUNCTION}, got list ['f', '{{}}']",
    ),
    case(
        "function-name-missing",
        [_call(id="c1", function={"arguments": "{}"})],
        ValueError,
        "messages[2].tool_calls[0].function.name: expected a str, got nothing",
    ),
    case(
        "function-name-int",
        [_call(id="c1", function={"name": 7, "arguments": "{}"})],
        TypeError,
        "messages[2].tool_calls[0].function.name: expected a str, got int 7",
    ),
    case(
        "arguments-list",
        [_call(id="c1", function={"name": "f", "arguments": [1, 2]})],
        TypeError,
        "messages[2].tool_calls[0].function.arguments: expected a str or a dict, got list [1, 2]",
    ),
    case(
        "arguments-int",
        [_call(id="c1", function={"name": "f", "arguments": 3})],
        TypeError,
        "messages[2].tool_calls[0].function.arguments: expected a str or a dict, got int 3",
    ),
    case(
        "arguments-dict-not-json",
        [_call(id="c1", function={"name": "f", "arguments": {"tags": {"a"}}})],
        TypeError,
        "messages[2].tool_calls[0].function.arguments: expected a dict of JSON values, "
        "got dict {'tags': {'a'}}",
    ),
    case(
        "call-id-int",
        [_call(id=7, function={"name": "f", "arguments": "{}"})],
        TypeError,
        "messages[2].tool_calls[0].id: expected a str, got int 7",
    ),
    case(
        "call-type-int",
        [_call(id="c1", type=1, function={"name": "f", "arguments": "{}"})],
        TypeError,
        "messages[2].tool_calls[0].type: expected a str, got int 1",
    ),
    case(
        "tool-call-id-int",
        [{"role": "tool", "tool_call_id": 7, "content": "sunny"}],
        TypeError,
        "messages[2].tool_call_id: expected a str, got int 7",
    ),
    case(
        "tool-call-id-dict",
        [{"role": "tool", "tool_call_id": {"id": "c1"}, "content": "sunny"}],
        TypeError,
        "messages[2].tool_call_id: expected a str, got dict {'id': 'c1'}",
    ),
]


# -- Anthropic blocks (every entry point that detects the shape) --------------------------------


def _use(**fields: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "tool_use", **fields}]}


def _result(**fields: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", **fields}]}


ANTHROPIC = [
    case(
        "tool-use-name-missing",
        [_use(id="t1", input={})],
        ValueError,
        "messages[2].content[0].name: expected a str, got nothing",
    ),
    case(
        "tool-use-name-none",
        [_use(id="t1", name=None, input={})],
        TypeError,
        "messages[2].content[0].name: expected a str, got None",
    ),
    case(
        "tool-use-id-int",
        [_use(id=5, name="f", input={})],
        TypeError,
        "messages[2].content[0].id: expected a str, got int 5",
    ),
    case(
        "tool-use-input-str",
        [_use(id="t1", name="f", input='{"city": "Paris"}')],
        TypeError,
        """messages[2].content[0].input: expected a dict, got str '{"city": "Paris"}'""",
    ),
    case(
        "tool-use-input-list",
        [_use(id="t1", name="f", input=["Paris"])],
        TypeError,
        "messages[2].content[0].input: expected a dict, got list ['Paris']",
    ),
    case(
        "tool-use-after-text",
        [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "checking"}, {"type": "tool_use", "id": "t"}],
            }
        ],
        ValueError,
        "messages[2].content[1].name: expected a str, got nothing",
    ),
    case(
        "tool-result-id-int",
        [_result(tool_use_id=5, content="sunny")],
        TypeError,
        "messages[2].content[0].tool_use_id: expected a str, got int 5",
    ),
    case(
        "tool-result-content-int",
        [_result(tool_use_id="t1", content=5)],
        TypeError,
        f"messages[2].content[0].content: expected {CONTENT}, got int 5",
    ),
    case(
        "tool-result-part-none",
        [_result(tool_use_id="t1", content=[None])],
        TypeError,
        "messages[2].content[0].content[0]: expected a content part dict or a str, got None",
    ),
    case(
        "tool-result-is-error-str",
        [_result(tool_use_id="t1", content="boom", is_error="yes")],
        TypeError,
        "messages[2].content[0].is_error: expected a bool, got str 'yes'",
    ),
    case(
        "image-source-missing",
        [{"role": "user", "content": [{"type": "image"}]}],
        ValueError,
        "messages[2].content[0].source: expected a dict, got nothing",
    ),
    case(
        "image-source-str",
        [{"role": "user", "content": [{"type": "image", "source": "http://x/y.png"}]}],
        TypeError,
        "messages[2].content[0].source: expected a dict, got str 'http://x/y.png'",
    ),
    case(
        "image-base64-data-int",
        [
            {
                "role": "user",
                "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "a", "data": 5}}
                ],
            }
        ],
        TypeError,
        "messages[2].content[0].source.data: expected a str, got int 5",
    ),
    case(
        "image-url-source-url-missing",
        [{"role": "user", "content": [{"type": "image", "source": {"type": "url"}}]}],
        ValueError,
        "messages[2].content[0].source.url: expected a str, got nothing",
    ),
]


def _matrix(cases: list[Any], skip: set[str]) -> list[Any]:
    out = []
    for name, fn in ENTRY_POINTS.items():
        if name in skip:
            continue
        for c in cases:
            messages, exc, message, anthropic = c.values
            if name == "from_anthropic" and anthropic is not None:
                message = anthropic
            out.append(pytest.param(fn, messages, exc, message, id=f"{name}-{c.id}"))
    return out


MATRIX = (
    _matrix(CONTAINER + GENERIC, set())
    + _matrix(OPENAI, ANTHROPIC_ONLY)
    + _matrix(ANTHROPIC, OPENAI_ONLY)
)


@pytest.mark.parametrize(("entry", "messages", "exc", "message"), MATRIX)
def test_malformed_input_gives_a_clear_error(entry, messages, exc, message):
    history = [*PREFIX, *messages] if isinstance(messages, list) else messages
    with pytest.raises(exc) as info:
        entry(history)
    assert type(info.value) is exc
    assert str(info.value) == message


# -- the other ways in ---------------------------------------------------------------------------


def test_messages_as_a_generator_and_tuple_are_still_accepted():
    msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert to_messages(iter(msgs)) == to_messages(msgs) == to_messages(tuple(msgs))
    assert count_tokens(m for m in msgs) == count_tokens(msgs)


def test_from_anthropic_system_is_checked():
    with pytest.raises(TypeError) as info:
        from_anthropic([{"role": "user", "content": "hi"}], system=5)
    assert str(info.value) == f"system: expected {CONTENT}, got int 5"
    with pytest.raises(TypeError) as info:
        from_anthropic([{"role": "user", "content": "hi"}], system=[None])
    assert str(info.value) == "system[0]: expected a content part dict or a str, got None"


def test_from_anthropic_rejects_openai_roles():
    with pytest.raises(ValueError) as info:
        from_anthropic([{"role": "system", "content": "rules"}])
    assert str(info.value) == (
        f"messages[0].role: unsupported message role, expected {ANTHROPIC_ROLES}, got str 'system'"
    )


def test_store_append_names_the_message_and_stores_nothing():
    store = HistoryStore(":memory:")
    with pytest.raises(TypeError) as info:
        store.append(None)  # type: ignore[arg-type]
    assert str(info.value) == "messages[0]: expected a message dict, got None"
    bad = [*PREFIX, _call(id="c1", function="get_weather")]
    with pytest.raises(TypeError) as info:
        store.append_many(bad)
    assert str(info.value) == (
        f"messages[2].tool_calls[0].function: expected {FUNCTION}, got str 'get_weather'"
    )
    assert store.count() == 0  # the batch is checked before anything is written
    store.close()


def test_store_keeps_a_huge_integer_timestamp():
    store = HistoryStore(":memory:")
    store.append({"role": "user", "content": "hi", "created_at": 10**30})
    assert store.all()[0].created_at == str(10**30)
    store.close()


def test_long_values_are_cut_to_sixty_characters():
    with pytest.raises(TypeError) as info:
        to_messages([_call(id="c1", function="x" * 500)])
    # the repr "'xxx...x'" cut to 57 characters, then "..."
    assert str(info.value) == (
        f"messages[0].tool_calls[0].function: expected {FUNCTION}, got str '{'x' * 56}..."
    )


def test_deeply_nested_values_are_shown_briefly():
    deep: Any = "end"
    for _ in range(5_000):
        deep = [deep]
    with pytest.raises(TypeError) as info:
        to_messages([{"role": "user", "content": [deep]}])
    assert str(info.value) == (
        "messages[0].content[0]: expected a content part dict or a str, got list "
        + "[" * 57
        + "..."
    )


# -- what is accepted: None for optional fields, non-JSON arguments --------------------------------


def test_none_counts_as_absent_for_optional_fields():
    (m,) = to_messages([{"role": "assistant", "content": "ok", "tool_calls": None}])
    assert m.tool_calls == ()
    (m,) = to_messages(
        [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]}]
    )
    assert (m.tool_calls[0].id, m.tool_calls[0].arguments) == ("", "{}")
    (m,) = to_messages([_call(id=None, function={"name": "f", "arguments": None})])
    assert (m.tool_calls[0].id, m.tool_calls[0].arguments) == ("", "{}")
    (m,) = to_messages([{"role": "user", "content": "hi", "source": None, "merged_meta": None}])
    assert m.meta.source is None and m.meta.merged == ()


def test_arguments_that_are_not_json_are_kept_as_text():
    raw = [
        {"role": "user", "content": "go"},
        _call(id="c1", type="function", function={"name": "f", "arguments": '{"path": "a.py"'}),
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    msgs = to_messages(raw)
    assert msgs[1].tool_calls[0].arguments == '{"path": "a.py"'
    assert msgs[1].tool_calls[0].parsed_arguments() == {}
    assert validate(msgs) == []
    assert to_openai(msgs) == raw


def test_dict_arguments_are_written_as_json():
    (m,) = to_messages([_call(id="c1", function={"name": "f", "arguments": {"city": "Paris"}})])
    assert m.tool_calls[0].arguments == '{"city": "Paris"}'


def test_string_parts_are_taken_as_text_parts():
    # existing behaviour, kept: a bare string in a content list is a text part
    (m,) = to_messages([{"role": "user", "content": ["look", {"type": "text", "text": "here"}]}])
    assert [p.text for p in m.parts] == ["look", "here"]


# -- empty or missing tool-call ids (validate reports, repair assigns) -----------------------------


def _empty_id_history(id_fields: dict[str, Any], result_fields: dict[str, Any]) -> list[dict]:
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}, **id_fields}
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "done", **result_fields},
    ]


@pytest.mark.parametrize(
    ("call_fields", "result_fields"),
    [
        ({"id": ""}, {"tool_call_id": ""}),
        ({}, {}),
        ({"id": None}, {"tool_call_id": None}),
    ],
    ids=["empty", "missing", "none"],
)
def test_validate_reports_empty_or_missing_ids(call_fields, result_fields):
    history = _empty_id_history(call_fields, result_fields)
    assert validate(history) == [
        Issue("missing_call_id", 1, "tool call without an id"),
        Issue("missing_call_id", 2, "tool result without a call id"),
    ]
    assert not is_valid(history)


def test_validate_reports_empty_anthropic_ids():
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "", "content": "ok"}]},
    ]
    assert [i.kind for i in validate(history)] == ["missing_call_id", "missing_call_id"]


def test_repair_assigns_ids_and_pairs_results_in_order():
    call = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "ptc-call-1", **call}]},
        {"role": "tool", "tool_call_id": "ptc-call-1", "content": "first"},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "", **call}, dict(call)]},
        {"role": "tool", "tool_call_id": "", "content": "a"},
        {"role": "tool", "content": "b"},
    ]
    fixed, report = repair(history)
    # ptc-call-1 is taken by the first call, so the generated ids start at ptc-call-2
    assert [tc.id for tc in fixed[4].tool_calls] == ["ptc-call-2", "ptc-call-3"]
    assert [(m.tool_call_id, m.text) for m in fixed[5:]] == [
        ("ptc-call-2", "a"),
        ("ptc-call-3", "b"),
    ]
    assert report.call_ids_assigned == 2 and report.total == 2
    assert validate(fixed) == []
    again, second = repair(fixed)
    assert again == fixed and second.total == 0


def test_repair_drops_a_result_without_id_when_no_call_lacks_one():
    history = [
        {"role": "user", "content": "go"},
        _call(id="c1", function={"name": "f", "arguments": "{}"}),
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        {"role": "tool", "tool_call_id": "", "content": "stray"},
    ]
    fixed, report = repair(history)
    assert [m.text for m in fixed if m.role == "tool"] == ["ok"]
    assert report.orphan_results_dropped == 1 and report.call_ids_assigned == 0


@pytest.mark.parametrize(
    "strategy",
    [LoopSlices(), LoopSlices(turn_aware=True), TokenCompaction(), _split()],
    ids=["loop", "turn-aware", "compaction", "safe-split"],
)
def test_strategy_outputs_have_no_empty_ids(strategy):
    result = strategy.apply(_empty_id_history({}, {}))
    assert validate(list(result.messages)) == []


# -- property: arbitrary JSON-like values never escape as another exception -----------------------

FIELD_KEYS = [
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "function",
    "name",
    "arguments",
    "id",
    "type",
    "text",
    "image_url",
    "url",
    "detail",
    "source",
    "data",
    "media_type",
    "input",
    "tool_use_id",
    "is_error",
    "sender_id",
    "reasoning",
    "created_at",
    "merged_meta",
]
FIELD_WORDS = [
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
    "text",
    "image_url",
    "image",
    "tool_use",
    "tool_result",
    "base64",
    "url",
    "broadcast",
    "",
    "c1",
    "{}",
    "{not json",
]
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=12)
    | st.sampled_from(FIELD_WORDS)
)


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.sampled_from(FIELD_KEYS) | st.text(max_size=6)
    return st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5)


JSON = st.recursive(
    SCALARS,
    _containers,
    max_leaves=24,
)

OPENAI_TEMPLATE: list[dict[str, Any]] = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "Weather in Paris?", "source": "direct", "created_at": 1.5},
    {
        "role": "assistant",
        "content": None,
        "reasoning": "look it up",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "w", "arguments": {"a": 1}}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "warm"}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this?"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
        ],
        "merged_meta": [{"source": "broadcast", "sender_id": "m2"}],
    },
]
ANTHROPIC_TEMPLATE: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "checking"},
            {"type": "tool_use", "id": "t1", "name": "w", "input": {"city": "Paris"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "sunny", "is_error": False},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AA"},
            },
            {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}},
        ],
    },
]


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path to a value inside the template (dict keys and list indexes)."""
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out.extend(_paths(v, (*path, k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out.extend(_paths(v, (*path, i)))
    return out


def _mutate(template: list[dict[str, Any]], path: tuple, new: Any, delete: bool) -> Any:
    doc = json.loads(json.dumps(template))
    if not path:
        return new
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    elif delete:
        parent.pop(path[-1])
    else:
        parent[path[-1]] = new
    return doc


@st.composite
def mutated_history(draw: Any) -> Any:
    template = draw(st.sampled_from([OPENAI_TEMPLATE, ANTHROPIC_TEMPLATE]))
    path = draw(st.sampled_from(_paths(template)))
    return _mutate(template, path, draw(JSON), draw(st.booleans()) and bool(path))


# a damaged well-formed history reaches the deep checks; plain values the shallow ones
HOSTILE = st.one_of(JSON, st.lists(JSON, max_size=5), mutated_history(), mutated_history())
PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("PTC_HISTORY_EXAMPLES", "150")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

PROPERTY_ENTRY_POINTS = {
    k: v for k, v in ENTRY_POINTS.items() if not k.endswith("aapply") and k != "is_valid"
}
STRATEGIES = {
    "LoopSlices.apply",
    "LoopSlices(turn_aware).apply",
    "TokenCompaction.apply",
    "SafeSplitSummarization.apply",
}
# These all read the list through to_messages (shape detected for the whole list), so a
# hostile history gets the same outcome from each: the same error, or none.
SAME_AS_TO_MESSAGES = set(PROPERTY_ENTRY_POINTS) - OPENAI_ONLY - ANTHROPIC_ONLY


@PROPERTY_SETTINGS
@given(HOSTILE)
def test_hostile_values_raise_only_type_or_value_errors(history):
    outcomes = {}
    for name, entry in PROPERTY_ENTRY_POINTS.items():
        try:
            out = entry(history)
        except (TypeError, ValueError) as e:
            # every error names where the problem is
            assert str(e).startswith(("messages", "system")), (name, str(e))
            outcomes[name] = (type(e), str(e))
            continue
        outcomes[name] = None
        if name in STRATEGIES:
            assert validate(out.for_provider("strict")) == [], name
    same = SAME_AS_TO_MESSAGES
    if not isinstance(history, list) or detect_shape(history) == "openai":
        same = same | OPENAI_ONLY  # an OpenAI list: the OpenAI-only parsers agree too
    assert len({outcomes[name] for name in same}) == 1, outcomes
    if outcomes["count_tokens"] is None:
        assert count_tokens(history) == count_messages(EstimateCounter(), to_messages(history))
