#!/usr/bin/env bash
# Fuzzing the PTC-Lisp core with cargo-fuzz (libFuzzer), for a bounded time.
#
#   scripts/fuzz.sh TARGET SECONDS       build, then fuzz one target (reader, eval, printer, json)
#   scripts/fuzz.sh all SECONDS          every target, SECONDS each
#   scripts/fuzz.sh build [TARGET]       build only (all targets when none is named)
#   scripts/fuzz.sh repro TARGET FILE    run one input once under the fuzz build
#   scripts/fuzz.sh min TARGET FILE      minimize a crashing input into fuzz/regressions/TARGET/
#   scripts/fuzz.sh show TARGET FILE...  print the program / text / value an input stands for
#
# What a run does: fuzzes with one worker (one core) for SECONDS, keeps going after a finding
# (libFuzzer fork mode with one job: -fork=1, ignore crashes/timeouts/OOMs), writes crash
# artifacts to fuzz/artifacts/TARGET/, prints the number of executions and every finding
# (grouped by its signature), and minimizes one artifact per group with `cargo fuzz tmin` into
# fuzz/regressions/TARGET/ (with a .txt note: the signature and the program it stands for),
# keeping only findings that also reproduce in a plain build (as `cargo test` replays them).
# rust/tests/fuzz_regressions.rs replays fuzz/corpus/ and fuzz/regressions/ under `cargo test`.
# New interesting inputs go to fuzz/work/TARGET/ (not committed); fuzz/corpus/TARGET/ holds the
# small committed seed corpus and is only read.
#
# Toolchain: cargo-fuzz needs nightly-only rustc flags (-Zsanitizer=..., sanitizer-coverage
# passes, --cfg fuzzing); on the stable toolchain RUSTC_BOOTSTRAP=1 unlocks them, and this
# script sets it. Install cargo-fuzz once with: cargo install cargo-fuzz --locked
# Sanitizer: AddressSanitizer works on stable x86_64 Linux (the rust-std component ships
# librustc-stable_rt.asan.a) and is the default: it reports a native stack overflow in any
# thread, pmap branches included. FUZZ_SANITIZER=none also works: up to 4x more executions
# (reader, printer; about the same for eval, whose inputs mostly run to their limits) and true
# timings; a stack overflow on the fuzzing thread is still reported (the targets give it an
# alternate signal stack), but one in a pmap branch thread kills the process without an
# artifact. Under ASan, deep recursion through stacker's stack switching is many times slower
# (false hangs and slow runs), so every finding is replayed in a plain build before it is kept.
# Build settings: `cargo fuzz build -O -a`: release optimizations with debug assertions and
# overflow checks on (fuzz/Cargo.toml's release profile also keeps them), at most
# CARGO_BUILD_JOBS=2 compile jobs, one target dir per sanitizer (fuzz/target/address|none,
# fuzz/target/plain for the show helper). A first build takes 6-7 minutes per sanitizer on 2
# cores (12 when they are busy); after a harness change, about 20 s.
#
# Environment (defaults in brackets):
#   FUZZ_SANITIZER [address]   address | none
#   FUZZ_TIMEOUT [10]          libFuzzer -timeout: seconds one input may run (a hang finding);
#                              the harness itself fails an input over 5x its timeout_ms (>= 1 s)
#   FUZZ_RSS_MB [2048]         libFuzzer -rss_limit_mb (the harness' runs allow 64 MB)
#   FUZZ_FORK [1]              1: keep fuzzing after findings; 0: stop at the first one
#   FUZZ_TMIN_SECONDS [60]     time to minimize one finding; FUZZ_MAX_MIN [6] findings minimized
#   FUZZ_MAX_LEN               libFuzzer -max_len (per-target default below)
#   FUZZ_SHOW [1]              write .txt notes with the program a reproducer stands for
#   FUZZ_KEEP_ALL [0]          1: keep findings that do not reproduce in a plain build too
#   FUZZ_EXTRA                 more libFuzzer flags
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ="$ROOT/fuzz"
TARGETS=(reader eval printer json)
TRIPLE="$(rustc -vV | sed -n 's/^host: //p')"

