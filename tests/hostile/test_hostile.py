"""Hostile programs end in the outcome the spec allows — a value or a typed limit error — within
the case's time and memory bounds, and never crash or hang the host (README.md §Why, LANGUAGE.md
§11). One test per corpus case; see README.md in this folder for the bounds."""

from __future__ import annotations

import json
import os
import time

import pytest
from hostile_corpus import CASES, Case
from hostile_runner import MAX_THREADS, judge, memory_bound_mb, time_bound_s

pytestmark = pytest.mark.hostile


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile(case: Case, hostile_scheduler) -> None:  # type: ignore[no-untyped-def]
    res = hostile_scheduler.result(case)
    problems = judge(case, res)
    path = os.environ.get("HOSTILE_RESULTS")
    if path:  # one JSON line per case, for reports
        rep = res.get("report") or {}
        with open(path, "a") as f:
            f.write(
                json.dumps(
                    {
                        "id": case.id,
                        "category": case.category,
                        "known": case.known,
                        "status": res["status"],
                        "problems": problems,
                        "seconds": rep.get("seconds"),
                        "growth_mb": rep.get("growth_mb"),
                        "threads": res.get("max_threads"),
                        "wall": res.get("wall"),
                        "kind": rep.get("kind"),
                        "type": rep.get("type"),
                        "limit": rep.get("limit"),
                        "message": (rep.get("message") or "")[:200],
                        "at": time.time(),
                        "core": rep.get("core"),
                    }
                )
                + "\n"
            )
    if problems:
        lines = [f"{kind.upper()}: {msg}" for kind, msg in problems]
        lines.append(f"program: {case.source_text()}")
        lines.append(
            f"limits: {case.limits}; bounds: time {time_bound_s(case):.2f}s, "
            f"memory {memory_bound_mb(case):.0f} MB, threads {MAX_THREADS}"
        )
        pytest.fail("\n".join(lines), pytrace=False)
