"""The tables of bench/projection/real_apps.sh from validate's validation.json files.

    python3 real_apps_report.py OUTDIR CASE...

For each CASE, OUTDIR/CASE/validation.json (hpcscope validate --build scalar=... --build
sse2=... --build avx2=... --build O1=...) and OUTDIR/CASE-check.txt (each build's own
output, one line per build, `LABEL: ...`). Prints markdown tables: per build, per pair, then
the totals against the goals.
"""

import json
import re
import statistics
import sys

WIDTH = {"scalar", "sse2", "avx2"}


def kind(a, b):
    pair = {a, b}
    if pair <= WIDTH:
        return "width"
    if pair == {"avx2", "O1"}:
        return "opt level"
    return "opt level + width"


def pct(x):
    return "-" if x is None else f"{x:+.1%}"


def spread_width(s):
    return 0.0 if not s else s["max"] - s["min"]


def flops_of(build):
    return sum(t.get("flops") or 0 for r in build["profile"]["regions"] for t in r["threads"])


def own_figure(line):
    """The program's own figure from its output line."""
    m = re.search(r"FFT n=\d+ GFLOP/s ([\d.]+)", line)
    if m:
        return f"hpcc FFT {float(m.group(1)):.3f} GFLOP/s"
    m = re.search(r"triad ([\d.]+) GB/s", line)
    if m:
        return f"hpcc triad {float(m.group(1)):.2f} GB/s"
    m = re.search(r"flops=(\d+) GFLOP/s ([\d.]+) residual ([\d.]+) (\w+)", line)
    if m:
        return (f"own count {float(m.group(1)):.4g} FLOPs, {float(m.group(2)):.3f} GFLOP/s, "
                f"residual {m.group(3)} {m.group(4)}")
    m = re.search(r"nominal_flops=(\d+) residual llt ([\d.]+) lu ([\d.]+) (\w+)", line)
    if m:
        return (f"nominal {float(m.group(1)):.4g} FLOPs, residuals {m.group(2)} / {m.group(3)} "
                f"{m.group(4)}")
    return line.strip()[:60]


def med(v):
    return statistics.median(v) if v else None


def totals(label, rs):
    n = len(rs)
    if not n:
        return f"| {label} | 0 | - | - | - | - | - |"
    inside = sum(r["inside"] for r in rs) / n
    width = med([r["width"] for r in rs])
    pe = med([abs(r["pe"]) for r in rs if r["pe"] is not None])
    ke = med([abs(r["ke"]) for r in rs if r["ke"] is not None])
    skill = None if pe is None or not ke else 1 - pe / ke
    return (f"| {label} | {n} | {inside:.0%} | {width:.2f} | "
            + ("-" if pe is None else f"{pe:.1%}") + " | "
            + ("-" if ke is None else f"{ke:.1%}") + " | "
            + ("-" if skill is None else f"{skill:+.2f}") + " |")


