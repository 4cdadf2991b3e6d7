#!/usr/bin/env bash
# The tests that run against an installed ptc-runtime (a wheel, not the source tree): the
# language, its errors, values across the boundary, sessions and limits. Run from the
# repository's root with the package and `pytest pytest-timeout pytest-asyncio
# pytest-benchmark hypothesis` installed; the release workflow runs it against each wheel, and
# scripts/build_wheel.sh against the manylinux wheel built here.
set -euo pipefail
cd "$(dirname "$0")/.."
# the package must come from site-packages: the source tree's python/ is never on the path
where="$(cd / && python -c 'import ptc, os; print(os.path.dirname(ptc.__file__))')"
case "$where" in
    "$PWD"/*) echo "ptc is imported from the source tree ($where), not an installed package" >&2; exit 1 ;;
esac
echo "testing the ptc installed at $where ($(python -c 'import ptc; print(ptc.__version__)'))"
python -m pytest -q -p no:cacheprovider \
    tests/lang tests/errors tests/test_values.py tests/test_session.py tests/test_limits.py \
    tests/test_boundary.py tests/test_convert_two_threads.py tests/test_exception_tree.py
