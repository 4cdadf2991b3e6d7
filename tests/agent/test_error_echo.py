"""A failed turn's error is shown back to the LLM cut to its first characters, as a reply without
a program is (second red-team batch of issue 29): a tool raising an exception whose text was
20 MB had all of it sent in the next request, and in every later one."""

from __future__ import annotations

import pytest
from ptc import SubAgent
from ptc.compression._format import ERROR_ECHO_CHARS
from ptc.llm import ScriptedLLM

CALL = "```clojure\n(tool/boom)\n```"
RETURN = "```clojure\n(return 4)\n```"


class _Huge(Exception):
    def __str__(self) -> str:
        return "é" * 20_000_000  # 20 M characters, 40 MB of UTF-8


def huge() -> int:
    """Fails with a 20 MB message."""
    raise _Huge


def test_the_cap_is_four_thousand_characters() -> None:
    assert ERROR_ECHO_CHARS == 4_000


@pytest.mark.parametrize("compression", [False, True])
def test_a_20_mb_tool_error_is_echoed_cut_with_a_note(compression: bool) -> None:
    llm = ScriptedLLM([CALL, CALL, RETURN])
    step = SubAgent("q", llm=llm, tools={"boom": huge}, compression=compression).run()
    assert (step.ok, step.value) == (True, 4), step.error
    message = "Tool 'boom' failed: _Huge: " + "é" * 20_000_000
    note = "(The error message was 20,000,027 characters long: only its first 4,000 are shown.)"
    second = llm.calls[1]
    assert second[3] == {
        "role": "user",
        "content": f"Error: {message[:4_000]}...\n{note}\n\nTurns left: 4",
    }
    # the next request carries it cut again, not whole (each failed turn is kept: ERR-002)
    third = llm.calls[2]
    assert sum(len(m["content"]) for m in third) < 30_000
    # the turns keep the whole message for the record (the trace, a checkpoint)
    assert step.turns[0].error is not None and step.turns[0].error.message == message


def boom_of(size: int) -> object:
    def boom() -> int:
        """Fails."""
        raise ValueError("v" * size)

    return boom


def test_an_error_at_the_cap_is_echoed_whole_without_a_note() -> None:
    lead = "Tool 'boom' failed: ValueError: "
    llm = ScriptedLLM([CALL, RETURN])
    SubAgent("q", llm=llm, tools={"boom": boom_of(4_000 - len(lead))}).run()
    whole = f"{lead}{'v' * (4_000 - len(lead))}"
    assert llm.calls[1][3]["content"] == f"Error: {whole}\n\nTurns left: 4"


def test_one_character_over_the_cap_is_cut() -> None:
    lead = "Tool 'boom' failed: ValueError: "
    llm = ScriptedLLM([CALL, RETURN])
    SubAgent("q", llm=llm, tools={"boom": boom_of(4_001 - len(lead))}).run()
    assert llm.calls[1][3]["content"] == (
        f"Error: {lead}{'v' * (4_000 - len(lead))}...\n(The error message was 4,001 characters"
        " long: only its first 4,000 are shown.)\n\nTurns left: 4"
    )


def test_a_short_error_keeps_its_hint_and_output() -> None:
    """Seed ERR-003: ``Error: <message>``, the hint, and the output printed before it."""
    llm = ScriptedLLM(['```clojure\n(println "before")\n(+ 1 "a")\n```', RETURN])
    SubAgent("q", llm=llm).run()
    assert llm.calls[1][3]["content"] == (
        'Error: + expected a number, got string "a"\n'
        "Hint: arithmetic takes numbers; to join text use (str a b); to read a number use "
        "(parse-long s) or (parse-double s)\n;; Output:\nbefore\n\nTurns left: 4"
    )
