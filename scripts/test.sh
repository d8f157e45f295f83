#!/usr/bin/env bash
# Sets up the machine and runs every gate CI runs: format, lints, then the whole test suite.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
cd "$root"
# A CI run builds once from a fresh clone: incremental state would only take disk (7 GB of
# the 17 GB one run needed before), so CI builds without it; and its test binaries keep line
# tables only (file and line in a failure's backtrace, not the variables' debug info: the
# debug target directory took 5.4 GB with full debug info), so that a machine with little
# free disk still runs the suite (one CI run stopped on a full disk).
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
  export CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The DynamoRIO client is outside the workspace (its dependency builds DynamoRIO with
# cmake): its gates run apart, in the target directory scripts/build-dynamorio.sh built it in.
if [ "${HPCSCOPE_SKIP_DYNAMORIO_BUILD:-0}" != 1 ]; then
  dr_target="$(bash scripts/build-dynamorio.sh --print-dir)/target"
  (cd crates/dr-client && cargo fmt -- --check \
    && cargo clippy --release --locked --all-targets --quiet --target-dir "$dr_target" -- -D warnings \
    && cargo test --release --locked --target-dir "$dr_target" 2>&1)
fi
# The QEMU plugin tests need the plugin built in release mode first.
cargo_release -p hpcscope-qemu-plugin
# The plugin for QEMU 10 (plugin API v4) is a separate build: the two API features exclude
# each other. Its tests run where scripts/build-qemu.sh built QEMU 10.
cargo clippy --quiet -p hpcscope-qemu-plugin --all-targets --no-default-features --features api-v4 \
  --target-dir target/plugin-v4 -- -D warnings
build_plugin_v4
cargo test --workspace --no-fail-fast 2>&1
# The tests of the CPU-dependent commands again, as on a CPU without a counter recipe of its
# own (an Intel Xeon VM reporting model 0xa7 with AVX-512 and AMX): a CPU nobody here has
# must not break the suite (crates/counters/tests/data/cpuinfo has the others).
export HPCSCOPE_CPUINFO="$PWD/crates/counters/tests/data/cpuinfo/intel-6-167-amx.txt"
cargo test --no-fail-fast -p hpcscope-counters 2>&1
cargo test --no-fail-fast -p hpcscope --test counters --test peer_formats --test cli 2>&1
unset HPCSCOPE_CPUINFO
# Every parser and decoder under libFuzzer for a few seconds each (fuzz/, scripts/fuzz.sh).
bash scripts/fuzz.sh
