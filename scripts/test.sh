#!/usr/bin/env bash
# Sets up the machine and runs every gate CI runs: format, lints, then the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
# The QEMU plugin tests need the plugin built in release mode first.
cargo build --release --quiet -p hpcscope-qemu-plugin
cargo test --workspace --no-fail-fast 2>&1
# Every parser and decoder under libFuzzer for a few seconds each (fuzz/, scripts/fuzz.sh).
bash scripts/fuzz.sh
