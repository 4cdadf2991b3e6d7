"""Make ``ptc.history`` importable even when ``ptc/__init__.py`` cannot be imported yet
(it may import the Rust core before it is built). ``ptc.history`` uses nothing else."""

from __future__ import annotations

import sys
import types
from pathlib import Path

PKG_DIR = Path(__file__).resolve().parents[2] / "python" / "ptc"

try:
    import ptc
except Exception:
    for name in [n for n in sys.modules if n == "ptc" or n.startswith("ptc.")]:
        del sys.modules[name]
    stub = types.ModuleType("ptc")
    stub.__path__ = [str(PKG_DIR)]
    sys.modules["ptc"] = stub

import ptc.history  # noqa: E402,F401
