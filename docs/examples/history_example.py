"""Regenerate the example table of ``docs/HISTORY.md``.

Builds the guide's example history (a coding agent working through six steps: 55 messages),
runs every strategy the table lists with the options the guide states and the built-in
``DeterministicSummarizer``, and prints the markdown table. Run from the repository root::

    python docs/examples/history_example.py

The token columns are counted with the exact ``o200k_base`` tokenizer
(``ptc.history.tokens.default_counter(encoding="o200k_base")``) when the compiled core provides
``ptc._core.count_tokens``, else with the byte estimate (``EstimateCounter``); the first printed
line says which.
Everything is deterministic: no randomness, no clock, no environment.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ptc.history import (
    DeterministicSummarizer,
    HistoryResult,
    LoopSlices,
    Message,
    SafeSplitSummarization,
    TokenCompaction,
    TokenCounter,
    to_messages,
    validate,
)
from ptc.history.tokens import ExactCounter, count_messages, default_counter

STEPS = 6
PYTEST_LINES = 400
SYSTEM_PROMPT = (
    "You are a coding agent working in /repo. Use the tools to read, search and edit files "
    "and to run commands. Keep changes small, run the tests after every edit, and report "
    "what you changed."
)


def _call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args, sort_keys=True)},
    }


def _source_file(step: int) -> str:
    """A long ``src/api.py`` as ``read_file`` returns it (it grows a little every step)."""
    lines = ['"""Orders API."""', "", "from fastapi import APIRouter, HTTPException", ""]
    lines.append("router = APIRouter()")
    for i in range(40 + 2 * step):
        lines += [
            "",
            f'@router.get("/orders/{{order_id}}/item/{i}")',
            f"def get_order_item_{i}(order_id: int) -> dict:",
            f"    order = ORDERS.get(order_id)  # handler {i}",
            f"    return {{'id': order_id, 'item': order['items'][{i}]}}",
        ]
    return "\n".join(f"{n + 1:4d}  {line}" for n, line in enumerate(lines))


def _grep_output(step: int) -> str:
    return "\n".join(
        f"src/api.py:{12 + 6 * i}:    order = ORDERS.get(order_id)  # handler {i}"
        for i in range(8 + step)
    )


def _diff(step: int) -> str:
    return "\n".join(
        [
            "--- a/src/api.py",
            "+++ b/src/api.py",
            f"@@ -{12 + step},3 +{12 + step},5 @@",
            "     order = ORDERS.get(order_id)",
            "+    if order is None:",
            f'+        raise HTTPException(status_code=404, detail="unknown order (step {step})")',
            "     return order",
        ]
    )


def _pytest_output(step: int) -> str:
    lines = [f"tests/test_api.py::test_item_{i:03d} PASSED" for i in range(PYTEST_LINES - 2)]
    lines.append("=" * 30 + " warnings summary " + "=" * 30)
    lines.append(f"{PYTEST_LINES - 2} passed, {step} warnings in {1.5 + step / 10:.2f}s")
    return "\n".join(lines)


def build_history() -> list[dict[str, Any]]:
    """The guide's example: system prompt + six steps of nine messages (OpenAI dicts).

    Each step: a user request, one assistant message with two parallel calls (``read_file``
    of the long ``src/api.py`` and a ``grep`` run), their two results, an ``edit_file`` call
    and its diff result, a ``pytest -q`` run with 400 lines of output, and the reply.
    """
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    for s in range(STEPS):
        read, grep, edit, test = (f"call_{s}_{k}" for k in ("read", "grep", "edit", "test"))
        history += [
            {
                "role": "user",
                "content": f"Task {s}: make the /orders endpoint return 404 for unknown ids "
                f"(step {s}).",
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    _call(read, "read_file", path="src/api.py"),
                    _call(grep, "run_command", command="grep -n orders src/*.py"),
                ],
            },
            {"role": "tool", "tool_call_id": read, "content": _source_file(s)},
            {"role": "tool", "tool_call_id": grep, "content": _grep_output(s)},
            {
                "role": "assistant",
                "content": "The handler indexes ORDERS directly; adding the 404 check.",
                "tool_calls": [_call(edit, "edit_file", path="src/api.py", diff=_diff(s))],
            },
            {"role": "tool", "tool_call_id": edit, "content": f"Edited src/api.py\n{_diff(s)}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call(test, "run_command", command="pytest -q")],
            },
            {"role": "tool", "tool_call_id": test, "content": _pytest_output(s)},
            {
                "role": "assistant",
                "content": f"Step {s} done: /orders/<id> now returns 404 for unknown ids, "
                f"and all {PYTEST_LINES - 2} tests pass.",
            },
        ]
    return history


@dataclass(frozen=True)
class Case:
    label: str
    make: Callable[[], Any]


def strategies() -> list[Case]:
    """Every strategy of the guide's table, with the options the guide states."""
    summ = DeterministicSummarizer()
    return [
        Case("`LoopSlices()`", lambda: LoopSlices()),
        Case("`LoopSlices(turn_aware=True)`", lambda: LoopSlices(turn_aware=True)),
        Case(
            '`TokenCompaction(model="gpt-4")` (limit 8,192)',
            lambda: TokenCompaction(model="gpt-4", summarizer=summ),
        ),
        Case(
            "`SafeSplitSummarization(token_threshold=20_000, summary_window=12)`",
            # environ={}: the PTC_HISTORY_* variables must not change the guide's numbers.
            lambda: SafeSplitSummarization(
                token_threshold=20_000, summary_window=12, summarizer=summ, environ={}
            ),
        ),
    ]


