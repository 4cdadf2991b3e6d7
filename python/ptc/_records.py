"""One codec for the frozen dataclass records that runs and checkpoints store as JSON: fields
become keys in field order, tuples become lists, nested records become dicts, and reading back
turns lists into tuples and dicts into records as the field's type says. A missing key takes
the field's default (so older stored runs still load); unknown keys are ignored."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

R = TypeVar("R")


def to_dict(record: Any) -> dict[str, Any]:
    """The record's fields as JSON-ready values, in field order."""
    return {f.name: _plain(getattr(record, f.name)) for f in dataclasses.fields(record)}


def from_dict(cls: type[R], d: Mapping[str, Any]) -> R:
    """A record of ``cls`` from what :func:`to_dict` wrote."""
    hints = _hints(typing.cast(type, cls))
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in d:
            kwargs[f.name] = _typed(hints[f.name], d[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise KeyError(f.name)
    return cls(**kwargs)


def _plain(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return to_dict(v)
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
        return from_dict(tp, v)
    if origin is not None and isinstance(v, Mapping):
        return dict(v)
    return v
