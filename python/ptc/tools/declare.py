"""Declaring tools: a callable, a :class:`Tool` (with a signature or description of your
own), a ``(fn, signature[, description])`` tuple, or an :class:`AgentTool` (another agent),
listed or named in a dict. One normalisation, :func:`tool_entries`, serves every caller."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ptc.tools.rich_types import callable_name, check_tool_name
from ptc.tools.signature import (
    Signature,
    first_doc_line,
    parse_signature,
    signature_from_callable,
)

if TYPE_CHECKING:
    from ptc.agent import SubAgent
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


@dataclass(frozen=True)
class Tool:
    """A host function with an optional explicit signature (``(category :string) -> :string``)
    and description; without them both come from type hints and the docstring's first line."""

    fn: Callable[..., Any]
    name: str | None = None
    signature: str | None = None
    description: str | None = None

    def spec(self, name: str) -> ToolSpec:
        from ptc.compression import ToolSpec  # the prompt's layer: loaded by agents only

        sig = (
            parse_signature(self.signature) if self.signature else signature_from_callable(self.fn)
        )
        if sig.params is None:  # a bare return type was given
            sig = Signature(signature_from_callable(self.fn).params, sig.returns)
        params = tuple(p.name for p in sig.params or ())
        return ToolSpec(name, params, str(sig), self.description or first_doc_line(self.fn))


@dataclass(frozen=True)
class AgentTool:
    """A :class:`SubAgent` offered to another agent as a tool (see :meth:`SubAgent.as_tool`)."""

    agent: SubAgent
    name: str
    description: str | None = None

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
