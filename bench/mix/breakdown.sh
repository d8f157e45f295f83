#!/bin/sh
# Where the time of `hpcscope mix` goes on real programs, beside its references in one run.
#
#   bench/mix/breakdown.sh [OUTDIR]   (env: RUNS=3 WORKLOADS="cg edge montecarlo smallfn"
#                                      HPCSCOPE=path/to/hpcscope PLUGIN=path/to/plugin.so
#                                      HPCSCOPE_BEFORE=path/to/an/older/hpcscope)
#
# Workloads (x86-64, SSE2): the bundled CG (workloads/src/cg.c, 400,000 rows, 10 iterations),
# edge loop (edge.c, 500,000 nodes, 10 repetitions), Monte-Carlo transport (montecarlo.c,
# 200,000 particles) built with gcc -O3 -march=x86-64, and bench/mix/smallfn.cpp (a C++ code
# of many small functions and virtual calls, 50,000 cells, 20 steps) built with g++ -O2.
#
# Part 1, times (hyperfine, RUNS runs each, one hyperfine run per workload so the cases
# share the machine's load): native | bare qemu-x86_64 | QEMU with the plugin counting
# (mem=off) | the plugin's access stream written to /dev/null (mem=on, coalesce=64: the
# producer's whole cost, no reader) | `hpcscope mix` simulating two 3-level hierarchies
# (cascadelake-8260, graviton2; --native-runs 0) | valgrind --tool=cachegrind --cache-sim=yes.
# When QEMU 10 with plugins is built (scripts/build-qemu.sh; the API v4 plugin is built here),
# the same three QEMU cases on it too, and, when it carries hpcscope's patch, the stream
# written by QEMU's translated code (meminline=on) beside the callback per access. Ratios of wall and CPU time (user + system, all
# processes) to bare QEMU and cachegrind, and the producer's floor on each QEMU: counting
# alone and every access streamed to /dev/null, against bare QEMU of the same version.
# With HPCSCOPE_BEFORE, the same mix run with that binary (and its plugin, found beside it)
# is timed in the same hyperfine run and the ratio printed (an A/B of two builds).
#
# Part 2, a CPU profile of one `hpcscope mix` run per workload (perf record -e cpu-clock,
# QEMU included): CPU seconds of the emulation thread (QEMU's translator and helpers, the
# translated code, the plugin's callbacks and its copy into the shared ring, the kernel's
# stream notices) and of the stream reader (reading the stream, splitting it into threads,
# the cache simulation), and the time QEMU waited: wall time minus QEMU's CPU time (on
# 2 CPUs QEMU waits when the reader falls behind and every slot of the ring is taken).
#
# Needs gcc, g++, qemu-user, valgrind, hyperfine, perf, python3 and a release build of
# hpcscope and the plugin (built here unless HPCSCOPE and PLUGIN are given).
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix-breakdown"}
runs=${RUNS:-3}
workloads=${WORKLOADS:-"cg edge montecarlo smallfn"}
mkdir -p "$out"
. "$here/lib.sh"
need_tools gcc g++ qemu-x86_64 valgrind hyperfine perf python3 -- gcc g++ qemu-user valgrind hyperfine linux-perf python3
mix_binaries
if [ -n "${HPCSCOPE_BEFORE:-}" ]; then
  [ -x "$HPCSCOPE_BEFORE" ] || { echo "HPCSCOPE_BEFORE=$HPCSCOPE_BEFORE is not an executable" >&2; exit 2; }
  plugin_before=$(dirname "$HPCSCOPE_BEFORE")/libhpcscope_qemu_plugin.so
  [ -f "$plugin_before" ] || { echo "no plugin beside $HPCSCOPE_BEFORE ($plugin_before)" >&2; exit 2; }
fi

