"""A normalized LLM reply and the errors of calling an LLM."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ptc.errors import PtcError

logger = logging.getLogger("ptc")


class LLMError(PtcError):
    """The LLM could not be called, or its reply had no usable shape."""


class TransientLLMError(LLMError):
    """Raise this from an LLM callable to ask for a retry (rate limit, timeout, overload)."""


class LLMTimeoutError(TransientLLMError):
    """A provider adapter's request had no complete reply within its ``deadline`` (seconds).
    Transient: the retry policy retries it, each attempt with a deadline of its own."""

    def __init__(self, message: str, deadline: float | None = None) -> None:
        super().__init__(message)
        self.deadline = deadline

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its deadline
        return (type(self), (str(self), self.deadline))


class LLMReplyError(LLMError):
    """The provider's reply is not one: not JSON, not an object, or a field of the wrong type
    (``path`` names it, e.g. ``choices[0].message.content``; ``""`` for the body). Not
    transient: the same provider answers the same way again."""

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.path))


class LLMReplyTooLargeError(LLMError):
    """A provider adapter stopped reading a reply past its ``max_reply_bytes`` (``limit``,
    counted after decompression). Not transient."""

    def __init__(self, message: str, limit: int | None = None) -> None:
        super().__init__(message)
        self.limit = limit

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.limit))


def describe_value(value: Any) -> str:
    """What a JSON value is, for an error message: ``the integer 5``, ``null``, ``a list of 3
    items``; long text cut."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int):
        digits = str(value) if abs(value) < 10**30 else f"of {len(str(abs(value)))} digits"
        return f"the integer {digits}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        shown = repr(value[:60]) + ("..." if len(value) > 60 else "")
        return f"the string {shown}"
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} items"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


#: The largest token count taken as given: every count up to it is exact as a float (as JSON
#: readers elsewhere may hold it), and no request comes near it.
MAX_COUNT = 2**53


def usage_count(value: Any, name: str) -> int:
    """A token count as the provider reported it, made a count in ``0..2**53``: an int in that
    range, or a float that is a whole number in it, is taken as given; a missing one
    (``None``) is 0. Anything else is replaced, with a warning on the ``ptc`` logger naming
    ``name``: a negative number or NaN by 0, a larger one by 2**53, a fraction by its whole
    part, a string or boolean by 0 (a run's usage must stay a count it can save and sum)."""
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT:
        return value
    if isinstance(value, float) and value.is_integer() and 0 <= value <= MAX_COUNT:
        return int(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        if math.isnan(value) or value < 0:
            count = 0
        elif value > MAX_COUNT:
            count = MAX_COUNT
        else:
            count = int(value)  # a fraction: its whole part
    else:
        count = 0
    logger.warning(
        "ptc.llm: the provider's %s is %s, not a token count: taken as %d",
        name,
        describe_value(value),
        count,
    )
    return count


def describe_error(exc: BaseException, limit: int = 4000) -> str:
    """``Type: message`` of a failed LLM call, with what caused it: SDKs raise their own error
    (``APIConnectionError: Connection error.``) from the transport's, which says what happened
    (too many redirects, a body cut short). Cut at ``limit`` characters, saying so."""
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(parts) < 6:
        seen.add(id(current))
        text = str(current).strip()
        part = f"{type(current).__name__}: {text}" if text else type(current).__name__
        if not text or not any(text in p for p in parts):  # one quoted already adds nothing
            parts.append(part)
        current = current.__cause__
    out = parts[0] + "".join(f" (caused by {p})" for p in parts[1:])
    if len(out) > limit:
        out = out[:limit] + f"... (cut: {len(out):,} characters in all)"
    return out


@dataclass(frozen=True)
class LLMReply:
    """A normalized reply: its text and the token usage the provider reported (if any)."""

    content: str
    usage: Mapping[str, int] = field(default_factory=dict)
