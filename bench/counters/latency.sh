#!/usr/bin/env bash
# FP operation latencies: `hpcscope bench`'s [[peaks.latencies]] (one core, every width this
# CPU has, f64 and f32: add, mul, FMA, divide, square root) converted to core cycles, beside
# the published latency of the same instruction on this CPU's core, as a ratio: add, mul and
# FMA from data/published/fp-latency.toml, divide and square root from the latency_cycles of
# data/published/divider.toml.
#
# Like with like. bench's kernels run one chain of dependent instructions (VEX forms up to
# 256 bits, EVEX at 512: vaddsd/vaddpd/..., vfmadd231sd/..., vdivsd/..., vsqrtsd/...; the
# square root's chain alternates roots and multiplications, the mul chain's latency taken
# off); cycles = ns x scalar_frequency_ghz, the scalar-code clock bench measured and wrote
# into the machine file (frequency_ghz when absent). The published figure is the latency of
# the VEX (EVEX at 512 bits) form, in core cycles. A ratio of 1 means bench's chain runs at
# the table's latency; above 1, bench's chain is slower (a shared or throttled core, or a
# clock measured above the one the kernel ran at). Verdict: agree within 0.9-1.1.
#
# Time on a shared core: bench times its kernels by the thread's CPU time (--cpu-clock) and
# keeps its best repetition (--statistic best).
#
# Usage: bench/counters/latency.sh [HPCSCOPE]   (default: target/release/hpcscope)
#        MACHINE_OUT=FILE keeps the machine file bench wrote.
set -euo pipefail
HPC=${1:-target/release/hpcscope}
here=$(cd "$(dirname "$0")" && pwd)
fp_table=${FP_LATENCY_TABLE:-$here/../../data/published/fp-latency.toml}
div_table=${DIVIDER_TABLE:-$here/../../data/published/divider.toml}
command -v python3 >/dev/null || { echo "skipping: python3 is not installed"; exit 0; }
[ "$(uname -m)" = x86_64 ] || { echo "skipping: the published tables are for x86-64 cores"; exit 0; }
[ -x "$HPC" ] || { echo "build hpcscope first (cargo build --release)"; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

start=$(date +%s.%N)
"$HPC" bench --quick --kernels add,mul,fma,div,sqrt --threads 1 --cpu-clock --statistic best \
  -o "$tmp/machine.toml" >/dev/null 2>"$tmp/bench.err" || { cat "$tmp/bench.err"; exit 1; }
end=$(date +%s.%N)
[ -z "${MACHINE_OUT:-}" ] || cp "$tmp/machine.toml" "$MACHINE_OUT"

python3 - "$tmp/machine.toml" "$fp_table" "$div_table" "$start" "$end" "$here" <<'PY'
import sys, tomllib
sys.dont_write_bytecode = True
sys.path.insert(0, sys.argv[6])
from published import header, row, this_cpu, verdict

machine = tomllib.load(open(sys.argv[1], "rb"))
fp_cpu, div_cpu = this_cpu(sys.argv[2]), this_cpu(sys.argv[3])
elapsed = float(sys.argv[5]) - float(sys.argv[4])
ghz = machine.get("scalar_frequency_ghz") or machine["frequency_ghz"]
header("scalar_frequency_ghz", ghz, elapsed, [fp_cpu, div_cpu])

rows = []
for p in machine["peaks"]:
    for l in p.get("latencies", []):
        rows.append((p["precision"], l["op"], l["vector_bits"], l["ns"], l["ns"] * ghz))
if not rows:
    print("hpcscope bench wrote no [[peaks.latencies]]")
    sys.exit(1)

order = {"add": 0, "mul": 1, "fma": 2, "div": 3, "sqrt": 4}
print(f"{'precision':<9} {'op':<5} {'width':>5} {'ns':>7} {'cycles':>7}  "
      f"{'published form':<26} {'latency':>7} {'ratio':>6}  verdict")
bad = 0
for prec, op, bits, ns, cyc in sorted(rows, key=lambda r: (r[0] != "f64", order[r[1]], r[2])):
    pub = row(div_cpu if op in ("div", "sqrt") else fp_cpu, op, prec, bits)
    if pub:
        ratio = cyc / pub["latency_cycles"]
        ok, word = verdict(ratio, 0.9, 1.1)
        bad += not ok
        print(f"{prec:<9} {op:<5} {bits:>5} {ns:>7.4f} {cyc:>7.2f}  {pub['mnemonic']:<26} "
              f"{pub['latency_cycles']:>7} {ratio:>6.3f}  {word}")
    else:
        print(f"{prec:<9} {op:<5} {bits:>5} {ns:>7.4f} {cyc:>7.2f}  {'(no published figure)':<26}")
print(f"{len(rows)} latencies, {bad} outside 0.9-1.1")
PY
