"""The ``ptc`` command line: run or evaluate PTC-Lisp over JSON data and Python tools, or serve
a ``run_program`` tool to MCP clients.

Exit codes (BSD ``sysexits``, so scripts can tell a program's failure from their own):

=====  =============================================================
0      the program ran and produced a value
1      the program raised an error (its type, message and hint on stderr)
2      the program called ``(fail reason)``
64     usage: a bad option, argument, limit or tool spec (one line on stderr)
65     bad input data: invalid JSON, a program that is not UTF-8 text
66     an input file that does not exist or is a directory
73     an output file that could not be written (disk full, ...)
=====  =============================================================

Values are printed by the core's own printer (``Result.preview``): what a run shows is the
program's value, string keys quoted and ``#'x`` for a var, never its Python conversion.

How a run is shown (the core's printer, ``--json``'s one document) is in ``_cli_output``.
Why one module over 600 lines: the parser and the subcommands it dispatches to share their
option checks and exit codes; each subcommand is a short function over them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any, NoReturn

from ptc.errors import PtcError

from ._cli_output import (
    EX_ERROR,
    EX_OK,
    cut_text,
    one_line,
    show,
)
from .session import Session

EX_USAGE, EX_DATAERR, EX_NOINPUT, EX_CANTCREAT = 64, 65, 66, 73


class UsageError(PtcError):
    """A mistake on the command line: exit 64 with the message, no traceback."""


class InputError(PtcError):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        """One line, as every usage mistake (``--help`` has the rest)."""
        raise SystemExit(
            _fail(f"{self.prog}: {message} ({self.prog} --help lists the options)", EX_USAGE)
        )


def _fail(message: str, code: int) -> int:
    print(f"ptc: {message}" if not message.startswith("ptc") else message, file=sys.stderr)
    return code


def _read_bytes(path: str, what: str) -> bytes:
    """A file's bytes (``-``: stdin), with the problem named instead of a traceback."""
    if path == "-":
        return sys.stdin.buffer.read()
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{what} {path}: is a directory, not a file", EX_NOINPUT)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{what} {path}: no such file", EX_NOINPUT) from None
    except OSError as e:
        raise InputError(f"{what} {path}: {e.strerror}", EX_NOINPUT) from None


