#!/bin/sh
# How the cost of reading a model CSV grows with its rows: `hpcscope model decompose` on
# 1,024 to 16,384 rows of a decomposition (few columns, one closed-form fit, so the read
# dominates). Prints the wall time of each size (median of three, hyperfine when installed) and the growth exponent
# between successive sizes: about 1 is linear. The reader that counted newlines from the
# start of the text for every record grew about 2 (16,384 rows: 4.5 s in a debug build,
# 0.15 s after).
#
#   bench/models/csv_cost.sh
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
random.seed(2)
for n in (1024, 4096, 16384):
    with open(f"{sys.argv[1]}/dec{n}.csv", "w") as f:
        f.write("run,NB,f,BW,ratio\n")
        for i in range(n):
            nb = random.choice([1, 2, 4]); fr = random.uniform(1, 1.3); bw = random.uniform(1, 2)
            t = (0.5 / nb + 0.3 / fr + 0.2 / bw) * random.uniform(0.99, 1.01)
            f.write(f"c{i},{nb},{fr:.5f},{bw:.5f},{t:.5f}\n")
PY
prev=""
verdict=PASS
printf '%6s %10s %9s\n' rows seconds exponent
for n in 1024 4096 16384; do
  t=$(median_wall 3 "$bin" model decompose "$work/dec$n.csv")
  if [ -n "$prev" ]; then
    # Four times the rows: the exponent is log4 of the ratio.
    e=$(python3 -c "import math; print(f'{math.log($t/$prev)/math.log(4):.2f}')")
    python3 -c "import sys; sys.exit(0 if $e < 1.5 else 1)" || verdict=FAIL
  else
    e=-
  fi
  printf '%6s %10.3f %9s\n' "$n" "$t" "$e"
  prev=$t
done
echo "verdict: $verdict (growth exponent below 1.5: linear in the rows)"
