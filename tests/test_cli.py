"""The `ptc` command line (`python -m ptc run PROGRAM --data JSON`; ARCHITECTURE "cli.py")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
    """`--json` prints the result as JSON: the revenue per region is what the data says."""
    orders = json.loads((ROOT / "examples" / "orders.json").read_text(encoding="utf-8"))["orders"]
    revenue: dict[str, float] = {}
    for o in orders:
        if o["status"] == "shipped":
            revenue[o["region"]] = revenue.get(o["region"], 0) + o["total"]
    proc = _ptc("run", "examples/orders.clj", "--data", "examples/orders.json", "--json")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "shipped orders: 4"
    assert {row["region"]: row["revenue"] for row in json.loads(lines[1])} == revenue


@pytest.mark.timeout(90)
def test_program_error_exits_1_with_error_on_stderr(tmp_path: Path) -> None:
    """LANGUAGE.md §10.1: a program error exits 1 and shows `Error: <message>` on stderr."""
    program = tmp_path / "bad.clj"
    program.write_text('(println "start")\n(+ 1 (undefined-thing))\n', encoding="utf-8")
    proc = _ptc("run", str(program))
    assert proc.returncode == 1
    assert proc.stderr.startswith("Error:")
    assert "undefined-thing" in proc.stderr
    assert proc.stdout == "start\n"


@pytest.mark.timeout(90)
def test_program_from_stdin() -> None:
    """`ptc run -` reads the program from standard input."""
    proc = _ptc("run", "-", stdin="(+ 1 2)")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "3\n"
