"""``ProgramTool(result_tokens=N)`` and ``ptc mcp --result-tokens N``: an answer's value within
N exact o200k tokens (issue 33 §1)."""

from __future__ import annotations

import ptc
import pytest
from ptc import _core
from ptc.cli import _parser
from ptc.integrations import ProgramTool


def widest(n: int, budget: int) -> str:
    """The widest ``[0 1 ... ...N more]`` within ``budget`` tokens, built by hand."""
    for k in range(min(n, budget), -1, -1):
        head = " ".join(str(i) for i in range(k))
        text = f"[{head}{' ' if k else ''}...{n - k:,} more]"
        if _core.count_tokens(text, "o200k_base") <= budget:
            return text
    raise AssertionError("nothing fits")


def test_the_value_fits_the_budget() -> None:
    tool = ProgramTool(result_tokens=25)
    assert tool.run("(vec (range 5000))") == "=> " + widest(5000, 25)


def test_a_small_value_is_unchanged() -> None:
    assert ProgramTool(result_tokens=25).run("(+ 1 2)") == "=> 3"


def test_without_a_budget_the_characters_bound_applies() -> None:
    text = ProgramTool().run("(vec (range 5000))")
    assert text.startswith("=> [0 1 2") and text.endswith(" (5000 items, showing first 1000)")


def test_from_session_takes_the_budget() -> None:
    tool = ProgramTool.from_session(ptc.Session(), result_tokens=25)
    assert tool.run("(vec (range 5000))") == "=> " + widest(5000, 25)


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_the_budget_is_a_positive_int(bad: object) -> None:
    with pytest.raises(ValueError, match="result_tokens must be a positive int"):
        ProgramTool(result_tokens=bad)  # type: ignore[arg-type]


def test_the_mcp_command_takes_the_budget() -> None:
    args = _parser().parse_args(["mcp", "--result-tokens", "500"])
    assert args.result_tokens == 500
    with pytest.raises(SystemExit):
        _parser().parse_args(["mcp", "--result-tokens", "0"])
