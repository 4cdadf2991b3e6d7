"""The ``ptc`` command line: run or evaluate PTC-Lisp over JSON data and Python tools, or serve
a ``run_program`` tool to MCP clients.

Exit codes (BSD ``sysexits``, so scripts can tell a program's failure from their own):

=====  =============================================================
0      the program ran and produced a value
1      the program raised an error (its message and hint on stderr)
2      the program called ``(fail reason)``
64     usage: a bad option, argument or tool spec
65     bad input data: invalid JSON, a program that is not UTF-8 text
66     an input file that does not exist or is a directory
=====  =============================================================

``--json`` prints the value as strict JSON, whatever it is: maps with string or keyword keys
are objects (a keyword key loses its colon); a map with other keys is an object whose keys are
those keys printed as PTC-Lisp (``{"1": ..., "[1 2]": ...}``); sets and vectors are arrays;
``NaN`` and the infinities are the strings ``"##NaN"``, ``"##Inf"`` and ``"##-Inf"`` (their
PTC-Lisp spelling); dates and datetimes are ISO strings. A map whose keys would not all be
distinct JSON keys (``{1 :a "1" :b}``: both are ``"1"``) is never printed with one entry lost:
``ptc`` exits 1 with an error naming the two keys and where the map is.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import signal
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

from .session import Session

EX_OK, EX_ERROR, EX_FAIL = 0, 1, 2
EX_USAGE, EX_DATAERR, EX_NOINPUT = 64, 65, 66


class UsageError(Exception):
    """A mistake on the command line: exit 64 with the message, no traceback."""


class InputError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise SystemExit(_fail(f"{self.prog}: {message}", EX_USAGE))


def _fail(message: str, code: int) -> int:
    print(f"ptc: {message}" if not message.startswith("ptc") else message, file=sys.stderr)
    return code


def _read(path: str, what: str) -> str:
    """A file's text (``-``: stdin), with the problem named instead of a traceback."""
    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        p = Path(path)
        if p.is_dir():
            raise InputError(f"{what} {path}: is a directory, not a file", EX_NOINPUT)
        try:
            data = p.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{what} {path}: no such file", EX_NOINPUT) from None
        except OSError as e:
            raise InputError(f"{what} {path}: {e.strerror}", EX_NOINPUT) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{what} {path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
            EX_DATAERR,
        ) from None


def _load_tool(spec: str) -> Any:
    """``module:function`` (or ``module:object.attr``) as a callable."""
    import importlib

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"--tool {spec!r}: expected MODULE:FUNCTION")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(f"--tool {spec!r}: cannot import {module_name!r}: {e}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"--tool {spec!r}: {module_name} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"--tool {spec!r}: {attr} is not callable")
    return obj


def _limits(pairs: list[str]) -> dict[str, int] | None:
    from .limits import Limits

    names = [f for f in Limits.__dataclass_fields__]
    out: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--limit {pair!r}: expected NAME=VALUE (e.g. timeout_ms=500)")
        if name not in names:
            raise UsageError(f"--limit {pair!r}: no limit {name!r}; limits: {', '.join(names)}")
        try:
            out[name] = int(value.replace("_", ""))
        except ValueError:
            raise UsageError(f"--limit {pair!r}: {value!r} is not a whole number") from None
    return out or None


def _session(args: argparse.Namespace) -> Session:
    """A Session over the JSON file (parsed straight into the core), with the tools."""
    tools = [_load_tool(t) for t in getattr(args, "tool", [])]
    limits = _limits(getattr(args, "limit", []))
    if args.data is None:
        return Session(tools=tools, limits=limits)
    text = _read(args.data, "--data")
    try:
        return Session.from_json(text, tools=tools, limits=limits)
    except (ValueError, TypeError) as e:
        raise InputError(f"--data {args.data}: {e}", EX_DATAERR) from None
    except MemoryError as e:
        raise InputError(f"--data {args.data}: {e}", EX_DATAERR) from None


class JsonKeysCollide(ValueError):
    """A map whose keys are not all distinct once written as JSON object keys (text): ``--json``
    refuses it rather than keep one entry of each colliding pair."""


#: Characters of a key (in PTC-Lisp syntax) that the refusal shows.
_KEY_SHOWN = 60


def _key_text(key: Any) -> str:
    """A map key as a JSON object key: a str as it is, anything else in PTC-Lisp syntax."""
    from . import to_clojure

    return key if isinstance(key, str) else to_clojure(key)[0]


def _cut(text: str) -> str:
    return text if len(text) <= _KEY_SHOWN else text[: _KEY_SHOWN - 3] + "..."


def _shown(key: Any) -> str:
    from . import to_clojure

    return _cut(to_clojure(key)[0])


