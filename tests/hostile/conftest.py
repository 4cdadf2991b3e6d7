"""The hostile suite: every case of hostile_corpus runs in its own capped child process.

Cases run ahead of the tests that report them, at most HOSTILE_JOBS (default 2, never more
than 2) children at once; a ``solo`` case (parallel branches, all cores) runs alone. Each test
waits for its own case, so ``-k`` / a single test id runs just the selected cases.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from hostile_corpus import CASES, Case
from hostile_runner import Child, run_case

HERE = Path(__file__).parent
MAX_JOBS = 2


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "hostile: hostile programs run in capped child processes (tests/hostile); "
        "deselect with -m 'not hostile'",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.path)).parents:
            item.add_marker(pytest.mark.hostile)


class Scheduler:
    """Runs the selected cases in order, in background threads, each in its own child."""

    def __init__(self, cases: list[Case], jobs: int) -> None:
        self.cases = cases
        self.jobs = jobs
        self.free = jobs
        self.cond = threading.Condition()
        self.stopped = False
        self.live: set[Child] = set()
        self.futures: dict[str, Future[dict[str, Any]]] = {c.id: Future() for c in cases}
        self.thread = threading.Thread(target=self._dispatch, name="hostile-dispatch", daemon=True)
        self.thread.start()

    def _dispatch(self) -> None:
        for case in self.cases:
            need = self.jobs if case.solo else 1
            with self.cond:
                while self.free < need and not self.stopped:
                    self.cond.wait()
                if self.stopped:
                    return
                self.free -= need
            threading.Thread(target=self._run, args=(case, need), daemon=True).start()

    def _register(self, child: Child) -> None:
        with self.cond:
            self.live.add(child)
            if self.stopped:
                child.kill()

    def _run(self, case: Case, need: int) -> None:
        started = time.monotonic()
        try:
            res = run_case(case, self._register)
        except BaseException as e:  # a bug in the harness: fail the case, not the run
            where = traceback.format_exc(limit=-3)
            res = {"status": "setup", "detail": f"harness error {e!r}\n{where}"}
        finally:
            with self.cond:
                self.free += need
                self.live = {c for c in self.live if c.proc.poll() is None}
                self.cond.notify_all()
        res["wall"] = time.monotonic() - started
        self.futures[case.id].set_result(res)

    def result(self, case: Case) -> dict[str, Any]:
        fut = self.futures.get(case.id)
        if fut is None:  # not scheduled (should not happen): run it now, alone
            return run_case(case)
        return fut.result()

    def stop(self) -> None:
        with self.cond:
            self.stopped = True
            live = list(self.live)
            self.cond.notify_all()
        for child in live:
            child.kill()


@pytest.fixture(scope="session")
def hostile_scheduler(request: pytest.FixtureRequest) -> Iterator[Scheduler]:
    by_id = {c.id: c for c in CASES}
    selected: list[Case] = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        case = callspec.params.get("case") if callspec is not None else None
        if isinstance(case, Case) and case.id in by_id:
            selected.append(case)
    jobs = max(1, min(MAX_JOBS, int(os.environ.get("HOSTILE_JOBS", MAX_JOBS))))
    scheduler = Scheduler(selected, jobs)
    yield scheduler
    scheduler.stop()
