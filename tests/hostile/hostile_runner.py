"""Parent side of the hostile suite: runs one case in a capped child process and judges it.

Bounds (a case fails when any is broken; see README.md):
- crash:   the child dies (signal, abort, non-zero exit) or prints something that is not the report
- hang:    no report within 3 x timeout_ms + 5 s after the child is ready
- outcome: the outcome is not one of the case's expected outcomes
- time:    the run took more than 1.2 x timeout_ms + 150 ms (+ the case's stated allowance for a
           tool call that cannot be interrupted)
- memory:  peak RSS growth over the run exceeded 1.2 x max_memory + 32 MB
- threads: the child ran more than 2 x CPUs + 6 threads at once (§7.13: at most 2 x CPU-count
           branches run at once; +6 for the main thread and the runtime's own helpers)
"""

from __future__ import annotations

import collections
import errno
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from hostile_corpus import ANY_LIMIT, Case, Outcome

WORKER = str(Path(__file__).with_name("hostile_worker.py"))

ADDRESS_SPACE_BYTES = 3 * 1024**3  # per child: a runaway allocation crashes the child only
READY_SECONDS = 180.0  # import (the extension may be being rebuilt) + building the case's data
DROP_SECONDS = 30.0  # releasing the result after the report
TIME_FACTOR, TIME_SLACK_S = 1.2, 0.150
MEM_FACTOR, MEM_SLACK_MB = 1.2, 32.0
CPUS = os.cpu_count() or 1
MAX_THREADS = 2 * CPUS + 6
HANG_FACTOR, HANG_SLACK_S = 3.0, 5.0
SESSION_SLACK_S = 20.0  # converting the host data (e.g. 10M ints) is not part of the run
TIMEOUT_CAP_MS = 10_000  # bounds use at most this timeout, whatever a host-limit case passes

# LANGUAGE.md §11 defaults, for cases that leave a limit unset
DEFAULT_TIMEOUT_MS = 5000
DEFAULT_MAX_MEMORY = 256 * 1024**2


def effective_timeout_ms(case: Case) -> int:
    t = case.limits.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    return max(0, min(int(t), TIMEOUT_CAP_MS))


# Releasing the session (its definitions and the input it converted, up to millions of
# values) is not part of the run's time, but must not take pathologically long either.
RELEASE_BOUND_S = 2.0


def time_bound_s(case: Case) -> float:
    return TIME_FACTOR * effective_timeout_ms(case) / 1000 + TIME_SLACK_S + case.extra_ms / 1000


def memory_bound_mb(case: Case) -> float:
    m = max(0, int(case.limits.get("max_memory", DEFAULT_MAX_MEMORY)))
    return MEM_FACTOR * m / 1024**2 + MEM_SLACK_MB


def hang_s(case: Case) -> float:
    return HANG_FACTOR * effective_timeout_ms(case) / 1000 + HANG_SLACK_S + case.extra_ms / 1000


