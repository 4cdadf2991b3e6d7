"""`ptc repl` under a real pseudo-terminal: definitions persist, *1 *2 *3, multi-line input
with balanced-bracket continuation, :help, :data, :defs, errors with hints (issue 11)."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from ptc.repl import depth


class Terminal:
    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ptc", "repl", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            close_fds=True,
            env={**os.environ, "TERM": "dumb"},
        )
        os.close(slave)
        self.seen = ""

    def read_until(self, marker: str, timeout: float = 30.0) -> str:
        """Everything printed up to and including ``marker`` (after what was read before)."""
        deadline = time.monotonic() + timeout
        while marker not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"timed out waiting for {marker!r}; got {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096).decode("utf-8", "replace")
                except OSError:
                    break
                self.seen += chunk.replace("\r\n", "\n")
        head, _, self.seen = self.seen.partition(marker)
        return head + marker

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self) -> int:
        try:
            return self.proc.wait(timeout=30)
        finally:
            os.close(self.master)


def test_a_session_at_the_terminal(tmp_path: Path) -> None:
    data = tmp_path / "d.json"
    data.write_text(json.dumps({"orders": [{"id": 1, "total": 50}, {"id": 2, "total": 150}]}))
    t = Terminal("--data", str(data))
    t.read_until("ptc> ")
    t.send("(def big (filter #(> (:total %) 100)")
    t.read_until("...> ")  # the expression is not closed yet: it continues
    t.send("                 data/orders))")
    t.read_until("ptc> ")
    t.send("(count big)")
    assert "=> 1" in t.read_until("ptc> ")
    t.send("(+ *1 41)")
    assert "=> 42" in t.read_until("ptc> ")
    t.send("[*1 *2]")
    assert "=> [42 1]" in t.read_until("ptc> ")
    t.send('(println "hi" (map :id big))')
    out = t.read_until("ptc> ")
    assert "hi [2]" in out and "=> nil" in out
    t.send("(sum [1 2])")
    out = t.read_until("ptc> ")
    assert "sum is not defined" in out and "(reduce + coll)" in out
    t.send(":defs")
    assert "big  ; list[1]" in t.read_until("ptc> ")
    t.send(":data")
    assert "data/orders  ; list[2], sample: {:id 1, :total 50}" in t.read_until("ptc> ")
    t.send(":help")
    assert "*1 *2 *3" in t.read_until("ptc> ")
    t.send(":nope")
    assert "unknown command :nope" in t.read_until("ptc> ")
    t.send(":quit")
    assert t.close() == 0


def test_ctrl_d_leaves() -> None:
    t = Terminal()
    t.read_until("ptc> ")
    os.write(t.master, b"\x04")
    assert t.close() == 0


def test_bracket_depth_ignores_strings_and_comments() -> None:
    assert depth("(def a") == 1
    assert depth('(str "(((" )') == 0
    assert depth("(+ 1 ; (((\n 2)") == 0
    assert depth('(str "a\\"(")') == 0
    assert depth('(str "unfinished') == 2  # the open string continues too
    assert depth("[{:a (") == 3 and depth(")") == -1
