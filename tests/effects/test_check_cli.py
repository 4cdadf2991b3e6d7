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
        "plan": {
            "tools": ["refund"],
            "writes": [],
            "any_tool": False,
            "calls": [
                {
                    "tool": "refund",
                    "args": [],
                    "line": 1,
                    "column": 1,
                    "conditional": False,
                    "bound": 1,
                    "via": None,
                }
            ],
        },
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


WRITE_TOOLS = '''
import ptc

def get_order(id: int) -> dict:
    """An order."""
    open("ran.txt", "w").write("a tool ran")
    return {"id": id}

@ptc.tool(effect="write")
def refund(order_id: int, reason: str) -> str:
    """Refund an order."""
    open("ran.txt", "w").write("a tool ran")
    return "ok"

def _helper() -> None:
    """Private: not a tool."""
'''


def test_tools_module_and_plan(tmp_path: Path) -> None:
    """``--tools MODULE`` offers the module's public functions and ptc.Tools; ``--plan`` prints
    what the program can call, and nothing runs."""
    (tmp_path / "shop.py").write_text(WRITE_TOOLS)
    (tmp_path / "p.clj").write_text(
        "(doseq [id [1 2 3]]\n"
        "  (let [o (tool/get-order id)]\n"
        '    (when (:late o) (tool/refund {:order-id id :reason "late"}))))\n'
    )
    done = ptc("check", "p.clj", "--tools", "shop", "--plan", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "May call 2 tools: `get-order`, `refund`; writes: `refund`.",
        "- `get-order` up to 3 times, unconditionally, at line 2, column 11, with ?",
        "- `refund` (write) up to 3 times, if reached, at line 3, column 21,"
        ' with {:order-id ?, :reason "late"}',
    ]
    assert not (tmp_path / "ran.txt").exists()
    (tmp_path / "q.clj").write_text("(tool/_helper)")
    done = ptc("check", "q.clj", "--tools", "shop", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("q.clj:1:1: unknown_tool: Unknown tool: _helper.")


def test_tools_module_that_cannot_be_imported_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "p.clj").write_text("(+ 1 2)")
    done = ptc("check", "p.clj", "--tools", "nosuch_module_x", cwd=tmp_path)
    assert done.returncode == 64
    assert done.stderr.startswith("ptc: --tools 'nosuch_module_x': cannot import it:")
