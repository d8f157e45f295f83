#!/usr/bin/env bash
# Behaviour snapshot: runs a fixed set of hpcscope commands on the bundled fixtures and keeps
# each command's standard output, standard error, exit code and the files it wrote, so that
# a change meant to leave behaviour alone (a refactoring) can be checked against a run of the
# commit before it.
#
#   scripts/behaviour-snapshot.sh record DIR [HPCSCOPE]   # default binary: target/debug/hpcscope
#   scripts/behaviour-snapshot.sh compare DIR_A DIR_B     # exit 1 when a command differs
#
# A typical check: build the commit before the change in a `git worktree` of its own (with a
# CARGO_TARGET_DIR of its own), record there, record here, compare.
#
# Every command runs from the repository root with relative fixture paths, in UTC and the C
# locale, with its store and files in a scratch directory whose name is replaced by
# `@SCRATCH@` in what is kept. Each command was run twice and gave the same bytes; left out
# on purpose:
# - commands that measure this machine or need root or a PMU (`bench`, `model dt`,
#   `model strong --measure`, `counters run`, `trace`, `profile` sampling, `doctor`,
#   `counters recipes` without an id, which names this CPU's recipe and PMU), and `mix`,
#   `analyze`, `demo`, `validate` (they run QEMU or the compiler, and take minutes);
# - `record`'s output (each run's time), `history list` and `history machines` (the dates,
#   times, binary hash and host of the runs just recorded); the Otava export is kept with its
#   date, commit and machine columns replaced by placeholders, the change points with the
#   commit replaced;
# - `history plot`: its SVG places the runs on a time axis (the record dates).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

