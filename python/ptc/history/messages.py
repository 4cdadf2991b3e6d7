"""One immutable message representation for OpenAI and Anthropic chat histories.

Both provider shapes are parsed into :class:`Message` records and rendered back, so a
strategy works on one model and its output is sent with the client the user already has.
Unknown keys are kept in ``extra`` and written back only to the shape they came from,
so a field one provider accepts never leaks into a request to the other.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]
Shape = Literal["openai", "anthropic"]
ContentStyle = Literal["str", "parts", "none"]


class FrozenMap(Mapping[str, Any]):
    """A read-only mapping usable as a dataclass default (``MappingProxyType`` is not)."""

    __slots__ = ("_d",)

    def __init__(self, data: Mapping[str, Any] | None = None) -> None:
        self._d: dict[str, Any] = dict(data) if data else {}

    def __getitem__(self, key: str) -> Any:
        return self._d[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._d)

    def __len__(self) -> int:
        return len(self._d)

    def __hash__(self) -> int:
        return hash(tuple(self._d))

    def __repr__(self) -> str:
        return f"FrozenMap({self._d!r})"


EMPTY: Mapping[str, Any] = FrozenMap()

# Where a tool result keeps the message-level unknown keys of an Anthropic user message
# that held only tool results, so they are written back on the way out.
_MSG_EXTRA = "__ptc_message_extra__"

# Message-level keys that carry our metadata rather than provider fields.
META_KEYS = ("source", "sender_id", "reasoning", "created_at", "merged_meta")

_OPENAI_KNOWN = frozenset(("role", "content", "tool_calls", "tool_call_id", *META_KEYS))
_ANTHROPIC_KNOWN = frozenset(("role", "content", *META_KEYS))
_CALL_KEYS = frozenset(("id", "type", "function"))
_FN_KEYS = frozenset(("name", "arguments"))


def _freeze(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return FrozenMap(d) if d else EMPTY


@dataclass(frozen=True, slots=True)
class TextPart:
    text: str
    extra: Mapping[str, Any] = EMPTY


@dataclass(frozen=True, slots=True)
class ImagePart:
    """An image given by URL (``url``, may be a ``data:`` URL) or inline base64 ``data``."""

    url: str | None = None
    media_type: str | None = None
    data: str | None = None
    detail: str | None = None
    extra: Mapping[str, Any] = EMPTY

    def placeholder(self) -> str:
        if self.url and not self.url.startswith("data:"):
            return f"[Image URL: {self.url}]"
        size = len(self.data or self.url or "") * 3 // 4
        return f"[Image: {self.media_type or 'unknown type'}, ~{size} bytes]"


@dataclass(frozen=True, slots=True)
class OtherPart:
    """A content block this package does not interpret (audio, file, thinking, ...)."""

    type: str
    block: Mapping[str, Any] = EMPTY

    def placeholder(self) -> str:
        return f"[{self.type} content]"


Part = TextPart | ImagePart | OtherPart


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str = "{}"  # JSON text, as OpenAI sends it
    extra: Mapping[str, Any] = EMPTY

    @classmethod
    def of(cls, id: str, name: str, arguments: Mapping[str, Any] | str | None = None) -> ToolCall:
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments, ensure_ascii=False)
        return cls(id, name, arguments)

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; ``{}`` when they are not a JSON object."""
        try:
            value = json.loads(self.arguments)
        except (ValueError, TypeError):
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class Meta:
    """Per-message metadata kept next to provider fields.

    ``source`` is ``"direct"``, ``"broadcast"`` or ``"system"`` (seed 002); ``sender_id`` is
    empty for the commander. ``ephemeral`` marks generated scaffolding (the synthetic
    nudge) that must never be stored.
    """

    source: str | None = None
    sender_id: str | None = None
    reasoning: str | None = None
    created_at: Any = None
    ephemeral: bool = False
    #: Metadata of the messages merged into this one (seed 004 step 6), in order; rendered
    #: as ``merged_meta`` (a list of dicts) with ``include_meta=True``.
    merged: tuple[Meta, ...] = ()


