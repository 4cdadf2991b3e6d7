"""What both providers' codecs share: roles, metadata, content parts and images."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ._checks import (
    MISSING,
    location,
    optional_str,
    required_str,
    type_error,
    value_error,
    wrong_type,
)
from .messages import (
    EMPTY,
    NO_META,
    ContentStyle,
    ImagePart,
    Message,
    Meta,
    OtherPart,
    Part,
    Shape,
    TextPart,
    freeze,
)

_CONTENT_TEXT = "a str, a list of content parts or None"


def role_of(d: Mapping[str, Any], where: int | str, allowed: frozenset[str], text: str) -> str:
    role = d.get("role", MISSING)
    if type(role) is str or isinstance(role, str):
        if role in allowed:
            return role
        raise value_error(location(where, ".role"), text, role, "unsupported message role")
    raise wrong_type(location(where, ".role"), text, role)


def meta_from(d: Mapping[str, Any], where: int | str) -> Meta:
    if "source" in d or "sender_id" in d or "reasoning" in d or "created_at" in d:
        meta = Meta(
            source=optional_str(d, "source", where),
            sender_id=optional_str(d, "sender_id", where),
            reasoning=optional_str(d, "reasoning", where),
            created_at=d.get("created_at"),
        )
    else:
        meta = NO_META
    merged = d.get("merged_meta")
    if merged is not None:
        if not isinstance(merged, list | tuple):
            raise type_error(location(where, ".merged_meta"), "a list of dicts", merged)
        items = []
        for k, x in enumerate(merged):
            path = location(where, f".merged_meta[{k}]")
            if not is_mapping(x):
                raise type_error(path, "a dict", x)
            items.append(meta_from(x, path))
        meta = replace(meta, merged=tuple(items))
    return meta


def split_data_url(url: str) -> tuple[str | None, str | None]:
    # data:image/png;base64,AAAA -> ("image/png", "AAAA")
    head, _, data = url.partition(",")
    if not head.startswith("data:") or ";base64" not in head:
        return None, None
    return head[5:].split(";", 1)[0] or None, data


def parse_block(block: Any, where: int | str, sub: str) -> Part:
    if isinstance(block, str):
        return TextPart(block)
    if not is_mapping(block):
        raise type_error(location(where, sub), "a content part dict or a str", block)
    kind = required_str(block, "type", where, sub)
    if kind == "text":
        text = required_str(block, "text", where, sub)
        return TextPart(text, freeze({k: v for k, v in block.items() if k not in ("type", "text")}))
    if kind == "image_url":
        inner = block.get("image_url", MISSING)
        detail = None
        if isinstance(inner, str):
            url = inner
        elif is_mapping(inner):
            url = required_str(inner, "url", where, f"{sub}.image_url")
            detail = optional_str(inner, "detail", where, f"{sub}.image_url")
        else:
            raise wrong_type(
                location(where, f"{sub}.image_url"), 'a dict with "url" or a str', inner
            )
        extra = {k: v for k, v in block.items() if k not in ("type", "image_url")}
        media_type, _ = split_data_url(url)
        return ImagePart(url=url, media_type=media_type, detail=detail, extra=freeze(extra))
    if kind == "image":
        src = block.get("source", MISSING)
        if not is_mapping(src):
            raise wrong_type(location(where, f"{sub}.source"), "a dict", src)
        stype = src.get("type")
        if stype == "base64" or stype == "url":
            kept = {k: v for k, v in block.items() if k not in ("type", "source")}
            if stype == "base64":
                return ImagePart(
                    media_type=optional_str(src, "media_type", where, f"{sub}.source"),
                    data=required_str(src, "data", where, f"{sub}.source"),
                    extra=freeze(kept),
                )
            return ImagePart(
                url=required_str(src, "url", where, f"{sub}.source"), extra=freeze(kept)
            )
        # other sources (e.g. Anthropic's "file") are kept as they are
    return OtherPart(kind, freeze(block))


def parse_content(
    content: Any, where: int | str, sub: str
) -> tuple[tuple[Part, ...], ContentStyle]:
    if content is None:
        return (), "none"
    if type(content) is str or isinstance(content, str):
        return (TextPart(content),), "str"
    if isinstance(content, list | tuple):
        return tuple(parse_block(b, where, f"{sub}[{j}]") for j, b in enumerate(content)), "parts"
    raise type_error(location(where, sub), _CONTENT_TEXT, content)


def is_mapping(x: Any) -> bool:
    # exact-type check first: isinstance() against the Mapping ABC is slow on hot paths
    return type(x) is dict or isinstance(x, Mapping)


def is_anthropic_dict(d: Mapping[str, Any]) -> bool:
    content = d.get("content")
    if type(content) is list:
        for b in content:
            if is_mapping(b) and b.get("type") in ("tool_use", "tool_result", "image"):
                return True
    return False


def meta_dict(m: Message) -> dict[str, Any]:
    meta = m.meta
    if meta is NO_META:
        return {}
    out: dict[str, Any] = {}
    if meta.source is not None:
        out["source"] = meta.source
    if meta.sender_id is not None:
        out["sender_id"] = meta.sender_id
    if meta.reasoning is not None:
        out["reasoning"] = meta.reasoning
    if meta.created_at is not None:
        out["created_at"] = meta.created_at
    if meta.merged:
        out["merged_meta"] = [meta_dict(Message("user", meta=x)) for x in meta.merged]
    return out


def extras_of(m: Message, shape: Shape, mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping if m.origin == shape else EMPTY
