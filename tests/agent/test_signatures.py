"""Tool signatures: parsing, derivation from type hints, and checking values against them."""

from __future__ import annotations

from typing import Any, TypedDict

import pytest
from ptc.tools.signature import (
    SignatureError,
    check_value,
    parse_signature,
    signature_from_callable,
)

# --- signatures -----------------------------------------------------------------------------


def test_parse_signature_roundtrip():
    for text in [
        "(category :string) -> :string",
        "() -> :any",
        "(id :int, opts :map?) -> [{name :string, price :float}]",
        "{total :float, items [:string]?}",
        ":int?",
    ]:
        assert str(parse_signature(text)) == text
    assert (
        str(parse_signature("(a :integer b :boolean) -> :vector")) == "(a :int, b :bool) -> :list"
    )
    with pytest.raises(SignatureError):
        parse_signature("(a :strin) -> :int")
    with pytest.raises(SignatureError):
        parse_signature("(a :string")


class Item(TypedDict):
    name: str
    price: float


def test_signature_from_type_hints():
    """FMT-004: a tool's signature is derived from its Python type hints."""

    def search_reviews(category: str, max_results: int = 5) -> str:
        """Search reviews.

        Longer text."""
        return ""

    def items(tags: list[str], extra: dict[str, Any] | None) -> list[Item]:
        return []

    def untyped(a, *rest, **opts):
        return None

    assert str(signature_from_callable(search_reviews)) == (
        "(category :string, max-results :int?) -> :string"
    )
    assert str(signature_from_callable(items)) == (
        "(tags [:string], extra :map?) -> [{name :string, price :float}]"
    )
    # *rest is the variadic tail (each of its annotated type); **opts an optional map
    assert str(signature_from_callable(untyped)) == "(a :any, & rest [:any], opts :map?) -> :any"


def test_check_value():
    sig = parse_signature("[{name :string, price :float, tag :keyword?}]").returns
    assert check_value([{"name": "a", "price": 2}], sig) is None
    assert check_value([{"name": "a"}], sig) == "[0].price: missing key :price"
    assert check_value([{"name": 1, "price": 1.0}], sig) == "[0].name: expected :string, got int"
    assert (
        check_value({"a": 1}, sig) == "value: expected [{name :string, price :float, tag "
        ":keyword?}], got dict"
    )
    assert check_value(None, parse_signature(":int?").returns) is None
    assert check_value(True, parse_signature(":int").returns) == "value: expected :int, got bool"
