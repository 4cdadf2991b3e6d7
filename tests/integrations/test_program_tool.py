"""ptc as a tool for others: OpenAI function calling (with the real SDK over loopback HTTP),
pydantic-ai, and an MCP server driven by the mcp package's own client over stdio (issue 10)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import openai
import pytest
from ptc.integrations import ProgramTool

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "adapters"))
from wire import OpenAIServer, serve  # noqa: E402

ORDERS = [{"id": 1, "total": 50.0}, {"id": 2, "total": 150.0}, {"id": 3, "total": 300.0}]


def restock(sku: str, qty: int) -> dict[str, Any]:
    """Order more of a sku."""
    return {"sku": sku, "ordered": qty}


def tool() -> ProgramTool:
    return ProgramTool(data={"orders": ORDERS}, tools=[restock])


#: The start of the description (issue 30, item 11): for a caller, not the agent's prompt.
CALLER_HEAD = """\
Runs one PTC-Lisp program and returns what it printed and its value. PTC-Lisp is a small, safe
Clojure subset; the program runs in a sandbox over the data and host tools listed at the end. One
call can filter and aggregate the data, call the tools and combine their results.

# The argument
`program`: the source of one PTC-Lisp program, as plain text (no code fences, no prose). It may
hold several forms: they run in order, and the value of the last one is the answer.

# What a program can use
- `data/name`: the input data (read-only), listed under `;; === data/ ===` with type and sample.
  A name that is not listed reads as nil.
- `(tool/name args...)`: the host's tools, listed under `;; === tool/ ===` with their signatures.
  Named arguments: `(tool/search {:query "x" :limit 5})`.
- your own names: `def` and `defn` define them, and they persist from one call to the next,
  so a later program can use them.

# What comes back
Text: each line the program printed with `println`, then `=> value`, the value of the last form
(or of `(return value)`, which ends the program early). `(fail "reason")` ends it with
`failed: "reason"`. An error comes back as `Error: message (line L, column C)` with a `Hint:`
line saying how to fix it. A failure and an error are flagged as errors where the protocol has a
flag (MCP's `isError`, Anthropic's `is_error`). A program that raises an error keeps none of its
definitions: fix it and call again.

# Language
"""
FRESH_DEFINITIONS = """\
- your own names: `def` and `defn` define them for this program only; each call starts
  afresh.
"""
#: The namespaces of `tool()`, last.
CALLER_TAIL = """

;; === tool/ ===
(tool/restock sku qty)          ; (sku :string, qty :int) -> :map - "Order more of a sku."

;; === data/ ===
data/orders                     ; list[3], sample: {:id 1, :total 50.0}"""
#: What the agent's own system prompt tells its model, which contradicts tool calling.
AGENT_WORDS = [
    "You are a programming agent",
    "Reply with",
    "```",
    "ends the task",
    "USER message",
    "next turn",
    "each turn",
    "prelude",
]


def test_the_description_is_written_for_a_caller() -> None:
    """Issue 30, item 11: the description was "Run a PTC-Lisp program..." followed by the
    agent's system prompt ("Reply with one PTC-Lisp program in a ```clojure block ...
    `(return value)` ends the task")."""
    from ptc import _core

    d = tool().description
    assert d.startswith(CALLER_HEAD)
    assert d.endswith(CALLER_TAIL)
    for words in AGENT_WORDS:
        assert words not in d, words
    # the language guide the caller's model writes programs with, its functions from the core
    guide = d[len(CALLER_HEAD) : -len(CALLER_TAIL)]
    assert guide.startswith("- Literals: `nil true false 42 2.5")
    useful = guide[guide.index("- Useful functions: `") :].split("`")[1].split()
    assert useful == list(_core.prompt_functions())
    assert "\n# Common mistakes\n- No `for`, `atom`, `try`" in guide
    assert "\n# Example\n" in guide


