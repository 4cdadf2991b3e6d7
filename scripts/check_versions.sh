#!/usr/bin/env bash
# The extension compiles for every CPython the release builds a wheel for. Wheels are built per
# version (the conversion reads CPython's object layouts, rust/python/convert/ffi.rs, which the
# stable ABI does not promise), so each version's PyO3 configuration is checked here, without
# its interpreter: PyO3 reads the version from a config file (PYO3_CONFIG_FILE) instead of
# asking a python. 3.11, the version of this machine, is built and tested by the README's test
# command. `cargo check` type-checks and expands every `cfg(Py_3_x)`; it does not link.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
for v in ${PTC_CHECK_PYTHONS:-3.12 3.13 3.14}; do
    printf 'implementation=CPython\nversion=%s\nshared=true\nabi3=false\npointer_width=64\n' "$v" \
        > "$dir/$v.cfg"
    echo "== CPython $v"
    PYO3_CONFIG_FILE="$dir/$v.cfg" CARGO_TARGET_DIR=target/pyversions \
        cargo check --quiet --lib --no-default-features --features python
done
echo "the extension compiles for CPython ${PTC_CHECK_PYTHONS:-3.12 3.13 3.14}"
