"""Input checking for the codecs: the one boundary where malformed message dicts are
rejected, with errors that name the message's index and the field."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

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


def location(where: int | str, sub: str = "") -> str:
    # ``where`` is a message index (the common case, formatted only when an error is
    # raised) or an already formatted path
    return (f"messages[{where}]" if type(where) is int else str(where)) + sub


def type_error(path: str, expected: str, value: Any) -> TypeError:
    return TypeError(f"{path}: expected {expected}, got {describe(value)}")


def value_error(path: str, expected: str, value: Any, problem: str = "") -> ValueError:
    lead = f"{problem}, " if problem else ""
    return ValueError(f"{path}: {lead}expected {expected}, got {describe(value)}")


def wrong_type(path: str, expected: str, value: Any) -> TypeError | ValueError:
    """The error for a required value: ValueError when it is missing, else TypeError."""
    if value is MISSING:
        return value_error(path, expected, value)
    return type_error(path, expected, value)


def as_message_list(messages: Any) -> list[Any] | tuple[Any, ...]:
    """``messages`` as a list or tuple of its items.

    Any iterable is accepted except a dict (which would be iterated as its keys), a string
    or bytes: those, and non-iterables, raise ``TypeError``.
    """
    if isinstance(messages, list | tuple):
        return messages
    if messages is None or isinstance(messages, str | bytes | bytearray | Mapping):
        raise type_error("messages", "a list of message dicts", messages)
    try:
        it = iter(messages)
    except TypeError:
        raise type_error("messages", "a list of message dicts", messages) from None
    return list(it)


def optional_str(d: Mapping[str, Any], key: str, where: int | str, sub: str = "") -> str | None:
    v = d.get(key)
    if v is None or type(v) is str or isinstance(v, str):
        return v
    raise type_error(location(where, f"{sub}.{key}"), "a str", v)


def required_str(d: Mapping[str, Any], key: str, where: int | str, sub: str = "") -> str:
    v = d.get(key, MISSING)
    if type(v) is str or isinstance(v, str):
        return v
    raise wrong_type(location(where, f"{sub}.{key}"), "a str", v)


def json_text(value: Mapping[str, Any], where: int | str, sub: str) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as e:  # sets, bytes, cycles, ...
        err = TypeError if isinstance(e, TypeError) else ValueError
        msg = f"{location(where, sub)}: expected a dict of JSON values, got {describe(value)}"
        raise err(msg) from None
