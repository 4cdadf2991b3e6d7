"""The plan of a program (issue 31): every place a tool can be called from, with the arguments
the source shows (:data:`UNKNOWN` where they are computed when it runs) and how often it can
be called, read by the core without running anything (``rust/plan.rs``). ``Session.check``
returns it as ``Check.plan``; a host shows it for approval (``Plan.render``) and passes it back
as ``approved=``, where ``PlannedCall.covers`` says which calls it lets through.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core


class _Unknown:
    """An argument the source does not show: computed when the program runs."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ptc.UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


#: Marks an argument whose value is known only when the program runs.
UNKNOWN: Any = _Unknown()


@dataclass(frozen=True)
class PlannedCall:
    """One place a tool can be called from (see :class:`Plan`). ``args`` is a tuple of the
    written arguments (:data:`UNKNOWN` where computed when the program runs), or
    :data:`UNKNOWN` itself when the tool is used as a value (``(map tool/get ids)``: even the
    number of arguments is unknown). ``bound`` is the most calls this place can make in one run
    when the source shows it (``None``: not known). ``via`` names the earlier turn's definition
    whose body holds the call (``line`` and ``column`` are then in that earlier program; 0 when
    a tool value was kept with no written place)."""

    tool: str
    args: Any
    line: int
    column: int
    conditional: bool
    repeats: bool
    bound: int | None
    via: str | None = None

    def describe(self, effect: str | None = None) -> str:
        """One line a person reads: how often, under what condition, with what."""
        name = f"`{self.tool}`" + (f" ({effect})" if effect and effect != "read" else "")
        if self.bound == 1:
            times = "once"
        elif self.bound is None:
            times = "any number of times"
        else:
            times = f"up to {self.bound} times"
        when = "if reached" if self.conditional else "unconditionally"
        if self.via is not None and self.via.startswith("*"):
            where = f"in {self.via} (an earlier turn's result)"
        elif self.via is not None:
            where = f"in {self.via} (defined in an earlier turn)"
        else:
            where = f"at line {self.line}, column {self.column}"
        if self.args is UNKNOWN:
            given = "with arguments known only when it runs"
        elif not self.args:
            given = "with no arguments"
        else:
            given = "with " + " ".join(shown(a) for a in self.args)
        return f"{name} {times}, {when}, {where}, {given}"

    def covers(self, call: _core.PendingCall) -> bool:
        """Whether ``call``, a :class:`~ptc.PendingCall` of a run, is one this place makes:
        the same tool, at this line and column (a call through a tool value, which has no
        place, only where the tool is used as a value), with the arguments the plan knows (an
        approved plan lets such a call run; ``bound`` is counted by the run)."""
        if self.tool != call.tool:
            return False
        if call.line is None:
            if self.args is not UNKNOWN:
                return False
        elif (self.line, self.column) != (call.line, call.column):
            return False
        return self.args is UNKNOWN or _args_cover(self.args, call.args)


def _args_cover(planned: Sequence[Any], actual: Sequence[Any]) -> bool:
    return len(planned) == len(actual) and all(
        _covers(p, a) for p, a in zip(planned, actual, strict=True)
    )


def _covers(planned: Any, actual: Any) -> bool:
    if planned is UNKNOWN:
        return True
    if isinstance(planned, Mapping):
        return (
            isinstance(actual, Mapping)
            and planned.keys() == actual.keys()
            and all(_covers(planned[k], actual[k]) for k in planned)
        )
    if isinstance(planned, (list, tuple)):
        return isinstance(actual, (list, tuple)) and _args_cover(planned, actual)
    return type(planned) is type(actual) and bool(planned == actual)


def _has_unknown(value: Any) -> bool:
    if value is UNKNOWN:
        return True
    kind = type(value)
    if kind is dict:
        return any(_has_unknown(v) for v in value.values())
    if kind is list or kind is tuple:
        return any(_has_unknown(v) for v in value)
    return False


def shown(value: Any) -> str:
    """An argument in PTC-Lisp notation, ``?`` where it is computed when the program runs."""
    if value is UNKNOWN:
        return "?"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{shown(k)} {shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list) and _has_unknown(value):
        return "[" + " ".join(shown(v) for v in value) + "]"
    return _core.to_clojure(value, 5, 60, False)[0]


@dataclass(frozen=True)
class Plan:
    """Which tools a program can call, from where, with what and how often, found without
    running it. Sound: every call a run makes is covered (its tool is in ``tools``; a literal
    argument the plan gives is the one passed; a ``bound`` is never passed). ``any_tool`` is
    true if some value could hold a tool the analysis could not see (none is known)."""

    calls: tuple[PlannedCall, ...] = ()
    any_tool: bool = False
    effects: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def tools(self) -> tuple[str, ...]:
        """The tools the program can call, in the order they first appear."""
        return tuple(dict.fromkeys(c.tool for c in self.calls))

    @property
    def writes(self) -> tuple[str, ...]:
        """The tools it can call that are declared ``effect="write"``."""
        return tuple(t for t in self.tools if self.effects.get(t) == "write")

    def bound(self, tool: str) -> int | None:
        """The most calls of ``tool`` one run can make (None: not known; 0: none)."""
        total = 0
        for c in self.calls:
            if c.tool == tool:
                if c.bound is None:
                    return None
                total += c.bound
        return total

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready values: arguments in PTC-Lisp notation (``?`` where one is
        computed when the program runs; ``None`` for a tool used as a value)."""
        return {
            "tools": list(self.tools),
            "writes": list(self.writes),
            "any_tool": self.any_tool,
            "calls": [
                {
                    "tool": c.tool,
                    "args": None if c.args is UNKNOWN else [shown(a) for a in c.args],
                    "line": c.line,
                    "column": c.column,
                    "conditional": c.conditional,
                    "bound": c.bound,
                    "via": c.via,
                }
                for c in self.calls
            ],
        }

    def render(self) -> str:
        """The plan as a person reads it, one line per place a tool can be called from."""
        if not self.calls:
            head = "Calls no tools."
        else:
            listed = ", ".join(f"`{t}`" for t in self.tools)
            head = f"May call {len(self.tools)} tool{'s' if len(self.tools) != 1 else ''}: {listed}"
            if self.writes:
                head += "; writes: " + ", ".join(f"`{t}`" for t in self.writes)
            head += "."
        lines = [head]
        lines.extend("- " + c.describe(self.effects.get(c.tool)) for c in self.calls)
        if self.any_tool:
            lines.append("- any tool: a value of an earlier turn was too large to look into")
        return "\n".join(lines)


def _plan(planner: Any, effects: Mapping[str, str]) -> Plan | None:
    if planner is None:
        return None
    sites, any_tool = planner.plan(UNKNOWN)
    calls = tuple(
        PlannedCall(
            tool,
            UNKNOWN if args is None else tuple(args),
            line,
            col,
            cond,
            bound != 1,
            bound,
            via,
        )
        for tool, args, line, col, cond, bound, via in sites
    )
    return Plan(calls=calls, any_tool=any_tool, effects=effects)
