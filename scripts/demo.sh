#!/usr/bin/env bash
# The main job on the bundled workloads: set up the machine, build hpcscope and its QEMU
# plugin, and run `hpcscope demo`, which measures this machine once (cached), builds the
# reference workloads for SSE2, AVX2, NEON and SVE, analyses and projects them, checks the
# projections against measurements, and writes out/demo/report.html.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
cd "$root"
bash scripts/setup.sh
cargo_release -p hpcscope -p hpcscope-qemu-plugin
# The plugin for QEMU 10 (API v4), used when setup.sh built QEMU 10: exact SVE counts.
build_plugin_v4
exec target/release/hpcscope demo -o out/demo "$@"
