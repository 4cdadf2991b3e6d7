"""Hostile cases against the surfaces around the interpreter: each case runs in its own capped
child (``surface_child.py``) and must end with ``PASS`` within its wall-time and peak-RSS bounds.
A crash (signal, abort), a hang (killed at the bound) or a failed assertion fails the case."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest
from surfaces import SurfaceCase, collect

HERE = Path(__file__).parent
CASES = collect()
REQUIRE_PG = os.environ.get("PTC_REQUIRE_POSTGRES") == "1"


def _need(case: SurfaceCase) -> None:
    if "postgres" in case.needs and not os.environ.get("PTC_TEST_POSTGRES_URL"):
        why = "PTC_TEST_POSTGRES_URL is not set (scripts/postgres.sh start prints one)"
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL surface case required (PTC_REQUIRE_POSTGRES=1): {why}")
        pytest.skip(f"PostgreSQL surface case: {why}")


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_surface(case: SurfaceCase, tmp_path: Path) -> None:
    _need(case)
    argv = [
        sys.executable,
        str(HERE / "surface_child.py"),
        case.surface,
        case.name,
        str(tmp_path),
        str(case.address_space_mb),
    ]
    started = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        start_new_session=True,
    )
    chunks: dict[str, bytes] = {}

    def drain(name: str, pipe: IO[bytes]) -> None:
        chunks[name] = pipe.read()

    readers = [
        threading.Thread(target=drain, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=drain, args=("err", proc.stderr), daemon=True),
    ]
    for r in readers:
        r.start()
    hung = False
    while True:
        pid, status, _ = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - started > case.seconds:
            hung = True
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, _ = os.wait4(proc.pid, 0)
            break
        time.sleep(0.02)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - started
    for r in readers:
        r.join(5)
    out, err = chunks.get("out", b""), chunks.get("err", b"")
    text = out.decode(errors="replace")
    # the child's own VmHWM, printed before PASS (wait4's ru_maxrss would count the parent's
    # pages the child held between fork and exec)
    peaks = [line.split()[1] for line in text.splitlines() if line.startswith("PEAK_KB ")]
    peak_mb = int(peaks[-1]) / 1024 if peaks else 0.0
    tail = err.decode(errors="replace")[-3000:]
    if hung:
        pytest.fail(f"HANG: no end within {case.seconds:.0f} s\n{text[-2000:]}\n{tail}")
    if proc.returncode < 0:
        name = signal.Signals(-proc.returncode).name
        pytest.fail(f"CRASH: the child died of {name}\n{text[-2000:]}\n{tail}")
    if proc.returncode != 0 or not text.rstrip().endswith("PASS"):
        pytest.fail(f"FAILED (exit {proc.returncode})\n{text[-3000:]}\n{tail}")
    if peak_mb > case.memory_mb:
        pytest.fail(f"MEMORY: peak RSS {peak_mb:.0f} MB > {case.memory_mb} MB (wall {wall:.1f} s)")
