#!/bin/sh
# What `hpcscope analyze` costs end to end against the program's native time, full and with
# `--sample K`, optionally beside an older build (an A/B of two builds in the same run).
#
#   bench/mix/analyze.sh [OUTDIR]   (env: RUNS=2 WORKLOADS="cg edge montecarlo triad_stencil"
#                                    SAMPLE=8 HPCSCOPE=... PLUGIN=... HPCSCOPE_BEFORE=older/hpcscope)
#
# Per workload (built as compare.sh builds them), one hyperfine run, RUNS runs each, one
# command at a time (so the native runs, hyperfine's and analyze's own, overlap nothing of
# this script): native | [before: `analyze -m cascadelake-8260`] | `analyze -m
# cascadelake-8260` (every bundled machine as a target) | the same with `--sample $SAMPLE`.
# Printed: wall and CPU seconds (user + system, all processes), x native, the load average,
# and the phase line of one analyze run. Then, from one more run of each, the largest
# difference of the bytes per level (any machine, any level, in % of the bytes moved)
# between two runs of analyze, between the builds, and between sampled and full. Two
# emulations of one program differ slightly (a few hundred instructions of start-up code),
# so the builds' difference is to be read against the run-to-run one.
#
# Verdict: analyze at most 50x native (the mix speed target).
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix-analyze"}
runs=${RUNS:-2}
sample=${SAMPLE:-8}
workloads=${WORKLOADS:-"cg edge montecarlo triad_stencil"}
mkdir -p "$out"
. "$here/lib.sh"
need_tools gcc qemu-x86_64 hyperfine python3 -- gcc qemu-user hyperfine python3
mix_binaries
mix_build "$out" $workloads
before=${HPCSCOPE_BEFORE:-}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPUs: $(nproc); analyze --sample $sample"
for w in $workloads; do
  bin="$out/$w"
  a=$(args_of "$w")
  an="env HPCSCOPE_QEMU_PLUGIN=$plugin $hs analyze -m cascadelake-8260"
  set -- -n native "$bin $a"
  if [ -n "$before" ]; then
    set -- "$@" -n "analyze before" "env HPCSCOPE_QEMU_PLUGIN=$plugin $before analyze -m cascadelake-8260 -o $out/$w.hf.before -- $bin $a"
  fi
  set -- "$@" -n analyze "$an -o $out/$w.hf.after -- $bin $a" \
    -n "analyze sampled" "$an --sample $sample -o $out/$w.hf.sampled -- $bin $a"
  hyperfine -N --runs "$runs" --export-json "$out/$w.analyze.times.json" "$@" >/dev/null 2>&1 || {
    echo "$w: hyperfine failed; rerun with --show-output to see why" >&2
    exit 1
  }
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  # One more run of each for the counters (and the phase line).
  if [ -n "$before" ]; then
    env HPCSCOPE_QEMU_PLUGIN="$plugin" "$before" analyze -m cascadelake-8260 -o "$out/$w.before" -- "$bin" $a >/dev/null 2>&1 || true
  fi
  $an -o "$out/$w.after" -- "$bin" $a >"$out/$w.after.log" 2>&1 || true
  $an --sample "$sample" -o "$out/$w.sampled" -- "$bin" $a >"$out/$w.sampled.log" 2>&1 || true
  python3 - "$w" "$out/$w.analyze.times.json" "$out" "$load" <<'PY'
import json, os, sys
name, times, out, load = sys.argv[1:5]
r = {x["command"]: x for x in json.load(open(times))["results"]}
cpu = lambda x: x["user"] + x["system"]
n = r["native"]
print(f"\n== {name}: mean of the runs (load average after: {load})")
for k, x in r.items():
    print(f"  {k:16s} wall {x['mean']:7.2f} s  x{x['mean']/n['mean']:6.0f} native   cpu {cpu(x):7.2f} s  x{cpu(x)/cpu(n):6.0f} native")
if "analyze before" in r:
    b, a = r["analyze before"], r["analyze"]
    print(f"  after / before: wall x{a['mean']/b['mean']:.3f}, cpu x{cpu(a)/cpu(b):.3f}")
for k in ("after", "sampled"):
    log = os.path.join(out, f"{name}.{k}.log")
    if os.path.exists(log):
        for line in open(log):
            if line.startswith("analysis took"):
                print(f"  phases ({k}): {line.strip()}")

def load_result(d):
    p = os.path.join(out, f"{name}.{d}", "result.json")
    return json.load(open(p)) if os.path.exists(p) else None

def per_machine(res):
    v = res["mix"]["variants"][0]
    rows = {}
    for c, p in zip(v["caches"], v["profiles"]):
        lv = p["regions"][0]["threads"][0]["memory"]["bytes_per_level"]
        rows.setdefault(p["machine"], (c, {l["level"]: l["bytes"] for l in lv}))
    return rows

after, before, sampled = load_result("after"), load_result("before"), load_result("sampled")
hf_after = load_result("hf.after")

def worst_diff(x, y):
    """Largest difference of bytes per level between two results, in % of the bytes moved."""
    a, b = per_machine(x), per_machine(y)
    worst = (0.0, "")
    for m, (_, bytes_a) in a.items():
        total = sum(bytes_a.values())
        for lvl, v in bytes_a.items():
            w = b[m][1].get(lvl, 0.0)
            e = abs(w - v) / total * 100 if total else 0.0
            if e >= worst[0]:
                worst = (e, f"{m} {lvl}: {v:.6g} vs {w:.6g}")
    return worst

# Two emulations of one program differ slightly (start-up code: a few hundred instructions,
# a few accesses): the builds are compared against that run-to-run difference.
if after and hf_after:
    e, where = worst_diff(after, hf_after)
    print(f"  bytes per level, two runs of analyze: worst difference {e:.5f} % of the bytes moved ({where})")
if after and before:
    e, where = worst_diff(after, before)
    print(f"  bytes per level, before vs after: worst difference {e:.5f} % of the bytes moved ({where})")
if after and sampled:
    e, where = worst_diff(after, sampled)
    print(f"  bytes per level, sampled vs full: worst error {e:.3f} % of the bytes moved ({where})")
an = r["analyze"]
ok = "PASS" if an["mean"] <= 50 * n["mean"] else "FAIL"
print(f"  verdict analyze: x{an['mean']/n['mean']:.0f} native (<= 50: {ok}); sampled x{r['analyze sampled']['mean']/n['mean']:.0f}")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
