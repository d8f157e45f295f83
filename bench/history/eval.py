#!/usr/bin/env python3
"""Change-point detection on labelled synthetic histories: hpcscope against Apache Otava.

(The realistic evaluation set, with trends, seasonality, quantization, gaps and recorded
histories, is `eval_real.py`.)

Builds and runs the `cpd_eval` example of hpcscope-history, which generates the histories
(steps of 1, 2, 5, 10 % under 0.5 to 3 % noise, 3 changes per 300-point history, 1 % outliers,
a slow drift in half of them), runs hpcscope's robust detector (the default), E-divisive and PELT on them and writes both
the histories and the detections as JSON. This script then runs Apache Otava's
`compute_change_points` (same window 50 and max p-value 0.001) on the *same* histories, if
the `apache-otava` package is importable, and prints precision, recall and F1 per
(step, noise) cell for every detector, matching a detection to a true change within +-5
points (greedy by distance, each true change matched once), plus the time each took.

Usage: python3 bench/history/eval.py [--per-cell N] [--out DIR] [--big N]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def score(truth, found, tol):
    pairs = sorted((abs(t - f), i, j) for i, t in enumerate(truth) for j, f in enumerate(found) if abs(t - f) <= tol)
    ut, uf, tp = set(), set(), 0
    for _, i, j in pairs:
        if i not in ut and j not in uf:
            ut.add(i)
            uf.add(j)
            tp += 1
    return tp, len(found) - tp, len(truth) - tp


def prf(tp, fp, fn):
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-cell", type=int, default=40)
    ap.add_argument("--out", default=None)
    ap.add_argument("--big", type=int, default=100000, help="points of the single long history timed (0: skip)")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="hpcscope-cpd-")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "hpcscope-history", "--example", "cpd_eval"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    exe = os.path.join(target, "release", "examples", "cpd_eval")
    subprocess.run([exe, out, "--per-cell", str(a.per_cell)], check=True, stdout=subprocess.DEVNULL)
    hist = json.load(open(os.path.join(out, "histories.json")))
    ours = json.load(open(os.path.join(out, "hpcscope.json")))
    tol = ours["tolerance"]
    found = {f["id"]: f for f in ours["found"]}

    detectors = ["hpcscope robust", "hpcscope E-divisive", "hpcscope PELT"]
    otava_time = None
    try:
        from otava.analysis import compute_change_points
        import importlib.metadata as md
        otava_version = md.version("apache-otava")
        detectors.append("Otava " + otava_version)
        t0 = time.perf_counter()
        for h in hist:
            cps, _ = compute_change_points(list(h["values"]), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
            found[h["id"]]["otava"] = [c.index for c in cps]
        otava_time = time.perf_counter() - t0
    except ImportError as e:
        print(f"Apache Otava not importable ({e}); `pip install apache-otava` to compare.")

    keys = {"hpcscope robust": "robust", "hpcscope E-divisive": "edivisive", "hpcscope PELT": "pelt"}
    cells = {}
    for h in hist:
        c = cells.setdefault((h["step"], h["noise"]), {d: [0, 0, 0] for d in detectors})
        for d in detectors:
            k = keys.get(d, "otava")
            tp, fp, fn = score(h["change_points"], found[h["id"]][k], tol)
            c[d][0] += tp
            c[d][1] += fp
            c[d][2] += fn

    n = len(hist[0]["values"])
    print(f"{len(hist)} histories of {n} points, {a.per_cell} per cell, 3 changes each, 1% outliers, drift in half; tolerance +-{tol}")
    head = "| step | noise | step/noise | " + " | ".join(f"{d} P / R / F1" for d in detectors) + " |"
    print(head)
    print("|" + "---|" * (3 + len(detectors)))
    target_cells = {d: [0, 0, 0] for d in detectors}
    for (step, noise), c in sorted(cells.items()):
        row = f"| {step*100:.0f}% | {noise*100:.1f}% | {step/noise:.2g} |"
        for d in detectors:
            p, r, f = prf(*c[d])
            row += f" {p:.3f} / {r:.3f} / **{f:.3f}** |"
            if step >= 2 * noise:
                for i in range(3):
                    target_cells[d][i] += c[d][i]
        print(row)
    print()
    print("Pooled over the cells with step >= 2 x noise:")
    for d in detectors:
        p, r, f = prf(*target_cells[d])
        print(f"  {d}: P {p:.3f}  R {r:.3f}  F1 {f:.3f}")
    print()
    print(f"Time over the {len(hist)} histories: hpcscope robust {ours['seconds_robust']:.3f} s, "
          f"E-divisive {ours['seconds_edivisive']:.3f} s, PELT {ours['seconds_pelt']:.3f} s"
          + (f", Otava {otava_time:.3f} s ({otava_time / ours['seconds_robust']:.0f}x robust)" if otava_time else ""))

    if a.big:
        r = subprocess.run([exe, "--big", str(a.big), "--dump", out], check=True, capture_output=True, text=True)
        print(r.stdout.strip())
        if otava_time is not None:
            big = json.load(open(os.path.join(out, "big.json")))
            t0 = time.perf_counter()
            cps, _ = compute_change_points(list(big["values"]), window_len=50, max_pvalue=0.001, min_magnitude=0.0)
            t = time.perf_counter() - t0
            f = prf(*score(big["change_points"], [c.index for c in cps], tol))[2]
            print(f"Otava on the same {a.big}-point history: {t:.3f} s ({len(cps)} found, F1 {f:.3f}); "
                  f"{t / big['seconds_robust']:.0f}x hpcscope robust, {t / big['seconds_edivisive']:.0f}x hpcscope E-divisive")


if __name__ == "__main__":
    sys.exit(main())
