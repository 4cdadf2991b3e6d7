"""The ``ptc`` console script as a user runs it: the installed entry point, in a subprocess,
from a temporary working directory (issue 30, items 1, 2, 7, 9 and 10).

Values are printed by the core's printer, ``--json`` is one JSON document however the run
ended, ``ptc trace`` reads the guide's checkpoint file and the demo's saved Step, a failed run
says why, and every usage mistake is one line on stderr with exit code 64."""

from __future__ import annotations

import html
import json
import os
import re
import socket
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import ptc
import pytest
from ptc.checkpoint import CheckpointError, JsonlCheckpoint
from ptc.llm import ScriptedLLM
from ptc.repl import repl

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Path(sysconfig.get_path("scripts")) / "ptc"


def ptc_script(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``ptc ARGS`` run as a shell runs it: the console script pip installed, in ``cwd``."""
    assert SCRIPT.is_file(), f"no ptc console script at {SCRIPT}: install the package (pip)"
    base = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    return subprocess.run(
        [str(SCRIPT), *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env={**base, **(env or {})},
        check=False,
    )


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


# ---- item 1: values as the core prints them -------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "shown", "code"),
    [
        ('{"a" 1}', '{"a" 1}', 0),  # a string key stays a string (was {:a 1})
        ("(def x 1)", "#'x", 0),  # a var (was the string "#'x")
        ('{"a" 1 :a 2}', '{"a" 1, :a 2}', 0),  # two keys Python cannot tell apart (was an error)
        ('{1 :a "1" :b}', '{1 :a, "1" :b}', 0),
        ('#{"x"}', '#{"x"}', 0),
        ("(fn [a b] a)", "#fn[a b]", 0),
        ('(return {"k" nil})', '{"k" nil}', 0),
        ("(/ 0.0 0)", "##NaN", 0),
        ("(range 25)", "[" + " ".join(str(i) for i in range(25)) + "]", 0),  # not cut
        ('(fail {"a" 1})', 'failed: {"a" 1}', 2),
        ("{:_x 1 :a 2}", "{:_x 1, :a 2}", 0),  # "_" keys are hidden from the LLM, not here
    ],
)
def test_eval_prints_the_value_as_the_core_does(
    tmp_path: Path, expression: str, shown: str, code: int
) -> None:
    proc = ptc_script("eval", expression, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (code, shown + "\n", "")


def test_run_prints_a_long_string_whole(tmp_path: Path) -> None:
    program = tmp_path / "long.clj"
    program.write_text('(println "x") (apply str (map (fn [_] "ab") (range 600)))')
    proc = ptc_script("run", str(program), cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "x\n" + '"' + "ab" * 600 + '"\n', "")


def test_the_repl_prints_values_as_the_core_does() -> None:
    lines = iter(['{"a" 1}', "(def x 1)", '{"a" 1 :a 2}', "(range 30)", "x", ":quit"])
    out: list[str] = []
    assert repl(ptc.Session(), lambda _prompt: next(lines), out.append) == 0
    cut = "[" + " ".join(str(i) for i in range(20)) + " ...] (30 items, showing first 20)"
    assert out[1:] == ['=> {"a" 1}', "=> #'x", '=> {"a" 1, :a 2}', f"=> {cut}", "=> 1"]


def test_the_repl_shows_an_errors_type() -> None:
    lines = iter(['(+ 1 "a")', ":quit"])
    out: list[str] = []
    repl(ptc.Session(), lambda _prompt: next(lines), out.append)
    assert out[1] == (
        'Error [type_error]: + expected a number, got string "a" (line 1, column 1)\n'
        "Hint: arithmetic takes numbers; to join text use (str a b); to read a number use"
        " (parse-long s) or (parse-double s)"
    )


def test_a_data_name_not_in_the_input_is_warned_on_stderr(tmp_path: Path) -> None:
    """Issue 30, item 13: nil by the language's rule, and the user is told, on stderr."""
    data = tmp_path / "d.json"
    data.write_text('{"orders": [1, 2]}')
    warned = "warning: data/ordrs is nil: there is no such input; did you mean data/orders?\n"
    proc = ptc_script("eval", "(count data/ordrs)", "--data", str(data), cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "0\n", warned)
    as_json = ptc_script("eval", "(count data/ordrs)", "--data", str(data), "--json", cwd=tmp_path)
    assert json.loads(as_json.stdout) == _doc(True, 0, [], None)
    assert as_json.stderr == warned


def test_the_repl_shows_warnings() -> None:
    lines = iter(["data/x", ":quit"])
    out: list[str] = []
    repl(ptc.Session(), lambda _prompt: next(lines), out.append)
    assert out[1:] == ["warning: data/x is nil: this run has no input data", "=> nil"]


# ---- item 2: --json is one JSON document ----------------------------------------------------


def _doc(ok: bool, value: Any, printed: list[str], error: dict[str, Any] | None) -> Any:
    return {"ok": ok, "value": value, "printed": printed, "error": error}


def _err(type_: str, message: str, hint: str | None = None, **more: Any) -> dict[str, Any]:
    d = {"type": type_, "message": message, "hint": hint, "line": None, "column": None}
    return {**d, "limit": None, "value": None, **more}


def test_json_of_the_readme_example_is_one_document() -> None:
    """README's example prints a line, so ``--json | python3 -m json.tool`` failed."""
    proc = ptc_script(
        "run", "examples/orders.clj", "--data", "examples/orders.json", "--json", cwd=ROOT
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    revenue = [
        {"region": "east", "revenue": 310.0},
        {"region": "north", "revenue": 162.75},
        {"region": "south", "revenue": 64.0},
    ]
    assert json.loads(proc.stdout) == _doc(True, revenue, ["shipped orders: 4"], None)
    assert proc.stdout.count("\n") == 1  # one line: the document


JSON_HINT = (
    "print it without --json, or give the map's keys one type (all strings, or all keywords)"
)
PRINTS = '(println "{\\"looks\\": \\"like json\\"}") (println "two")'


@pytest.mark.parametrize(
    ("ending", "code", "value", "error"),
    [
        ('{"a" [1 :k]}', 0, {"a": [1, "k"]}, None),
        ('(return "x")', 0, "x", None),
        ('(fail "x")', 2, None, _err("fail", "x", value="x")),
        ('(fail {"why" [1 2]})', 2, None, _err("fail", '{"why" [1 2]}', value={"why": [1, 2]})),
        (
            '(fail {1 :a "1" :b})',  # a reason JSON cannot hold: its text only
            2,
            None,
            _err("fail", '{1 :a, "1" :b}'),
        ),
        (
            "(undefined-thing)",
            1,
            None,
            _err("undefined_variable", "undefined-thing is not defined"),
        ),
        (
            '{1 :a "1" :b}',
            1,
            None,
            _err(
                "json_error",
                '--json cannot print the value: the map has the keys 1 and "1", which are both'
                ' the JSON key "1" (one entry would be lost)',
                JSON_HINT,
            ),
        ),
        (
            '{"a" 1 :a 2}',
            1,
            None,
            _err(
                "json_error",
                "--json cannot print the value: a map has keys that are different here but"
                ' equal in Python, which would keep only one: "a" and :a (a keyword and a'
                ' string with the same text) in {"a" 1, ...}',
                JSON_HINT,
            ),
        ),
        (
            "(loop [i 0] (recur (inc i)))",
            1,
            None,
            _err("loop_limit_exceeded", "loop iteration limit of 10 exceeded"),
        ),
    ],
)
def test_json_is_one_document_however_the_run_ends(
    tmp_path: Path, ending: str, code: int, value: Any, error: dict[str, Any] | None
) -> None:
    program = tmp_path / "p.clj"
    program.write_text(f"{PRINTS} {ending}")
    proc = ptc_script("run", str(program), "--json", "--limit", "loop_limit=10", cwd=tmp_path)
    assert proc.returncode == code, proc.stderr
    assert proc.stdout.count("\n") == 1
    doc = json.loads(proc.stdout)
    if code == 1 and error is not None and error["type"] != "json_error":
        # a program error: the fields of the core's error (its hint and position included)
        raised = ptc.Session(limits={"loop_limit": 10}).run(program.read_text()).error
        assert raised is not None and (raised.type, raised.message) == (
            error["type"],
            error["message"],
        )
        error = {**raised.to_dict(), "value": None}
    assert doc == _doc(error is None, value, ['{"looks": "like json"}', "two"], error)
    if code == 1:  # a person still reads the error on stderr
        e = doc["error"]
        where = f" (line {e['line']}, column {e['column']})" if e["line"] else ""
        hint = f"\nHint: {e['hint']}" if e["hint"] else ""
        assert proc.stderr == f"Error [{e['type']}]: {e['message']}{where}{hint}\n"
    else:
        assert proc.stderr == ""


def test_json_tells_a_failure_from_a_returned_string(tmp_path: Path) -> None:
    returned = json.loads(ptc_script("eval", '"x"', "--json", cwd=tmp_path).stdout)
    failed = json.loads(ptc_script("eval", '(fail "x")', "--json", cwd=tmp_path).stdout)
    assert returned == _doc(True, "x", [], None)
    assert failed == _doc(False, None, [], _err("fail", "x", value="x"))


def test_the_outputs_docs_cli_shows_are_what_ptc_prints(tmp_path: Path) -> None:
    """docs/CLI.md's examples, run as it says (the orders example from the repository root)."""
    doc = (ROOT / "docs" / "CLI.md").read_text()
    block = re.search(r"```json\n(.*?)\n```", doc, re.S)
    assert block is not None
    orders = ptc_script(
        "run", "examples/orders.clj", "--data", "examples/orders.json", "--json", cwd=ROOT
    )
    assert orders.stdout == block.group(1) + "\n"
    stated = re.findall(r"`ptc eval '([^']*)' --json` prints `([^`]*)`", doc.replace("\n", " "))
    assert [e for e, _ in stated] == ['"x"', '(fail "x")']
    for expression, printed in stated:
        assert ptc_script("eval", expression, "--json", cwd=tmp_path).stdout == printed + "\n"
    error = re.search(
        r"`ptc eval '([^']*)'` prints `start`, then on stderr:\n\n  ```text\n(.*?)```", doc, re.S
    )
    assert error is not None
    stderr = error.group(2).replace("\n  ", "\n").lstrip()  # the block is indented in a list
    proc = ptc_script("eval", error.group(1), cwd=tmp_path)
    assert (proc.stdout, proc.stderr) == ("start\n", stderr)


# ---- item 9: a failed run says why ----------------------------------------------------------


def test_run_shows_the_errors_type_and_message(tmp_path: Path) -> None:
    program = tmp_path / "bad.clj"
    program.write_text('(println "start")\n(+ 1 "a")\n')
    proc = ptc_script("run", str(program), cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (1, "start\n")
    assert proc.stderr == (
        'Error [type_error]: + expected a number, got string "a" (line 2, column 1)\n'
        "Hint: arithmetic takes numbers; to join text use (str a b); to read a number use"
        " (parse-long s) or (parse-double s)\n"
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.timeout(120)
def test_the_demo_says_why_a_model_run_failed(tmp_path: Path) -> None:
    """A dead server printed only ``result: error -> nil``; the page's header only the type."""
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    proc = ptc_script(
        "demo",
        "--model",
        "openai:some-model",
        "--base-url",
        url,
        "--out",
        ".",
        cwd=tmp_path,
        env={"OPENAI_API_KEY": "test-key"},
    )
    assert (proc.returncode, proc.stderr) == (1, ""), proc.stderr
    step = ptc.Step.from_dict(json.loads((tmp_path / "ptc-demo-step.json").read_text()))
    assert step.error is not None and step.error.type == "llm_error"
    assert "Connection refused" in step.error.message
    assert f"\nresult: error [llm_error]: {step.error.message}\n" in proc.stdout
    page = (tmp_path / "ptc-demo-trace.html").read_text()
    header = f"0 turns · error [llm_error]: {step.error.message}"
    assert f"<p>{html.escape(header)} · no token usage reported by the LLM</p>" in page


# ---- item 7: ptc trace reads the demo's Step and the guide's checkpoint file ----------------


@pytest.mark.timeout(120)
def test_the_demo_saves_its_step_for_ptc_trace(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = ptc_script("demo", "--out", "out", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    saved = Path("out") / "ptc-demo-step.json"
    assert proc.stdout.endswith(
        "trace page: out/ptc-demo-trace.html\n"
        f"step:       {saved} (ptc trace {saved} prints every turn)\n"
    )
    result = (
        '{:region "south", :revenue 13652.439999999999, :restock {:product "kettle", :region'
        ' "south", :ordered 50, :eta_days 3}}'
    )
    assert f"\nresult: ok -> {result}\n" in proc.stdout
    traced = ptc_script("trace", str(saved), cwd=tmp_path)
    assert (traced.returncode, traced.stderr) == (0, "")
    assert traced.stdout.startswith("mission: Find the region with the highest revenue")
    assert traced.stdout.count("\n--- turn ") == 6
    assert traced.stdout.endswith(f"\n=> ok: {result}\n")


def _step(program: str, mission: str = "count the xs") -> ptc.Step:
    return ptc.SubAgent(
        prompt=mission, llm=ScriptedLLM([clj(program)]), data={"xs": [1, 2, 3]}
    ).run()


def _checkpoint(path: Path, runs: dict[str, ptc.Step]) -> None:
    cp = JsonlCheckpoint(path)
    for run_id, step in runs.items():
        cp.save(step, run_id)


def test_trace_reads_the_only_run_of_a_checkpoint_file(tmp_path: Path) -> None:
    _checkpoint(tmp_path / "runs.jsonl", {"r1": _step('(return {"n" (count data/xs)})')})
    proc = ptc_script("trace", "runs.jsonl", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == (
        "mission: count the xs\n\n--- turn 1 (ok) ---\n"
        '(return {"n" (count data/xs)})\n;; => {"n" 3}\n\n=> ok: {"n" 3}\n'
    )
    page = ptc_script("trace", "runs.jsonl", "--html", "page.html", cwd=tmp_path)
    assert (page.returncode, page.stdout, page.stderr) == (0, f"{tmp_path / 'page.html'}\n", "")
    text = (tmp_path / "page.html").read_text()
    assert "<p>1 turns · ok · no token usage reported by the LLM</p>" in text
    assert '<div class="label">Value</div><pre>{&quot;n&quot; 3}</pre>' in text


def test_trace_picks_a_run_of_a_checkpoint_file_with_run(tmp_path: Path) -> None:
    _checkpoint(
        tmp_path / "runs.jsonl",
        {"alpha": _step("(return 1)"), "beta": _step('(fail "no xs")', "find the xs")},
    )
    several = ptc_script("trace", "runs.jsonl", cwd=tmp_path)
    assert (several.returncode, several.stdout) == (64, "")
    assert several.stderr == (
        "ptc: checkpoint runs.jsonl holds 2 runs; pass --run ID, one of: 'alpha', 'beta'\n"
    )
    beta = ptc_script("trace", "runs.jsonl", "--run", "beta", cwd=tmp_path)
    assert (beta.returncode, beta.stderr) == (0, "")
    assert beta.stdout.startswith("mission: find the xs\n")
    assert beta.stdout.endswith("\n=> error [fail]: no xs\n")
    missing = ptc_script("trace", "runs.jsonl", "--run", "gamma", cwd=tmp_path)
    assert (missing.returncode, missing.stdout) == (64, "")
    assert missing.stderr == (
        "ptc: --run 'gamma': no such run in runs.jsonl; its runs: 'alpha', 'beta'\n"
    )


def test_trace_shows_a_run_that_has_not_finished(tmp_path: Path) -> None:
    """What the checkpoint holds of a run killed after its first turn: no end line yet."""
    step = ptc.SubAgent(
        prompt="two steps",
        llm=ScriptedLLM([clj("(def n 1)"), clj("(return n)")]),
    ).run()
    path = tmp_path / "runs.jsonl"
    _checkpoint(path, {"r": step})
    start, turn1, _turn2, _end = path.read_text().splitlines()
    path.write_text(f"{start}\n{turn1}\n")
    proc = ptc_script("trace", "runs.jsonl", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.endswith(
        "\n=> not finished (no error yet: the run was saved while it went on)\n"
    )
    ptc_script("trace", "runs.jsonl", "--html", "p.html", cwd=tmp_path)
    assert "<p>1 turns · not finished · " in (tmp_path / "p.html").read_text()


def test_trace_names_a_bad_checkpoint_line_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    _checkpoint(path, {"r": _step("(return 1)")})
    start, turn, end = path.read_text().splitlines()
    bad = json.loads(end)
    bad["step"]["turns"] = 7
    path.write_text("\n".join([start, turn, json.dumps(bad)]) + "\n")
    with pytest.raises(CheckpointError) as refused:  # what the loader says is wrong
        JsonlCheckpoint(path).load("r")
    assert (refused.value.line, refused.value.run_id) == (3, "r")
    proc = ptc_script("trace", "runs.jsonl", cwd=tmp_path)
    assert (proc.returncode, proc.stdout) == (65, "")
    assert proc.stderr == f"ptc: checkpoint runs.jsonl, line 3 (run 'r'): {refused.value.reason}\n"


def test_trace_of_a_checkpoint_on_stdin_asks_for_its_file(tmp_path: Path) -> None:
    _checkpoint(tmp_path / "runs.jsonl", {"r": _step("(return 1)")})
    text = (tmp_path / "runs.jsonl").read_text()
    proc = ptc_script("trace", "-", cwd=tmp_path, stdin=text)
    assert (proc.returncode, proc.stdout) == (64, "")
    assert proc.stderr == (
        "ptc: step -: a checkpoint is read from its file, not from stdin; pass its path\n"
    )


def test_an_output_that_cannot_be_written_is_one_line_and_exit_73(tmp_path: Path) -> None:
    (tmp_path / "step.json").write_text(_step("(return 1)").to_json())
    full = ptc_script("trace", "step.json", "--html", "/dev/full", cwd=tmp_path)
    assert (full.returncode, full.stdout) == (73, "")
    assert full.stderr == "ptc: --html /dev/full: No space left on device\n"
    (tmp_path / "ptc-demo-trace.html").mkdir()  # where the demo writes its page
    demo = ptc_script("demo", "--out", ".", cwd=tmp_path)
    assert demo.returncode == 73
    assert demo.stderr == "ptc: --out .: cannot write ptc-demo-trace.html: Is a directory\n"


# ---- item 10: usage mistakes are one line and exit 64 ---------------------------------------


MAX = "18,446,744,073,709,551,615"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["demo", "--out", "missing/dir"],
            "--out missing/dir: no such directory (create it, or pass an existing one)",
        ),
        (
            ["demo", "--out", "afile"],
            "--out afile: not a directory (pass the folder to write the page in)",
        ),
        (
            ["demo", "--base-url", "http://localhost:1"],
            "--base-url needs --model openai:MODEL_NAME (the model to ask there)",
        ),
        (
            ["demo", "--model", "acme:big"],
            "--model 'acme:big': expected openai:MODEL_NAME (e.g. openai:gpt-4.1-mini)",
        ),
        (
            ["eval", "1", "--limit", "timeout_ms=-5"],
            "--limit 'timeout_ms=-5': a limit is 0 or more",
        ),
        (
            ["eval", "1", "--limit", "fuel=99999999999999999999999"],
            f"--limit 'fuel=99999999999999999999999': a limit is at most {MAX} (2**64 - 1)",
        ),
        (
            ["eval", "1", "--limit", "max_depth=1000000"],
            "--limit 'max_depth=1000000': limit"
            " max_depth may be at most 100000: each call level takes native stack; deeper"
            " recursion should be a loop",
        ),
        (
            ["eval", "1", "--limit", "fuel=" + "9" * 5000],  # more digits than int() reads
            f"--limit 'fuel={'9' * 52}...': a limit is at most {MAX} (2**64 - 1)",
        ),
        (
            ["eval", "1", "--limit", "fuel=-" + "9" * 5000],
            f"--limit 'fuel=-{'9' * 51}...': a limit is 0 or more",
        ),
        (
            ["eval", "1", "--limit", "fuel=1e3"],
            "--limit 'fuel=1e3': '1e3' is not a whole number",
        ),
        (
            ["eval", "1", "--limit", "fuel"],
            "--limit 'fuel': expected NAME=VALUE (e.g. timeout_ms=500)",
        ),
        (
            ["eval", "1", "--tool", "boom:f"],
            "--tool 'boom:f': importing 'boom' failed: RuntimeError: boom at import",
        ),
        (
            ["eval", "1", "--tool", "broken:f"],
            "--tool 'broken:f': importing 'broken' failed:"
            " SyntaxError: '(' was never closed (broken.py, line 1)",
        ),
        (
            ["eval", "1", "--tool", "mytools:anon"],
            "--tool 'mytools:anon': a lambda has no name to call it by; point --tool at a def",
        ),
        (
            ["eval", "1", "--tool", "mytools:double", "--tool", "other:double"],
            "--tool 'mytools:double' and --tool 'other:double' are both tool/double (a tool is"
            " named after its function): wrap one in a function of another name",
        ),
        (["eval", "1", "--tool", "mytools:LIMIT"], "--tool 'mytools:LIMIT': LIMIT is not callable"),
        (
            ["trace", "step.json", "--html", "nodir/p.html"],
            "--html nodir/p.html: no such directory 'nodir'",
        ),
        (["trace", "step.json", "--html", "."], "--html .: is a directory; name the file to write"),
        (
            ["trace", "step.json", "--run", "r1"],
            "--run r1: step.json is a saved Step (one run), not a checkpoint file",
        ),
        (
            ["mcp", "--name", "a b"],
            "ptc mcp: argument --name: 'a b' is not a tool name: 1 to 128"
            " of A-Z a-z 0-9 _ - . (e.g. run_program) (ptc mcp --help lists the options)",
        ),
        (
            ["mcp", "--name", ""],
            "ptc mcp: argument --name: '' is not a tool name: 1 to 128 of"
            " A-Z a-z 0-9 _ - . (e.g. run_program) (ptc mcp --help lists the options)",
        ),
        (
            ["eval"],
            "ptc eval: the following arguments are required: expression (ptc eval --help"
            " lists the options)",
        ),
        ([], "ptc: the following arguments are required: command (ptc --help lists the options)"),
    ],
)
def test_a_usage_mistake_is_one_line_and_exit_64(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "afile").write_text("")
    (tmp_path / "boom.py").write_text('raise RuntimeError("boom at import")\n')
    (tmp_path / "broken.py").write_text("x = (\n")
    (tmp_path / "mytools.py").write_text(
        "LIMIT = 3\nanon = lambda x: x\n\ndef double(x: int) -> int:\n    return 2 * x\n"
    )
    (tmp_path / "other.py").write_text("def double(x: int) -> int:\n    return x + x\n")
    (tmp_path / "step.json").write_text(_step("(return 1)").to_json())
    proc = ptc_script(*args, cwd=tmp_path, stdin="")
    expected = message if message.startswith("ptc") else f"ptc: {message}"
    assert (proc.returncode, proc.stdout, proc.stderr) == (64, "", expected + "\n")


def test_a_tool_module_in_the_current_directory_is_found(tmp_path: Path) -> None:
    """As ``python3 -m ptc`` finds it (the cwd is first on its sys.path), without PYTHONPATH."""
    (tmp_path / "mytools.py").write_text("def double(x: int) -> int:\n    return 2 * x\n")
    env = {"PYTHONPATH": ""}
    proc = ptc_script("eval", "(tool/double 21)", "--tool", "mytools:double", cwd=tmp_path, env=env)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "42\n", "")
    # -P / PYTHONSAFEPATH keeps python -m from adding the cwd: the script honours it too
    safe = ptc_script(
        "eval", "1", "--tool", "mytools:double", cwd=tmp_path, env={**env, "PYTHONSAFEPATH": "1"}
    )
    assert (safe.returncode, safe.stdout) == (64, "")
    assert safe.stderr == (
        "ptc: --tool 'mytools:double': cannot import 'mytools': No module named 'mytools'\n"
    )
