#!/usr/bin/env python3
"""Change-point detection on the labelled evaluation set (evalset.py): hpcscope's detectors
against Apache Otava and ruptures, default settings, scored with F1 (margin 5) and covering
(cpd_metrics.py, van den Burg and Williams 2020).

Methods, all at their defaults, all on the same series:

* hpcscope robust       `changepoint::detect` with `Method::default()` (the default detector);
* hpcscope E-divisive   `Method::EDivisive(EDivisiveOptions::default())`;
* hpcscope PELT         `Method::Pelt(PeltOptions::default())`;
* Otava                 `otava.analysis.compute_change_points(series)` (window 50, p 0.001);
* ruptures Pelt/Binseg  `rpt.Pelt(model="l2")` / `rpt.Binseg(model="l2")` (min_size 2,
                        jump 5) on the series standardised by its standard deviation, penalty
                        3 ln n;
* zero                  no change at all (the reference any detector must beat).

The Python methods cannot take missing values: they get the series without them, and their
indices are mapped back (hpcscope does the same internally). Scores are per series, then
averaged over series (as in the paper); the tables give them per family and overall.

Usage: python3 bench/history/eval_real.py [--split dev|test] [--per-family 24] [--out DIR]
[--set base|stress] [--exe PATH]
(`--set stress`: the stress families of evalset.build_stress, long and large series, scored
for hpcscope robust and E-divisive only, with precision and recall as well; `--exe` runs
another build of the cpd_eval example, e.g. an older one to compare with;
`bash bench/history/run.sh` installs the pinned packages of requirements.txt into a virtual
environment and runs this script and eval.py).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import evalset  # noqa: E402
from cpd_metrics import covering, f_measure  # noqa: E402


def clean(values):
    idx = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    return idx, [values[i] for i in idx]


def run_python_methods(series):
    found = {s["id"]: {} for s in series}
    secs = {}
    try:
        from otava.analysis import compute_change_points
        import importlib.metadata as md
        name = "Otava " + md.version("apache-otava")
        t0 = time.perf_counter()
        for s in series:
            idx, v = clean(s["values"])
            cps = compute_change_points(v)[0] if len(v) >= 2 else []
            found[s["id"]][name] = [idx[c.index] for c in cps]
        secs[name] = time.perf_counter() - t0
    except ImportError as e:
        print(f"Apache Otava not importable ({e}); `pip install -r bench/history/requirements.txt`")
    try:
        import numpy as np
        import ruptures as rpt
        import importlib.metadata as md
        ver = md.version("ruptures")
        for algo in ["Pelt", "Binseg"]:
            name = f"ruptures {ver} {algo}"
            t0 = time.perf_counter()
            for s in series:
                idx, v = clean(s["values"])
                x = np.asarray(v, dtype=float)
                sd = x.std()
                res = []
                if len(x) >= 4 and sd > 0:
                    z = ((x - x.mean()) / sd).reshape(-1, 1)
                    res = getattr(rpt, algo)(model="l2").fit(z).predict(pen=3 * math.log(len(x)))[:-1]
                found[s["id"]][name] = [idx[c] for c in res]
            secs[name] = time.perf_counter() - t0
    except ImportError as e:
        print(f"ruptures not importable ({e}); `pip install -r bench/history/requirements.txt`")
    return found, secs


def cpd_eval(a):
    """The cpd_eval binary: `--exe`, else the release build (built unless `--no-build`)."""
    if a.exe:
        return a.exe
    if not a.no_build:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "hpcscope-history", "--example", "cpd_eval"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.join(target, "release", "examples", "cpd_eval")


def stress(a):
    """The stress families: hpcscope robust and E-divisive (PELT takes minutes on 100,000 runs
    without a change, the Python methods longer), per family precision, recall, F1 (margin 5),
    cover and the changes found per series (true ones in brackets)."""
    out = a.out or tempfile.mkdtemp(prefix="hpcscope-cpd-stress-")
    os.makedirs(out, exist_ok=True)
    series = evalset.build_stress(a.split)
    sp = os.path.join(out, f"stress_{a.split}.json")
    json.dump(series, open(sp, "w"))
    exe = cpd_eval(a)
    op = os.path.join(out, f"hpcscope_stress_{a.split}.json")
    subprocess.run([exe, "--series", sp, op, "--methods", "robust,edivisive"], check=True)
    ours = json.load(open(op))
    names = {"robust": "hpcscope robust", "edivisive": "hpcscope E-divisive"}
    found = {f["id"]: f for f in ours["found"]}
    fams = list(evalset.STRESS_FAMILIES)
    print(f"stress set ({a.split} split): {len(series)} series; precision / recall / F1 (margin 5) / cover, mean over series; changes found per series [true]")
    print()
    print("| family | series | runs | " + " | ".join(names.values()) + " |")
    print("|---|---:|---:|" + "---|" * len(names))
    rows = {m: [] for m in names}
    for s in series:
        n = len(s["values"])
        for m in names:
            pred = sorted(set(found[s["id"]][m]))
            f1, p, r = f_measure([s["change_points"]], pred, 5, return_pr=True)
            cov = covering([s["change_points"]], pred, n)
            rows[m].append((s["family"], p, r, f1, cov, len(pred), len(s["change_points"])))
    for fam in fams + ["all"]:
        sel = [s for s in series if fam in ("all", s["family"])]
        runs = sorted({len(s["values"]) for s in sel})
        rr = f"{runs[0]:,}" if len(runs) == 1 else f"{runs[0]:,}-{runs[-1]:,}"
        line = f"| {fam} | {len(sel)} | {rr} |"
        for m in names:
            v = [x for x in rows[m] if fam in ("all", x[0])]
            avg = lambda k: sum(x[k] for x in v) / len(v)  # noqa: E731
            line += f" {avg(1):.3f} / {avg(2):.3f} / {avg(3):.3f} / {avg(4):.3f}, {avg(5):.2f} [{avg(6):.2f}] |"
        print(line)
    print()
    print("seconds: " + ", ".join(f"{names[k]} {v:.2f}" for k, v in ours["seconds"].items() if k in names))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="test", choices=["dev", "test"])
    ap.add_argument("--per-family", type=int, default=24)
    ap.add_argument("--out", default=None)
    ap.add_argument("--no-build", action="store_true", help="use the cpd_eval example already built")
    ap.add_argument("--set", default="base", choices=["base", "stress"])
    ap.add_argument("--exe", default=None, help="the cpd_eval binary to run (default: build it)")
    a = ap.parse_args()
    if a.set == "stress":
        return stress(a)
    out = a.out or tempfile.mkdtemp(prefix="hpcscope-cpd-real-")
    os.makedirs(out, exist_ok=True)
    series = evalset.build(a.split, a.per_family)
    sp = os.path.join(out, f"series_{a.split}.json")
    json.dump(series, open(sp, "w"))
    exe = cpd_eval(a)
    op = os.path.join(out, f"hpcscope_{a.split}.json")
    subprocess.run([exe, "--series", sp, op], check=True)
    ours = json.load(open(op))
    names = {"robust": "hpcscope robust", "edivisive": "hpcscope E-divisive", "pelt": "hpcscope PELT"}
    found = {f["id"]: {names[k]: f[k] for k in names} for f in ours["found"]}
    secs = {names[k]: v for k, v in ours["seconds"].items()}
    py, pysecs = run_python_methods(series)
    for i, d in py.items():
        found[i].update(d)
    secs.update(pysecs)
    methods = list(names.values()) + list(pysecs) + ["zero"]
    for s in series:
        found[s["id"]]["zero"] = []
    fams = sorted({s["family"] for s in series}, key=lambda f: (f.startswith("real"), f))
    score = {}
    for s in series:
        n = len(s["values"])
        for m in methods:
            pred = sorted(set(found[s["id"]][m]))
            f1 = f_measure([s["change_points"]], pred, 5)
            cov = covering([s["change_points"]], pred, n)
            score.setdefault(m, []).append((s["family"], f1, cov, len(pred)))
    json.dump({"series": a.split, "found": found}, open(os.path.join(out, f"found_{a.split}.json"), "w"))
    n_cp = sum(len(s["change_points"]) for s in series) / len(series)
    print(f"{len(series)} series ({a.split} split), {n_cp:.2f} true changes per series; F1 margin 5 / cover, mean over series")
    print()
    print("| family | n | " + " | ".join(methods) + " |")
    print("|---|---:|" + "---|" * len(methods))
    for fam in fams + ["all"]:
        row = f"| {fam} | {sum(1 for s in series if fam in ('all', s['family']))} |"
        for m in methods:
            v = [x for x in score[m] if fam in ("all", x[0])]
            f1 = sum(x[1] for x in v) / len(v)
            cov = sum(x[2] for x in v) / len(v)
            row += f" {f1:.3f} / {cov:.3f} |" if fam != "all" else f" **{f1:.3f} / {cov:.3f}** |"
        print(row)
    print()
    print("| method | F1 | cover | changes per series | seconds |")
    print("|---|---:|---:|---:|---:|")
    for m in methods:
        v = score[m]
        print(f"| {m} | {sum(x[1] for x in v)/len(v):.3f} | {sum(x[2] for x in v)/len(v):.3f} | "
              f"{sum(x[3] for x in v)/len(v):.2f} | {secs.get(m, 0):.3f} |")


if __name__ == "__main__":
    sys.exit(main())
