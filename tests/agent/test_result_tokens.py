"""``SubAgent(result_tokens=N)``: a turn's result as the LLM sees it fits N exact tokens, with
markers saying how much was left out (issue 33 §1). They name no program: ``*1`` holds the
result's ≈1 KB text, not the value (LANGUAGE §8.5)."""

from __future__ import annotations

import ptc
import pytest
from ptc import _core
from ptc.llm import ScriptedLLM


def widest(n: int, budget: int) -> str:
    """The widest ``[0 1 ... ...N more]`` within ``budget`` o200k tokens, built by hand."""
    for k in range(min(n, budget), -1, -1):  # each item is a token at least
        head = " ".join(str(i) for i in range(k))
        text = f"[{head}{' ' if k else ''}...{n - k:,} more]"
        if _core.count_tokens(text, "o200k_base") <= budget:
            return text
    raise AssertionError("nothing fits")


def run(result_tokens: int | None) -> ptc.Step:
    llm = ScriptedLLM(["```clojure\n(vec (range 100000))\n```", "```clojure\n(return 40)\n```"])
    agent = ptc.SubAgent("Explore.", llm=llm, max_turns=3, result_tokens=result_tokens)
    return agent.run()


def test_the_result_fits_the_budget() -> None:
    step = run(30)
    assert step.ok and step.value == 40
    shown = step.turns[0].result_text
    assert shown == widest(100_000, 30)
    second_request = step.messages[-1]  # the messages of the last LLM call
    assert shown in second_request[-1]["content"]


def test_without_a_budget_the_limits_apply() -> None:
    step = run(None)
    assert step.turns[0].result_text == "[0 1 2 3 4 5 6 7 8 9 ...] (100000 items, showing first 10)"


@pytest.mark.parametrize("bad", [0, -1, True, 2.5, "10"])
def test_a_budget_is_a_positive_int(bad: object) -> None:
    with pytest.raises(ValueError, match="result_tokens must be a positive int"):
        ptc.SubAgent("Explore.", result_tokens=bad)  # type: ignore[arg-type]
