#!/usr/bin/env python3
"""Sets a host record's last-level cache capacity from its own bandwidth sweep's steps.

`hpcscope bench` takes the last cache's capacity from its working-set sweep where the sweep
contradicts sysfs (crates/bench/src/plateau.rs, `measured_llc`): the sweep's step into main
memory is its last step at most 1.25 times sysfs's capacity and more than twice the level
before's; when it lies below 3/4 of sysfs's capacity it becomes the level's capacity,
rounded down to whole sets. A record measured before that rule was in bench keeps sysfs's
capacity, and the host cannot be measured again; its machine file's notes keep the sweep's
steps ("Plateau detection saw the bandwidth step down at about ..."). This applies the same
rule to those steps and writes the capacity into the last cache level's `[levels.cache]`,
with a provenance that says so. The level's bandwidth stays what the record measured (at
half of sysfs's capacity, which the provenance of that bandwidth states).

    llc_from_notes.py HOST_DIR... [--check]

A machine file whose last cache already has a capacity from the sweep is left as it is.
`--check` prints what would be written and changes nothing.
"""

import argparse
import pathlib
import re
import sys
import tomllib

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def fail(msg):
    print(f"llc_from_notes: {msg}", file=sys.stderr)
    sys.exit(2)


def steps(machine):
    """The sweep's steps (bytes of total working set) from the machine file's notes."""
    for note in machine.get("notes", []):
        m = re.match(r"Plateau detection saw the bandwidth step down at about (.*) \(total", note)
        if m:
            out = []
            for part in m.group(1).split(", "):
                v, unit = part.split(" ")
                out.append(round(float(v) * UNITS[unit]))
            return out
    return None


def llc_step(steps, sysfs, before):
    """The rule of bench's `measured_llc`: the step that replaces sysfs's capacity, if any."""
    inside = [t for t in steps if t > 2 * before and t <= 1.25 * sysfs]
    if inside and inside[-1] < 0.75 * sysfs:
        return inside[-1]
    return None


def fmt(b):
    for unit in ("GiB", "MiB", "KiB"):
        if b >= UNITS[unit]:
            return f"{b / UNITS[unit]:.1f} {unit}"
    return f"{b} B"


def one(host, check):
    path = host / "machine.toml"
    text = path.read_text()
    machine = tomllib.loads(text)
    caches = [lv for lv in machine.get("levels", []) if "cache" in lv]
    if not caches:
        print(f"{host.name}: no cache geometry, nothing to do")
        return
    last = caches[-1]
    cache = last["cache"]
    if "bandwidth sweep" in cache.get("provenance", ""):
        print(f"{host.name}: {last['name']} already has its capacity from the sweep ({cache['size_bytes']} B)")
        return
    st = steps(machine)
    if st is None:
        print(f"{host.name}: no sweep steps in the notes, sysfs's capacity kept")
        return
    sysfs = int(cache["size_bytes"])
    before = int(caches[-2]["cache"]["size_bytes"]) if len(caches) > 1 else 0
    t = llc_step(st, sysfs, before)
    if t is None:
        print(f"{host.name}: {last['name']} keeps sysfs's {fmt(sysfs)} (steps {', '.join(fmt(s) for s in st)})")
        return
    sets = int(cache["line_bytes"]) * int(cache["associativity"])
    size = max(t // sets, 1) * sets
    # The [levels.cache] table of the last cache level: its size_bytes and provenance lines.
    head = re.search(r'^name = "' + re.escape(last["name"]) + r'"$', text, re.M)
    tab = re.compile(r"^\[levels\.cache\]\n(?:(?!\[).*\n)*", re.M).search(text, head.end())
    block = tab.group(0)
    old_prov = cache.get("provenance", "sysfs")
    prov = (
        f"capacity {size} B from this record's bandwidth sweep (its step into main memory at about "
        f"{fmt(t)}, in this file's notes), where sysfs reports {fmt(sysfs)}: a virtual machine may "
        f"see a share of the host's cache; set from the note by bench/hosts/llc_from_notes.py, the "
        f"rule hpcscope bench now applies; the level's bandwidth is still the one measured at half "
        f"of sysfs's capacity; line, associativity and sharing: {old_prov}"
    )
    new = re.sub(r"^size_bytes = \d+$", f"size_bytes = {size}", block, flags=re.M)
    new = re.sub(r'^provenance = ".*"$', "provenance = " + toml_str(prov), new, flags=re.M)
    print(f"{host.name}: {last['name']} {fmt(sysfs)} -> {size} B ({fmt(t)} step; steps {', '.join(fmt(s) for s in st)})")
    if not check:
        path.write_text(text[: tab.start()] + new + text[tab.end() :])
        tomllib.loads(path.read_text())


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hosts", nargs="+", type=pathlib.Path)
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    for h in a.hosts:
        if not (h / "machine.toml").is_file():
            fail(f"{h}: no machine.toml")
        one(h, a.check)


if __name__ == "__main__":
    main()
