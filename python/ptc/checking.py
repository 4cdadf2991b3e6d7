"""Checking a program before it runs (issue 31): every written tool call against the session's
tools and their signatures, every ``data/`` name against the input. Nothing is evaluated and no
tool is called.

What the core reads from the source (``_core._tool_sites``): the parse or analysis error, each
written call ``(tool/name args...)`` with the arguments the source shows as literals, the tools
used as values, and the ``data/`` names. This module judges them against the host's
declarations, so the messages say what a signature says.
"""

from __future__ import annotations

import difflib
import functools
import inspect
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from . import _core
from ._keyword import Keyword
from .errors import ArityError, LispError, LispTypeError, UnknownTool, error_from_core
from .limits import LimitsArg, limits_dict
from .planning import UNKNOWN, Plan, _has_unknown, _plan
from .tools.declare import AgentTool, Tool, ToolsArg, tool_entries
from .tools.signature import (
    Param,
    Signature,
    check_value,
    parse_signature,
    signature_from_callable,
)


@dataclass(frozen=True)
class CallSite:
    """One written tool call: the tool, the arguments as far as the source shows them
    (:data:`UNKNOWN` where not), where it is, and whether it may not run (``conditional``:
    under ``if``/``when``/``and``/..., or in a function) or may run several times
    (``repeats``: in a function, ``loop`` or ``doseq``)."""

    tool: str
    args: tuple[Any, ...]
    line: int
    column: int
    conditional: bool
    repeats: bool


@dataclass(frozen=True)
class Check:
    """What :func:`check` found: ``ok`` when there are no errors; ``errors`` are LispErrors
    in source order (all of them), ``warnings`` notes that do not stop a run (a ``data/``
    name not in the input is nil), ``calls`` the written tool calls, ``plan`` what the program
    can call (None when it cannot be read). ``calls`` and ``plan`` are built when first read."""

    errors: tuple[LispError, ...] = ()
    warnings: tuple[str, ...] = ()
    _raw_calls: Any = field(default=(), repr=False, compare=False)
    _raw_plan: Any = field(default=None, repr=False, compare=False)
    _effects: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return not self.errors

    @functools.cached_property
    def calls(self) -> tuple[CallSite, ...]:
        """Each written tool call, in source order."""
        return tuple(CallSite(t, a, line, col, c, r) for t, a, line, col, c, r in self._raw_calls)

    @functools.cached_property
    def plan(self) -> Plan | None:
        """Which tools the program can call, from where, with what and how often."""
        return _plan(self._raw_plan, self._effects)

    def feedback(self) -> str:
        """The errors as the LLM reads them, one after another."""
        return "\n\n".join(e.feedback() for e in self.errors)


def _near(name: str, names: Sequence[str]) -> str | None:
    found = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return found[0] if found else None


def _unknown_tool(name: str, names: Sequence[str], line: int | None, col: int | None) -> LispError:
    """The error a run reports for a call of a tool that does not exist (the core's words)."""
    message, hint = _core._unknown_tool(name, list(names))
    return UnknownTool("unknown_tool", message, hint, line, col, None)


#: Parameter kinds whose calls the checks do not judge: a rest of arguments, named-only or
#: positional-only parameters, extra named arguments. Only the tool's existence is checked.
_OPEN_KINDS = (
    inspect.Parameter.VAR_POSITIONAL,
    inspect.Parameter.VAR_KEYWORD,
    inspect.Parameter.KEYWORD_ONLY,
    inspect.Parameter.POSITIONAL_ONLY,
)


def _judge(tool: Tool | AgentTool | None) -> _Judge | None:
    """The judge of a tool's calls, or None when its calls are not judged (an agent's: its
    arguments are its data; a function that takes any arguments). Read once per Tool and kept on
    it (a Tool is frozen: its function and signature do not change)."""
    if not isinstance(tool, Tool):
        return None
    cached = tool.__dict__.get("_judge", _UNSET)
    if cached is _UNSET:
        # a plain function given as a tool is wrapped in a new Tool on every check: the
        # function keeps the judge too (per explicit signature)
        try:
            by_signature = _JUDGES.setdefault(tool.fn, {})
        except TypeError:  # not weakly referable (a builtin): read each time
            by_signature = {}
        cached = by_signature.get(tool.signature, _UNSET)
        if cached is _UNSET:
            sig = _read_signature(tool)
            cached = _Judge(sig) if sig is not None and sig.params is not None else None
            by_signature[tool.signature] = cached
        object.__setattr__(tool, "_judge", cached)
    return cast("_Judge | None", cached)


_UNSET = object()
_JUDGES: weakref.WeakKeyDictionary[Any, dict[str | None, _Judge | None]] = (
    weakref.WeakKeyDictionary()
)


def _read_signature(tool: Tool) -> Signature | None:
    try:
        sig = parse_signature(tool.signature) if tool.signature else None
        if sig is not None and sig.params is not None:
            return sig
        params = inspect.signature(tool.fn).parameters.values()
        if any(p.kind in _OPEN_KINDS for p in params):
            return None
        return Signature(signature_from_callable(tool.fn).params, ANY_RETURN)
    except (ValueError, TypeError):
        return None


