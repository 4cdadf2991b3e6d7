"""The `ptc` command line (`python -m ptc run PROGRAM --data JSON`; ARCHITECTURE "cli.py")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ptc
import pytest

ROOT = Path(__file__).parents[1]


def _ptc(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ptc", *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.timeout(90)
def test_run_example_with_data() -> None:
    """`ptc run examples/orders.clj --data examples/orders.json` prints the program's println
    line, then the result in Clojure syntax, and exits 0."""
    proc = _ptc("run", "examples/orders.clj", "--data", "examples/orders.json")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (
        "shipped orders: 4\n"
        '[{:region "east", :revenue 310.0} {:region "north", :revenue 162.75}'
        ' {:region "south", :revenue 64.0}]\n'
    )


@pytest.mark.timeout(90)
def test_example_result_matches_the_data() -> None:
    """`--json` prints one JSON document: the revenue per region is what the data says."""
    orders = json.loads((ROOT / "examples" / "orders.json").read_text(encoding="utf-8"))["orders"]
    revenue: dict[str, float] = {}
    for o in orders:
        if o["status"] == "shipped":
            revenue[o["region"]] = revenue.get(o["region"], 0) + o["total"]
    proc = _ptc("run", "examples/orders.clj", "--data", "examples/orders.json", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["ok"], doc["printed"], doc["error"]) == (True, ["shipped orders: 4"], None)
    assert {row["region"]: row["revenue"] for row in doc["value"]} == revenue


@pytest.mark.timeout(90)
def test_program_error_exits_1_with_error_on_stderr(tmp_path: Path) -> None:
    """LANGUAGE.md §10.1: a program error exits 1 and shows `Error [type]: <message>` on
    stderr."""
    program = tmp_path / "bad.clj"
    program.write_text('(println "start")\n(+ 1 (undefined-thing))\n', encoding="utf-8")
    proc = _ptc("run", str(program))
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error [undefined_variable]: undefined-thing is not defined")
    assert proc.stdout == "start\n"


@pytest.mark.timeout(90)
def test_program_from_stdin() -> None:
    """`ptc run -` reads the program from standard input."""
    proc = _ptc("run", "-", stdin="(+ 1 2)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "3\n"


# ---- issue 11: eval, --version, tools, limits, exit codes, JSON, no tracebacks ----


def test_version() -> None:
    import ptc

    proc = _ptc("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"ptc {ptc.__version__}"


def test_eval_an_expression() -> None:
    proc = _ptc("eval", '(str "a" (+ 1 2))')
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, '"a3"\n', "")


def test_exit_codes_for_error_and_fail() -> None:
    err = _ptc("eval", '(+ 1 "a")')
    assert err.returncode == 1 and err.stdout == "" and "Traceback" not in err.stderr
    assert err.stderr.startswith("Error [type_error]: ")
    failed = _ptc("eval", '(fail "nope")')
    assert (failed.returncode, failed.stdout) == (2, 'failed: "nope"\n')


def test_tools_and_limits_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "cli_tools.py").write_text("def double(x: int) -> int:\n    return 2 * x\n")
    proc = subprocess.run(
        [sys.executable, "-m", "ptc", "eval", "(tool/double 21)", "--tool", "cli_tools:double"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, "PYTHONPATH": str(tmp_path)},
    )
    assert (proc.returncode, proc.stdout) == (0, "42\n"), proc.stderr
    loop = "(loop [i 0] (if (< i 1000) (recur (inc i)) i))"
    assert _ptc("eval", loop).stdout == "1000\n"
    limited = _ptc("eval", loop, "--limit", "loop_limit=100")
    assert limited.returncode == 1
    assert "loop iteration limit of 100 exceeded" in limited.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["eval", "1", "--limit", "speed=3"], "no limit 'speed'; limits: fuel, timeout_ms"),
        (["eval", "1", "--limit", "timeout_ms=fast"], "'fast' is not a whole number"),
        (["eval", "1", "--tool", "nomodule_xyz:f"], "cannot import 'nomodule_xyz'"),
        (["eval", "1", "--tool", "json"], "expected MODULE:FUNCTION"),
        (["eval", "1", "--tool", "json:nothing_here"], "json has no 'nothing_here'"),
        (["frobnicate"], "invalid choice"),
        (["run", "-", "--data", "-"], "cannot both be read from stdin"),
    ],
)
def test_usage_mistakes_exit_64_without_a_traceback(args: list[str], message: str) -> None:
    proc = _ptc(*args)
    assert proc.returncode == 64, proc.stderr
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_input_problems_exit_65_or_66_without_a_traceback(tmp_path: Path) -> None:
    missing = _ptc("run", str(tmp_path / "nope.clj"))
    assert missing.returncode == 66 and "nope.clj: no such file" in missing.stderr
    directory = _ptc("run", str(tmp_path))
    assert directory.returncode == 66 and "is a directory" in directory.stderr
    latin1 = tmp_path / "latin1.clj"
    latin1.write_bytes(b'(str "caf\xe9")')
    bad_text = _ptc("run", str(latin1))
    assert bad_text.returncode == 65
    assert "not UTF-8 text (byte 0xe9 at offset 9)" in bad_text.stderr
    data = tmp_path / "d.json"
    data.write_text('{"n": 123456789012345678901234567890}')
    big = _ptc("eval", "data/n", "--data", str(data))
    assert big.returncode == 65 and "does not fit in 64 bits" in big.stderr
    for proc in (missing, directory, bad_text, big):
        assert "Traceback" not in proc.stderr and proc.stdout == ""


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("{:a 1 :b [1 2]}", {"a": 1, "b": [1, 2]}),
        ('{1 "one" [1 2] "pair"}', {"1": "one", "[1 2]": "pair"}),
        ("#{3}", [3]),
        ("[(/ 0.0 0.0) (/ 1.0 0.0) (/ -1.0 0.0)]", ["##NaN", "##Inf", "##-Inf"]),
        ("9223372036854775807", 9223372036854775807),
        ("nil", None),
        ('{"k" :v}', {"k": "v"}),
    ],
)
def test_json_output_is_always_valid_json(expr: str, expected: object) -> None:
    proc = _ptc("eval", expr, "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"ok": True, "value": expected, "printed": [], "error": None}


HINT = "print it without --json, or give the map's keys one type (all strings, or all keywords)"
JSON_HINT = f"Hint: {HINT}\n"


def json_error(message: str, printed: list[str] | None = None) -> dict[str, object]:
    """The document ``--json`` prints for a value it cannot write as JSON."""
    error = {"type": "json_error", "message": message, "hint": HINT, "line": None}
    error.update({"column": None, "limit": None, "value": None})
    return {"ok": False, "value": None, "printed": printed or [], "error": error}


@pytest.mark.parametrize(
    ("expr", "first", "second", "key", "where"),
    [
        ('{1 :a "1" :b}', "1", '"1"', '"1"', ""),
        ('{nil 1 "nil" 2}', "nil", '"nil"', '"nil"', ""),
        ('{[1 2] :a "[1 2]" :b}', "[1 2]", '"[1 2]"', '"[1 2]"', ""),
        ('{"true" 1 true 2}', '"true"', "true", '"true"', ""),
        ('{1.5 1 "1.5" 2}', "1.5", '"1.5"', '"1.5"', ""),
        ('{:a [0 {2 :x "2" :y}]}', "2", '"2"', '"2"', ' at ["a", 1]'),
        ('[{:k {"é" {nil 1 "nil" 2}}}]', "nil", '"nil"', '"nil"', ' at [0, "k", "é"]'),
    ],
)
def test_json_output_refuses_keys_that_would_merge(
    expr: str, first: str, second: str, key: str, where: str
) -> None:
    """``{1 :a "1" :b}`` printed ``{"1": "b"}``: the entry of 1 silently gone (second red-team
    batch of issue 29). Now exit 1, no value, and an error naming both keys."""
    proc = _ptc("eval", expr, "--json")
    message = (
        f"--json cannot print the value: the map{where} has the keys {first} and"
        f" {second}, which are both the JSON key {key} (one entry would be lost)"
    )
    assert (proc.returncode, json.loads(proc.stdout)) == (1, json_error(message))
    assert proc.stderr == f"Error [json_error]: {message}\n{JSON_HINT}"


def test_json_output_refusal_keeps_what_the_program_printed() -> None:
    proc = _ptc("eval", '(println "before") {1 2 "1" 3}', "--json")
    message = (
        '--json cannot print the value: the map has the keys 1 and "1", which are both the JSON'
        ' key "1" (one entry would be lost)'
    )
    assert (proc.returncode, json.loads(proc.stdout)) == (1, json_error(message, ["before"]))


def test_json_output_shows_long_keys_cut() -> None:
    proc = _ptc("eval", "(let [v (vec (range 100))] {v 1 (str v) 2})", "--json")
    vector = " ".join(str(i) for i in range(100))
    shown = f"[{vector}]"[:57] + "..."
    quoted = f'"[{vector}]'[:57] + "..."
    message = (
        f"--json cannot print the value: the map has the keys {shown} and {quoted},"
        f" which are both the JSON key {quoted} (one entry would be lost)"
    )
    assert (proc.returncode, json.loads(proc.stdout)) == (1, json_error(message))
    assert proc.stderr == f"Error [json_error]: {message}\n{JSON_HINT}"


def test_json_output_of_the_deepest_value_a_run_returns() -> None:
    """899 nested vectors (a run refuses 900): json_safe walked them by recursion and ended in
    a RecursionError traceback."""
    proc = _ptc("eval", "(loop [v 1 i 0] (if (< i 899) (recur [v] (inc i)) v))", "--json")
    assert proc.returncode == 0, proc.stderr[-300:]
    value = "[" * 899 + "1" + "]" * 899
    assert proc.stdout == f'{{"ok": true, "value": {value}, "printed": [], "error": null}}\n'


def test_the_demo_shows_each_turn_the_savings_and_the_trace_page(tmp_path: Path) -> None:
    """README command 1: the recorded-replies demo, end to end in a fresh process."""
    proc = _ptc("demo", "--out", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "model: recorded replies (replayed; no model is called)" in out
    assert [f"── turn {n} " in out for n in range(1, 7)] == [True] * 6
    assert "sum is not defined" in out and "(reduce + coll)" in out  # the mistake and its hint
    assert 'tool:    restock("kettle" "south" 50)' in out
    assert "call  compressed  full history   saved" in out
    assert 'result: ok -> {:region "south"' in out
    page, saved = tmp_path / "ptc-demo-trace.html", tmp_path / "ptc-demo-step.json"
    assert out.endswith(
        f"trace page: {page}\nstep:       {saved} (ptc trace {saved} prints every turn)\n"
    )
    assert page.read_text().startswith("<!doctype html>")
    assert ptc.Step.from_dict(json.loads(saved.read_text())).ok


def test_the_demo_refuses_an_unknown_provider() -> None:
    proc = _ptc("demo", "--model", "acme:big")
    assert (proc.returncode, proc.stdout) == (64, "")
    assert proc.stderr == (
        "ptc: --model 'acme:big': expected openai:MODEL_NAME (e.g. openai:gpt-4.1-mini)\n"
    )
