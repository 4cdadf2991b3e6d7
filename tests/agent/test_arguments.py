"""SubAgent's arguments are checked where they are given (issue 30, item 8): an LLM given as
a string failed at run time with `'str' object is not callable`, `agent.run("question")` with
`'str' object is not a mapping`, and a bad retry, callback, checkpoint, name or limit was
accepted and failed mid-run or never. Each wrong value is now one error at the call that names
the argument and says what to pass; a "provider:model" string is accepted as the CLI does."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import ptc
import pytest
from ptc.checkpoint import JsonlCheckpoint
from ptc.llm import RetryPolicy, ScriptedLLM

sys.path.insert(0, str(Path(__file__).parent.parent / "adapters"))
from wire import OpenAIServer, serve


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


def llm() -> ScriptedLLM:
    return ScriptedLLM([clj("(return 1)")])


# --- llm= ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "cls", "model"),
    [
        ("openai:gpt-4.1-mini", "OpenAIChat", "gpt-4.1-mini"),
        ("anthropic:claude-sonnet-4-5", "AnthropicChat", "claude-sonnet-4-5"),
        ("litellm:anthropic/claude-sonnet-4-5", "LiteLLMChat", "anthropic/claude-sonnet-4-5"),
        (" OpenAI : m ", "OpenAIChat", "m"),
    ],
)
def test_a_provider_model_string_is_the_providers_adapter(spec: str, cls: str, model: str) -> None:
    agent = ptc.SubAgent("p", llm=spec)
    assert type(agent.llm).__name__ == cls and agent.llm.model == model  # type: ignore[union-attr]
    made = ptc.llm.from_string(spec)
    assert type(made).__name__ == cls and made.model == model  # type: ignore[attr-defined]


def test_from_string_passes_options_to_the_adapter() -> None:
    made = ptc.llm.from_string("openai:m", base_url="http://127.0.0.1:9/v1", temperature=0)
    assert made._base_url == "http://127.0.0.1:9/v1"  # type: ignore[attr-defined]
    assert made.params == {"temperature": 0}  # type: ignore[attr-defined]


def test_an_agent_given_a_provider_model_string_runs_on_that_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    gen = serve(OpenAIServer)
    server = next(gen)
    try:
        server.script = [clj("(return (count data/xs))")]
        # the OpenAI SDK reads these when the adapter is given no base_url and no key
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        step = ptc.SubAgent("Count them", llm="openai:gpt-4.1-mini", data={"xs": [1, 2]}).run()
        assert (step.ok, step.value) == (True, 2)
        assert server.received[0].body["model"] == "gpt-4.1-mini"
    finally:
        gen.close()


NOT_A_MODEL = (
    " is not a 'provider:model' string: expected one of openai, anthropic, litellm, a colon and"
    " the model's name (e.g. 'openai:gpt-4.1-mini'); for a server of your own, pass an adapter:"
    " ptc.llm.openai('MODEL', base_url='http://localhost:11434/v1')"
)


@pytest.mark.parametrize(
    ("spec", "shown"),
    [
        ("gpt-4.1-mini", "'gpt-4.1-mini'"),
        ("openai:", "'openai:'"),
        ("openai:   ", "'openai:   '"),
        ("mistral:large", "'mistral:large'"),
        ("openai-chat:gpt-4.1-mini", "'openai-chat:gpt-4.1-mini'"),
        ("", "''"),
        (":m", "':m'"),
        ("x" * 100, "'" + "x" * 60 + "'... (100 characters)"),
    ],
)
def test_a_string_that_names_no_provider_is_refused_in_the_constructor(
    spec: str, shown: str
) -> None:
    with pytest.raises(ValueError) as caught:
        ptc.SubAgent("p", llm=spec)
    assert str(caught.value) == "SubAgent(llm=...): " + shown + NOT_A_MODEL
    with pytest.raises(ValueError) as direct:
        ptc.llm.from_string(spec)
    assert str(direct.value) == shown + NOT_A_MODEL


def test_from_string_refuses_what_is_not_a_string() -> None:
    with pytest.raises(TypeError) as caught:
        ptc.llm.from_string(5)  # type: ignore[arg-type]
    assert str(caught.value) == "an LLM name is a 'provider:model' string, got int 5"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (5, "int 5"),
        (ScriptedLLM, "the class ScriptedLLM; pass an instance of it"),
        (b"x", "bytes b'x'"),
    ],
)
def test_an_llm_that_is_neither_callable_nor_a_string_is_refused(value: Any, shown: str) -> None:
    with pytest.raises(TypeError) as caught:
        ptc.SubAgent("p", llm=value)
    assert str(caught.value) == (
        "SubAgent(llm=...) takes a callable that answers the chat messages (an adapter such as"
        " ptc.llm.openai('gpt-4.1-mini'), or your own function) or a 'provider:model' string"
        f" such as 'openai:gpt-4.1-mini', got {shown}"
    )


# --- run(data) and data= ---------------------------------------------------------------------

MAPPING = "takes the run's data as a mapping of names to values (the program reads data/<name>)"
QUESTION = (
    "; a question belongs in the prompt: SubAgent(prompt=...), or write {{question}} in the"
    " prompt and pass {'question': ...}"
)


def half_run() -> Any:
    """A run that went on (its model failed after one turn), to resume."""
    down = ScriptedLLM([clj("(def a 1)"), ConnectionError("down")])
    return ptc.SubAgent("p", llm=down, max_turns=3, retry=RetryPolicy(attempts=1)).run()


def entry_points(agent: ptc.SubAgent, data: Any) -> dict[str, Any]:
    async def aiter() -> None:
        async for _ in agent.aiter(data):
            pass

    return {
        "run": lambda: agent.run(data),
        "arun": lambda: asyncio.run(agent.arun(data)),
        "iter": lambda: agent.iter(data),
        "aiter": lambda: asyncio.run(aiter()),
        "resume": lambda: agent.resume(half_run(), data=data),
        "aresume": lambda: asyncio.run(agent.aresume(half_run(), data=data)),
    }


@pytest.mark.parametrize("entry", ["run", "arun", "iter", "aiter", "resume", "aresume"])
@pytest.mark.parametrize(
    ("data", "tail"),
    [
        ("How many orders?", f"got str 'How many orders?'{QUESTION}"),
        ([1, 2], "got list [1, 2]"),
        ([("a", 1)], "got list [('a', 1)]"),
        (5, "got int 5"),
    ],
    ids=["str", "list", "pairs", "int"],
)
def test_data_that_is_not_a_mapping_is_a_type_error_at_the_call(
    entry: str, data: Any, tail: str
) -> None:
    scripted = ScriptedLLM([clj("(return 1)")])
    agent = ptc.SubAgent("p", llm=scripted, max_turns=3)
    with pytest.raises(TypeError) as caught:
        entry_points(agent, data)[entry]()
    assert str(caught.value) == f"{entry}(data=...) {MAPPING}, {tail}"
    assert scripted.calls == []  # refused before anything ran


def test_data_names_that_are_not_strings_are_refused_at_the_call() -> None:
    agent = ptc.SubAgent("p", llm=llm())
    with pytest.raises(TypeError) as caught:
        agent.run({1: "x"})
    assert str(caught.value) == (
        "run(data=...): data names must be strings (the program reads data/<name>), got the"
        " key int 1"
    )
    with pytest.raises(TypeError) as constructed:
        ptc.SubAgent("p", llm=llm(), data={("a",): 1})
    assert str(constructed.value) == (
        "SubAgent(data=...): data names must be strings (the program reads data/<name>), got"
        " the key tuple ('a',)"
    )


def test_the_constructors_data_is_checked_too() -> None:
    with pytest.raises(TypeError) as caught:
        ptc.SubAgent("p", llm=llm(), data="orders.json")
    assert str(caught.value) == f"SubAgent(data=...) {MAPPING}, got str 'orders.json'{QUESTION}"


def test_a_mapping_and_none_are_data() -> None:
    from types import MappingProxyType

    agent = ptc.SubAgent("p", llm=ScriptedLLM([clj("(return data/a)")] * 2), data={"a": 1})
    assert agent.run(None).value == 1
    assert agent.run(MappingProxyType({"a": 2})).value == 2


# --- the other arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"retry": 3},
            TypeError,
            "SubAgent(retry=...) takes a ptc.llm.RetryPolicy (e.g. RetryPolicy(attempts=5)),"
            " got int 3",
        ),
        ({"system_prompt": 5}, TypeError, "SubAgent(system_prompt=...) takes a string, got int 5"),
        (
            {"on_turn": 5},
            TypeError,
            "SubAgent(on_turn=...) takes a function called with each Turn, got int 5",
        ),
        (
            {"on_llm_call": "log"},
            TypeError,
            "SubAgent(on_llm_call=...) takes a function called with each ptc.observe.LLMCall,"
            " got str 'log'",
        ),
        (
            {"on_tool_call": [print]},
            TypeError,
            "SubAgent(on_tool_call=...) takes a function called with each"
            " ptc.observe.ToolCallEvent, got list [<built-in function print>]",
        ),
        (
            {"checkpoint": "runs.jsonl"},
            TypeError,
            "SubAgent(checkpoint=...) takes a checkpoint (ptc.checkpoint.JsonlCheckpoint,"
            " SqliteCheckpoint, PostgresCheckpoint, anything with save(step, run_id)) or a"
            " function taking the Step so far, got str 'runs.jsonl'; for a file:"
            " JsonlCheckpoint('runs.jsonl') from ptc.checkpoint",
        ),
        (
            {"checkpoint": 7},
            TypeError,
            "SubAgent(checkpoint=...) takes a checkpoint (ptc.checkpoint.JsonlCheckpoint,"
            " SqliteCheckpoint, PostgresCheckpoint, anything with save(step, run_id)) or a"
            " function taking the Step so far, got int 7",
        ),
        (
            {"telemetry": "yes"},
            TypeError,
            "SubAgent(telemetry=...) takes True or False, got str 'yes'",
        ),
        (
            {"telemetry": None},
            TypeError,
            "SubAgent(telemetry=...) takes True or False, got None",
        ),
        (
            {"name": 5},
            TypeError,
            "SubAgent(name=...) takes a non-empty string (the agent's name in logs and"
            " telemetry), got int 5",
        ),
        (
            {"name": "  "},
            ValueError,
            "SubAgent(name=...) takes a non-empty string (the agent's name in logs and"
            " telemetry), got str '  '",
        ),
        ({"max_turns": True}, ValueError, "max_turns must be a positive int, got True"),
        ({"max_turns": 0}, ValueError, "max_turns must be a positive int, got 0"),
        ({"max_turns": 2.0}, ValueError, "max_turns must be a positive int, got 2.0"),
        (
            {"limits": "fast"},
            TypeError,
            "SubAgent(limits=...): limits must be a ptc.Limits or a mapping, got str",
        ),
        (
            {"limits": {"timeout_ms": -5}},
            ValueError,
            "SubAgent(limits=...): limit timeout_ms must be a non-negative integer, got -5",
        ),
        (
            {"limits": {"fuel": 10**30}},
            ValueError,
            "SubAgent(limits=...): limit fuel is too large: 1000000000000000000000000000000"
            " (at most 18446744073709551615)",
        ),
        (
            {"limits": {"speed": 1}},
            ValueError,
            "SubAgent(limits=...): unknown limit(s) ['speed']; known limits: ['fuel',"
            " 'loop_limit', 'max_collection_size', 'max_depth', 'max_memory', 'max_nesting',"
            " 'max_output', 'max_string_size', 'max_symbols', 'max_tool_calls',"
            " 'timeout_ms']",
        ),
    ],
)
def test_a_wrong_argument_is_refused_in_the_constructor(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        ptc.SubAgent("p", llm=llm(), **kwargs)
    assert type(caught.value) is error and str(caught.value) == message


def test_the_right_forms_of_those_arguments_are_accepted(tmp_path: Path) -> None:
    seen: list[Any] = []
    agent = ptc.SubAgent(
        "p",
        llm=llm(),
        retry=RetryPolicy(attempts=1),
        system_prompt="Answer in PTC-Lisp.",
        on_turn=seen.append,
        on_llm_call=seen.append,
        on_tool_call=seen.append,
        checkpoint=JsonlCheckpoint(tmp_path / "c.jsonl"),
        telemetry=False,
        name="counter",
        max_turns=2,
        limits={"timeout_ms": 5000},
    )
    step = agent.run()
    assert (step.ok, step.value) == (True, 1)
    assert [type(e).__name__ for e in seen] == ["LLMCall", "Turn"]
    assert ptc.SubAgent("p", llm=llm(), checkpoint=seen.append, limits=ptc.Limits()).run().ok


def test_as_tool_checks_its_name_and_description() -> None:
    agent = ptc.SubAgent("Summarize {{topic}}", llm=llm())
    with pytest.raises(TypeError) as caught:
        agent.as_tool(5)  # type: ignore[arg-type]
    assert str(caught.value) == "tool names must be strings, got int 5"
    with pytest.raises(ValueError) as named:
        agent.as_tool("my tool")
    assert str(named.value) == (
        "tool name 'my tool' cannot be called as (tool/my tool ...): ' ' cannot appear in a"
        " symbol; use letters, digits and - (e.g. 'search-orders')"
    )
    with pytest.raises(TypeError) as described:
        agent.as_tool("research", 5)  # type: ignore[arg-type]
    assert str(described.value) == "as_tool(description=...) takes a string, got int 5"


def test_import_ptc_and_a_string_signature_import_no_pydantic() -> None:
    code = (
        "import sys; before = set(sys.modules); import ptc\n"
        "from ptc.llm import ScriptedLLM\n"
        "step = ptc.SubAgent('p', llm=ScriptedLLM(['(return {:a 1})']),"
        " signature='{a :int}').run()\n"
        "print(step.ok, 'pydantic' in sys.modules and 'pydantic' not in before)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout == "True False\n"


TOOLS = (
    "SubAgent(tools=...) takes a list of tools (callables, Tool(...), (fn, signature) tuples,"
    " agent.as_tool(...)) or a dict of names to tools, got "
)


def refund(order: int) -> str:
    """Refund an order."""
    return f"refunded {order}"


@pytest.mark.parametrize(
    ("tools", "tail"),
    [
        # a string's characters were taken for tools: "tool 'a' is not callable"
        ("refund", "str 'refund'"),
        (5, "int 5"),  # was "'int' object is not iterable"
        (refund, f"function {refund!r} (one tool is a list of one: tools=[fn])"),
    ],
    ids=["str", "int", "one-callable"],
)
def test_tools_that_are_not_a_list_or_dict_of_tools_are_refused(tools: Any, tail: str) -> None:
    with pytest.raises(TypeError) as caught:
        ptc.SubAgent("p", llm=llm(), tools=tools)
    assert str(caught.value) == TOOLS + tail


def test_tools_as_a_list_a_tuple_or_a_dict_are_accepted() -> None:
    for tools in ([refund], (refund,), {"refund": refund}):
        agent = ptc.SubAgent("p", llm=ScriptedLLM([clj("(return (tool/refund 7))")]), tools=tools)
        assert agent.run().value == "refunded 7"