def test_the_description_says_when_definitions_do_not_persist() -> None:
    fresh = ProgramTool(data={"orders": ORDERS}, tools=[restock], keep_definitions=False)
    kept = CALLER_HEAD[CALLER_HEAD.index("- your own names") : CALLER_HEAD.index("\n# What comes")]
    assert kept in tool().description and kept not in fresh.description
    assert fresh.description == tool().description.replace(kept, FRESH_DEFINITIONS)
    assert fresh.run("(def x 1)") == "=> #'x"
    assert fresh.run("x").startswith("Error: x is not defined (line 1, column 1)")


def test_the_description_without_data_or_tools_says_so() -> None:
    d = ProgramTool().description
    assert d.endswith(
        "\n\nNo data and no tools are given here: a program works on the values it writes."
    )
    assert ";; === " not in d.split("# Example")[1]


def test_the_example_of_the_description_runs_as_it_says() -> None:
    """The description's example, run over the data it names, gives the answer it shows."""
    d = tool().description
    example = d[d.index("# Example\n") :].split("\n")
    program = "\n".join(line.strip() for line in example[2:5])
    shown = "\n".join(line.strip() for line in example[6:8])
    data = [{"id": 1, "total": 50}, {"id": 2, "total": 150}, {"id": 3, "total": 300}]
    assert example[1] == (
        "With `data/orders` = `[{:id 1 :total 50} {:id 2 :total 150} {:id 3 :total 300}]`, the"
        " program"
    )
    assert ProgramTool(data={"orders": data}).run(program) == shown == "big orders: 2\n=> [2 3]"


def test_answers_flag_errors_and_failures() -> None:
    from ptc.integrations import ProgramAnswer

    t = tool()
    assert t.answer("(count data/orders)") == ProgramAnswer("=> 3", False)
    assert t.answer('(println "hi") (return 4) 5') == ProgramAnswer("hi\n=> 4", False)
    assert t.answer('(fail "no such order")') == ProgramAnswer('failed: "no such order"', True)
    assert t.answer("(get-in)") == ProgramAnswer(
        "Error: get-in expects 2 or 3 argument(s), got 0 (line 1, column 1)", True
    )
    assert t.answer(None) == ProgramAnswer(  # type: ignore[arg-type]
        "error: the program must be a string, got NoneType", True
    )
    assert asyncio.run(t.aanswer('(fail "x")')) == ProgramAnswer('failed: "x"', True)
    assert asyncio.run(t.aanswer("(+ 1 2)")) == ProgramAnswer("=> 3", False)
    # run() and arun() give the text alone, as before
    assert t.run('(fail "x")') == 'failed: "x"' and asyncio.run(t.arun("(+ 1 2)")) == "=> 3"


def test_openai_answer_flags_what_the_tool_message_cannot() -> None:
    from ptc.integrations import ProgramAnswer

    def fn_call(arguments: str) -> dict[str, Any]:
        return {"id": "c", "function": {"name": "run_program", "arguments": arguments}}

    t = tool()
    assert t.openai_answer(fn_call('{"program": "(+ 1 2)"}')) == ProgramAnswer("=> 3", False)
    assert t.openai_answer(fn_call('{"program": "(fail 1)"}')) == ProgramAnswer("failed: 1", True)
    assert t.openai_answer(fn_call("{}")) == ProgramAnswer(
        'error: the arguments have no "program" (the PTC-Lisp source to run)', True
    )
    assert t.openai_answer({"id": "c"}).is_error
    # the message itself carries no flag: OpenAI refuses keys it does not know
    assert t.openai_result(fn_call('{"program": "(fail 1)"}')) == {
        "role": "tool",
        "tool_call_id": "c",
        "content": "failed: 1",
    }