def main():
    out, cases = sys.argv[1], sys.argv[2:]
    rows, loads, build_rows, checks = [], [], [], []
    for case in cases:
        v = json.load(open(f"{out}/{case}/validation.json"))
        loads.append((case, v.get("load_average_before"), v.get("load_average_after"), v.get("seconds")))
        own = {}
        for line in open(f"{out}/{case}-check.txt"):
            if ":" in line:
                label, rest = line.split(":", 1)
                own[label.strip()] = rest
        builds = {b["label"]: b for b in v["builds"]}
        flops = {k: flops_of(b) for k, b in builds.items()}
        for label, b in builds.items():
            parts = b["widths"]["parts"]
            fp = ", ".join(f"{p['vector_bits']}b {p['instructions']:.0%}"
                           for p in parts if p["instructions"] > 0.0005) or "none"
            sp = b.get("spread")
            build_rows.append(
                f"| {case} | {label} | {b['gflops']:.3f} | "
                + ("-" if not sp else f"{spread_width(sp):.0%}")
                + f" | {flops[label]:.4g} | {fp} | {own_figure(own.get(label, ''))} |")
        for p in v["pairs"]:
            s, t = p["source"], p["target"]
            val, iv = p["validation"], p["interval"]
            src_spread = ((p.get("projection") or {}).get("widening") or {}).get("source")
            # validate's own FLOPs ratio (target over source) and speed-up (its
            # PairResult::speedup); from the builds' FLOPs for files of an older validate.
            fs, ft = flops[s], flops[t]
            fr = p.get("flops_ratio") or (ft / fs if fs and ft else 1.0)
            speedup = p["measured_gflops"] / p["source_gflops"] / fr
            # As validate decides it: the speed-up (time), not the GFLOP/s ratio, against
            # twice the noisier build's spread.
            changed = abs(speedup - 1) > 2 * max(
                spread_width(src_spread), spread_width(val.get("spread")))
            point = (p.get("point") or {}).get("gflops")
            rows.append(dict(case=case, code=case.split("-")[0].replace("fft", "hpcc").replace("stream", "hpcc"),
                             kind=kind(s, t), inside=val["inside_within_noise"], width=iv["hi"] / iv["lo"],
                             pe=val.get("point_error"), ke=val.get("kwack_error"), changed=changed))
            kw = p.get("kwack_gflops")
            print_row = (
                f"| {case} | {s} -> {t} | {kind(s, t)} | {p['measured_gflops']:.3f} | x{speedup:.2f}"
                + ("" if abs(fr - 1) < 0.01 else f" (FLOPs x{fr:.2f})")
                + f" | [{iv['lo']:.3f}, {iv['hi']:.3f}] | {iv['hi'] / iv['lo']:.2f} | "
                + ("inside" if val["inside_within_noise"] else "outside") + " | "
                + ("-" if point is None else f"{point:.3f} ({pct(val.get('point_error'))})") + " | "
                + ("-" if kw is None else f"{kw:.3f} ({pct(val.get('kwack_error'))})") + " | "
                + ("yes" if changed else "no") + " |")
            rows[-1]["line"] = print_row
        ch = (v["summary"].get("changed") or {}).get("summary", {}).get("weighted", {}).get("pairs", 0)
        mine = sum(r["changed"] for r in rows if r["case"] == case)
        if ch != mine:
            checks.append(f"{case}: validate counts {ch} changed pairs, this table {mine}")
    if not rows:
        sys.exit("real_apps: no pairs in the validation files")

    print("Builds (measured GFLOP/s: the median of the timed runs, each the build's counted FLOPs")
    print("over its CPU time; spread: fastest - slowest over the median; FP instructions by width):")
    print()
    print("| case | build | GFLOP/s | spread | counted FLOPs | FP instructions by width | program's own figure |")
    print("|---|---|---|---|---|---|---|")
    for b in build_rows:
        print(b)
    print()
    print("| case | pair | kind | measured GFLOP/s | measured speed-up | interval | width | inside | point (error) | Kwack (error) | changed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(r["line"])
    print()
    print("| pairs | n | inside | median width | median point error | median Kwack error | skill vs Kwack |")
    print("|---|---|---|---|---|---|---|")
    print(totals("all", rows))
    for k in ("width", "opt level", "opt level + width"):
        print(totals(k, [r for r in rows if r["kind"] == k]))
    for code in dict.fromkeys(r["code"] for r in rows):
        print(totals(code, [r for r in rows if r["code"] == code]))
    changed = [r for r in rows if r["changed"]]
    print(totals("changed", changed))
    for k in ("width", "opt level", "opt level + width"):
        print(totals(f"changed, {k}", [r for r in changed if r["kind"] == k]))
    print()
    n = len(rows)
    inside = sum(r["inside"] for r in rows) / n
    width = med([r["width"] for r in rows])
    pe = med([abs(r["pe"]) for r in rows if r["pe"] is not None])
    ok_all = (inside >= 0.8, width <= 1.5, pe is not None and pe <= 0.05)
    names = ("inside >= 80 %", "median width <= 1.5", "median point error <= 5 %")
    print("all pairs: " + "; ".join(f"{m}: {'met' if o else 'NOT met'}" for m, o in zip(names, ok_all)))
    if changed:
        ci = sum(r["inside"] for r in changed) / len(changed)
        cpe = med([abs(r["pe"]) for r in changed if r["pe"] is not None])
        cke = med([abs(r["ke"]) for r in changed if r["ke"] is not None])
        skill = None if cpe is None or not cke else 1 - cpe / cke
        print(f"changed pairs ({len(changed)} of {n}): inside {ci:.0%} (goal >= 80 %: "
              f"{'met' if ci >= 0.8 else 'NOT met'}); point error {cpe:.1%} against Kwack {cke:.1%}, "
              f"skill {skill:+.2f} (goal >= 0.5: {'met' if skill is not None and skill >= 0.5 else 'NOT met'})")
    else:
        print("changed pairs: none (no measured change above twice the runs' spread)")
    for c in checks:
        print("note: " + c)
    for case, lb, la, secs in loads:
        f = lambda x: "-" if not x else " ".join(f"{y:.2f}" for y in x)
        print(f"load average during {case}: {f(lb)} -> {f(la)}"
              + ("" if secs is None else f" (validate {secs:.0f} s)"))


if __name__ == "__main__":
    main()
