"""What both providers' codecs share: roles, metadata, content parts and images."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ._checks import MISSING, _at, _opt_str, _req_str, _type_error, _value_error, _wrong
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
    _freeze,
)

_CONTENT_TEXT = "a str, a list of content parts or None"


def _role(d: Mapping[str, Any], where: int | str, allowed: frozenset[str], text: str) -> str:
    role = d.get("role", MISSING)
    if type(role) is str or isinstance(role, str):
        if role in allowed:
            return role
        raise _value_error(_at(where, ".role"), text, role, "unsupported message role")
    raise _wrong(_at(where, ".role"), text, role)


def _meta_from(d: Mapping[str, Any], where: int | str) -> Meta:
    if "source" in d or "sender_id" in d or "reasoning" in d or "created_at" in d:
        meta = Meta(
            source=_opt_str(d, "source", where),
            sender_id=_opt_str(d, "sender_id", where),
            reasoning=_opt_str(d, "reasoning", where),
            created_at=d.get("created_at"),
        )
    else:
        meta = NO_META
    merged = d.get("merged_meta")
    if merged is not None:
        if not isinstance(merged, list | tuple):
            raise _type_error(_at(where, ".merged_meta"), "a list of dicts", merged)
        items = []
        for k, x in enumerate(merged):
            path = _at(where, f".merged_meta[{k}]")
            if not _is_mapping(x):
                raise _type_error(path, "a dict", x)
            items.append(_meta_from(x, path))
        meta = replace(meta, merged=tuple(items))
    return meta


def _data_url_split(url: str) -> tuple[str | None, str | None]:
    # data:image/png;base64,AAAA -> ("image/png", "AAAA")
    head, _, data = url.partition(",")
    if not head.startswith("data:") or ";base64" not in head:
        return None, None
    return head[5:].split(";", 1)[0] or None, data


def _parse_block(block: Any, where: int | str, sub: str) -> Part:
    if isinstance(block, str):
        return TextPart(block)
    if not _is_mapping(block):
        raise _type_error(_at(where, sub), "a content part dict or a str", block)
    kind = _req_str(block, "type", where, sub)
    if kind == "text":
        text = _req_str(block, "text", where, sub)
        return TextPart(
            text, _freeze({k: v for k, v in block.items() if k not in ("type", "text")})
        )
    if kind == "image_url":
        inner = block.get("image_url", MISSING)
        detail = None
        if isinstance(inner, str):
            url = inner
        elif _is_mapping(inner):
            url = _req_str(inner, "url", where, f"{sub}.image_url")
            detail = _opt_str(inner, "detail", where, f"{sub}.image_url")
        else:
            raise _wrong(_at(where, f"{sub}.image_url"), 'a dict with "url" or a str', inner)
        extra = {k: v for k, v in block.items() if k not in ("type", "image_url")}
        media_type, _ = _data_url_split(url)
        return ImagePart(url=url, media_type=media_type, detail=detail, extra=_freeze(extra))
    if kind == "image":
        src = block.get("source", MISSING)
        if not _is_mapping(src):
            raise _wrong(_at(where, f"{sub}.source"), "a dict", src)
        stype = src.get("type")
        if stype == "base64" or stype == "url":
            kept = {k: v for k, v in block.items() if k not in ("type", "source")}
            if stype == "base64":
                return ImagePart(
                    media_type=_opt_str(src, "media_type", where, f"{sub}.source"),
                    data=_req_str(src, "data", where, f"{sub}.source"),
                    extra=_freeze(kept),
                )
            return ImagePart(url=_req_str(src, "url", where, f"{sub}.source"), extra=_freeze(kept))
        # other sources (e.g. Anthropic's "file") are kept as they are
    return OtherPart(kind, _freeze(block))


def _parse_content(
    content: Any, where: int | str, sub: str
) -> tuple[tuple[Part, ...], ContentStyle]:
    if content is None:
        return (), "none"
    if type(content) is str or isinstance(content, str):
        return (TextPart(content),), "str"
    if isinstance(content, list | tuple):
        return tuple(_parse_block(b, where, f"{sub}[{j}]") for j, b in enumerate(content)), "parts"
    raise _type_error(_at(where, sub), _CONTENT_TEXT, content)


def _is_mapping(x: Any) -> bool:
    # exact-type check first: isinstance() against the Mapping ABC is slow on hot paths
    return type(x) is dict or isinstance(x, Mapping)


def _is_anthropic_dict(d: Mapping[str, Any]) -> bool:
    content = d.get("content")
    if type(content) is list:
        for b in content:
            if _is_mapping(b) and b.get("type") in ("tool_use", "tool_result", "image"):
                return True
    return False


def _meta_dict(m: Message) -> dict[str, Any]:
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
        out["merged_meta"] = [_meta_dict(Message("user", meta=x)) for x in meta.merged]
    return out


def _extras(m: Message, shape: Shape, mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping if m.origin == shape else EMPTY
