"""The README's Python blocks run, in order, in one namespace, with a small prelude for the
names they assume (`orders`, `fetch_user`, `my_summarizer`, `openai_messages`, an
orders.json in the working directory). A line `expression  # literal` must evaluate to that
literal (issue 11: code blocks executed by a test)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

ORDERS = [
    {"id": 1, "total": 250.0, "status": "shipped"},
    {"id": 2, "total": 40.0, "status": "pending"},
    {"id": 3, "total": 120.0, "status": "shipped"},
]


def fetch_user(id: int) -> dict[str, Any]:  # the README calls it with {:id 7}
    return {"id": id, "name": f"user{id}"}


def my_summarizer(request: Any) -> str:
    return "The user asked about orders; totals were computed."


OPENAI_MESSAGES = [
    {"role": "system", "content": "You help with orders."},
    *[
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 20}
        for i in range(12)
    ],
]


def blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return re.findall(r"^```python\n(.*?)^```$", text, re.S | re.M)


def expected_of(line: str) -> tuple[bool, Any]:
    """The literal in a line's trailing comment, if the comment is one."""
    _, sep, comment = line.partition("#")
    if not sep:
        return False, None
    try:
        value = ast.literal_eval(comment.strip())
    except (ValueError, SyntaxError):
        return False, None  # a comment in words
    return True, value


def run_block(code: str, namespace: dict[str, Any]) -> int:
    """Runs the block a statement at a time; an expression statement whose line ends in a
    literal comment must evaluate to it. Returns how many were compared."""
    lines = code.splitlines()
    compared = 0
    for stmt in ast.parse(code).body:
        if isinstance(stmt, ast.Expr):
            value = eval(compile(ast.Expression(stmt.value), str(README), "eval"), namespace)
            has, expected = expected_of(lines[(stmt.end_lineno or stmt.lineno) - 1])
            if has:
                assert value == expected, ast.unparse(stmt)
                compared += 1
        else:
            exec(compile(ast.Module([stmt], []), str(README), "exec"), namespace)
    return compared


def test_the_readme_blocks_run_and_show_what_they_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "orders.json").write_text(json.dumps({"orders": ORDERS}))
    namespace: dict[str, Any] = {
        "orders": ORDERS,
        "fetch_user": fetch_user,
        "my_summarizer": my_summarizer,
        "openai_messages": OPENAI_MESSAGES,
    }
    found = blocks()
    assert len(found) >= 3
    checked = sum(run_block(code, namespace) for code in found)
    assert checked >= 2  # the literal-commented lines were found and compared
    assert namespace["step"].ok and namespace["step"].value == 2
