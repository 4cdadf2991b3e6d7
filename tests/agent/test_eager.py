"""Eager evaluation (issue 33 §3): ``SubAgent(eager=True)`` runs the program's complete
top-level forms while the reply streams. Read tools are called as their form completes; write,
approval and deferred tools wait for the whole program and its check; and the outcome (value,
prints, definitions, tool calls, errors, the Step) is the one of the same reply without
streaming. Checked as a property over random programs and random chunkings, and on the
scenario suite's programs; the loopback-HTTP version is in tests/adapters/test_eager_wire.py."""

from __future__ import annotations

import asyncio
import itertools
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import ptc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ptc.llm import AsyncScriptedLLM, RetryPolicy, ScriptedLLM, TransientLLMError

sys.path.insert(0, str(Path(__file__).parent.parent / "adapters"))
from wire import untimed

LOG: list[tuple[str, Any]] = []
LOCK = threading.Lock()


def logged(name: str, x: Any) -> None:
    with LOCK:
        LOG.append((name, x))


@ptc.tool(effect="read")
def lookup(x: int) -> int:
    """Doubles x (a read)."""
    logged("lookup", x)
    return x * 2


@ptc.tool(effect="read")
def flaky(x: int) -> int:
    """Fails on odd x (a read)."""
    logged("flaky", x)
    if x % 2:
        raise ValueError(f"odd {x}")
    return x


@ptc.tool(effect="write")
def save(x: Any) -> str:
    """Saves x (a write)."""
    logged("save", x)
    return "saved"


@ptc.tool(effect="read", approval=True)
def ask(x: int) -> int:
    """Needs a person's yes (an approval tool)."""
    logged("ask", x)
    return x + 100


TOOLS = [lookup, flaky, save, ask]


def fence(program: str, before: str = "", after: str = "") -> str:
    return f"{before}```clojure\n{program}\n```{after}"


def cut(text: str, seed: int) -> list[str]:
    """``text`` in pieces cut at random places (one piece up to one per character)."""
    rng = random.Random(seed)
    inner = range(1, len(text))
    cuts = sorted(rng.sample(inner, rng.randint(0, len(inner))))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def run(replies: list[str], eager: bool, seed: int = 0, **kw: Any) -> tuple[Any, list[Any]]:
    LOG.clear()
    chunks: Callable[[str], Iterable[str]] = lambda t: cut(t, seed)  # noqa: E731
    llm = ScriptedLLM(replies, stream_chunks=chunks)
    kw.setdefault("max_turns", len(replies))
    agent = ptc.SubAgent("go", llm=llm, tools=TOOLS, data={"n": 3}, eager=eager, **kw)
    step = agent.run()
    return step, sorted(LOG, key=repr)


def same_outcome(replies: list[str], seed: int, **kw: Any) -> tuple[Any, Any]:
    base, base_log = run(replies, False, **kw)
    fast, fast_log = run(replies, True, seed, **kw)
    assert untimed(fast.to_dict()) == untimed(base.to_dict())
    assert fast_log == base_log  # every tool called as often, with the same arguments
    return base, fast


# --- random programs ------------------------------------------------------------------------


def form(rng: random.Random, k: int) -> str:
    """One top-level form; ``v0``.. ``v{k-1}`` are defined before it."""
    v = f"v{rng.randrange(k)}" if k else "data/n"
    n = rng.randrange(6)
    choices = [
        f"(def v{k} (tool/lookup {n}))",
        f"(def v{k} (+ {v} {n}))",
        f'(println "p{k}" {v})',
        f"(def v{k} (tool/flaky {n}))",
        f"(def v{k} (pmap (fn [x] (tool/lookup x)) [{n} {n + 1} {n + 2}]))",
        f"(def v{k}\n  (let [a (tool/lookup {n})\n        b (tool/lookup (inc a))]\n    [a b]))",
        f"(tool/save {v})",
        f"(def v{k} (tool/ask {n}))",
        f"(def v{k} (nth [1 2 3] {n}))",
        f"(when (> (count (str {v})) {n}) (return {v}))",
        f"(defn f{k} [x] (+ x (tool/lookup x)))\n(def v{k} (f{k} {n}))",
        f"(def v{k} (if (odd? {n}) (tool/save {n}) (tool/lookup {n})))",
        f";; step {k}\n(def v{k} {n})",
        f'(def v{k} "a (string) with ] brackets")',
        f"{n}",
        f":kw{k}",
        f'(fail "stop {k}")' if rng.random() < 0.2 else f"(def v{k} [{n}])",
    ]
    return rng.choice(choices)


