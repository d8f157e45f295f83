#!/bin/sh
# The cache simulation of `mix` on 1 and 2 worker threads, by set class or one machine per
# worker: a recorded stream of a real program replayed through the reader (no QEMU in the
# measurement), all arms in one hyperfine run per workload.
#
#   bench/mix/partition.sh [OUTDIR]   (env: RUNS=3 WORKLOADS="cg edge" PLUGIN=path/to/plugin.so)
#
# Per workload (the builds of compare.sh, smaller arguments: REPLAY_ARGS_<workload>), the
# plugin's stream is recorded once (`mem=on,memfd=3,coalesce=64`) and replayed by the
# `replay` example (crates/mix/examples/replay.rs) in these arms:
#   seq 2m        cascadelake-8260 and graviton2 on the reading thread (HPCSCOPE_SIM_WORKERS=1)
#   machines 2m   2 workers, one machine each (HPCSCOPE_SIM_SPLIT=machines; before the cut
#                 by set class, what `mix` did with 2 spare CPUs)
#   sets 2m       2 workers, each half the set classes of both machines
#   seq 1m        cascadelake-8260 alone on the reading thread
#   sets 1m       cascadelake-8260 alone on 2 workers (one machine on two CPUs: the
#                 per-machine split cannot)
# Checks first that every arm prints the same counters (the simulation is exact whatever the
# split), then prints wall and CPU (user + system) of each arm, and its ratios to the
# sequential arm of the same machines.
#
# Needs gcc, qemu-x86_64, hyperfine, python3; builds the plugin and the example (release).
# The streams take about 8 bytes per access (tens to hundreds of MB); they are deleted at
# the end.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix-partition"}
runs=${RUNS:-3}
workloads=${WORKLOADS:-"cg edge"}
mkdir -p "$out"
. "$here/lib.sh"
need_tools gcc qemu-x86_64 hyperfine python3 -- gcc qemu-user hyperfine python3
cargo_release -p hpcscope-qemu-plugin
cargo_release -p hpcscope-mix --example replay
plugin=${PLUGIN:-"$root/target/release/libhpcscope_qemu_plugin.so"}
replay="$root/target/release/examples/replay"
[ -f "$plugin" ] || { echo "PLUGIN=$plugin is not a file" >&2; exit 2; }

replay_args() {
  case $1 in
    cg) echo "${REPLAY_ARGS_cg:-200000 5}" ;;
    edge) echo "${REPLAY_ARGS_edge:-200000 4}" ;;
    *) args_of "$1" ;;
  esac
}

mix_build "$out" $workloads
two="cascadelake-8260 graviton2"
one="cascadelake-8260"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPUs: $(nproc)"
for w in $workloads; do
  s="$out/$w.stream"
  # shellcheck disable=SC2046
  qemu-x86_64 -plugin "$plugin,out=$out/$w.counts.json,mem=on,memfd=3,coalesce=64" \
    "$out/$w" $(replay_args "$w") \
    3>"$s" >/dev/null
  echo "$w ($(replay_args "$w")): stream of $(($(stat -c %s "$s") / 8)) records"
  # Exactness: the counters (all lines but the timing line) of every arm are the same.
  for m in "$two" "$one"; do
    ref=""
    for arm in "1 sets" "2 machines" "2 sets"; do
      set -- $arm
      # shellcheck disable=SC2086
      got=$(HPCSCOPE_SIM_WORKERS=$1 HPCSCOPE_SIM_SPLIT=$2 "$replay" "$s" $m | tail -n +2)
      if [ -z "$ref" ]; then
        ref=$got
      elif [ "$got" != "$ref" ]; then
        echo "FAIL: $w on $m: $1 workers by $2 counted differently:" >&2
        printf '%s\n---\n%s\n' "$ref" "$got" >&2
        exit 1
      fi
    done
  done
  echo "$w: counters identical in every arm: PASS"
  hyperfine --runs "$runs" --warmup 1 --style basic --export-json "$out/$w.json" \
    -n "seq 2m" "HPCSCOPE_SIM_WORKERS=1 $replay $s $two" \
    -n "machines 2m" "HPCSCOPE_SIM_WORKERS=2 HPCSCOPE_SIM_SPLIT=machines $replay $s $two" \
    -n "sets 2m" "HPCSCOPE_SIM_WORKERS=2 HPCSCOPE_SIM_SPLIT=sets $replay $s $two" \
    -n "seq 1m" "HPCSCOPE_SIM_WORKERS=1 $replay $s $one" \
    -n "sets 1m" "HPCSCOPE_SIM_WORKERS=2 HPCSCOPE_SIM_SPLIT=sets $replay $s $one" \
    >"$out/$w.hyperfine.txt"
  echo "load average after $w: $(cut -d' ' -f1-3 /proc/loadavg)"
  python3 - "$out/$w.json" "$w" <<'PY'
import json, sys
res = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
def m(name):
    r = res[name]
    return r["mean"], r["user"] + r["system"]
print(f"| {sys.argv[2]} arm | wall s | CPU s | wall / seq | CPU / seq |")
print("|---|---|---|---|---|")
for name in ["seq 2m", "machines 2m", "sets 2m", "seq 1m", "sets 1m"]:
    wall, cpu = m(name)
    sw, sc = m("seq " + name.split()[1])
    print(f"| {name} | {wall:.3f} | {cpu:.3f} | x{wall / sw:.2f} | x{cpu / sc:.2f} |")
PY
  rm -f "$s"
done
