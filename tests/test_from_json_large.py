"""`Session.from_json` of a text over 1 MB: read by two threads on a machine with two cores
(rust/json.rs `from_json_at`), with the value and the messages of one thread's reading.
On a one-core machine the same tests run the one-thread path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import ptc
import pytest

N = 20_000


def _orders() -> list[dict[str, object]]:
    return [
        {
            "id": i,
            "total": i / 4,
            "status": ["shipped", "open"][i % 2],
            "customer": {"name": f"customer number {i % 700}", "vip": i % 3 == 0},
            "items": [{"sku": f"s{i % 13}", "qty": i % 5}, {"sku": None, "qty": []}],
        }
        for i in range(N)
    ]


@pytest.mark.parametrize("indent", [None, 2])
def test_a_large_text_loads_as_json_loads_reads_it(indent: int | None) -> None:
    text = json.dumps({"orders": _orders(), "after": {"n": 1}}, indent=indent)
    assert len(text) > 2**20
    s = ptc.Session.from_json(text)
    assert s.run("data/orders").value == json.loads(text)["orders"]
    assert s.run("(:n data/after)").value == 1
    assert s.run("(count data/orders)").value == N


def test_an_error_late_in_a_large_text_says_where() -> None:
    text = json.dumps({"orders": _orders()}, indent=2)
    # break record 19,000: `"id": 19000,` becomes `"id": 19000.,` (a number without digits)
    at = text.index('"id": 19000,') + len('"id": 19000')
    broken = text[:at] + "." + text[at:]
    with pytest.raises(ValueError) as info:
        ptc.Session.from_json(broken)
    # the position of the byte after the `.` (the `,`), worked out from the text
    index = at + 1
    line = broken.count("\n", 0, index) + 1
    column = index - (broken.rfind("\n", 0, index) + 1) + 1
    assert str(info.value) == (
        f"invalid JSON data at data.orders[19000].id: invalid number (line {line}, column {column})"
    )


def test_two_halves_that_fit_alone_but_not_together_are_a_memory_error() -> None:
    """Each thread counts its own allocations; the two share one allowance, so a text whose
    halves each fit what the process has left, but not both, raises MemoryError instead of
    the allocator being refused (which would abort the process)."""
    code = """
        import json, resource
        resource.setrlimit(resource.RLIMIT_AS, (1536 * 2**20, 1536 * 2**20))
        import ptc
        # 25M records of about 48 bytes each: 1.2 GB of values, 600 MB per half
        text = '{"xs": [' + '{"a":1},' * 25_000_000 + '{"a":1}]}'
        try:
            ptc.Session.from_json(text)
            out = {"raised": None}
        except MemoryError as e:
            out = {"raised": "MemoryError", "message": str(e)}
        del text
        out["after"] = ptc.run("(+ 1 2)").value
        print(json.dumps(out))
    """
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["raised"] == "MemoryError"
    assert out["message"].startswith("invalid JSON data at data.xs[")
    assert "needs more memory than this process has left" in out["message"]
    assert out["after"] == 3


def test_the_machine_has_two_cores_for_the_two_thread_path() -> None:
    """The tests above exercise the two-thread path only where the process may use two cores
    (the core asks the same of the system); otherwise they test the one-thread path."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core available: the two-thread JSON path is not exercised here")