def _scalar(value: Any) -> tuple[bool, Any]:
    """``(True, value as JSON)`` for a value that holds no other, else ``(False, None)``."""
    if isinstance(value, float):
        if math.isnan(value):
            return True, "##NaN"
        if math.isinf(value):
            return True, "##Inf" if value > 0 else "##-Inf"
        return True, value
    if value is None or isinstance(value, str | int | bool):
        return True, value
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        return False, None
    if isinstance(value, dt.date):
        return True, value.isoformat()
    return True, str(value)


class _Open:
    """A map or a collection being written: its items left, what they go into, the JSON keys
    written so far (a map's, with the key each came from), and where it is (for an error)."""

    __slots__ = ("at", "items", "keys", "out", "parent")

    def __init__(self, value: Any, parent: _Open | None, at: Any) -> None:
        self.parent, self.at = parent, at
        self.items: Iterator[Any]
        self.out: Any  # a dict for a map, else a list
        self.keys: dict[str, Any] | None
        if isinstance(value, Mapping):
            self.items, self.out, self.keys = iter(value.items()), {}, {}
        else:
            self.items, self.out, self.keys = iter(value), [], None

    def path(self) -> list[Any]:
        """The JSON keys and indexes from the value's top to here."""
        steps: list[Any] = []
        frame: _Open | None = self
        while frame is not None and frame.parent is not None:
            steps.append(frame.at)
            frame = frame.parent
        return steps[::-1]


def _collision(frame: _Open, first: Any, second: Any, text: str) -> JsonKeysCollide:
    steps = frame.path()
    where = f" at {json.dumps(steps, ensure_ascii=False)}" if steps else ""
    key = _cut(json.dumps(text, ensure_ascii=False))
    return JsonKeysCollide(
        f"--json cannot print the value: the map{where} has the keys {_shown(first)} and "
        f"{_shown(second)}, which are both the JSON key {key} (one entry would be lost)"
    )


def json_safe(value: Any) -> Any:
    """``value`` in the encoding ``--json`` documents (see the module docstring). A map whose
    keys do not all become distinct JSON keys raises ``JsonKeysCollide`` naming two of them
    and where the map is. Walked with a stack of its own, so any depth a run returns is fine."""
    done, out = _scalar(value)
    if done:
        return out
    top = _Open(value, None, None)
    stack = [top]
    while stack:
        frame = stack[-1]
        item: Any = next(frame.items, _END)
        if item is _END:
            stack.pop()
            continue
        if frame.keys is not None:
            key, child = item
            text = _key_text(key)
            if text in frame.keys:
                raise _collision(frame, frame.keys[text], key, text)
            frame.keys[text] = key
            at: Any = text
        else:
            child, at = item, len(frame.out)
        done, converted = _scalar(child)
        if not done:
            opened = _Open(child, frame, at)
            converted = opened.out
            stack.append(opened)
        if frame.keys is not None:
            frame.out[at] = converted
        else:
            frame.out.append(converted)
    return top.out


_END = object()


