"""Prompt text shipped with the package (loaded with importlib.resources)."""

from __future__ import annotations

from functools import cache
from importlib import resources

#: Where system.md takes the list of everyday functions from the core's builtins module.
FUNCTIONS_SLOT = "{{prompt-functions}}"


def _function_list(first_line_room: int) -> str:
    """The core's prompt essentials, wrapped like the rest of the guide (100 columns, the
    continuation lines indented two spaces)."""
    from ptc import _core

    lines: list[str] = []
    line = ""
    room = first_line_room
    for name in _core.prompt_functions():
        if line and len(line) + 1 + len(name) > room:
            lines.append(line)
            line, room = name, 98
        else:
            line = f"{line} {name}" if line else name
    lines.append(line)
    return "\n  ".join(lines)


def _render(name: str) -> str:
    """A prompt file of this package with its list of functions filled in."""
    text = resources.files(__package__).joinpath(name).read_text("utf-8").strip()
    at = text.find(FUNCTIONS_SLOT)
    if at < 0:
        return text
    column = at - (text.rfind("\n", 0, at) + 1)
    return text.replace(FUNCTIONS_SLOT, _function_list(100 - column))


#: After which line of the guide the line on elision markers goes (``elided=True``).
_ELIDED_AFTER = "  samples, so print what you need to see."
_ELIDED = (
    "- `...N more` and `...N earlier lines` mark what is not shown: `def` values and read the rest"
    "\n  with `drop`, `subs`, `get-in`."
)


@cache
def system_prompt(elided: bool = False) -> str:
    """The default SYSTEM message: a concise PTC-Lisp guide, identical on every turn (MSG-006).
    Its list of useful functions is generated from the core's builtins module. ``elided``
    adds the line on the markers of results and output shown within a token budget
    (``SubAgent(result_tokens=, output_tokens=)``)."""
    text = _render("system.md")
    if elided:
        text = text.replace(_ELIDED_AFTER, f"{_ELIDED_AFTER}\n{_ELIDED}", 1)
    return text


#: Where tool.md says whether definitions outlive a call.
DEFINITIONS_SLOT = "{{definitions}}"
_KEPT = (
    "your own names: `def` and `defn` define them, and they persist from one call to the next,"
    "\n  so a later program can use them."
)
_FRESH = (
    "your own names: `def` and `defn` define them for this program only; each call starts"
    "\n  afresh."
)


#: Where tool.md's "What comes back" ends: the line on elision markers goes after it.
_TOOL_ELIDED_AFTER = "definitions: fix it and call again."
_TOOL_ELIDED = (
    "A long value comes back in part: `...N more` (items, keys or chars) says how much is not"
    "\nshown; to see the rest, return that part of it (`drop`, `subs`, `get-in`)."
)


@cache
def tool_prompt(keep_definitions: bool = True, elided: bool = False) -> str:
    """The description of a tool that runs PTC-Lisp programs, for the model calling it (MCP
    ``tools/list``, a function-calling schema): what the tool does, its one argument, what a
    program can read, what comes back and the language guide. The ``tool/`` and ``data/``
    sections go after it. Unlike :func:`system_prompt` it asks for no reply format: the caller
    sends the program as the tool's argument."""
    text = _render("tool.md").replace(DEFINITIONS_SLOT, _KEPT if keep_definitions else _FRESH)
    if elided:  # answers within result_tokens (ProgramTool(result_tokens=))
        text = text.replace(_TOOL_ELIDED_AFTER, f"{_TOOL_ELIDED_AFTER}\n{_TOOL_ELIDED}", 1)
    return text


__all__ = ["system_prompt", "tool_prompt"]
