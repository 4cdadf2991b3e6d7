"""Edges of the Python API a user meets early: file paths for JSON, star imports, cyclic and
shared data, dates, surrogates, what `import ptc` loads, and docs free of one machine's paths."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import ptc
import pytest


def test_from_json_never_reads_a_file_named_by_a_str(tmp_path: Path) -> None:
    """A str is JSON text only: text a host received (a request body, an LLM's reply) must not
    be able to name a file whose contents the program then reads."""
    path = tmp_path / "secret.json"
    path.write_text(json.dumps({"api_key": "sk-secret"}))
    with pytest.raises(ValueError) as e:
        ptc.Session.from_json(str(path))
    assert str(e.value) == (
        "invalid JSON data at data: expected value (line 1, column 1) (a str is JSON text; "
        "to read a file, pass a pathlib.Path or use Session.from_file)"
    )
    # the same text relative to the working directory is not read either
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(ValueError, match="a str is JSON text"):
            ptc.Session.from_json("secret.json")
    finally:
        os.chdir(cwd)
    # a path object, or from_file with a str, reads the file
    assert ptc.Session.from_json(path).run("data/api_key").value == "sk-secret"
    assert ptc.Session.from_file(str(path)).run("data/api_key").value == "sk-secret"
    assert ptc.Session.from_file(path).run("data/api_key").value == "sk-secret"
    with pytest.raises(FileNotFoundError):
        ptc.Session.from_file(str(tmp_path / "missing.json"))
    with pytest.raises(TypeError, match="path must be a str or a path object, got int"):
        ptc.Session.from_file(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got list"):
        ptc.Session.from_json([])  # type: ignore[arg-type]
    # JSON text is JSON text; its own errors are not given the file hint
    assert ptc.Session.from_json('{"a": 1}').run("data/a").value == 1
    with pytest.raises(ValueError) as e:
        ptc.Session.from_json('{"a": ')
    assert "pathlib" not in str(e.value)


def test_star_import_does_not_replace_builtin_eval() -> None:
    namespace: dict[str, Any] = {}
    exec("from ptc import *", namespace)
    assert "eval" not in namespace
    assert "run" in namespace and "Session" in namespace
    assert ptc.eval("(+ 1 2)") == 3  # still there as ptc.eval


@pytest.mark.parametrize("kind", ["list", "dict"])
def test_cyclic_data_says_cycle_where_it_closes(kind: str) -> None:
    x: Any
    if kind == "list":
        x = [1]
        x.append([x])
        where, what = "data.x[1][0]", "this list contains itself"
    else:
        x = {"a": {}}
        x["a"]["b"] = x
        where, what = "data.x.a.b", "this dict contains itself"
    with pytest.raises(TypeError) as exc:
        ptc.Session(data={"x": x})
    assert str(exc.value).startswith(f"{where}: {what} (a cycle)")
    assert len(str(exc.value)) < 200


def test_shared_but_acyclic_data_is_fine() -> None:
    shared = {"k": 1}
    s = ptc.Session(data={"x": [shared, shared, {"inner": shared}]})
    assert s.run("(count data/x)").value == 3


def test_to_clojure_prints_dates_as_the_core_does() -> None:
    assert ptc.to_clojure(dt.date(2024, 1, 5)) == ('"2024-01-05"', False)
    utc = dt.datetime(2024, 1, 5, 10, 30, tzinfo=dt.UTC)
    assert ptc.to_clojure({"at": utc}) == ('{:at "2024-01-05T10:30:00Z"}', False)
    assert ptc.type_label(dt.date(2024, 1, 5)) == "date"
    assert ptc.type_label(utc) == "datetime"


def test_a_lone_surrogate_in_a_program_is_a_clear_value_error() -> None:
    program = '(def a 1)\n(str "x\ud800")'
    with pytest.raises(ValueError, match=r"lone surrogate\) at line 2, column 8"):
        ptc.run(program)
    s = ptc.Session()
    with pytest.raises(ValueError, match="not valid Unicode text"):
        s.run(program)
    import asyncio

    with pytest.raises(ValueError, match="not valid Unicode text"):
        asyncio.run(s.arun(program))


def test_import_ptc_leaves_the_heavy_modules_unloaded() -> None:
    """`import ptc` stays cheap: the Session layer (dataclasses, inspect), typing, the agent
    layer, history (sqlite3) and asyncio load on first use."""
    # Compared with what the interpreter loaded before `import ptc`: a `.pth` file of another
    # installed package may import `typing` at start-up, which is not ours to count.
    code = (
        "import sys; before = set(sys.modules); import ptc; "
        "print(sorted(m for m in ('asyncio', 'sqlite3', 'concurrent.futures', 'ptc.agent',"
        " 'ptc.history', 'typing', 'dataclasses', 'inspect', 'ptc.session',"
        " 'ptc.limits') if m in sys.modules and m not in before))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    # and the lazy names still work
    assert ptc.SubAgent.__name__ == "SubAgent" and ptc.Step.__name__ == "Step"
    assert ptc.run("(+ 1 2)").value == 3 and ptc.Session.__name__ == "Session"
    assert ptc.Limits().timeout_ms > 0 and callable(ptc.eval)
    assert ptc.history.LoopSlices is not None
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        ptc.Nope  # noqa: B018


def test_docs_name_no_path_of_one_machine() -> None:
    """Commands in the docs run from the repository root on any machine: no absolute paths
    of a developer's checkout or virtual environment."""
    root = Path(__file__).parent.parent
    pattern = re.compile(r"(?<![\w.])/(?:work|home|Users|tmp/ci)/[\w.-]+")
    found = []
    for doc in [
        root / "README.md",
        root / "CONTRIBUTING.md",
        *sorted((root / "docs").glob("*.md")),
    ]:
        if doc.name == "PROGRESS.md":  # the team's notes, not instructions
            continue
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            found += [f"{doc.name}:{n}: {m.group()}" for m in pattern.finditer(line)]
    assert found == []
