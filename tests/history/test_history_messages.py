"""Messages: OpenAI and Anthropic shapes in and out, metadata and unknown fields (issue 5)."""

from __future__ import annotations

import copy
import dataclasses

import pytest
from history_cases import call, calls, result, user
from ptc.history import (
    ChatToolCall,
    ImagePart,
    Message,
    OtherPart,
    TextPart,
    from_anthropic,
    from_openai,
    to_anthropic,
    to_messages,
    to_openai,
)
from ptc.history.codecs import detect_shape

OPENAI = [
    {"role": "system", "content": "Be brief.", "x_trace": "t1"},
    {
        "role": "user",
        "content": "find ports",
        "source": "direct",
        "sender_id": "",
        "created_at": "2025-01-01T00:00:00Z",
        "name": "alice",
    },
    {
        "role": "assistant",
        "content": None,
        "reasoning": "need two lookups",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "a", "arguments": '{"q":1}'}},
            {"id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}},
        ],
        "refusal": None,
    },
    {"role": "tool", "tool_call_id": "c1", "content": "A"},
    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "B"}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "and this image"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
        ],
    },
]

ANTHROPIC_SYSTEM = [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
ANTHROPIC = [
    {"role": "user", "content": "find ports"},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "two lookups", "signature": "sig"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "t1", "name": "a", "input": {"q": 1}},
            {"type": "tool_use", "id": "t2", "name": "b", "input": {}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "B", "is_error": True},
            {"type": "text", "text": "thanks"},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
            }
        ],
    },
]


def test_openai_round_trip_keeps_metadata_and_unknown_fields():
    before = copy.deepcopy(OPENAI)
    msgs = from_openai(OPENAI)
    assert OPENAI == before, "parsing must not mutate the input"
    assert to_openai(msgs, include_meta=True) == [
        {**OPENAI[0]},
        {**OPENAI[1]},
        {**OPENAI[2]},
        OPENAI[3],
        OPENAI[4],
        OPENAI[5],
    ]


def test_openai_parse_details():
    msgs = from_openai(OPENAI)
    assert [m.role for m in msgs] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert msgs[1].meta.source == "direct" and msgs[1].meta.sender_id == ""
    assert msgs[1].meta.created_at == "2025-01-01T00:00:00Z"
    assert msgs[2].meta.reasoning == "need two lookups"
    assert [tc.id for tc in msgs[2].tool_calls] == ["c1", "c2"]
    assert msgs[2].tool_calls[0].parsed_arguments() == {"q": 1}
    assert isinstance(msgs[5].parts[1], ImagePart) and msgs[5].parts[1].detail == "low"
    # metadata is left out by default: providers reject unknown message keys
    plain = to_openai(msgs)
    assert "source" not in plain[1] and "reasoning" not in plain[2]
    assert plain[1]["name"] == "alice", "unknown fields are the user's and are kept"


def test_messages_are_immutable():
    m = from_openai(OPENAI)[1]
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.role = "assistant"  # type: ignore[misc]
    with pytest.raises(TypeError):
        m.extra["name"] = "bob"  # type: ignore[index]


def test_anthropic_round_trip():
    msgs = from_anthropic(ANTHROPIC, system=ANTHROPIC_SYSTEM)
    assert [m.role for m in msgs] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
    ]
    assert msgs[3].tool_call_id == "t1" and msgs[4].is_error is True
    assert isinstance(msgs[2].parts[0], OtherPart) and msgs[2].parts[0].type == "thinking"
    out = to_anthropic(msgs)
    assert out == {"system": ANTHROPIC_SYSTEM, "messages": ANTHROPIC}


def test_anthropic_string_system_and_tool_only_user_message():
    hist = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "f", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}],
            "x_meta": 1,
        },
    ]
    msgs = from_anthropic(hist, system="sys")
    assert to_anthropic(msgs) == {"system": "sys", "messages": hist}


def test_to_messages_detects_shape_per_history():
    assert detect_shape(ANTHROPIC) == "anthropic"
    assert detect_shape(OPENAI) == "openai"
    msgs = to_messages(ANTHROPIC)
    assert [m.origin for m in msgs] == ["anthropic"] * len(msgs)
    assert to_messages(msgs) == msgs  # Message objects pass through


def test_openai_to_anthropic_groups_tool_results_with_following_user_text():
    hist = [
        user("q"),
        calls(call("c1", "a", x=1), call("c2", "b")),
        result("c1", "A"),
        result("c2", "B"),
        user("next"),
    ]
    out = to_anthropic(to_messages(hist))
    assert out["messages"] == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "a", "input": {"x": 1}},
                {"type": "tool_use", "id": "c2", "name": "b", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "B"},
                {"type": "text", "text": "next"},
            ],
        },
    ]


def test_anthropic_to_openai_cross_shape():
    msgs = from_anthropic(ANTHROPIC, system=ANTHROPIC_SYSTEM)
    out = to_openai(msgs)
    assert out[0]["role"] == "system"
    # anthropic-only extras (cache_control) are not sent to OpenAI
    assert out[0]["content"] == [{"type": "text", "text": "Be brief."}]
    assert out[2]["tool_calls"][0] == {
        "id": "t1",
        "type": "function",
        "function": {"name": "a", "arguments": '{"q": 1}'},
    }
    assert out[2]["content"][0] == {"type": "text", "text": "[thinking content]"}
    assert out[3] == {"role": "tool", "content": "A", "tool_call_id": "t1"}
    assert out[6]["content"][0]["image_url"]["url"] == "data:image/png;base64,AAAA"


def test_image_placeholders_and_constructors():
    img = ImagePart(url="https://h/cat.png")
    assert img.placeholder() == "[Image URL: https://h/cat.png]"
    assert ImagePart(media_type="image/png", data="A" * 400).placeholder() == (
        "[Image: image/png, ~300 bytes]"
    )
    m = Message("user", (TextPart("see"), img))
    assert m.text == "see"
    assert m.text_with_placeholders() == "see\n\n[Image URL: https://h/cat.png]"
    a = Message.assistant(None, [ChatToolCall.of("i", "f", {"k": "v"})])
    assert a.tool_calls[0].arguments == '{"k": "v"}' and not a.is_empty
    assert Message.assistant("").is_empty


def test_developer_role_round_trips():
    d = [{"role": "developer", "content": "rules"}]
    msgs = from_openai(d)
    assert msgs[0].role == "system"
    assert to_openai(msgs) == d


def test_unsupported_role_is_an_error():
    with pytest.raises(ValueError, match="unsupported message role"):
        from_openai([{"role": "function", "content": "x"}])
    with pytest.raises(TypeError):
        to_messages([42])  # type: ignore[list-item]


def test_the_old_names_are_gone() -> None:
    """Renamed before any release: no shim keeps the old names."""
    import ptc.history
    import ptc.history.messages

    assert not hasattr(ptc.history, "ToolCall")
    assert not hasattr(ptc.history.messages, "ToolCall")
    assert not hasattr(ptc.history.messages, "to_messages")  # lives in ptc.history.codecs
