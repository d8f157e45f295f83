#!/usr/bin/env bash
# Reference check of `hpcscope model dt` (seed 003's data-throughput kernel) against
# likwid-bench's STREAM triad, on one core, in the same run.
#
# Prints, per round, the DT kernel's compulsory memory traffic (GB/s: `gbs`, about 48 B per edge) and likwid-bench's
# `stream` triad (scalar, A = B*c + C, 24 B per element), their ratio, and the verdict
# against the thesis (Owenson 2020, section 5.5.1: the DT kernel reaches 52 to 62 % of
# STREAM on Xeons; an indirect edge loop below STREAM and above a quarter of it is
# plausible anywhere, outside that range the kernel or the byte count is suspect).
# Also prints the clock the DT measurement used beside /proc/cpuinfo's MHz (nominal only:
# no tool here reads core cycles without a PMU).
#
# Needs likwid-bench (Debian package `likwid`), jq, and an optimized hpcscope: set
# HPCSCOPE (default: `hpcscope` on PATH, else `cargo run --release -q -p hpcscope --`).
# The DT kernel is plain Rust: a debug build measures the compiler, not the memory.
#
# Environment: ROUNDS (default 3), MIB (per-thread mesh copy, default 256), CPU (default 0).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
ROUNDS="${ROUNDS:-3}"; MIB="${MIB:-256}"; CPU="${CPU:-0}"
if [ -n "${HPCSCOPE:-}" ]; then hs=($HPCSCOPE)
elif command -v hpcscope >/dev/null; then hs=(hpcscope)
else hs=(cargo run --release -q --manifest-path "$root/Cargo.toml" -p hpcscope --); fi
command -v likwid-bench >/dev/null || { echo "skipping: likwid-bench not found"; exit 0; }
command -v jq >/dev/null || { echo "skipping: jq not found"; exit 0; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
printf '%-6s %12s %14s %8s %10s %s\n' round dt_gbs stream_gbs ratio clock_ghz verdict
for r in $(seq 1 "$ROUNDS"); do
  taskset -c "$CPU" "${hs[@]}" model dt --threads 1 --dt-mib "$MIB" --reps 5 --format json -o "$tmp/dt.json"
  dt=$(jq '.points[0].gbs' "$tmp/dt.json")
  clk=$(jq '.points[0].clock_ghz' "$tmp/dt.json")
  st=$(likwid-bench -t stream -w "S0:$((3 * MIB))MB:1" 2>/dev/null | awk '/^MByte\/s:/ {print $2 / 1000}')
  ratio=$(awk -v a="$dt" -v b="$st" 'BEGIN {printf "%.3f", a / b}')
  verdict=$(awk -v x="$ratio" 'BEGIN {print (x >= 0.25 && x <= 1.0) ? "plausible" : "SUSPECT"}')
  printf '%-6s %12.3f %14.3f %8s %10.3f %s\n' "$r" "$dt" "$st" "$ratio" "$clk" "$verdict"
done
echo "thesis (Xeons): DT = 52 to 62 % of STREAM; /proc/cpuinfo: $(awk -F: '/cpu MHz/ {print $2; exit}' /proc/cpuinfo) MHz (nominal)"
