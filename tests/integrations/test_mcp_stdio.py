"""``ptc mcp`` spoken to over its real stdio protocol, one JSON-RPC message a line (issue 30,
item 11): the server reports ptc's version, describes its tool for the calling model (not with
the agent's system prompt), and flags a program's error or failure with ``isError: true``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from ptc import Session
from ptc.integrations import ProgramTool

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from stock_tools import price, restock  # noqa: E402

ORDERS = [{"id": 1, "total": 50.0}, {"id": 2, "total": 150.0}, {"id": 3, "total": 300.0}]


class Server:
    """``python -m ptc mcp`` with the orders and two stock tools, spoken to line by line."""

    def __init__(self, tmp: Path, *extra: str) -> None:
        data = tmp / "orders.json"
        data.write_text(json.dumps({"orders": ORDERS}))
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])
        )
        args = ["--data", str(data), "--tool", "stock_tools:restock", "--tool", "stock_tools:price"]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ptc", "mcp", *args, *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response to one request (the server answers requests in order here)."""
        self.next_id += 1
        self.send(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method}
            | ({"params": params} if params is not None else {})
        )
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"the server ended: {self.close()}"
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return message  # type: ignore[no-any-return]

    def call(self, program: str) -> dict[str, Any]:
        args = {"name": "run_program", "arguments": {"program": program}}
        return self.request("tools/call", args)["result"]  # type: ignore[no-any-return]

    def close(self) -> str:
        """Ends the session (stdin closed) and returns what the server wrote on stderr."""
        try:
            _, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        return err


@pytest.fixture
def server(tmp_path: Path) -> Any:
    s = Server(tmp_path)
    init = s.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test-client", "version": "1"},
        },
    )
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    s.init = init  # type: ignore[attr-defined]
    yield s
    s.close()


def test_server_info_names_ptc_and_its_version(server: Server) -> None:
    """The version was empty."""
    info = server.init["result"]["serverInfo"]  # type: ignore[attr-defined]
    assert info == {"name": "ptc", "version": metadata.version("ptc-runtime")}
    assert info["version"] != ""


def test_tools_list_describes_the_tool_for_a_caller(server: Server) -> None:
    """The description was the agent's system prompt ("Reply with one PTC-Lisp program in a
    ```clojure block ... `(return value)` ends the task")."""
    (listed,) = server.request("tools/list")["result"]["tools"]
    expected = ProgramTool(data={"orders": ORDERS}, tools=[restock, price])
    assert listed["name"] == "run_program"
    assert listed["description"] == expected.description
    assert listed["description"].startswith(
        "Runs one PTC-Lisp program and returns what it printed and its value."
    )
    assert listed["description"].endswith(
        "\n\n;; === tool/ ===\n"
        '(tool/restock sku qty)          ; (sku :string, qty :int) -> :map - "Order more of a'
        ' sku."\n'
        '(tool/price sku)                ; (sku :string) -> :float - "Current price of a sku."\n'
        "\n;; === data/ ===\n"
        "data/orders                     ; list[3], sample: {:id 1, :total 50.0}"
    )
    for agent_words in ("Reply with", "```", "ends the task", "You are a programming agent"):
        assert agent_words not in listed["description"]
    schema = listed["inputSchema"]
    assert schema["required"] == ["program"]
    assert schema["properties"]["program"]["type"] == "string"
    assert schema["properties"]["program"]["description"] == (
        "The source of one PTC-Lisp program, as plain text, e.g. (count data/orders). The value"
        " of its last form is the answer."
    )
    assert "outputSchema" not in listed  # the answer is text for the model, not data


def text_result(text: str, is_error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def test_values_come_back_unflagged(server: Server) -> None:
    assert server.call("(count data/orders)") == text_result("=> 3", False)
    assert server.call('(println "ids" (mapv :id data/orders)) (tool/price "b2")') == (
        text_result("ids [1 2 3]\n=> 20.0", False)
    )
    assert server.call("(def big (filter #(> (:total %) 100) data/orders))") == (
        text_result("=> #'big", False)
    )
    assert server.call('(tool/restock "a1" (count big))') == (
        text_result('=> {:sku "a1", :ordered 2}', False)
    )


def test_errors_and_failures_come_back_flagged(server: Server) -> None:
    """A program's error came back with ``isError: false``."""
    assert server.call('(fail "no such order")') == text_result('failed: "no such order"', True)
    assert server.call('(println "before") (fail {:code 7})') == (
        text_result("before\nfailed: {:code 7}", True)
    )
    assert server.call("(get-in)") == text_result(
        "Error: get-in expects 2 or 3 argument(s), got 0 (line 1, column 1)", True
    )
    for program in ['(+ 1 "a")', "(", '(tool/restock "a1")', "(count undefined-thing)"]:
        result = server.call(program)
        error = Session(data={"orders": ORDERS}, tools=[restock, price]).run(program).error
        assert error is not None
        assert result == text_result(error.feedback(), True), program
        assert result["content"][0]["text"].startswith("Error: "), program
    # a run that raised an error defined nothing (one that failed keeps what it defined)
    assert server.call("(def lost 1) (get-in)")["isError"] is True
    missing = server.call("lost")
    assert missing["isError"] is True
    assert missing["content"][0]["text"].startswith("Error: lost is not defined (line 1, column 1)")
    assert server.call('(def kept 2) (fail "x")') == text_result('failed: "x"', True)
    assert server.call("kept") == text_result("=> 2", False)


def test_a_call_without_a_program_is_answered_flagged(server: Server) -> None:
    result = server.request("tools/call", {"name": "run_program", "arguments": {}})["result"]
    assert result["isError"] is True
    assert "program" in result["content"][0]["text"]


def test_a_run_waiting_on_an_approval_comes_back_pending_not_flagged(tmp_path: Path) -> None:
    """Issue 32: a run that stopped at a call of an approval tool is not an error; the calls
    waiting come back as data too."""
    s = Server(tmp_path, "--tool", "stock_tools:discard")
    try:
        s.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "test-client", "version": "1"},
            },
        )
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        result = s.call('(println "checking") (tool/discard "a1")')
        text = (
            "checking\nPending: the run is waiting for the host to decide 1 tool call: "
            '(tool/discard "a1") (id 0)'
        )
        assert result["isError"] is False
        assert result["content"] == [{"type": "text", "text": text}]
        assert result["structuredContent"] == {
            "pending": [{"id": "0", "tool": "discard", "call": '(tool/discard "a1")'}]
        }
    finally:
        s.close()
