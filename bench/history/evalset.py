"""The labelled evaluation set of change-point detection on performance-like histories.

Families of series, each with the index of every true change (first point after it):

* steps       piecewise-constant level around 100, Gaussian noise (1 to 3 % of the level);
* heavy       the same with heavy-tailed noise (Student t, 3 d.o.f., or log-normal) and 2 % of
              slow runs (outliers 5 to 15 noise sd up);
* trend       a linear drift of 3 to 15 noise sd over the series (not a change), with 0-3 steps;
* curve       smooth growth or saturation (exponential, square root, logistic) of 10 to 50
              noise sd, little noise, with 0-2 steps;
* seasonal    a weekly (7), monthly (12) or daily (24) pattern of 1 to 4 noise sd (sinusoid,
              weekday/weekend or random profile), with 0-3 steps;
* quantized   values rounded to a timer resolution q (noise 0.3 to 1 q: many repeated values),
              with 0-3 steps of at least 2 q;
* gaps        steps with 3 to 15 % of the runs missing (NaN), some in stretches;
* ar1         steps in AR(1) noise (phi 0.3 to 0.7);
* randomwalk  a slowly wandering level (random walk of 0.05 to 0.2 noise sd per run), with
              0-2 steps of 4 to 10 noise sd;
* short       12 to 40 runs, 0 or 1 step of 4 to 8 noise sd;
* real        CPU time of four workloads recorded on this machine (record_real.py), labelled
              by the commits that changed the work; and each one again with a simulated
              drift, weekly load pattern, timer quantization or missing runs.

Steps are 2 to 8 noise sd (random sign) unless said otherwise, at least 15 runs apart and
10 from the ends; 0 to 4 per series; lengths 80 to 500. Two disjoint splits: `dev` (seeds
1000+, recording A) to develop with, `test` (seeds 5000+, recording B) to report.

The stress set (`build_stress`, `eval_real.py --set stress`): families where a detector
fails at scale or under strong autocorrelation, each a reported failure of hpcscope's
detectors turned into labelled series:

* tail        one step of 7 to 20 noise sd at 30 to 70 % of a long history (200,000 to
              1,000,000 runs), then nothing: uniform noise of width w (as timers give) or
              Gaussian noise; the detectors must not cut the stationary tail;
* tail1m      the same with 1,000,000 runs: uniform noise [1.00, 1.01], a step to
              [1.05, 1.06] at run 600,001 (index 600,000);
* ar1big      300 runs around 100 with three large steps (x1.15 to x1.25 near run 80, x0.82
              to x0.88 near 170, x1.25 to x1.35 near 240, each moved by up to 10 runs) in
              AR(1) noise e_t = 0.9 e_(t-1) + N(0, 2 sqrt(1 - 0.81)) (sd 2);
* iid10k      10,000 runs of i.i.d. noise (uniform or Gaussian), no change;
* iid100k     100,000 runs of the same, no change.
"""
import csv
import json
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ["steps", "heavy", "trend", "curve", "seasonal", "quantized", "gaps", "ar1", "randomwalk", "short"]


def _cps(rng, n, k, gap=15, edge=10):
    out = []
    tries = 0
    while len(out) < k and tries < 10000:
        tries += 1
        c = int(rng.integers(edge, n - edge + 1))
        if all(abs(c - o) >= gap for o in out):
            out.append(c)
    return sorted(out)


def _level(n, cps, steps, base=0.0):
    lev = np.full(n, base)
    for c, s in zip(cps, steps):
        lev[c:] += s
    return lev


def _steps(rng, k, lo=2.0, hi=8.0):
    return [float(rng.uniform(lo, hi) * rng.choice([-1, 1])) for _ in range(k)]


