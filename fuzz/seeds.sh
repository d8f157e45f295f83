#!/usr/bin/env bash
# Assembles the starting corpus of every fuzz target in fuzz/corpus/TARGET from the files the
# project already has (machines, profiles, scenarios, test fixtures, formulas) and fuzz/seeds.
# Safe to run again: files are copied under names derived from their content.
set -euo pipefail
cd "$(dirname "$0")"
root=..
add() { # add TARGET FILE...
  local t=$1; shift
  mkdir -p "corpus/$t"
  for f in "$@"; do
    [ -f "$f" ] || continue
    cp "$f" "corpus/$t/$(sha1sum "$f" | cut -c1-16)"
  done
}
add_prefixed() { # add_prefixed TARGET BYTE FILE...: the target's first byte chooses the reader
  local t=$1 b=$2; shift 2
  mkdir -p "corpus/$t"
  for f in "$@"; do
    [ -f "$f" ] || continue
    { printf "\\x$b"; cat "$f"; } > "corpus/$t/$b-$(sha1sum "$f" | cut -c1-16)"
  done
}
add machine_toml "$root"/data/machines/*.toml
add profile_json "$root"/examples/scenarios/*.json
add scenario_toml "$root"/examples/scenarios/*.toml
# Kerncraft's own machine files, where the peer tools are installed (scripts/setup.sh), each
# with no overrides (first byte 0) and with every override (1); and the hand-written ones.
for f in "$root"/target/peer-src/kerncraft-*/examples/machine-files/*.yml seeds/kerncraft_yaml/*; do
  [ -f "$f" ] || continue
  add_prefixed kerncraft_yaml 00 "$f"
  add_prefixed kerncraft_yaml 01 "$f"
done
add import_perf_csv "$root"/crates/counters/tests/data/import/*.csv
add import_raw "$root"/crates/counters/tests/data/seed001/*.json
add pmu_events $(find "$root"/crates/counters/tests/data/pmu-events -name '*.json')
for t in import_likwid_csv import_papi_json import_caliper_json import_markers plugin_stream merge_rank_files lackey_trace slurm_script profile_import cli_numbers; do
  add "$t" seeds/"$t"/*
done
# Every formula of the pmu-events files and the metric recipes, one per file.
mkdir -p corpus/metric_expr
python3 - "$root" <<'PY'
import glob, hashlib, json, os, sys, tomllib
root = sys.argv[1]
exprs = set()
for f in glob.glob(os.path.join(root, "crates/counters/tests/data/pmu-events/**/*.json"), recursive=True):
    for e in json.load(open(f)):
        if isinstance(e, dict) and e.get("MetricExpr"):
            exprs.add(e["MetricExpr"])
def strings(v, key=""):
    # Formulas: the values of a [formulas] table and of `formula` keys.
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "formulas" and isinstance(x, dict):
                exprs.update(y for y in x.values() if isinstance(y, str))
            strings(x, k)
    elif isinstance(v, list):
        for x in v:
            strings(x, key)
    elif isinstance(v, str) and key == "formula":
        exprs.add(v)
for f in glob.glob(os.path.join(root, "data/metrics/**/*.toml"), recursive=True):
    strings(tomllib.load(open(f, "rb")))
for e in exprs:
    name = hashlib.sha1(e.encode()).hexdigest()[:16]
    open(os.path.join("corpus/metric_expr", name), "w").write(e)
PY
# Profiles: an even first byte reads the rest as a file (perf script text, folded stacks,
# JSON); seeds/profile_import has the other forms.
add_prefixed profile_import 00 "$root"/crates/trace/tests/data/perf-script-utf8.txt
# Model CSVs: byte 0 generic table, 1 scaling runs, 2 POP run, 3 decomposition, 4 variants.
d="$root"/crates/models/tests/data
add_prefixed model_csv 00 "$d"/*.csv
add_prefixed model_csv 01 "$d"/runs_amdahl.csv "$d"/strong.csv
add_prefixed model_csv 02 "$d"/pop_*.csv
add_prefixed model_csv 03 "$d"/decomposition.csv
add_prefixed model_csv 04 "$d"/variants_native.csv "$d"/example_a.csv
for t in $(ls fuzz_targets | sed 's/\.rs$//'); do
  printf '%-20s %s seeds\n' "$t" "$(ls corpus/$t 2>/dev/null | wc -l)"
done
