#!/usr/bin/env bash
# Compare `hpcscope bench mpi`'s PingPong with a minimal hand-written MPI ping-pong
# (pingpong_ref.c), in the same run, on the same launcher.
#
# Open MPI ships no Intel MPI Benchmarks and Debian packages neither IMB nor the OSU
# micro-benchmarks, so the reference is this independent ~40-line program: same message
# sizes, half the round trip, best of 5 loops of min(1000, 40 MiB / size) round trips.
# The two run in alternation, ROUNDS times; each side keeps its fastest time per size.
# Prints, per size, both times and the ratio hpcscope / reference (1.00 = same).
#
# Installs nothing: needs mpicc and mpirun (Debian: openmpi-bin libopenmpi-dev), jq, and
# either an `hpcscope` binary or this repository's cargo workspace.
#
# Environment:
#   HPCSCOPE   command that runs hpcscope (default: `hpcscope` when on PATH, else
#              `cargo run --release -q -p hpcscope --`)
#   LAUNCHER   the launcher for both programs (default: mpirun -np 2, plus
#              --allow-run-as-root as root)
#   ROUNDS     alternations (default 3)
#   SIZES      message sizes in bytes (default "0 1 8 64 512 4096 32768 262144 1048576 4194304")
set -euo pipefail

ROUNDS=${ROUNDS:-3}
SIZES=${SIZES:-"0 1 8 64 512 4096 32768 262144 1048576 4194304"}
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${HPCSCOPE:-}" ]; then
  if command -v hpcscope >/dev/null; then HPCSCOPE=hpcscope
  else HPCSCOPE="cargo run --release -q --manifest-path $here/../../Cargo.toml -p hpcscope --"; fi
fi
if [ -z "${LAUNCHER:-}" ]; then
  LAUNCHER="mpirun -np 2"
  if [ "$(id -u)" = 0 ]; then LAUNCHER="$LAUNCHER --allow-run-as-root"; fi
fi
for t in mpicc jq; do
  command -v "$t" >/dev/null || { echo "compare.sh: $t is missing (Debian: openmpi-bin libopenmpi-dev jq)" >&2; exit 3; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/ref" "$here/pingpong_ref.c"
csv_sizes=$(echo $SIZES | tr ' ' ',')

for r in $(seq "$ROUNDS"); do
  # shellcheck disable=SC2086
  $HPCSCOPE bench mpi --launcher "$LAUNCHER" --benchmarks pingpong --sizes "$csv_sizes" \
    --repeat 5 --format json -o "$work/h$r.json" 2>/dev/null
  # shellcheck disable=SC2086
  $LAUNCHER "$work/ref" $SIZES >"$work/r$r.txt"
done

echo "library: $(jq -r .mpi_library "$work/h1.json")"
echo "launcher: $LAUNCHER; rounds: $ROUNDS; fastest time per size on each side"
printf '%10s %14s %14s %8s\n' bytes hpcscope_us reference_us ratio
for n in $SIZES; do
  h=$(jq -s --argjson n "$n" '[.[].benchmarks[0].rows[] | select(.bytes == $n) | .t_avg_us] | min' "$work"/h*.json)
  ref=$(awk -v n="$n" '$1 == n {print $2}' "$work"/r*.txt | sort -g | head -1)
  awk -v n="$n" -v h="$h" -v r="$ref" 'BEGIN { printf "%10d %14.4f %14.4f %8.3f\n", n, h, r, h / r }'
done
jq -r '.benchmarks[0].fit | "hpcscope PingPong fit (last round): t0 = \(.t0_us) us, B = \(.bandwidth_mbs) MB/s, n_1/2 = \(.n_half_bytes) B"' "$work/h$ROUNDS.json"
