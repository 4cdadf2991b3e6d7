"""Tools: how a Python callable becomes something a PTC-Lisp program calls as ``(tool/name ...)``.

- :mod:`ptc.tools.declare`: the ways to declare a tool (:class:`Tool`, :class:`AgentTool`,
  tuples, plain callables) and their one normalisation.
- :mod:`ptc.tools.signature`: the signature language shown to the LLM and checked on results.
- :mod:`ptc.tools.rich_types`: Pydantic models, dataclasses, enums, dates... as parameters and
  results, and names for any callable.
- :mod:`ptc.tools.adapter`: calling a tool from the interpreter (arguments, async tools, errors).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ptc.tools.declare import AgentTool, Tool, ToolsArg, tool_entries, tool_name

__all__ = ["AgentTool", "Tool", "ToolsArg", "tool_entries", "tool_name"]


def __getattr__(name: str) -> Any:
    # loaded on first use: importing a submodule must not pull in the compression layer
    if name in __all__:
        import ptc.tools.declare as declare

        return getattr(declare, name)
    raise AttributeError(f"module 'ptc.tools' has no attribute {name!r}")
