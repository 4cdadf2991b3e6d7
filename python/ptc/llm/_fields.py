"""A provider's reply read field by field, alike from its JSON and from the objects an SDK
reads it into: a field's value (:func:`field`), a field of the wrong type named in an
:class:`LLMReplyError` (:func:`wrong_type`), text parts joined, and the provider's usage
mapped to ptc's counts. The whole reply is read by ``_read`` and a streamed one by
``_stream``, each with these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ptc.llm.reply import MAX_COUNT, LLMReplyError, describe_value, usage_count


def field(obj: Any, key: str) -> Any:
    """``obj``'s ``key``: an item of a JSON object, an attribute of an SDK object; ``None``
    when it has none."""
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _count(usage: Any, key: str, path: str = "usage") -> int:
    return usage_count(field(usage, key), f"{path}.{key}")


def openai_usage(raw: Any) -> dict[str, int]:
    """OpenAI's usage: ``prompt_tokens`` already includes the cached ones."""
    out = {
        "input_tokens": _count(raw, "prompt_tokens"),
        "output_tokens": _count(raw, "completion_tokens"),
    }
    cached = _count(
        field(raw, "prompt_tokens_details"), "cached_tokens", "usage.prompt_tokens_details"
    )
    cached = cached or _count(raw, "cache_read_input_tokens")  # litellm, from Anthropic
    if cached:
        out["cache_read_tokens"] = cached
    written = _count(raw, "cache_creation_input_tokens")  # litellm, from Anthropic
    if written:
        out["cache_write_tokens"] = written
    return out


def anthropic_usage(raw: Any) -> dict[str, int]:
    """Anthropic's usage: ``input_tokens`` excludes cache reads and writes, which are added so
    ``input_tokens`` means the whole prompt for every provider."""
    read = _count(raw, "cache_read_input_tokens")
    write = _count(raw, "cache_creation_input_tokens")
    out = {
        "input_tokens": min(_count(raw, "input_tokens") + read + write, MAX_COUNT),
        "output_tokens": _count(raw, "output_tokens"),
    }
    if read:
        out["cache_read_tokens"] = read
    if write:
        out["cache_write_tokens"] = write
    return out


def text_parts(parts: Any) -> str:
    """The ``text`` of the parts whose ``type`` is ``"text"``, joined in order; other parts
    (images, audio, a model's reasoning) carry no answer text and are left out."""
    if not isinstance(parts, list | tuple):
        return ""
    return "".join(
        t for p in parts if field(p, "type") == "text" and isinstance(t := field(p, "text"), str)
    )


_SCALARS = (str, bytes, int, float, bool, list, tuple)


def is_object(value: Any) -> bool:
    """A JSON object, or the SDK object one was read into."""
    return isinstance(value, Mapping) or (value is not None and not isinstance(value, _SCALARS))


def wrong_type(path: str, expected: str, value: Any) -> LLMReplyError:
    """The error of a field (at ``path``) that is not what it should be."""
    return LLMReplyError(f"{path}: expected {expected}, got {describe_value(value)}", path)
