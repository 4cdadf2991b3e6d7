"""Trace files: a saved Step (a shared bug report, a checkpoint row) given to ``ptc trace`` and
``Step.to_html`` is untrusted. Its fields are text on the page, whatever they hold; a
Content-Security-Policy lets only the page's own style and script run; the page stays bounded
in size and time however large the step; and a bad file is one line and an exit code."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from . import case

PAYLOAD = (
    "<img src=x onerror=alert(1)><script>document.title='pwned'</script>"
    '<style>body{display:none}</style>" onmouseover="alert(2)'
)


def _clj(src: str) -> str:
    return f"```clojure\n{src}\n```"


def _trace(*argv: str) -> tuple[int, str, str]:
    """``ptc trace ...`` in this process: exit code, stdout, stderr."""
    from ptc.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["trace", *argv])
    return code, out.getvalue(), err.getvalue()


def _poison(node: Any) -> Any:
    if isinstance(node, str):
        return PAYLOAD + node
    if isinstance(node, list):
        return [_poison(x) for x in node]
    if isinstance(node, dict):
        return {k: v if k in ("compression", "role") else _poison(v) for k, v in node.items()}
    return node


class _Markup(HTMLParser):
    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.handlers: list[str] = []
        self.csp: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.handlers += [k for k, _ in attrs if k.startswith("on")]
        a = dict(attrs)
        if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy":
            self.csp.append(a.get("content") or "")


def _assert_inert(page: str) -> None:
    m = _Markup(page)
    assert "img" not in m.tags, "an <img> from the step is live markup"
    assert m.handlers == [], f"event handlers from the step: {m.handlers[:3]}"
    assert m.tags.count("script") == 2 and m.tags.count("style") == 1, "markup from the step"
    assert len(m.csp) == 1 and m.csp[0].startswith("default-src 'none'; script-src 'sha256-")


@case(seconds=60, memory_mb=500)
def case_every_field_of_a_hostile_step_is_text(tmp: Path) -> None:
    """Issue 29 item 2: `"error": {"type": "<img src=x onerror=alert(1)>"}` and markup in every
    other string of a step.json gave live markup through `ptc trace --html`; a usage count or a
    tool name that is markup in a Step built in Python too."""
    import ptc
    from ptc.llm import ScriptedLLM
    from ptc.step import StepError, Usage

    def stock(sku: str) -> int:
        """Stock for a sku."""
        raise KeyError(sku)

    step = ptc.SubAgent(
        prompt="Check the stock",
        llm=ScriptedLLM(
            [_clj('(println "x")\n(tool/stock "a")'), "no program", _clj("(fail :no)")]
        ),
        tools=[stock],
        data={"orders": [{"id": 1}]},
        compression=True,
    ).run()
    saved = tmp / "step.json"
    saved.write_text(json.dumps(_poison(step.to_dict())))
    code, out, err = _trace(str(saved), "--html", str(tmp / "page.html"))
    assert (code, out, err) == (0, f"{(tmp / 'page.html').resolve()}\n", ""), err
    page = (tmp / "page.html").read_text()
    _assert_inert(page)
    assert "&lt;img src=x onerror=alert(1)&gt;" in page
    call = dataclasses.replace(step.turns[0].tool_calls[0], name=PAYLOAD)
    built = dataclasses.replace(
        step,
        turns=(dataclasses.replace(step.turns[0], tool_calls=(call,)), *step.turns[1:]),
        usage=Usage(input_tokens=PAYLOAD, output_tokens=PAYLOAD),  # type: ignore[arg-type]
        error=StepError(PAYLOAD, PAYLOAD, PAYLOAD),
    )
    _assert_inert(built.to_html())


@case(seconds=25, memory_mb=900)
def case_a_20_mb_reply_gives_a_small_page_quickly(tmp: Path) -> None:
    """Issue 29 item 15: a 20 MB reply without a program took 41 s to render (the tokenizer is
    superlinear on one long word) into a 60 MB page."""
    import ptc
    from ptc.llm import ScriptedLLM

    step = ptc.SubAgent(
        prompt="Sum the numbers", llm=ScriptedLLM(["words", _clj("(return 1)")]), max_turns=3
    ).run()
    d = step.to_dict()
    d["turns"][0]["response"] = "x" * 20_000_000
    saved = tmp / "step.json"
    saved.write_text(json.dumps(d))
    started = time.monotonic()
    code, out, err = _trace(str(saved), "--html", str(tmp / "page.html"))
    took = time.monotonic() - started
    assert (code, out, err) == (0, f"{(tmp / 'page.html').resolve()}\n", ""), err
    size = (tmp / "page.html").stat().st_size
    assert size < 300_000, f"a {size:,}-byte page for one 20 MB reply"
    assert took < 10, f"{took:.1f} s to render"
    assert (
        "… 19,980,000 more characters not shown (20,000,000 in all)"
        in (tmp / "page.html").read_text()
    )


@case(seconds=30, memory_mb=900)
def case_a_20_mb_message_is_token_counted_in_bounded_time(tmp: Path) -> None:
    """Issue 29 item 15: the tokenizer is superlinear on one long word (17 s for 20 MB), and
    the page counted every message of every call: a 20 MB mission took 70 s to render."""
    import ptc
    from ptc.llm import ScriptedLLM

    step = ptc.SubAgent(
        prompt="Sum",
        llm=ScriptedLLM([_clj("(def a 1)"), _clj("(return a)")]),
        max_turns=3,
        compression=True,
    ).run()
    d = step.to_dict()
    d["context"]["mission"] = "x" * 20_000_000
    saved = tmp / "step.json"
    saved.write_text(json.dumps(d))
    started = time.monotonic()
    code, out, err = _trace(str(saved), "--html", str(tmp / "page.html"))
    took = time.monotonic() - started
    assert (code, out, err) == (0, f"{(tmp / 'page.html').resolve()}\n", ""), err
    assert took < 10, f"{took:.1f} s to render"
    assert (tmp / "page.html").stat().st_size < 200_000


@case(seconds=40, memory_mb=600)
def case_700_turns_give_a_page_linear_in_the_step(tmp: Path) -> None:
    """Issue 29 item 16: 700 turns in a 0.24 MB step gave a 126 MB page (every call re-rendered
    the whole history)."""
    import ptc
    from ptc.llm import ScriptedLLM

    n = 700
    replies = [_clj(f"(+ 1 {i})") for i in range(1, n)] + [_clj("(return 1)")]
    step = ptc.SubAgent(
        prompt="Count the turns", llm=ScriptedLLM(replies), max_turns=n, compression=False
    ).run()
    saved = tmp / "step.json"
    saved.write_text(step.to_json())
    code, out, err = _trace(str(saved), "--html", str(tmp / "page.html"))
    assert (code, out, err) == (0, f"{(tmp / 'page.html').resolve()}\n", ""), err
    size, step_size = (tmp / "page.html").stat().st_size, saved.stat().st_size
    assert size < 6 * step_size, f"a {size:,}-byte page for a {step_size:,}-byte step"


@case(seconds=40, memory_mb=900)
def case_many_large_turns_give_a_page_in_bounded_time(tmp: Path) -> None:
    """Deriving each call's compressed messages reads every earlier turn: 1,000 turns of 300
    tool calls and 300 prints, short enough for the page's text budget, took 10 s (and grows
    with turns times step size)."""
    import ptc
    from ptc.llm import ScriptedLLM
    from ptc.turn import ToolCallRecord

    n = 1_000
    replies = [_clj(f"(+ 1 {i})") for i in range(1, n)] + [_clj("(return 1)")]
    step = ptc.SubAgent(
        prompt="Count the turns", llm=ScriptedLLM(replies), max_turns=n, compression=True
    ).run()
    calls = tuple(ToolCallRecord("t", (1,), "") for _ in range(300))
    prints = ("",) * 300
    turns = tuple(dataclasses.replace(t, tool_calls=calls, prints=prints) for t in step.turns)
    big = dataclasses.replace(step, turns=turns)
    started = time.monotonic()
    page = big.to_html()
    took = time.monotonic() - started
    assert took < 5, f"{took:.1f} s to render"
    assert "would read more than 20,000,000 items of history" in page
    assert len(page) < 5_000_000


@case(seconds=30, memory_mb=400)
def case_a_bad_step_file_is_one_line_and_an_exit_code(tmp: Path) -> None:
    """Issue 29 item 21: `ptc trace --html` of a step with an empty mission printed a traceback,
    and so did a file holding a JSON array or JSON nested 100,000 deep."""
    import ptc
    from ptc.llm import ScriptedLLM

    step = ptc.SubAgent(prompt="One", llm=ScriptedLLM([_clj("(return 1)")])).run()
    d = step.to_dict()
    d["context"]["mission"] = ""
    empty = tmp / "empty.json"
    empty.write_text(json.dumps(d))
    code, out, err = _trace(str(empty), "--html", str(tmp / "page.html"))
    assert (code, err) == (0, ""), err
    assert "<title>ptc trace: (no mission)</title>" in (tmp / "page.html").read_text()
    files = {
        "array.json": "[1, 2]",
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "words.json": "hello",
        "shape.json": json.dumps({**d, "turns": [5]}),
        "context.json": json.dumps({**d, "context": "x"}),
    }
    for name, text in files.items():
        (tmp / name).write_text(text)
        for html in ([], ["--html", str(tmp / "bad.html")]):
            code, out, err = _trace(str(tmp / name), *html)
            assert code == 65 and out == "", (name, code, out, err)
            assert err.startswith(f"ptc: step {tmp / name}: not ") and err.count("\n") == 1, err
    assert not (tmp / "bad.html").exists()


@case(seconds=30, memory_mb=400)
def case_the_text_view_cannot_drive_the_terminal(tmp: Path) -> None:
    """`ptc trace step.json` printed a step's text raw: escape sequences in a shared step could
    clear the screen, retitle the terminal, write the clipboard or rewrite a line."""
    import ptc
    from ptc.llm import ScriptedLLM

    step = ptc.SubAgent(prompt="One", llm=ScriptedLLM([_clj("(return 1)")])).run()
    d = step.to_dict()
    d["context"]["mission"] = "\x1b]52;c;aGVsbG8=\x07\x1b[2J\r\x9b1A"
    saved = tmp / "step.json"
    saved.write_text(json.dumps(d))
    code, out, err = _trace(str(saved))
    assert (code, err) == (0, ""), err
    controls = sorted({hex(ord(c)) for c in out if ord(c) < 0x20 and c not in "\n\t"})
    controls += sorted({hex(ord(c)) for c in out if 0x7F <= ord(c) < 0xA0})
    assert controls == [], f"control characters reach the terminal: {controls}"
    assert out.startswith("mission: \\x1b]52;c;aGVsbG8=\\x07\\x1b[2J\\x0d\\x9b1A\n")
