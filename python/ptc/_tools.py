"""Adapting Python callables to PTC-Lisp tool calls (LANGUAGE.md §8.2)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

ToolsArg = Mapping[str, Callable[..., Any]] | Sequence[Callable[..., Any]] | None


def lisp_name(fn: Callable[..., Any]) -> str:
    """The tool name of a callable in a list: its ``__name__`` with ``_`` turned into ``-``."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str) or name == "<lambda>":
        raise TypeError(f"tool {fn!r} has no usable name; pass tools as a dict of name -> callable")
    return name.replace("_", "-")


class ToolAdapter:
    """Calls a Python function the way a PTC-Lisp call asks for.

    The core calls ``adapter(positional, named)``: ``named`` is a dict when the Lisp call had a
    single map or keyword/value pairs (``(tool/f {:city "Oslo"})``), else ``None``. Named
    arguments become keyword arguments when the function takes them, otherwise the function
    receives the dict as its one argument.
    """

    __slots__ = ("_kw_names", "_single_positional", "_var_kw", "fn", "name")

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"tool {name!r} is not callable: {fn!r}")
        self.name = name
        self.fn = fn
        self._var_kw = False
        self._kw_names: frozenset[str] = frozenset()
        self._single_positional = False
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return
        params = list(sig.parameters.values())
        kinds = inspect.Parameter
        self._var_kw = any(p.kind is kinds.VAR_KEYWORD for p in params)
        self._kw_names = frozenset(
            p.name for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)
        )
        positional = [
            p for p in params if p.kind in (kinds.POSITIONAL_ONLY, kinds.POSITIONAL_OR_KEYWORD)
        ]
        self._single_positional = len(positional) == 1 and not self._var_kw

    def _takes_kwargs(self, named: dict[str, Any]) -> bool:
        if self._var_kw:
            return True
        if named and all(k in self._kw_names for k in named):
            # one parameter whose name is not a key: the map is the argument
            return True
        return not self._single_positional

    def __call__(self, positional: list[Any], named: dict[str, Any] | None) -> Any:
        if named is None:
            return self.fn(*positional)
        if not named:
            return self.fn()
        if self._takes_kwargs(named):
            return self.fn(**named)
        return self.fn(named)


def normalize_tools(tools: ToolsArg) -> dict[str, Callable[..., Any]]:
    """Tools as a dict of Lisp name -> callable, in the order given."""
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        out: dict[str, Callable[..., Any]] = {}
        for name, fn in tools.items():
            if not isinstance(name, str) or not name:
                raise TypeError(f"tool names must be non-empty strings, got {name!r}")
            if not callable(fn):
                raise TypeError(f"tool {name!r} is not callable: {fn!r}")
            out[name] = fn
        return out
    if isinstance(tools, (str, bytes)):
        raise TypeError("tools must be a dict of name -> callable or a list of callables")
    out = {}
    for fn in tools:
        out[lisp_name(fn)] = fn
    return out