def threads_of(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# Spawning can fail transiently on a loaded machine (seen once in CI: execve of the Python
# binary returned EFAULT); that is the harness, not the case, so it is retried a few times.
SPAWN_ATTEMPTS = 4
TRANSIENT_SPAWN_ERRNOS = {errno.EFAULT, errno.EAGAIN, errno.ENOMEM, errno.EINTR}


def spawn_worker() -> subprocess.Popen[bytes]:
    for attempt in range(SPAWN_ATTEMPTS):
        try:
            return subprocess.Popen(
                [sys.executable, WORKER, str(ADDRESS_SPACE_BYTES)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as e:
            if e.errno not in TRANSIENT_SPAWN_ERRNOS or attempt == SPAWN_ATTEMPTS - 1:
                raise
            print(f"hostile: spawning the worker failed ({e}); retrying", file=sys.stderr)
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


class Child:
    """One worker process for one case."""

    def __init__(self, case: Case) -> None:
        job = {
            "src": case.src,
            "gen": case.gen,
            "data": case.data,
            "tools": case.tools,
            "limits": case.limits,
            "checks": case.checks(),
        }
        self.proc = spawn_worker()
        # stderr after the last phase marker: its head (a panic message) and its tail
        self.phase = "start"
        self.err_head: list[bytes] = []
        self.err: collections.deque[bytes] = collections.deque(maxlen=30)
        self._err_thread = threading.Thread(target=self._drain_stderr, daemon=True)
        self._err_thread.start()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(job).encode())
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        self.buffer = b""
        self.max_threads = 0

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            if line.startswith(b"phase: "):
                self.phase = line[7:].decode(errors="replace").strip()
                self.err_head, self.err = [], collections.deque(maxlen=30)
            elif len(self.err_head) < 12:
                self.err_head.append(line[:600])
            else:
                self.err.append(line[:600])

    def stderr_tail(self) -> str:
        """What the child wrote to stderr in its last phase: the first lines and the last."""
        self._err_thread.join(timeout=2)
        head = b"".join(self.err_head).decode(errors="replace")
        tail = b"".join(self.err).decode(errors="replace")[-1200:]
        return head + ("[...]\n" + tail if tail else "")

    def last_phase(self) -> str:
        self._err_thread.join(timeout=0.5)
        return self.phase

    def read_line(self, timeout: float, watch_threads: bool = False) -> bytes | None:
        """The next stdout line; None at EOF; raises TimeoutError."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            if watch_threads:
                self.max_threads = max(self.max_threads, threads_of(self.proc.pid))
            ready, _, _ = select.select([fd], [], [], min(remaining, 0.02))
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    if self.buffer:
                        line, self.buffer = self.buffer, b""
                        return line
                    return None
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # this child only, by its own handle
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def signal_name(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit status {code}"


def run_case(case: Case, register: Any = None) -> dict[str, Any]:
    """Runs the case in a fresh child; returns what happened (never raises for the child)."""
    child = Child(case)
    if register is not None:
        register(child)
    res: dict[str, Any] = {"status": "done"}
    try:
        try:
            line = child.read_line(READY_SECONDS)
        except TimeoutError:
            child.kill()
            return {
                "status": "setup",
                "detail": "the worker was not ready in time",
                "stderr": child.stderr_tail(),
            }
        if line != b"ready":
            child.kill()
            return {
                "status": "crash",
                "phase": child.last_phase(),
                "detail": f"before the run ({signal_name(child.proc.returncode)}); "
                f"stdout {(line or b'')[:200]!r}",
                "stderr": child.stderr_tail(),
            }
        try:
            line = child.read_line(hang_s(case) + SESSION_SLACK_S)
        except TimeoutError:
            phase = child.last_phase()
            child.kill()
            return {
                "status": "hang",
                "phase": phase,
                "detail": f"the session (host data) was not created within "
                f"{hang_s(case) + SESSION_SLACK_S:.1f}s",
                "stderr": child.stderr_tail(),
            }
        if line != b"session":
            child.kill()
            return {
                "status": "crash",
                "phase": child.last_phase(),
                "detail": f"while creating the session ({signal_name(child.proc.returncode)})",
                "stderr": child.stderr_tail(),
            }
        try:
            line = child.read_line(hang_s(case), watch_threads=True)
        except TimeoutError:
            phase = child.last_phase()
            child.kill()
            return {
                "status": "hang",
                "phase": phase,
                "detail": f"no report {hang_s(case):.1f}s after the run started",
                "max_threads": child.max_threads,
                "stderr": child.stderr_tail(),
            }
        if line is None:
            code = child.proc.wait(timeout=10)
            return {
                "status": "crash",
                "phase": child.last_phase(),
                "detail": signal_name(code),
                "max_threads": child.max_threads,
                "stderr": child.stderr_tail(),
            }
        try:
            res["report"] = json.loads(line)
        except ValueError:
            child.kill()
            return {
                "status": "crash",
                "phase": child.last_phase(),
                "detail": f"non-JSON output {line[:200]!r}",
                "stderr": child.stderr_tail(),
            }
        res["max_threads"] = child.max_threads
        try:
            line = child.read_line(DROP_SECONDS)
        except TimeoutError:
            child.kill()
            res.update(
                status="hang",
                phase="drop result",
                detail=f"releasing the result took over {DROP_SECONDS:.0f}s",
                stderr=child.stderr_tail(),
            )
            return res
        code = child.proc.wait(timeout=10)
        if line != b"dropped" or code != 0:
            res.update(
                status="crash",
                phase=child.last_phase(),
                detail=f"after the report ({signal_name(code)})",
                stderr=child.stderr_tail(),
            )
        return res
    finally:
        child.kill()


# --------------------------------------------------------------------------- judging


def matches(o: Outcome, rep: dict[str, Any], index: dict[str, int]) -> bool:
    kind = rep.get("kind")
    if o.kind in ("ok", "fail"):
        if kind != o.kind:
            return False
        if o.check is not None and not rep["checks"][index[o.check]]:
            return False
        if o.prints is not None:
            p = rep["prints"]
            want = o.prints
            if "count" in want and p["count"] != want["count"]:
                return False
            if (
                "each" in want
                and p["count"]
                and (p["min"] != want["each"] or p["max"] != want["each"])
            ):
                return False
        return True
    if o.kind == "error":
        return (
            kind == "error"
            and rep["type"] == o.type
            and (o.limit is ANY_LIMIT or rep["limit"] == o.limit)
        )
    if o.kind == "raise":
        return (
            kind == "raise"
            and o.exc in rep["exc"]
            and any(name in rep["message"] for name in o.names)
        )
    raise ValueError(o.kind)


def describe(rep: dict[str, Any]) -> str:
    kind = rep.get("kind")
    if kind == "error":
        return f"error {rep['type']}/{rep['limit']}: {rep['message'][:200]}"
    if kind == "raise":
        return f"raised {rep['exc'][0]} at {rep.get('raised_at')}: {rep['message'][:200]}"
    pr = rep.get("prints") or {}
    extra = (
        f" prints={pr.get('count')}x(len {pr.get('min')}..{pr.get('max')})"
        if pr.get("count")
        else ""
    )
    return f"{kind} {rep.get('value', '')[:200]}{extra}"


def judge(case: Case, res: dict[str, Any]) -> list[tuple[str, str]]:
    """The failures of one case as (kind, message); empty when it passed."""
    status = res["status"]
    if status in ("crash", "hang", "setup"):
        msg = f"{res.get('detail', '')} [phase: {res.get('phase', '?')}]"
        tail = (res.get("stderr") or "").strip()
        if tail:
            msg += f"\n--- child stderr (head and tail of its last phase) ---\n{tail[-2500:]}"
        return [(status, msg)]
    rep = res["report"]
    problems: list[tuple[str, str]] = []
    index = case.check_index()
    if not any(matches(o, rep, index) for o in case.expect):
        problems.append(("outcome", f"got {describe(rep)}; expected one of: {case.expect_text()}"))
    if rep["seconds"] > time_bound_s(case):
        problems.append(
            (
                "time",
                f"run took {rep['seconds']:.2f}s > bound {time_bound_s(case):.2f}s "
                f"({describe(rep)[:120]})",
            )
        )
    growth = rep.get("growth_mb")
    release = rep.get("release_seconds", 0.0)
    if release > RELEASE_BOUND_S:
        problems.append(
            ("time", f"releasing the session took {release:.2f}s > bound {RELEASE_BOUND_S:.2f}s")
        )
    if growth is not None and growth > memory_bound_mb(case):
        problems.append(
            (
                "memory",
                f"peak RSS grew {growth:.0f} MB > bound {memory_bound_mb(case):.0f} MB "
                f"({describe(rep)[:120]})",
            )
        )
    if res.get("max_threads", 0) > MAX_THREADS:
        problems.append(("threads", f"{res['max_threads']} threads at once > bound {MAX_THREADS}"))
    return problems
