"""Exceptions raised by `ptc`.

Program errors are data for the LLM: `ptc.run` and `Session.run` return them in
`Result.error`; `ptc.eval` raises them. Each carries the stable error `type` of LANGUAGE.md
§10.2, a message written for an LLM, an optional hint and a position.
"""

from __future__ import annotations


class PtcError(Exception):
    """Base class of every exception raised by ptc."""


class LispError(PtcError):
    """A PTC-Lisp program error.

    Attributes: ``type`` (e.g. ``"undefined_variable"``), ``message``, ``hint``, ``line`` and
    ``column`` (1-based, when known), ``limit`` (the limit's name for limit errors).
    """

    def __init__(
        self,
        type: str,
        message: str,
        hint: str | None = None,
        line: int | None = None,
        column: int | None = None,
        limit: str | None = None,
    ) -> None:
        super().__init__(message)
        self.type = type
        self.message = message
        self.hint = hint
        self.line = line
        self.column = column
        self.limit = limit

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.type!r}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and isinstance(other, LispError)
            and self.to_dict() == other.to_dict()
        )

    def __hash__(self) -> int:
        return hash((self.type, self.message))

    def feedback(self) -> str:
        """The text shown to an LLM: ``Error: <message>`` plus the position and hint."""
        where = f" (line {self.line}, column {self.column})" if self.line is not None else ""
        text = f"Error: {self.message}{where}"
        if self.hint:
            text += f"\nHint: {self.hint}"
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "type": self.type,
            "message": self.message,
            "hint": self.hint,
            "line": self.line,
            "column": self.column,
            "limit": self.limit,
        }


class ParseError(LispError):
    """The program text could not be read (unbalanced brackets, bad literal, ...)."""


class AnalysisError(LispError):
    """A malformed special form or other problem found before anything ran."""


class NameResolutionError(LispError):
    """An undefined name, an ambiguous tool/data name, or an unknown tool."""


class ArgumentError(LispError):
    """A value of the wrong type, a wrong number of arguments, or a failed destructuring."""


class ToolError(LispError):
    """A host tool raised or returned something unusable."""


class LimitError(LispError):
    """A resource limit ended the run (fuel, time, depth, size, output, loop)."""


class NestingLimitError(ParseError, LimitError):
    """The program text is nested deeper than ``max_nesting``: a parse error and a limit error."""


class InternalError(LispError):
    """A bug in ptc itself (a caught panic). Please report it."""


class Cancelled(PtcError):
    """Raised by `Session.run` when `Session.cancel()` stopped the run; the Session is
    unchanged."""


class ProgramFailed(PtcError):
    """Raised by `ptc.eval` when the program ends with ``(fail reason)``."""

    def __init__(self, reason: object) -> None:
        super().__init__(f"program failed: {reason!r}")
        self.reason = reason


_BY_TYPE: dict[str, type[LispError]] = {
    "parse_error": ParseError,
    "analysis_error": AnalysisError,
    "symbol_limit_exceeded": LimitError,
    "undefined_variable": NameResolutionError,
    "ambiguous_reference": NameResolutionError,
    "unknown_tool": NameResolutionError,
    "type_error": ArgumentError,
    "arity_error": ArgumentError,
    "destructure_error": ArgumentError,
    "not_callable": ArgumentError,
    "tool_error": ToolError,
    "timeout": LimitError,
    "memory_exceeded": LimitError,
    "loop_limit_exceeded": LimitError,
    "internal_error": InternalError,
}


def error_from_core(
    raw: tuple[str, str, str | None, int | None, int | None, str | None],
) -> LispError:
    """Builds the exception for a core error tuple (type, message, hint, line, column, limit)."""
    type_, message, hint, line, column, limit = raw
    if type_ == "parse_error":
        cls: type[LispError] = NestingLimitError if limit is not None else ParseError
    elif limit is not None:
        cls = LimitError
    else:
        cls = _BY_TYPE.get(type_, LispError)
    return cls(type_, message, hint, line, column, limit)
