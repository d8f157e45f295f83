#!/bin/sh
# Overhead of characterizing a binary by emulation, on one x86-64 binary (triad + 2D
# stencil, gcc -O3 -march=x86-64):
#   native | bare qemu-x86_64 | qemu + plugin counting (mem=off)
#   | qemu + plugin streaming accesses to /dev/null | ... to a pipe read by another process
#   | valgrind --tool=cachegrind --cache-sim=yes
#
#   bench/mix/overhead.sh [OUTDIR]      (env: N=1000 REPS=10 RUNS=5 PLUGIN=path/to/.so)
#
# Needs gcc, qemu-user, valgrind, hyperfine and python3. Writes OUTDIR/overhead.json and
# OUTDIR/overhead.md (hyperfine exports) and prints each mean time as a ratio to bare qemu
# and to cachegrind. The "pipe" case is the shape of the full pipeline: the reader there
# only drains the stream; the cache simulator of the `mix` crate takes its place.
set -eu

. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix"}
n=${N:-1000}
reps=${REPS:-10}
runs=${RUNS:-5}
mkdir -p "$out"

need_tools gcc qemu-x86_64 valgrind hyperfine python3 -- gcc qemu-user valgrind hyperfine python3

plugin=${PLUGIN:-}
if [ -z "$plugin" ]; then
  (cd "$root" && cargo build --release -p hpcscope-qemu-plugin)
  plugin="$root/target/release/libhpcscope_qemu_plugin.so"
fi

bin="$out/triad_stencil"
gcc -O3 -march=x86-64 -std=c11 -D_POSIX_C_SOURCE=200809L -o "$bin" \
  "$root/workloads/src/triad_stencil.c"

q="qemu-x86_64 -plugin $plugin"
hyperfine --warmup 1 --runs "$runs" -N \
  --export-json "$out/overhead.json" --export-markdown "$out/overhead.md" \
  -n native "$bin $n $reps" \
  -n qemu "qemu-x86_64 $bin $n $reps" \
  -n plugin-count "$q,out=/dev/null $bin $n $reps" \
  -n plugin-mem-devnull "$q,out=/dev/null,mem=on,memout=/dev/null $bin $n $reps" \
  -n cachegrind "valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null $bin $n $reps"
# A pipe needs a shell; hyperfine subtracts its start-up time.
hyperfine --warmup 1 --runs "$runs" \
  --export-json "$out/overhead-pipe.json" \
  -n plugin-mem-pipe "$q,out=/dev/null,mem=on,memfd=3 $bin $n $reps 3>&1 >/dev/null | cat >/dev/null"

python3 - "$out/overhead.json" "$out/overhead-pipe.json" <<'EOF'
import json, sys
wall, cpu = {}, {}
for f in sys.argv[1:]:
    for r in json.load(open(f))["results"]:
        wall[r["command"]] = r["mean"]
        cpu[r["command"]] = r["user"] + r["system"]
print("wall = mean elapsed time; cpu = user + system of all processes (the pipe reader too)")
print(f"{'case':<20}{'wall s':>8}{'x qemu':>8}{'x cachegrind':>13}{'cpu s':>8}{'x qemu':>8}{'x cachegrind':>13}")
for name in wall:
    w, c = wall[name], cpu[name]
    print(f"{name:<20}{w:>8.3f}{w / wall['qemu']:>8.2f}{w / wall['cachegrind']:>13.2f}"
          f"{c:>8.3f}{c / cpu['qemu']:>8.2f}{c / cpu['cachegrind']:>13.2f}")
EOF
