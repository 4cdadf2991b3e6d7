"""Tools that end their host: loaded by the MCP server tests with `--tool exiting_tools:...`."""

from __future__ import annotations


def quit(code: int) -> int:
    """Ends the process the way a careless script would."""
    raise SystemExit(code)


def interrupt() -> int:
    """Raises what Ctrl-C raises, without any signal."""
    raise KeyboardInterrupt


async def aquit(code: int) -> int:
    """The async form of quit."""
    raise SystemExit(code)


async def ainterrupt() -> int:
    """The async form of interrupt."""
    raise KeyboardInterrupt


def add(a: int, b: int) -> int:
    """A tool that works."""
    return a + b


def pid() -> int:
    """The serving process's id."""
    import os

    return os.getpid()


class OwnBaseException(BaseException):
    """A host's own exception that is not an Exception."""


def generator_exit() -> int:
    """Raises what closing a generator raises."""
    raise GeneratorExit


def own() -> int:
    """Raises a BaseException of its own."""
    raise OwnBaseException("mine")
