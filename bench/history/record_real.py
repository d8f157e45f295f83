#!/usr/bin/env python3
"""Records real performance histories on this machine, with labelled changes.

A "history" is what a CI job sees: one run per commit of a small program, where a few commits
change the work the program does (the labelled change points) and everything else is the
machine's own run-to-run noise (other processes, frequency, caches, page placement).

Four workloads, written in C below and built with the system compiler, are run interleaved
(one run of each per commit, in a shuffled order) so that a burst of load from elsewhere hits
all of them alike:

* triad:   STREAM triad over 3 arrays (memory bound), R sweeps;
* sort:    qsort of N pseudo-random ints (branchy, cache resident);
* stencil: 5-point 2D Jacobi sweeps (cache and FP bound);
* spawn:   a short program (3 ms of dependent additions) started through `sh -c`: start-up
           costs about half of it, the noisiest.

Each workload's history has `--commits` points and 2 to 4 labelled changes at seeded random
positions (at least 20 commits apart and from the ends); at a change the work parameter is
multiplied by a factor between 0.80 and 1.25 (never within 4 % of 1), or, for the stencil,
the loop order is swapped (a code change: the same work, column-major access). Wall time and
CPU time (user + system of the child, getrusage) are recorded for every run.

Output: OUT.csv (workload, commit, variant, param, wall_s, cpu_s) and OUT.json (the labels,
the machine, the compiler, the date): the data files of the evaluation set (`eval_real.py`).

Usage: python3 bench/history/record_real.py [--commits 240] [--seed 17] [--out bench/history/data/real_histories]
"""
import argparse
import csv
import datetime
import json
import os
import platform
import random
import resource
import subprocess
import tempfile
import time

SRC = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    const char *w = argv[1];
    long p = atol(argv[2]);
    int colmajor = argc > 3 && atoi(argv[3]);
    double sink = 0;
    if (!strcmp(w, "triad")) {
        long n = 1L << 21;
        double *a = malloc(n * 8), *b = malloc(n * 8), *c = malloc(n * 8);
        for (long i = 0; i < n; i++) { b[i] = i * 0.5; c[i] = 1.0 / (i + 1); a[i] = 0; }
        for (long r = 0; r < p; r++) for (long i = 0; i < n; i++) a[i] = b[i] + 1.0001 * c[i];
        for (long i = 0; i < n; i += 4096) sink += a[i];
    } else if (!strcmp(w, "sort")) {
        int *v = malloc(p * sizeof(int));
        unsigned s = 12345;
        for (long i = 0; i < p; i++) { s = s * 1103515245u + 12345u; v[i] = (int)(s >> 1); }
        qsort(v, p, sizeof(int), cmp);
        sink = v[p / 2];
    } else if (!strcmp(w, "stencil")) {
        long n = 512;
        double *u = calloc(n * n, 8), *t = calloc(n * n, 8);
        for (long i = 0; i < n * n; i++) u[i] = (i * 7) % 13;
        for (long it = 0; it < p; it++) {
            if (colmajor) {
                for (long j = 1; j < n - 1; j++) for (long i = 1; i < n - 1; i++)
                    t[i * n + j] = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] + u[i * n + j + 1]);
            } else {
                for (long i = 1; i < n - 1; i++) for (long j = 1; j < n - 1; j++)
                    t[i * n + j] = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] + u[i * n + j + 1]);
            }
            double *x = u; u = t; t = x;
        }
        sink = u[n * n / 2 + 7];
    } else {
        for (long i = 0; i < p; i++) sink += (double)i * 1e-9;
    }
    printf("%g\n", sink);
    return 0;
}
"""

BASE = {"triad": 20, "sort": 1_500_000, "stencil": 60, "spawn": 3_000_000}


def schedule(rng, workload, commits):
    """Per commit: (variant name, param, colmajor); and the labelled change indices."""
    k = rng.randint(2, 4)
    cps = []
    tries = 0
    while len(cps) < k and tries < 10_000:
        tries += 1
        c = rng.randint(20, commits - 20)
        if all(abs(c - o) >= 20 for o in cps):
            cps.append(c)
    cps.sort()
    p, col = BASE[workload], 0
    out, v = [], 0
    for i in range(commits):
        if i in cps:
            v += 1
            if workload == "stencil" and rng.random() < 0.4:
                col = 1 - col
            else:
                while True:
                    f = rng.uniform(0.80, 1.25)
                    if abs(f - 1) >= 0.04:
                        break
                p = max(1, round(p * f))
        out.append((f"v{v}", p, col))
    return out, cps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=240)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "real_histories"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="hist-rec-")
    src = os.path.join(tmp, "kern.c")
    exe = os.path.join(tmp, "kern")
    open(src, "w").write(SRC)
    cc = os.environ.get("CC", "cc")
    subprocess.run([cc, "-O2", "-o", exe, src], check=True)
    cc_version = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    workloads = list(BASE)
    plans = {w: schedule(rng, w, a.commits) for w in workloads}
    rows = []
    t_start = time.time()
    for i in range(a.commits):
        order = workloads[:]
        rng.shuffle(order)
        for w in order:
            var, p, col = plans[w][0][i]
            cmd = [exe, w, str(p), str(col)]
            if w == "spawn":
                cmd = ["sh", "-c", " ".join(cmd) + " > /dev/null"]
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - t0
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            rows.append((w, i, var, p, col, f"{wall:.6f}", f"{cpu:.6f}"))
    with open(a.out + ".csv", "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["workload", "commit", "variant", "param", "colmajor", "wall_s", "cpu_s"])
        wr.writerows(rows)
    cpu_model = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    meta = {
        "recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "seconds": round(time.time() - t_start, 1),
        "machine": {"cpu": cpu_model, "cpus": os.cpu_count(), "kernel": platform.release()},
        "compiler": cc_version,
        "commits": a.commits,
        "seed": a.seed,
        "note": "2-core machine shared with other jobs while recording: the noise is real, bursts included",
        "labels": {w: plans[w][1] for w in workloads},
        "recorded_by": "bench/history/record_real.py",
    }
    json.dump(meta, open(a.out + ".json", "w"), indent=1)
    print(f"wrote {a.out}.csv ({len(rows)} runs) and {a.out}.json in {meta['seconds']} s")


if __name__ == "__main__":
    main()
