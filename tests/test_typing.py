"""The package type-checks under `mypy --strict`, and the stubs of the Rust module match it at
runtime (`stubtest`): both run here, so the README's test command (and CI) keeps them clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(600)
def test_mypy_strict(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path), "python/ptc"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


@pytest.mark.timeout(600)
def test_stubtest_of_the_rust_module(tmp_path: Path) -> None:
    # PEP 800 disjoint bases are not spelled in the stubs: typing has no marker for them yet
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "--ignore-disjoint-bases", "ptc._core"],
        cwd=tmp_path,  # the installed package, not the source tree's
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
