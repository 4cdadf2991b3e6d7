"""The Python blocks of docs/AGENT.md, docs/COMPRESSION.md and docs/HISTORY.md run as written.

Each document's blocks run in order in one namespace, in a temporary working directory, with
the providers' SDKs pointed at loopback servers that speak their wire formats
(`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`; the local `base_url` the docs show is pointed there
too). What a model would reply is scripted here per block. The output a block states is
checked exactly: a `print(...)  # text` line must print `text`, and a ```text block introduced
by "It prints" must be the block's whole output. (README.md and docs/GETTING_STARTED.md have
their own tests: test_readme.py, test_getting_started.py.)
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "adapters"))
from wire import AnthropicServer, Error, OpenAIServer, ToolCalls, serve

DOCS = Path(__file__).parent.parent / "docs"
LOCAL_URL = "http://localhost:11434/v1"


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


def call(name: str, **args: object) -> ToolCalls:
    """A reply that calls one tool by OpenAI function calling."""
    return ToolCalls(
        [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]
    )


@dataclass
class Script:
    """What the models answer during one block."""

    openai: list[str | Error | ToolCalls] = field(default_factory=list)
    anthropic: list[str | Error | ToolCalls] = field(default_factory=list)
    openai_usage: dict[str, int] = field(default_factory=dict)  # what the OpenAI replies report


@dataclass
class Block:
    code: str
    line: int  # where the block starts in the document
    stated: str | None  # the whole output, from an "It prints" ```text block


def blocks(doc: str) -> list[Block]:
    text = (DOCS / doc).read_text(encoding="utf-8")
    fences = list(re.finditer(r"^```(\w*)\n(.*?)^```\n", text, re.S | re.M))
    out: list[Block] = []
    for i, m in enumerate(fences):
        if m.group(1) != "python":
            continue
        stated = None
        if i + 1 < len(fences) and fences[i + 1].group(1) == "text":
            between = text[m.end() : fences[i + 1].start()]
            if "It prints" in between:
                stated = fences[i + 1].group(2)
        out.append(Block(m.group(2), text.count("\n", 0, m.start()) + 2, stated))
    return out


SCRIPTS: dict[str, list[Script]] = {
    "AGENT.md": [
        # the opening example: one exploration turn, then the answer
        Script(
            openai=[
                clj('(println (tool/search-reviews "kitchen") "|" (tool/get-inventory))'),
                clj('(return [{:name "kettle" :price 40}])'),
            ]
        ),
        # the adapters: the run goes to Anthropic
        Script(anthropic=[clj("(return (count data/products))")]),
        # your own callable: defined, not yet called
        Script(),
        # eager: the program streams, its read tool runs as its form completes
        Script(openai=[clj('(def o (tool/orders "c-12"))\n(return (count o))')]),
        # watching a run
        Script(
            openai=[
                clj(
                    '(def kitchen (tool/search-reviews "kitchen"))\n'
                    '(def home (tool/search-reviews "home"))\n"kitchen"'
                ),
                clj('(return "kitchen")'),
            ]
        ),
        # durable turns: the provider refuses the second request; the resumed run finishes
        Script(
            openai=[
                clj("(def n (count data/products))"),
                Error(400, OpenAIServer().error_body("bad request", "invalid_request_error")),
                clj("(return n)"),
            ]
        ),
        # ProgramTool: OpenAI function calling, then a pydantic-ai agent
        Script(
            openai=[
                call(
                    "run_program",
                    program="(->> data/products (filter #(< (:price %) 30))"
                    " (mapv #(tool/restock (:name %) 10)))",
                ),
                call("run_program", program="(count (filter #(< (:price %) 30) data/products))"),
                "One: the lamp.",
            ]
        ),
        # a sub-agent as a tool: the parent's request, then the child's
        Script(
            openai=[
                clj('(return (str "Brief: " (tool/research "solar storage")))'),
                clj('(return "Batteries shift solar power into the evening.")'),
            ]
        ),
    ],
    "COMPRESSION.md": [
        Script(),  # the compression= forms: agents built, not run
        Script(),  # the protocol
        # a registered strategy of your own, in a run
        Script(openai=[clj('(println (count data/products) "products")'), clj("(return 2)")]),
    ],
    "HISTORY.md": [
        # the opening example: one chat call, then the compacted history to both providers
        Script(openai=["I will edit src/api.py.", "Done."], anthropic=["Done."]),
        Script(),  # loop slices: no model
        # compaction when the provider reports a full window
        Script(openai=["Noted."], openai_usage={"prompt_tokens": 100_000}),
        # safe split: the long assistant message goes to the (async) summarizer
        Script(openai=["444 requests, all 404."] * 13),
        Script(),  # a summarizer defined
        Script(),  # the store
        # a run in the store: the provider refuses turn 2, another worker resumes
        Script(
            openai=[
                clj("(def n (count data/products))"),
                Error(400, OpenAIServer().error_body("bad request", "invalid_request_error")),
                clj("(return n)"),
            ]
        ),
    ],
}


@pytest.mark.parametrize("doc", sorted(SCRIPTS))
def test_every_python_block_runs_and_prints_what_the_doc_states(
    doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = blocks(doc)
    assert len(found) == len(SCRIPTS[doc]), f"{doc} has {len(found)} Python blocks; script them"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    openai_gen, anthropic_gen = serve(OpenAIServer), serve(AnthropicServer)
    openai_server, anthropic_server = next(openai_gen), next(anthropic_gen)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url + "/v1")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
    namespace: dict[str, object] = {"__name__": "doc"}
    try:
        for block, script in zip(found, SCRIPTS[doc], strict=True):
            where = f"{doc}:{block.line}"
            openai_server.script = list(script.openai)
            anthropic_server.script = list(script.anthropic)
            openai_server.usage = dict(script.openai_usage)
            sent = len(openai_server.received), len(anthropic_server.received)
            code = block.code.replace(LOCAL_URL, openai_server.url + "/v1")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                # top-level `await` runs as in the asyncio REPL
                compiled = compile(code, where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                pending = eval(compiled, namespace)
                if inspect.iscoroutine(pending):
                    asyncio.run(pending)
            assert openai_server.script == [], f"{where}: fewer OpenAI calls than scripted"
            assert anthropic_server.script == [], f"{where}: fewer Anthropic calls than scripted"
            calls = len(openai_server.received) - sent[0], len(anthropic_server.received) - sent[1]
            assert calls == (len(script.openai), len(script.anthropic)), (where, calls)
            printed = out.getvalue()
            if block.stated is not None:
                assert printed == block.stated, where
            lines = printed.splitlines()
            for stated in re.findall(r"^\s*print\(.*\)  # (.+)$", block.code, re.M):
                assert stated in lines, (where, stated, lines)
    finally:
        openai_gen.close()
        anthropic_gen.close()


def test_the_block_reader_finds_stated_output() -> None:
    """The checks above would pass vacuously if the reader found no statements."""
    agent = blocks("AGENT.md")
    assert sum(b.stated is not None for b in agent) >= 1
    assert sum(len(re.findall(r"\)  # ", b.code)) for b in agent) >= 5
