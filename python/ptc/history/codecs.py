"""Histories in either provider's shape: detection, normalisation, rendering to a shape."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ._checks import as_message_list
from ._content import is_anthropic_dict, is_mapping
from .anthropic_codec import from_anthropic_dict, to_anthropic
from .messages import Message, Shape
from .openai_codec import from_openai_dict, to_openai


def to_messages(history: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """Accept Messages, OpenAI dicts or Anthropic dicts and normalize them.

    The shape is detected once for the whole list, so an Anthropic history whose first
    messages happen to look like OpenAI ones still keeps its Anthropic-only fields.

    Malformed input raises an error naming the message's index and the field, as
    ``<path>: expected <what>, got <value>`` (e.g. ``messages[3].tool_calls[0].function:
    expected a dict with "name" and "arguments", got str 'get_weather'``): ``TypeError``
    for a value of the wrong type (a dict or a string instead of the list included),
    ``ValueError`` for a missing required key or a value that is not allowed (an unknown
    role, ``tool_calls`` on a message that is not from the assistant). An optional field
    set to ``None`` counts as absent. Empty tool-call ids are
    accepted (``validate`` reports them, ``repair`` assigns ids), and ``arguments`` that
    are not valid JSON are kept as text. ``Message`` objects are taken as they are.
    """
    items = as_message_list(history)
    anthropic = detect_shape(items) == "anthropic"
    out: list[Message] = []
    for i, m in enumerate(items):
        if type(m) is Message:
            out.append(m)
        elif anthropic and is_mapping(m) and m.get("role") in ("user", "assistant"):
            out.extend(from_anthropic_dict(m, i))
        else:
            out.append(from_openai_dict(m, i))
    return out


def detect_shape(history: Iterable[Message | Mapping[str, Any]]) -> Shape:
    """``"anthropic"`` if any message uses Anthropic content blocks or origin, else ``"openai"``."""
    for m in history:
        if type(m) is dict:
            if type(m.get("content")) is list and is_anthropic_dict(m):
                return "anthropic"
        elif type(m) is Message:
            if m.origin == "anthropic":
                return "anthropic"
        elif isinstance(m, Mapping) and is_anthropic_dict(m):
            return "anthropic"
    return "openai"


def to_shape(messages: Iterable[Message], shape: Shape, *, include_meta: bool = False) -> Any:
    """``to_openai`` or ``to_anthropic`` by name."""
    if shape == "anthropic":
        return to_anthropic(messages, include_meta=include_meta)
    return to_openai(messages, include_meta=include_meta)
