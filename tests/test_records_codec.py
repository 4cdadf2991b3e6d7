"""One codec (`ptc._records`) stores the plain records of a run as JSON dicts and reads them
back: the stored shape is fixed here by hand, field by field."""

from __future__ import annotations

import json

import pytest
from ptc.compression import CompressionStats, DataEntry, ToolSpec
from ptc.step import RunContext
from ptc.turn import MemoryEntry, TurnError


def test_a_record_becomes_its_fields_in_order_with_tuples_as_lists() -> None:
    m = MemoryEntry("f", "function", "fn", None, "Doubles.", ("x", "y"), ":int")
    assert m.to_dict() == {
        "name": "f",
        "kind": "function",
        "type": "fn",
        "sample": None,
        "doc": "Doubles.",
        "params": ["x", "y"],
        "return_type": ":int",
    }
    assert list(m.to_dict()) == ["name", "kind", "type", "sample", "doc", "params", "return_type"]
    assert MemoryEntry.from_dict(json.loads(json.dumps(m.to_dict()))) == m


def test_nested_records_and_mappings_round_trip_through_json() -> None:
    ctx = RunContext(
        mission="Count",
        system_prompt="S",
        max_turns=3,
        tools=(ToolSpec("lookup", ("sku",), "(sku :string) -> :map", "Stock."),),
        data=(DataEntry("orders", "list[2]", "[{:id 1} ...]"),),
        compression="single_user_coalesced",
        compression_opts={"println_limit": 10},
    )
    stored = json.loads(json.dumps(ctx.to_dict()))
    assert stored["tools"] == [
        {
            "name": "lookup",
            "params": ["sku"],
            "signature": "(sku :string) -> :map",
            "description": "Stock.",
        }
    ]
    assert stored["data"] == [{"name": "orders", "type": "list[2]", "sample": "[{:id 1} ...]"}]
    back = RunContext.from_dict(stored)
    assert back == ctx and isinstance(back.tools, tuple) and isinstance(back.tools[0], ToolSpec)


def test_missing_optional_keys_take_defaults_and_unknown_keys_are_ignored() -> None:
    assert TurnError.from_dict({"type": "parse_error", "message": "m", "extra": 1}) == TurnError(
        "parse_error", "m"
    )
    assert CompressionStats.from_dict({"strategy": "s", "turns_compressed": 2}) == (
        CompressionStats("s", turns_compressed=2)
    )
    assert DataEntry.from_dict({"name": "n", "type": "t"}).sample is None


def test_a_missing_required_key_is_an_error_naming_it() -> None:
    with pytest.raises(ValueError) as e:
        TurnError.from_dict({"type": "parse_error"})
    assert str(e.value) == "TurnError: missing field 'message'"