def table_counter() -> TokenCounter:
    """Exact ``o200k_base`` when ``ptc._core.count_tokens`` exists, else the estimate."""
    return default_counter(encoding="o200k_base")


def counter_name(counter: TokenCounter) -> str:
    if isinstance(counter, ExactCounter):
        return f"`{counter.encoding}` (exact, `ptc._core.count_tokens`)"
    return "the estimate (`ceil(utf8_bytes / 4) + 4` per message)"


def tokens(counter: TokenCounter, messages: Sequence[Message]) -> int:
    return count_messages(counter, messages)


@dataclass(frozen=True)
class Row:
    label: str
    result: HistoryResult
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int

    def markdown(self) -> str:
        s = self.result.stats
        return (
            f"| {self.label} | {self.messages_before} → {self.messages_after} "
            f"| {self.tokens_before:,} → {self.tokens_after:,} | {s.messages_dropped} "
            f"| {s.summaries_made} | {s.repairs_applied} |"
        )


HEADER = (
    "| Strategy (options) | Messages before → after | Tokens before → after | Dropped "
    "| Summaries | Repairs |\n|---|---|---|---|---|---|"
)


def run(counter: TokenCounter | None = None) -> list[Row]:
    counter = counter or table_counter()
    history = build_history()
    before = to_messages(history)
    n_before = len(before)
    t_before = tokens(counter, before)
    rows = []
    for case in strategies():
        result = case.make().apply(history)
        rows.append(
            Row(
                case.label,
                result,
                n_before,
                len(result.messages),
                t_before,
                tokens(counter, result.messages),
            )
        )
    return rows


def render_table(rows: Sequence[Row]) -> str:
    return "\n".join([HEADER, *(r.markdown() for r in rows)])


def render(counter: TokenCounter | None = None) -> str:
    """The whole printed output: the counter line, the totals line and the table."""
    counter = counter or table_counter()
    rows = run(counter)
    first = rows[0]
    return "\n".join(
        [
            f"Token counter: {counter_name(counter)}",
            f"History: {first.messages_before} messages, {first.tokens_before:,} tokens",
            "",
            render_table(rows),
        ]
    )


def check(rows: Sequence[Row]) -> None:
    """Every output, as sent to a provider, must pass the validator."""
    for r in rows:
        issues = validate(r.result.for_provider("strict"))
        if issues:
            raise AssertionError(f"{r.label}: {issues}")


def main() -> None:
    counter = table_counter()
    check(run(counter))
    print(render(counter))


if __name__ == "__main__":
    main()