mix_qemu10
MIX_CFLAGS_EXTRA=-fno-omit-frame-pointer mix_build "$out" $workloads

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPUs: $(nproc)"
for w in $workloads; do
  bin="$out/$w"
  a=$(args_of "$w")
  mixcmd="$hs mix -m cascadelake-8260 -m graviton2 --native-runs 0 -- $bin $a"
  set -- -n native "$bin $a" \
    -n qemu "qemu-x86_64 $bin $a" \
    -n "plugin, counts" "qemu-x86_64 -plugin $plugin,out=$out/$w.counts.json $bin $a" \
    -n "plugin, stream to /dev/null" "qemu-x86_64 -plugin $plugin,out=$out/$w.counts.json,mem=on,memout=/dev/null,coalesce=64 $bin $a" \
    -n "mix" "env HPCSCOPE_QEMU_PLUGIN=$plugin $mixcmd" \
    -n cachegrind "valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null $bin $a"
  if [ -n "$q10" ]; then
    set -- "$@" -n "qemu 10" "$q10 $bin $a" \
      -n "qemu 10, plugin counts" "$q10 -plugin $plugin4,out=$out/$w.counts4.json $bin $a" \
      -n "qemu 10, stream to /dev/null" "$q10 -plugin $plugin4,out=$out/$w.counts4.json,mem=on,memout=/dev/null,coalesce=64,meminline=off $bin $a"
    # QEMU 10 as build-qemu.sh patches it writes the records from translated code.
    if grep -q qemu_plugin_register_vcpu_mem_record_per_vcpu "$q10"; then
      set -- "$@" -n "qemu 10, inline stream to /dev/null" "$q10 -plugin $plugin4,out=$out/$w.counts4.json,mem=on,memout=/dev/null,coalesce=64,meminline=on $bin $a"
    fi
  fi
  if [ -n "${HPCSCOPE_BEFORE:-}" ]; then
    set -- "$@" -n "mix, before" "env HPCSCOPE_QEMU_PLUGIN=$plugin_before $HPCSCOPE_BEFORE mix -m cascadelake-8260 -m graviton2 --native-runs 0 -- $bin $a"
  fi
  hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/$w.times.json" "$@" >/dev/null 2>&1 || {
    echo "$w: hyperfine failed; rerun with --show-output to see why" >&2
    exit 1
  }
  # One profiled mix run (perf follows QEMU, a child of hpcscope).
  perf record -q -e cpu-clock -F 1999 -o "$out/$w.perf.data" -- \
    env HPCSCOPE_QEMU_PLUGIN="$plugin" /usr/bin/time -f '%e' -o "$out/$w.wall" \
    $mixcmd >/dev/null 2>"$out/$w.perf.stderr"
  perf script -i "$out/$w.perf.data" -F comm,tid,ip,sym,dso 2>/dev/null >"$out/$w.perf.txt"
  rm -f "$out/$w.perf.data"
  python3 - "$w" "$out/$w.times.json" "$out/$w.perf.txt" "$out/$w.wall" 1999 <<'PY'
import json, re, sys
from collections import Counter
name, times, script, wall_file, hz = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
r = {x["command"]: x for x in json.load(open(times))["results"]}
cpu = lambda x: x["user"] + x["system"]
q, c = r["qemu"], r["cachegrind"]
print(f"\n== {name}: times, mean of the runs (wall s, CPU s, ratios)")
for k, x in r.items():
    print(f"  {k:28s} wall {x['mean']:7.3f}  x{x['mean']/q['mean']:5.2f} qemu  x{x['mean']/c['mean']:5.2f} cachegrind"
          f"   cpu {cpu(x):7.3f}  x{cpu(x)/cpu(q):5.2f} qemu  x{cpu(x)/cpu(c):5.2f} cachegrind")
