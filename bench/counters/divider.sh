#!/usr/bin/env bash
# Divide and square-root throughput: `hpcscope bench`'s div and sqrt ceilings (one core,
# every width this CPU has, f64 and f32) converted to cycles per instruction, beside the
# published reciprocal throughput of the same instruction on this CPU's core
# (data/published/divider.toml), as a ratio.
#
# Like with like. bench's kernels run 12 independent chains of `acc = c1 / acc` (divide)
# and 12 independent square roots of a constant (sqrt), VEX forms up to 256 bits and EVEX
# at 512 (vdivsd/vdivpd/vdivss/vdivps, vsqrtsd/...); the ceiling is FLOP/s with 1 FLOP per
# lane, so cycles per instruction = lanes x frequency_ghz / core_gflops, frequency_ghz being
# the clock bench measured and wrote into the machine file. The published figure is the
# reciprocal throughput of the VEX (EVEX at 512 bits) form, in core cycles; its latency is
# printed for reference. A ratio of 1 means bench's kernel keeps the divider as busy as the
# table says it can be; above 1, bench's kernel is slower (a shared or throttled core, or a
# clock measured above the one the kernel ran at). Verdict: agree within 0.85-1.15.
#
# Time on a shared core: bench times its kernels by the thread's CPU time (--cpu-clock) and
# keeps its best repetition (--statistic best).
#
# Usage: bench/counters/divider.sh [HPCSCOPE]   (default: target/release/hpcscope)
#        MACHINE_OUT=FILE keeps the machine file bench wrote.
set -euo pipefail
HPC=${1:-target/release/hpcscope}
here=$(cd "$(dirname "$0")" && pwd)
table=${DIVIDER_TABLE:-$here/../../data/published/divider.toml}
command -v python3 >/dev/null || { echo "skipping: python3 is not installed"; exit 0; }
[ "$(uname -m)" = x86_64 ] || { echo "skipping: the published table is for x86-64 cores"; exit 0; }
[ -x "$HPC" ] || { echo "build hpcscope first (cargo build --release)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

start=$(date +%s.%N)
"$HPC" bench --kernels div,sqrt --threads 1 --cpu-clock --statistic best -o "$tmp/machine.toml" >/dev/null 2>"$tmp/bench.err" \
  || { cat "$tmp/bench.err"; exit 1; }
end=$(date +%s.%N)
[ -z "${MACHINE_OUT:-}" ] || cp "$tmp/machine.toml" "$MACHINE_OUT"

python3 - "$tmp/machine.toml" "$table" "$start" "$end" "$here" <<'PY'
import sys, tomllib
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[5])
from published import header, row, this_cpu, verdict

machine = tomllib.load(open(sys.argv[1], "rb"))
cpu = this_cpu(sys.argv[2])
elapsed = float(sys.argv[4]) - float(sys.argv[3])
ghz = machine["frequency_ghz"]
header("frequency_ghz", ghz, elapsed, [cpu])

rows = []
for p in machine["peaks"]:
    elem = 64 if p["precision"] == "f64" else 32
    for c in p.get("ceilings", []):
        if c["op"] not in ("div", "sqrt") or "core_gflops" not in c:
            continue
        bits = c["vector_bits"]
        lanes = max(bits // elem, 1)
        cpi = lanes * ghz / c["core_gflops"]
        rows.append((p["precision"], c["op"], bits, lanes, c["core_gflops"], cpi))
if not rows:
    print("hpcscope bench wrote no div or sqrt ceiling")
    sys.exit(1)

hdr = (f"{'precision':<9} {'op':<5} {'width':>5} {'lanes':>5} {'GFLOP/s':>8} {'cyc/instr':>9}  "
       f"{'published form':<22} {'recip. thr.':>11} {'latency':>7} {'ratio':>6}  verdict")
print(hdr)
bad = 0
for prec, op, bits, lanes, g, cpi in sorted(rows, key=lambda r: (r[0] != "f64", r[1], r[2])):
    pub = row(cpu, op, prec, bits)
    if pub:
        ratio = cpi / pub["reciprocal_throughput_cycles"]
        ok, word = verdict(ratio, 0.85, 1.15)
        bad += not ok
        print(f"{prec:<9} {op:<5} {bits:>5} {lanes:>5} {g:>8.3f} {cpi:>9.2f}  {pub['mnemonic']:<22} "
              f"{pub['reciprocal_throughput_cycles']:>11} {pub['latency_cycles']:>7} {ratio:>6.3f}  {word}")
    else:
        print(f"{prec:<9} {op:<5} {bits:>5} {lanes:>5} {g:>8.3f} {cpi:>9.2f}  {'(no published figure)':<22}")
print(f"{len(rows)} ceilings, {bad} outside 0.85-1.15")
PY
