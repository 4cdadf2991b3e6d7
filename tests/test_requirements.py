"""Requirement traceability lives in one file, tests/requirements.toml: each requirement ID of
seed 001 and the tests that check it. Test names and user docs stay free of IDs."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
MAPPING = TESTS / "requirements.toml"
REQUIREMENTS = TESTS.parents[1] / "shared/seeds/001_dba39dc82c4bddad.txt"
PREFIXES = "API|ARC|NS|FMT|TYP|TRN|SAM|DEF|TC|MSG|CMP|ERR|SS|DBG"
ROW = re.compile(r"^\|\s*((?:" + PREFIXES + r")-\d{3})\s*\|", re.MULTILINE)


def mapping() -> dict[str, list[str]]:
    with MAPPING.open("rb") as f:
        table: dict[str, list[str]] = tomllib.load(f)["requirements"]
    return table


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        n.name
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name.startswith("test")
    }


def test_every_mapped_test_exists() -> None:
    table = mapping()
    assert len(table) >= 100, "the mapping lost its entries"
    missing = []
    for rid, tests in table.items():
        assert re.fullmatch(rf"(?:{PREFIXES})-\d{{3}}", rid), rid
        assert tests, f"{rid} has no test"
        for ref in tests:
            file, _, name = ref.partition("::")
            path = TESTS / file
            if not path.exists() or name not in defined_tests(path):
                missing.append(f"{rid}: {ref}")
    assert missing == []


def test_test_names_carry_no_requirement_ids() -> None:
    id_suffix = re.compile(r"_(?:" + PREFIXES.lower() + r")\d{3}(?:_|$)")
    named = [
        f"{p.relative_to(TESTS)}::{n}"
        for p in sorted(TESTS.rglob("test_*.py"))
        for n in defined_tests(p)
        if id_suffix.search(n)
    ]
    assert named == []


@pytest.mark.skipif(
    not REQUIREMENTS.exists(),
    reason="needs ../shared/seeds beside the clone (the README's test section says so)",
)
def test_every_requirement_id_of_the_seed_is_mapped() -> None:
    required = set(ROW.findall(REQUIREMENTS.read_text(encoding="utf-8")))
    assert len(required) > 100, "requirements table not parsed"
    table = mapping()
    assert sorted(required - set(table)) == []
    assert sorted(set(table) - required) == []


def test_user_docs_carry_no_requirement_ids() -> None:
    """The IDs are the team's traceability, kept in the mapping; readers get plain words."""
    root = TESTS.parent
    id_pattern = re.compile(rf"\b(?:{PREFIXES})-\d{{3}}\b")
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    found = [
        f"{d.name}:{n}"
        for d in docs
        if d.name != "PROGRESS.md"  # the team's own notes
        for n, line in enumerate(d.read_text(encoding="utf-8").splitlines(), 1)
        if id_pattern.search(line)
    ]
    assert found == []
