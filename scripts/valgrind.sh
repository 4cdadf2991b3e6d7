#!/usr/bin/env bash
# valgrind's memcheck over the Python tests of the Python<->Rust boundary (the bindings call
# CPython and cannot run under Miri, scripts/miri.sh): values converted both ways (one thread,
# the split), lazy results read back, tool arguments and results, records, cyclic
# and shared data. Fails (exit 99) on any invalid read or write, use of an uninitialised value
# or definitely lost block, and when a test fails.
#
# It builds its own copy of the extension into its own venv (target/valgrind/venv, kept between
# runs; the build in target/valgrind/cargo), so it works from a clean clone and leaves the
# developer's environment alone:
#   - the system allocator (--no-default-features: the crate's one default feature is
#     mimalloc; pyproject.toml's [tool.maturin] features still apply), not mimalloc: mimalloc
#     carves its blocks out of big mmapped arenas that memcheck cannot see into, so a read past
#     a Rust block or a block never freed would go unseen; with glibc's malloc every heap block
#     is memcheck's;
#   - release optimisation (the tests take long enough under valgrind) with line tables and no
#     stripping, so the stacks name file:line in rust/;
#   - PYTHONMALLOC=malloc, so Python's objects are malloc blocks too (not pymalloc's arenas).
# Python: CPython 3.11 (the oldest the package supports, and .ci/run's) with a shared libpython
# (PTC_VALGRIND_PYTHON, else python3.11, else python3 when it is 3.11). 3.11 leaves the first
# digit of a new int unset, which int("0") and int.from_bytes(b"\0") then read (fixed in 3.12),
# and the small int 0 they return is "uninitialised" wherever it goes, ptc's input included: no
# suppression can follow it without hiding real errors, so scripts/valgrind-pylong.c (built
# here with cc, preloaded) sets that digit. 3.12 and later need no such fix but never free their
# interned strings at exit (only a Py_DEBUG build does): thousands of definitely lost blocks.
# scripts/valgrind-python.supp suppresses one report, in glibc (see there); none names a frame
# of ptc or of CPython.
# Needs: valgrind (Debian's package; installed when missing, as .ci/run does for chromium), cc
# and a Rust toolchain, network for pip the first time.
#
# Time on the 2-core development machine while other builds ran (load average about 5): 4
# minutes to build from nothing with one job (CARGO_BUILD_JOBS=1), 12 minutes of tests
# (212 tests; docs/SAFETY.md). Too long for .ci/run: run it by hand after changing
# rust/python/ or the unsafe code under it.
#
#   scripts/valgrind.sh                    the boundary tests below
#   scripts/valgrind.sh tests/test_x.py    other tests (pytest arguments)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
OUT="$ROOT/target/valgrind"
VENV="$OUT/venv"

if ! command -v valgrind >/dev/null 2>&1; then
    SUDO=""
    if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1; then SUDO="sudo"; fi
    $SUDO apt-get update -qq && $SUDO apt-get install -y -qq valgrind >/dev/null
fi

# a CPython 3.11 whose libpython is a shared library (valgrind-pylong.c replaces a function of it)
suitable() {
    "$1" -c 'import sys, sysconfig
sys.exit(sys.version_info[:2] != (3, 11) or not sysconfig.get_config_var("Py_ENABLE_SHARED"))' \
        >/dev/null 2>&1
}
PY=""
for c in "${PTC_VALGRIND_PYTHON:-}" python3.11 python3; do
    if [ -n "$c" ] && suitable "$c"; then PY="$c"; break; fi
done
if [ -z "$PY" ]; then
    echo "valgrind.sh: needs CPython 3.11 built with --enable-shared (set PTC_VALGRIND_PYTHON)" >&2
    exit 2
fi
mkdir -p "$OUT"
if [ ! -x "$VENV/bin/python" ] || ! suitable "$VENV/bin/python"; then
    rm -rf "$VENV"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q 'maturin>=1.7,<2' 'pytest>=8' 'pytest-timeout>=2' \
        'pytest-asyncio>=0.23' 'hypothesis>=6'
fi
INCLUDE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')"
cc -O2 -shared -fPIC -I"$INCLUDE" -o "$OUT/pylong.so" scripts/valgrind-pylong.c -ldl

# The extension, built as a wheel and installed into the venv (the source tree is left alone;
# cargo does nothing when rust/ has not changed since the last run).
rm -rf "$OUT/wheels"
(
    export CARGO_TARGET_DIR="$OUT/cargo"
    export CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=none
    "$VENV/bin/maturin" build --release --no-default-features \
        -i "$VENV/bin/python" -o "$OUT/wheels"
    "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$OUT"/wheels/*.whl
) >"$OUT/build.log" 2>&1 || { tail -50 "$OUT/build.log" >&2; exit 1; }

if [ "$#" -eq 0 ]; then
    # The boundary tests that run in this process. Left out: those whose work is in a child
    # process, which valgrind does not follow (Ctrl-C and the address-space limit during a
    # two-thread conversion), the nested-records round trip, whose programs over 20,000
    # records take about the default 5 s run limit under valgrind on a busy machine, and the
    # test that the helper thread takes some blocks: valgrind runs one thread at a time, and
    # the thread holding the GIL may take them all first (it did once, 2026-11-30).
    set -- tests/test_values.py tests/test_boundary.py tests/test_shaped_records.py \
        tests/test_tools.py tests/test_api_edges.py tests/test_records_codec.py \
        tests/test_convert_two_threads.py \
        -k "not ctrl_c and not no_memory and not nested_records_round_trip \
            and not helper_thread_converts_items"
fi

# addopts dropped: --benchmark-disable needs pytest-benchmark, which these tests do not use.
# The per-test timeout is raised: valgrind runs code 20-50 times slower.
set +e
PYTHONMALLOC=malloc LD_PRELOAD="$OUT/pylong.so${LD_PRELOAD:+:$LD_PRELOAD}" \
    valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
    --errors-for-leak-kinds=definite --show-leak-kinds=definite \
    --suppressions="$ROOT/scripts/valgrind-python.supp" --num-callers=40 \
    --log-file="$OUT/memcheck.log" \
    "$VENV/bin/python" -m pytest -x -q -p no:cacheprovider -o addopts= --timeout=3000 "$@"
rc=$?
set -e
grep -E "ERROR SUMMARY|definitely lost:" "$OUT/memcheck.log" | sed 's/^==[0-9]*== //' || true
if [ "$rc" -eq 99 ]; then
    # memcheck's reports, from the first one on
    sed -n '/^==[0-9]*== \(Invalid\|Conditional\|Use of\|Mismatched\|Source and\|Syscall\|[0-9,]* bytes in\)/,$p' \
        "$OUT/memcheck.log" | head -400 >&2
    echo "valgrind.sh: memcheck found errors (all of them: $OUT/memcheck.log)" >&2
fi
exit "$rc"
