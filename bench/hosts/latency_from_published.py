#!/usr/bin/env python3
"""Adds FP operation latencies taken from published tables to a host record.

A host recorded before `hpcscope bench` measured latencies has no `[[peaks.latencies]]`
in its machine file, and the host cannot be measured again from here. This writes them
from published tables instead: add, mul and FMA from `data/published/fp-latency.toml`,
divide and square root from the `latency_cycles` of `data/published/divider.toml`. For
each precision, operation and width of the record's peaks (scalar, 128, 256, and 512 where
the record has 512-bit peaks) the published latency `L` (core cycles) becomes
`ns = L / f`, with `f` the record's own measured clock for that width (its scalar-code
clock up to 256 bits, `frequency_ghz` under 512-bit load for 512-bit forms, as
divider_from_published.py picks it). Each entry's provenance names the table row, its
source and the clock used. The record's top-level `scalar_frequency_ghz` is set from its
provenance's "scalar code: X GHz" when absent.

    latency_from_published.py HOST_DIR CPU_ID [--check]

CPU_ID is an `id` of both tables (`zen3`, `zen4`, `golden-cove`). The entries go at the end
of the `[[peaks]]` section of their precision, sorted by (width, operation). A machine file
that already has latencies is refused: measured values are never replaced. `--check`
prints what would be written and changes nothing.
"""

import argparse
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
FP_LATENCY = ROOT / "data" / "published" / "fp-latency.toml"
DIVIDER = ROOT / "data" / "published" / "divider.toml"

# The encoding whose row is taken at each width: the forms an x86-64-v3 build and bench's
# kernels use (VEX), the legacy SSE form where no VEX row is given, EVEX at 512 bits.
PREFERENCE = {512: ["evex"], None: ["vex", "sse", "evex"]}
OPS = ("add", "div", "fma", "mul", "sqrt")


def fail(msg):
    print(f"latency_from_published: {msg}", file=sys.stderr)
    sys.exit(2)


def clocks(machine):
    """(scalar-code clock, clock under the widest load, whether the scalar one was given) of
    the record, GHz."""
    top = machine.get("frequency_ghz")
    if not isinstance(top, (int, float)) or top <= 0:
        fail("the machine file has no frequency_ghz: a cycle count cannot become a time")
    m = re.search(r"scalar code: ([0-9.]+) GHz", machine.get("provenance", ""))
    if isinstance(machine.get("scalar_frequency_ghz"), (int, float)):
        return float(machine["scalar_frequency_ghz"]), float(top), None
    scalar = float(m.group(1)) if m else None
    return (scalar or float(top)), float(top), m.group(1) if m else None


def cpu_of(path, cpu_id):
    table = tomllib.loads(path.read_text())
    cpu = next((c for c in table.get("cpu", []) if c["id"] == cpu_id), None)
    if cpu is None:
        ids = ", ".join(c["id"] for c in table.get("cpu", []))
        fail(f"{cpu_id} is not a CPU of {path.name} (it has: {ids})")
    return cpu


def rows(cpus):
    out = {}
    for cpu in cpus:
        for r in cpu.get("instruction", []):
            key = (r["op"], r["precision"], int(r["vector_bits"]))
            out.setdefault(key, []).append((r, cpu))
    return out


def pick(cands, bits):
    for enc in PREFERENCE.get(bits, PREFERENCE[None]):
        for r, cpu in cands:
            if r["encoding"] == enc:
                return r, cpu
    return None, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("host_dir", type=pathlib.Path)
    ap.add_argument("cpu_id")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    path = a.host_dir / "machine.toml"
    text = path.read_text()
    machine = tomllib.loads(text)
    fp_cpu = cpu_of(FP_LATENCY, a.cpu_id)
    div_cpu = cpu_of(DIVIDER, a.cpu_id)
    for p in machine.get("peaks", []):
        if p.get("latencies"):
            fail(f"{path} already has [[peaks.latencies]]: measured values are kept")
    scalar_ghz, top_ghz, scalar_text = clocks(machine)
    by_key = rows([fp_cpu])
    for k, v in rows([div_cpu]).items():
        if k[0] in ("div", "sqrt"):
            by_key[k] = v
    blocks = {}
    for p in machine.get("peaks", []):
        prec = p["precision"]
        elem = 64 if prec == "f64" else 32
        have = {int(w["vector_bits"]) for w in p.get("widths", [])} or {elem}
        out = []
        for bits in sorted(have):
            for op in OPS:
                r, cpu = pick(by_key.get((op, prec, bits), []), bits)
                if r is None:
                    print(f"  {prec} {op} {bits}-bit: no row in the tables, left out")
                    continue
                ghz = top_ghz if bits == 512 else scalar_ghz
                ns = r["latency_cycles"] / ghz
                clock = (
                    "frequency_ghz under 512-bit load"
                    if bits == 512
                    else "the scalar-code clock bench measured"
                )
                table = FP_LATENCY.name if op in ("add", "mul", "fma") else DIVIDER.name
                prov = (
                    f"published, not measured on this host: {r['mnemonic']} "
                    f"latency {r['latency_cycles']} cycles ({table}: {cpu['name']}, "
                    f"{cpu['source']}, {cpu['url']}, read {cpu['retrieved']}) "
                    f"at {ghz} GHz ({clock})"
                )
                out.append(
                    "[[peaks.latencies]]\n"
                    f'op = "{op}"\n'
                    f"vector_bits = {bits}\n"
                    f"ns = {ns:.4g}\n"
                    f"provenance = {tomlstr(prov)}\n"
                )
                print(f"  {prec} {op} {bits}-bit: {ns:.4g} ns ({r['mnemonic']}, {r['latency_cycles']} cycles)")
        blocks[prec] = out
    set_scalar = scalar_text is not None and "scalar_frequency_ghz" not in machine
    if set_scalar:
        print(f"  scalar_frequency_ghz = {scalar_text} (from the provenance's scalar-code clock)")
    if a.check:
        return
    # Insert each precision's entries at the end of its [[peaks]] section.
    lines = text.splitlines(keepends=True)
    sections = []  # (start line, precision) of each [[peaks]]
    for i, line in enumerate(lines):
        if line.strip() == "[[peaks]]":
            sections.append([i, None])
        elif sections and sections[-1][1] is None and line.startswith("precision"):
            sections[-1][1] = tomllib.loads(line)["precision"]
    ends = []
    for start, prec in sections:
        end = len(lines)
        for j in range(start + 1, len(lines)):
            s = lines[j].strip()
            if s.startswith("[") and not (s.startswith("[peaks.") or s.startswith("[[peaks.")):
                end = j
                break
        ends.append((end, prec))
    for end, prec in sorted(ends, reverse=True):
        add = blocks.get(prec, [])
        if add:
            # One blank line between entries, as the file has them.
            gap = "" if end > 0 and lines[end - 1].strip() == "" else "\n"
            lines[end:end] = [gap + add[0]] + ["\n" + b for b in add[1:]] + ["\n"]
    if set_scalar:
        # Right after frequency_ghz, among the top-level keys.
        k = next(i for i, line in enumerate(lines) if line.startswith("frequency_ghz"))
        lines[k + 1 : k + 1] = [f"scalar_frequency_ghz = {scalar_text}\n"]
    new = "".join(lines)
    check = tomllib.loads(new)
    n = sum(len(p.get("latencies", [])) for p in check["peaks"])
    if n != sum(len(v) for v in blocks.values()):
        fail("the rewritten file does not hold every entry: nothing written")
    path.write_text(new)
    print(f"{path}: {n} latencies added")


def tomlstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    main()
