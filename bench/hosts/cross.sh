#!/bin/sh
# Projections checked across machines: `hpcscope hosts validate` on the host records of
# data/hosts (or the directories given), then, per pair, the projection beside each host's
# own measurement (the reference: the same binary timed on both hosts, its measured ratio),
# and the summary with the verdict against the targets (>= 80 % inside, median width <= 1.4,
# median point error <= 10 %, and on the changed pairs a point error at most half the Kwack
# baseline's). Two records of one kind of CPU (data/hosts/amd-epyc-25-1 and -1-b,
# amd-epyc-25-17 and -17-b) pair as repeats: summed up apart ("same CPU"), they show how
# much two records of one kind differ.
#
#   bench/hosts/cross.sh [DIR DIR...]     (env: OUT=target/bench-hosts WORKLOADS=a,b)
#
# Needs gcc, qemu-user, python3 and a release build of hpcscope and the plugin (cargo build
# --release -p hpcscope -p hpcscope-qemu-plugin). The records' binaries are rebuilt from the
# bundled sources when a record has no bin/ directory; a compiler that builds them otherwise
# is refused (their sha256 must be the records').
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${OUT:-"$root/target/bench-hosts"}
bin="$root/target/release/hpcscope"
mkdir -p "$out"

need_tools gcc qemu-x86_64 python3 -- gcc qemu-user python3
[ -x "$bin" ] || {
  echo "missing $bin (cargo build --release -p hpcscope -p hpcscope-qemu-plugin)" >&2
  exit 3
}
if [ $# -eq 0 ]; then
  set -- "$root"/data/hosts/*/
fi
wl=""
[ -z "${WORKLOADS:-}" ] || wl="--workloads $WORKLOADS"
start=$(date +%s)
# shellcheck disable=SC2086
"$bin" hosts validate "$@" $wl --build-dir "$out/build" --format json -o "$out/hosts.json" \
  --html "$out/hosts.html"
echo "hosts validate: $(( $(date +%s) - start )) s; $out/hosts.json, $out/hosts.html"

python3 - "$out/hosts.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
pct = lambda x: f"{x * 100:.1f} %"
for h in v["hosts"]:
    print(f"host {h['name']}: {h['cpu']}")
print()
print("(same: both records of one kind of CPU, a repeat: summed up apart, not in the targets)")
print(f"{'key':26} {'pair':40} {'A GF/s':>8} {'B GF/s':>8} {'B/A':>6} {'chg':>3} {'same':>4} "
      f"{'interval':>19} {'width':>6} {'in':>3} {'point':>8} {'Kwack':>8} {'no chg':>8}")
for p in v["pairs"]:
    r = p["pair"]; val = r["validation"]; i = r["interval"]
    pe = val.get("point_error"); ke = val.get("kwack_error")
    f = lambda e: "-" if e is None else f"{e * 100:+.1f}%"
    print(f"{p['key']:26} {p['source'] + ' -> ' + p['target']:40} {r['source_gflops']:8.3f} "
          f"{r['measured_gflops']:8.3f} {p['measured_ratio']:6.3f} {'yes' if p['changed'] else '':>3} "
          f"{'yes' if p.get('same_cpu') else '':>4} "
          f"[{i['lo']:7.3f}, {i['hi']:7.3f}] {i['hi'] / i['lo']:6.3f} "
          f"{'yes' if val['inside_within_noise'] else 'no':>3} {f(pe):>8} {f(ke):>8} "
          f"{f(p['no_change_error']):>8}")
print()
print(f"{'pairs':32} {'n':>3} {'inside':>7} {'width':>6} {'point':>7} {'max pt':>7} {'Kwack':>7} {'no chg':>7}")
for s in v["summary"]["subsets"]:
    w = s["summary"]["weighted"]; k = s["summary"]["kwack"]
    print(f"{s['label']:32} {w['pairs']:3} {pct(w['inside_fraction']):>7} {w['median_width']:6.3f} "
          f"{pct(w['median_point_error']):>7} {pct(w['max_point_error']):>7} "
          f"{pct(k['median_point_error']):>7} {pct(s['no_change']['median_error']):>7}")
print()
for t in v["summary"]["targets"]:
    val = f"x{t['value']:.3f}" if "width" in t["goal"] else pct(t["value"])
    print(f"target {t['subset']:20} {t['goal']:52} {'met' if t['met'] else 'NOT met':8} ({val})")
# The floor of these checks: how much two records of one kind of CPU differ (the repeats'
# median |no-change error|), and how many misses are within it (not a second "inside": the
# verdicts above stay the only ones).
for t in sorted({p["threads"] for p in v["pairs"]}):
    rep = sorted(abs(p["no_change_error"]) for p in v["pairs"] if p.get("same_cpu") and p["threads"] == t)
    if not rep:
        continue
    n = len(rep)
    floor = rep[n // 2] if n % 2 else (rep[n // 2 - 1] + rep[n // 2]) / 2
    miss = [p for p in v["pairs"] if not p.get("same_cpu") and p["threads"] == t
            and not p["pair"]["validation"]["inside_within_noise"]]
    near = [p for p in miss if abs(p["pair"]["validation"]["error_within_noise"]) <= floor]
    print(f"repeats, {t} thread(s): two records of one kind differ by {pct(floor)} at the median "
          f"({n} pairs); {len(near)} of the {len(miss)} cross-machine misses are within that")
for n in v["notes"]:
    print("note:", n)
PY
