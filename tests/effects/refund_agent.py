"""The worked example of docs/EFFECTS.md, as a script: an agent refunds orders under a policy
that approves refunds under 50 by itself and asks a person for the rest.

``python refund_agent.py start CHECKPOINT`` runs the agent until it waits for the person,
prints ``pending <id> <call>`` and then waits (as a worker waiting for a person would) until it
is killed. ``python refund_agent.py resume CHECKPOINT ID`` resumes the run in a new process
with the person's approval and prints the outcome. ``python refund_agent.py plain`` runs the
same agent with every refund approved at once. Each prints the tool calls it really made.

CHECKPOINT is ``sqlite:PATH`` or ``postgres:URL|SCHEMA``."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import ptc
from checkpoint_spec import checkpoint
from ptc.llm import ScriptedLLM

ORDERS = {"o1": 30, "o2": 120, "o3": 45}
REPLIES = [
    """```clojure
(def orders (mapv tool/get-order ["o1" "o2" "o3"]))
(println "refunding" (count orders) "orders")
```""",
    """```clojure
(def refunds (mapv (fn [o] (tool/refund (:id o) (:amount o))) orders))
(return {:refunded (count refunds) :total (reduce + (map :amount orders))})
```""",
]
CALLS: list[list[Any]] = []


def get_order(id: str) -> dict[str, Any]:
    """The order with this id."""
    CALLS.append(["get-order", id])
    return {"id": id, "amount": ORDERS[id]}


@ptc.tool(effect="write", approval=True)
def refund(id: str, amount: int) -> str:
    """Refund an order."""
    CALLS.append(["refund", id, amount])
    return f"refunded {amount} on {id}"


def under_50(call: ptc.PendingCall) -> bool | None:
    """Refunds under 50 are approved at once; a person decides the rest."""
    if call.tool == "refund" and call.args[1] < 50:
        return True
    return None


def agent(cp: Any, approve: Any) -> ptc.SubAgent:
    return ptc.SubAgent(
        "Refund every order.",
        llm=ScriptedLLM(REPLIES),
        tools=[get_order, refund],
        max_turns=3,
        checkpoint=cp,
        approve=approve,
    )


def main(argv: list[str]) -> None:
    if argv[0] == "plain":
        step = agent(None, lambda call: True).run()
        print(json.dumps({"value": step.value, "calls": CALLS}))
        return
    cp = checkpoint(argv[1])
    if argv[0] == "start":
        step = agent(cp, under_50).run()
        assert step.outcome == "pending", step
        for p in step.pending:
            print("pending", p.id, p.describe(), flush=True)
        print(json.dumps({"calls": CALLS}), flush=True)
        while True:  # waiting for a person, until the process is killed
            time.sleep(1)
    step = agent(cp, under_50).resume(cp, decisions={argv[2]: True})
    print(json.dumps({"outcome": step.outcome, "value": step.value, "calls": CALLS}))


if __name__ == "__main__":
    main(sys.argv[1:])
