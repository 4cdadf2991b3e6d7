"""The ``ptc`` command line: run a PTC-Lisp program over JSON data."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .session import Session


def _load_data(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict):
        raise SystemExit(
            f"ptc: --data must hold a JSON object (name -> value), got {type(data).__name__}"
        )
    return data


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ptc", description="Run PTC-Lisp programs.")
    sub = parser.add_subparsers(dest="command", required=True)
    run_p = sub.add_parser("run", help="evaluate a program file (or - for stdin)")
    run_p.add_argument("program", help="path to a .clj file, or - to read stdin")
    run_p.add_argument("--data", help="JSON file whose top-level keys become data/...")
    run_p.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)

    source = (
        sys.stdin.read() if args.program == "-" else Path(args.program).read_text(encoding="utf-8")
    )
    session = Session(data=_load_data(args.data))
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


if __name__ == "__main__":
    raise SystemExit(main())