# The producer's floor: what QEMU costs with the plugin's memory callbacks and no reader,
# against the bounds of the acceptance (full mix at most 1.3x bare QEMU, sampled at most
# 1.1x): a mix that streams every access cannot be cheaper than its producer.
for base, counts, stream in (("qemu", "plugin, counts", "plugin, stream to /dev/null"),
                             ("qemu 10", "qemu 10, plugin counts", "qemu 10, stream to /dev/null")):
    if base in r and stream in r:
        b = r[base]
        inline = r.get("qemu 10, inline stream to /dev/null") if base == "qemu 10" else None
        extra = f", written by QEMU's code x{cpu(inline)/cpu(b):.2f}" if inline else ""
        print(f"  floor on {base:8s}: plugin counting cpu x{cpu(r[counts])/cpu(b):.2f}, "
              f"every access streamed cpu x{cpu(r[stream])/cpu(b):.2f} of bare{extra} "
              f"(bounds: 1.1x sampled, 1.3x full)")
if "mix, before" in r:
    m, b = r["mix"], r["mix, before"]
    print(f"  mix / mix before: wall x{m['mean']/b['mean']:.3f}, cpu x{cpu(m)/cpu(b):.3f}")

# Buckets of the profiled run. QEMU's process: translated guest code (no symbol), QEMU
# itself (translator, helpers, softmmu lookups), the plugin's callbacks, its copies into
# the ring (libc memmove), the kernel (stream notices; the whole stream with
# HPCSCOPE_MIX_STREAM=pipe). hpcscope's reader thread: the cache simulation, the stream's
# reading and splitting (hpcscope-mix), the kernel (notices and slot returns), the rest.
buckets = Counter()
line = re.compile(r"^\s*(\S+)\s+(\d+)\s+[0-9a-f]+\s+(.*?)\s*\(([^()]*)\)\s*$")
for l in open(script):
    m = line.match(l)
    if not m:
        continue
    comm, tid, sym, dso = m.groups()
    kernel = "kernel" in dso or dso.startswith("[") and dso != "[unknown]"
    # The plugin's snapshot thread runs in QEMU's process.
    if comm.startswith("qemu") or comm.startswith("hpcscope-snap"):
        if "hpcscope_qemu_plugin" in dso:
            b = "qemu: plugin callbacks"
        elif kernel:
            b = "qemu: kernel (stream notices, syscalls)"
        elif "qemu" in dso:
            b = "qemu: translator and helpers"
        elif dso == "[unknown]" or "JIT" in dso or "perf-" in dso:
            b = "qemu: translated guest code"
        elif "memmove" in sym or "memcpy" in sym:
            b = "qemu: plugin copy into the ring (memmove)"
        else:
            b = "qemu: libraries (" + dso.rsplit("/", 1)[-1] + ")"
    elif comm.startswith("hpcscope") or comm == "hpcscope":
        if kernel:
            b = "reader: kernel (stream notices, syscalls)"
        elif "cachesim" in sym:
            b = "reader: cache simulation"
        elif "hpcscope_mix" in sym:
            b = "reader: stream reading, thread split"
        elif "memcpy" in sym or "memmove" in sym:
            b = "reader: copies (memcpy)"
        else:
            b = "reader: other (" + (sym.split("::")[0][:40] or dso) + ")"
    else:
        b = "other processes (" + comm + ")"
    buckets[b] += 1
wall = float(open(wall_file).read().split()[-1])
qemu_cpu = sum(v for k, v in buckets.items() if k.startswith("qemu")) / hz
reader_cpu = sum(v for k, v in buckets.items() if k.startswith("reader")) / hz
print(f"== {name}: profile of one mix run (perf, cpu-clock at {hz} Hz): wall {wall:.2f} s")
print(f"  QEMU CPU {qemu_cpu:.2f} s, reader CPU {reader_cpu:.2f} s, QEMU waiting (wall - QEMU CPU) {max(wall - qemu_cpu, 0):.2f} s")
total = sum(buckets.values())
for k, v in sorted(buckets.items(), key=lambda kv: -kv[1]):
    if v / total >= 0.005:
        print(f"  {k:48s} {v/hz:6.2f} s  {100*v/total:5.1f} %")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
