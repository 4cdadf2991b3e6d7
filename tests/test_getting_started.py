"""docs/GETTING_STARTED.md: every Python block runs, in order, in one namespace, against a
loopback server that speaks the OpenAI wire format (the guide's local base_url is pointed at
it); the replies a model would give are scripted per block."""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "adapters"))
from wire import OpenAIServer, serve

GUIDE = Path(__file__).parent.parent / "docs" / "GETTING_STARTED.md"
GUIDE_URL = "http://localhost:11434/v1"


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


# what the model answers in each block (blocks without a model call have none)
REPLIES = [
    [],
    [
        clj('(def pending (filter #(= (:status %) "pending") data/orders))\n(count pending)'),
        clj(
            '(doseq [o pending] (tool/refund (:id o) "pending too long"))\n(return (count pending))'
        ),
    ],
    [
        clj(
            "(->> data/orders (group-by :customer)"
            " (map (fn [[c os]] [c (reduce + (map :total os))]))"
            " (sort-by second >) first first (return))"
        ),
    ],
    [clj("(return (count data/orders))")],
]


def blocks() -> list[tuple[str, list[str]]]:
    """The guide's Python blocks, each with the comments that state its printed output."""
    out = []
    for code in re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S):
        out.append((code, re.findall(r"print\(.*?\)\s+# (.+)$", code, re.M)))
    return out


def test_the_guide_has_the_blocks_this_test_scripts() -> None:
    assert len(blocks()) == len(REPLIES)


def test_every_block_runs_and_prints_what_it_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the guide writes runs.jsonl in the working directory
    gen = serve(OpenAIServer)
    server = next(gen)
    namespace: dict[str, object] = {"__name__": "guide"}
    try:
        for (code, expected), replies in zip(blocks(), REPLIES, strict=True):
            server.script = list(replies)
            code = code.replace(GUIDE_URL, server.url + "/v1")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(GUIDE), "exec"), namespace)
            assert server.script == [], "the block made fewer model calls than scripted"
            printed = out.getvalue().splitlines()
            for want in expected:
                # "# turns taken, ..." comments describe, the others state the exact output
                if re.fullmatch(r"[\w .\-]+", want) and "," not in want:
                    assert want in printed, (want, printed)
    finally:
        gen.close()
    assert os.path.exists(tmp_path / "runs.jsonl")
