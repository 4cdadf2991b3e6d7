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


# --- printed output: SubAgent(output_tokens=N) ----------------------------------------------

PRINTS = '(doseq [i (range 40)] (println (str "line " i " abababababababababababab")))'


def tokens(text: str) -> int:
    return _core.count_tokens(text, "o200k_base")


def newest_within(lines: list[str], budget: int) -> list[str]:
    """The newest lines within ``budget``, after a line saying how many earlier ones went."""
    for k in range(len(lines), 0, -1):
        dropped = len(lines) - k
        head = [f"...{dropped:,} earlier {'line' if dropped == 1 else 'lines'}"] if dropped else []
        if tokens("\n".join(head + lines[-k:])) <= budget:
            return head + lines[-k:]
    raise AssertionError("not even one line fits")


@pytest.mark.parametrize("compression", [False, True])
def test_printed_output_keeps_its_newest_lines(compression: bool) -> None:
    llm = ScriptedLLM([f"```clojure\n{PRINTS}\n```", "```clojure\n(return 1)\n```"])
    agent = ptc.SubAgent(
        "Explore.", llm=llm, max_turns=3, output_tokens=60, compression=compression
    )
    step = agent.run()
    lines = [f"line {i} abababababababababababab" for i in range(40)]
    shown = lines[-15:] if compression else lines  # compression keeps 15 entries (API-004)
    expected = "\n".join([";; Output:", *newest_within(shown, 60)])
    assert expected in step.messages[-1][-1]["content"]
    assert step.turns[0].prints == tuple(lines)  # the record keeps every line


def test_one_long_line_keeps_its_head() -> None:
    from ptc.compression._format import output_lines

    line = "x" * 1000 + " tail"
    shown = output_lines([line], 2000, 20)
    assert len(shown) == 1 and tokens(shown[0]) <= 20
    head, _, rest = shown[0].partition("...")
    assert line.startswith(head) and head
    assert rest == f"{len(line) - len(head):,} more chars"


def test_output_within_the_budget_is_unchanged() -> None:
    from ptc.compression._format import output_lines

    assert output_lines(["a", "b"], 2000, 50) == ["a", "b"]
    assert output_lines(["a" * 3000], 2000, None) == ["a" * 2000 + "..."]


@pytest.mark.parametrize("bad", [0, -3, False, 1.0])
def test_an_output_budget_is_a_positive_int(bad: object) -> None:
    with pytest.raises(ValueError, match="output_tokens must be a positive int"):
        ptc.SubAgent("Explore.", output_tokens=bad)  # type: ignore[arg-type]


def test_the_output_budget_is_kept_with_the_run(tmp_path: object) -> None:
    from pathlib import Path

    from ptc.checkpoint import JsonlCheckpoint

    cp = JsonlCheckpoint(Path(str(tmp_path)) / "run.jsonl")
    llm = ScriptedLLM(["```clojure\n(println 1)\n```", "```clojure\n(return 1)\n```"])
    ptc.SubAgent("Explore.", llm=llm, max_turns=3, output_tokens=60, checkpoint=cp).run()
    step, _ = cp.load()
    assert step.context.output_tokens == 60


def boom() -> str:
    """Fails with a very long message."""
    raise ValueError("disk quota exceeded on volume " + "v" * 4000)


def test_an_error_message_is_cut_to_the_result_budget() -> None:
    llm = ScriptedLLM(["```clojure\n(tool/boom)\n```", "```clojure\n(return 1)\n```"])
    step = ptc.SubAgent(
        "Explore.", llm=llm, tools=[boom], max_turns=3, result_tokens=25, compression=False
    ).run()
    message = step.turns[0].error.message  # the record keeps it whole
    assert len(message) > 4000
    content = step.messages[-1][-1]["content"]
    shown = content.split("Error: ", 1)[1].split("\n", 1)[0]
    assert tokens(shown) <= 25
    head, _, rest = shown.rpartition("...")
    assert message.startswith(head) and rest == f"{len(message) - len(head):,} more chars"
    # the longest head within 25 tokens, found by hand: counts are not monotone in the
    # head's length (a run of one letter merges unevenly), so the cut is near it, not at it
    longest = next(
        n
        for n in range(len(message), -1, -1)
        if tokens(f"{message[:n]}...{len(message) - n:,} more chars") <= 25
    )
    assert len(head) >= longest * 0.8
    assert step.context.result_tokens == 25


# --- the system prompt's line on the markers -------------------------------------------------

MARKERS = (
    "- `...N more` and `...N earlier lines` mark what is not shown: `def` values and read the rest"
    "\n  with `drop`, `subs`, `get-in`."
)


def system_of(**kw: object) -> str:
    llm = ScriptedLLM(["```clojure\n(return 1)\n```"])
    ptc.SubAgent("go", llm=llm, **kw).run()  # type: ignore[arg-type]
    return llm.calls[0][0]["content"]


@pytest.mark.parametrize("budget", [{"result_tokens": 50}, {"output_tokens": 50}])
def test_with_a_budget_the_system_prompt_explains_the_markers(budget: dict[str, int]) -> None:
    text = system_of(**budget)
    after = "  samples, so print what you need to see.\n"
    assert after + MARKERS + "\n" in text
    assert _core.count_tokens(text, "o200k_base") <= 900
    assert text.replace(MARKERS + "\n", "") == system_of()  # otherwise the default prompt


def test_without_a_budget_the_system_prompt_says_nothing_of_markers() -> None:
    assert "...N more" not in system_of()
