"""docs/DESIGN.md's map of the source names every source file, so "where does X live" keeps
one answer as files are added or moved."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def the_map() -> str:
    text = (ROOT / "docs" / "DESIGN.md").read_text(encoding="utf-8")
    return text[text.index("## Map of the source") : text.index("## Pipeline")]


def named(section: str) -> set[str]:
    """Every file name written in backticks in the map (entries like `builtins/*.rs` count for
    the files they cover, and `a`, `b` lists count each)."""
    return set(re.findall(r"`([\w./*-]+)`", section))


def covered(path: str, names: set[str]) -> bool:
    """`builtins/*.rs` covers every file of that folder."""
    return any(n.endswith("*.rs") and path.startswith(n[: -len("*.rs")]) for n in names)


def test_every_source_file_is_on_the_map() -> None:
    section = the_map()
    names = named(section)
    missing = []
    for f in sorted((ROOT / "rust").rglob("*.rs")):
        rel = f.relative_to(ROOT / "rust").as_posix()
        if rel.startswith(("tests/", "benches/")):
            continue
        if rel not in names and not covered(rel, names):
            missing.append(f"rust/{rel}")
    for f in sorted((ROOT / "python" / "ptc").rglob("*.py")):
        rel = f.relative_to(ROOT / "python" / "ptc").as_posix()
        folder = rel.split("/")[0] + "/" if "/" in rel else ""
        if rel in names or f.name in names or (folder and folder in names and f.name in names):
            continue
        if folder and folder in names and f.name == "__init__.py":
            continue
        missing.append(f"python/ptc/{rel}")
    assert missing == []


def test_long_source_files_say_why_at_their_top() -> None:
    """A source file past 600 lines says at its top why it stays one file."""
    long_without_reason = []
    files = [*(ROOT / "rust").rglob("*.rs"), *(ROOT / "python" / "ptc").rglob("*.py")]
    for f in sorted(files):
        rel = f.relative_to(ROOT).as_posix()
        if rel.startswith(("rust/tests/", "rust/benches/")):
            continue
        lines = f.read_text(encoding="utf-8").splitlines()
        if len(lines) > 600 and not any("Why one " in line for line in lines[:40]):
            long_without_reason.append(f"{rel} ({len(lines)} lines)")
    assert long_without_reason == []
