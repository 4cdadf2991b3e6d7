"""Red-team cases that FAIL on the current code (issue 29's "a fresh batch ... finds nothing
new"): each reproduces a defect found by the second hostile batch and asserts what SAFETY.md
and the issue promise. This module starts with ``_``, so ``collect()`` skips it and CI stays
green; a case moves back to its ``redteam_<surface>.py`` module with the fix of its defect.

Run one as the suite would: ``python tests/hostile/surface_child.py _pending_redteam
case_name_without_prefix /tmp/somewhere 3072`` (PASS as the last line, else the failure);
PostgreSQL cases need ``PTC_TEST_POSTGRES_URL``.
"""

from __future__ import annotations


# -- tools and their worker threads (redteam_tools.py) --------------------------------------------


# -- host data (redteam_host_data.py) -------------------------------------------------------------


# -- regex builtins (redteam_regex.py) ------------------------------------------------------------