def test_anthropic_schema_and_results() -> None:
    t = tool()
    assert t.anthropic_schema() == {
        "name": "run_program",
        "description": t.description,
        "input_schema": {
            "type": "object",
            "properties": {
                "program": {
                    "type": "string",
                    "description": "The source of one PTC-Lisp program, as plain text, e.g."
                    " (count data/orders). The value of its last form is the answer.",
                }
            },
            "required": ["program"],
            "additionalProperties": False,
        },
    }

    def use(input: Any, name: Any = "run_program", id: Any = "toolu_1") -> dict[str, Any]:
        return {"type": "tool_use", "id": id, "name": name, "input": input}

    def answer(content: str, is_error: bool, id: str = "toolu_1") -> dict[str, Any]:
        return {"type": "tool_result", "tool_use_id": id, "content": content, "is_error": is_error}

    assert t.anthropic_result(use({"program": "(count data/orders)"})) == answer("=> 3", False)
    assert t.anthropic_result(use({"program": '(fail "none")'})) == answer('failed: "none"', True)
    assert t.anthropic_result(use({"program": "(get-in)"})) == answer(
        "Error: get-in expects 2 or 3 argument(s), got 0 (line 1, column 1)", True
    )
    assert t.anthropic_result(use({})) == answer(
        'error: the input has no "program" (the PTC-Lisp source to run)', True
    )
    assert t.anthropic_result(use(None)) == answer(
        'error: the input must be a JSON object like {"program": "..."}, got null', True
    )
    assert t.anthropic_result(use(["(+ 1 2)"])) == answer(
        'error: the input must be a JSON object like {"program": "..."}, got an array', True
    )
    assert t.anthropic_result(use({"program": 5})) == answer(
        'error: "program" must be a string of PTC-Lisp, got a number', True
    )
    assert t.anthropic_result(use({"program": "1"}, name="other")) == answer(
        "error: no tool named 'other' here (this one is 'run_program')", True
    )
    assert t.anthropic_result(use({"program": "1"}, id=None)) == answer("=> 1", False, id="")
    assert t.anthropic_result(None) == answer(
        "error: no tool named None here (this one is 'run_program')", True, id=""
    )


def test_anthropic_tool_use_round_trip_with_the_real_sdk() -> None:
    """The schema goes out in a real request; the model's tool_use block comes back through
    the SDK and is answered with a tool_result block, flagged when it is an error."""
    import anthropic
    from wire import AnthropicServer

    gen = serve(AnthropicServer)
    server = next(gen)
    try:
        t = tool()
        uses = [
            {"type": "tool_use", "id": "toolu_1", "name": "run_program", "input": {"program": p}}
            for p in ["(reduce + (map :total data/orders))", '(fail "no such order")']
        ]
        server.script = [uses]  # type: ignore[list-item]
        client = anthropic.Anthropic(base_url=server.url, api_key="k")
        response = client.messages.create(
            model="m",
            max_tokens=100,
            messages=[{"role": "user", "content": "What is the total?"}],
            tools=[t.anthropic_schema()],  # type: ignore[list-item]
        )
        sent = server.received[0].body["tools"][0]
        assert sent == t.anthropic_schema()
        blocks = [b for b in response.content if b.type == "tool_use"]
        assert [t.anthropic_result(b) for b in blocks] == [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "=> 500.0",
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": 'failed: "no such order"',
                "is_error": True,
            },
        ]
    finally:
        gen.close()


def test_runs_keep_definitions_and_report_prints_values_and_errors() -> None:
    t = tool()
    assert t.run("(def big (filter #(> (:total %) 100) data/orders)) (count big)") == "=> 2"
    assert t.run('(println "ids" (map :id big)) (tool/restock "a1" 4)') == (
        'ids [2 3]\n=> {:sku "a1", :ordered 4}'
    )
    text = t.run("(count undefined-thing)")
    assert text.startswith("error") or "undefined-thing" in text
    assert "undefined-thing" in text
    fresh = ProgramTool(data={"orders": ORDERS}, keep_definitions=False)
    fresh.run("(def x 1)")
    assert "x" in fresh.run("x")  # not defined any more: an error naming it


