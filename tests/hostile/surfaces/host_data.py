"""Host data: what a host passes in (JSON text it received, Python objects, tool results) is
trusted in content, not in shape, and a str of JSON text never names a file."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import case


@case(seconds=30, memory_mb=300)
def case_from_json_text_that_names_a_file_reads_no_file(tmp: Path) -> None:
    import ptc

    (tmp / "secret.json").write_text(json.dumps({"api_key": "sk-secret"}))
    os.chdir(tmp)
    for text in ("secret.json", str(tmp / "secret.json"), "./secret.json"):
        try:
            s = ptc.Session.from_json(text)
        except ValueError as e:
            assert "a str is JSON text" in str(e), e
        else:
            raise AssertionError(f"{text!r} was read as a file: {s.run('data').value!r}")