ANY_RETURN = parse_signature(":any").returns


#: Types a literal argument of a primitive signature type surely has (exact types, as the core
#: gives them); another type goes to ``check_value``, which says what is wrong.
_PLAIN: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "keyword": (Keyword, str),
    "int": (int,),
    "float": (int, float),
    "number": (int, float),
    "bool": (bool,),
    "map": (dict,),
    "list": (list, tuple),
    "set": (set, frozenset),
}


class _Judge:
    """What judging calls against one signature needs, worked out once per tool."""

    __slots__ = ("by_name", "map_positional", "names", "params", "plain", "required")

    def __init__(self, sig: Signature) -> None:
        self.params = sig.params or ()
        self.by_name = {p.name: p for p in self.params}
        self.names = ", ".join(f":{n}" for n in self.by_name) or "none"
        self.required = sum(1 for p in self.params if not p.type.optional)
        # one map to a tool whose only parameter takes a map is a positional argument
        self.map_positional = len(self.params) == 1 and self.params[0].type.kind in (
            "map",
            "fields",
            "any",
        )
        self.plain = {
            p.name: (None if p.type.kind == "any" else _PLAIN.get(p.type.kind, ()))
            for p in self.params
        }

    def hint(self) -> str:  # written out only when an error shows it
        shown = " ".join(str(p) for p in self.params)
        return f"its signature: ({shown})" if self.params else "it takes no arguments"

    def problem(self, p: Param, value: Any) -> str | None:
        """What is wrong with a literal argument, None when nothing is (or it is not known)."""
        if value is UNKNOWN:
            return None
        plain = self.plain[p.name]
        kind = type(value)
        if plain is None or kind in plain:
            return None
        if (kind is dict or kind is list or kind is tuple) and _has_unknown(value):
            return None
        if kind is dict and p.type.kind == "fields":
            known = {name for name, _ in p.type.fields}
            for key in value:
                if key not in known:
                    listed = ", ".join(f":{n}" for n, _ in p.type.fields)
                    return f"{p.name}: unknown key :{key}; its keys: {listed}"
        return check_value(value, p.type, p.name)

    def errors(self, tool: str, args: Any, line: int, col: int) -> list[LispError]:
        """The errors of one written call ``(tool/name args...)``."""
        params = self.params
        n = len(args)
        named: dict[str, Any] | None = None
        if n == 1 and type(args[0]) is dict and not self.map_positional:
            if all(type(k) is Keyword for k in args[0]):
                named = {str(k): v for k, v in args[0].items()}
        elif n and n % 2 == 0 and all(type(k) is Keyword for k in args[::2]):
            named = {str(k): v for k, v in zip(args[::2], args[1::2], strict=True)}
        out: list[LispError] = []
        if named is None:
            if n > len(params) or n < self.required:
                count = (
                    str(len(params))
                    if self.required == len(params)
                    else f"{self.required} to {len(params)}"
                )
                message = (
                    f"tool/{tool} takes {count} argument{'s' if len(params) != 1 else ''}, got {n}"
                )
                return [ArityError("arity_error", message, self.hint(), line, col, None)]
            for p, value in zip(params, args, strict=False):
                problem = self.problem(p, value)
                if problem:
                    out.append(_type_error(tool, line, col, problem, value, self.hint()))
            return out
        for key, value in named.items():
            found = self.by_name.get(key)
            if found is None:
                message = f"tool/{tool} has no argument :{key}; its arguments: {self.names}"
                out.append(ArityError("arity_error", message, self.hint(), line, col, None))
                continue
            problem = self.problem(found, value)
            if problem:
                out.append(_type_error(tool, line, col, problem, value, self.hint()))
        for p in params:
            if p.name not in named and not p.type.optional:
                message = f"tool/{tool} needs :{p.name} ({p.type})"
                out.append(ArityError("arity_error", message, self.hint(), line, col, None))
        return out


def _type_error(tool: str, line: int, col: int, problem: str, value: Any, hint: str) -> LispError:
    # the argument itself is shown as the core shows values (`string "x"`, not `str`)
    head, sep, got = problem.rpartition(": expected ")
    if sep and got.endswith(f", got {type(value).__name__}"):
        expected = got[: -len(f", got {type(value).__name__}")]
        shown = _core.to_clojure(value, 3, 40, False)[0]
        problem = f"{head}: expected {expected}, got {_core.type_label(value)} {shown}"
    return LispTypeError("type_error", f"tool/{tool} argument {problem}", hint, line, col, None)


