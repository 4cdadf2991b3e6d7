"""``ptc check FILE``: the console script checks a program without running it (issue 31)."""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path

SCRIPT = Path(sysconfig.get_path("scripts")) / "ptc"

TOOLS = '''
def refund(order_id: int) -> str:
    """Refund an order."""
    open("ran.txt", "w").write("a tool ran")
    return "ok"
'''


def ptc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.is_file(), f"no ptc console script at {SCRIPT}: install the package (pip)"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"}
    return subprocess.run(
        [str(SCRIPT), *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env
    )


def setup(tmp: Path, program: str) -> None:
    (tmp / "shop.py").write_text(TOOLS)
    (tmp / "p.clj").write_text(program)
    (tmp / "d.json").write_text('{"orders": [1]}')


def test_a_program_with_errors_exits_1_with_one_line_each_and_nothing_runs(tmp_path: Path) -> None:
    setup(tmp_path, '(tool/refnd 1)\n(tool/refund "x")\n(count data/ordrs)')
    done = ptc("check", "p.clj", "--tool", "shop:refund", "--data", "d.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "p.clj:1:1: unknown_tool: Unknown tool: refnd. Available tools: refund"
        " (hint: did you mean tool/refund?)",
        'p.clj:2:1: type_error: tool/refund argument order-id: expected :int, got string "x"'
        " (hint: its signature: (order-id :int))",
    ]
    assert done.stderr == (
        "warning: data/ordrs is nil: there is no such input; did you mean data/orders?\n"
    )
    assert not (tmp_path / "ran.txt").exists()


def test_a_program_that_can_run_exits_0_silently(tmp_path: Path) -> None:
    setup(tmp_path, "(tool/refund (first data/orders))")
    done = ptc("check", "p.clj", "--tool", "shop:refund", "--data", "d.json", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (tmp_path / "ran.txt").exists()


def test_json_is_one_document(tmp_path: Path) -> None:
    setup(tmp_path, "(tool/refund)")
    done = ptc("check", "p.clj", "--tool", "shop:refund", "--json", cwd=tmp_path)
    assert done.returncode == 1
    assert json.loads(done.stdout) == {
        "ok": False,
        "errors": [
            {
                "type": "arity_error",
                "message": "tool/refund takes 1 argument, got 0",
                "hint": "its signature: (order-id :int)",
                "line": 1,
                "column": 1,
            }
        ],
        "warnings": [],
    }


def test_a_parse_error_is_reported_as_one_line(tmp_path: Path) -> None:
    setup(tmp_path, "(tool/refund 1")
    done = ptc("check", "p.clj", cwd=tmp_path)
    assert done.returncode == 1
    assert len(done.stdout.splitlines()) == 1
    assert done.stdout.startswith("p.clj:1:1: parse_error: unbalanced brackets")


def test_a_missing_file_is_a_usage_mistake(tmp_path: Path) -> None:
    done = ptc("check", "nope.clj", cwd=tmp_path)
    assert done.returncode == 66 and done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
