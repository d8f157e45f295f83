#!/bin/sh
# Native end-to-end check of the difference model (seed 003's pipeline) on this machine:
# builds the reference kernels at three x86-64 ISA levels, with default flags and with
# -funroll-loops, extracts and classifies each kernel's main loop, times the kernels, converts
# time to cycles per iteration at a clock measured with a dependent add chain, fits the CPIs
# leaving one kernel out and predicts that kernel with the difference model (eqs. 5.8-5.11).
#
#   bench/models/e2e.sh [OUTDIR]
#
# OUTDIR (default: a new temporary directory) receives e2e.csv (every prediction) and e2e.log
# (measurements, fits and the error summary). HPCSCOPE_PORTS selects the port model
# (default sapphirerapids); HPCSCOPE_FIT_SCOPE=all pools the ISA levels in one CPI fit.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-$(mktemp -d)}
mkdir -p "$out"
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
kernels="triad daxpy dot stencil gemm spmv edge"
mkdir -p "$build/default" "$build/unroll"
# Only the x86-64 variants are used; aarch64 ones (if a cross compiler exists) are ignored.
sh "$root/workloads/build.sh" "$build/default" $kernels >/dev/null
EXTRA_CFLAGS=-funroll-loops sh "$root/workloads/build.sh" "$build/unroll" $kernels >/dev/null
cargo_release -p hpcscope-models --example e2e
"$root/target/release/examples/e2e" "$build/default" "$build/unroll" >"$out/e2e.csv" 2>"$out/e2e.log"
grep -E '^(clock|difference|equal|port)' "$out/e2e.log"
echo "results in $out"
