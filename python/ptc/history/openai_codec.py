"""OpenAI chat messages <-> :class:`~ptc.history.messages.Message`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._checks import (
    MISSING,
    as_message_list,
    json_text,
    location,
    optional_str,
    type_error,
    value_error,
    wrong_type,
)
from ._content import extras_of, is_mapping, meta_dict, meta_from, parse_content, role_of
from .messages import (
    EMPTY,
    META_KEYS,
    NO_META,
    ChatToolCall,
    ImagePart,
    Message,
    Meta,
    OtherPart,
    Part,
    TextPart,
    freeze,
)

_OPENAI_ROLES = frozenset(("system", "developer", "user", "assistant", "tool"))

# The message keys OpenAI's format and our metadata use; others are kept as extras.
OPENAI_KNOWN = frozenset(("role", "content", "tool_calls", "tool_call_id", *META_KEYS))
# The keys of a plain tool call and of its function.
CALL_KEYS = frozenset(("id", "type", "function"))
FN_KEYS = frozenset(("name", "arguments"))
# The message keys meta_from reads (a message with none of them has ``NO_META``).
META_INPUT_KEYS = frozenset(META_KEYS)


_OPENAI_ROLES_TEXT = '"system", "developer", "user", "assistant" or "tool"'


_FUNCTION_TEXT = 'a dict with "name" and "arguments"'


# The checked fields of one OpenAI tool call: id, name, arguments (JSON text), its
# ``function`` mapping, its ``type`` (``None`` for "function") and the call dict itself.
CallFields = tuple[str, str, str, Mapping[str, Any], str | None, Mapping[str, Any]]


def _call_fields(tc: Any, where: int | str, k: int) -> CallFields:
    # Paths are formatted only when an error is raised: this runs for every call.
    if type(tc) is not dict and not isinstance(tc, Mapping):
        raise type_error(location(where, f".tool_calls[{k}]"), "a tool call dict", tc)
    ctype = tc.get("type")
    if ctype is None or ctype == "function":
        ctype = None
    elif not isinstance(ctype, str):
        raise type_error(location(where, f".tool_calls[{k}].type"), "a str", ctype)
    fn = tc.get("function", MISSING)
    if type(fn) is not dict and not isinstance(fn, Mapping):
        if ctype is None or (fn is not MISSING and fn is not None):
            raise wrong_type(location(where, f".tool_calls[{k}].function"), _FUNCTION_TEXT, fn)
        fn = EMPTY  # another call type (e.g. "custom") without a function
    name = fn.get("name", MISSING)
    if type(name) is not str and not isinstance(name, str):
        if ctype is not None and (name is MISSING or name is None):
            name = ""
        else:
            raise wrong_type(location(where, f".tool_calls[{k}].function.name"), "a str", name)
    args = fn.get("arguments")
    if type(args) is not str and not isinstance(args, str):
        if args is None:
            args = "{}"
        elif type(args) is dict or isinstance(args, Mapping):
            args = json_text(args, where, f".tool_calls[{k}].function.arguments")
        else:
            path = location(where, f".tool_calls[{k}].function.arguments")
            raise type_error(path, "a str or a dict", args)
    call_id = tc.get("id")
    if type(call_id) is not str:
        if call_id is None:
            call_id = ""
        elif not isinstance(call_id, str):
            raise type_error(location(where, f".tool_calls[{k}].id"), "a str", call_id)
    return call_id, name, args, fn, ctype, tc


def _tool_call(fields: CallFields) -> ChatToolCall:
    call_id, name, args, fn, ctype, tc = fields
    if ctype is None and type(tc) is dict and tc.keys() <= CALL_KEYS and fn.keys() <= FN_KEYS:
        return ChatToolCall(call_id, name, args)
    extra = {k: v for k, v in tc.items() if k not in ("id", "function", "type")}
    if ctype is not None:
        extra["type"] = ctype
    fn_extra = {k: v for k, v in fn.items() if k not in ("name", "arguments")}
    if fn_extra:
        extra["function"] = fn_extra
    return ChatToolCall(call_id, name, args, freeze(extra))


def parse_openai_fields(
    d: Mapping[str, Any], index: int | str
) -> tuple[str, Sequence[CallFields], str | None, Meta]:
    """Check and parse an OpenAI message dict's fields other than ``content``.

    Returns ``(role, call fields, tool_call_id, meta)``, the role as given (``"developer"``
    included) and each tool call as its checked fields (see ``CallFields``). Shared by the
    parser and the token counter's fast path, so both reject the same input with the same
    error. ``index`` is the message's index in the caller's list.
    """
    # The common case is checked inline (this runs for every message); anything unusual
    # goes to the helpers, which accept it or raise.
    role = d.get("role")
    if type(role) is not str or role not in _OPENAI_ROLES:
        role = role_of(d, index, _OPENAI_ROLES, _OPENAI_ROLES_TEXT)
    raw_calls = d.get("tool_calls")
    calls: Sequence[CallFields] = ()
    if raw_calls is not None:
        if type(raw_calls) is not list and not isinstance(raw_calls, list | tuple):
            raise type_error(location(index, ".tool_calls"), "a list of tool call dicts", raw_calls)
        if raw_calls and role != "assistant":  # providers reject it; repair cannot pair it
            path = location(index, ".tool_calls")
            raise value_error(path, f"no tool calls on a {role} message", raw_calls)
        found = []
        k = 0
        for tc in raw_calls:
            found.append(_call_fields(tc, index, k))
            k += 1
        calls = found
    tcid = d.get("tool_call_id")
    if tcid is not None and type(tcid) is not str:
        tcid = optional_str(d, "tool_call_id", index)
    meta = NO_META if META_INPUT_KEYS.isdisjoint(d) else meta_from(d, index)
    return role, calls, tcid, meta


def from_openai_dict(d: Any, where: int | str) -> Message:
    if not is_mapping(d):
        raise type_error(location(where), "a message dict", d)
    role, fields, tcid, meta = parse_openai_fields(d, where)
    calls = tuple(_tool_call(f) for f in fields) if fields else ()
    parts, style = parse_content(d.get("content"), where, ".content")
    extra = EMPTY
    if not d.keys() <= OPENAI_KNOWN:
        extra = freeze({k: v for k, v in d.items() if k not in OPENAI_KNOWN})
    if role == "developer":  # OpenAI's newer name for the system role
        role = "system"
        extra = freeze({**extra, "role": "developer"})
    return Message(role, parts, calls, tcid, None, meta, extra, "openai", style)  # type: ignore[arg-type]


def message_from_openai(d: Any, *, index: int = 0) -> Message:
    """Parse one OpenAI message dict; ``index`` is its position, used in error messages."""
    return from_openai_dict(d, index)


def from_openai(messages: Iterable[Mapping[str, Any]]) -> list[Message]:
    """Parse OpenAI chat-completions messages (roles system/developer/user/assistant/tool).

    Malformed input raises ``TypeError``/``ValueError`` (see :func:`to_messages`).
    """
    return [from_openai_dict(d, i) for i, d in enumerate(as_message_list(messages))]


def _openai_part(p: Part, m: Message) -> dict[str, Any]:
    if type(p) is TextPart:
        return {"type": "text", "text": p.text, **extras_of(m, "openai", p.extra)}
    if type(p) is ImagePart:
        url = p.url or f"data:{p.media_type or 'image/png'};base64,{p.data or ''}"
        inner: dict[str, Any] = {"url": url}
        if p.detail is not None:
            inner["detail"] = p.detail
        return {"type": "image_url", "image_url": inner, **extras_of(m, "openai", p.extra)}
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
        d.update(meta_dict(m))
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
