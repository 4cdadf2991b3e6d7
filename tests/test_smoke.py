"""Basic end-to-end checks of the Python API."""

import ptc


def test_eval_arithmetic() -> None:
    assert ptc.eval("(+ 1 2 3)") == 6
    assert ptc.eval("(/ 12 4)") == 3.0


def test_run_reports_error_without_raising() -> None:
    r = ptc.run("(undefined-thing 1)")
    assert not r.ok
    assert r.error is not None
    assert r.error.type == "undefined_variable"
