"""Resuming a run that already ended hands it back as it ended (issue 30, item 4): out of
turns raised `RuntimeError: generator raised StopIteration` with the whole Step in its
traceback, and a returned or failed run `ValueError: this step already finished`. Only a run
cut short, or stopped because the model could not be reached, goes on."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import ptc
import pytest
from ptc.checkpoint import JsonlCheckpoint, SqliteCheckpoint
from ptc.llm import ScriptedLLM
from ptc.step import Step, StepError


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


OUT_OF_TURNS = StepError(
    "max_turns_exceeded", "max_turns (2) reached without (return value) or (fail reason)"
)
ENDINGS = {
    "out of turns": ([clj("(def a 1)"), clj("(def b 2)")], False, None, OUT_OF_TURNS),
    "fail": ([clj("(def a 1)"), clj('(fail "no stock")')], False, None, None),
    "return": ([clj("(def a 1)"), clj("(return (+ a 1))")], True, 2, None),
}
FAILED = StepError("fail", "no stock", value="no stock")


def agent(llm: Any, checkpoint: Any = None, max_turns: int = 2) -> ptc.SubAgent:
    return ptc.SubAgent(prompt="p", llm=llm, checkpoint=checkpoint, max_turns=max_turns)


def comparable(step: Step) -> dict[str, Any]:
    return step.to_dict(include_messages=True, timings=False)


def sink(kind: str, path: Path) -> Any:
    return JsonlCheckpoint(path / "c.jsonl") if kind == "jsonl" else SqliteCheckpoint(path / "c.db")


@pytest.mark.parametrize("kind", ["jsonl", "sqlite"])
@pytest.mark.parametrize("ending", list(ENDINGS))
def test_resuming_an_ended_run_from_its_checkpoint_returns_it_as_it_ended(
    tmp_path: Path, kind: str, ending: str
) -> None:
    replies, ok, value, error = ENDINGS[ending]
    cp = sink(kind, tmp_path)
    step = agent(ScriptedLLM(replies), cp).run()
    expected_error = FAILED if ending == "fail" else error
    assert (step.ok, step.value, step.error) == (ok, value, expected_error)
    runs = cp.runs()

    llm = ScriptedLLM([clj("(return 99)")])
    again = agent(llm, cp).resume(cp)
    assert llm.calls == []  # the model is not asked again
    assert comparable(again) == comparable(step)
    assert cp.runs() == runs and comparable(cp.load()[0]) == comparable(step)
    # and the async twin
    assert comparable(asyncio.run(agent(llm, cp).aresume(cp))) == comparable(step)
    assert llm.calls == []


@pytest.mark.parametrize("ending", list(ENDINGS))
def test_resuming_an_ended_step_returns_that_step(ending: str) -> None:
    replies, _, _, _ = ENDINGS[ending]
    step = agent(ScriptedLLM(replies)).run()
    llm = ScriptedLLM([clj("(return 99)")])
    assert agent(llm).resume(step) is step
    assert asyncio.run(agent(llm).aresume(step)) is step
    assert llm.calls == []


def test_a_step_of_the_run_so_far_whose_last_turn_ended_it_is_returned_finished() -> None:
    # a callable sink is handed the run so far after each turn (no error yet), then its end
    seen: list[Step] = []
    replies = [clj("(def a 1)"), clj("(return (+ a 1))")]
    step = agent(ScriptedLLM(replies), seen.append).run()
    so_far = [s for s in seen if len(s.turns) == 2 and not s.ok and s.error is None]
    assert len(so_far) == 1
    again = agent(ScriptedLLM([])).resume(so_far[0])
    assert (again.ok, again.value, again.error) == (True, 2, None)
    assert again.turns == step.turns


def test_a_run_stopped_by_the_model_being_unreachable_still_goes_on(tmp_path: Path) -> None:
    cp = JsonlCheckpoint(tmp_path / "c.jsonl")
    down = ScriptedLLM([clj("(def a 1)"), ConnectionError("refused")])
    first = ptc.SubAgent(
        prompt="p", llm=down, checkpoint=cp, max_turns=3, retry=ptc.llm.RetryPolicy(attempts=1)
    ).run()
    assert (first.ok, first.error.type if first.error else None) == (False, "llm_error")
    up = ScriptedLLM([clj("(return (inc a))")])
    step = ptc.SubAgent(prompt="p", llm=up, checkpoint=cp, max_turns=3).resume(cp)
    assert (step.ok, step.value, len(step.turns), len(up.calls)) == (True, 2, 2, 1)


def test_a_resumer_with_fewer_turns_than_the_run_took_ends_it_out_of_turns(tmp_path: Path) -> None:
    """The run went on (the model failed at turn 3 of 5); an agent resuming it with
    max_turns=2 has no turn left: out of turns, not `generator raised StopIteration`."""
    cp = JsonlCheckpoint(tmp_path / "c.jsonl")
    down = ScriptedLLM([clj("(def a 1)"), clj("(def b 2)"), ConnectionError("refused")])
    retry = ptc.llm.RetryPolicy(attempts=1)
    first = ptc.SubAgent(prompt="p", llm=down, checkpoint=cp, max_turns=5, retry=retry).run()
    assert first.error is not None and first.error.type == "llm_error"
    llm = ScriptedLLM([])
    for step in (
        agent(llm, max_turns=2).resume(cp),
        asyncio.run(agent(llm, max_turns=2).aresume(cp)),
    ):
        assert (step.ok, step.error, len(step.turns)) == (False, OUT_OF_TURNS, 2)
    assert llm.calls == []
