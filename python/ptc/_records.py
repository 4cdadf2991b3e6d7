"""One codec for the frozen dataclass records that runs and checkpoints store as JSON, and for
the PTC values in them: fields become keys in field order, tuples become lists, nested records
become dicts, and reading back turns lists into tuples and dicts into records as the field's
type says. A missing key takes the field's default (so older stored runs still load); unknown
keys are ignored. Fields a record names in ``__value_fields__`` hold PTC values: they go
through :func:`encode_value` (a lazy core value is converted then, or kept as its preview when
Python cannot hold it) and come back through :func:`decode_value`."""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, Self, TypeVar

from ._core import LazyValue
from .errors import LispError

R = TypeVar("R")


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


def from_dict(cls: type[R], d: Mapping[str, Any]) -> R:
    """A record of ``cls`` from what :func:`to_dict` wrote."""
    hints = _hints(typing.cast(type, cls))
    values = getattr(cls, "__value_fields__", ())
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in d:
            v = d[f.name]
            kwargs[f.name] = _typed(hints[f.name], decode_value(v) if f.name in values else v)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise KeyError(f.name)
    return cls(**kwargs)


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


def _typed(tp: Any, v: Any) -> Any:
    if v is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        return _typed(members[0], v) if len(members) == 1 else v
    if origin is tuple:
        args = typing.get_args(tp)
        item = args[0] if args else Any
        return tuple(_typed(item, x) for x in v)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(v, Mapping):
        read = getattr(tp, "from_dict", None)
        return read(v) if read is not None else from_dict(tp, v)
    if origin is not None and isinstance(v, Mapping):
        return dict(v)
    return v


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


def decode_value(data: Any) -> Any:
    """Inverse of :func:`encode_value`; untaggable objects come back as their ``repr`` text."""
    if isinstance(data, list):
        return [decode_value(v) for v in data]
    if not isinstance(data, dict):
        return data
    if len(data) == 1:
        ((tag, inner),) = data.items()
        if tag == "$kw":
            from ptc import Keyword  # late import: ptc imports this module

            return Keyword(inner)
        if tag == "$set":
            return {_hashable(decode_value(v)) for v in inner}
        if tag == "$map":
            return {_hashable(decode_value(k)): decode_value(v) for k, v in inner}
        if tag == "$float":
            return float(inner)
        if tag == "$repr":
            return inner
    return {k: decode_value(v) for k, v in data.items()}


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value
