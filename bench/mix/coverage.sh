#!/bin/sh
# Coverage of the 95 % interval of `mix --sample K` (set sampling): over many random draws
# of the sampled classes, how often each level's interval holds the full simulation's hit
# ratio. The reference is the full simulation itself (every class of sets simulated, which
# is bit for bit the unsampled run); a draw's estimate is what `--sample K` reports when it
# chooses those classes.
#
#   bench/mix/coverage.sh [OUTDIR]   (env: WORKLOADS="montecarlo triad_stencil" K=8
#                                     DRAWS=1000 MACHINES=cascadelake-8260,graviton2
#                                     PLUGIN=path/to/plugin.so)
#
# Per workload (the builds and arguments of compare.sh), the plugin's stream is recorded
# once (`mem=on,memfd=3,coalesce=64`, not thinned by sample=); the test
# crates/mix/tests/interval_coverage.rs then simulates every class of every machine
# (`sampling::sets::class_units`) and prints, per machine and level, a markdown row: the full
# run's hit ratio, the mean accesses and non-empty classes of a draw, the coverage, median
# half-width and share of draws within 1 percentage point of the earlier Student-t
# interval, of the ratio estimator's Wilson interval (what `mix` reports below L1), of the
# regression estimator on the bytes (what it reported for L1 before; computed at every
# level for comparison) and of L1's misses expanded over its known accesses (what it
# reports for L1), the four for the sampler's own choice of classes (`chosen_classes`),
# and the share of the level's hits and misses in the 1/K of the classes that hold most
# of them.
#
# Needs gcc, qemu-x86_64; builds the plugin (release). The streams are deleted at the end.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix-coverage"}
workloads=${WORKLOADS:-"montecarlo triad_stencil"}
mkdir -p "$out"
. "$here/lib.sh"
need_tools gcc qemu-x86_64 -- gcc qemu-user
if [ -z "${PLUGIN:-}" ]; then
  cargo_release -p hpcscope-qemu-plugin
fi
plugin=${PLUGIN:-"$root/target/release/libhpcscope_qemu_plugin.so"}
[ -f "$plugin" ] || { echo "PLUGIN=$plugin is not a file" >&2; exit 2; }

mix_build "$out" $workloads
streams=""
for w in $workloads; do
  s="$out/$w.stream"
  # shellcheck disable=SC2046
  qemu-x86_64 -plugin "$plugin,out=$out/$w.counts.json,mem=on,memfd=3,coalesce=64" \
    "$out/$w" $(args_of "$w") 3>"$s" >/dev/null
  echo "$w ($(args_of "$w")): stream of $(($(stat -c %s "$s") / 8)) records" >&2
  streams="${streams:+$streams,}$w ($(args_of "$w"))=$s"
done
echo "K=${K:-8}, ${DRAWS:-1000} draws per level"
(cd "$root" && HPCSCOPE_COVERAGE_STREAMS="$streams" HPCSCOPE_COVERAGE_K="${K:-8}" \
  HPCSCOPE_COVERAGE_DRAWS="${DRAWS:-1000}" \
  HPCSCOPE_COVERAGE_MACHINES="${MACHINES:-cascadelake-8260,graviton2}" \
  cargo test --release --quiet -p hpcscope-mix --test interval_coverage -- --ignored --nocapture) |
  grep '^|'
for w in $workloads; do rm -f "$out/$w.stream"; done
