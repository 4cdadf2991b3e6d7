"""Eager evaluation over real HTTP (issue 33 §3): the OpenAI and Anthropic SDKs read a stream
from a loopback server cutting the reply at random places, and ``SubAgent(eager=True)`` ends
each run exactly as the same replies do without streaming."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import anthropic  # noqa: F401  (imported before any request: a first import is slow)
import openai  # noqa: F401
import ptc
import ptc.llm
import pytest
from wire import AnthropicServer, OpenAIServer, Stream, WireServer, serve, untimed

LOG: list[tuple[str, Any]] = []
LOCK = threading.Lock()


@ptc.tool(effect="read")
def lookup(x: int) -> int:
    """Doubles x."""
    with LOCK:
        LOG.append(("lookup", x))
    return x * 2


@ptc.tool(effect="write")
def save(x: Any) -> str:
    """Saves x."""
    with LOCK:
        LOG.append(("save", x))
    return "saved"


def fence(program: str) -> str:
    return f"Let me check.\n```clojure\n{program}\n```\nDone."


def program(seed: int) -> str:
    rng = random.Random(seed)
    forms = []
    for k in range(rng.randint(2, 8)):
        v = f"v{rng.randrange(k)}" if k else "1"
        forms.append(
            rng.choice(
                [
                    f"(def v{k} (tool/lookup {rng.randrange(9)}))",
                    f"(def v{k} (+ (count (str {v})) {k}))",
                    f'(def v{k} (do (println "at {k}:" {v}) {k}))',
                    f"(def v{k} (pmap (fn [x] (tool/lookup x)) [{k} {k + 1}]))",
                    f"(def v{k} (tool/save {v}))",
                ]
            )
        )
    forms.append(f"(return v{rng.randrange(len(forms))})")
    return "\n".join(forms)


def openai_llm(server: WireServer) -> Any:
    return ptc.llm.openai("m", base_url=server.url + "/v1", api_key="k", stream=True)


def anthropic_llm(server: WireServer) -> Any:
    return ptc.llm.anthropic("c", base_url=server.url, api_key="k", stream=True)


KINDS: list[tuple[type[WireServer], Callable[[WireServer], Any]]] = [
    (OpenAIServer, openai_llm),
    (AnthropicServer, anthropic_llm),
]


@pytest.mark.parametrize("kind", KINDS, ids=["openai", "anthropic"])
@pytest.mark.parametrize("seed", range(12))
def test_streamed_at_random_cuts_the_run_ends_as_without_eager(
    kind: tuple[type[WireServer], Callable[[WireServer], Any]], seed: int
) -> None:
    server_kind, make = kind
    text = fence(program(seed))
    outcomes = []
    for eager in (False, True):
        for server in serve(server_kind):
            server.script = [Stream(text, seed=seed, delay=0.001)]
            LOG.clear()
            agent = ptc.SubAgent(
                "go", llm=make(server), tools=[lookup, save], eager=eager, max_turns=1
            )
            step = agent.run()
            outcomes.append((untimed(step.to_dict()), sorted(LOG, key=repr)))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0]["ok"], outcomes[0][0]["error"]
