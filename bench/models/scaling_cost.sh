#!/bin/sh
# How the cost of `hpcscope model scaling` grows with the number of runs: noisy Amdahl runs
# at 64 to 1024 rows, each fitted with every law (Amdahl, Gustafson, USL, PMNF) and
# cross-validated. Prints the wall time of each size (median of three, hyperfine when it is
# installed) and the growth exponent between successive sizes: about 1 is linear; the
# leave-one-out refits it replaced grew about 3 (64 rows 1.1 s, 128 rows 7.6 s).
#
#   bench/models/scaling_cost.sh
#
# Verdict: PASS when every exponent is below 1.5.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
cargo_release -p hpcscope
bin="$root/target/release/hpcscope"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 - "$work" <<'PY'
import random, sys
random.seed(1)
for n in (64, 128, 256, 512, 1024):
    with open(f"{sys.argv[1]}/runs{n}.csv", "w") as f:
        f.write("p,time_s\n")
        for i in range(n):
            p = 1 + i % 64
            f.write(f"{p},{10 * (0.05 + 0.95 / p) * (1 + 0.02 * random.random()):.6f}\n")
PY
prev=""
verdict=PASS
printf '%6s %10s %9s\n' rows seconds exponent
for n in 64 128 256 512 1024; do
  t=$(median_wall 3 "$bin" model scaling "$work/runs$n.csv")
  if [ -n "$prev" ]; then
    e=$(python3 -c "import math; print(f'{math.log($t/$prev)/math.log(2):.2f}')")
    python3 -c "import sys; sys.exit(0 if $e < 1.5 else 1)" || verdict=FAIL
  else
    e=-
  fi
  printf '%6s %10.3f %9s\n' "$n" "$t" "$e"
  prev=$t
done
echo "verdict: $verdict (growth exponent below 1.5: linear in the runs)"
