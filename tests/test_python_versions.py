"""The extension compiles for every CPython the release builds a wheel for (3.12–3.14 here;
3.11 is the one this suite runs on). Wheels are per version because the conversion reads
CPython's object layouts directly; `scripts/check_versions.sh` type-checks the crate against
each version's PyO3 configuration, with no interpreter of that version needed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.timeout(1800)
def test_the_extension_compiles_for_each_released_python() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "check_versions.sh")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compiles for CPython 3.12 3.13 3.14" in done.stdout