def check_with(
    source: str,
    tools: Mapping[str, Tool | AgentTool | None],
    data_keys: Sequence[str] | None,
    limits: LimitsArg = None,
    records: Sequence[tuple[str, Sequence[str]]] = (),
    sites: Any = None,
    lengths: Mapping[str, int | None] | None = None,
) -> Check:
    """Checks ``source`` against tools (by Lisp name; an agent's calls, or None's, are checked
    only to exist) and the input's keys (None: not known). ``records``
    gives, per input that is a list of records, the keys its records have: a literal key read
    in the program that none has, but one is near, is a warning. ``sites`` is what the core
    read of the program when the caller asked it (a Session asks with its definitions); else it
    is read here. Used by :func:`check`, ``Session.check`` and the agent loop."""
    if not isinstance(source, str):
        raise TypeError(f"check takes the program as a str, got {type(source).__name__}")
    if sites is None:
        lens = dict(lengths) if lengths is not None else None
        sites = _core._tool_sites(
            source, UNKNOWN, limits_dict(limits), list(tools), lens, bool(records)
        )
    # a parse error alone, or the analysis error of each form that has one (the other forms
    # are still checked)
    read_errors, raw_calls, tool_values, data, keys, raw_plan = sites
    names = list(tools)
    errors: list[LispError] = [error_from_core(e) for e in read_errors]
    for raw in raw_calls:
        tool = raw[0]
        if tool not in tools:
            errors.append(_unknown_tool(tool, names, raw[2], raw[3]))
            continue
        judge = _judge(tools[tool])
        if judge is not None:
            errors.extend(judge.errors(tool, raw[1], raw[2], raw[3]))
    for name in dict.fromkeys(tool_values):
        if name not in tools:
            errors.append(_unknown_tool(name, names, None, None))
    errors.sort(key=lambda e: (e.line is None, e.line or 0, e.column or 0))
    warnings: list[str] = []
    if data_keys is not None:
        present = list(data_keys)
        for name in data:
            if name in present:
                continue
            if not present:
                warnings.append(f"data/{name} is nil: this run has no input data")
                continue
            near = _near(name, present)
            warnings.append(
                f"data/{name} is nil: there is no such input; did you mean data/{near}?"
                if near
                else f"data/{name} is nil: there is no such input; inputs: "
                + ", ".join(f"data/{k}" for k in present[:8])
            )
    warnings.extend(_key_warnings(keys, records))
    effects = {name: t.effect for name, t in tools.items() if t is not None}
    return Check(tuple(errors), tuple(warnings), raw_calls, raw_plan, effects)


def _key_warnings(
    keys: Sequence[tuple[str, int, int]], records: Sequence[tuple[str, Sequence[str]]]
) -> list[str]:
    """A key read that no record of any input has, when one input's records have a key near
    it (`(:totl o)` over records with `:total`); keys far from every record key may be read
    from other values (tool results, the program's own maps) and are not warned about."""
    if not records:
        return []
    known = {k for _, ks in records for k in ks}
    out: list[str] = []
    seen: set[str] = set()
    for key, line, col in sorted(keys, key=lambda k: (k[1], k[2])):
        if key in known or key in seen:
            continue
        for name, ks in records:
            near = _near(key, list(ks))
            if near is not None:
                seen.add(key)
                listed = ", ".join(f":{k}" for k in ks[:12])
                out.append(
                    f":{key} (line {line}, column {col}) is a key no record of data/{name} has;"
                    f" did you mean :{near}? Its records' keys: {listed}"
                )
                break
    return out


def _python_records(data: Mapping[str, Any], sample: int = 100) -> list[tuple[str, list[str]]]:
    """The record keys of the inputs that are lists of maps, from their first records."""
    out: list[tuple[str, list[str]]] = []
    for name, value in data.items():
        if not isinstance(value, list | tuple):
            continue
        keys: dict[str, None] = {}
        for item in value[:sample]:
            if isinstance(item, Mapping):
                keys.update((str(k), None) for k in item if isinstance(k, str))
        if keys:
            out.append((str(name), list(keys)))
    return out


def check(
    source: str,
    *,
    tools: ToolsArg = None,
    data: Mapping[str, Any] | None = None,
    limits: LimitsArg = None,
) -> Check:
    """Checks a program without running it: parse and analysis errors, each written tool call
    against the tools (an unknown tool, the wrong number of arguments, an argument the tool
    does not take, a literal of the wrong type), and, when ``data`` is given, ``data/`` names
    not in it (warnings). Nothing is evaluated and no tool is called."""
    keys = [str(k) for k in data] if data is not None else None
    records = _python_records(data) if data is not None else []
    lengths = _lengths(data) if data is not None else None
    return check_with(source, all_tools(tools), keys, limits, records, lengths=lengths)


def _lengths(data: Mapping[str, Any]) -> dict[str, int | None]:
    """Each input's element count (a plan bounds a loop over it), None for a scalar."""
    out: dict[str, int | None] = {}
    for name, value in data.items():
        if value is None:
            out[str(name)] = 0
        elif isinstance(value, str | list | tuple | dict | set | frozenset):
            out[str(name)] = len(value)
        else:
            out[str(name)] = None
    return out


def all_tools(tools: ToolsArg) -> dict[str, Tool | AgentTool]:
    """Every tool by Lisp name, as declared (an agent's calls are checked only to exist)."""
    if tools is None:
        return {}
    return dict(tool_entries(tools))
