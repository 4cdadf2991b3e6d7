"""Large intermediates a run drops are freed on a background thread (rust/dropper.rs), and the
bytes freed there are credited to the run: `max_memory` gives the same verdict as freeing at
once, however far behind that thread is."""

from __future__ import annotations

import subprocess
import sys

import ptc

# Each round builds 20,000 one-element vectors (about 2 MB), counts them and drops them.
ROUNDS = "(reduce (fn [acc i] (+ acc (count (mapv (fn [x] [x]) (range 20000))))) 0 (range 40))"
# The same rounds, keeping every round's vectors: about 80 MB in all.
KEPT = "(count (reduce (fn [acc i] (conj acc (mapv (fn [x] [x]) (range 20000)))) [] (range 40)))"
LIMITS = {"max_memory": 8 << 20}


def test_dropped_intermediates_are_credited_to_the_run() -> None:
    s = ptc.Session(limits=LIMITS)
    for _ in range(15):
        r = s.run(ROUNDS)
        assert r.error is None, r.error
        assert r.value == 800_000


def test_a_run_that_keeps_what_it_builds_still_hits_max_memory() -> None:
    s = ptc.Session(limits=LIMITS)
    for _ in range(5):
        r = s.run(KEPT)
        assert r.error is not None
        assert r.error.type == "memory_exceeded"
        assert r.error.message.startswith("memory limit of 8 MB exceeded (max_memory): the program")


def test_the_same_program_gets_the_same_verdict_in_parallel_sessions() -> None:
    # two runs dropping large values at once share the one background thread
    import threading

    results: list[object] = []

    def work() -> None:
        s = ptc.Session(limits=LIMITS)
        for _ in range(5):
            r = s.run(ROUNDS)
            results.append(r.error or r.value)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [800_000] * 10


FORK_CHILD = f"""
import os, signal, ptc
s = ptc.Session(limits={LIMITS!r})
assert s.run({ROUNDS!r}).value == 800_000  # the background thread is running now
pid = os.fork()
if pid == 0:  # the child reports through its exit code only
    signal.alarm(60)
    try:
        ok = all(s.run({ROUNDS!r}).value == 800_000 for _ in range(3))
    except BaseException:
        ok = False
    os._exit(0 if ok else 1)
_, status = os.waitpid(pid, 0)
raise SystemExit(os.waitstatus_to_exitcode(status))
"""


def test_a_forked_child_frees_its_own_values() -> None:
    """A child made by `fork` inherits the queue to the background thread but not the thread:
    it must free what it drops itself, and its runs must neither hang nor fail. (A fresh
    Python: the parent must be a process whose background thread surely started.)"""
    p = subprocess.run([sys.executable, "-c", FORK_CHILD], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
