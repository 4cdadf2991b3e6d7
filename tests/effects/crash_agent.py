"""An agent whose process dies in the middle of a tool call (issue 32 §3, in-flight calls).

``python crash_agent.py start SPEC IDEMPOTENT`` runs the agent; its ``ship`` tool kills the
process (SIGKILL) while it runs, after ``charge`` returned. ``python crash_agent.py resume
SPEC IDEMPOTENT [ANSWER]`` resumes the run in a new process: it prints the Step's outcome and
pending calls, and with ANSWER resumes once more answering the interrupted call with it. Each
process prints the tool calls it really made. SPEC is ``sqlite:PATH``, ``jsonl:PATH`` or
``postgres:URL|SCHEMA``."""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

import ptc
from checkpoint_spec import checkpoint
from ptc.llm import ScriptedLLM

REPLY = """```clojure
(def paid (tool/charge "o1" 30))
(def sent (tool/ship "o1"))
(return [paid sent])
```"""
CALLS: list[list[Any]] = []


def charge(id: str, amount: int) -> str:
    """Charge an order."""
    CALLS.append(["charge", id, amount])
    return f"charged {amount}"


def ship(id: str) -> str:
    """Ship an order."""
    CALLS.append(["ship", id])
    if os.environ.get("CRASH_IN_SHIP"):
        os.kill(os.getpid(), signal.SIGKILL)
    return f"shipped {id}"


def agent(cp: Any, idempotent: bool) -> ptc.SubAgent:
    return ptc.SubAgent(
        "Charge and ship o1.",
        llm=ScriptedLLM([REPLY]),
        tools=[charge, ptc.Tool(ship, effect="write", idempotent=idempotent)],
        max_turns=2,
        checkpoint=cp,
    )


def main(argv: list[str]) -> None:
    cp = checkpoint(argv[1])
    idempotent = argv[2] == "idempotent"
    if argv[0] == "start":
        agent(cp, idempotent).run()
        raise AssertionError("ship should have killed this process")
    a = agent(cp, idempotent)
    step = a.resume(cp)
    out: dict[str, Any] = {
        "outcome": step.outcome,
        "pending": [[p.id, p.tool, p.interrupted] for p in step.pending],
    }
    if len(argv) > 3 and step.pending:
        step = a.resume(cp, decisions={step.pending[0].id: ptc.Answer(argv[3])})
    out.update(final=step.outcome, value=step.value, calls=CALLS)
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
