"""Pieces of the USER message and of replies: docstring sanitising, the turns-left line, taking
the program out of a reply."""

from __future__ import annotations

from ptc.compression._format import sanitize_doc, turns_left_line

# --- format helpers -------------------------------------------------------------------------


def test_sanitize_doc():
    """DEF-007: semicolons removed entirely; line breaks folded."""
    assert sanitize_doc("a; b;c\nd") == "a bc d"


def test_turns_left_line():
    """MSG-005: ``Turns left: N`` unless it is the final turn."""
    assert turns_left_line(4) == "Turns left: 4"
    assert turns_left_line(1) == "FINAL TURN - you must call (return result) or (fail reason) now."


# --- program extraction ---------------------------------------------------------------------


def test_extract_program_from_replies():
    from ptc.agent import extract_program

    assert extract_program("Sure:\n```clojure\n(+ 1 2)\n```\nDone.") == "(+ 1 2)"
    assert extract_program("```lisp\n(def a 1)\n```\nthen\n```\n(return a)\n```") == (
        "(def a 1)\n(return a)"
    )
    assert extract_program("```clj\n(println 1)") == "(println 1)"  # unterminated fence
    assert extract_program("(return 42)\n") == "(return 42)"
    assert extract_program("```python\nprint(1)\n```") is None
    assert extract_program("The answer is 42.") is None
    assert extract_program("```clojure\n\n```") is None
