"""Declaring tools: a callable, a :class:`Tool` (with a signature or description of your
own), a ``(fn, signature[, description])`` tuple, or an :class:`AgentTool` (another agent),
listed or named in a dict. One normalisation, :func:`tool_entries`, serves every caller."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, overload

from ptc.tools.rich_types import callable_name, check_tool_name
from ptc.tools.signature import (
    Signature,
    first_doc_line,
    parse_signature,
    signature_from_callable,
)

if TYPE_CHECKING:
    from ptc.compression import ToolSpec

#: The ``tools=`` argument of a Session, an agent or a ProgramTool.
ToolsArg = Mapping[str, Any] | Sequence[Any] | None


def tool_name(fn: Callable[..., Any]) -> str:
    """The tool name of a callable in a list: its name (a partial's function's, a callable
    object's class's) with ``_`` turned into ``-``."""
    from ptc.tools.rich_types import check_tool_name

    name = callable_name(fn)
    if name is None:
        raise TypeError(f"tool {fn!r} has no usable name; pass tools as a dict of name -> callable")
    return check_tool_name(name.replace("_", "-"))


def check_declarations(tool: Tool | AgentTool, where: str) -> None:
    """A tool's effect, cap and flags are refused where they are written when wrong."""
    if tool.effect not in ("read", "write"):
        raise ValueError(f"{where}(effect=...) is 'read' or 'write', got {tool.effect!r}")
    cap = tool.max_calls
    if cap is not None and (type(cap) is not int or cap < 0):
        raise ValueError(
            f"{where}(max_calls=...) is a whole number of calls per run, 0 or more (None: no"
            f" cap of its own), got {cap!r}"
        )
    for flag in ("approval", "deferred", "idempotent"):
        if type(getattr(tool, flag)) is not bool:
            raise TypeError(f"{where}({flag}=...) is True or False, got {getattr(tool, flag)!r}")


@dataclass(frozen=True)
class Tool:
    """A host function with an optional explicit signature (``(category :string) -> :string``)
    and description; without them both come from type hints and the docstring's first line.

    What the tool does to the world is declared here too, for the host (none of it is shown
    to the LLM, except ``effect`` in the records of ``(tools "query")``): ``effect`` is
    ``"read"`` (the default) or ``"write"`` (it changes something outside the run);
    ``max_calls`` caps its calls in one run (past it the run ends with a ``ToolLimitError``
    whose ``limit`` is ``"max_calls"``); ``approval``, ``deferred`` and ``idempotent`` are
    declared for approvals and replay. ``approval=True`` on a read tool is allowed: some reads
    are sensitive. A ``Tool`` is callable, as its function is.
    """

    fn: Callable[..., Any]
    name: str | None = None
    signature: str | None = None
    description: str | None = None
    effect: Literal["read", "write"] = "read"
    max_calls: int | None = None
    approval: bool = False
    deferred: bool = False
    idempotent: bool = False

    def __post_init__(self) -> None:
        if not callable(self.fn):
            raise TypeError(f"Tool(fn=...) takes a callable, got {type(self.fn).__name__}")
        check_declarations(self, "Tool")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def spec(self, name: str) -> ToolSpec:
        from ptc.compression import ToolSpec  # the prompt's layer: loaded by agents only

        sig = (
            parse_signature(self.signature) if self.signature else signature_from_callable(self.fn)
        )
        if sig.params is None:  # a bare return type was given
            sig = Signature(signature_from_callable(self.fn).params, sig.returns)
        params = tuple(p.name for p in sig.params or ())
        return ToolSpec(name, params, str(sig), self.description or first_doc_line(self.fn))


class AgentLike(Protocol):
    """What an :class:`AgentTool` reads of its agent (a :class:`~ptc.agent.SubAgent`) to declare
    the tool: its signature as a tool. The agent module, above this one, runs it."""

    def tool_signature(self) -> Signature: ...


@dataclass(frozen=True)
class AgentTool:
    """A :class:`SubAgent` offered to another agent as a tool (see :meth:`SubAgent.as_tool`)."""

    agent: AgentLike
    name: str
    description: str | None = None
    effect: Literal["read", "write"] = "read"
    max_calls: int | None = None
    approval: bool = False
    deferred: bool = False
    idempotent: bool = False

    def __post_init__(self) -> None:
        check_declarations(self, "as_tool")

    def spec(self, name: str | None = None) -> ToolSpec:
        """The ``tool/`` entry: parameters from the child's explicit signature, then one
        ``:string`` parameter per ``{{placeholder}}`` of its prompt that the call must fill."""
        from ptc.compression import ToolSpec

        sig = self.agent.tool_signature()
        params = tuple(p.name for p in sig.params or ())
        return ToolSpec(name or self.name, params, str(sig), self.description)