def _show(result: Any, as_json: bool) -> int:
    for line in result.prints:
        print(line)
    if result.error is not None:
        print(result.error.feedback(), file=sys.stderr)
        return EX_ERROR
    if as_json:
        try:
            shown = json_safe(result.value)
        except JsonKeysCollide as e:
            print(
                f"Error: {e}\nHint: print it without --json, or give the map's keys one type"
                " (all strings, or all keywords)",
                file=sys.stderr,
            )
            return EX_ERROR
        print(json.dumps(shown, ensure_ascii=False, allow_nan=False))
    else:
        from . import to_clojure

        text, _ = to_clojure(result.value)
        print(("failed: " if result.failed else "") + text)
    return EX_FAIL if result.failed else EX_OK


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="ptc",
        description="Run PTC-Lisp programs over JSON data and Python tools.",
        epilog="exit codes: 0 ok, 1 program error, 2 (fail ...), 64 usage, 65 bad data, "
        "66 missing input",
    )
    parser.add_argument("--version", action="version", version=f"ptc {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--data", help="JSON file (or - for stdin) whose keys become data/...")
        p.add_argument(
            "--tool",
            action="append",
            default=[],
            metavar="MODULE:FUNCTION",
            help="a Python function offered as tool/<name> (repeatable)",
        )
        p.add_argument(
            "--limit",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="a run limit, e.g. timeout_ms=500 (repeatable)",
        )

    run_p = sub.add_parser("run", help="evaluate a program file (or - for stdin)")
    run_p.add_argument("program", help="path to a .clj file, or - to read stdin")
    common(run_p)
    run_p.add_argument("--json", action="store_true", help="print the value as JSON")

    eval_p = sub.add_parser("eval", help="evaluate an expression given on the command line")
    eval_p.add_argument("expression", help="PTC-Lisp source, e.g. '(+ 1 2)'")
    common(eval_p)
    eval_p.add_argument("--json", action="store_true", help="print the value as JSON")

    repl_p = sub.add_parser("repl", help="an interactive session (definitions persist)")
    common(repl_p)

    demo_p = sub.add_parser("demo", help="an agent task over bundled data, turn by turn")
    demo_p.add_argument(
        "--model", metavar="openai:NAME", help="a real model instead of the recorded replies"
    )
    demo_p.add_argument("--base-url", help="an OpenAI-compatible server for --model")
    demo_p.add_argument("--out", metavar="DIR", help="where to write the trace page (default: tmp)")

    trace_p = sub.add_parser("trace", help="show a saved run (Step JSON), or write its page")
    trace_p.add_argument("step", help="a file written by step.to_json()")
    trace_p.add_argument("--html", metavar="OUT", help="write the run's HTML page to OUT")

    mcp_p = sub.add_parser("mcp", help="serve a run_program tool to MCP clients over stdio")
    common(mcp_p)
    mcp_p.add_argument("--name", default="run_program", help="the tool's name")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `ptc ... | head`: the reader left; nothing more to say
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EX_OK


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "mcp":
            return _mcp(args)
        if args.command == "trace":
            return _trace(args)
        if args.command == "repl":
            from .repl import main_repl

            return main_repl(_session(args))
        if args.command == "demo":
            from .demo import run_demo

            try:
                step = run_demo(args.model, args.base_url, args.out)
            except ValueError as e:
                raise UsageError(str(e)) from None
            return EX_OK if step.ok else EX_ERROR
        if args.command == "eval":
            source = args.expression
        else:
            if args.program == "-" and args.data == "-":
                raise UsageError("the program and --data cannot both be read from stdin")
            source = _read(args.program, "program")
        session = _session(args)
        try:
            result = session.run(source)
        except ValueError as e:  # not valid Unicode text
            return _fail(str(e), EX_DATAERR)
        return _show(result, args.json)
    except UsageError as e:
        return _fail(str(e), EX_USAGE)
    except InputError as e:
        return _fail(str(e), e.code)


def _trace(args: argparse.Namespace) -> int:
    """A saved Step as text, or its page. The file is untrusted: whatever it holds, a problem
    is one line naming the file and an exit code, never a traceback."""
    from .step import Step

    where = f"step {args.step}"
    text = _read(args.step, "step")
    try:
        data = json.loads(text)
    except RecursionError:
        raise InputError(f"{where}: not JSON (nested too deeply)", EX_DATAERR) from None
    except ValueError as e:
        raise InputError(f"{where}: not JSON ({e})", EX_DATAERR) from None
    try:
        step = Step.from_dict(data)
    except Exception as e:  # the loader names what is wrong; any failure is the file's
        raise InputError(f"{where}: not a saved Step ({_why(e)})", EX_DATAERR) from None
    try:
        shown = step.to_html() if args.html else step.render("full")
    except Exception as e:  # a step the loader let through but that cannot be shown
        raise InputError(f"{where}: cannot be shown ({_why(e)})", EX_DATAERR) from None
    if args.html:
        out = Path(args.html)
        try:
            out.write_text(shown, encoding="utf-8")
        except OSError as e:
            raise InputError(f"--html {args.html}: {e.strerror}", EX_NOINPUT) from None
        print(out.resolve())
    else:  # a lone surrogate (JSON may spell one) cannot be printed: shown as its escape
        print(shown.translate(_CONTROLS).encode("utf-8", "backslashreplace").decode("utf-8"))
    return EX_OK


# Control characters other than newline and tab, shown as escapes: a step's text must not
# drive the terminal it is printed to (clear it, retitle it, rewrite a line, set the clipboard).
_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"}


def _why(e: Exception) -> str:
    if isinstance(e, ValueError | TypeError):
        return str(e)
    if isinstance(e, KeyError):
        return f"missing field {e.args[0]!r}" if e.args else "a missing field"
    if isinstance(e, RecursionError):
        return "nested too deeply"
    return f"{type(e).__name__}: {e}"


def _mcp(args: argparse.Namespace) -> int:
    from .integrations import ProgramTool

    server = ProgramTool.from_session(_session(args), name=args.name).mcp_server()
    # SIGINT ends the server at once, as SIGTERM does. asyncio's own handler only cancels the
    # main task, which then waited on the stdin reader (a blocking read in a thread), so Ctrl-C
    # left the server running. A tool raising KeyboardInterrupt is no signal: that call is
    # answered with an error (ProgramTool.mcp_server).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    server.run()  # stdio until the client closes it
    return EX_OK


if __name__ == "__main__":
    raise SystemExit(main())
