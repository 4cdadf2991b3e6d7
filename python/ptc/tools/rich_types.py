"""Tools as people write them: rich parameter and return types, and names for any callable.

- **In**: arguments are validated and converted to the annotated type before the tool runs —
  Pydantic models (``model_validate``), dataclasses, ``TypedDict`` (keys checked), ``Enum``,
  ``Literal``, ``Optional``, ``date``/``datetime`` (ISO text), and lists/dicts of those. A value
  that does not fit is a tool error that says which argument, where in it, and what was
  expected, before the tool is called.
- **Out**: a returned model, dataclass, enum, date or datetime becomes plain data (maps, lists,
  strings) the program can use.
- **Names**: ``functools.partial`` objects, bound methods and callable objects are named after
  what they call (``SearchOrders()`` -> ``search-orders``); a name the language cannot call is
  refused when the tool is declared.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import functools
import inspect
import re
import sys
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from ptc.errors import PtcError

#: What `tool/NAME` can spell: the reader's symbol characters, starting with a letter.
_TOOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9+\-*<>=?!_%.&#']*\Z")


def check_tool_name(name: Any) -> str:
    """``name`` if a program can call ``(tool/name ...)``, else a TypeError/ValueError saying
    why not."""
    if not isinstance(name, str):
        raise TypeError(f"tool names must be strings, got {type(name).__name__} {name!r}")
    if not name:
        raise ValueError("a tool name cannot be empty")
    if not _TOOL_NAME.match(name):
        bad = next((c for c in name if not re.match(r"[A-Za-z0-9+\-*<>=?!_%.&#']", c)), None)
        if bad is not None:
            why = f"{bad!r} cannot appear in a symbol"
        else:
            why = "it must start with a letter"
        raise ValueError(
            f"tool name {name!r} cannot be called as (tool/{name} ...): {why}; "
            "use letters, digits and - (e.g. 'search-orders')"
        )
    return name


def _kebab(name: str) -> str:
    """``SearchOrders`` / ``search_orders`` -> ``search-orders``."""
    name = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name)
    return (
        name.replace("_", "-").lower() if any(c.isupper() for c in name) else name.replace("_", "-")
    )


def callable_name(fn: Any) -> str | None:
    """The name a callable goes by: a function's or method's ``__name__``, the wrapped
    function of a ``functools.partial``, a callable object's class; ``None`` for a lambda."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__name__", None)
    if isinstance(name, str):
        return None if name == "<lambda>" else name
    if callable(fn):
        return _kebab(type(fn).__name__)
    return None


def type_hints(fn: Any) -> dict[str, Any]:
    """The resolved annotations of what ``fn`` calls: through ``__wrapped__`` and partials, and
    of ``__call__`` for a callable object; ``{}`` when they cannot be resolved."""
    fn = inspect.unwrap(fn)
    while isinstance(fn, functools.partial):
        fn = inspect.unwrap(fn.func)
    target = fn
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) and callable(fn):
        target = getattr(type(fn), "__call__", fn)  # noqa: B004
    try:
        return typing.get_type_hints(target)
    except Exception:  # unresolvable forward references
        return {}


# --- arguments in --------------------------------------------------------------------------


class ToolValueError(PtcError, TypeError):
    """An argument does not fit its annotation (``ptc_hint`` is shown to the LLM)."""

    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.ptc_hint = hint


def _is_model(t: Any) -> bool:
    return isinstance(t, type) and hasattr(t, "model_validate") and hasattr(t, "model_fields")


def is_rich(t: Any) -> bool:
    """Whether values of annotation ``t`` need converting (not plain data already)."""
    if t is Any or t is inspect.Parameter.empty:
        return False
    origin = typing.get_origin(t)
    if origin is not None:
        return origin is typing.Literal or any(is_rich(a) for a in typing.get_args(t))
    if isinstance(t, type):
        return (
            _is_model(t)
            or dataclasses.is_dataclass(t)
            or issubclass(t, enum.Enum | dt.date)
            or typing.is_typeddict(t)
        )
    return False


def _text(value: Any) -> str:
    return repr(value) if not isinstance(value, str) else f'"{value}"'


