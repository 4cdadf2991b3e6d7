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


# --- the description: markers explained, tools listed within a budget ------------------------

ELIDED = (
    "A long value comes back in part: `...N more` (items, keys or chars) says how much is not"
    "\nshown; to see the rest, return that part of it (`drop`, `subs`, `get-in`)."
)


def test_with_a_budget_the_description_explains_the_markers() -> None:
    assert ELIDED in ProgramTool(result_tokens=25).description
    assert ELIDED not in ProgramTool().description
    assert ELIDED in ProgramTool.from_session(ptc.Session(), result_tokens=9).description


def many_tools(n: int) -> list[object]:
    """``n`` tools with long descriptions: the listing of every line is far over 1,500 tokens."""
    tools = []
    for i in range(n):

        def fn(x: int) -> int:
            return x

        fn.__name__ = f"domain{i % 7}_entity{i}_fetch"
        fn.__doc__ = f"Fetches entity {i} of domain {i % 7} with its history, owners, audit trail."
        tools.append(fn)
    return tools


def test_many_tools_are_listed_by_group_within_the_budget() -> None:
    tools = many_tools(300)
    full = ProgramTool(tools=tools, tool_listing_tokens=None).description
    short = ProgramTool(tools=tools).description
    listing = short[short.index(";; === tool/ ===") :]
    assert _core.count_tokens(full, "o200k_base") > 6_000
    assert _core.count_tokens(listing, "o200k_base") <= 1_500
    assert '(tools "words")' in listing
    # a budget too small even for the names: only the groups' counts (300 = 6 x 43 + 42)
    tiny = ProgramTool.from_session(ptc.Session(tools=tools), tool_listing_tokens=40).description
    counts = ", ".join(f"domain{g} ({43 if g < 6 else 42})" for g in range(7))
    assert f";; === tool/ ===\n;; 300 tools in 7 groups: {counts}\n;; Find tools with" in tiny


def test_the_mcp_command_takes_the_listing_budget() -> None:
    assert _parser().parse_args(["mcp"]).tool_listing_tokens == 1500
    assert _parser().parse_args(["mcp", "--tool-listing-tokens", "300"]).tool_listing_tokens == 300
    with pytest.raises(SystemExit):
        _parser().parse_args(["mcp", "--tool-listing-tokens", "0"])
