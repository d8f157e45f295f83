#!/bin/sh
# Set sampling with and without the plugin's gate (`sample=`), in the same hyperfine runs:
# what leaving the unsampled classes out of the stream saves, and what the memory
# callbacks alone cost (the floor of any per-access sampling on this QEMU).
#
#   bench/mix/gate.sh [OUTDIR]   (env: RUNS=3 WORKLOADS="cg edge montecarlo triad_stencil"
#                                 SAMPLE=8 HPCSCOPE=path/to/hpcscope PLUGIN=path/to/plugin.so)
#
# Per workload (the builds and arguments of compare.sh), one hyperfine run of:
#   qemu           bare qemu-x86_64
#   callbacks      QEMU with the plugin's memory stream written to /dev/null, every access
#   gated cb       the same with the gate mix passes (nothing written for the others)
#   mix gated      hpcscope mix -m cascadelake-8260 -m graviton2 --native-runs 0 --sample K
#   mix ungated    the same, with sample= taken out of QEMU's arguments by a wrapper given
#                  as HPCSCOPE_QEMU (the reader then drops the unsampled accesses itself;
#                  the results are the same, `cargo test -p hpcscope-mix --test setgate`)
# The gated arm goes through a wrapper too (one that passes the arguments on, and records
# them: the gate of the callback runs comes from there). Prints wall and CPU (user +
# system, all processes) ratios to bare QEMU and gated / ungated.
#
# Needs gcc, qemu-user, hyperfine, python3 and a release build of hpcscope and the plugin
# (built here unless HPCSCOPE and PLUGIN are given).
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix-gate"}
runs=${RUNS:-3}
sample=${SAMPLE:-8}
workloads=${WORKLOADS:-"cg edge montecarlo triad_stencil"}
mkdir -p "$out"
. "$here/lib.sh"
need_tools gcc qemu-x86_64 hyperfine python3 -- gcc qemu-user hyperfine python3
mix_binaries
qemu=$(command -v qemu-x86_64)

# The two wrappers.
cat >"$out/pass.sh" <<W
#!/bin/sh
printf '%s\n' "\$@" >"$out/qemu-args"
exec "$qemu" "\$@"
W
cat >"$out/strip.sh" <<W
#!/bin/sh
for a in "\$@"; do
  shift
  set -- "\$@" "\$(printf '%s' "\$a" | sed -E 's/,sample=[^,]*//')"
done
exec "$qemu" "\$@"
W
chmod +x "$out/pass.sh" "$out/strip.sh"

mix_build "$out" $workloads

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPUs: $(nproc); mix --sample $sample"
for w in $workloads; do
  bin="$out/$w"
  a=$(args_of "$w")
  mix="$hs mix -m cascadelake-8260 -m graviton2 --native-runs 0 --sample $sample -- $bin $a"
  # The gate mix passes for these machines: from one run through the recording wrapper.
  env HPCSCOPE_QEMU_PLUGIN="$plugin" HPCSCOPE_QEMU="$out/pass.sh" $mix >/dev/null
  gate=$(tr ',' '\n' <"$out/qemu-args" | grep '^sample=' || true)
  [ -n "$gate" ] || { echo "$w: mix passed no sample= to QEMU" >&2; exit 1; }
  stream="$plugin,out=/dev/null,mem=on,memout=/dev/null,coalesce=64"
  hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/$w.json" \
    -n qemu "$qemu $bin $a" \
    -n callbacks "$qemu -plugin $stream $bin $a" \
    -n "gated cb" "$qemu -plugin $stream,$gate $bin $a" \
    -n "mix gated" "env HPCSCOPE_QEMU_PLUGIN=$plugin HPCSCOPE_QEMU=$out/pass.sh $mix" \
    -n "mix ungated" "env HPCSCOPE_QEMU_PLUGIN=$plugin HPCSCOPE_QEMU=$out/strip.sh $mix" \
    >/dev/null 2>&1 || {
    echo "$w: hyperfine failed; rerun with --show-output to see why" >&2
    exit 1
  }
  python3 - "$w" "$out/$w.json" <<'PY'
import json, sys
name, path = sys.argv[1:3]
r = {x["command"]: x for x in json.load(open(path))["results"]}
cpu = lambda x: x["user"] + x["system"]
q = r["qemu"]
print(f"\n== {name}: mean of the runs")
for k, x in r.items():
    print(f"  {k:12s} wall {x['mean']:7.3f}  x{x['mean']/q['mean']:5.2f} qemu   cpu {cpu(x):7.3f}  x{cpu(x)/cpu(q):5.2f} qemu")
g, u = r["mix gated"], r["mix ungated"]
print(f"  mix gated / ungated: wall x{g['mean']/u['mean']:.3f}, cpu x{cpu(g)/cpu(u):.3f}")
PY
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
