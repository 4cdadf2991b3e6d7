"""Every requirement ID of seed 001 has a test naming it (in its name or docstring)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REQUIREMENTS = Path(__file__).resolve().parents[2].parent / "shared/seeds/001_dba39dc82c4bddad.txt"
PREFIXES = (
    "API",
    "ARC",
    "NS",
    "FMT",
    "TYP",
    "TRN",
    "SAM",
    "DEF",
    "TC",
    "MSG",
    "CMP",
    "ERR",
    "SS",
    "DBG",
)
ROW = re.compile(r"^\|\s*((?:" + "|".join(PREFIXES) + r")-\d{3})\s*\|", re.MULTILINE)
MENTION = re.compile(r"\b(" + "|".join(PREFIXES) + r")[-_](\d{3})\b", re.IGNORECASE)


def required_ids() -> set[str]:
    return set(ROW.findall(REQUIREMENTS.read_text(encoding="utf-8")))


def covered_ids() -> set[str]:
    found: set[str] = set()
    for path in Path(__file__).parent.glob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
                "test"
            ):
                text = node.name + " " + (ast.get_docstring(node) or "")
                found |= {f"{p.upper()}-{n}" for p, n in MENTION.findall(text)}
    return found


@pytest.mark.skipif(not REQUIREMENTS.exists(), reason="../shared/seeds is not beside the clone")
def test_every_requirement_id_has_a_test():
    required = required_ids()
    assert len(required) > 100, "requirements table not parsed"
    missing = sorted(required - covered_ids(), key=lambda i: (i.split("-")[0], i))
    assert not missing, "requirement IDs without a test: " + ", ".join(missing)
