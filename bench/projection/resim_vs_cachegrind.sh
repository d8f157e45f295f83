#!/usr/bin/env bash
# The cache-size axis of `hpcscope explore` against valgrind's cachegrind: a scenario sweeps
# the L2 size of cascadelake-8260 (128 KiB to 4 MiB, 16 ways, 64-byte lines) over a STREAM
# triad (crates/cli/tests/data/triad.c, the program the CLI tests build) whose working set
# (3 arrays x N x 8 B) crosses it; explore re-simulates each geometry other than the
# profile's own (one mix run) and keeps each profile in resim-cache/. For each size, the number of data accesses the
# re-simulation sends past L2 (bytes served by L3 and memory / 8: the triad's accesses are
# 8-byte) is printed beside cachegrind's LL misses (DLmr + DLmw) with
# --D1=32768,8,64 --LL=SIZE,16,64, the same program and arguments, and their ratio; then
# the second explore's time (every geometry from the cache) beside the first's. The same
# targets swept by `hpcscope analyze --scenario` (which simulates each target's geometry
# in its own characterization) give a third column, which must equal explore's.
#
# The hierarchies differ in one place: cachegrind's LL is the last level, where hpcscope's
# L2 has an L3 behind it (which does not change what misses L2, as L2 sees every L1 miss in
# both). Verdict: every ratio within [0.9, 1.1] where cachegrind counts at least 1,000
# misses, the miss counts fall as L2 grows, and analyze's equal explore's.
#
# Usage: bench/projection/resim_vs_cachegrind.sh [N [REPS]]   (default 32768 8: 768 KiB)
# HPCSCOPE=path/to/hpcscope (default: hpcscope on PATH). Needs valgrind, gcc, jq, qemu-user
# and the QEMU plugin (scripts/setup.sh); prints "skipping:" and exits 0 without them.
set -euo pipefail
n="${1:-32768}"
reps="${2:-8}"
HPCSCOPE=${HPCSCOPE:-hpcscope}
root=$(cd "$(dirname "$0")/../.." && pwd)
for t in valgrind gcc jq qemu-x86_64 "$HPCSCOPE"; do
  command -v "$t" >/dev/null || { echo "skipping: $t not found (scripts/setup.sh installs it)"; exit 0; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -fno-tree-vectorize -o "$work/triad" "$root/crates/cli/tests/data/triad.c"
cd "$work"
sizes=(131072 262144 524288 1048576 2097152 4194304)
"$HPCSCOPE" mix -m cascadelake-8260 --native-runs 0 --function kernel -o base.json -- ./triad "$n" "$reps" >/dev/null
{
  printf 'name = "L2 size against cachegrind"\n[source]\nmachine = "cascadelake-8260"\nprofile = "base.json"\ngflops = 1.0\n'
  printf '[[variants]]\nname = "triad"\nprofile = "base.json"\ncommand = ["./triad", "%s", "%s"]\nfunctions = ["kernel"]\n' "$n" "$reps"
  for s in "${sizes[@]}"; do
    printf '[[targets]]\nname = "L2 %s"\nmachine = "cascadelake-8260"\n' "$s"
    printf 'transforms = [{ cache_size = { level = "L2", size_bytes = %s } }, { cache_ways = { level = "L2", associativity = 16 } }]\n' "$s"
  done
} >sweep.toml
# The targets alone, for analyze --scenario.
sed -n '/^\[\[targets\]\]/,$p' sweep.toml | sed '1i name = "L2 size against cachegrind"' >targets.toml
"$HPCSCOPE" analyze -m cascadelake-8260 -t cascadelake-8260 --no-trace --native-runs 1 \
  --function kernel --scenario targets.toml -o analyze -- ./triad "$n" "$reps" >analyze.txt
t0=$(date +%s.%N)
"$HPCSCOPE" explore sweep.toml >first.txt
t1=$(date +%s.%N)
"$HPCSCOPE" explore sweep.toml >second.txt
t2=$(date +%s.%N)
# Where each target's bytes came from (profile, resimulated, approximate).
"$HPCSCOPE" explore sweep.toml --format json >third.json
echo "triad n=$n reps=$reps ($(( 24 * n / 1024 )) KiB working set), valgrind $(valgrind --version | sed 's/^valgrind-//')"
printf '%-9s %16s %16s %16s %8s\n' "L2 size" "explore past L2" "analyze past L2" "cachegrind LLm" ratio
fail=0
prev=""
for s in "${sizes[@]}"; do
  origin=$(jq -r --arg t "L2 $s" '.points[] | select(.target == $t) | .bytes' third.json)
  case "$origin" in
    resimulated)
      f=$(grep -l "\"cascadelake-8260+L2.size=$s+L2.ways=16\"" resim-cache/*.json | head -1) \
        || { echo "no re-simulated profile for L2 = $s"; exit 1; } ;;
    # The profile's own geometry (cascadelake-8260's L2 is 1 MiB, 16 ways): explore, like
    # analyze, keeps the profile's bytes per level and simulates nothing for it.
    profile) f=base.json ;;
    *) echo "L2 = $s: explore's bytes per level are '$origin'"; exit 1 ;;
  esac
  past_l2='[.regions[0].threads[0].memory.bytes_per_level[] | select(.level == "L3" or .level == "MM") | .bytes] | add / 8'
  ours=$(jq "$past_l2" "$f")
  # analyze: the profile simulated for this geometry, or the source's when it is the
  # source's own geometry (not simulated twice).
  ana=$(jq --arg id "cascadelake-8260+L2.size=$s+L2.ways=16" \
    "[.mix.variants[0].profiles[] | select(.machine == \$id)] + [.mix.variants[0].profiles[0]] | .[0] | $past_l2" \
    analyze/result.json)
  valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL="$s,16,64" \
    --cachegrind-out-file=cg.out ./triad "$n" "$reps" >/dev/null 2>&1
  # The kernel function's own line in cg_annotate: DLmr and DLmw.
  ref=$(cg_annotate --show=DLmr,DLmw cg.out 2>/dev/null \
    | awk '/:kernel$/ { gsub(/\([^)]*\)/, ""); gsub(",", ""); print $1 + $2; exit }')
  ratio=$(awk -v a="$ours" -v b="$ref" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
  printf '%-9s %16.0f %16.0f %16s %8s\n' "$s" "$ours" "$ana" "$ref" "$ratio"
  [ "$ours" = "$ana" ] || fail=1
  awk -v a="$ours" -v b="$ref" 'BEGIN { exit !(b < 1000 || (a / b >= 0.9 && a / b <= 1.1)) }' || fail=1
  if [ -n "$prev" ]; then awk -v a="$ours" -v p="$prev" 'BEGIN { exit !(a <= p) }' || fail=1; fi
  prev=$ours
done
grep '^re-simulated' first.txt second.txt | sed 's/^/  /'
{ grep 're-simulated:' analyze.txt || echo '(analyze: no re-simulation line)'; } | sed 's/^ */  analyze.txt: /'
awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "explore: first %.2f s (re-simulates), second %.3f s (from the cache), ratio %.0fx\n", b - a, c - b, (b - a) / (c - b) }'
[ "$fail" = 0 ] && echo "verdict: ok (within [0.9, 1.1] of cachegrind, falling as L2 grows, analyze = explore)" \
  || { echo "verdict: FAIL"; exit 1; }
