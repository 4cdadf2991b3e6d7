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


@cache
def system_prompt() -> str:
    """The default SYSTEM message: a concise PTC-Lisp guide, identical on every turn (MSG-006).
    Its list of useful functions is generated from the core's builtins module."""
    text = resources.files(__package__).joinpath("system.md").read_text("utf-8").strip()
    at = text.find(FUNCTIONS_SLOT)
    if at < 0:
        return text
    column = at - (text.rfind("\n", 0, at) + 1)
    return text.replace(FUNCTIONS_SLOT, _function_list(100 - column))


__all__ = ["system_prompt"]
