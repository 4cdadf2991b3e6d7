"""`Keyword`: how PTC-Lisp keywords come back to Python."""

from __future__ import annotations


class Keyword(str):
    """A PTC-Lisp keyword such as ``:name``.

    It is a ``str`` equal (and hash-equal) to its text, so ``result["name"]`` works on maps with
    keyword keys, while ``isinstance(k, Keyword)`` tells keywords and strings apart. Passing a
    ``Keyword`` back into a program gives a keyword again.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"Keyword({str.__repr__(self)})"