compare() {
  local a=$1 b=$2 differ=0 name
  [ -d "$a" ] && [ -d "$b" ] || usage
  # The commands of either snapshot, by name.
  for name in $( (ls "$a"; ls "$b") | sed -n 's/\.rc$//p' | sort -u); do
    if [ ! -e "$a/$name.rc" ] || [ ! -e "$b/$name.rc" ]; then
      echo "only in one snapshot: $name"
      differ=1
      continue
    fi
    local parts=()
    for f in $( (cd "$a" && ls -d "$name".* 2>/dev/null; cd "$b" && ls -d "$name".* 2>/dev/null) | sort -u); do
      # Another command's files whose name starts with this one's (`a` and `a.json`).
      case "${f#"$name".}" in rc | out | err | files) ;; *) continue ;; esac
      if ! diff -r -q "$a/$f" "$b/$f" >/dev/null 2>&1; then
        parts+=("${f#"$name".}")
      fi
    done
    if ((${#parts[@]})); then
      echo "differs: $name (${parts[*]})"
      differ=1
    fi
  done
  if ((differ)); then
    echo "snapshots differ (diff -r $a $b shows how)"
    return 1
  fi
  echo "same: $(ls "$a" | grep -c '\.rc$') commands"
}

record() {
  local out=$1 bin=${2:-${HPCSCOPE:-$root/target/debug/hpcscope}}
  [ -x "$bin" ] || { echo "no hpcscope binary at $bin: build it (cargo build -p hpcscope)" >&2; exit 2; }
  bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  if [ -n "$(ls -A "$out")" ]; then
    echo "$out is not empty" >&2
    exit 2
  fi
  # The history store keeps the commit of the working directory (the repository's HEAD).
  commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo no-commit)
  scratch=$(mktemp -d "${TMPDIR:-/tmp}/hpcscope-snapshot.XXXXXX")
  trap 'rm -rf "$scratch"' EXIT
  export TZ=UTC LC_ALL=C NO_COLOR=1 COLUMNS=100
  export HPCSCOPE_DB="$scratch/history.db" HPCSCOPE_CACHE_DIR="$scratch/cache" XDG_CACHE_HOME="$scratch/cache"
  mkdir -p "$scratch/fixtures"
  cd "$root"
  fixtures
  commands
  echo "recorded $(ls "$out" | grep -c '\.rc$') commands into $out"
}

# Runs `hpcscope ARGS...` as command NAME; files written under $scratch/files/NAME (the
# variable `$f` in the arguments) are kept as NAME.files.
snap() {
  local name=$1
  shift
  local f="$scratch/files/$name"
  mkdir -p "$f"
  local args=()
  for a in "$@"; do args+=("${a//@F@/$f}"); done
  local rc=0
  "$bin" "${args[@]}" </dev/null >"$out/$name.out" 2>"$out/$name.err" || rc=$?
  echo "$rc" >"$out/$name.rc"
  if [ -n "$(ls -A "$f")" ]; then
    cp -r "$f" "$out/$name.files"
  fi
  normalize "$out/$name.out" "$out/$name.err"
  if [ -d "$out/$name.files" ]; then
    find "$out/$name.files" -type f -print0 | while IFS= read -r -d '' p; do
      # Text files only (a pprof file is gzip).
      if grep -qI '' "$p" 2>/dev/null; then normalize "$p"; fi
    done
  fi
  return 0
}

# The scratch directory's and the repository's names and the commit, replaced by
# placeholders.
normalize() {
  local p
  for p; do
    [ -f "$p" ] || continue
    sed -i -e "s#$scratch#@SCRATCH@#g" -e "s#$root#@ROOT@#g" -e "s#$commit#@COMMIT@#g" \
      -e "s#${commit:0:10}#@COMMIT@#g" "$p"
  done
}

# Fixtures written here: small profiles and a parallel job's run directory made of the
# bundled rank file.
fixtures() {
  local x="$scratch/fixtures"
  printf '%s\n' 'main;solve;dot 40' 'main;solve;axpy 25' 'main;setup;read_mesh 10' 'main;solve;spmv 120' >"$x/before.folded"
  printf '%s\n' 'main;solve;dot 35' 'main;solve;axpy 25' 'main;setup;read_mesh 30' 'main;solve;spmv 60' 'main;solve;precond 20' >"$x/after.folded"
  mkdir -p "$x/run/j1"
  local rank
  for rank in 0 1 2 3; do
    sed -e "s/\"rank\": 0,/\"rank\": $rank,/" -e 's/"size": 1,/"size": 4,/' \
      -e "s/\"local_rank\": 0,/\"local_rank\": $rank,/" \
      -e "s/\"wall_s\": 0.002536175/\"wall_s\": 0.00${rank}536175/" \
      -e "s/\"time_s\": 0.002536175/\"time_s\": 0.00${rank}536175/" \
      crates/job/tests/data/rank-result.json >"$x/run/j1/rank-00000$rank.vm.json"
  done
  local i
  for i in $(seq 12); do
    local v=10
    [ "$i" -gt 6 ] && v=14
    printf '{"work": %s.%s, "flops": 1000}\n' "$v" "$i" >"$x/metrics$i.json"
  done
  printf 'not = "a machine"\n' >"$x/bad-machine.toml"
}

commands() {
  local x="$scratch/fixtures"
  # machine
  snap machine-list machine list
  snap machine-list-json machine list --format json
  snap machine-list-md machine list --format md
  snap machine-list-csv machine list --format csv
  snap machine-show machine show thunderx2
  snap machine-show-json machine show thunderx2 --format json
  snap machine-show-toml machine show neoverse-n1 --format toml
  snap machine-show-md machine show a64fx --format md
  snap machine-show-csv machine show cascadelake-8260 --format csv
  snap machine-show-file machine show data/machines/knl-flat-mcdram.toml --format json
  snap machine-validate machine validate data/machines/a64fx.toml data/machines/graviton3.toml data/machines/thunderx2.toml
  snap machine-validate-bad machine validate "$x/bad-machine.toml"
  snap machine-diff machine diff thunderx2 neoverse-n1
  snap machine-derive machine derive thunderx2 --set vector_bits=512
  snap machine-derive-file machine derive a64fx --set cores=24 --id a64fx-half -o @F@/half.toml
  snap machine-export machine export thunderx2 --format kerncraft -o @F@/tx2.yml
  snap machine-import-incomplete machine import "$scratch/files/machine-export/tx2.yml"
  # roofline
  snap roofline roofline -m thunderx2 -p examples/scenarios/tx2-source.json
  snap roofline-json roofline -m thunderx2 -p examples/scenarios/tx2-source.json --format json
  snap roofline-csv roofline -m neoverse-n1 -p examples/scenarios/sve-256.json --format csv
  snap roofline-md roofline -m a64fx -p examples/scenarios/sve-512.json --format md
  snap roofline-svg roofline -m thunderx2 -p examples/scenarios/tx2-source.json --svg @F@/roofline.svg
  snap roofline-node roofline -m thunderx2 -p examples/scenarios/tx2-source.json --scope node --format json
  # project
  local src=(--source-machine thunderx2 --source-profile examples/scenarios/tx2-source.json)
  snap project project "${src[@]}" --target-machine neoverse-n1
  snap project-json project "${src[@]}" --target-machine a64fx --format json
  snap project-csv project "${src[@]}" --target-machine graviton3 --format csv
  snap project-md project "${src[@]}" --target-machine neoverse-n1 --method kwack --format md
  snap project-diagonal project "${src[@]}" --target-machine a64fx --pair-rule diagonal --format json
  snap project-target-profile project "${src[@]}" --target-machine a64fx --target-profile examples/scenarios/sve-512.json --format json
  snap project-svg project "${src[@]}" --target-machine neoverse-n1 --svg @F@/projection.svg
  snap project-bad project "${src[@]}" --target-machine nosuchmachine
  # explore
  snap explore explore examples/scenarios/tx2-sve-hbm.toml
  snap explore-json explore examples/scenarios/tx2-sve-hbm.toml --format json
  snap explore-csv explore examples/scenarios/tx2-sve-hbm.toml --format csv
  snap explore-md explore examples/scenarios/tx2-sve-hbm.toml --format md
  snap explore-svg explore examples/scenarios/tx2-sve-hbm.toml --svg @F@/explore.svg
  # merge
  snap merge merge "$x/run"
  snap merge-json merge "$x/run" --format json
  snap merge-csv merge "$x/run/j1" --format csv
  snap merge-md merge "$x/run/j1" --format md
  # model
  local md=crates/models/tests/data
  snap model-fit model fit $md/variants_native.csv
  snap model-fit-json model fit $md/variants_native.csv --format json
  snap model-strong model strong $md/strong.csv --cycles 20
  snap model-strong-json model strong $md/strong.csv --cycles 20 --format json
  snap model-strong-missing model strong $md/strong.csv
  snap model-scaling model scaling $md/runs_amdahl.csv
  snap model-scaling-json model scaling $md/runs_amdahl.csv --format json
  snap model-pop model pop $md/pop_4ranks.csv
  snap model-pop-ref model pop $md/pop_4ranks_counters.csv --reference $md/pop_ref_2ranks_counters.csv --format json
  snap model-pop-hybrid model pop $md/pop_hybrid.csv --format json
  snap model-compose model compose --flops 1e12 --gflops 50 --bytes 4e11 --bandwidth-gbs 100 --mpi-s 0.5
  snap model-compose-json model compose --compute-s 2 --memory-s 3 --mpi-s 0.5 --sigma 0.8 --format json
  snap model-decompose model decompose $md/decomposition.csv
  snap model-decompose-json model decompose $md/decomposition.csv --format json
  snap model-peak model peak --dag $md/cftb040.dag
  snap model-peak-json model peak --dag $md/cftb040.dag --format json
  snap model-predict model predict $md/variants_native.csv --cpi $md/cpi_a.json --proxy default/x86-64/triad --target default/x86-64/daxpy
  snap model-predict-json model predict $md/variants_native.csv --cpi $md/cpi_a.json --proxy default/x86-64/dot --target default/x86-64/gemm --format json
  snap model-similarity model similarity crates/counters/tests/data/import/perf-stat-clx.csv crates/counters/tests/data/import/perf-stat-vm.csv
  snap model-similarity-bad model similarity crates/counters/tests/data/seed001/raw_counters.json crates/counters/tests/data/seed001/raw_counters.json
  # counters (no PMU: imports, comparisons, lists)
  local cd=crates/counters/tests/data
  snap counters-import counters import $cd/import/perf-stat-clx.csv
  snap counters-import-json counters import $cd/import/perf-stat-clx.csv --format json
  snap counters-import-raw counters import $cd/import/perf-stat-raw-pmu.csv --format json
  snap counters-import-vm counters import $cd/import/perf-stat-vm.csv
  snap counters-import-bad counters import $cd/import/bad.csv
  snap counters-compare counters compare $cd/import/perf-stat-clx.csv $cd/import/perf-stat-raw-pmu.csv
  snap counters-compare-json counters compare $cd/import/perf-stat-clx.csv $cd/import/perf-stat-vm.csv --format json
  snap counters-metrics counters metrics
  snap counters-metrics-json counters metrics --format json
  snap counters-recipes-one counters recipes amd-zen4
  snap counters-validate-file counters validate --counted $cd/validate/format-fixture.json --format json
  snap counters-validate-synthetic counters validate --synthetic --format json
  # history, on a store of its own filled by `record` with metrics from files (`record`
  # prints each run's time: not kept)
  local i db="$scratch/history.db"
  for i in $(seq 12); do
    "$bin" record --db "$db" --metrics-json "$x/m.json" --tag case=snapshot -- \
      cp "$x/metrics$i.json" "$x/m.json" >/dev/null 2>&1
  done
  snap history-metrics history metrics --db "$db"
  snap history-changes history changes work --db "$db"
  snap history-changes-json history changes work --db "$db" --format json
  snap history-changes-pelt history changes work --db "$db" --method pelt
  snap history-changes-none history changes flops --db "$db"
  snap history-changes-unknown history changes nosuchmetric --db "$db"
  snap history-export-otava history export --format otava --metric work --db "$db" -o @F@/otava.csv
  # The run's date, commit and machine.
  sed -i -E 's/^[^,]+,([0-9]+),[^,]*,[^,]*,/@TIME@,\1,@COMMIT@,@MACHINE@,/' \
    "$out/history-export-otava.files/otava.csv"
  # profile (folded stacks written above)
  snap profile-import profile import "$x/before.folded"
  snap profile-import-json profile import "$x/after.folded" --format json --top 3
  snap profile-import-files profile import "$x/before.folded" --out-prefix @F@/before
  snap profile-diff profile diff "$x/before.folded" "$x/after.folded"
  snap profile-diff-json profile diff "$x/before.folded" "$x/after.folded" --format json --svg @F@/diff.svg
  snap profile-export-speedscope profile export "$x/before.folded" --to speedscope -o @F@/before.speedscope.json
  snap profile-export-hatchet profile export "$x/before.folded" --to hatchet -o @F@/before.hatchet.json
  snap profile-export-pprof profile export "$x/before.folded" --to pprof -o @F@/before.pb.gz
  # schema
  snap schema-list schema
  snap schema-profile schema profile
  snap schema-machine schema machine
  snap schema-mix schema mix
  snap schema-analyze schema analyze
}

case "${1:-}" in
  record) [ $# -ge 2 ] || usage; record "$2" "${3:-}" ;;
  compare) [ $# -eq 3 ] || usage; compare "$2" "$3" ;;
  *) usage ;;
esac
