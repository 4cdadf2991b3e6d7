"""``ptc repl``: an interactive session. Definitions persist, ``*1 *2 *3`` hold the last
values, an unbalanced line continues on the next one, and commands start with ``:``."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from .errors import LispError

HELP = """Type PTC-Lisp; an expression whose brackets are not closed continues on the next line.
  *1 *2 *3   the last three values
  :data      the data/ names, with their type and a sample
  :defs      what you defined, with its type
  :help      this text
  :quit      leave (or Ctrl-D)"""


def depth(text: str) -> int:
    """Open brackets minus closed ones, outside strings and comments."""
    level = 0
    in_string = escaped = in_comment = False
    for ch in text:
        if in_comment:
            in_comment = ch != "\n"
        elif in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == ";":
            in_comment = True
        elif ch in "([{":
            level += 1
        elif ch in ")]}":
            level -= 1
    return level + (1 if in_string else 0)


def repl(
    session: Any, read: Callable[[str], str] = input, write: Callable[[str], Any] = print
) -> int:
    from ._cli_output import error_text

    try:  # line editing and history, where the platform has it
        import readline  # noqa: F401
    except ImportError:
        pass
    write("ptc repl: PTC-Lisp with persistent definitions. :help for help, :quit to leave.")
    while True:
        try:
            text = read("ptc> ")
            while depth(text) > 0:
                text += "\n" + read("...> ")
        except EOFError:
            write("")
            return 0
        except KeyboardInterrupt:
            write("\n(interrupted: input discarded)")
            continue
        command = text.strip()
        if not command:
            continue
        if command in (":quit", ":q", ":exit"):
            return 0
        if command == ":help":
            write(HELP)
            continue
        if command == ":data":
            for key in session.data_keys:
                d = session.describe_data(key)
                write(f"data/{key}  ; {d.type}" + (f", sample: {d.sample}" if d.sample else ""))
            if not session.data_keys:
                write("(no data)")
            continue
        if command == ":defs":
            for d in session.definitions:
                write(f"{d.name}  ; {d.type}")
            if not session.definitions:
                write("(nothing defined yet)")
            continue
        if command.startswith(":"):
            write(f"unknown command {command}; :help lists them")
            continue
        try:  # lazy: the value is printed by the core, never converted to Python
            result = session.run(text, lazy=True)
        except KeyboardInterrupt:
            write("(interrupted)")
            continue
        except ValueError as e:
            write(f"error: {e}")
            continue
        for line in result.prints:
            write(line)
        for warning in result.warnings:
            write(f"warning: {warning}")
        if result.error is not None:
            write(error_text(result.error.to_dict()))
            continue
        try:
            shown = _shown(result)
        except LispError as e:  # printing it exceeded a limit of the session
            write(error_text(e.to_dict()))
            continue
        write(("failed: " if result.failed else "=> ") + shown)


#: Elements per collection and characters per string a value shows at the prompt.
SHOWN_ELEMENTS, SHOWN_CHARS = 20, 400


def _shown(result: Any) -> str:
    """The value as the core prints it (string keys quoted, ``#'x`` for a var), cut to
    :data:`SHOWN_ELEMENTS` and :data:`SHOWN_CHARS` (``*1`` holds all of it)."""
    from ._cli_output import core_text

    return core_text(result, SHOWN_ELEMENTS, SHOWN_CHARS)


def main_repl(session: Any) -> int:
    return repl(session, input, lambda s: print(s, flush=True))


if __name__ == "__main__":
    from .session import Session

    sys.exit(main_repl(Session()))
