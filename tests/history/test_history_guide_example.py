"""The example table of docs/HISTORY.md is what docs/examples/history_example.py prints."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
from ptc.history import is_valid, repair, validate
from ptc.history.tokens import ExactCounter

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "examples" / "history_example.py"
GUIDE = ROOT / "docs" / "HISTORY.md"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("history_example", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up while the class is built
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def guide_table() -> str:
    text = GUIDE.read_text(encoding="utf-8")
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Strategy (options) |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def test_history_matches_the_guide(example) -> None:
    history = example.build_history()
    assert len(history) == 55
    assert validate(history) == []
    roles = [m["role"] for m in history]
    assert roles[0] == "system" and roles.count("user") == 6
    assert any(len(m.get("tool_calls") or []) == 2 for m in history)  # parallel calls
    assert example.build_history() == history  # deterministic


def test_every_output_is_valid(example) -> None:
    rows = example.run()
    assert [r.label for r in rows] == [c.label for c in example.strategies()]
    example.check(rows)
    for r in rows:
        sent = r.result.for_provider("strict")
        assert validate(sent) == [], r.label
        assert is_valid(sent), r.label
        assert repair(sent)[0] == sent, r.label
        assert is_valid(r.result.for_provider("openai"), provider="openai"), r.label
        assert r.messages_after < r.messages_before
        assert r.tokens_after < r.tokens_before


def test_main_prints_the_table(example, capsys) -> None:
    example.main()
    out = capsys.readouterr().out
    assert example.render_table(example.run()) in out


def test_guide_table_is_the_script_output(example) -> None:
    counter = example.table_counter()
    assert isinstance(counter, ExactCounter)  # the guide's table is counted with o200k_base
    rows = example.run(counter)
    assert guide_table() == example.render_table(rows)
    guide = GUIDE.read_text(encoding="utf-8")
    first = rows[0]
    size = f"**{first.messages_before} messages, {first.tokens_before:,}"
    assert size in re.sub(r"\s+", " ", guide)
    assert "`o200k_base` (exact, `ptc._core.count_tokens`)" in guide
    split = rows[-1]
    prose = f"The output is {split.messages_after} messages and {split.tokens_after:,} tokens"
    assert prose in re.sub(r"\s+", " ", guide)