def test_openai_function_calling_round_trip_with_the_real_sdk() -> None:
    """The schema goes out in a real request; the model's tool call comes back through the
    SDK and is answered with a tool message."""
    gen = serve(OpenAIServer)
    server = next(gen)
    try:
        t = tool()
        call = {
            "id": "call_1",
            "type": "function",
            "function": {
                "name": "run_program",
                "arguments": json.dumps({"program": "(reduce + (map :total data/orders))"}),
            },
        }
        server.script = [""]
        server.reply_tool_calls = [call]  # type: ignore[attr-defined]
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="k")
        response = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "What is the total?"}],
            tools=[t.openai_schema()],  # type: ignore[list-item]
        )
        sent = server.received[0].body["tools"][0]
        assert sent["function"]["name"] == "run_program"
        assert sent["function"]["parameters"]["required"] == ["program"]
        (tool_call,) = response.choices[0].message.tool_calls or []
        assert t.openai_result(tool_call) == {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "=> 500.0",
        }
        assert t.openai_result(call)["content"] == "=> 500.0"  # the dict form too
    finally:
        gen.close()


def test_openai_result_reports_bad_calls() -> None:
    t = tool()
    wrong = {"id": "c", "function": {"name": "other", "arguments": "{}"}}
    assert "no tool named 'other'" in t.openai_result(wrong)["content"]
    broken = {"id": "c", "function": {"name": "run_program", "arguments": "{not json"}}
    assert "not JSON" in t.openai_result(broken)["content"]
    missing = {"id": "c", "function": {"name": "run_program", "arguments": "{}"}}
    assert t.openai_result(missing)["content"] == (
        'error: the arguments have no "program" (the PTC-Lisp source to run)'
    )


DEEP = "[" * 100_000 + "]" * 100_000
NOT_AN_OBJECT = 'error: the arguments must be a JSON object like {"program": "..."}, got '
NO_ARGUMENTS = (
    'error: the call has no arguments; send a JSON object with the program, e.g. {"program":'
    ' "(count data/orders)"}'
)


@pytest.mark.parametrize(
    ("arguments", "content"),
    [
        ("null", NOT_AN_OBJECT + "null"),
        ("[1, 2]", NOT_AN_OBJECT + "an array"),
        ('"(+ 1 2)"', NOT_AN_OBJECT + "a string"),
        ("3", NOT_AN_OBJECT + "a number"),
        ("true", NOT_AN_OBJECT + "a boolean"),
        (
            {"program": "(+ 1 2)"},
            "error: the arguments must be JSON text (a string holding a JSON object), got dict",
        ),
        (
            ["(+ 1 2)"],
            "error: the arguments must be JSON text (a string holding a JSON object), got list",
        ),
        (None, NO_ARGUMENTS),
        ("", NO_ARGUMENTS),
        (DEEP, "error: the arguments are JSON nested too deeply to read"),
        ('{"program": ' + DEEP + "}", "error: the arguments are JSON nested too deeply to read"),
        ('{"program": null}', 'error: "program" must be a string of PTC-Lisp, got null'),
        ('{"program": 5}', 'error: "program" must be a string of PTC-Lisp, got a number'),
        ('{"program": {"a": 1}}', 'error: "program" must be a string of PTC-Lisp, got an object'),
        ('{"program": "(+ 1 2)", "extra": 1}', "=> 3"),
    ],
)
def test_openai_result_answers_every_malformed_call_with_text(arguments: Any, content: str) -> None:
    """Issue 29, item 19: these raised UnboundLocalError, TypeError or RecursionError."""
    call = {"id": "call_9", "function": {"name": "run_program", "arguments": arguments}}
    assert tool().openai_result(call) == {
        "role": "tool",
        "tool_call_id": "call_9",
        "content": content,
    }


NO_FUNCTION = "error: the tool call has no 'function' (its name and arguments)"


