#!/usr/bin/env python3
"""Adds divide and square-root ceilings taken from a published table to a host record.

A host recorded before `hpcscope bench` measured the divider has no `div` or `sqrt`
ceiling in its machine file, and the host cannot be measured again from here. This
writes them from `data/published/divider.toml` instead: for each precision and width the
published reciprocal throughput `T` (core cycles per instruction) becomes
`core_gflops = lanes x f / T`, with `f` the record's own measured clock for that width
(its scalar-code clock up to 256 bits, `frequency_ghz` under 512-bit load for 512-bit
forms, as bench measured them), and `node_gflops` that times the record's cores (each
core has its own divider). Each entry's provenance names the table row, its source and
the clock used.

    divider_from_published.py HOST_DIR CPU_ID [--check]

CPU_ID is an `id` of divider.toml (`zen3`, `zen4`, `golden-cove`). The entries go into
the `[[peaks]]` section of their precision, after its other entries. A machine file that
already has a `div` or `sqrt` ceiling is refused: measured values are never replaced.
`--check` prints what would be written and changes nothing.
"""

import argparse
import pathlib
import re
import sys
import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "data" / "published" / "divider.toml"

# The encoding whose row is taken at each width: the forms an x86-64-v3 build and bench's
# kernels use (VEX), the legacy SSE form where no VEX row is given, EVEX at 512 bits.
PREFERENCE = {512: ["evex"], None: ["vex", "sse", "evex"]}


def fail(msg):
    print(f"divider_from_published: {msg}", file=sys.stderr)
    sys.exit(2)


def clocks(machine_text, machine):
    """(scalar-code clock, clock under the widest load) of the record, GHz."""
    top = machine.get("frequency_ghz")
    if not isinstance(top, (int, float)) or top <= 0:
        fail("the machine file has no frequency_ghz: a cycle count cannot become a rate")
    m = re.search(r"scalar code: ([0-9.]+) GHz", machine.get("provenance", ""))
    scalar = float(m.group(1)) if m else top
    return scalar, float(top)


def rows(cpu):
    out = {}
    for r in cpu.get("instruction", []):
        key = (r["op"], r["precision"], int(r["vector_bits"]))
        out.setdefault(key, []).append(r)
    return out


def pick(cands, bits):
    for enc in PREFERENCE.get(bits, PREFERENCE[None]):
        for r in cands:
            if r["encoding"] == enc:
                return r
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("host_dir", type=pathlib.Path)
    ap.add_argument("cpu_id")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    path = a.host_dir / "machine.toml"
    text = path.read_text()
    machine = tomllib.loads(text)
    table = tomllib.loads(PUBLISHED.read_text())
    cpu = next((c for c in table.get("cpu", []) if c["id"] == a.cpu_id), None)
    if cpu is None:
        ids = ", ".join(c["id"] for c in table.get("cpu", []))
        fail(f"{a.cpu_id} is not a CPU of {PUBLISHED.name} (it has: {ids})")
    for p in machine.get("peaks", []):
        for c in p.get("ceilings", []):
            if c.get("op") in ("div", "sqrt"):
                fail(f"{path} already has a {c['op']} ceiling: measured values are kept")
    scalar_ghz, top_ghz = clocks(text, machine)
    cores = machine["sockets"] * machine["cores_per_socket"]
    simd_bits = machine.get("vector_bits", 64)
    by_key = rows(cpu)
    blocks = {}
    for p in machine.get("peaks", []):
        prec = p["precision"]
        elem = 64 if prec == "f64" else 32
        out = []
        for op in ("div", "sqrt"):
            for bits in (elem, 128, 256, 512):
                if bits > simd_bits:
                    continue
                r = pick(by_key.get((op, prec, bits), []), bits)
                if r is None:
                    print(f"  {prec} {op} {bits}-bit: no row in the table, left out")
                    continue
                ghz = top_ghz if bits == 512 else scalar_ghz
                lanes = max(1, bits // elem)
                core = lanes * ghz / r["reciprocal_throughput_cycles"]
                clock = (
                    "frequency_ghz under 512-bit load"
                    if bits == 512
                    else "the scalar-code clock bench measured"
                )
                prov = (
                    f"published, not measured on this host: {r['mnemonic']} "
                    f"reciprocal throughput {r['reciprocal_throughput_cycles']} cycles "
                    f"({cpu['name']}, {cpu['source']}, {cpu['url']}, read {cpu['retrieved']}) "
                    f"at {ghz} GHz ({clock}), {lanes} lane(s); node: {cores} cores, one divider each"
                )
                out.append(
                    "[[peaks.ceilings]]\n"
                    f'op = "{op}"\n'
                    f"vector_bits = {bits}\n"
                    f"core_gflops = {core:.4g}\n"
                    f"node_gflops = {core * cores:.4g}\n"
                    f"provenance = {tomlstr(prov)}\n"
                )
                print(f"  {prec} {op} {bits}-bit: {core:.4g} GFLOP/s per core ({r['mnemonic']})")
        blocks[prec] = out
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
    for k, (start, prec) in enumerate(sections):
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
            lines[end:end] = ["\n" + b for b in add] + ["\n"]
    new = "".join(lines)
    check = tomllib.loads(new)
    n = sum(
        1 for p in check["peaks"] for c in p.get("ceilings", []) if c["op"] in ("div", "sqrt")
    )
    if n != sum(len(v) for v in blocks.values()):
        fail("the rewritten file does not hold every entry: nothing written")
    path.write_text(new)
    print(f"{path}: {n} divide and square-root ceilings added")


def tomlstr(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    main()
