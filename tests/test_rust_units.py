"""The Rust unit tests that need an interpreter: those beside the conversion's reads of CPython's
objects (rust/python/convert/ffi.rs), built with the bindings and an embedded Python. The
README's `cargo test` builds the library without the bindings, so it does not run them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_conversions_unit_tests_pass_with_an_embedded_interpreter() -> None:
    out = subprocess.run(
        ["cargo", "test", "--features", "python", "--lib", "python::"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    # the tests ran (a filter that matched nothing would pass too)
    ran = re.search(r"test result: ok\. (\d+) passed", out.stdout)
    assert ran is not None and int(ran[1]) >= 8, out.stdout[-2000:]
