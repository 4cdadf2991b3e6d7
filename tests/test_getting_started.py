"""docs/GETTING_STARTED.md: the guide's Python blocks run, in order, in one new Python process as a
user runs them (`import ptc` and nothing else imported before: issue 30 found `ptc.llm` failing
there while it passed inside pytest, which had imported it), against a loopback server that
speaks the OpenAI wire format (the guide's local base_url is pointed at it); the replies a model
would give are scripted per block. The install line says how to install from a clone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent / "adapters"))
from wire import Error, OpenAIServer, serve

ROOT = Path(__file__).parent.parent
GUIDE = ROOT / "docs" / "GETTING_STARTED.md"
GUIDE_URL = "http://localhost:11434/v1"
MARK = "--- guide block {} ---"


def clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


# what the model answers in each block (blocks without a model call have none)
REPLIES: list[list[str | Error]] = [
    [],
    [
        clj('(def pending (filter #(= (:status %) "pending") data/orders))\n(count pending)'),
        clj(
            '(doseq [o pending] (tool/refund (:id o) "pending too long"))\n(return (count pending))'
        ),
    ],
    [
        # the first request fails with an error the retry policy does not retry: the run ends
        # with llm_error, and the guide's condition resumes it
        Error(400, {"error": {"message": "try again later", "type": "invalid_request_error"}}),
        clj(
            "(->> data/orders (group-by :customer)"
            " (map (fn [[c os]] [c (reduce + (map :total os))]))"
            " (sort-by second >) first first (return))"
        ),
    ],
    [clj("(return (count data/orders))")],
]


def blocks() -> list[tuple[str, list[str]]]:
    """The guide's Python blocks, each with the comments that state its printed output."""
    out = []
    for code in re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S):
        out.append((code, re.findall(r"print\(.*?\)\s+# (.+)$", code, re.M)))
    return out


def test_the_guide_has_the_blocks_this_test_scripts() -> None:
    assert len(blocks()) == len(REPLIES)


def test_every_block_runs_in_a_new_process_and_prints_what_it_says(tmp_path: Path) -> None:
    gen = serve(OpenAIServer)
    server = next(gen)
    try:
        server.script = [reply for replies in REPLIES for reply in replies]
        script = "".join(
            f"print({MARK.format(i)!r})\n" + code.replace(GUIDE_URL, server.url + "/v1")
            for i, (code, _) in enumerate(blocks())
        )
        (tmp_path / "guide.py").write_text(script, encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "PYTHONPATH")}
        # the guide writes runs.jsonl in the working directory
        proc = subprocess.run(
            [sys.executable, "guide.py"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert server.script == [], "the guide made fewer model calls than scripted"
        assert len(server.received) == sum(len(r) for r in REPLIES)
    finally:
        gen.close()
    assert proc.stderr == ""
    printed = re.split(r"^--- guide block \d+ ---\n", proc.stdout, flags=re.M)
    assert printed[0] == "" and len(printed) == len(REPLIES) + 1
    for (_, expected), out in zip(blocks(), printed[1:], strict=True):
        lines = out.splitlines()
        for want in expected:
            # "# turns taken, ..." comments describe, the others state the exact output
            if re.fullmatch(r"[\w .\-]+", want) and "," not in want:
                assert want in lines, (want, lines)
    # block 3: the first run stopped at the model error, was resumed, and answered
    assert printed[3].splitlines() == ['turn 1 "ada"', "ada", "ada"]
    assert (tmp_path / "runs.jsonl").exists()


def test_the_install_lines_name_the_wheel_first_and_the_clone_second() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    install = re.search(r"```bash\n(.*?)```", text, re.S)
    assert install is not None
    lines = [line.split("#")[0].strip() for line in install.group(1).splitlines()]
    assert lines == ["pip install 'ptc-runtime[openai]'", "pip install '.[openai]'"]
    # the extra the line names is the project's
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "ptc-runtime"
    assert project["optional-dependencies"]["openai"] == ["openai>=1"]
