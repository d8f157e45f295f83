#!/bin/sh
# `hpcscope mix`, full and sampled, beside native, bare QEMU and cachegrind, in one run per
# workload, with a verdict per acceptance criterion of the mix speed target.
#
#   bench/mix/compare.sh [OUTDIR]   (env: RUNS=3 WORKLOADS="cg edge montecarlo triad_stencil"
#                                    SAMPLE=8 HPCSCOPE=path/to/hpcscope PLUGIN=path/to/plugin.so
#                                    ANALYZE=1 to time `hpcscope analyze` too,
#                                    ON_QEMU10=1 to run on QEMU 10 from scripts/build-qemu.sh)
#
# Workloads (x86-64, SSE2, gcc -O3 -march=x86-64): the bundled CG (workloads/src/cg.c,
# 400,000 rows, 10 iterations), edge loop (edge.c, 500,000 nodes, 10 repetitions),
# Monte-Carlo transport (montecarlo.c, 200,000 particles) and the triad+stencil kernel
# (triad_stencil.c, 1000, 10 repetitions).
#
# Per workload, one hyperfine run (RUNS runs each, so the cases share the machine's load):
# native | bare qemu-x86_64 | valgrind --tool=cachegrind --cache-sim=yes (one 2-level
# hierarchy) | `hpcscope mix -m cascadelake-8260 -m graviton2 --native-runs 0` (two 3-level
# hierarchies, every access) | the same with `--sample $SAMPLE`. Wall and CPU ratios (user +
# system, all processes) to bare QEMU and to cachegrind. Then one full and one sampled mix
# run with --format json: per machine and level, the local hit ratio of each, the sampled
# one's 95 % interval, its error against the full run (percentage points) and whether the
# interval holds the full run's value, and whether
# the FLOPs are equal. With ANALYZE=1, one `hpcscope analyze` run per workload against the
# native time (its own native runs are not overlapped by anything else of this script).
#
# With ON_QEMU10=1, bare QEMU and every mix run are QEMU 10 as scripts/build-qemu.sh builds it
# (with the API v4 plugin, built here); when that QEMU writes the stream's records from its
# translated code (hpcscope's patch), the full mix with a callback per access instead
# (HPCSCOPE_MEMINLINE=off) joins the same hyperfine run, an A/B of the two producers.
#
# Verdicts (the criteria of the mix speed target): full mix at most 1.0x cachegrind and
# 1.3x bare QEMU (wall); sampled at most 1.1x bare QEMU (wall), hit ratios within 1
# percentage point of the full run at every level, FLOPs exact; analyze at most 50x native.
#
# Needs gcc, qemu-user, valgrind, hyperfine, python3 and a release build of hpcscope and
# the plugin (built here unless HPCSCOPE and PLUGIN are given).
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix-compare"}
runs=${RUNS:-3}
sample=${SAMPLE:-8}
workloads=${WORKLOADS:-"cg edge montecarlo triad_stencil"}
mkdir -p "$out"
. "$here/lib.sh"
need_tools gcc qemu-x86_64 valgrind hyperfine python3 -- gcc qemu-user valgrind hyperfine python3
mix_binaries
mix_build "$out" $workloads

qemu=qemu-x86_64
mixenv="HPCSCOPE_QEMU_PLUGIN=$plugin"
inline=0
if [ "${ON_QEMU10:-0}" = 1 ]; then
  mix_qemu10
  [ -n "$q10" ] || { echo "ON_QEMU10=1: QEMU 10 or its plugin is not built (scripts/build-qemu.sh)" >&2; exit 2; }
  qemu=$q10
  mixenv="HPCSCOPE_QEMU=$q10 HPCSCOPE_QEMU_PLUGIN=$plugin4"
  grep -q qemu_plugin_register_vcpu_mem_record_per_vcpu "$q10" && inline=1
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPUs: $(nproc); mix --sample $sample; bare QEMU: $($qemu --version | head -1)"
for w in $workloads; do
  bin="$out/$w"
  a=$(args_of "$w")
  mix="env $mixenv $hs mix -m cascadelake-8260 -m graviton2 --native-runs 0"
  set -- -n native "$bin $a" \
    -n qemu "$qemu $bin $a" \
    -n cachegrind "valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null $bin $a" \
    -n "mix full" "$mix -- $bin $a" \
    -n "mix sampled" "$mix --sample $sample -- $bin $a"
  if [ "$inline" = 1 ]; then
    set -- "$@" -n "mix full, callbacks" "env HPCSCOPE_MEMINLINE=off $mixenv $hs mix -m cascadelake-8260 -m graviton2 --native-runs 0 -- $bin $a"
  fi
  hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/$w.times.json" "$@" >/dev/null 2>&1 || {
    echo "$w: hyperfine failed; rerun with --show-output to see why" >&2
    exit 1
  }
  # The counts and hit ratios of one run each (the mix exit status is 1 on partial counts).
  $mix --format json -- "$bin" $a >"$out/$w.full.json"
  $mix --sample "$sample" --format json -- "$bin" $a >"$out/$w.sampled.json"
  analyze_s=""
  if [ "${ANALYZE:-0}" = 1 ]; then
    start=$(date +%s.%N)
    env $mixenv "$hs" analyze -m cascadelake-8260 -o "$out/$w.analyze" -- "$bin" $a >"$out/$w.analyze.log" 2>&1 || true
    analyze_s=$(echo "$(date +%s.%N) - $start" | bc)
  fi
  python3 - "$w" "$out/$w.times.json" "$out/$w.full.json" "$out/$w.sampled.json" "$analyze_s" <<'PY'
