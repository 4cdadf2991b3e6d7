"""Red-team cases that FAIL on the current code (issue 29's "a fresh batch ... finds nothing
new"): each reproduces a defect found by the second hostile batch and asserts what SAFETY.md
and the issue promise. This module starts with ``_``, so ``collect()`` skips it and CI stays
green; a case moves back to its ``redteam_<surface>.py`` module with the fix of its defect.

Run one as the suite would: ``python tests/hostile/surface_child.py _pending_redteam
case_name_without_prefix /tmp/somewhere 3072`` (PASS as the last line, else the failure);
PostgreSQL cases need ``PTC_TEST_POSTGRES_URL``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from . import case

# -- tools and their worker threads (redteam_tools.py) --------------------------------------------






# -- host data (redteam_host_data.py) -------------------------------------------------------------


def _interrupt_within(make: Any, prepare: Any, bound: float) -> None:
    """SIGINT 50 ms into ``make()``: KeyboardInterrupt within ``bound`` seconds of it."""
    arg = prepare()
    started = time.monotonic()
    make(arg)
    whole = time.monotonic() - started
    assert whole > 0.5, f"the conversion takes only {whole:.2f} s: the case needs more input"
    timer = threading.Timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        make(arg)
    except KeyboardInterrupt:
        took = time.monotonic() - started
        assert took < 0.05 + bound, f"Ctrl-C took {took:.2f} s (the whole conversion {whole:.2f} s)"
    else:
        raise AssertionError(f"the conversion ended without KeyboardInterrupt ({whole:.2f} s)")
    finally:
        timer.cancel()


@case(seconds=60, memory_mb=1200)
def case_ctrl_c_while_a_large_dict_converts(tmp: Path) -> None:
    """SAFETY.md: converting input data checks Ctrl-C every 65,536 objects. A dict of 3,000,000
    keys (about 3 s to convert): KeyboardInterrupt came only when the conversion had finished
    (3 s after the signal); lists of 20,000,000 ints or of records, about 1 s late."""
    import ptc

    _interrupt_within(
        lambda data: ptc.Session(data=data),
        lambda: {"m": {f"k{i}": i for i in range(3_000_000)}},
        0.3,
    )


@case(seconds=60, memory_mb=1200)
def case_ctrl_c_while_a_large_json_text_parses(tmp: Path) -> None:
    """``Session.from_json`` of a 100 MB text (3,000,000 records, about 1.3 s): Ctrl-C 50 ms
    in was answered only after the whole parse."""
    import ptc

    _interrupt_within(
        ptc.Session.from_json,
        lambda: (
            '{"rows": ['
            + ",".join(f'{{"id": {i}, "name": "n{i}"}}' for i in range(3_000_000))
            + "]}"
        ),
        0.3,
    )


# -- regex builtins (redteam_regex.py) ------------------------------------------------------------
