"""Hostile cases aimed at the surfaces around the interpreter (issue: the safety contract at
every surface): checkpoints and resume, history stores, the MCP server, tools and their worker
threads, LLM providers, trace files and host data.

Each module here holds the cases of one surface as plain functions decorated with
:func:`case`. A case does the hostile thing and asserts what docs/SAFETY.md promises; it runs in
its own capped child process (``surface_child.py``), so a crash, an abort or a hang fails that
case, not the suite. The parent (``test_surfaces.py``) also bounds its wall time and peak RSS.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Fn = Callable[[Path], None]


@dataclass(frozen=True)
class SurfaceCase:
    surface: str  # the module's name: checkpoint, store, mcp, tools, llm, trace, host_data, ...
    name: str  # the function's name without ``case_``
    seconds: float  # wall-time bound of the whole child (import included)
    memory_mb: int  # bound on the child's peak RSS
    needs: tuple[str, ...] = ()  # "postgres": runs only where PTC_TEST_POSTGRES_URL is set
    address_space_mb: int = 3072  # RLIMIT_AS of the child
    doc: str = field(default="", compare=False)

    @property
    def id(self) -> str:
        return f"{self.surface}-{self.name}"


def case(
    seconds: float = 20.0,
    memory_mb: int = 400,
    needs: tuple[str, ...] = (),
    address_space_mb: int = 3072,
) -> Callable[[Fn], Fn]:
    """Mark ``fn(tmp: Path) -> None`` as a surface case (it raises to fail)."""

    def mark(fn: Fn) -> Fn:
        fn.__surface__ = (seconds, memory_mb, needs, address_space_mb)  # type: ignore[attr-defined]
        return fn

    return mark


def collect() -> list[SurfaceCase]:
    out: list[SurfaceCase] = []
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if mod.name.startswith("_"):
            continue
        m = importlib.import_module(f"surfaces.{mod.name}")
        for attr, fn in vars(m).items():
            spec: Any = getattr(fn, "__surface__", None)
            if not attr.startswith("case_") or spec is None:
                continue
            seconds, memory_mb, needs, asmb = spec
            out.append(
                SurfaceCase(
                    mod.name,
                    attr[len("case_") :],
                    seconds,
                    memory_mb,
                    tuple(needs),
                    asmb,
                    (fn.__doc__ or "").strip(),
                )
            )
    return out
