"""Red team, trace files: a hostile step.json given to ``ptc trace`` and ``Step.to_html``,
aimed where the first batch did not: markup in map keys and tagged values rather than in
strings, steps whose size is in their lists (memory entries, data entries, message lists),
numbers no duration or count can be, files that are not a step at all, and control characters
in every field of the text view."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from . import case

MARKUP = "<img src=x onerror=alert(1)><script>alert(2)</script>"


def _clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


def _trace(*argv: str) -> tuple[int, str, str]:
    from ptc.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", *argv])
    return code, out.getvalue(), err.getvalue()


def _step(compression: bool = True) -> dict[str, Any]:
    import ptc
    from ptc.llm import ScriptedLLM

    def stock(sku: str) -> int:
        """Stock for a sku."""
        return 3

    replies = [_clj('(def a (tool/stock "x"))'), _clj("(def b 2)"), _clj("(return a)")]
    step = ptc.SubAgent(
        "Check the stock",
        llm=ScriptedLLM(replies),
        tools=[stock],
        data={"orders": [1, 2]},
        compression=compression,
    ).run()
    return step.to_dict()


class _Tags(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.handlers: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers += [k for k, _ in attrs if k.startswith("on")]


def _inert(page: str) -> None:
    tags = _Tags(page)
    assert "img" not in tags.tags and tags.handlers == [], (tags.handlers, "img" in tags.tags)
    assert tags.tags.count("script") == 2 and tags.tags.count("style") == 1


@case(seconds=60, memory_mb=400)
def case_markup_in_keys_and_tagged_values_is_text(tmp: Path) -> None:
    """Markup as a map key of the value, as a keyword in a $map key, as a $repr, as a set
    member, as a turn's usage key, a compression option's name, a data entry's name and a
    memory entry's name: the page holds it as text only."""
    d = _step()
    d["value"] = {
        MARKUP: 1,
        "$map": [[{"$kw": MARKUP}, {"$repr": MARKUP}]],
        "set": {"$set": [MARKUP, {"$kw": MARKUP}]},
    }
    d["turns"][0]["usage"] = {MARKUP: 5}
    d["context"]["compression_opts"] = {**d["context"]["compression_opts"], MARKUP: 1}
    d["context"]["data"][0]["name"] = MARKUP
    d["turns"][1]["memory"][0]["name"] = MARKUP
    saved = tmp / "step.json"
    saved.write_text(json.dumps(d))
    code, _, err = _trace(str(saved), "--html", str(tmp / "page.html"))
    assert (code, err) == (0, ""), err
    page = (tmp / "page.html").read_text()
    _inert(page)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page


@case(seconds=90, memory_mb=700)
def case_steps_large_in_their_lists_give_small_pages(tmp: Path) -> None:
    """50,000 memory entries in every turn, 100,000 data entries, or 1,000,000 empty message
    lists (a 4-17 MB step each): the page stays small and is written in seconds."""
    base = _step()
    variants: dict[str, dict[str, Any]] = {}
    d = copy.deepcopy(base)
    for t in d["turns"]:
        t["memory"] = [
            {"name": f"n{i}", "kind": "value", "type": "int", "sample": "x" * 50}
            for i in range(50_000)
        ]
    variants["memory"] = d
    d = copy.deepcopy(base)
    d["context"]["data"] = [
        {"name": f"k{i}", "type": "int", "sample": "y" * 100} for i in range(100_000)
    ]
    variants["data"] = d
    d = copy.deepcopy(base)
    d["messages"] = [[]] * 1_000_000
    d["calls"] = 1_000_000
    variants["messages"] = d
    for name, d in variants.items():
        saved = tmp / f"{name}.json"
        saved.write_text(json.dumps(d))
        started = time.monotonic()
        code, _, err = _trace(str(saved), "--html", str(tmp / f"{name}.html"))
        took = time.monotonic() - started
        assert (code, err) == (0, ""), (name, err)
        size = (tmp / f"{name}.html").stat().st_size
        assert size < 1_000_000, (name, size)
        assert took < 15, (name, took)


