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


def cargo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["cargo", *args], cwd=ROOT, capture_output=True, text=True, timeout=1200)


def test_cargo_fmt() -> None:
    out = cargo("fmt", "--check")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_cargo_clippy_with_the_unsafe_lints() -> None:
    """Clippy over the library, its tests and the bindings, warnings denied; Cargo.toml's
    `[lints]` deny an `unsafe` block without a `// SAFETY:` comment, an unsafe operation
    outside an `unsafe` block in an `unsafe fn`, and a public `unsafe fn` without `# Safety`."""
    out = cargo("clippy", "--all-targets", "--features", "python", "--", "-D", "warnings")
    assert out.returncode == 0, out.stderr[-6000:]


def test_cargo_clippy_without_the_bindings() -> None:
    """The library as `cargo test` and the fuzz harness build it (no PyO3): an import only
    the bindings use is a warning there, denied too."""
    out = cargo("clippy", "--all-targets", "--", "-D", "warnings")
    assert out.returncode == 0, out.stderr[-6000:]