NO_META = Meta()


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    parts: tuple[Part, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool | None = None
    meta: Meta = NO_META
    extra: Mapping[str, Any] = EMPTY
    origin: Shape | None = None
    content_style: ContentStyle = "str"

    # -- constructors -------------------------------------------------------------------
    @classmethod
    def system(cls, text: str) -> Message:
        return cls("system", (TextPart(text),))

    @classmethod
    def user(
        cls,
        text: str,
        *,
        source: str | None = None,
        sender_id: str | None = None,
        created_at: Any = None,
    ) -> Message:
        meta = NO_META
        if source is not None or sender_id is not None or created_at is not None:
            meta = Meta(source=source, sender_id=sender_id, created_at=created_at)
        return cls("user", (TextPart(text),), meta=meta)

    @classmethod
    def assistant(
        cls,
        text: str | None = None,
        tool_calls: Iterable[ToolCall] = (),
        *,
        reasoning: str | None = None,
    ) -> Message:
        parts = (TextPart(text),) if text else ()
        meta = Meta(reasoning=reasoning) if reasoning is not None else NO_META
        return cls(
            "assistant",
            parts,
            tuple(tool_calls),
            meta=meta,
            content_style="str" if parts else "none",
        )

    @classmethod
    def tool(cls, tool_call_id: str, text: str, *, is_error: bool | None = None) -> Message:
        return cls("tool", (TextPart(text),), tool_call_id=tool_call_id, is_error=is_error)

    # -- views ---------------------------------------------------------------------------
    @property
    def text(self) -> str:
        """The text parts joined by blank lines (images and other blocks left out)."""
        parts = self.parts
        if len(parts) == 1:
            p = parts[0]
            return p.text if type(p) is TextPart else ""
        return "\n\n".join(p.text for p in parts if type(p) is TextPart)

    def text_with_placeholders(self) -> str:
        """All parts as text; images and binary blocks become short placeholders (seed 004)."""
        out = []
        for p in self.parts:
            out.append(p.text if type(p) is TextPart else p.placeholder())  # type: ignore[union-attr]
        return "\n\n".join(out)

    @property
    def is_empty(self) -> bool:
        if self.tool_calls:
            return False
        for p in self.parts:
            if type(p) is not TextPart or p.text.strip():
                return False
        return True

    def with_parts(self, parts: tuple[Part, ...]) -> Message:
        style: ContentStyle = "parts" if len(parts) > 1 else ("str" if parts else "none")
        if self.content_style == "parts" and parts:
            style = "parts"
        return replace(self, parts=parts, content_style=style)

    def with_text(self, text: str) -> Message:
        """A copy whose text parts are replaced by one text part (other parts kept)."""
        others = tuple(p for p in self.parts if type(p) is not TextPart)
        style: ContentStyle = "parts" if others or self.content_style == "parts" else "str"
        return replace(self, parts=(TextPart(text), *others), content_style=style)


# ---------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------


def _meta_from(d: Mapping[str, Any]) -> Meta:
    if "source" in d or "sender_id" in d or "reasoning" in d or "created_at" in d:
        meta = Meta(
            source=d.get("source"),
            sender_id=d.get("sender_id"),
            reasoning=d.get("reasoning"),
            created_at=d.get("created_at"),
        )
    else:
        meta = NO_META
    merged = d.get("merged_meta")
    if isinstance(merged, list | tuple):
        meta = replace(meta, merged=tuple(_meta_from(x) for x in merged if _is_mapping(x)))
    return meta


def _data_url_split(url: str) -> tuple[str | None, str | None]:
    # data:image/png;base64,AAAA -> ("image/png", "AAAA")
    head, _, data = url.partition(",")
    if not head.startswith("data:") or ";base64" not in head:
        return None, None
    return head[5:].split(";", 1)[0] or None, data


def _parse_block(block: Any) -> Part:
    if isinstance(block, str):
        return TextPart(block)
    if not isinstance(block, Mapping):
        return OtherPart(type(block).__name__, _freeze({"value": block}))
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(
            block["text"], _freeze({k: v for k, v in block.items() if k not in ("type", "text")})
        )
    if kind == "image_url":
        inner = block.get("image_url")
        url = inner.get("url") if isinstance(inner, Mapping) else inner
        if isinstance(url, str):
            detail = inner.get("detail") if isinstance(inner, Mapping) else None
            extra = {k: v for k, v in block.items() if k not in ("type", "image_url")}
            media_type, _ = _data_url_split(url)
            return ImagePart(url=url, media_type=media_type, detail=detail, extra=_freeze(extra))
    if kind == "image":
        src = block.get("source")
        if isinstance(src, Mapping):
            extra = _freeze({k: v for k, v in block.items() if k not in ("type", "source")})
            if src.get("type") == "base64":
                return ImagePart(
                    media_type=src.get("media_type"), data=src.get("data"), extra=extra
                )
            if src.get("type") == "url" and isinstance(src.get("url"), str):
                return ImagePart(url=src["url"], extra=extra)
    return OtherPart(str(kind), _freeze(block))


def _parse_content(content: Any) -> tuple[tuple[Part, ...], ContentStyle]:
    if content is None:
        return (), "none"
    if type(content) is str:
        return (TextPart(content),), "str"
    if isinstance(content, str):
        return (TextPart(content),), "str"
    if isinstance(content, list | tuple):
        return tuple(_parse_block(b) for b in content), "parts"
    return (TextPart(str(content)),), "str"


def _parse_openai_call(tc: Mapping[str, Any]) -> ToolCall:
    fn = tc.get("function") or {}
    args = fn.get("arguments", "{}")
    if type(args) is not str:
        args = json.dumps(args, ensure_ascii=False)
    if (
        type(tc) is dict
        and tc.keys() <= _CALL_KEYS
        and fn.keys() <= _FN_KEYS
        and tc.get("type", "function") == "function"
    ):
        return ToolCall(str(tc.get("id") or ""), str(fn.get("name") or ""), args)
    extra = {k: v for k, v in tc.items() if k not in ("id", "function", "type")}
    if tc.get("type", "function") != "function":
        extra["type"] = tc.get("type")
    fn_extra = {k: v for k, v in fn.items() if k not in ("name", "arguments")}
    if fn_extra:
        extra["function"] = fn_extra
    return ToolCall(str(tc.get("id") or ""), str(fn.get("name") or ""), args, _freeze(extra))


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


def _from_openai_dict(d: Mapping[str, Any]) -> Message:
    role = d.get("role")
    if role == "developer":  # OpenAI's newer name for the system role
        role = "system"
    if role not in ("system", "user", "assistant", "tool"):
        raise ValueError(f"unsupported message role: {role!r}")
    parts, style = _parse_content(d.get("content"))
    calls: tuple[ToolCall, ...] = ()
    raw_calls = d.get("tool_calls")
    if raw_calls:
        calls = tuple(_parse_openai_call(tc) for tc in raw_calls)
    extra = EMPTY
    if not d.keys() <= _OPENAI_KNOWN:
        extra = _freeze({k: v for k, v in d.items() if k not in _OPENAI_KNOWN})
    if d.get("role") == "developer":
        extra = _freeze({**extra, "role": "developer"})
    tcid = d.get("tool_call_id")
    return Message(
        role,
        parts,
        calls,
        str(tcid) if tcid is not None else None,
        None,
        _meta_from(d),
        extra,
        "openai",
        style,
    )


def _from_anthropic_dict(d: Mapping[str, Any]) -> list[Message]:
    role = d.get("role")
    if role not in ("user", "assistant"):
        raise ValueError(f"unsupported Anthropic message role: {role!r}")
    meta = _meta_from(d)
    extra = _freeze({k: v for k, v in d.items() if k not in _ANTHROPIC_KNOWN})
    content = d.get("content")
    if not isinstance(content, list):
        parts, style = _parse_content(content)
        return [
            Message(role, parts, meta=meta, extra=extra, origin="anthropic", content_style=style)
        ]
    if role == "assistant":
        parts_l: list[Part] = []
        calls: list[ToolCall] = []
        for b in content:
            if isinstance(b, Mapping) and b.get("type") == "tool_use":
                cextra = {k: v for k, v in b.items() if k not in ("type", "id", "name", "input")}
                calls.append(
                    ToolCall(
                        str(b.get("id") or ""),
                        str(b.get("name") or ""),
                        json.dumps(b.get("input", {}), ensure_ascii=False),
                        _freeze(cextra),
                    )
                )
            else:
                parts_l.append(_parse_block(b))
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
    for b in content:
        if isinstance(b, Mapping) and b.get("type") == "tool_result":
            rparts, rstyle = _parse_content(b.get("content", ""))
            rextra = _freeze(
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
                    tool_call_id=str(b.get("tool_use_id") or ""),
                    is_error=b.get("is_error"),
                    meta=meta,
                    extra=rextra,
                    origin="anthropic",
                    content_style=rstyle,
                )
            )
        else:
            rest.append(_parse_block(b))
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
        out[0] = replace(out[0], extra=_freeze({**out[0].extra, _MSG_EXTRA: dict(extra)}))
    return out


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Parse OpenAI chat-completions messages (roles system/developer/user/assistant/tool)."""
    return [_from_openai_dict(d) for d in messages]


def from_anthropic(
    messages: Iterable[Mapping[str, Any]], system: str | Sequence[Any] | None = None
) -> list[Message]:
    """Parse Anthropic messages; ``system`` (string or text blocks) becomes a system message."""
    out: list[Message] = []
    if system is not None and not (isinstance(system, list | tuple) and not system):
        parts, style = _parse_content(system)
        out.append(Message("system", parts, origin="anthropic", content_style=style))
    for d in messages:
        out.extend(_from_anthropic_dict(d))
    return out


def to_messages(history: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """Accept Messages, OpenAI dicts or Anthropic dicts and normalize them.

    The shape is detected once for the whole list, so an Anthropic history whose first
    messages happen to look like OpenAI ones still keeps its Anthropic-only fields.
    """
    items = list(history)
    anthropic = detect_shape(items) == "anthropic"
    out: list[Message] = []
    for m in items:
        if type(m) is Message:
            out.append(m)
        elif _is_mapping(m):
            if anthropic and m.get("role") in ("user", "assistant"):
                out.extend(_from_anthropic_dict(m))
            else:
                out.append(_from_openai_dict(m))
        else:
            raise TypeError(f"expected a Message or a dict, got {type(m).__name__}")
    return out


def detect_shape(history: Iterable[Message | Mapping[str, Any]]) -> Shape:
    """``"anthropic"`` if any message uses Anthropic content blocks or origin, else ``"openai"``."""
    for m in history:
        if type(m) is Message:
            if m.origin == "anthropic":
                return "anthropic"
        elif _is_mapping(m) and _is_anthropic_dict(m):
            return "anthropic"
    return "openai"


# ---------------------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------------------


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


def _openai_part(p: Part, m: Message) -> dict[str, Any]:
    if type(p) is TextPart:
        return {"type": "text", "text": p.text, **_extras(m, "openai", p.extra)}
    if type(p) is ImagePart:
        url = p.url or f"data:{p.media_type or 'image/png'};base64,{p.data or ''}"
        inner: dict[str, Any] = {"url": url}
        if p.detail is not None:
            inner["detail"] = p.detail
        return {"type": "image_url", "image_url": inner, **_extras(m, "openai", p.extra)}
    assert type(p) is OtherPart
    if m.origin == "openai":
        return dict(p.block)
    return {"type": "text", "text": p.placeholder()}


def _openai_content(m: Message, join_text: bool) -> Any:
    parts = m.parts
    if not parts:
        return None if m.role == "assistant" else ""
    if m.content_style == "str" and len(parts) == 1 and type(parts[0]) is TextPart:
        return parts[0].text
    if join_text and all(type(p) is TextPart for p in parts):
        return m.text
    return [_openai_part(p, m) for p in parts]


def message_to_openai(
    m: Message, *, include_meta: bool = False, join_text: bool = False
) -> dict[str, Any]:
    role: str = m.role
    extra = m.extra if m.origin == "openai" else EMPTY
    if extra.get("role") == "developer" and role == "system":
        role = "developer"
    d: dict[str, Any] = {"role": role, "content": _openai_content(m, join_text)}
    if m.tool_calls:
        calls = []
        for tc in m.tool_calls:
            fn: dict[str, Any] = {"name": tc.name, "arguments": tc.arguments}
            cd: dict[str, Any] = {"id": tc.id, "type": "function", "function": fn}
            if m.origin == "openai" and tc.extra:
                for k, v in tc.extra.items():
                    if k == "function" and isinstance(v, Mapping):
                        fn.update(v)
                    else:
                        cd[k] = v
            calls.append(cd)
        d["tool_calls"] = calls
    if m.role == "tool":
        d["tool_call_id"] = m.tool_call_id
    for k, v in extra.items():
        if k != "role":
            d[k] = v
    if include_meta:
        d.update(_meta_dict(m))
    return d


def to_openai(
    messages: Iterable[Message], *, include_meta: bool = False, join_text: bool = False
) -> list[dict[str, Any]]:
    """Render messages as OpenAI chat-completions dicts.

    ``include_meta`` writes ``source``/``sender_id``/``reasoning``/``created_at`` back as
    top-level keys (for storage and round trips; providers reject them in requests).
    ``join_text`` sends text-only multi-part content as one string for servers that only
    accept strings.
    """
    return [message_to_openai(m, include_meta=include_meta, join_text=join_text) for m in messages]


def _anthropic_part(p: Part, m: Message) -> dict[str, Any]:
    if type(p) is TextPart:
        return {"type": "text", "text": p.text, **_extras(m, "anthropic", p.extra)}
    if type(p) is ImagePart:
        if p.data is not None:
            src: dict[str, Any] = {
                "type": "base64",
                "media_type": p.media_type or "image/png",
                "data": p.data,
            }
        else:
            url = p.url or ""
            media_type, data = _data_url_split(url)
            if data is not None:
                src = {"type": "base64", "media_type": media_type or "image/png", "data": data}
            else:
                src = {"type": "url", "url": url}
        return {"type": "image", "source": src, **_extras(m, "anthropic", p.extra)}
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
            if pending_src.origin == "anthropic" and _MSG_EXTRA in pending_src.extra:
                d.update(pending_src.extra[_MSG_EXTRA])
            if include_meta:
                d.update(_meta_dict(pending_src))
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
                block.update({k: v for k, v in m.extra.items() if k != _MSG_EXTRA})
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
                                **_extras(m, "anthropic", tc.extra),
                            }
                        )
                else:
                    content = _anthropic_content(m)
                d = {"role": "assistant", "content": content}
            else:
                d = {"role": "user", "content": _anthropic_content(m)}
        d.update(_extras(m, "anthropic", m.extra))
        if include_meta:
            d.update(_meta_dict(m))
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


def to_shape(messages: Iterable[Message], shape: Shape, *, include_meta: bool = False) -> Any:
    """``to_openai`` or ``to_anthropic`` by name."""
    if shape == "anthropic":
        return to_anthropic(messages, include_meta=include_meta)
    return to_openai(messages, include_meta=include_meta)
