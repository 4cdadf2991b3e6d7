"""A reply read into an :class:`~ptc.llm.reply.LLMReply`: a provider's whole response (an
OpenAI chat completion, an Anthropic message; as JSON or as SDK objects) and whatever a host's
own LLM callable returns (:func:`normalize_reply`). Above ``reply`` (the reply and its errors)
and ``_fields`` (reading a field); the adapters and the agent's loop read replies here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptc.llm._fields import (
    anthropic_usage,
    field,
    is_object,
    openai_usage,
    text_parts,
    wrong_type,
)
from ptc.llm.reply import (
    MAX_COUNT,
    LLMError,
    LLMReply,
    LLMReplyError,
    describe_value,
    usage_count,
)


def _not_a_reply(response: Any, what: str) -> LLMReplyError:
    """The reply is no chat completion (or message); a provider's error object says why."""
    error = field(response, "error")
    if error is not None:
        message = field(error, "message") if is_object(error) else error
        shown = message if isinstance(message, str) else describe_value(message)
        return LLMReplyError(f"the reply is an error, not {what}: {shown[:500]}", "error")
    return LLMReplyError(f"the reply is not {what}", "")


def _usage_object(response: Any) -> Any:
    """The reply's ``usage``: an object, or None when it reports none."""
    usage = field(response, "usage")
    if usage is not None and not is_object(usage):
        raise wrong_type("usage", "an object", usage)
    return usage


def _listed(response: Any, kind: str, name: str, wanted: str) -> Any:
    """The list ``name`` a reply holds (a chat completion's ``choices``, a message's
    ``content``): the reply must be ``kind``, an object, and the list a list (``wanted``)."""
    if not is_object(response):
        raise wrong_type("the reply", f"{kind} object", response)
    items = field(response, name)
    if items is None:
        raise _not_a_reply(response, f"{kind} (it has no {name})")
    if not isinstance(items, list | tuple):
        raise wrong_type(name, wanted, items)
    return items


def openai_reply(response: Any) -> LLMReply:
    """The text of a chat completion's first choice and its usage. The message's ``content``
    is a string, null (a message with no text), or (as several OpenAI-compatible servers send
    it) a list of content parts; anything else is an :class:`LLMReplyError` naming the field
    (it was read as an empty reply, and the agent spent its turns on "no program found")."""
    choices = _listed(response, "a chat completion", "choices", "a list")
    if not choices:
        raise LLMReplyError("the chat completion has no choices", "choices")
    if not is_object(choices[0]):
        raise wrong_type("choices[0]", "an object", choices[0])
    message = field(choices[0], "message")
    if not is_object(message):
        raise wrong_type("choices[0].message", "an object", message)
    content = field(message, "content")
    if content is None or isinstance(content, str):
        text = content or ""
    elif isinstance(content, list | tuple):
        text = text_parts(content)
    else:
        raise wrong_type("choices[0].message.content", "text or a list of parts", content)
    return LLMReply(text, openai_usage(_usage_object(response)))


def anthropic_reply(response: Any) -> LLMReply:
    """The text blocks of an Anthropic message, joined, and its usage."""
    content = _listed(response, "a message", "content", "a list of content blocks")
    return LLMReply(text_parts(content), anthropic_usage(_usage_object(response)))


_USAGE_KEYS = {
    "input_tokens": "input_tokens",
    "prompt_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "completion_tokens": "output_tokens",
}


def _usage(raw: Any) -> dict[str, int]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raw = {k: getattr(raw, k) for k in _USAGE_KEYS if hasattr(raw, k)}
    out: dict[str, int] = {}
    for key, norm in _USAGE_KEYS.items():
        if raw.get(key) is not None:
            total = out.get(norm, 0) + usage_count(raw.get(key), f"usage.{key}")
            out[norm] = min(total, MAX_COUNT)
    return out


def normalize_reply(reply: Any) -> LLMReply:
    """Accept ``str``, ``{"content": str, "usage": {...}}``, an :class:`LLMReply`, an object
    with ``.content`` (and optionally ``.usage``), or a provider's raw response: an OpenAI chat
    completion (``choices``; also litellm's) or an Anthropic message (content blocks), as SDK
    objects or as their dicts. OpenAI and Anthropic usage keys are both read."""
    if isinstance(reply, LLMReply):
        return reply
    if isinstance(reply, str):
        return LLMReply(reply)
    if field(reply, "choices") is not None:
        return openai_reply(reply)
    if isinstance(field(reply, "content"), list | tuple):
        return anthropic_reply(reply)
    if isinstance(reply, Mapping):
        content = reply.get("content")
        usage = reply.get("usage")
    else:
        content = getattr(reply, "content", None)
        usage = getattr(reply, "usage", None)
    if not isinstance(content, str):
        raise LLMError(
            "LLM reply must be a str or have a str 'content', got " + type(reply).__name__
        )
    return LLMReply(content, _usage(usage))
