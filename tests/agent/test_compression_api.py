"""normalize(), the Compression protocol and custom strategies."""

from __future__ import annotations

from typing import ClassVar

import pytest
from agent_helpers import opts, turn
from ptc.compression import (
    Compression,
    CompressionStats,
    FullHistory,
    SingleUserCoalesced,
    normalize,
    register,
    strategy_by_name,
)

# the defaults as docs/COMPRESSION.md and seed 001 state them
DOCUMENTED_DEFAULTS = {
    "println_limit": 15,
    "tool_call_limit": 20,
    "sample_limit": 3,
    "sample_printable_limit": 80,
    "tool_args_limit": 3,
    "tool_args_printable_limit": 60,
    "println_max_chars": 2000,
}


def test_true_enables_default_strategy():
    """API-001, ARC-005: ``True`` selects SingleUserCoalesced with the default options."""
    strategy, o = normalize(True)
    assert isinstance(strategy, SingleUserCoalesced)
    assert o == DOCUMENTED_DEFAULTS


def test_defaults():
    """API-004, API-005, TRN-002, TRN-003: println 15, tool calls 20, samples 3/80, args 3/60."""
    _, o = normalize(True)
    assert o["println_limit"] == 15 and o["tool_call_limit"] == 20
    assert (o["sample_limit"], o["sample_printable_limit"]) == (3, 80)
    assert (o["tool_args_limit"], o["tool_args_printable_limit"]) == (3, 60)
    assert o["println_max_chars"] == 2000


def test_false_and_none_disable():
    """API-003: False and None disable compression (the full history is sent)."""
    assert normalize(False) == (None, {})
    assert normalize(None) == (None, {})


def test_strategy_with_options():
    """API-002, API-006: ``(Strategy, opts)`` with a class or an instance; returns a tuple."""
    for spec in (SingleUserCoalesced, SingleUserCoalesced()):
        strategy, o = normalize((spec, {"println_limit": 10}))
        assert isinstance(strategy, SingleUserCoalesced)
        assert o == {**DOCUMENTED_DEFAULTS, "println_limit": 10}
    result = normalize(SingleUserCoalesced)
    assert isinstance(result, tuple) and result[1] == DOCUMENTED_DEFAULTS
    strategy, _ = normalize(FullHistory())
    assert strategy.name == "full_history"


def test_bad_options_rejected():
    """API-006: unknown options and bad values fail early with a clear message."""
    with pytest.raises(ValueError, match="println_limt"):
        normalize((SingleUserCoalesced, {"println_limt": 3}))
    with pytest.raises(ValueError, match="non-negative int"):
        normalize((SingleUserCoalesced, {"println_limit": -1}))
    with pytest.raises(TypeError):
        normalize(42)
    with pytest.raises(TypeError):
        normalize((SingleUserCoalesced,))


def test_protocol_name_and_to_messages():
    """ARC-003: a strategy has ``name`` and ``to_messages(turns, memory, opts)``."""
    assert isinstance(SingleUserCoalesced(), Compression)
    assert isinstance(FullHistory(), Compression)
    assert SingleUserCoalesced.name == "single_user_coalesced"
    messages, stats = SingleUserCoalesced().to_messages([], (), opts())
    assert isinstance(stats, CompressionStats) and messages[0]["role"] == "system"


class LastTurnOnly:
    """A custom strategy: mission plus the last turn's output only."""

    name = "last_turn_only"
    default_options: ClassVar[dict[str, int]] = {"keep": 1}

    def to_messages(self, turns, memory, o):
        last = "\n".join(turns[-1].prints) if turns else ""
        content = f"{o['mission']}\n\n{last}".strip()
        return (
            [
                {"role": "system", "content": o["system_prompt"]},
                {"role": "user", "content": content},
            ],
            CompressionStats(self.name),
        )


def test_custom_strategy_and_registry():
    """ARC-003: any object with the protocol works; registering makes it loadable by name."""
    strategy, o = normalize((LastTurnOnly, {"keep": 2}))
    assert o["keep"] == 2
    messages, _ = strategy.to_messages([turn(1, prints=["hi"])], (), opts())
    assert messages[1]["content"].endswith("hi")
    register(LastTurnOnly)
    assert isinstance(strategy_by_name("last_turn_only"), LastTurnOnly)
    with pytest.raises(ValueError, match="unknown compression strategy"):
        strategy_by_name("nope")


def test_a_strategy_holds_its_options_as_fields():
    """The built-in strategies are frozen dataclasses whose fields are the options:
    ``SingleUserCoalesced(println_limit=10)`` is the same as ``(SingleUserCoalesced,
    {"println_limit": 10})``."""
    import dataclasses

    from ptc.compression import Strategy

    assert {f.name for f in dataclasses.fields(Strategy)} == set(DOCUMENTED_DEFAULTS)
    assert SingleUserCoalesced().options() == DOCUMENTED_DEFAULTS
    short = SingleUserCoalesced(println_limit=10)
    assert normalize(short) == normalize((SingleUserCoalesced, {"println_limit": 10}))
    assert normalize(short) == (short, {**DOCUMENTED_DEFAULTS, "println_limit": 10})
    assert short == SingleUserCoalesced(println_limit=10) != SingleUserCoalesced()
    assert SingleUserCoalesced() == SingleUserCoalesced() != FullHistory()
    with pytest.raises(dataclasses.FrozenInstanceError):
        short.println_limit = 3  # type: ignore[misc]
    # options given over an instance's own: both kept
    both, o = normalize((short, {"tool_call_limit": 4}))
    assert (both.println_limit, both.tool_call_limit) == (10, 4)
    assert o == {**DOCUMENTED_DEFAULTS, "println_limit": 10, "tool_call_limit": 4}
    with pytest.raises(ValueError, match="compression option println_limit must be a non-negative"):
        SingleUserCoalesced(println_limit=-1)
    with pytest.raises(ValueError, match="must be a non-negative int, got True"):
        FullHistory(sample_limit=True)


def test_the_options_of_the_instance_are_the_ones_rendered():
    """Called directly without options in ``opts``, a strategy renders with its own fields:
    println_limit=1 shows the last of three printed lines only."""
    turns = [turn(1, prints=["one", "two", "three"])]
    (_, user), stats = SingleUserCoalesced(println_limit=1).to_messages(turns, (), opts())
    assert "three" in user["content"] and "two" not in user["content"]
    assert (stats.printlns_shown, stats.printlns_dropped) == (1, 2)
    # the render's own options (a stored run's) win over the instance's
    (_, user), _ = SingleUserCoalesced(println_limit=1).to_messages(
        turns, (), opts(println_limit=2)
    )
    assert "two" in user["content"] and "one" not in user["content"]


def test_the_old_name_of_chat_messages_is_gone() -> None:
    import ptc.compression

    assert not hasattr(ptc.compression, "Message")
