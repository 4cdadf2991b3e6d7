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


def _set_message(a: str, b: str, why: str, whole: str) -> str:
    return (
        "a set has members that are different here but equal in Python, which would keep only "
        f"one: {a} and {b} ({why}) in {whole}"
    )


NUMBERS = "an integer and a float of the same value"
KW = "a keyword and a string with the same text"
BOOLS = "Python's True and False equal 1 and 0"


@case(seconds=30, memory_mb=300)
def case_sets_never_lose_members_on_the_way_to_python(tmp: Path) -> None:
    """Members that differ in the program but are equal in Python (:a and "a", 1 and 1.0,
    1 and true, [1] and [1.0]) are refused by name, as map keys are, not silently merged:
    as a run's value and as a tool's argument."""
    import ptc

    expected = {
        '#{:a "a"}': _set_message(
            ":a", '"a"', "a keyword and a string with the same text", '#{:a "a"}'
        ),
        "#{1 1.0}": _set_message("1", "1.0", NUMBERS, "#{1 1.0}"),
        "(set [1 true])": _set_message("1", "true", BOOLS, "#{1 true}"),
        "(set [0 0.0 false])": _set_message("0", "0.0", NUMBERS, "#{0 0.0 false}"),
        "#{[1] [1.0]}": _set_message(
            "[1]", "[1.0]", "their elements are equal in Python", "#{[1] [1.0]}"
        ),
    }
    for program, message in expected.items():
        r = ptc.run(program)
        assert r.error is not None and r.error.type == "execution_error", (program, r)
        assert r.error.message == message, (program, r.error.message)
        got: list[object] = []
        s = ptc.Session(tools={"t": got.append})
        r = s.run(f"(tool/t {program})")
        assert got == [], (program, got)  # the tool never saw a set with a member missing
        assert r.error is not None and r.error.message.endswith(message), (program, r.error)
    # distinct in Python too: kept whole
    assert ptc.run('#{1 "1" :b 2.5}').value == {1, "1", "b", 2.5}


@case(seconds=30, memory_mb=300)
def case_map_key_collisions_name_the_real_collision(tmp: Path) -> None:
    import ptc

    prefix = (
        "a map has keys that are different here but equal in Python, which would keep only one: "
    )
    cases = {
        "{1 :a 1.0 :b}": f"{prefix}1 and 1.0 ({NUMBERS}) in {{1 :a, ...}}",
        '{"a" 1 :a 2}': f'{prefix}"a" and :a ({KW}) in {{"a" 1, ...}}',
        "{true 1 1 2}": f"{prefix}true and 1 ({BOOLS}) in {{true 1, ...}}",
    }
    for program, message in cases.items():
        r = ptc.run(program)
        assert r.error is not None and r.error.message == message, (program, r.error)


@case(seconds=30, memory_mb=300)
def case_json_numbers_beyond_a_float_are_refused(tmp: Path) -> None:
    """`1e999999` overflows to infinity: refused with its position, as a 20-digit integer is;
    Infinity written as such is still read (Python's json writes it)."""
    import ptc

    for text, where, col in (
        ('{"a": 1e999999}', "data.a", 7),
        ('{"a": [1, -2.5e308]}', "data.a[1]", 11),
    ):
        number = text.split(": ")[1].strip("[]}").split(", ")[-1]
        try:
            ptc.Session.from_json(text)
        except ValueError as e:
            assert str(e) == (
                f"invalid JSON data at {where}: number {number} is out of range: it overflows "
                f"a 64-bit float (line 1, column {col})"
            ), e
        else:
            raise AssertionError(f"{text} was read")
    s = ptc.Session.from_json('{"a": Infinity, "b": 1e-999999}')
    assert s.run("[data/a data/b]").value == [float("inf"), 0.0]


@case(seconds=30, memory_mb=400)
def case_tool_results_that_contain_themselves_or_nest_too_deep(tmp: Path) -> None:
    """A tool returning a self-referencing dict or list, with or without dates in it, or a
    result with a date 5,000 levels down: a tool error naming where, never RecursionError."""
    import datetime

    import ptc

    d: dict[str, object] = {"a": 1}
    d["self"] = d
    dated: dict[str, object] = {"when": datetime.date(2020, 1, 1)}
    dated["me"] = dated
    deep: object = 1
    for _ in range(5000):
        deep = [deep]
    deep_dated: object = 1
    for _ in range(300):
        deep_dated = [deep_dated]
    deep_dated = {"when": datetime.date(2020, 1, 1), "deep": deep_dated}
    s = ptc.Session(
        tools={
            "d": lambda: d,
            "dated": lambda: dated,
            "deep": lambda: deep,
            "deep-dated": lambda: deep_dated,
        }
    )
    messages = {
        "(tool/d)": "Tool 'd' failed: returned a value that cannot be used: TypeError: "
        "result.self: this dict contains itself (a cycle); data must be a tree, so pass a copy "
        "without the back-reference",
        "(tool/dated)": "Tool 'dated' failed: ValueError: result.me: this dict contains itself "
        "(a cycle); a tool's result must be a tree",
    }
    for program, message in messages.items():
        r = s.run(program)
        assert r.error is not None and r.error.type == "tool_error", r
        assert r.error.message == message, r.error.message
    r = s.run("(tool/deep)")
    assert r.error is not None and r.error.type == "tool_error"
    assert "RecursionError" not in r.error.message
    assert r.error.message == (
        "Tool 'deep' failed: returned a value that cannot be used: TypeError: "
        "result[0][0][0][0]...(993 levels)...[0][0][0][0]: nested more than 1000 levels deep"
    ), r.error.message
    r = s.run("(tool/deep-dated)")
    assert r.error is not None and r.error.type == "tool_error"
    assert r.error.message.startswith("Tool 'deep-dated' failed: ValueError: result.deep[0][0]")
    assert r.error.message.endswith(
        "(201 levels): a tool's result holding dates, enums, models or dataclasses may nest "
        "at most 200 levels"
    ), r.error.message
