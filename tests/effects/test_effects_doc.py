"""docs/EFFECTS.md's Python blocks run in a fresh interpreter, in order, as a user runs them;
each `print(...)  # text` line must print `text`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "EFFECTS.md"


def test_the_effects_guide_runs_as_written(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 2
    source = "\n".join(blocks)
    expected = [m.group(1).strip() for m in re.finditer(r"^print\(.*\)\s+# (.*)$", source, re.M)]
    script = tmp_path / "effects_guide.py"
    script.write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == expected
