"""The release workflow cannot run here (issue 35): what can be checked without GitHub is
checked — it parses, builds every platform and Python the issue names without the test hooks,
tests each wheel before publishing, and its shell steps are valid bash."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return loaded


def maturin_args(job: dict[str, Any]) -> list[str]:
    return [
        step["with"].get("args", "")
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("PyO3/maturin-action")
    ]


def test_every_platform_and_python_is_built(workflow: dict[str, Any]) -> None:
    jobs = workflow["jobs"]
    assert workflow["env"]["PYTHONS"].split() == ["3.11", "3.12", "3.13", "3.14"]
    linux = {(m["target"], m["manylinux"]) for m in jobs["linux"]["strategy"]["matrix"]["include"]}
    assert linux == {
        ("x86_64", "2_17"),
        ("aarch64", "2_17"),
        ("x86_64", "musllinux_1_2"),
        ("aarch64", "musllinux_1_2"),
    }
    assert {m["target"] for m in jobs["macos"]["strategy"]["matrix"]["include"]} == {
        "x86_64",
        "aarch64",
    }
    assert jobs["windows"]["steps"][2]["with"]["target"] == "x64"
    for name in ("linux", "macos", "windows"):
        (args,) = maturin_args(jobs[name])
        # release wheels: no test hooks, every supported Python
        assert "--no-default-features --features python,mimalloc" in args, name
        assert "${{ env.PYTHONS }}" in args or "3.11 3.12 3.13 3.14" in args, name
    sdist = [s["with"] for s in jobs["sdist"]["steps"] if "maturin" in str(s.get("uses"))]
    assert [w["command"] for w in sdist] == ["sdist"]


def test_nothing_is_published_before_every_wheel_is_tested(workflow: dict[str, Any]) -> None:
    jobs = workflow["jobs"]
    publish = jobs["publish"]
    assert set(publish["needs"]) == {"test", "musl-test", "sdist"}
    assert publish["if"] == "startsWith(github.ref, 'refs/tags/v')"
    assert publish["permissions"] == {"id-token": "write"}  # trusted publishing, no token
    matrix = jobs["test"]["strategy"]["matrix"]
    assert set(matrix["python"]) == {"3.11", "3.12", "3.13", "3.14"}
    assert set(matrix["runner"]) == {
        "ubuntu-24.04",
        "ubuntu-24.04-arm",
        "macos-13",
        "macos-14",
        "windows-latest",
    }
    runs = " ".join(step.get("run", "") for step in jobs["test"]["steps"])
    assert "--only-binary ptc-runtime --no-index" in runs  # the wheel, never the sdist
    assert "scripts/installed_tests.sh" in runs


def test_every_shell_step_is_valid_bash(workflow: dict[str, Any]) -> None:
    steps = [
        (name, step["run"])
        for name, job in workflow["jobs"].items()
        for step in job["steps"]
        if "run" in step
    ]
    assert len(steps) >= 6
    for name, script in steps:
        checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
        assert checked.returncode == 0, (name, checked.stderr)
