"""One source for the reference: docs/LANGUAGE.md (shipped as ptc.language_reference()) and
docs/FUNCTIONS.md, the system prompt's function list and the catalogue all read the core's
builtins table (issue 11)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import ptc
import pytest
from ptc import _core
from ptc.prompts import system_prompt

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "LANGUAGE.md"
sys.path.insert(0, str(ROOT / "scripts"))
import gen_functions  # noqa: E402


def test_the_reference_ships_in_the_package_as_in_the_repository() -> None:
    docs = (ROOT / "docs" / "LANGUAGE.md").read_text(encoding="utf-8")
    assert ptc.language_reference() == docs
    assert docs.startswith("# ") and "## " in docs


@pytest.mark.skipif(
    not SHARED.exists(), reason="../shared/LANGUAGE.md (the design workspace) is not here"
)
def test_the_reference_matches_the_design_workspace_copy() -> None:
    assert (ROOT / "docs" / "LANGUAGE.md").read_text(encoding="utf-8") == SHARED.read_text(
        encoding="utf-8"
    )


def test_functions_md_is_generated_from_the_builtins_table() -> None:
    current = (ROOT / "docs" / "FUNCTIONS.md").read_text(encoding="utf-8")
    assert current == gen_functions.render(_core.builtins()), (
        "docs/FUNCTIONS.md is out of date: run python scripts/gen_functions.py"
    )


def test_the_table_is_the_one_the_names_come_from() -> None:
    rows = _core.builtins()
    assert [r[0] for r in rows] == _core.builtin_names()
    assert len(rows) > 150
    undocumented = [name for name, _lo, _hi, doc, _c in rows if not doc.strip()]
    assert undocumented == []
    by_name = {r[0]: r for r in rows}
    assert by_name["+"][1:3] == (0, None)  # variadic
    assert by_name["first"][1:3] == (1, 1)


def test_every_function_the_system_prompt_names_is_in_the_table() -> None:
    text = system_prompt()
    listed = re.search(r"Useful functions: `([^`]*)`", text, re.S)
    assert listed is not None
    names = listed.group(1).split()
    missing = [n for n in names if n not in set(_core.builtin_names())]
    assert missing == [] and len(names) > 40
    # the list is generated from the core's builtins module, not written in the prompt file
    assert names == _core.prompt_functions()
    assert "{{" not in text
    assert max(len(line) for line in text.splitlines()) <= 100


def test_the_api_reference_is_current() -> None:
    """docs/API.md is generated from the package (scripts/gen_api.py). Signatures render a
    little differently across Python versions; the file is made with the one CI uses."""
    if sys.version_info[:2] != (3, 11):
        pytest.skip("docs/API.md is generated with Python 3.11, the version CI runs")
    import gen_api  # scripts/ is on the path (above)

    current = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
    assert current == gen_api.render(), "docs/API.md is out of date: run python scripts/gen_api.py"