import json, sys
name, times, full, sampled, analyze_s = sys.argv[1:6]
r = {x["command"]: x for x in json.load(open(times))["results"]}
cpu = lambda x: x["user"] + x["system"]
q, c, n = r["qemu"], r["cachegrind"], r["native"]
print(f"\n== {name}: mean of the runs (wall s, CPU s, ratios)")
for k, x in r.items():
    print(f"  {k:12s} wall {x['mean']:7.3f}  x{x['mean']/q['mean']:5.2f} qemu  x{x['mean']/c['mean']:5.2f} cachegrind  x{x['mean']/n['mean']:6.1f} native"
          f"   cpu {cpu(x):7.3f}  x{cpu(x)/cpu(q):5.2f} qemu  x{cpu(x)/cpu(c):5.2f} cachegrind")

def body(path):
    t = open(path).read()
    return json.loads(t[t.index("{"):])

f, s = body(full), body(sampled)
fv, sv = f["variants"][0], s["variants"][0]
flops_equal = fv["counts"]["totals"]["flops"] == sv["counts"]["totals"]["flops"]
insn_equal = fv["counts"]["totals"]["instructions"] == sv["counts"]["totals"]["instructions"]
worst = 0.0
sr = sv.get("sampling") or {}
units = ", ".join(f"{m['machine']} {m['units']} of {m['population']}" for m in sr.get("machines", []))
fi, si = fv["counts"]["totals"]["instructions"], sv["counts"]["totals"]["instructions"]
print(f"  sampled units measured: {units}; "
      f"FLOPs {fv['counts']['totals']['flops']} full, {sv['counts']['totals']['flops']} sampled: "
      f"{'equal' if flops_equal else 'DIFFERENT'}; instructions {fi} full, {si} sampled "
      f"({'equal' if insn_equal else f'differ by {si - fi}: two emulations of one program may differ in start-up code'})")
est = {(m["machine"], l["level"]): l for m in sr.get("machines", []) for l in m["levels"]}
for fc, sc in zip(fv["caches"], sv["caches"]):
    cells = []
    for fl, sl in zip(fc["levels"], sc["levels"]):
        fr = fl["hits"] / fl["accesses"] if fl["accesses"] else None
        e = est.get((fc["name"], fl["name"]), {})
        sr_ = e.get("hit_ratio")
        if fr is None or sr_ is None:
            cells.append(f"{fl['name']} n/a")
            continue
        err = abs(sr_ - fr) * 100
        worst = max(worst, err)
        ci = e.get("ci95")
        cis = f"±{ci*100:.2f}" if ci is not None else "±?"
        inside = "inside" if ci is not None and abs(sr_ - fr) <= ci + 1e-12 else "outside"
        cells.append(f"{fl['name']} {fr*100:.2f} vs {sr_*100:.2f} {cis} (err {err:.2f} pp, {inside})")
    print(f"  {fc['name']:18s} hit ratio full vs sampled: " + ", ".join(cells))

m, ms = r["mix full"], r["mix sampled"]
ok = lambda b: "PASS" if b else "FAIL"
print(f"  verdict full: x{m['mean']/c['mean']:.2f} cachegrind (<= 1.0: {ok(m['mean'] <= c['mean'])}), "
      f"x{m['mean']/q['mean']:.2f} bare qemu (<= 1.3: {ok(m['mean'] <= 1.3 * q['mean'])})")
print(f"  verdict sampled: x{ms['mean']/q['mean']:.2f} bare qemu (<= 1.1: {ok(ms['mean'] <= 1.1 * q['mean'])}), "
      f"worst hit-ratio error {worst:.2f} pp (<= 1: {ok(worst <= 1.0)}), FLOPs exact: {ok(flops_equal)}")
if "mix full, callbacks" in r:
    cb = r["mix full, callbacks"]
    print(f"  full mix, records written by QEMU's code / by a callback per access: wall x{m['mean']/cb['mean']:.2f}, cpu x{cpu(m)/cpu(cb):.2f}")
if analyze_s:
    a = float(analyze_s)
    print(f"  verdict analyze: {a:.1f} s end to end, x{a/n['mean']:.0f} native (<= 50: {ok(a <= 50 * n['mean'])})")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
