"""The repository is ruff-clean (lint and format), checked by CI like the type checks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ruff_check() -> None:
    out = ruff("check")
    assert out.returncode == 0, out.stdout + out.stderr


def test_ruff_format() -> None:
    out = ruff("format", "--check")
    assert out.returncode == 0, out.stdout + out.stderr