def program(seed: int) -> str:
    rng = random.Random(seed)
    forms = [form(rng, k) for k in range(rng.randint(1, 9))]
    if rng.random() < 0.6:
        forms.append(f"(return v{rng.randrange(len(forms))})" if rng.random() < 0.8 else "[1 2]")
    sep = rng.choice(["\n", "\n\n", " ", "\n  "])
    return sep.join(forms)


def reply(seed: int) -> str:
    rng = random.Random(seed)
    text = program(seed)
    shape = rng.randrange(4)
    if shape == 0:
        return text  # a bare program
    if shape == 1:
        return fence(text, "I'll look this up first.\n\n", "\n\nThat should do it.")
    if shape == 2:  # two blocks, joined in order
        head, _, tail = text.partition("\n")
        return fence(head) + "\nthen\n" + fence(tail or "nil")
    return fence(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9), st.integers(0, 10**9), st.integers(1, 2))
def test_random_programs_in_random_pieces_end_as_without_streaming(
    seed: int, cut_seed: int, turns: int
) -> None:
    replies = [reply(seed + t) for t in range(turns)]
    same_outcome(replies, cut_seed)


# --- the scenario suite's programs -----------------------------------------------------------

SCENARIO = [
    fence(
        '(def electronics (filter (fn [p] (= (:category p) "E")) [{:category "E" :n 1}]))\n'
        "(def reviews (tool/lookup 4))\n"
        "(def inventory (tool/lookup 5))\n"
        '(println "Reviews:" reviews)\n'
        '(println "Inventory:" inventory)'
    ),
    fence("(def x (tool/flaky 3))"),  # a failed turn
    fence("(def total (+ reviews inventory))\n(tool/save total)\n(return {:total total})"),
]


@pytest.mark.parametrize("seed", range(40))
def test_the_scenario_runs_as_without_streaming(seed: int) -> None:
    base, _ = same_outcome(SCENARIO, seed)
    assert base.ok and base.value == {"total": 18}


@pytest.mark.parametrize("seed", range(10))
def test_compressed_runs_too(seed: int) -> None:
    same_outcome(SCENARIO, seed, compression=True)


# --- when each tool is called ---------------------------------------------------------------


class Gated:
    """A streaming LLM that holds its reply's last piece back until ``until`` is set (or two
    seconds pass): a read tool called by then was called while the reply was being written."""

    streams = True

    def __init__(self, text: str, until: threading.Event) -> None:
        self.text, self.until = text, until
        self.held = False

    def __call__(self, messages: Any, on_text: Callable[[str], object] | None = None) -> str:
        assert on_text is not None
        on_text(self.text[:-1])
        self.held = self.until.wait(5.0)
        on_text(self.text[-1])
        return self.text


def test_a_read_tool_is_called_before_the_reply_ends() -> None:
    called = threading.Event()

    @ptc.tool(effect="read")
    def fetch(x: int) -> int:
        """Reads x."""
        called.set()
        return x

    text = fence("(def a (tool/fetch 1))\n(return a)")
    llm = Gated(text, called)
    step = ptc.SubAgent("go", llm=llm, tools=[fetch], eager=True).run()
    assert llm.held and step.value == 1


@pytest.mark.parametrize("tool", ["save", "ask", "deferred"])
def test_write_approval_and_deferred_tools_wait_for_the_whole_program(tool: str) -> None:
    """The stream ends in a form that fails the check: the read tool before the gated call
    ran early, the gated one never runs."""
    seen: list[str] = []
    fetched = threading.Event()

    @ptc.tool(effect="read")
    def fetch(x: int) -> int:
        """Reads x."""
        seen.append("fetch")
        fetched.set()
        return x

    @ptc.tool(effect="write")
    def save(x: int) -> str:
        """Writes x."""
        seen.append("save")
        return "ok"

    @ptc.tool(effect="read", approval=True)
    def ask(x: int) -> int:
        """Asks."""
        seen.append("ask")
        return x

    @ptc.tool(deferred=True)
    def deferred(x: int) -> int:
        """Answered by the host."""
        seen.append("deferred")
        return x

    class Slow:
        streams = True

        def __call__(self, messages: Any, on_text: Callable[[str], object]) -> str:
            text = fence(f"(def a (tool/fetch 1))\n(def b (tool/{tool} a))\n(tool/nope)")
            at = text.index("(tool/nope)")
            on_text(text[:at])
            assert fetched.wait(5.0)
            time.sleep(0.2)  # time enough to call the second too, were it allowed
            on_text(text[at:])
            return text

    step = ptc.SubAgent(
        "go", llm=Slow(), tools=[fetch, save, ask, deferred], eager=True, max_turns=1
    ).run()
    assert seen == ["fetch"]
    assert step.turns[0].error is not None and step.turns[0].error.type == "unknown_tool"
    assert step.turns[0].tool_calls == ()