def convert_in(value: Any, t: Any, where: str) -> Any:
    """``value`` (plain data from the program) as annotation ``t`` asks."""
    if t is Any or t is inspect.Parameter.empty:
        return value
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for a in args:
            if a is type(None):
                continue
            try:
                return convert_in(value, a, where)
            except ToolValueError as e:
                errors.append(str(e))
        raise errors_of(errors, where, value)
    if origin is typing.Literal:
        if value in args:
            return value
        allowed = ", ".join(_text(a) for a in args)
        raise _wrong(where, f"one of {allowed}", value)
    if origin in (list, tuple, set, frozenset) or (
        isinstance(origin, type) and origin.__name__ in ("Sequence", "Iterable")
    ):
        if not isinstance(value, list | tuple | set | frozenset):
            raise _wrong(where, "a list", value)
        item = args[0] if args else Any
        items = [convert_in(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return (
            tuple(items) if origin is tuple else set(items) if origin in (set, frozenset) else items
        )
    if origin in (dict, Mapping) or (isinstance(origin, type) and origin.__name__ == "Mapping"):
        if not isinstance(value, Mapping):
            raise _wrong(where, "a map", value)
        vt = args[1] if len(args) == 2 else Any
        return {str(k): convert_in(v, vt, f"{where}.{k}") for k, v in value.items()}
    if not isinstance(t, type):
        return value
    if _is_model(t):
        if isinstance(value, t):
            return value
        if not isinstance(value, Mapping):
            raise _wrong(where, f"a map for {t.__name__}", value)
        try:
            model: Any = t
            return model.model_validate({_py_key(k): v for k, v in value.items()})
        except Exception as exc:  # pydantic.ValidationError, without importing pydantic
            raise _model_error(exc, where, t) from None
    if dataclasses.is_dataclass(t):
        if isinstance(value, t):
            return value
        if not isinstance(value, Mapping):
            raise _wrong(where, f"a map for {t.__name__}", value)
        return _dataclass_in(t, value, where)
    if typing.is_typeddict(t):
        if not isinstance(value, Mapping):
            raise _wrong(where, "a map", value)
        hints = typing.get_type_hints(t)
        given = {_py_key(k): v for k, v in value.items()}
        missing = sorted(t.__required_keys__ - set(given))  # type: ignore[attr-defined]
        if missing:
            raise _wrong(where, f"a map with {', '.join(':' + m for m in missing)}", value)
        return {k: convert_in(v, hints.get(k, Any), f"{where}.{k}") for k, v in given.items()}
    if issubclass(t, enum.Enum):
        for member in t:
            if value == member.value or value == member.name:
                return member
        allowed = ", ".join(_text(m.value) for m in t)
        raise _wrong(where, f"one of {allowed}", value)
    if issubclass(t, dt.datetime):
        if isinstance(value, dt.datetime):
            return value
        try:
            return dt.datetime.fromisoformat(str(value)) if isinstance(value, str) else _no()
        except ValueError:
            raise _wrong(where, 'an ISO date-time string ("2024-05-01T12:00:00")', value) from None
    if issubclass(t, dt.date):
        if isinstance(value, dt.date):
            return value
        try:
            return dt.date.fromisoformat(value) if isinstance(value, str) else _no()
        except ValueError:
            raise _wrong(where, 'an ISO date string ("2024-05-01")', value) from None
    return value


def _no() -> Any:
    raise ValueError


def _py_key(k: Any) -> str:
    """Map keys from a program (``:zip-code``) as Python field names (``zip_code``)."""
    return str(k).replace("-", "_")


def _dataclass_in(t: type, value: Mapping[str, Any], where: str) -> Any:
    hints = typing.get_type_hints(t)
    fields = {f.name: f for f in dataclasses.fields(t) if f.init}
    given = {_py_key(k): v for k, v in value.items()}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise _wrong(where, f"a map with the keys of {t.__name__}", value, f"unknown {unknown}")
    missing = [
        n
        for n, f in fields.items()
        if n not in given
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        need = ", ".join(":" + m.replace("_", "-") for m in missing)
        raise _wrong(where, f"a map with {need}", value)
    return t(**{k: convert_in(v, hints.get(k, Any), f"{where}.{k}") for k, v in given.items()})


def _wrong(where: str, expected: str, value: Any, extra: str = "") -> ToolValueError:
    shown = _text(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    tail = f" ({extra})" if extra else ""
    return ToolValueError(
        f"{where}: expected {expected}, got {shown}{tail}", f"pass {where} as {expected}"
    )


def errors_of(errors: list[str], where: str, value: Any) -> ToolValueError:
    if len(errors) == 1:
        msg = errors[0]
        return ToolValueError(msg, msg.split(": expected ", 1)[-1])
    return _wrong(where, "a value of one of the allowed types", value)


def _model_error(exc: Exception, where: str, model: type) -> ToolValueError:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = []
        for e in errors()[:3]:
            loc = ".".join(str(x).replace("_", "-") for x in e.get("loc", ()))
            parts.append(
                f"{where}.{loc}: {e.get('msg', '')}" if loc else f"{where}: {e.get('msg')}"
            )
        msg = "; ".join(parts)
    else:
        msg = f"{where}: {exc}"
    return ToolValueError(msg, f"pass {where} as a map with the fields of {model.__name__}")


class ArgumentTypes:
    """Converts a tool's arguments to its annotated parameter types (only those that need it)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.positional: list[tuple[str, Any]] = []
        self.by_name: dict[str, Any] = {}
        self.var_positional: Any = None
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):  # no signature: nothing to convert
            return
        hints = type_hints(fn)
        for p in sig.parameters.values():
            t = hints.get(p.name, Any)
            if p.kind is p.VAR_POSITIONAL:
                self.var_positional = t if is_rich(t) else None
            elif p.kind is not p.VAR_KEYWORD:
                rich = t if is_rich(t) else None
                if p.kind is not p.KEYWORD_ONLY:
                    self.positional.append((p.name, rich))
                if rich is not None:
                    self.by_name[p.name] = rich

    @property
    def needed(self) -> bool:
        return bool(self.by_name) or self.var_positional is not None

    def args(self, values: list[Any]) -> list[Any]:
        out = []
        for i, v in enumerate(values):
            if i < len(self.positional):
                name, t = self.positional[i]
                out.append(v if t is None else convert_in(v, t, name.replace("_", "-")))
            elif self.var_positional is not None:
                out.append(convert_in(v, self.var_positional, f"argument {i + 1}"))
            else:
                out.append(v)
        return out

    def kwargs(self, values: Mapping[str, Any]) -> dict[str, Any]:
        return {
            k: convert_in(v, self.by_name[k], k.replace("_", "-")) if k in self.by_name else v
            for k, v in values.items()
        }


# --- results out ---------------------------------------------------------------------------

_PLAIN = (str, int, float, bool, type(None))


#: How deeply a result holding dates, enums, models or dataclasses may nest (such results are
#: converted here, in Python, whose own recursion limit is 1,000 frames).
MAX_RESULT_DEPTH = 200

_Where = tuple[Any, Any] | None  # (parent, key): the path to a value, spelled out on error


def _spell(where: _Where) -> str:
    keys = []
    while where is not None:
        where, key = where
        keys.append(key)
    out = "result" + "".join(
        f"[{key}]" if isinstance(key, int) else f".{key}" for key in reversed(keys)
    )
    return out if len(out) <= 160 else f"{out[:80]}...{out[-60:]} ({len(keys)} levels)"


def to_data(value: Any) -> Any:
    """A tool's result as data the program can use (models, dataclasses, enums and dates become
    maps, their values and ISO text); plain data is returned as it is. A result that contains
    itself, or that holds such values nested deeper than :data:`MAX_RESULT_DEPTH`, raises
    ``ValueError`` naming where."""
    if isinstance(value, _PLAIN) or not _needs(value):
        return value  # the core converts it (and names any cycle or depth problem)
    return _to_data(value, None, set(), 0)


def _to_data(value: Any, where: _Where, active: set[int], depth: int) -> Any:
    if isinstance(value, _PLAIN):
        return value
    if depth > MAX_RESULT_DEPTH:
        raise ValueError(
            f"{_spell(where)}: a tool's result holding dates, enums, models or dataclasses "
            f"may nest at most {MAX_RESULT_DEPTH} levels"
        )
    if isinstance(value, enum.Enum):
        return _to_data(value.value, where, active, depth + 1)
    if isinstance(value, dt.date):  # datetime included
        return value.isoformat()
    if id(value) in active:
        raise ValueError(
            f"{_spell(where)}: this {type(value).__name__} contains itself (a cycle); a tool's "
            "result must be a tree"
        )
    active.add(id(value))
    try:
        d = depth + 1
        if _is_model(type(value)):
            return _to_data(value.model_dump(), where, active, d)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {
                f.name: _to_data(getattr(value, f.name), (where, f.name), active, d)
                for f in dataclasses.fields(value)
            }
        if isinstance(value, Mapping):
            return {k: _to_data(v, (where, k), active, d) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [_to_data(v, (where, i), active, d) for i, v in enumerate(value)]
        if isinstance(value, set | frozenset):
            return {_to_data(v, (where, "{member}"), active, d) for v in value}
        return value
    finally:
        active.discard(id(value))


_END = object()


def _needs(value: Any) -> bool:
    """Whether anything in ``value`` is something to_data changes, looked for before copying:
    without recursion (a stack of iterators, O(depth) memory), a container referenced from
    more than one place visited once (so shared and cyclic data end), and not past
    :data:`MAX_RESULT_DEPTH` levels, where to_data would refuse anyway and the core reports
    deeper plain data by its path."""
    stack: list[Any] = [iter((value,))]
    seen: set[int] = set()
    while stack:
        v = next(stack[-1], _END)
        if v is _END:
            stack.pop()
            continue
        if isinstance(v, _PLAIN):
            continue
        if isinstance(v, enum.Enum | dt.date) or _is_model(type(v)):
            return True
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return True
        if len(stack) > MAX_RESULT_DEPTH:
            continue
        if isinstance(v, Mapping):
            items: Any = v.values()
        elif isinstance(v, list | tuple | set | frozenset):
            items = v
        else:
            continue
        # held by its parent, by `v` and by the call: more means it is shared (or a cycle)
        if sys.getrefcount(v) > 3:
            if id(v) in seen:
                continue
            seen.add(id(v))
        stack.append(iter(items))
    return False
