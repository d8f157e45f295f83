#!/usr/bin/env bash
# Compute ceilings per vector width: likwid-bench's peakflops kernels side by side with
# `hpcscope bench`'s add, mul and FMA peaks, one core, data in L1.
#
# likwid's peakflops kernels interleave multiplications and additions (one load per
# iteration); its *_fma kernels use FMAs. So: peakflops[_sse|_avx|_avx512] is compared with
# the larger of hpcscope's add and mul ceilings at that width, the *_fma kernels with
# hpcscope's FMA ceiling. Verdict: agree when likwid / hpcscope is within 0.85-1.15 (one
# core of a shared machine; both report medians or best runs as each tool does).
#
# Usage: bench/counters/ceilings.sh [HPCSCOPE]   (default: target/release/hpcscope)
set -euo pipefail
HPC=${1:-target/release/hpcscope}
for t in likwid-bench python3; do
  command -v "$t" >/dev/null || { echo "skipping: $t is not installed (scripts/setup.sh installs it)"; exit 0; }
done
[ -x "$HPC" ] || { echo "build hpcscope first (cargo build --release)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
has() { [[ " $flags " == *" $1 "* ]]; }

"$HPC" bench --quick --kernels add,mul,fma --threads 1 --format json -o "$tmp/bench.json" >/dev/null 2>"$tmp/bench.err" \
  || { cat "$tmp/bench.err"; exit 1; }

# kernel, width, hpcscope op(s)
rows=("peakflops scalar add|mul" "peakflops_sse 128 add|mul")
has avx && rows+=("peakflops_avx 256 add|mul")
has fma && has avx && rows+=("peakflops_avx_fma 256 fma")
has avx512f && rows+=("peakflops_avx512 512 add|mul" "peakflops_avx512_fma 512 fma")

for r in "${rows[@]}"; do
  read -r k w ops <<<"$r"
  mf=$(likwid-bench -t "$k" -W N:16kB:1 2>/dev/null | awk '/^MFlops\/s:/ {print $2}' | tail -1)
  echo "$k $w $ops ${mf:-NA}" >>"$tmp/likwid.txt"
done

python3 - "$tmp/bench.json" "$tmp/likwid.txt" <<'PY'
import json, sys
peaks = json.load(open(sys.argv[1]))["peaks"]
def hp(op, w):
    v = [p["gflops"]["median"] for p in peaks if p["op"] == op and p["width"] == w and p["precision"] == "f64"]
    return v[0] if v else None
print(f"{'likwid kernel':<22} {'width':>6} {'likwid GF/s':>12} {'hpcscope GF/s':>14} {'(op)':<10} {'ratio':>7}  verdict")
bad = 0
for line in open(sys.argv[2]):
    k, w, ops, mf = line.split()
    cands = [(hp(o, w), o) for o in ops.split("|")]
    cands = [c for c in cands if c[0] is not None]
    if mf == "NA" or not cands:
        print(f"{k:<22} {w:>6} {'NA':>12} {'NA':>14} {ops:<10} {'-':>7}  not compared (missing on one side)")
        continue
    h, o = max(cands)
    l = float(mf) / 1000.0
    ratio = l / h
    ok = 0.85 <= ratio <= 1.15
    bad += not ok
    print(f"{k:<22} {w:>6} {l:>12.2f} {h:>14.2f} {o:<10} {ratio:>7.3f}  {'agree' if ok else 'DIFFER'}")
print("hpcscope add/mul/FMA ceilings per width (f64, one core): " + ", ".join(
    f"{p['op']}.{p['width']} {p['gflops']['median']:.2f}" for p in peaks if p["precision"] == "f64"))
sys.exit(1 if bad else 0)
PY
