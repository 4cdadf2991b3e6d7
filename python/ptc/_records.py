"""One codec for the frozen dataclass records that runs and checkpoints store as JSON, and for
the PTC values in them: fields become keys in field order, tuples become lists, nested records
become dicts, and reading back turns lists into tuples and dicts into records as the field's
type says. A missing key takes the field's default (so older stored runs still load); unknown
keys are ignored. Fields a record names in ``__value_fields__`` hold PTC values: they go
through :func:`encode_value` (a lazy core value is converted then, or kept as its preview when
Python cannot hold it) and come back through :func:`decode_value`.

Reading back checks every field against its type (stored records come from files and database
rows that anyone may have written): a wrong type, a missing field, a negative or absurd count, a
non-finite duration or a malformed value tag raises ``ValueError`` naming the field's path
(``step.turns[1].error.type: expected a string, got the integer 5``)."""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
import typing
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from ._core import LazyValue
from .errors import LispError

R = TypeVar("R")

#: The largest count a stored record may hold (turn numbers, token counts, limits): 2**53, the
#: largest integer every JSON reader keeps exactly. Anything above it was not written by ptc.
MAX_COUNT = 2**53


def count(v: Any) -> int | None:
    """A count a provider reported, within what a stored record may hold: an integer (or a
    finite float's whole part) clamped to 0..:data:`MAX_COUNT`; ``None`` for anything else. A
    provider's usage is information, not trusted input: a negative or absurd count must
    neither fail the run nor make its Step unloadable."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    if isinstance(v, float) and not math.isfinite(v):
        return None
    n = int(v)
    return min(max(n, 0), MAX_COUNT)


def counts(tokens: Any) -> dict[str, int]:
    """A provider's token counts (``{"input_tokens": 12, ...}``) as a stored record holds them:
    text keys, each count through :func:`count`; other entries are left out."""
    if not isinstance(tokens, Mapping):
        return {}
    out = {}
    for k, v in tokens.items():
        n = count(v)
        if isinstance(k, str) and n is not None:
            out[k] = n
    return out


_SURROGATE = re.compile("[\ud800-\udfff]")


def json_text(value: Any, *, indent: int | None = None) -> str:
    """``value`` as JSON text to save: non-ASCII characters as they are, unless the text holds
    a lone surrogate (a provider's JSON ``"\\ud800"`` decodes to one in Python), which no UTF-8
    file or database text can hold: then all of it is escaped to ASCII (``\\ud800``), which
    ``json.loads`` reads back to the same string."""
    text = json.dumps(value, ensure_ascii=False, indent=indent)
    if _SURROGATE.search(text) is None:
        return text
    return json.dumps(value, indent=indent)


class Record:
    """Base of the records stored as JSON: ``to_dict()``/``from_dict()`` through this codec
    (a record with values Python must encode names them in ``__value_fields__``)."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return to_dict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Self:
        return from_dict(cls, d)


def to_dict(record: Any) -> dict[str, Any]:
    """The record's fields as JSON-ready values, in field order."""
    values = getattr(record, "__value_fields__", ())
    return {
        f.name: _encode_field(record, f.name)
        if f.name in values
        else _plain(getattr(record, f.name))
        for f in dataclasses.fields(record)
    }


def from_dict(cls: type[R], d: Any, path: str | None = None) -> R:
    """A record of ``cls`` from what :func:`to_dict` wrote; ``ValueError`` naming the field's
    path (rooted at ``path``, default the class name) when ``d`` does not fit the fields."""
    where = cls.__name__ if path is None else path
    if not isinstance(d, Mapping):
        raise ValueError(f"{where}: expected an object, got {describe(d)}")
    hints = _hints(typing.cast(type, cls))
    values = getattr(cls, "__value_fields__", ())
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in d:
            v = d[f.name]
            at = f"{where}.{f.name}"
            if f.name in values:
                v = decode_value(v, at)
            kwargs[f.name] = typed(hints[f.name], v, at)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"{where}: missing field {f.name!r}")
    return cls(**kwargs)


def describe(v: Any) -> str:
    """What a wrong value is, for an error message (its type, and a short form of it)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return f"the boolean {'true' if v else 'false'}"
    if isinstance(v, int):
        text = str(v) if v.bit_length() < 128 else f"an integer of {v.bit_length()} bits"
        return f"the integer {text}"
    if isinstance(v, float):
        return f"the number {v!r}"
    if isinstance(v, str):
        shown = v if len(v) <= 60 else v[:60] + f"... ({len(v)} characters)"
        return f"the string {shown!r}"
    if isinstance(v, list | tuple):
        return f"a list of {len(v)} item{'' if len(v) == 1 else 's'}"
    if isinstance(v, Mapping):
        return f"an object with {len(v)} key{'' if len(v) == 1 else 's'}"
    return f"a value of type {type(v).__name__}"


def typed(tp: Any, v: Any, path: str) -> Any:
    """``v`` (read from JSON) as a value of type ``tp``: lists become tuples and objects become
    records; ``ValueError`` naming ``path`` when it is not one."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if v is None and type(None) in args:
            return None
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return typed(members[0], v, path)
        return v  # no record field has a union of several types
    if tp is Any:
        return v
    if v is None:
        raise ValueError(f"{path}: expected {_expected(tp)}, got null")
    if tp is bool:
        if not isinstance(v, bool):
            raise ValueError(f"{path}: expected a boolean, got {describe(v)}")
        return v
    if tp is int:
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_COUNT:
            raise ValueError(f"{path}: expected {_expected(tp)}, got {describe(v)}")
        return v
    if tp is float:
        ok = isinstance(v, int | float) and not isinstance(v, bool)
        if not ok or not math.isfinite(v) or v < 0:
            raise ValueError(f"{path}: expected {_expected(tp)}, got {describe(v)}")
        return float(v)
    if tp is str:
        if not isinstance(v, str):
            raise ValueError(f"{path}: expected a string, got {describe(v)}")
        return v
    if origin is tuple:
        if not isinstance(v, list | tuple):
            raise ValueError(f"{path}: expected a list, got {describe(v)}")
        args = typing.get_args(tp)
        item = args[0] if args else Any
        return tuple(typed(item, x, f"{path}[{i}]") for i, x in enumerate(v))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return from_dict(tp, v, path)
    if origin is not None and issubclass(origin, Mapping):
        if not isinstance(v, Mapping):
            raise ValueError(f"{path}: expected an object, got {describe(v)}")
        key_type, value_type = typing.get_args(tp) or (Any, Any)
        out = {}
        for k, x in v.items():
            typed(key_type, k, f"{path} key")
            out[k] = typed(value_type, x, f"{path}[{_key(k)}]")
        return out
    return v


