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
# The message keys _meta_from reads (a message with none of them has ``NO_META``).
_META_INPUT_KEYS = frozenset(("source", "sender_id", "reasoning", "created_at", "merged_meta"))
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
# Input checking
# ---------------------------------------------------------------------------------------
#
# Raw dicts become Messages only in this module (``from_openai``, ``from_anthropic``,
# ``to_messages``, ``message_from_openai``), and every entry point of the package that
# takes dicts goes through them, so this is the one boundary where malformed input is
# rejected. The rules (also in the ``to_messages`` docstring):
#
# - Errors read ``<path>: expected <what>, got <value>``, e.g.
#   ``messages[3].tool_calls[0].function: expected a dict with "name" and "arguments",
#   got str 'get_weather'``. The path starts with ``messages[i]``, ``i`` being the index in
#   the list the caller passed (``messages`` for the list itself, ``system`` for
#   ``from_anthropic``'s ``system``). The value is ``<type name> <repr>`` with the repr cut
#   to 60 characters, ``None``, or ``nothing`` when the key is missing.
# - ``TypeError`` when a value has the wrong Python type (``None`` included, for a required
#   field); ``ValueError`` when it has the right type but is not allowed (an unknown role:
#   the text then starts with ``unsupported message role, ``) or a required key is missing.
# - Only assistant messages may carry tool calls (``tool_calls`` on another role is a
#   ValueError; an empty list or ``None`` is fine anywhere).
# - An optional field set to ``None`` counts as absent. Empty or missing tool-call ids are
#   accepted here: :func:`~ptc.history.repair.validate` reports them and
#   :func:`~ptc.history.repair.repair` gives the calls generated ids.
# - A tool call's ``arguments`` string is kept as text even when it is not valid JSON
#   (models do emit truncated JSON, and the history must carry it); a dict is written as
#   JSON. :meth:`ToolCall.parsed_arguments` gives ``{}`` for text that is not a JSON object.

#: How many characters of the offending value's repr an error message shows.
REPR_LIMIT = 60


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "nothing"


#: Marks a key that is absent from a dict (distinct from a key set to ``None``).
MISSING: Any = _Missing()


def _repr_tokens(value: Any) -> Iterator[str]:
    # The builtin repr, produced lazily so a huge or deeply nested value costs only the
    # characters shown.
    t = type(value)
    if t is dict:
        yield "{"
        for n, (k, v) in enumerate(value.items()):
            if n:
                yield ", "
            yield from _repr_tokens(k)
            yield ": "
            yield from _repr_tokens(v)
        yield "}"
    elif t is list or t is tuple:
        yield "[" if t is list else "("
        for n, v in enumerate(value):
            if n:
                yield ", "
            yield from _repr_tokens(v)
        if t is tuple and len(value) == 1:
            yield ","
        yield "]" if t is list else ")"
    elif t is str:
        yield repr(value[: REPR_LIMIT + 1])
    else:
        try:
            yield repr(value)
        except Exception:  # e.g. an int with more digits than Python will print
            yield f"<{t.__name__}>"


def short_repr(value: Any) -> str:
    """``repr(value)``, cut to :data:`REPR_LIMIT` characters (the last three ``...``)."""
    out: list[str] = []
    size = 0
    for tok in _repr_tokens(value):
        out.append(tok)
        size += len(tok)
        if size > REPR_LIMIT:
            break
    text = "".join(out)
    return text if len(text) <= REPR_LIMIT else text[: REPR_LIMIT - 3] + "..."


def describe(value: Any) -> str:
    """How an error message shows a value: ``<type> <repr>``, ``None`` or ``nothing``."""
    if value is MISSING:
        return "nothing"
    if value is None:
        return "None"
    return f"{type(value).__name__} {short_repr(value)}"


def _at(where: int | str, sub: str = "") -> str:
    # ``where`` is a message index (the common case, formatted only when an error is
    # raised) or an already formatted path
    return (f"messages[{where}]" if type(where) is int else str(where)) + sub


def _type_error(path: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"{path}: expected {expected}, got {describe(value)}")


def _value_error(path: str, expected: str, value: Any, problem: str = "") -> ValueError:
    lead = f"{problem}, " if problem else ""
    return ValueError(f"{path}: {lead}expected {expected}, got {describe(value)}")


def _wrong(path: str, expected: str, value: Any) -> TypeError | ValueError:
    """The error for a required value: ValueError when it is missing, else TypeError."""
    if value is MISSING:
        return _value_error(path, expected, value)
    return _type_error(path, expected, value)


def as_message_list(messages: Any) -> list[Any] | tuple[Any, ...]:
    """``messages`` as a list or tuple of its items.

    Any iterable is accepted except a dict (which would be iterated as its keys), a string
    or bytes: those, and non-iterables, raise ``TypeError``.
    """
    if isinstance(messages, list | tuple):
        return messages
    if messages is None or isinstance(messages, str | bytes | bytearray | Mapping):
        raise _type_error("messages", "a list of message dicts", messages)
    try:
        it = iter(messages)
    except TypeError:
        raise _type_error("messages", "a list of message dicts", messages) from None
    return list(it)


