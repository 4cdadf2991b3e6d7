"""The ``ptc`` command line: run a PTC-Lisp program over JSON data."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .session import Session


def _session(path: str | None) -> Session:
    """A Session over the JSON file (parsed straight into the core), or with no data."""
    if path is None:
        return Session()
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    try:
        return Session.from_json(text)
    except ValueError as e:
        raise SystemExit(f"ptc: --data: {e}") from None


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


if __name__ == "__main__":
    raise SystemExit(main())