def _key(k: Any) -> str:
    """A map key in a field's path, shortened."""
    text = repr(k)
    return text if len(text) <= 40 else f"{text[:40]}...({len(text)} characters)"


def _expected(tp: Any) -> str:
    if tp is int:
        return f"a count (an integer from 0 to {MAX_COUNT})"
    if tp is float:
        return "a duration (a finite number, 0 or more)"
    if tp is str:
        return "a string"
    if tp is bool:
        return "a boolean"
    if typing.get_origin(tp) is tuple:
        return "a list"
    return "an object"


def _encode_field(record: Any, name: str) -> Any:
    """`encode_value` of a value field; a value Python cannot hold is kept as its preview."""
    try:
        return encode_value(getattr(record, name))
    except LispError:
        raw = record.__dict__[name]
        return {"$repr": raw.preview() if isinstance(raw, LazyValue) else repr(raw)}


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return v.to_dict() if hasattr(v, "to_dict") else to_dict(v)
    if isinstance(v, Mapping):
        return {k: _plain(x) for k, x in v.items()}
    return v


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


# --- JSON codec for PTC values ------------------------------------------------------------
# Plain JSON cannot tell a keyword from a string, a set from a vector or keep non-string map
# keys, so those are tagged with a single "$..." key. Replaying tool results on resume relies on it.


def _is_keyword(value: Any) -> bool:
    return isinstance(value, str) and type(value).__name__ == "Keyword"


def encode_value(value: Any) -> Any:
    """Turn a converted PTC value into JSON-safe data (reversible by :func:`decode_value`)."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": repr(value)}
    if _is_keyword(value):
        return {"$kw": str(value)}
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return [encode_value(v) for v in value]
    if isinstance(value, set | frozenset):
        return {"$set": [encode_value(v) for v in value]}
    if isinstance(value, Mapping):
        plain = all(isinstance(k, str) and not _is_keyword(k) for k in value)
        tagged_like = len(value) == 1 and any(str(k).startswith("$") for k in value)
        if plain and not tagged_like:
            return {k: encode_value(v) for k, v in value.items()}
        return {"$map": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    return {"$repr": repr(value)}


class _BadValue(Exception):
    """A malformed stored value; ``trail`` is where in it, innermost last."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.trail: list[str] = []


def decode_value(data: Any, path: str = "value") -> Any:
    """Inverse of :func:`encode_value`; untaggable objects come back as their ``repr`` text.

    ``ValueError`` naming ``path`` (and where in the value) for a malformed tag, or for data
    nested deeper than Python's recursion allows."""
    try:
        return _decode(data)
    except _BadValue as e:
        raise ValueError(f"{path}{''.join(reversed(e.trail))}: {e.reason}") from None
    except RecursionError:
        raise ValueError(f"{path}: the value is nested too deeply to load") from None


def _decode(data: Any) -> Any:
    if isinstance(data, list):
        out = []
        for i, v in enumerate(data):
            try:
                out.append(_decode(v))
            except _BadValue as e:
                e.trail.append(f"[{i}]")
                raise
        return out
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        ((tag, inner),) = data.items()
        if tag == "$kw":
            if not isinstance(inner, str):
                raise _BadValue(f"a keyword ($kw) holds a string, not {describe(inner)}")
            from ptc import Keyword  # late import: ptc imports this module

            return Keyword(inner)
        if tag == "$set":
            if not isinstance(inner, list):
                raise _BadValue(f"a set ($set) holds a list, not {describe(inner)}")
            members = _decode(inner)
            return {_hashable(v, "$set member") for v in members}
        if tag == "$map":
            if not isinstance(inner, list) or not all(
                isinstance(kv, list) and len(kv) == 2 for kv in inner
            ):
                raise _BadValue(f"a map ($map) holds [key, value] pairs, not {describe(inner)}")
            pairs = _decode(inner)
            return {_hashable(k, "$map key"): v for k, v in pairs}
        if tag == "$float":
            if inner not in ("inf", "-inf", "nan"):
                raise _BadValue(f"a $float is inf, -inf or nan, not {describe(inner)}")
            return float(inner)
        if tag == "$repr":
            if not isinstance(inner, str):
                raise _BadValue(f"a $repr holds a string, not {describe(inner)}")
            return inner
    out_map = {}
    for k, v in data.items():
        try:
            out_map[k] = _decode(v)
        except _BadValue as e:
            e.trail.append(f"[{_key(k)}]")
            raise
    return out_map


def _hashable(value: Any, what: str) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v, what) for v in value)
    if isinstance(value, set):
        return frozenset(value)  # a set inside a set (or as a key) is frozen in Python
    if isinstance(value, dict):
        raise _BadValue(f"a {what} cannot be a map object (maps as keys are stored as pairs)")
    return value