export RUSTC_BOOTSTRAP=1
export CARGO_BUILD_JOBS="${CARGO_BUILD_JOBS:-2}"
SAN="${FUZZ_SANITIZER:-address}"
TIMEOUT="${FUZZ_TIMEOUT:-10}"
RSS="${FUZZ_RSS_MB:-2048}"
FORK="${FUZZ_FORK:-1}"
TMIN_SECONDS="${FUZZ_TMIN_SECONDS:-60}"
MAX_MIN="${FUZZ_MAX_MIN:-6}"
SHOW="${FUZZ_SHOW:-1}"
# leaks are not what this fuzzes for; a deep value ends in a native stack overflow report
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:allocator_may_return_null=1:handle_abort=1}"
# one target dir per sanitizer, so switching does not rebuild everything
BUILD_FLAGS=(-O -a --sanitizer "$SAN" --target-dir "$FUZZ/target/$SAN")
BIN_DIR="$FUZZ/target/$SAN/$TRIPLE/release"
# ASan makes the interpreter several times slower (its allocator most): the harness' "slow run"
# budget (5x timeout_ms, >= 1 s) is scaled to match (8x: a slow-run finding needs
# FUZZ_SANITIZER=none, which times runs as they really are); hangs are still caught by -timeout.
if [[ "$SAN" == address ]]; then
  export PTC_FUZZ_SLOW_FACTOR="${PTC_FUZZ_SLOW_FACTOR:-8}"
fi

die() { echo "fuzz.sh: $*" >&2; exit 2; }

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }

is_target() { local t; for t in "${TARGETS[@]}"; do [[ "$t" == "$1" ]] && return 0; done; return 1; }

max_len() {
  if [[ -n "${FUZZ_MAX_LEN:-}" ]]; then echo "$FUZZ_MAX_LEN"; return; fi
  case "$1" in
    reader) echo 16384 ;;
    eval) echo 8192 ;;
    printer) echo 512 ;;
    json) echo 16384 ;;
  esac
}

ensure_cargo_fuzz() {
  cargo fuzz --version >/dev/null 2>&1 || die "cargo-fuzz is missing: cargo install cargo-fuzz --locked"
}

build() {
  ensure_cargo_fuzz
  local started=$SECONDS
  echo "== building ${*:-all targets} (sanitizer $SAN, release + debug assertions)"
  (cd "$FUZZ" && cargo fuzz build "${BUILD_FLAGS[@]}" "$@") || die "build failed"
  echo "== built in $((SECONDS - started)) s"
}

show_bin() {
  # the show helper: a plain (uninstrumented) build of fuzz/examples/show.rs
  (cd "$FUZZ" && cargo build --release --quiet --example show --target-dir "$FUZZ/target/plain" >&2) || return 1
  echo "$FUZZ/target/plain/release/examples/show"
}

show() {
  local target="$1"; shift
  "$(show_bin)" "$target" "$@"
}

# Runs one input through the harness in a plain release build (the show helper with --run),
# as the regression test does; succeeds when the input passes there.
replay_plain() {
  local target="$1" file="$2" bin
  bin="$(show_bin)" || return 1
  PTC_FUZZ_WATCHDOG=1 PTC_FUZZ_SLOW_FACTOR=1 RUST_MIN_STACK=8388608 \
    timeout 180 "$bin" "$target" --run "$file" >/dev/null 2>&1
}

# A one-line signature of what an input triggers (reproduced once under the fuzz build).
signature() {
  local target="$1" file="$2" out
  out="$(timeout $((TIMEOUT * 3 + 30)) "$BIN_DIR/$target" -runs=1 -timeout="$TIMEOUT" \
    -rss_limit_mb="$RSS" "$file" 2>&1 || true)"
  local sig
  sig="$(grep -m1 -oE 'FINDING [a-z_ ]+:[^(]{0,60}' <<<"$out" || true)"
  [[ -z "$sig" ]] && sig="$(grep -m1 -A1 'panicked at' <<<"$out" | tail -1 | cut -c1-90 || true)"
  # strip addresses and numbers so one bug gives one signature
  sig="$(sed -E 's/0x[0-9a-f]+//g; s/[0-9]+(\.[0-9]+)?(ms|s|µs)?/N/g' <<<"$sig" | tr -s ' ')"
  [[ -z "$sig" ]] && grep -q 'has overflowed its stack\|stack-overflow' <<<"$out" && sig="native stack overflow"
  [[ -z "$sig" ]] && sig="$(grep -m1 -oE 'AddressSanitizer: [a-z-]+' <<<"$out" || true)"
  [[ -z "$sig" ]] && grep -q 'ALARM: working on the last Unit\|Timeout' <<<"$out" && sig="timeout (hang over ${TIMEOUT}s)"
  [[ -z "$sig" ]] && grep -q 'out-of-memory' <<<"$out" && sig="out-of-memory (rss over ${RSS} MB)"
  [[ -z "$sig" ]] && grep -q 'deadly signal' <<<"$out" && sig="deadly signal"
  [[ -z "$sig" ]] && sig="does not reproduce in one run"
  echo "$sig"
}

