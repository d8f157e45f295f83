#!/usr/bin/env bash
# Runs both change-point evaluations with the pinned Python packages (Apache Otava, ruptures)
# installed into a virtual environment (default: target/cpd-venv, reused between runs).
#   bash bench/history/run.sh [--split test|dev]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${CPD_VENV:-$root/target/cpd-venv}"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q -r "$root/bench/history/requirements.txt"
cd "$root"
"$venv/bin/python" bench/history/eval_real.py "$@"
"$venv/bin/python" bench/history/eval.py