@pytest.mark.parametrize(
    ("call", "call_id", "content"),
    [
        ({"id": "call_1", "type": "function"}, "call_1", NO_FUNCTION),
        ({"id": "call_2", "function": None}, "call_2", NO_FUNCTION),
        ({}, "", NO_FUNCTION),
        (None, "", NO_FUNCTION),
        ("run_program", "", NO_FUNCTION),
        (
            {"id": 7, "function": {"name": "run_program", "arguments": '{"program": "1"}'}},
            "",
            "=> 1",
        ),
        (
            {"id": "c", "function": {"arguments": "{}"}},
            "c",
            "error: no tool named None here (this one is 'run_program')",
        ),
        (
            {"id": "c", "function": {"name": "x" * 500, "arguments": "{}"}},
            "c",
            "error: no tool named '" + "x" * 79 + "... here (this one is 'run_program')",
        ),
    ],
)
def test_openai_result_answers_a_call_without_its_parts(
    call: Any, call_id: str, content: str
) -> None:
    assert tool().openai_result(call) == {
        "role": "tool",
        "tool_call_id": call_id,
        "content": content,
    }


def test_openai_result_reads_sdk_objects_without_their_parts() -> None:
    from openai.types.chat import ChatCompletionMessageToolCall
    from openai.types.chat.chat_completion_message_tool_call import Function

    no_function = ChatCompletionMessageToolCall.model_construct(id="c1", type="function")
    assert tool().openai_result(no_function)["content"] == NO_FUNCTION
    null_args = ChatCompletionMessageToolCall.model_construct(
        id="c2", type="function", function=Function.model_construct(name="run_program")
    )
    assert tool().openai_result(null_args) == {
        "role": "tool",
        "tool_call_id": "c2",
        "content": NO_ARGUMENTS,
    }


def test_a_pydantic_ai_tool() -> None:
    import pydantic_ai
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    t = tool()
    calls: list[Any] = []

    def model(messages: list[Any], info: AgentInfo) -> Any:
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart

        returns = [
            p for m in messages for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
        ]
        if not returns:
            calls.append(info.function_tools[0])
            program = "(count (filter #(> (:total %) 100) data/orders))"
            return ModelResponse(parts=[ToolCallPart("run_program", {"program": program})])
        return ModelResponse(parts=[TextPart(f"answer: {returns[0].content}")])

    agent = pydantic_ai.Agent(FunctionModel(model), tools=[t.pydantic_ai_tool()])
    result = agent.run_sync("How many orders are over 100?")
    assert result.output == "answer: => 2"
    assert calls[0].name == "run_program"
    assert "PTC-Lisp" in (calls[0].description or "")


def test_an_mcp_server_over_stdio_with_the_mcp_client(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    data = tmp_path / "d.json"
    data.write_text(json.dumps({"orders": ORDERS}))
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
    )
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "ptc",
            "mcp",
            "--data",
            str(data),
            "--tool",
            "stock_tools:restock",
            "--tool",
            "stock_tools:price",
        ],
        env=env,
    )

    async def main() -> tuple[Any, list[str]]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            listed = (await s.list_tools()).tools
            texts = []
            for program in [
                "(def big (filter #(> (:total %) 100) data/orders)) (count big)",
                '(tool/restock "a1" (count big))',
                '(tool/price "b2")',
                '(tool/restock "a1")',
            ]:
                result = await s.call_tool("run_program", {"program": program})
                texts.append(result.content[0].text)
            return listed, texts

    listed, texts = asyncio.run(asyncio.wait_for(main(), 60))
    (only,) = listed
    assert only.name == "run_program"
    schema = getattr(only, "input_schema", None) or getattr(only, "inputSchema", None)
    assert schema["required"] == ["program"]
    assert "(tool/restock sku qty)" in (only.description or "")
    assert texts[0] == "=> 2"
    assert texts[1] == '=> {:sku "a1", :ordered 2}'
    assert texts[2] == "=> 20.0"
    # an error comes back as text with its hint, not as a protocol error
    assert "restock" in texts[3] and "qty" in texts[3] and not texts[3].startswith("=>")


