"""Tools the MCP server test loads with `--tool stock_tools:...`."""

from __future__ import annotations


def restock(sku: str, qty: int) -> dict[str, object]:
    """Order more of a sku."""
    return {"sku": sku, "ordered": qty}


async def price(sku: str) -> float:
    """Current price of a sku."""
    return {"a1": 9.5, "b2": 20.0}.get(sku, 0.0)


def _discard(sku: str) -> str:
    """Throw away the stock of a sku (a person approves it first)."""
    return f"discarded {sku}"


def _make_discard() -> object:
    import ptc

    return ptc.Tool(_discard, name="discard", effect="write", approval=True)


discard = _make_discard()
