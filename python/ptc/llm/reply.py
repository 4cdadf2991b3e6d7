"""A normalized LLM reply and the errors of calling an LLM."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class LLMError(Exception):
    """The LLM could not be called, or its reply had no usable shape."""


class TransientLLMError(LLMError):
    """Raise this from an LLM callable to ask for a retry (rate limit, timeout, overload)."""


class LLMTimeoutError(TransientLLMError):
    """A provider adapter's request had no complete reply within its ``deadline`` (seconds).
    Transient: the retry policy retries it, each attempt with a deadline of its own."""

    def __init__(self, message: str, deadline: float | None = None) -> None:
        super().__init__(message)
        self.deadline = deadline

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its deadline
        return (type(self), (str(self), self.deadline))


@dataclass(frozen=True)
class LLMReply:
    """A normalized reply: its text and the token usage the provider reported (if any)."""

    content: str
    usage: Mapping[str, int] = field(default_factory=dict)


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
        value = raw.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            out[norm] = out.get(norm, 0) + value
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
    from ptc.llm import _adapter

    if _field(reply, "choices") is not None:
        return _adapter.openai_reply(reply)
    if isinstance(_field(reply, "content"), list | tuple):
        return _adapter.anthropic_reply(reply)
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


def _field(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)
