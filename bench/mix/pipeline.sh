#!/bin/sh
# The whole `hpcscope mix` pipeline against its references, side by side in one run, on one
# x86-64 binary built without AVX (triad + 2D stencil, gcc -O3 -march=x86-64):
#   native | bare qemu-x86_64 | hpcscope mix simulating two 3-level hierarchies
#   (cascadelake-8260 and graviton2) | valgrind --tool=cachegrind --cache-sim=yes
#   (cachegrind simulates one 2-level hierarchy).
#
#   bench/mix/pipeline.sh [OUTDIR]     (env: N=1000 REPS=10 RUNS=5 PLUGIN_BEFORE=)
#
# Needs gcc, qemu-user, valgrind, hyperfine, python3 and a release build of hpcscope and the
# plugin. Prints each mean as a ratio to bare qemu and to cachegrind (targets: mix <= 2.5x
# bare qemu and <= 1.5x cachegrind). With PLUGIN_BEFORE=path/to/an/older/plugin.so, the same
# mix run with that plugin is timed in the same hyperfine run, and the ratio of the two
# printed (the cost of a plugin change, under the same load).
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix"}
n=${N:-1000}
reps=${REPS:-10}
runs=${RUNS:-5}
mkdir -p "$out"
need_tools gcc qemu-x86_64 valgrind hyperfine python3 -- gcc qemu-user valgrind hyperfine python3
cargo_release -p hpcscope -p hpcscope-qemu-plugin
hs="$root/target/release/hpcscope"
bin="$out/triad_stencil"
gcc -O3 -march=x86-64 -std=c11 -D_POSIX_C_SOURCE=200809L -o "$bin" "$root/workloads/src/triad_stencil.c"
mixcmd="$hs mix -m cascadelake-8260 -m graviton2 --native-runs 0 -- $bin $n $reps"
set -- -n native "$bin $n $reps" \
  -n qemu "qemu-x86_64 $bin $n $reps" \
  -n "hpcscope mix (2 x 3 levels)" "$mixcmd" \
  -n "cachegrind (1 x 2 levels)" "valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null $bin $n $reps"
if [ -n "${PLUGIN_BEFORE:-}" ]; then
  [ -f "$PLUGIN_BEFORE" ] || { echo "PLUGIN_BEFORE=$PLUGIN_BEFORE is not a file" >&2; exit 2; }
  set -- "$@" -n "hpcscope mix, plugin before" "env HPCSCOPE_QEMU_PLUGIN=$PLUGIN_BEFORE $mixcmd"
fi
hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/pipeline.json" "$@" >/dev/null
python3 - "$out/pipeline.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
q = r["qemu"]["mean"]; c = r["cachegrind (1 x 2 levels)"]["mean"]
for name, x in r.items():
    print(f"{name:30s} {x['mean']:8.3f} s  x{x['mean']/q:5.2f} bare qemu  x{x['mean']/c:5.2f} cachegrind")
b = r.get("hpcscope mix, plugin before")
if b:
    m = r["hpcscope mix (2 x 3 levels)"]
    cpu = lambda x: x["user"] + x["system"]
    print(f"mix with this plugin / with the plugin before: wall x{m['mean']/b['mean']:.3f}, cpu x{cpu(m)/cpu(b):.3f}")
PY
