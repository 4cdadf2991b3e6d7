"""Issue 32 §2: a run stopped at any tool call and resumed is the run that never stopped.

For random programs (``plan_programs.programs``: every way a tool can be reached, 5,000
examples) each program is run once with plain tools (the uninterrupted run). Then, for each
tool the program called, the same program runs in a Session where that tool needs approval:
every stop is resumed with all its pending calls approved, the continuation going through
its JSON text each time (as a new process would read it), until the run finishes. The
finished run must have the uninterrupted run's outcome, value, printed output, definitions and
error, and the tools must have been really called exactly as in the uninterrupted run: the
same calls (in the same order, unless ``pmap``/``pcalls`` ran branches on threads), none twice.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import ptc
from hypothesis import HealthCheck, given, settings
from plan_programs import TOOL_NAMES, Example, Recorder, programs

LIMITS = ptc.Limits(timeout_ms=3000, max_tool_calls=500, loop_limit=10_000)

SETTINGS: dict[str, Any] = {
    "deadline": None,
    "derandomize": True,
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": False,
}

#: A program that stops more often than this is not resumed to its end (a tool called in a
#: long loop stops once per call; each resume runs the program again from its start).
MAX_STOPS = 60


def gated_tools(rec: Recorder, gated: str) -> dict[str, Any]:
    """The recorder's tools, ``gated`` declared ``approval=True``."""
    tools = rec.tools()
    t = tools[gated]
    if isinstance(t, ptc.Tool):
        tools[gated] = ptc.Tool(t.fn, name=t.name, effect=t.effect, approval=True)
    else:
        tools[gated] = ptc.Tool(t, approval=True)
    return tools


def snapshot(session: ptc.Session, r: Any) -> dict[str, Any]:
    """What must be the same in a run that stopped and one that did not."""
    error = None if r.error is None else (r.error.type, r.error.message, r.error.hint)
    return {
        "outcome": r.outcome,
        "value": r.preview(None, None) if r.error is None else None,
        "prints": list(r.prints),
        "error": error,
        "defined": [(d.name, d.kind, d.type, d.sample) for d in r.defined],
        "definitions": [(d.name, d.kind, d.type, d.sample) for d in session.definitions],
    }


def start(ex: Example, tools: dict[str, Any], policy: Any = None) -> ptc.Session:
    session = ptc.Session(tools=tools, data=ex.data, limits=LIMITS, approve=policy)
    for turn in ex.earlier:
        session.run(turn)
    return session


def calls_of(rec: Recorder) -> list[tuple[str, Any]]:
    return [(name, repr(args)) for name, args, _ in rec.calls]


def check_replay(ex: Example) -> int:
    """Checks every stopping point of ``ex``; returns how many stops were resumed."""
    rec = Recorder()
    plain = start(ex, rec.tools())
    rec.clear()
    expected_run = plain.run(ex.source)
    expected = snapshot(plain, expected_run)
    expected_calls = calls_of(rec)
    # branches of pmap/pcalls (in the program or in an earlier turn's definitions) run on threads
    threaded = any("pmap" in t or "pcalls" in t for t in (ex.source, *ex.earlier))
    stops = 0
    for gated in sorted({name for name, _ in expected_calls}):
        rec = Recorder()
        warm = [True]  # earlier turns run with every call approved

        def policy(call: ptc.PendingCall, warm: list[bool] = warm) -> bool | None:
            return True if warm[0] else None

        session = start(ex, gated_tools(rec, gated), policy)
        warm[0] = False
        rec.clear()
        r = session.run(ex.source)
        n = 0
        while r.outcome == "pending" and n < MAX_STOPS:
            n += 1
            assert r.pending and all(p.tool == gated for p in r.pending), (ex, r.pending)
            assert r.defined == [] and r.value is None
            text = r.continuation.to_json()
            cont = ptc.Continuation.from_json(text)
            assert [p.id for p in cont.pending] == [p.id for p in r.pending]
            r = session.resume(cont, {p.id: True for p in cont.pending})
        stops += n
        if r.outcome == "pending":
            continue  # stopped MAX_STOPS times: not compared (it would take more resumes)
        got = snapshot(session, r)
        assert got == expected, f"gated {gated}:\n{ex!r}\nexpected {expected}\ngot {got}"
        got_calls = calls_of(rec)
        if threaded:
            assert Counter(got_calls) == Counter(expected_calls), (gated, ex)
        else:
            assert got_calls == expected_calls, (gated, ex)
    return stops


@settings(max_examples=5_000, **SETTINGS)
@given(ex=programs())
def test_a_run_resumed_at_every_stopping_point_is_the_uninterrupted_run(ex: Example) -> None:
    check_replay(ex)


def test_the_property_reaches_stops_and_tools() -> None:
    """The generator's programs do stop: over 200 examples, hundreds of stops of each tool."""
    seen: Counter[str] = Counter()
    total = 0

    @settings(max_examples=200, **SETTINGS)
    @given(ex=programs())
    def run(ex: Example) -> None:
        nonlocal total
        total += check_replay(ex)
        rec = Recorder()
        s = start(ex, rec.tools())
        rec.clear()
        s.run(ex.source)
        seen.update({name for name, _, _ in rec.calls})

    run()
    assert total >= 200
    assert set(seen) == set(TOOL_NAMES)
