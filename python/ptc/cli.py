"""The ``ptc`` command line: run a PTC-Lisp program over JSON data."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .session import Session


def _session(path: str | None, tools: list[Any] | None = None) -> Session:
    """A Session over the JSON file (parsed straight into the core), or with no data."""
    if path is None:
        return Session(tools=tools)
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    try:
        return Session.from_json(text, tools=tools)
    except ValueError as e:
        raise SystemExit(f"ptc: --data: {e}") from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ptc", description="Run PTC-Lisp programs.")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="evaluate a program file (or - for stdin)")
    run_p.add_argument("program", help="path to a .clj file, or - to read stdin")
    run_p.add_argument("--data", help="JSON file whose top-level keys become data/...")
    run_p.add_argument("--json", action="store_true", help="print the result as JSON")
    mcp_p = sub.add_parser("mcp", help="serve a run_program tool to MCP clients over stdio")
    mcp_p.add_argument("--data", help="JSON file whose top-level keys become data/...")
    mcp_p.add_argument(
        "--tool",
        action="append",
        default=[],
        metavar="MODULE:FUNCTION",
        help="a Python function offered as tool/<function> (repeatable)",
    )
    mcp_p.add_argument("--name", default="run_program", help="the tool's name")
    args = parser.parse_args(argv)
    if args.command == "mcp":
        return _mcp(args)

    source = (
        sys.stdin.read() if args.program == "-" else Path(args.program).read_text(encoding="utf-8")
    )
    session = _session(args.data)
    result = session.run(source)
    for line in result.prints:
        print(line)
    if result.error is not None:
        print(result.error.feedback(), file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.value, ensure_ascii=False, default=str))
    else:
        from . import to_clojure

        text, _ = to_clojure(result.value)
        prefix = "failed: " if result.failed else ""
        print(prefix + text)
    return 2 if result.failed else 0


def _load_tool(spec: str) -> Any:
    """``module:function`` (or ``module:object.attr``) as a callable."""
    import importlib

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"ptc: --tool {spec!r}: expected MODULE:FUNCTION")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise SystemExit(f"ptc: --tool {spec!r}: cannot import {module_name!r}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise SystemExit(f"ptc: --tool {spec!r}: {module_name} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise SystemExit(f"ptc: --tool {spec!r}: {attr} is not callable")
    return obj


def _mcp(args: argparse.Namespace) -> int:
    from .integrations import ProgramTool

    session = _session(args.data, [_load_tool(t) for t in args.tool])
    server = ProgramTool.from_session(session, name=args.name).mcp_server()
    server.run()  # stdio until the client closes it
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
