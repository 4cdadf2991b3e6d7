"""Builders for test histories (OpenAI shape dicts) shared by the history tests."""

from __future__ import annotations

import json
from typing import Any


def sys_(text: str = "You are a helpful agent.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(text: str, **meta: Any) -> dict[str, Any]:
    return {"role": "user", "content": text, **meta}


def asst(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(id: str, name: str = "lookup", **args: Any) -> dict[str, Any]:
    return {"id": id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def calls(*cs: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": text, "tool_calls": list(cs)}


def result(id: str, text: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": id, "content": text}


def loop(id: str, name: str = "lookup", out: str = "ok", **args: Any) -> list[dict[str, Any]]:
    return [calls(call(id, name, **args)), result(id, out)]


# The ten situations every strategy is tested on (issue 5, "Done means").
def edge_cases() -> dict[str, list[dict[str, Any]]]:
    big = "word " * 40_000  # ~50,000 tokens by the estimate, larger than any budget used
    return {
        "empty": [],
        "no_user_prompt": [sys_(), asst("I will start."), *loop("a1"), asst("done")],
        "only_tool_messages": [result("x1", "one"), result("x2", "two")],
        "parallel_partly_answered": [
            sys_(),
            user("check both"),
            calls(call("p1", "a"), call("p2", "b"), call("p3", "c")),
            result("p2", "B"),
            result("p1", "A"),
        ],
        "orphaned_result": [sys_(), user("hi"), asst("hello"), result("ghost", "boo")],
        "unanswered_call": [sys_(), user("run it"), calls(call("u1", "run_command", command="ls"))],
        "huge_single_message": [sys_(), user("summarize this"), *loop("h1", out=big)],
        "consecutive_users": [sys_(), user("first"), user("second"), user("third")],
        "earlier_summary": [
            sys_(),
            user(
                "[context summary] Earlier parts of this conversation were compacted. "
                "This summary replaces them:\n\nThe user wants a report on ports."
            ),
            *loop("e1", "search", out="3 ports found"),
            user("now the report"),
        ],
        "user_then_tools": [
            sys_(),
            user("go"),
            *loop("t1", "run_command", out="total 0", command="ls"),
            *loop("t2", "edit_file", out="edited", path="src/app.py"),
            asst("All done."),
        ],
    }
