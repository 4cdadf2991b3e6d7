"""Anthropic Messages API <-> :class:`~ptc.history.messages.Message`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ._checks import as_message_list, json_text, location, optional_str, required_str, type_error
from ._content import (
    extras_of,
    is_mapping,
    meta_dict,
    meta_from,
    parse_block,
    parse_content,
    role_of,
    split_data_url,
)
from .messages import (
    META_KEYS,
    ChatToolCall,
    ImagePart,
    Message,
    OtherPart,
    Part,
    TextPart,
    freeze,
)

_ANTHROPIC_ROLES = frozenset(("user", "assistant"))

# The message keys Anthropic's format and our metadata use; others are kept as extras.
ANTHROPIC_KNOWN = frozenset(("role", "content", *META_KEYS))
# Where a tool result keeps the message-level unknown keys of an Anthropic user message
# that held only tool results, so they are written back on the way out.
MSG_EXTRA = "__ptc_message_extra__"


_ANTHROPIC_ROLES_TEXT = '"user" or "assistant"'


def _parse_tool_use(b: Mapping[str, Any], where: int | str, sub: str) -> ChatToolCall:
    call_id = optional_str(b, "id", where, sub) or ""
    name = required_str(b, "name", where, sub)
    inp = b.get("input")
    if inp is None:
        args = "{}"
    elif is_mapping(inp):
        args = json_text(inp, where, f"{sub}.input")
    else:
        raise type_error(location(where, f"{sub}.input"), "a dict", inp)
    cextra = {k: v for k, v in b.items() if k not in ("type", "id", "name", "input")}
    return ChatToolCall(call_id, name, args, freeze(cextra))


def from_anthropic_dict(d: Any, where: int | str) -> list[Message]:
    if not is_mapping(d):
        raise type_error(location(where), "a message dict", d)
    role = role_of(d, where, _ANTHROPIC_ROLES, _ANTHROPIC_ROLES_TEXT)
    meta = meta_from(d, where)
    extra = freeze({k: v for k, v in d.items() if k not in ANTHROPIC_KNOWN})
    content = d.get("content")
    if not isinstance(content, list | tuple):
        parts, style = parse_content(content, where, ".content")
        return [
            Message(role, parts, meta=meta, extra=extra, origin="anthropic", content_style=style)  # type: ignore[arg-type]
        ]
    if role == "assistant":
        parts_l: list[Part] = []
        calls: list[ChatToolCall] = []
        for j, b in enumerate(content):
            if is_mapping(b) and b.get("type") == "tool_use":
                calls.append(_parse_tool_use(b, where, f".content[{j}]"))
            else:
                parts_l.append(parse_block(b, where, f".content[{j}]"))
        return [
            Message(
                "assistant",
                tuple(parts_l),
                tuple(calls),
                meta=meta,
                extra=extra,
                origin="anthropic",
                content_style="parts" if parts_l else "none",
            )
        ]
    # user: tool_result blocks become tool messages, the rest one user message after them
    out: list[Message] = []
    rest: list[Part] = []
    for j, b in enumerate(content):
        if is_mapping(b) and b.get("type") == "tool_result":
            sub = f".content[{j}]"
            tool_use_id = optional_str(b, "tool_use_id", where, sub) or ""
            is_error = b.get("is_error")
            if is_error is not None and type(is_error) is not bool:
                raise type_error(location(where, f"{sub}.is_error"), "a bool", is_error)
            rparts, rstyle = parse_content(b.get("content", ""), where, f"{sub}.content")
            rextra = freeze(
                {
                    k: v
                    for k, v in b.items()
                    if k not in ("type", "tool_use_id", "content", "is_error")
                }
            )
            out.append(
                Message(
                    "tool",
                    rparts,
                    tool_call_id=tool_use_id,
                    is_error=is_error,
                    meta=meta,
                    extra=rextra,
                    origin="anthropic",
                    content_style=rstyle,
                )
            )
        else:
            rest.append(parse_block(b, where, f".content[{j}]"))
    if rest or not out:
        out.append(
            Message(
                "user",
                tuple(rest),
                meta=meta,
                extra=extra,
                origin="anthropic",
                content_style="parts",
            )
        )
    elif extra:
        # keep message-level unknown keys on the first tool result so they survive
        out[0] = replace(out[0], extra=freeze({**out[0].extra, MSG_EXTRA: dict(extra)}))
    return out


def from_anthropic(
    messages: Iterable[Mapping[str, Any]], system: str | Sequence[Any] | None = None
) -> list[Message]:
    """Parse Anthropic messages; ``system`` (string or text blocks) becomes a system message.

    Malformed input raises ``TypeError``/``ValueError`` (see :func:`to_messages`).
    """
    items = as_message_list(messages)
    out: list[Message] = []
    if system is not None and not (isinstance(system, list | tuple) and not system):
        parts, style = parse_content(system, "system", "")
        out.append(Message("system", parts, origin="anthropic", content_style=style))
    for i, d in enumerate(items):
        out.extend(from_anthropic_dict(d, i))
    return out


def _anthropic_part(p: Part, m: Message) -> dict[str, Any]:
    if type(p) is TextPart:
        return {"type": "text", "text": p.text, **extras_of(m, "anthropic", p.extra)}
    if type(p) is ImagePart:
        if p.data is not None:
            src: dict[str, Any] = {
                "type": "base64",
                "media_type": p.media_type or "image/png",
                "data": p.data,
            }
        else:
            url = p.url or ""
            media_type, data = split_data_url(url)
            if data is not None:
                src = {"type": "base64", "media_type": media_type or "image/png", "data": data}
            else:
                src = {"type": "url", "url": url}
        return {"type": "image", "source": src, **extras_of(m, "anthropic", p.extra)}
    assert type(p) is OtherPart
    if m.origin == "anthropic":
        return dict(p.block)
    return {"type": "text", "text": p.placeholder()}


def _anthropic_content(m: Message) -> Any:
    if m.content_style == "str" and len(m.parts) == 1 and type(m.parts[0]) is TextPart:
        return m.parts[0].text
    return [_anthropic_part(p, m) for p in m.parts]


def to_anthropic(messages: Iterable[Message], *, include_meta: bool = False) -> dict[str, Any]:
    """Render as keyword arguments for ``client.messages.create``: ``system`` and ``messages``.

    System messages go to ``system``. Tool results and the user text right after them become
    one user message (tool results are the user side in Anthropic's schema), so roles
    alternate whenever the internal history has no consecutive user or assistant messages.
    """
    system_parts: list[Any] = []
    system_str = True
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []  # tool_result blocks waiting for their user message
    pending_src: Message | None = None

    def flush() -> None:
        nonlocal pending, pending_src
        if pending:
            assert pending_src is not None
            d: dict[str, Any] = {"role": "user", "content": pending}
            if pending_src.origin == "anthropic" and MSG_EXTRA in pending_src.extra:
                d.update(pending_src.extra[MSG_EXTRA])
            if include_meta:
                d.update(meta_dict(pending_src))
            out.append(d)
        pending = []
        pending_src = None

    for m in messages:
        if m.role == "system":
            if m.content_style != "str" or len(m.parts) != 1:
                system_str = False
            system_parts.extend(m.parts)
            continue
        if m.role == "tool":
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
            block["content"] = _anthropic_content(m)
            if m.is_error is not None:
                block["is_error"] = m.is_error
            if m.origin == "anthropic":
                block.update({k: v for k, v in m.extra.items() if k != MSG_EXTRA})
            if pending_src is None:
                pending_src = m
            pending.append(block)
            continue
        if m.role == "user" and pending:
            blocks = pending + [_anthropic_part(p, m) for p in m.parts]
            pending = []
            pending_src = None
            d = {"role": "user", "content": blocks}
        else:
            flush()
            if m.role == "assistant":
                content: Any
                if m.tool_calls:
                    content = [_anthropic_part(p, m) for p in m.parts]
                    for tc in m.tool_calls:
                        content.append(
                            {
                                "type": "tool_use",
                                "id": tc.id,
                                "name": tc.name,
                                "input": tc.parsed_arguments(),
                                **extras_of(m, "anthropic", tc.extra),
                            }
                        )
                else:
                    content = _anthropic_content(m)
                d = {"role": "assistant", "content": content}
            else:
                d = {"role": "user", "content": _anthropic_content(m)}
        d.update(extras_of(m, "anthropic", m.extra))
        if include_meta:
            d.update(meta_dict(m))
        out.append(d)
    flush()
    result: dict[str, Any] = {"messages": out}
    if system_parts:
        texts = [p for p in system_parts if type(p) is TextPart]
        if system_str and len(texts) == 1:
            result["system"] = texts[0].text
        else:
            sys_msg = Message("system", tuple(system_parts), origin="anthropic")
            result["system"] = [_anthropic_part(p, sys_msg) for p in system_parts]
    return result
