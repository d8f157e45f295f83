#!/bin/sh
# The projection against measurement and against the Kwack et al. baseline, side by side in
# each run: `hpcscope validate` (84 pairs of builds of the bundled workloads: vector width,
# compiler, optimization level) run RUNS times in a row on one machine file, then every run's
# figures for the weighted method (interval, point estimate) and for the Kwack baseline, on
# all pairs and on the pairs the calibration was not fitted on, with the verdict against the
# targets: >= 90 % inside, median width <= 1.5, median point error <= 5 %.
#
#   bench/projection/validate.sh [OUTDIR]     (env: RUNS=3 MACHINE=machine.toml)
#
# Without MACHINE, measures one first (hpcscope bench --cpu-clock --statistic best --kernels
# triad). Needs gcc, clang, qemu-user, python3 and a release build of hpcscope and the plugin
# (cargo build --release -p hpcscope -p hpcscope-qemu-plugin). Note the load average it
# prints: the runs' spread widens the intervals.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-projection"}
runs=${RUNS:-3}
bin="$root/target/release/hpcscope"
mkdir -p "$out"

need_tools gcc clang qemu-x86_64 python3 -- gcc clang qemu-user python3
[ -x "$bin" ] || {
  echo "missing $bin (cargo build --release -p hpcscope -p hpcscope-qemu-plugin)" >&2
  exit 3
}
export HPCSCOPE_QEMU_PLUGIN=${HPCSCOPE_QEMU_PLUGIN:-"$root/target/release/libhpcscope_qemu_plugin.so"}

machine=${MACHINE:-}
if [ -z "$machine" ]; then
  machine="$out/machine.toml"
  "$bin" bench --cpu-clock --statistic best --kernels triad -o "$machine"
fi

i=1
while [ "$i" -le "$runs" ]; do
  echo "run $i: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$bin" validate -m "$machine" -o "$out/run$i" >"$out/run$i.txt"
  i=$((i + 1))
done

python3 - "$out" "$runs" <<'PY'
import json, sys
out, runs = sys.argv[1], int(sys.argv[2])
print("| run | pairs | weighted: inside | median width | median point error | max point error "
      "| Kwack: inside | median error | max error | verdict |")
print("|---|---|---|---|---|---|---|---|---|---|")
for r in range(1, runs + 1):
    v = json.load(open(f"{out}/run{r}/validation.json"))
    for subset in ("all", "held_out"):
        s = v["summary"].get(subset)
        if not s:
            continue
        w, k = s["weighted"], s["kwack"]
        ok = (w["inside_fraction"] >= 0.9, w["median_width"] <= 1.5,
              w["median_point_error"] <= 0.05)
        names = ("inside", "width", "point error")
        verdict = "meets all" if all(ok) else "misses " + ", ".join(
            n for n, o in zip(names, ok) if not o)
        print(f"| {r} {subset} | {w['pairs']} | {w['inside_fraction']:.1%} | "
              f"{w['median_width']:.2f} | {w['median_point_error']:.1%} | "
              f"{w['max_point_error']:.1%} | {k['inside_fraction']:.1%} | "
              f"{k['median_point_error']:.1%} | {k['max_point_error']:.1%} | {verdict} |")
    lb, la = v.get("load_average_before"), v.get("load_average_after")
    print(f"|   load {lb} -> {la} | | | | | | | | | |")

# Where each build's bytes went by access width (last run): the split the ceilings are
# taken at, counted by mix from each load's and store's memory operand.
v = json.load(open(f"{out}/run{runs}/validation.json"))
builds = v.get("builds") or v.get("protocol", {}).get("builds") or []
if builds:
    print()
    print("| workload | build | bytes by access width | FP instructions by width | from |")
    print("|---|---|---|---|---|")
    for b in builds:
        parts = sorted(b["widths"]["parts"], key=lambda p: -p["fraction"])
        by = ", ".join(f"{p['vector_bits']}-bit {p['fraction']:.1%}" for p in parts
                       if p["fraction"] > 0)
        fp = ", ".join(f"{p['vector_bits']}-bit {p['instructions']:.1%}" for p in parts
                       if p["instructions"] > 0)
        print(f"| {b['group']} | {b['label']} | {by} | {fp or '-'} | {b['widths']['from']} |")
PY