def _opt_str(d: Mapping[str, Any], key: str, where: int | str, sub: str = "") -> str | None:
    v = d.get(key)
    if v is None or type(v) is str or isinstance(v, str):
        return v
    raise _type_error(_at(where, f"{sub}.{key}"), "a str", v)


def _req_str(d: Mapping[str, Any], key: str, where: int | str, sub: str = "") -> str:
    v = d.get(key, MISSING)
    if type(v) is str or isinstance(v, str):
        return v
    raise _wrong(_at(where, f"{sub}.{key}"), "a str", v)


def _json_text(value: Mapping[str, Any], where: int | str, sub: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:  # sets, bytes, cycles, ...
        err = TypeError if isinstance(e, TypeError) else ValueError
        msg = f"{_at(where, sub)}: expected a dict of JSON values, got {describe(value)}"
        raise err(msg) from None


# ---------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------

_OPENAI_ROLES = frozenset(("system", "developer", "user", "assistant", "tool"))
_OPENAI_ROLES_TEXT = '"system", "developer", "user", "assistant" or "tool"'
_ANTHROPIC_ROLES = frozenset(("user", "assistant"))
_ANTHROPIC_ROLES_TEXT = '"user" or "assistant"'
_CONTENT_TEXT = "a str, a list of content parts or None"
_FUNCTION_TEXT = 'a dict with "name" and "arguments"'


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


# The checked fields of one OpenAI tool call: id, name, arguments (JSON text), its
# ``function`` mapping, its ``type`` (``None`` for "function") and the call dict itself.
CallFields = tuple[str, str, str, Mapping[str, Any], str | None, Mapping[str, Any]]


def _call_fields(tc: Any, where: int | str, k: int) -> CallFields:
    # Paths are formatted only when an error is raised: this runs for every call.
    if type(tc) is not dict and not isinstance(tc, Mapping):
        raise _type_error(_at(where, f".tool_calls[{k}]"), "a tool call dict", tc)
    ctype = tc.get("type")
    if ctype is None or ctype == "function":
        ctype = None
    elif not isinstance(ctype, str):
        raise _type_error(_at(where, f".tool_calls[{k}].type"), "a str", ctype)
    fn = tc.get("function", MISSING)
    if type(fn) is not dict and not isinstance(fn, Mapping):
        if ctype is None or (fn is not MISSING and fn is not None):
            raise _wrong(_at(where, f".tool_calls[{k}].function"), _FUNCTION_TEXT, fn)
        fn = EMPTY  # another call type (e.g. "custom") without a function
    name = fn.get("name", MISSING)
    if type(name) is not str and not isinstance(name, str):
        if ctype is not None and (name is MISSING or name is None):
            name = ""
        else:
            raise _wrong(_at(where, f".tool_calls[{k}].function.name"), "a str", name)
    args = fn.get("arguments")
    if type(args) is not str and not isinstance(args, str):
        if args is None:
            args = "{}"
        elif type(args) is dict or isinstance(args, Mapping):
            args = _json_text(args, where, f".tool_calls[{k}].function.arguments")
        else:
            path = _at(where, f".tool_calls[{k}].function.arguments")
            raise _type_error(path, "a str or a dict", args)
    call_id = tc.get("id")
    if type(call_id) is not str:
        if call_id is None:
            call_id = ""
        elif not isinstance(call_id, str):
            raise _type_error(_at(where, f".tool_calls[{k}].id"), "a str", call_id)
    return call_id, name, args, fn, ctype, tc


def _tool_call(fields: CallFields) -> ToolCall:
    call_id, name, args, fn, ctype, tc = fields
    if ctype is None and type(tc) is dict and tc.keys() <= _CALL_KEYS and fn.keys() <= _FN_KEYS:
        return ToolCall(call_id, name, args)
    extra = {k: v for k, v in tc.items() if k not in ("id", "function", "type")}
    if ctype is not None:
        extra["type"] = ctype
    fn_extra = {k: v for k, v in fn.items() if k not in ("name", "arguments")}
    if fn_extra:
        extra["function"] = fn_extra
    return ToolCall(call_id, name, args, _freeze(extra))


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
        role = _role(d, index, _OPENAI_ROLES, _OPENAI_ROLES_TEXT)
    raw_calls = d.get("tool_calls")
    calls: Sequence[CallFields] = ()
    if raw_calls is not None:
        if type(raw_calls) is not list and not isinstance(raw_calls, list | tuple):
            raise _type_error(_at(index, ".tool_calls"), "a list of tool call dicts", raw_calls)
        if raw_calls and role != "assistant":  # providers reject it; repair cannot pair it
            path = _at(index, ".tool_calls")
            raise _value_error(path, f"no tool calls on a {role} message", raw_calls)
        found = []
        k = 0
        for tc in raw_calls:
            found.append(_call_fields(tc, index, k))
            k += 1
        calls = found
    tcid = d.get("tool_call_id")
    if tcid is not None and type(tcid) is not str:
        tcid = _opt_str(d, "tool_call_id", index)
    meta = NO_META if _META_INPUT_KEYS.isdisjoint(d) else _meta_from(d, index)
    return role, calls, tcid, meta


def _from_openai_dict(d: Any, where: int | str) -> Message:
    if not _is_mapping(d):
        raise _type_error(_at(where), "a message dict", d)
    role, fields, tcid, meta = parse_openai_fields(d, where)
    calls = tuple(_tool_call(f) for f in fields) if fields else ()
    parts, style = _parse_content(d.get("content"), where, ".content")
    extra = EMPTY
    if not d.keys() <= _OPENAI_KNOWN:
        extra = _freeze({k: v for k, v in d.items() if k not in _OPENAI_KNOWN})
    if role == "developer":  # OpenAI's newer name for the system role
        role = "system"
        extra = _freeze({**extra, "role": "developer"})
    return Message(role, parts, calls, tcid, None, meta, extra, "openai", style)  # type: ignore[arg-type]


def message_from_openai(d: Any, *, index: int = 0) -> Message:
    """Parse one OpenAI message dict; ``index`` is its position, used in error messages."""
    return _from_openai_dict(d, index)


def _parse_tool_use(b: Mapping[str, Any], where: int | str, sub: str) -> ToolCall:
    call_id = _opt_str(b, "id", where, sub) or ""
    name = _req_str(b, "name", where, sub)
    inp = b.get("input")
    if inp is None:
        args = "{}"
    elif _is_mapping(inp):
        args = _json_text(inp, where, f"{sub}.input")
    else:
        raise _type_error(_at(where, f"{sub}.input"), "a dict", inp)
    cextra = {k: v for k, v in b.items() if k not in ("type", "id", "name", "input")}
    return ToolCall(call_id, name, args, _freeze(cextra))


def _from_anthropic_dict(d: Any, where: int | str) -> list[Message]:
    if not _is_mapping(d):
        raise _type_error(_at(where), "a message dict", d)
    role = _role(d, where, _ANTHROPIC_ROLES, _ANTHROPIC_ROLES_TEXT)
    meta = _meta_from(d, where)
    extra = _freeze({k: v for k, v in d.items() if k not in _ANTHROPIC_KNOWN})
    content = d.get("content")
    if not isinstance(content, list | tuple):
        parts, style = _parse_content(content, where, ".content")
        return [
            Message(role, parts, meta=meta, extra=extra, origin="anthropic", content_style=style)  # type: ignore[arg-type]
        ]
    if role == "assistant":
        parts_l: list[Part] = []
        calls: list[ToolCall] = []
        for j, b in enumerate(content):
            if _is_mapping(b) and b.get("type") == "tool_use":
                calls.append(_parse_tool_use(b, where, f".content[{j}]"))
            else:
                parts_l.append(_parse_block(b, where, f".content[{j}]"))
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
        if _is_mapping(b) and b.get("type") == "tool_result":
            sub = f".content[{j}]"
            tool_use_id = _opt_str(b, "tool_use_id", where, sub) or ""
            is_error = b.get("is_error")
            if is_error is not None and type(is_error) is not bool:
                raise _type_error(_at(where, f"{sub}.is_error"), "a bool", is_error)
            rparts, rstyle = _parse_content(b.get("content", ""), where, f"{sub}.content")
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
                    tool_call_id=tool_use_id,
                    is_error=is_error,
                    meta=meta,
                    extra=rextra,
                    origin="anthropic",
                    content_style=rstyle,
                )
            )
        else:
            rest.append(_parse_block(b, where, f".content[{j}]"))
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
    """Parse OpenAI chat-completions messages (roles system/developer/user/assistant/tool).

    Malformed input raises ``TypeError``/``ValueError`` (see :func:`to_messages`).
    """
    return [_from_openai_dict(d, i) for i, d in enumerate(as_message_list(messages))]


