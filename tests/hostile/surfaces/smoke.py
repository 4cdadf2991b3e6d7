"""The harness itself: a passing case, so a broken harness fails loudly."""

from __future__ import annotations

from pathlib import Path

from . import case


@case(seconds=30, memory_mb=300)
def case_a_plain_run_passes(tmp: Path) -> None:
    import ptc

    assert ptc.run("(+ 1 2)").value == 3