@case(seconds=30, memory_mb=300)
def case_numbers_no_duration_or_count_can_be_are_refused(tmp: Path) -> None:
    """A negative or NaN duration, a count that is a float or a bool, a turn number of 0: one
    line naming the field, exit 65."""
    base = _step()
    edits: list[tuple[str, Any, str]] = [
        ("duration_ms", -1, "step.duration_ms"),
        ("llm_ms", float("nan"), "step.turns[0].llm_ms"),
        ("input_tokens", 1e300, "step.usage.input_tokens"),
        ("output_tokens", True, "step.usage.output_tokens"),
        ("number", 0, "step.turns[0].number"),
    ]
    for key, value, field in edits:
        d = copy.deepcopy(base)
        if key == "duration_ms":
            d[key] = value
        elif key in ("llm_ms", "number"):
            d["turns"][0][key] = value
        else:
            d["usage"][key] = value
        saved = tmp / f"{key}.json"
        saved.write_text(json.dumps(d))  # NaN is written as NaN, which json.loads reads
        code, out, err = _trace(str(saved))
        assert code == 65 and out == "" and err.count("\n") == 1, (key, code, err)
        assert err.startswith(f"ptc: step {saved}: not a saved Step ({field}"), (key, err)


@case(seconds=30, memory_mb=300)
def case_files_that_are_not_a_step_at_all(tmp: Path) -> None:
    """A directory (66), bytes that are not UTF-8, an empty file, JSON null, a million opening
    brackets (65): one line on stderr, nothing on stdout, no page written."""
    (tmp / "dir.json").mkdir()
    files = {
        "latin1.json": b'{"mission": "caf\xe9"}',
        "empty.json": b"",
        "null.json": b"null",
        "open.json": b"[" * 1_000_000,
    }
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    for name, want in [("dir.json", 66)] + [(n, 65) for n in files]:
        for html in ([], ["--html", str(tmp / "out.html")]):
            code, out, err = _trace(str(tmp / name), *html)
            assert (code, out) == (want, ""), (name, code, out, err)
            assert err.startswith(f"ptc: step {tmp / name}: ") and err.count("\n") == 1, err
    assert not (tmp / "out.html").exists()


@case(seconds=30, memory_mb=300)
def case_control_characters_in_every_field_of_the_text_view(tmp: Path) -> None:
    """Escape sequences in a program, a reply, a print, a tool's name and arguments, an error
    and the value: the text view prints none of them raw."""
    d = _step(compression=False)
    esc = "\x1b[2J\x1b]0;owned\x07\x9b31m\r"
    d["turns"][0]["program"] = esc + d["turns"][0]["program"]
    d["turns"][0]["prints"] = [esc]
    d["turns"][0]["tool_calls"][0]["name"] = esc
    d["turns"][0]["tool_calls"][0]["args_text"] = esc
    d["turns"][1]["response"] = esc
    d["turns"][1]["program"] = None
    d["turns"][1]["success"] = False
    d["turns"][1]["error"] = {"type": esc, "message": esc, "hint": esc}
    d["value"] = esc
    saved = tmp / "step.json"
    saved.write_text(json.dumps(d))
    code, out, err = _trace(str(saved))
    assert (code, err) == (0, ""), err
    raw = sorted(
        {hex(ord(c)) for c in out if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) < 0xA0}
    )
    assert raw == [], raw
    assert out.count("\\x1b[2J") >= 6, out


@case(seconds=30, memory_mb=300)
def case_odd_values_of_a_step_render(tmp: Path) -> None:
    """A value 950 lists deep, a set of lists, NaN and infinity as tagged floats, a map keyed
    by lists: the page is written (the value shown as far as its preview goes)."""
    base = _step()
    deep: Any = 1
    for _ in range(950):
        deep = [deep]
    for i, value in enumerate(
        [
            deep,
            {"$set": [[1], [1, 2], {"$float": "nan"}]},
            [{"$float": "inf"}, {"$float": "-inf"}, {"$float": "nan"}],
            {"$map": [[[1, 2], "a"], [[{"$kw": "k"}], "b"]]},
        ]
    ):
        d = copy.deepcopy(base)
        d["value"] = value
        saved = tmp / f"v{i}.json"
        saved.write_text(json.dumps(d))
        code, _, err = _trace(str(saved), "--html", str(tmp / f"v{i}.html"))
        assert (code, err) == (0, ""), (i, err)
        assert '<div class="label">Value</div>' in (tmp / f"v{i}.html").read_text()
