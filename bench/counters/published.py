"""The published instruction tables (data/published/*.toml) beside this CPU: what
bench/counters/divider.sh, latency.sh and ceilings.sh share.

A table has `[[cpu]]` entries with `family` and `models` (CPUID, hex ranges) and their
`[[cpu.instruction]]` rows (`op`, `precision`, `vector_bits`, `encoding`, cycles).
"""

import os
import tomllib


def cpuinfo(key):
    """The first value of `key` in /proc/cpuinfo, or None."""
    for line in open("/proc/cpuinfo"):
        if line.split(":")[0].strip() == key:
            return line.split(":", 1)[1].strip()
    return None


FAMILY, MODEL = int(cpuinfo("cpu family") or -1), int(cpuinfo("model") or -1)


def model_in(ranges, sep=","):
    """Whether this CPU's model is in `ranges` (hex, `0x10-0x1f` or `0x61`, joined by `sep`)."""
    for r in ranges.split(sep):
        lo, _, hi = r.strip().partition("-")
        if int(lo, 16) <= MODEL <= int(hi or lo, 16):
            return True
    return False


def covers(cpu):
    """Whether a table's entry is this CPU (its family, a model in its ranges)."""
    return cpu["family"] == FAMILY and model_in(cpu["models"])


def this_cpu(path):
    """The entry of the table at `path` for this CPU, or None."""
    table = tomllib.load(open(path, "rb"))
    return next((c for c in table["cpu"] if covers(c)), None)


def header(clock_name, ghz, elapsed, cpus):
    """Prints this CPU, the clock bench measured, the load, and the tables' sources."""
    print(f"{cpuinfo('model name')} (family {FAMILY:#x} model {MODEL:#x}); {clock_name} {ghz} "
          f"(hpcscope bench); load average {os.getloadavg()[0]:.1f}; bench run {elapsed:.1f} s")
    found = {c["url"]: c for c in cpus if c}
    for cpu in found.values():
        print(f"published: {cpu['name']}, {cpu['source']}, measured on {cpu['measured_on']}")
        print(f"  {cpu['url']} (read {cpu['retrieved']})")
    if not found:
        print("published: this CPU is in no entry of the tables: hpcscope's figures only")


def row(cpu, op, precision, bits):
    """The row of the form bench's kernels run: VEX up to 256 bits, EVEX at 512."""
    if not cpu:
        return None
    want = "evex" if bits == 512 else "vex"
    for i in cpu["instruction"]:
        if (i["op"], i["precision"], i["vector_bits"], i["encoding"]) == (op, precision, bits, want):
            return i
    return None


def verdict(ratio, lo, hi):
    """(within [lo, hi], its word)."""
    ok = lo <= ratio <= hi
    return ok, "agree" if ok else ("slower than published" if ratio > 1 else "faster than published")


def by_id(path, cpu_id):
    """The entry `cpu_id` (`zen3`...) of the table at `path`, or None."""
    table = tomllib.load(open(path, "rb"))
    return next((c for c in table["cpu"] if c["id"] == cpu_id), None)
