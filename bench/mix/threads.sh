#!/bin/sh
# Cost of a multi-threaded program under `hpcscope mix`: the same OpenMP triad (the same
# total work, workloads/src/triad_omp.c, gcc -O3 -fopenmp -march=x86-64) with 1 and 2
# threads, natively, under bare qemu-x86_64, and under hpcscope mix simulating two 3-level
# hierarchies. With one thread the plugin counts with inline adds; with two it counts per
# thread with an execution callback per block (exact, where inline adds lost counts).
#
#   bench/mix/threads.sh [OUTDIR]     (env: N=2000000 REPS=20 RUNS=5)
#
# Needs gcc with OpenMP, qemu-user, hyperfine, python3 and a release build of hpcscope and
# the plugin. Prints each case's mean wall and CPU time and the 2-thread / 1-thread ratios
# (target for mix: 2 threads cost at most 1.3x one thread).
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix"}
n=${N:-2000000}
reps=${REPS:-20}
runs=${RUNS:-5}
mkdir -p "$out"
need_tools gcc qemu-x86_64 hyperfine python3 -- gcc qemu-user hyperfine python3
cargo_release -p hpcscope -p hpcscope-qemu-plugin
hs="$root/target/release/hpcscope"
bin="$out/triad_omp"
gcc -O3 -march=x86-64 -fopenmp -std=c11 -D_POSIX_C_SOURCE=200809L -o "$bin" "$root/workloads/src/triad_omp.c"
# Waiting threads sleep rather than spin (spinning under emulation only burns the CPU the
# other thread needs).
export OMP_WAIT_POLICY=passive
set --
for t in 1 2; do
  set -- "$@" \
    -n "native, $t thread(s)" "env OMP_NUM_THREADS=$t $bin $n $reps" \
    -n "qemu, $t thread(s)" "env OMP_NUM_THREADS=$t qemu-x86_64 $bin $n $reps" \
    -n "mix, $t thread(s)" "env OMP_NUM_THREADS=$t $hs mix -m cascadelake-8260 -m graviton2 --native-runs 0 -- $bin $n $reps"
done
hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/threads.json" "$@" >/dev/null
python3 - "$out/threads.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
cpu = lambda x: x["user"] + x["system"]
for name, x in r.items():
    print(f"{name:26s} wall {x['mean']:7.3f} s   cpu {cpu(x):7.3f} s")
for case in ["native", "qemu", "mix"]:
    a, b = r[f"{case}, 1 thread(s)"], r[f"{case}, 2 thread(s)"]
    print(f"{case:8s} 2 threads / 1 thread: wall x{b['mean']/a['mean']:.2f}, cpu x{cpu(b)/cpu(a):.2f}")
PY