def make(family, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(80, 501))
    k = int(rng.integers(0, 5))
    s = float(rng.uniform(1.0, 3.0))  # noise sd, level 100
    if family == "steps":
        cps = _cps(rng, n, k)
        x = 100 + _level(n, cps, [v * s for v in _steps(rng, len(cps))]) + s * rng.standard_normal(n)
    elif family == "heavy":
        cps = _cps(rng, n, k)
        if rng.random() < 0.5:
            e = rng.standard_t(3, n) / np.sqrt(3.0)
        else:
            e = (rng.lognormal(0, 0.5, n) - np.exp(0.125)) / 0.6
        x = 100 + _level(n, cps, [v * s for v in _steps(rng, len(cps), 3, 8)]) + s * e
        out = rng.random(n) < 0.02
        x[out] += s * rng.uniform(5, 15, out.sum())
    elif family == "trend":
        cps = _cps(rng, n, min(k, 3))
        d = float(rng.uniform(3, 15) * rng.choice([-1, 1]) * s)
        x = 100 + d * np.arange(n) / n + _level(n, cps, [v * s for v in _steps(rng, len(cps), 3, 8)])
        x += s * rng.standard_normal(n)
    elif family == "curve":
        cps = _cps(rng, n, min(k, 2))
        a = float(rng.uniform(10, 50) * s)
        u = np.arange(n) / n
        shape = rng.integers(0, 3)
        f = (np.expm1(2.5 * u) / np.expm1(2.5)) if shape == 0 else (np.sqrt(u) if shape == 1 else 1 / (1 + np.exp(-10 * (u - 0.5))))
        x = 100 + a * f * rng.choice([-1, 1]) + _level(n, cps, [v * s for v in _steps(rng, len(cps), 4, 10)])
        x += 0.5 * s * rng.standard_normal(n)
    elif family == "seasonal":
        cps = _cps(rng, n, min(k, 3))
        p = int(rng.choice([7, 12, 24]))
        amp = float(rng.uniform(1, 4) * s)
        kind = rng.integers(0, 3)
        ph = np.arange(n) % p
        if kind == 0:
            prof = np.sin(2 * np.pi * np.arange(p) / p + rng.uniform(0, 6.3))
        elif kind == 1:
            prof = np.where(np.arange(p) >= p - max(1, p * 2 // 7), -1.0, 0.4)
        else:
            prof = rng.standard_normal(p)
            prof /= np.abs(prof).max()
        x = 100 + amp * prof[ph] + _level(n, cps, [v * s for v in _steps(rng, len(cps), 2.5, 8)])
        x += s * rng.standard_normal(n)
    elif family == "quantized":
        cps = _cps(rng, n, min(k, 3))
        q = 1.0
        sd = float(rng.uniform(0.3, 1.0))
        base = float(rng.uniform(3, 30))
        st = [float(rng.uniform(2, 6) * max(sd, q) * rng.choice([-1, 1])) for _ in cps]
        x = np.round(base + _level(n, cps, st) + sd * rng.standard_normal(n))
        x = np.maximum(x, 0.0)
    elif family == "gaps":
        cps = _cps(rng, n, k)
        x = 100 + _level(n, cps, [v * s for v in _steps(rng, len(cps))]) + s * rng.standard_normal(n)
        frac = rng.uniform(0.03, 0.15)
        miss = rng.random(n) < frac / 2
        for _ in range(int(rng.integers(0, 3))):
            a = int(rng.integers(0, n - 8))
            miss[a:a + int(rng.integers(3, 8))] = True
        # A missing run keeps its label index: the change is still at that run.
        x[miss] = np.nan
    elif family == "ar1":
        cps = _cps(rng, n, k)
        phi = float(rng.uniform(0.3, 0.7))
        e = np.zeros(n)
        inn = rng.standard_normal(n) * np.sqrt(1 - phi * phi)
        e[0] = rng.standard_normal()
        for t in range(1, n):
            e[t] = phi * e[t - 1] + inn[t]
        x = 100 + _level(n, cps, [v * s for v in _steps(rng, len(cps), 3, 8)]) + s * e
    elif family == "randomwalk":
        cps = _cps(rng, n, min(k, 2))
        eta = float(rng.uniform(0.05, 0.2) * s)
        walk = np.cumsum(eta * rng.standard_normal(n))
        x = 100 + walk + _level(n, cps, [v * s for v in _steps(rng, len(cps), 4, 10)]) + s * rng.standard_normal(n)
    elif family == "short":
        n = int(rng.integers(12, 41))
        cps = _cps(rng, n, int(rng.integers(0, 2)), gap=5, edge=5)
        x = 100 + _level(n, cps, [v * s for v in _steps(rng, len(cps), 4, 8)]) + s * rng.standard_normal(n)
    else:
        raise ValueError(family)
    return [None if not np.isfinite(v) else float(v) for v in x], [int(c) for c in cps]


def real(split, seed):
    """The recorded CPU-time histories (recording A for dev, B for test), raw and with one
    simulated condition each."""
    rec = "a" if split == "dev" else "b"
    meta = json.load(open(os.path.join(HERE, "data", f"real_histories_{rec}.json")))
    rows = list(csv.DictReader(open(os.path.join(HERE, "data", f"real_histories_{rec}.csv"))))
    rng = np.random.default_rng(seed)
    out = []
    for w, cps in meta["labels"].items():
        v = np.array([float(r["cpu_s"]) for r in rows if r["workload"] == w])
        out.append((f"real/{w}", [float(a) for a in v], list(cps)))
        n = len(v)
        kind = ["drift", "weekly", "quantized", "gaps"][len(out) // 2 % 4]
        y = v.copy()
        if kind == "drift":  # the machine slowly ageing: +5 to +15 % over the history
            y *= 1 + rng.uniform(0.05, 0.15) * np.arange(n) / n
        elif kind == "weekly":  # weekend runs 5 to 10 % faster (an idle machine)
            y *= np.where(np.arange(n) % 7 >= 5, 1 - rng.uniform(0.05, 0.10), 1.0)
        elif kind == "quantized":  # a timer of 1 ms resolution
            y = np.round(y * 1000) / 1000
        else:  # 10 % of runs lost
            y[rng.random(n) < 0.10] = np.nan
        out.append((f"real+{kind}/{w}", [None if not np.isfinite(a) else float(a) for a in y], list(cps)))
    return out


def build(split, per_family=24):
    base = 1000 if split == "dev" else 5000
    series = []
    for fi, fam in enumerate(FAMILIES):
        for i in range(per_family):
            vals, cps = make(fam, base + 100 * fi + i)
            series.append({"id": len(series), "family": fam, "values": vals, "change_points": cps})
    for name, vals, cps in real(split, base):
        series.append({"id": len(series), "family": name.split("/")[0], "name": name, "values": vals, "change_points": cps})
    return series


STRESS_FAMILIES = {"tail": 6, "tail1m": 1, "ar1big": 24, "iid10k": 12, "iid100k": 4}


def _iid(rng, n, width):
    """Uniform noise on [0, width) or Gaussian noise of the same sd, centred."""
    if rng.random() < 0.5:
        return rng.uniform(0.0, width, n) - width / 2
    return rng.standard_normal(n) * width / np.sqrt(12.0)


def make_stress(family, seed):
    rng = np.random.default_rng(seed)
    if family == "tail":
        n = int(rng.integers(200_000, 1_000_001))
        w = 0.01
        c = int(n * rng.uniform(0.3, 0.7))
        step = float(rng.uniform(7, 20) * w / np.sqrt(12.0) * rng.choice([-1, 1]))
        x = 1.0 + _iid(rng, n, w) + np.where(np.arange(n) >= c, step, 0.0)
        cps = [c]
    elif family == "tail1m":
        n = 1_000_000
        x = rng.uniform(1.00, 1.01, n)
        x[600_000:] += 0.05
        cps = [600_000]
    elif family == "ar1big":
        n = 300
        cps = [80 + int(rng.integers(-10, 11)), 170 + int(rng.integers(-10, 11)), 240 + int(rng.integers(-10, 11))]
        f = [rng.uniform(1.15, 1.25), rng.uniform(0.82, 0.88), rng.uniform(1.25, 1.35)]
        lev = np.full(n, 100.0)
        for c, k in zip(cps, f):
            lev[c:] *= k
        phi, sd = 0.9, 2.0
        e = np.zeros(n)
        e[0] = sd * rng.standard_normal()
        inn = rng.standard_normal(n) * sd * np.sqrt(1 - phi * phi)
        for t in range(1, n):
            e[t] = phi * e[t - 1] + inn[t]
        x = lev + e
    elif family in ("iid10k", "iid100k"):
        n = 10_000 if family == "iid10k" else 100_000
        x = 1.0 + _iid(rng, n, 0.01)
        cps = []
    else:
        raise ValueError(family)
    return [float(v) for v in x], [int(c) for c in cps]


def build_stress(split):
    """The stress families (see the module documentation), seeds 2000+ (dev) or 6000+ (test)."""
    base = 2000 if split == "dev" else 6000
    series = []
    for fi, (fam, count) in enumerate(STRESS_FAMILIES.items()):
        for i in range(count):
            vals, cps = make_stress(fam, base + 100 * fi + i)
            series.append({"id": len(series), "family": fam, "values": vals, "change_points": cps})
    return series