def from_anthropic(
    messages: Iterable[Mapping[str, Any]], system: str | Sequence[Any] | None = None
) -> list[Message]:
    """Parse Anthropic messages; ``system`` (string or text blocks) becomes a system message.

    Malformed input raises ``TypeError``/``ValueError`` (see :func:`to_messages`).
    """
    items = as_message_list(messages)
    out: list[Message] = []
    if system is not None and not (isinstance(system, list | tuple) and not system):
        parts, style = _parse_content(system, "system", "")
        out.append(Message("system", parts, origin="anthropic", content_style=style))
    for i, d in enumerate(items):
        out.extend(_from_anthropic_dict(d, i))
    return out


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
        elif anthropic and _is_mapping(m) and m.get("role") in ("user", "assistant"):
            out.extend(_from_anthropic_dict(m, i))
        else:
            out.append(_from_openai_dict(m, i))
    return out


def detect_shape(history: Iterable[Message | Mapping[str, Any]]) -> Shape:
    """``"anthropic"`` if any message uses Anthropic content blocks or origin, else ``"openai"``."""
    for m in history:
        if type(m) is dict:
            if type(m.get("content")) is list and _is_anthropic_dict(m):
                return "anthropic"
        elif type(m) is Message:
            if m.origin == "anthropic":
                return "anthropic"
        elif isinstance(m, Mapping) and _is_anthropic_dict(m):
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