# Minimizes one crashing input into fuzz/regressions/TARGET/; prints the reproducer's path.
minimize() {
  local target="$1" file="$2" sig="${3:-}"
  local regress="$FUZZ/regressions/$target" art="$FUZZ/artifacts/$target"
  mkdir -p "$regress" "$art"
  [[ -z "$sig" ]] && sig="$(signature "$target" "$file")"
  local mark; mark="$(mktemp)"
  # a hang is minimized with a shorter timeout (a real one still exceeds it)
  local tmo="$TIMEOUT"; [[ "$sig" == timeout* ]] && tmo=3
  (cd "$FUZZ" && timeout $((TMIN_SECONDS + 120)) cargo fuzz tmin "${BUILD_FLAGS[@]}" -r 100000 \
    "$target" "$file" -- -timeout="$tmo" -rss_limit_mb="$RSS" -max_total_time="$TMIN_SECONDS" \
    >"$FUZZ/logs/tmin-$target.log" 2>&1) || true
  local min; min="$(find "$art" -maxdepth 1 -name 'minimized-from-*' -newer "$mark" -printf '%T@ %p\n' \
    | sort -n | tail -1 | cut -d' ' -f2-)"
  rm -f "$mark"
  [[ -n "$min" && -s "$min" ]] || min="$file"
  # the minimizer keeps any failure: if the reproducer now fails differently (say a stack
  # overflow became a hang), keep the original input instead
  if [[ "$min" != "$file" && "$(signature "$target" "$min")" != "$sig" ]]; then
    echo "   (minimizing changed what it triggers; keeping the original input)" >&2
    min="$file"
  fi
  # a finding must also reproduce in a plain (uninstrumented) build, as cargo test runs it:
  # under ASan deep recursion through stacker's stack switching is many times slower, which
  # shows as hangs and slow runs that are not there
  local plain="reproduces in a plain build"
  if replay_plain "$target" "$min"; then
    plain="does NOT reproduce in a plain build"
    if [[ "$SAN" != none && "${FUZZ_KEEP_ALL:-0}" != 1 ]]; then
      echo "   (only under the $SAN sanitizer, not kept: ${min#"$ROOT"/})" >&2
      echo "$min"
      return
    fi
  fi
  local kind; kind="$(basename "$file" | cut -d- -f1)"
  local sum; sum="$(sha1sum "$min" | cut -c1-12)"
  local dest="$regress/$kind-$sum"
  # the same bytes as a reproducer we already keep: nothing new
  local f; for f in "$regress"/*; do
    [[ -f "$f" ]] && cmp -s "$f" "$min" && { echo "$f"; return; }
  done
  cp "$min" "$dest"
  {
    echo "target:    $target"
    echo "signature: $sig"
    echo "from:      $(basename "$file") ($(wc -c <"$file") bytes), minimized to $(wc -c <"$dest") bytes"
    echo "replay:    $plain (fuzzed with sanitizer $SAN)"
    if [[ "$SHOW" == 1 ]]; then
      echo "--- what it stands for ---"
      show "$target" "$dest" 2>&1 | tail -n +2 | head -c 6000 || true
    fi
  } >"$dest.txt"
  echo "$dest"
}

run_target() {
  local target="$1" seconds="$2"
  local work="$FUZZ/work/$target" seeds="$FUZZ/corpus/$target" art="$FUZZ/artifacts/$target"
  mkdir -p "$work" "$seeds" "$art" "$FUZZ/regressions/$target" "$FUZZ/logs"
  build "$target"
  local before; before="$(ls "$art" 2>/dev/null | sort)"
  local log="$FUZZ/logs/$target.log"
  local flags=(-max_total_time="$seconds" -timeout="$TIMEOUT" -rss_limit_mb="$RSS"
    -max_len="$(max_len "$target")" -artifact_prefix="$art/" -print_final_stats=1)
  if [[ "$FORK" == 1 ]]; then
    flags+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  # shellcheck disable=SC2206
  flags+=(${FUZZ_EXTRA:-})
  echo "== fuzzing $target for ${seconds}s (one worker; log: ${log#"$ROOT"/})"
  local started=$SECONDS
  (cd "$FUZZ" && timeout $((seconds + TIMEOUT * 4 + 120)) "$BIN_DIR/$target" "${flags[@]}" \
    "$work" "$seeds" >"$log" 2>&1) || true
  local took=$((SECONDS - started))
  # executions: the final stats, or the last status line ("#N: cov: ...")
  local execs rate
  execs="$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || true)"
  [[ -z "$execs" ]] && execs="$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)"
  [[ -z "$execs" ]] && execs=0
  # (fork mode's own exec/s is per job; the overall rate is what counts)
  rate=$((execs / (took > 0 ? took : 1)))
  echo "== $target: $execs executions in ${took}s (~${rate} exec/s)"
  local after; after="$(ls "$art" 2>/dev/null | sort)"
  local new; new="$(comm -13 <(echo "$before") <(echo "$after") | grep -E '^(crash|timeout|oom|leak|slow-unit)-' || true)"
  if [[ -z "$new" ]]; then
    echo "== $target: no findings"
    return 0
  fi
  echo "== $target: $(wc -l <<<"$new") new artifact(s) in ${art#"$ROOT"/}/"
  declare -A groups=()
  local a sig
  while read -r a; do
    sig="$(signature "$target" "$art/$a")"
    echo "   $a: $sig"
    [[ -z "${groups[$sig]:-}" ]] && groups[$sig]="$a"
  done <<<"$new"
  local n=0 key dest
  for key in "${!groups[@]}"; do
    if ((n >= MAX_MIN)); then
      echo "   (not minimized, FUZZ_MAX_MIN=$MAX_MIN reached): $key"
      continue
    fi
    n=$((n + 1))
    dest="$(minimize "$target" "$art/${groups[$key]}" "$key")"
    if [[ "$dest" == "$FUZZ/regressions/"* ]]; then
      echo "== finding [$key] -> ${dest#"$ROOT"/} ($(wc -c <"$dest") bytes)"
    else
      echo "== not kept [$key]: does not reproduce without the sanitizer (${dest#"$ROOT"/})"
    fi
  done
  FINDINGS=$((FINDINGS + ${#groups[@]}))
}

FINDINGS=0
[[ $# -ge 1 ]] || usage
case "$1" in
  build)
    if [[ $# -ge 2 ]]; then is_target "$2" || die "unknown target $2"; build "$2"; else build; fi
    ;;
  repro)
    [[ $# -eq 3 ]] || usage
    is_target "$2" || die "unknown target $2"
    build "$2"
    "$BIN_DIR/$2" -runs=1 -timeout="$TIMEOUT" -rss_limit_mb="$RSS" "$3"
    ;;
  min)
    [[ $# -eq 3 ]] || usage
    is_target "$2" || die "unknown target $2"
    mkdir -p "$FUZZ/logs"
    build "$2"
    dest="$(minimize "$2" "$3")"
    echo "== ${dest#"$ROOT"/}"
    cat "$dest.txt" 2>/dev/null || true
    ;;
  show)
    [[ $# -ge 3 ]] || usage
    is_target "$2" || die "unknown target $2"
    show "$2" "${@:3}"
    ;;
  all)
    [[ $# -eq 2 ]] || usage
    for t in "${TARGETS[@]}"; do run_target "$t" "$2"; done
    echo "== all targets: $FINDINGS finding group(s)"
    ;;
  *)
    [[ $# -eq 2 ]] || usage
    is_target "$1" || die "unknown target $1 (one of: ${TARGETS[*]}, all)"
    [[ "$2" =~ ^[0-9]+$ ]] || die "SECONDS must be a number"
    run_target "$1" "$2"
    ;;
esac
