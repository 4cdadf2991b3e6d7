"""Child process of the surface cases: ``python surface_child.py MODULE FUNC TMPDIR ASMB``.

Caps its address space (RLIMIT_AS) and core dumps, runs ``surfaces.MODULE.case_FUNC(tmp)``
and prints ``PASS`` as its last line when the case returns. An assertion or any other
exception prints its traceback and exits 1; a crash shows as a signal in the parent.
"""

from __future__ import annotations

import importlib
import resource
import sys
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def main() -> int:
    module, func, tmp, asmb = sys.argv[1:5]
    cap = int(asmb) * 1024**2
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    fn = getattr(importlib.import_module(f"surfaces.{module}"), f"case_{func}")
    try:
        fn(Path(tmp))
    except BaseException:  # the case failed: say how, exit non-zero
        traceback.print_exc()
        sys.stdout.flush()
        return 1
    # this process's own peak RSS (the parent's wait4 figure also counts the parent's pages
    # the child held between fork and exec)
    with open("/proc/self/status") as f:
        peak = next((line.split()[1] for line in f if line.startswith("VmHWM:")), "0")
    sys.stdout.write(f"PEAK_KB {peak}\nPASS\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
