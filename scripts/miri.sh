#!/usr/bin/env bash
# Miri (Rust's UB checker) over the unit tests of the pure-Rust modules that hold unsafe code:
# thin.rs (a hand-made reference count), value/map.rs (a tagged pointer), alloc.rs (the counting
# allocator), dropper.rs and guard.rs. Needs a nightly toolchain with the miri component
# (`rustup component add --toolchain nightly miri rust-src`); says so and fails without it.
# The bindings (rust/python/) call CPython and cannot run under Miri: valgrind covers them.
#
#   scripts/miri.sh            every module's tests
#   scripts/miri.sh thin       one module's (a test-name filter)
set -euo pipefail
cd "$(dirname "$0")/.."
if ! cargo +nightly miri --version >/dev/null 2>&1; then
    echo "miri.sh: no Miri: rustup component add --toolchain nightly miri rust-src" >&2
    exit 2
fi
# mimalloc is C (Miri cannot run foreign code): the counting allocator over the system one.
# Strict provenance and symbolic alignment catch pointer games that happen to work natively.
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance -Zmiri-symbolic-alignment-check}"
FILTERS=("${@:-thin:: map:: alloc:: dropper:: guard::}")
for f in ${FILTERS[@]}; do
    echo "== miri: $f"
    flags="$MIRIFLAGS"
    # dropper.rs's tests start its background thread, which lives as long as the process (by
    # design: nothing joins it), and Miri counts a thread left running at exit as a leak. Its
    # tests check instead that every value they hand off is dropped (a witness's count).
    case "$f" in *dropper*) flags="$flags -Zmiri-ignore-leaks" ;; esac
    MIRIFLAGS="$flags" cargo +nightly miri test --lib --no-default-features -q -- "$f"
done