def tool_entries(
    tools: ToolsArg, *, unnamed: str | None = None
) -> list[tuple[str, Tool | AgentTool]]:
    """Normalize the ``tools=`` argument to (lisp name, Tool | AgentTool) pairs, in order. A
    listed callable without a usable name (a lambda) is called ``unnamed``, or refused when
    that is None."""
    if tools is None:
        return []
    items: list[tuple[str | None, Any]]
    if isinstance(tools, Mapping):
        items = list(tools.items())
    else:
        items = [(None, t) for t in tools]
    out: list[tuple[str, Tool | AgentTool]] = []
    seen: set[str] = set()

    def add(name: str, value: Tool | AgentTool) -> None:
        check_tool_name(name)
        if name in seen:
            raise ValueError(
                f"two tools are named {name!r}; pass tools as a dict to name them apart"
            )
        seen.add(name)
        out.append((name, value))

    for name, value in items:
        if isinstance(value, AgentTool):
            add(name if name is not None else value.name, value)
            continue
        if isinstance(value, tuple):  # (fn, signature) or (fn, signature, description)
            value = Tool(value[0], None, *value[1:])
        if not isinstance(value, Tool):
            if not callable(value):
                raise TypeError(f"tool {name or value!r} is not callable")
            value = Tool(value)
        if name is None:
            name = value.name
        if name is None:
            if unnamed is not None and callable_name(value.fn) is None:
                name = unnamed
            else:
                name = tool_name(value.fn)
        add(name, value)
    return out


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    signature: str | None = None,
    description: str | None = None,
    effect: Literal["read", "write"] = "read",
    max_calls: int | None = None,
    approval: bool = False,
    deferred: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    signature: str | None = None,
    description: str | None = None,
    effect: Literal["read", "write"] = "read",
    max_calls: int | None = None,
    approval: bool = False,
    deferred: bool = False,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declares a function as a :class:`Tool`: ``@ptc.tool`` alone, or with the Tool's
    fields, ``@ptc.tool(effect="write", max_calls=3)``. The result is still callable."""

    def make(f: Callable[..., Any]) -> Tool:
        return Tool(
            f,
            name,
            signature,
            description,
            effect=effect,
            max_calls=max_calls,
            approval=approval,
            deferred=deferred,
            idempotent=idempotent,
        )

    return make(fn) if fn is not None else make


def tool_caps(tools: ToolsArg) -> dict[str, int]:
    """The ``max_calls`` of each tool that declares one, by its Lisp name."""
    if tools is None or isinstance(tools, (str, bytes)):
        return {}
    return {name: t.max_calls for name, t in tool_entries(tools) if t.max_calls is not None}


def tool_gates(tools: ToolsArg) -> dict[str, str]:
    """The tools whose calls wait for the host: ``"deferred"`` (never called by ptc) or
    ``"approval"`` (called once allowed), by Lisp name."""
    if tools is None or isinstance(tools, (str, bytes)):
        return {}
    return {
        name: "deferred" if t.deferred else "approval"
        for name, t in tool_entries(tools)
        if t.deferred or t.approval
    }


def tool_idempotent(tools: ToolsArg) -> list[str]:
    """The tools declared ``idempotent=True``, by Lisp name."""
    if tools is None or isinstance(tools, (str, bytes)):
        return []
    return [name for name, t in tool_entries(tools) if t.idempotent]


#: One tool as ``(tools "query")`` and ``(doc tool/name)`` see it: its Lisp name, parameter
#: names, signature text, whole description and effect.
CatalogueEntry = tuple[str, list[str], str | None, str | None, str]


def _tool_catalogue(described: list[ToolsArg]) -> list[CatalogueEntry]:
    """The tools of ``described[0]`` as the core's catalogue reads them, in order (issue 33
    §2). ``described`` is a one-item holder so that an agent can describe the tools it
    declared instead of the wrappers its Session calls. Called by the core once, before the
    first run that may read the catalogue; a tool whose signature cannot be worked out is
    still listed, with no signature."""
    tools = described[0]
    if tools is None or isinstance(tools, (str, bytes)):
        return []
    out: list[CatalogueEntry] = []
    for name, t in tool_entries(tools):
        try:
            spec = t.spec(name)
        except (TypeError, ValueError):  # a signature the signature language cannot read
            out.append((name, [], None, t.description, t.effect))
            continue
        doc = t.description
        if doc is None and isinstance(t, Tool):
            doc = inspect.getdoc(t.fn)
            doc = doc.strip() or None if doc else None
        out.append((name, list(spec.params), spec.signature, doc or spec.description, t.effect))
    return out