def _read(path: str, what: str, data: bytes | None = None) -> str:
    """A file's text (``-``: stdin; ``data``: its bytes, already read), with the problem named
    instead of a traceback."""
    if data is None:
        data = _read_bytes(path, what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(
            f"{what} {path}: not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})",
            EX_DATAERR,
        ) from None


def _cwd_on_path() -> None:
    """The current directory first on ``sys.path``, as ``python -m ptc`` has it, so that
    ``--tool mytools:fn`` finds ``mytools.py`` there under the ``ptc`` script too (whose
    ``sys.path[0]`` is the script's own folder). Not with ``-P`` / ``PYTHONSAFEPATH``, which
    keep ``python -m`` from adding it as well."""
    if sys.flags.safe_path:
        return
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _load_tool(spec: str) -> Any:
    """``module:function`` (or ``module:object.attr``) as a callable; the module is looked
    for in the current directory first (:func:`_cwd_on_path`), then on ``sys.path``."""
    import importlib

    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise UsageError(f"--tool {spec!r}: expected MODULE:FUNCTION")
    _cwd_on_path()
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as e:
        raise UsageError(f"--tool {spec!r}: cannot import {module_name!r}: {e}") from None
    except (Exception, SystemExit) as e:  # the module fails: a syntax error, a raise, an exit
        raise UsageError(
            f"--tool {spec!r}: importing {module_name!r} failed: {type(e).__name__}: {one_line(e)}"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"--tool {spec!r}: {module_name} has no {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"--tool {spec!r}: {attr} is not callable")
    return obj


def _tools(specs: list[str]) -> list[Any]:
    """The ``--tool`` callables, each checked as a Session checks a tool, so a callable that
    cannot be one, or two of one ``tool/`` name, is a usage error naming them."""
    from .tools.adapter import normalize_tools

    out: list[Any] = []
    given: dict[str, str] = {}  # tool name -> the spec that gave it
    for spec in specs:
        obj = _load_tool(spec)
        if getattr(obj, "__name__", None) == "<lambda>":
            raise UsageError(
                f"--tool {spec!r}: a lambda has no name to call it by; point --tool at a def"
            )
        try:
            (name,) = normalize_tools([obj])
        except (TypeError, ValueError) as e:
            raise UsageError(f"--tool {spec!r}: {e}") from None
        if name in given:
            raise UsageError(
                f"--tool {given[name]!r} and --tool {spec!r} are both tool/{name} (a tool is"
                " named after its function): wrap one in a function of another name"
            )
        given[name] = spec
        out.append(obj)
    return out


#: The largest value a limit takes (the core holds them as unsigned 64-bit integers).
_LIMIT_MAX = 2**64 - 1


def _limits(pairs: list[str]) -> dict[str, int] | None:
    """``NAME=VALUE`` pairs as limits, each checked as the core checks it (a whole number from
    0 up to the limit's cap), so a bad one is a usage error naming it."""
    from .limits import Limits

    names = [f for f in Limits.__dataclass_fields__]
    out: dict[str, int] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise UsageError(f"--limit {pair!r}: expected NAME=VALUE (e.g. timeout_ms=500)")
        if name not in names:
            raise UsageError(f"--limit {pair!r}: no limit {name!r}; limits: {', '.join(names)}")
        digits = value.replace("_", "").strip()
        try:
            n = int(digits)
        except ValueError:
            if not digits.lstrip("+-").isdecimal():
                raise UsageError(
                    f"--limit {cut_text(pair)!r}: {cut_text(value)!r} is not a whole number"
                ) from None
            n = -1 if digits.startswith("-") else _LIMIT_MAX + 1  # too long for int() to read
        if n < 0:
            raise UsageError(f"--limit {cut_text(pair)!r}: a limit is 0 or more")
        if n > _LIMIT_MAX:
            raise UsageError(
                f"--limit {cut_text(pair)!r}: a limit is at most {_LIMIT_MAX:,} (2**64 - 1)"
            )
        try:  # the core's own caps (max_depth, timeout_ms, sizes): its message says why
            Session(limits={name: n})
        except ValueError as e:
            raise UsageError(f"--limit {pair!r}: {e}") from None
        out[name] = n
    return out or None


def _module_tools(name: str) -> list[Any]:
    """``--tools MODULE``: the module's ``TOOLS`` (a list or dict, as ``Session(tools=)`` takes
    it) when it has one, else its ``ptc.Tool`` objects and the public functions it defines."""
    import importlib
    import inspect

    from .tools.declare import Tool

    _cwd_on_path()
    try:
        module = importlib.import_module(name)
    except ImportError as e:
        raise UsageError(f"--tools {name!r}: cannot import it: {e}") from None
    except (Exception, SystemExit) as e:
        raise UsageError(
            f"--tools {name!r}: importing it failed: {type(e).__name__}: {one_line(e)}"
        ) from None
    listed = getattr(module, "TOOLS", None)
    if listed is not None:
        if isinstance(listed, dict):
            return list(listed.values()) if all(isinstance(k, str) for k in listed) else []
        return list(listed)
    found: list[Any] = []
    for attr, obj in vars(module).items():
        if attr.startswith("_"):
            continue
        if isinstance(obj, Tool) or (inspect.isfunction(obj) and obj.__module__ == module.__name__):
            found.append(obj)
    if not found:
        raise UsageError(
            f"--tools {name!r}: it defines no public function or ptc.Tool (or TOOLS list)"
        )
    return found


def _session(args: argparse.Namespace) -> Session:
    """A Session over the JSON file (parsed straight into the core), with the tools."""
    tools = _tools(getattr(args, "tool", []))
    for module in getattr(args, "tools", None) or []:
        tools.extend(_module_tools(module))
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


#: What MCP allows in a tool's name (SEP-986).
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def _tool_name(text: str) -> str:
    if not _TOOL_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text[:40]!r} is not a tool name: 1 to 128 of A-Z a-z 0-9 _ - . (e.g. run_program)"
        )
    return text


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a positive whole number (e.g. 500)")
    return int(text)


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(
        prog="ptc",
        description="Run PTC-Lisp programs over JSON data and Python tools.",
        epilog="exit codes: 0 ok, 1 program error, 2 (fail ...), 64 usage, 65 bad data, "
        "66 missing input, 73 output not written",
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
            "--tools",
            action="append",
            default=[],
            metavar="MODULE",
            help="every tool of a Python module: its TOOLS list, else its public functions",
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
    run_p.add_argument(
        "--json", action="store_true", help="print one JSON document: ok, value, printed, error"
    )

    eval_p = sub.add_parser("eval", help="evaluate an expression given on the command line")
    eval_p.add_argument("expression", help="PTC-Lisp source, e.g. '(+ 1 2)'")
    common(eval_p)
    eval_p.add_argument(
        "--json", action="store_true", help="print one JSON document: ok, value, printed, error"
    )

    check_p = sub.add_parser(
        "check", help="check a program file without running it (tools, arguments, data names)"
    )
    check_p.add_argument("program", help="path to a .clj file, or - to read stdin")
    common(check_p)
    check_p.add_argument(
        "--json", action="store_true", help="print one JSON document: ok, errors, warnings, plan"
    )
    check_p.add_argument(
        "--plan",
        action="store_true",
        help="also print which tools the program can call, from where and how often",
    )

    repl_p = sub.add_parser("repl", help="an interactive session (definitions persist)")
    common(repl_p)

    demo_p = sub.add_parser("demo", help="an agent task over bundled data, turn by turn")
    demo_p.add_argument(
        "--model", metavar="openai:NAME", help="a real model instead of the recorded replies"
    )
    demo_p.add_argument("--base-url", help="an OpenAI-compatible server for --model")
    demo_p.add_argument(
        "--out",
        metavar="DIR",
        help="an existing folder for the trace page and the run's Step JSON (default: tmp)",
    )

    trace_p = sub.add_parser(
        "trace", help="show a saved run (Step JSON or JSONL checkpoint), or write its page"
    )
    trace_p.add_argument(
        "step", help="a file written by step.to_json(), or a JsonlCheckpoint's file"
    )
    trace_p.add_argument(
        "--run", metavar="ID", help="the run to show, when the checkpoint file holds several"
    )
    trace_p.add_argument("--html", metavar="OUT", help="write the run's HTML page to OUT")

    mcp_p = sub.add_parser("mcp", help="serve a run_program tool to MCP clients over stdio")
    common(mcp_p)
    mcp_p.add_argument(
        "--name",
        default="run_program",
        type=_tool_name,
        help="the tool's name (1-128 of A-Z a-z 0-9 _ - .)",
    )
    mcp_p.add_argument(
        "--result-tokens",
        type=_positive_int,
        help="print each answer's value within N exact o200k tokens (default: 4,000 characters)",
    )
    mcp_p.add_argument(
        "--tool-listing-tokens",
        type=_positive_int,
        default=1500,
        help="past N exact o200k tokens the tool's description lists the host tools by group, "
        'found with (tools "words") (default: 1500)',
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:  # `ptc ... | head`: the reader left; nothing more to say
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
            return _demo(args)
        if args.command == "check":
            return _check(args)
        if args.command == "eval":
            source = args.expression
        else:
            if args.program == "-" and args.data == "-":
                raise UsageError("the program and --data cannot both be read from stdin")
            source = _read(args.program, "program")
        session = _session(args)
        try:  # lazy: the value stays a core value, printed by the core (converted for --json)
            result = session.run(source, lazy=True)
        except ValueError as e:  # not valid Unicode text
            return _fail(str(e), EX_DATAERR)
        return show(result, args.json)
    except UsageError as e:
        return _fail(str(e), EX_USAGE)
    except InputError as e:
        return _fail(str(e), e.code)


def _check(args: argparse.Namespace) -> int:
    """``ptc check``: nothing runs; each error one line on stdout (or one JSON document),
    warnings on stderr; exit 0 when the program can run, 1 when not."""
    if args.program == "-" and args.data == "-":
        raise UsageError("the program and --data cannot both be read from stdin")
    source = _read(args.program, "program")
    found = _session(args).check(source)
    for warning in found.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        errors = [
            {
                "type": e.type,
                "message": e.message,
                "hint": e.hint,
                "line": e.line,
                "column": e.column,
            }
            for e in found.errors
        ]
        doc = {"ok": found.ok, "errors": errors, "warnings": list(found.warnings)}
        if found.plan is not None:
            doc["plan"] = found.plan.to_dict()
        print(json.dumps(doc, ensure_ascii=False))
    else:
        for e in found.errors:
            where = f"{args.program}:{e.line}:{e.column}" if e.line is not None else args.program
            hint = f" (hint: {e.hint})" if e.hint else ""
            print(f"{where}: {e.type}: {e.message}{hint}".replace("\n", " "))
        if args.plan and found.plan is not None:
            print(found.plan.render())
    return EX_OK if found.ok else EX_ERROR


def _demo(args: argparse.Namespace) -> int:
    from . import demo

    try:  # every option is checked before the run, so a mistake costs no model calls
        demo.check_options(args.model, args.base_url, args.out)
    except ValueError as e:
        raise UsageError(str(e)) from None
    try:
        step = demo.run_demo(args.model, args.base_url, args.out)
    except ImportError as e:  # --model without the provider's SDK installed
        raise UsageError(f"--model {args.model}: {one_line(e)}") from None
    except OSError as e:  # the page or the step could not be written
        what = f"cannot write {e.filename}: " if e.filename else ""
        raise InputError(f"--out {args.out}: {what}{e.strerror or e}", EX_CANTCREAT) from None
    return EX_OK if step.ok else EX_ERROR


def _output_path(option: str, path: str) -> Path:
    """An output file's path, once its folder is known to exist (checked before any work)."""
    out = Path(path)
    folder = out.parent
    if out.is_dir():
        raise UsageError(f"{option} {path}: is a directory; name the file to write")
    if not folder.exists():
        raise UsageError(f"{option} {path}: no such directory {str(folder)!r}")
    if not folder.is_dir():
        raise UsageError(f"{option} {path}: {str(folder)!r} is not a directory")
    return out


_SPACE = re.compile(rb"\s*")


def _checkpoint_events(data: bytes) -> bool:
    """Whether a file's first line is a checkpoint event (``JsonlCheckpoint``'s lines all
    start with ``{"run_id": ``), rather than a Step's JSON."""
    space = _SPACE.match(data)
    start = space.end() if space else 0
    end = data.find(b"\n", start)
    first = data[start : end if end >= 0 else len(data)].strip()
    if first.startswith(b'{"run_id"'):
        return True
    if b'"run_id"' not in first or b'"event"' not in first:
        return False  # not parsed: a Step's JSON may be one long line
    try:
        obj = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and "run_id" in obj and "event" in obj


#: Run ids a message lists before saying how many more there are.
_RUNS_LISTED = 20


def _listed(runs: list[str]) -> str:
    from .checkpoint.errors import shown_id

    shown = ", ".join(shown_id(r) for r in runs[:_RUNS_LISTED])
    more = len(runs) - _RUNS_LISTED
    return shown + (f" and {more:,} more" if more > 0 else "")


def _from_checkpoint(path: str, run: str | None) -> tuple[Any, str]:
    """The Step of one run in a JSONL checkpoint file, and what to call it in messages: the
    only run, or ``--run ID``'s. The file is untrusted: any problem is one line."""
    from .checkpoint import CheckpointError, JsonlCheckpoint
    from .checkpoint.errors import shown_id

    if path == "-":
        raise UsageError(
            "step -: a checkpoint is read from its file, not from stdin; pass its path"
        )
    cp = JsonlCheckpoint(path)
    try:
        runs = cp.runs()
    except OSError as e:
        raise InputError(f"checkpoint {path}: {e.strerror or e}", EX_NOINPUT) from None
    if not runs:
        raise InputError(f"checkpoint {path}: no run saved (no 'start' line)", EX_DATAERR)
    if run is None:
        if len(runs) > 1:
            raise UsageError(
                f"checkpoint {path} holds {len(runs):,} runs; pass --run ID, one of: "
                + _listed(runs)
            )
        run = runs[0]
    elif run not in runs:
        raise UsageError(f"--run {shown_id(run)}: no such run in {path}; its runs: {_listed(runs)}")
    where = f"checkpoint {path} run {shown_id(run)}"
    try:
        step, _ = cp.load(run)
    except CheckpointError as e:  # names the file, the line and the run
        raise InputError(f"checkpoint {e}", EX_DATAERR) from None
    except Exception as e:  # anything else the loader refuses is the file's, said in a line
        raise InputError(f"{where}: not a saved run ({_why(e)})", EX_DATAERR) from None
    return step, where


def _trace(args: argparse.Namespace) -> int:
    """A saved Step, or a run of a JSONL checkpoint file, as text or as its page. The file is
    untrusted: whatever it holds, a problem is one line naming the file and an exit code, never
    a traceback."""
    from .step import Step
    from .trace import terminal_safe, to_text

    out = _output_path("--html", args.html) if args.html else None
    raw = _read_bytes(args.step, "step")
    if _checkpoint_events(raw):
        step, where = _from_checkpoint(args.step, args.run)
    else:
        if args.run is not None:
            raise UsageError(
                f"--run {args.run}: {args.step} is a saved Step (one run), not a checkpoint file"
            )
        where = f"step {args.step}"
        text = _read(args.step, "step", raw)
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
        shown = step.to_html() if out is not None else to_text(step)
    except Exception as e:  # a step the loader let through but that cannot be shown
        raise InputError(f"{where}: cannot be shown ({_why(e)})", EX_DATAERR) from None
    if out is not None:
        try:
            out.write_text(shown, encoding="utf-8")
        except OSError as e:
            raise InputError(f"--html {args.html}: {e.strerror or e}", EX_CANTCREAT) from None
        print(out.resolve())
    else:  # control characters and lone surrogates shown as escapes
        print(terminal_safe(shown))
    return EX_OK


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

    session = _session(args)
    tool = ProgramTool.from_session(
        session,
        name=args.name,
        result_tokens=args.result_tokens,
        tool_listing_tokens=args.tool_listing_tokens,
    )
    server = tool.mcp_server()
    # SIGINT ends the server at once, as SIGTERM does. asyncio's own handler only cancels the
    # main task, which then waited on the stdin reader (a blocking read in a thread), so Ctrl-C
    # left the server running. A tool raising KeyboardInterrupt is no signal: that call is
    # answered with an error (ProgramTool.mcp_server).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    server.run()  # stdio until the client closes it
    return EX_OK


if __name__ == "__main__":
    raise SystemExit(main())
