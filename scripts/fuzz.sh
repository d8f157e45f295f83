#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (cargo-fuzz, libFuzzer) on the stable toolchain.
#
#   scripts/fuzz.sh                 every target for $FUZZ_SECONDS seconds each (default 5): the CI smoke run
#   scripts/fuzz.sh TARGET [ARGS]   one target, with libFuzzer arguments (e.g. -runs=10000000)
#   FUZZ_SECONDS=1800 FUZZ_RUNS=10000000 scripts/fuzz.sh
#                                   the long run: each target stops at whichever limit comes first
#
# cargo-fuzz needs unstable compiler flags; RUSTC_BOOTSTRAP=1 lets the stable compiler take
# them. The seed corpus comes from the project's own files (fuzz/seeds.sh). A crash stops the
# run with its input in fuzz/artifacts/TARGET/ and exit code 1.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export RUSTC_BOOTSTRAP=1
command -v cargo-fuzz >/dev/null || {
  echo "fuzz: cargo-fuzz is missing: run scripts/setup.sh (cargo install cargo-fuzz --locked)" >&2
  exit 3
}
# No sanitizer (the parsers are safe Rust; the coverage instrumentation is what guides the
# search), debug assertions on (an overflow is a crash).
flags=(-s none -a)
bash ./seeds.sh >/dev/null
targets=$(sed -n 's/^name = "\(.*\)"$/\1/p' Cargo.toml | grep -v '^hpcscope-fuzz$')
if [ $# -ge 1 ]; then
  t=$1; shift
  exec cargo fuzz run "${flags[@]}" "$t" "corpus/$t" -- "$@"
fi
secs=${FUZZ_SECONDS:-5}
runs=()
[ -n "${FUZZ_RUNS:-}" ] && runs=(-runs="$FUZZ_RUNS")
cargo fuzz build "${flags[@]}" >/dev/null
for t in $targets; do
  # -rss_limit_mb: an input that makes a target take more than 2 GB is a finding too.
  out=$(cargo fuzz run "${flags[@]}" "$t" "corpus/$t" -- -max_total_time="$secs" "${runs[@]}" \
    -rss_limit_mb=2048 -timeout=20 2>&1) || {
    echo "$out" | tail -40
    echo "fuzz: $t FAILED (input in fuzz/artifacts/$t/)" >&2
    exit 1
  }
  echo "fuzz: $t $(echo "$out" | grep -o 'Done [0-9]* runs in [0-9]* second(s)' | tail -1) (crashes: 0)"
done