def test_ptc_mcp_refuses_a_bad_tool_spec(tmp_path: Path) -> None:
    import subprocess

    p = subprocess.run(
        [sys.executable, "-m", "ptc", "mcp", "--tool", "nomodule_here:fn"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode != 0
    assert "cannot import 'nomodule_here'" in p.stderr
    assert "Traceback" not in p.stderr


# -- what the calling model gets back is bounded (second red-team batch of issue 29) ---------


class _Huge(Exception):
    def __str__(self) -> str:
        return "y" * 20_000_000


def huge_error() -> int:
    """Fails with a 20 MB message."""
    raise _Huge


def test_the_error_echo_cap_is_four_thousand_characters() -> None:
    from ptc.compression._format import ERROR_ECHO_CHARS

    assert ERROR_ECHO_CHARS == 4_000


def test_a_20_mb_tool_error_is_answered_cut_with_its_length() -> None:
    """The answer carried all 20 MB (20,000,058 characters through ``ptc mcp``)."""
    t = ProgramTool(tools=[huge_error])
    message = "Tool 'huge-error' failed: _Huge: " + "y" * 20_000_000
    assert t.run("(tool/huge-error)") == (
        "Error: "
        + message[:4_000]
        + "... (line 1, column 1)\n(The error message was 20,000,033 characters long: only"
        " its first 4,000 are shown.)"
    )
    # the host's Result keeps the whole message
    r = t._session.run("(tool/huge-error)")
    assert r.error is not None and r.error.message == message


@pytest.mark.parametrize(
    "program",
    ["(count undefined-thing)", '(+ 1 "a")', "(", "(tool/nothing)", "(tool/restock 1)"],
)
def test_a_short_error_is_answered_as_its_feedback(program: str) -> None:
    from ptc import Session

    r = Session(data={"orders": ORDERS}, tools=[restock]).run(program)
    assert r.error is not None
    assert tool().run(program) == r.error.feedback()


def test_an_error_of_exactly_the_cap_is_whole() -> None:
    from ptc.compression._format import error_echo

    assert error_echo("x" * 4_000, " (line 1, column 1)") == "x" * 4_000 + " (line 1, column 1)"
    assert error_echo("x" * 4_001) == (
        "x" * 4_000 + "...\n(The error message was 4,001 characters long: only its first"
        " 4,000 are shown.)"
    )
    assert error_echo("") == ""


@pytest.mark.parametrize(
    ("arguments", "content"),
    [
        (
            '{"program": "\\ud800"}',
            "error: the program is not valid Unicode text: '\\ud800' (a lone surrogate, as the"
            " JSON escape \\ud800 gives it) at line 1, column 1; write the character you meant,"
            " or leave it out",
        ),
        (
            '{"program": "(+ 1\\n 2 \\"\\udc80\\")"}',
            "error: the program is not valid Unicode text: '\\udc80' (a lone surrogate, as the"
            " JSON escape \\udc80 gives it) at line 2, column 5; write the character you meant,"
            " or leave it out",
        ),
        # a pair of escapes is one character: a program like any other
        ('{"program": "(count \\"\\ud83d\\ude00\\")"}', "=> 1"),
    ],
)
def test_a_program_with_a_lone_surrogate_is_answered_with_text(
    arguments: str, content: str
) -> None:
    """Valid JSON whose program is not Unicode text: ``ValueError`` escaped openai_result."""
    call = {"id": "c", "function": {"name": "run_program", "arguments": arguments}}
    assert tool().openai_result(call) == {"role": "tool", "tool_call_id": "c", "content": content}
    program = json.loads(arguments)["program"]
    assert tool().run(program) == content
    assert asyncio.run(tool().arun(program)) == content


def test_a_tool_exit_with_a_20_mb_argument_is_reported_cut() -> None:
    from ptc.integrations import _stopped

    text = _stopped(SystemExit("z" * 20_000_000))
    shown = repr(SystemExit("z" * 20_000_000))[:4_000]
    assert text == (
        f"the run was stopped: a tool raised {shown}.... Nothing the run defined was kept; the"
        " server goes on serving.\n(The error message was 20,000,014 characters long: only"
        " its first 4,000 are shown.)"
    )
