"""Builders for hand-made turns, so rendering is tested without running programs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ptc.compression import DataEntry, ToolSpec
from ptc.turn import MemoryEntry, ToolCallRecord, Turn, TurnError

SYSTEM = "SYSTEM PROMPT"
MISSION = "Find well-reviewed products in stock"

TOOLS = (
    ToolSpec(
        "search-reviews",
        ("category",),
        "(category :string) -> :string",
        "Search product reviews by category",
    ),
    ToolSpec("get-inventory", (), "() -> :string", "Warehouse inventory report"),
)
# The seed's products example, shared by the scenario and measurement tests.
PRODUCTS = [
    {"name": "Laptop", "price": 1200, "category": "Electronics"},
    {"name": "Mouse", "price": 25, "category": "Electronics"},
    {"name": "Desk", "price": 300, "category": "Furniture"},
    {"name": "Monitor", "price": 400, "category": "Electronics"},
    {"name": "Chair", "price": 150, "category": "Furniture"},
    {"name": "Keyboard", "price": 80, "category": "Electronics"},
    {"name": "Lamp", "price": 40, "category": "Furniture"},
]

DATA = (
    DataEntry(
        "products",
        "list[7]",
        '{:name "Laptop", :price 1200, :category "Electronics"}',
    ),
)


def opts(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "mission": MISSION,
        "system_prompt": SYSTEM,
        "max_turns": 5,
        "tools": TOOLS,
        "data": DATA,
    }
    base.update(extra)
    return base


def value(name: str, type_: str, sample: str | None = None, doc: str | None = None) -> MemoryEntry:
    return MemoryEntry(name, "value", type_, sample, doc)


def func(
    name: str, params: Sequence[str], doc: str | None = None, returns: str | None = None
) -> MemoryEntry:
    return MemoryEntry(
        name, "function", f"#fn[{' '.join(params)}]", None, doc, tuple(params), returns
    )


def call(name: str, args_text: str = "", result: Any = None) -> ToolCallRecord:
    return ToolCallRecord(name, (), args_text, result)


def turn(
    number: int,
    program: str = "(+ 1 2)",
    *,
    prints: Sequence[str] = (),
    calls: Sequence[ToolCallRecord] = (),
    memory: Sequence[MemoryEntry] = (),
    defined: Sequence[str] = (),
    error: str | None = None,
    error_type: str = "undefined_variable",
    hint: str | None = None,
    result_text: str = "3",
) -> Turn:
    return Turn(
        number=number,
        program=program,
        result=None,
        result_text=result_text if error is None else "",
        prints=tuple(prints),
        tool_calls=tuple(calls),
        memory=tuple(memory),
        success=error is None,
        defined=tuple(defined),
        error=TurnError(error_type, error, hint) if error else None,
        response=f"```clojure\n{program}\n```",
    )


def fence(program: str) -> str:
    """An LLM reply with the program in a fenced block, as models usually answer."""
    return f"Here is my program:\n```clojure\n{program}\n```"
