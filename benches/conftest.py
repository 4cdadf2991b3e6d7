"""Shared fixtures for the benchmarks: one set of 100,000 order records per session."""

from __future__ import annotations

import random
from typing import Any

import pytest

REGIONS = ["north", "south", "east", "west"]
STATUSES = ["shipped", "pending", "cancelled"]


def make_orders(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [
        {
            "id": i,
            "customer": f"c{rng.randrange(5000)}",
            "region": rng.choice(REGIONS),
            "status": rng.choice(STATUSES),
            "total": round(rng.random() * 200, 2),
            "items": rng.randrange(1, 9),
            "note": rng.choice(["", "gift", "express delivery", "fragile, handle with care"]),
        }
        for i in range(n)
    ]


@pytest.fixture(scope="session")
def orders() -> list[dict[str, Any]]:
    return make_orders(100_000)