def test_an_approval_tool_waits_and_the_run_suspends_as_without_streaming() -> None:
    text = fence("(def a (tool/lookup 1))\n(def b (tool/ask a))\n(return [a b])")
    _base, fast = same_outcome([text], 3)
    assert fast.suspended is not None and [p.tool for p in fast.pending] == ["ask"]


def test_a_retried_request_drops_what_its_first_stream_ran() -> None:
    """The first attempt streams half a program and fails; the second is another program.
    The first one's read call happened (it cannot be undone), nothing else of it counts."""
    first = fence("(def a (tool/lookup 7))\n(def b (tool/save a))\n")
    second = fence("(def a (tool/lookup 1))\n(return a)")
    calls = {"n": 0}
    LOG.clear()

    class Flaky:
        streams = True

        def __call__(self, messages: Any, on_text: Callable[[str], object]) -> str:
            calls["n"] += 1
            if calls["n"] == 1:
                on_text(first[: first.index("(def b")])
                for _ in range(500):  # until the early run made its call
                    with LOCK:
                        if LOG:
                            break
                    time.sleep(0.01)
                raise TransientLLMError("connection reset")
            for piece in cut(second, 1):
                on_text(piece)
            return second

    retry = RetryPolicy(attempts=2, initial_delay=0.0, max_delay=0.0)
    step = ptc.SubAgent("go", llm=Flaky(), tools=TOOLS, eager=True, retry=retry).run()
    assert step.ok and step.value == 2
    assert LOG == [("lookup", 7), ("lookup", 1)]
    assert [(c.name, c.args) for c in step.turns[0].tool_calls] == [("lookup", (1,))]


def test_a_reply_that_is_not_the_streamed_text_runs_from_scratch() -> None:
    """An LLM whose returned reply is not what it streamed: the record of the streamed text
    is not used, and the program runs as without eager."""
    ran = threading.Event()

    @ptc.tool(effect="read")
    def probe(x: int) -> int:
        """Reads x."""
        logged("probe", x)
        ran.set()
        return x * 2

    class Liar:
        streams = True

        def __call__(self, messages: Any, on_text: Callable[[str], object]) -> str:
            on_text(fence("(def a (tool/probe 5))\n(return a)"))
            assert ran.wait(5.0)  # the early run of the streamed text
            return fence("(def a (tool/probe 6))\n(return a)")

    LOG.clear()
    step = ptc.SubAgent("go", llm=Liar(), tools=[probe], eager=True).run()
    assert step.value == 12 and LOG == [("probe", 5), ("probe", 6)]


def test_a_call_made_early_keeps_its_duration() -> None:
    done = threading.Event()

    @ptc.tool(effect="read")
    def slow(x: int) -> int:
        """Takes 0.1 s."""
        time.sleep(0.1)
        done.set()
        return x

    llm = Gated(fence("(def a (tool/slow 1))\n(return a)"), done)
    step = ptc.SubAgent("go", llm=llm, tools=[slow], eager=True).run()
    assert llm.held  # called early: the real run was answered from the record
    assert step.turns[0].tool_calls[0].duration_ms >= 90


def test_eager_without_a_streaming_llm_changes_nothing() -> None:
    LOG.clear()
    llm = ScriptedLLM([fence("(def a (tool/lookup 2))\n(return a)")])
    step = ptc.SubAgent("go", llm=llm, tools=TOOLS, eager=True).run()
    assert step.value == 4 and LOG == [("lookup", 2)]


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_eager_takes_a_bool(bad: Any) -> None:
    with pytest.raises(TypeError, match=r"SubAgent\(eager=\.\.\.\) takes True or False"):
        ptc.SubAgent("go", eager=bad)


