"""A reply without a program is shown back to the LLM cut to its first characters (issue 29,
item 15): a 20 MB reply was sent back whole in the next request, and in every later one."""

from __future__ import annotations

import pytest
from ptc import SubAgent
from ptc.agent import NO_PROGRAM_MESSAGE, REPLY_ECHO_CHARS
from ptc.llm import ScriptedLLM

RETURN = "```clojure\n(return 4)\n```"


def test_the_cap_is_four_thousand_characters() -> None:
    assert REPLY_ECHO_CHARS == 4_000


@pytest.mark.parametrize("compression", [False, True])
def test_a_huge_reply_without_a_program_is_echoed_cut_with_a_note(compression: bool) -> None:
    reply = "é" * 20_000_000  # 20 M characters, 40 MB of UTF-8
    llm = ScriptedLLM([reply, "still no program", RETURN])
    step = SubAgent("q", llm=llm, compression=compression).run()
    assert step.ok and step.value == 4
    second, third = llm.calls[1], llm.calls[2]
    assert second[2] == {"role": "assistant", "content": "é" * 4_000}
    assert second[3] == {
        "role": "user",
        "content": "Error: "
        + NO_PROGRAM_MESSAGE
        + "\n\n(Your reply was 20,000,000 characters long: only its first 4,000 are shown"
        " above.)\n\nTurns left: 4",
    }
    # the next request carries it cut again, not whole
    assert third[2] == second[2]
    assert sum(len(m["content"]) for m in third) < 30_000
    # the turn keeps the whole reply for the record (the trace, a checkpoint)
    assert step.turns[0].response == reply
    assert step.turns[0].error is not None and step.turns[0].error.type == "no_program"


def test_a_reply_at_the_cap_is_echoed_whole_without_a_note() -> None:
    reply = "x" * 4_000
    llm = ScriptedLLM([reply, RETURN])
    SubAgent("q", llm=llm).run()
    assert llm.calls[1][2] == {"role": "assistant", "content": reply}
    assert llm.calls[1][3]["content"] == "Error: " + NO_PROGRAM_MESSAGE + "\n\nTurns left: 4"


def test_one_character_over_the_cap_is_cut() -> None:
    reply = "x" * 4_000 + "y"
    llm = ScriptedLLM([reply, RETURN])
    SubAgent("q", llm=llm).run()
    assert llm.calls[1][2] == {"role": "assistant", "content": "x" * 4_000}
    assert llm.calls[1][3]["content"] == (
        "Error: "
        + NO_PROGRAM_MESSAGE
        + "\n\n(Your reply was 4,001 characters long: only its first 4,000 are shown above.)"
        "\n\nTurns left: 4"
    )


def test_an_empty_reply_is_echoed_empty() -> None:
    llm = ScriptedLLM(["", RETURN])
    SubAgent("q", llm=llm).run()
    assert llm.calls[1][2] == {"role": "assistant", "content": ""}
    assert llm.calls[1][3]["content"] == "Error: " + NO_PROGRAM_MESSAGE + "\n\nTurns left: 4"