def test_calls_made_early_are_saved_once_the_turn_starts(tmp_path: Any) -> None:
    """A checkpoint that keeps calls as they happen gets the early calls as ended calls when
    the turn's program is saved (not while the reply streams), and keeps the Step it keeps
    without streaming."""
    import json

    from ptc.checkpoint import JsonlCheckpoint

    text = fence("(def a (tool/lookup 1))\n(def b (tool/lookup a))\n(return [a b])")
    steps, calls = [], []
    for eager in (False, True):
        sink = JsonlCheckpoint(tmp_path / f"{eager}.jsonl")
        llm = ScriptedLLM([text], stream_chunks=2)
        agent = ptc.SubAgent("go", llm=llm, tools=TOOLS, eager=eager, checkpoint=sink)
        agent.run()
        steps.append(untimed(sink.load()[0].to_dict()))
        lines = [json.loads(x) for x in sink.calls_path.read_text().splitlines()]
        calls.append([x["call"] for x in lines if x["event"] == "call" and "result" in x["call"]])
    assert steps[0] == steps[1]
    ended = [{k: c[k] for k in ("turn", "id", "tool", "how", "result")} for c in calls[0]]
    assert (
        calls[1]
        == ended
        == [
            {"turn": 1, "id": "0", "tool": "lookup", "how": "called", "result": 2},
            {"turn": 1, "id": "1", "tool": "lookup", "how": "called", "result": 4},
        ]
    )


def test_a_clock_read_early_is_the_one_the_run_keeps() -> None:
    """The wall clock differs between two runs, so it is not in the property: a reading taken
    by an early run is replayed to the real run (the value and the definition agree)."""
    text = fence("(def t (System/currentTimeMillis))\n(def u (tool/lookup 1))\n(return t)")
    llm = ScriptedLLM([text], stream_chunks=2)
    step = ptc.SubAgent("go", llm=llm, tools=TOOLS, eager=True).run()
    assert step.value == int(step.turns[0].memory[0].sample)


# --- async ----------------------------------------------------------------------------------


def test_arun_with_async_read_tools() -> None:
    calls: list[int] = []

    @ptc.tool(effect="read")
    async def aread(x: int) -> int:
        """Reads x, asynchronously."""
        await asyncio.sleep(0.01)
        calls.append(x)
        return x + 1

    text = fence("(def a (tool/aread 1))\n(def b (tool/aread a))\n(return [a b])")

    async def main(eager: bool) -> Any:
        llm = AsyncScriptedLLM([text], stream_chunks=2, chunk_delay=0.005)
        return await ptc.SubAgent("go", llm=llm, tools=[aread], eager=eager).arun()

    base = asyncio.run(main(False))
    calls.clear()
    fast = asyncio.run(main(True))
    assert calls == [1, 2]
    assert untimed(fast.to_dict()) == untimed(base.to_dict()) and fast.value == [2, 3]


# --- hostile replies ------------------------------------------------------------------------


def test_a_long_reply_in_tiny_pieces_is_looked_at_o_log_n_times() -> None:
    """Each look reads the whole reply so far: 4,000 forms (70 KB) in random pieces are
    looked at a few hundred times, not once per piece, and still end as without eager."""
    forms = "\n".join(
        f"(def v{k} (tool/lookup {k % 7}))" if k % 10 == 0 else f"(def v{k} (+ {k} 1))"
        for k in range(4000)
    )
    text = fence(forms + "\n(return [v3990 v3999])")
    looks: list[int] = []
    from ptc import eager as eager_module

    original = eager_module.Eager.finish

    def finish(self: Any, program: str) -> Any:
        looks.append(self.looks)
        return original(self, program)

    eager_module.Eager.finish = finish  # type: ignore[method-assign]
    try:
        _base, fast = same_outcome([text], 0)
    finally:
        eager_module.Eager.finish = original  # type: ignore[method-assign]
    assert fast.value == [(3990 % 7) * 2, 4000]
    assert len(text) > 70_000 and 100 < looks[0] < 500, looks


def test_a_form_that_runs_past_the_time_limit_stops_the_early_runs() -> None:
    """An early run that times out is not kept (a call it abandoned may have returned after
    all): the real run runs the program itself, makes the calls again, and reaches the same
    timeout. So the read tool is called once (the first form ran early on its own) or twice
    (it ran only in the early run that timed out), never more."""
    text = fence("(def a (tool/lookup 1))\n(def b (loop [i 0] (recur (inc i))))\n(return a)")
    limits = {"timeout_ms": 200, "loop_limit": 10**12}
    base, base_log = run([text], False, limits=limits)
    fast, fast_log = run([text], True, 1, limits=limits)
    assert untimed(fast.to_dict()) == untimed(base.to_dict())
    assert base_log == [("lookup", 1)]
    assert fast_log in ([("lookup", 1)], [("lookup", 1), ("lookup", 1)])
    assert fast.turns[0].error is not None and fast.turns[0].error.type == "timeout"
