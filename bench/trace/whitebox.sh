#!/bin/sh
# USDT probes, rates over time, read/write sizes and the OpenMP thread efficiency of
# hpcscope trace, side by side with a reference on the same programs:
#
#   USDT hits (a <sys/sdt.h> program, with a      bpftrace usdt:       exact
#     semaphore-guarded probe; python3's
#     function__entry, line and gc__start, guarded
#     by semaphores)
#   USDT hits of libstdc++'s libstdcxx:throw      bpftrace uprobe on   exact
#                                                 __cxa_throw, whose
#                                                 code holds the site
#   rates per interval (syscalls, page faults,    bpftrace, the same   within 2 per interval
#     bytes read and written, context switches)   interval              (bytes exact)
#     of a program with a known schedule
#   read/write size histograms (dd)               bpftrace hist()      exact per bucket
#   OpenMP thread efficiency (eq. 3.7 over the    the program's own    within 0.01
#     threads)                                    omp_get_wtime
#
# One line per metric: hpcscope's figure, the reference's, the tool, the verdict; exits 1
# when a verdict fails. Needs root, cc, c++ with -fopenmp, systemtap-sdt-dev, bpftrace
# (tracefs is mounted for it if missing, and unmounted again) and python3.
#
# Usage: bench/trace/whitebox.sh [OUTDIR]
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-$here/results-whitebox}
mkdir -p "$out"
data="$root/crates/trace/tests/data"
cc -O1 -pthread "$data/sdt.c" "$data/sdt_tick.c" -o "$out/sdt"
c++ -O1 "$data/throw.cc" -o "$out/throw"
cc -O1 "$data/phases.c" -o "$out/phases"
cc -O1 -fopenmp "$data/omp_eff.c" -o "$out/omp_eff"
cargo_release -p hpcscope-trace --example trace
tracer="$root/target/release/examples/trace"

mounted=0
if [ ! -e /sys/kernel/tracing/events ]; then
    if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then mounted=1; fi
fi
cleanup() { if [ "$mounted" = 1 ]; then umount /sys/kernel/tracing || true; fi; }
trap cleanup EXIT

report="$out/whitebox.txt"

# USDT: each program under hpcscope, then under bpftrace.
# A python whose binary has the USDT notes (Debian's does; a pyenv shim is a script).
py=
for p in /usr/bin/python3.11 /usr/bin/python3 "$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')"; do
    p=$(readlink -f "$p" 2>/dev/null || true)
    if [ -n "$p" ] && readelf -n "$p" 2>/dev/null | grep -q stapsdt; then py=$p; break; fi
done
libstdcxx=$(ldd "$out/throw" | awk '/libstdc\+\+/ {print $3}')
"$tracer" --probes '' --interval 0 --json --usdt hpctest:tick --usdt hpctest:guarded -- "$out/sdt" 20000 2 > "$out/sdt.hpcscope.json" 2>/dev/null || true
bpftrace -e "usdt:$out/sdt:hpctest:tick { @tick = count(); } usdt:$out/sdt:hpctest:guarded { @guarded = count(); }" -c "$out/sdt 20000 2" > "$out/sdt.bpftrace.txt" 2>&1 || true
"$tracer" --probes '' --interval 0 --json --usdt libstdcxx:throw -- "$out/throw" 3000 > "$out/throw.hpcscope.json" 2>/dev/null || true
# (bpftrace's usdt: finds no probe in a library before the program has loaded it.)
bpftrace -e "uprobe:\"$libstdcxx\":__cxa_throw { @throw = count(); }" -c "$out/throw 3000" > "$out/throw.bpftrace.txt" 2>&1 || true
# map() calls f from C, so each call enters the interpreter (function__entry); one probe
# a run: a raised `line` semaphore changes which calls python inlines.
printf 'import gc\ndef f(x):\n    return x + 1\nlist(map(f, range(1000)))\nfor i in range(300):\n    gc.collect()\n' > "$out/script.py"
if [ -n "$py" ]; then
    for p in function__entry line gc__start; do
        PYTHONHASHSEED=0 "$tracer" --probes '' --interval 0 --json --usdt "$py:python:$p" -- "$py" -S "$out/script.py" > "$out/python-$p.hpcscope.json" 2>/dev/null || true
        PYTHONHASHSEED=0 bpftrace -e "usdt:$py:python:$p { @hits = count(); }" -c "$py -S $out/script.py" > "$out/python-$p.bpftrace.txt" 2>&1 || true
    done
fi

# Rates: intervals of 0.3 s; bpftrace counts the same events for the program's pid.
"$tracer" --probes syscalls,sched,faults,files --interval 0.3 --json -- "$out/phases" 5 3000 500 300 > "$out/phases.hpcscope.json" 2>/dev/null || true
bpftrace -e '
tracepoint:raw_syscalls:sys_exit /pid == cpid/ {
    @s = @s + 1;
    if (args->id == 0 && args->ret > 0) { @r = @r + args->ret; }
    if (args->id == 1 && args->ret > 0) { @w = @w + args->ret; }
}
software:page-faults:1 /pid == cpid/ { @f = @f + 1; }
tracepoint:sched:sched_switch /args->prev_pid == cpid/ { @c = @c + 1; }
interval:ms:300 { printf("interval %d %d %d %d %d\n", @s, @f, @r, @w, @c); @s = 0; @f = 0; @r = 0; @w = 0; @c = 0; }
' -c "$out/phases 5 3000 500 300" > "$out/phases.bpftrace.txt" 2>&1 || true

# Sizes: dd's reads and writes of 4 KiB (and its own start-up reads).
dd=$(readlink -f "$(command -v dd)")
"$tracer" --probes files --interval 0 --json -- "$dd" if=/dev/zero of=/dev/null bs=4096 count=5000 > "$out/dd.hpcscope.json" 2>/dev/null || true
bpftrace -e '
tracepoint:raw_syscalls:sys_exit /pid == cpid && args->ret >= 0 && (args->id == 0 || args->id == 17 || args->id == 19 || args->id == 295)/ { @read = hist(args->ret); }
tracepoint:raw_syscalls:sys_exit /pid == cpid && args->ret >= 0 && (args->id == 1 || args->id == 18 || args->id == 20 || args->id == 296)/ { @write = hist(args->ret); }
' -c "$dd if=/dev/zero of=/dev/null bs=4096 count=5000" > "$out/dd.bpftrace.txt" 2>&1 || true
# What bpftrace's child itself reads and writes before it runs the command (an eventfd of
# 8 bytes), seen on an empty static program (no loader reading libraries) and subtracted.
printf 'int main(void) { return 0; }\n' > "$out/empty.c"
cc -O1 -static "$out/empty.c" -o "$out/empty" 2>/dev/null || cc -O1 "$out/empty.c" -o "$out/empty"
bpftrace -e '
tracepoint:raw_syscalls:sys_exit /pid == cpid && args->ret >= 0 && (args->id == 0 || args->id == 17 || args->id == 19 || args->id == 295)/ { @read = hist(args->ret); }
tracepoint:raw_syscalls:sys_exit /pid == cpid && args->ret >= 0 && (args->id == 1 || args->id == 18 || args->id == 20 || args->id == 296)/ { @write = hist(args->ret); }
' -c "$out/empty" > "$out/empty.bpftrace.txt" 2>&1 || true

# OpenMP: the program writes what its own clock measured.
"$tracer" --probes '' --openmp --interval 0 --json -- "$out/omp_eff" 200 "$out/omp_eff.own.txt" > "$out/omp_eff.hpcscope.json" 2>/dev/null || true

{
    echo "# $(uname -r), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# $(bpftrace --version 2>/dev/null || echo 'bpftrace absent'); ${py:-no python with USDT notes} $([ -n "$py" ] && "$py" --version); $(c++ --version | head -n1)"
    printf '%-44s %14s %14s %-10s %s\n' metric hpcscope reference tool verdict
} > "$report"
status=0
python3 - "$out" >> "$report" <<'EOF' || status=1
import json, re, sys
out = sys.argv[1]
failed = False
def line(metric, h, r, tool, ok):
    global failed
    failed |= not ok
    h, r = ("-" if x is None else x for x in (h, r))
    print(f"{metric:44s} {h:>14} {r:>14} {tool:10s} {'ok' if ok else 'FAIL'}")
import os
def load(name):
    try:
        # The traced program's own output comes first (it shares standard output).
        text = open(f"{out}/{name}").read()
        return json.loads(text[text.index('{\n  "report"'):])["report"]
    except (OSError, ValueError, KeyError):
        line(f"{name}: hpcscope's result", "-", "-", "-", False)
        return {"processes": [], "openmp": [], "rates": None}
def usdt(rep, comm_prefix, probe):
    for p in rep["processes"]:
        for u in p.get("usdt", []):
            if u["probe"] == probe and p["comm"].startswith(comm_prefix):
                return u["hits"]
    return 0
def bt(name, var):
    try:
        m = re.search(rf"^@{var}: (\d+)", open(f"{out}/{name}").read(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None
if not os.path.exists(f"{out}/python-line.hpcscope.json"):
    print("# skipped: no python binary with USDT notes (Debian's python3 has them)")
for (j, b, comm, probe, var) in [
    ("sdt.hpcscope.json", "sdt.bpftrace.txt", "sdt", "hpctest:tick", "tick"),
    ("sdt.hpcscope.json", "sdt.bpftrace.txt", "sdt", "hpctest:guarded", "guarded"),
    ("throw.hpcscope.json", "throw.bpftrace.txt", "throw", "libstdcxx:throw", "throw"),
    ("python-function__entry.hpcscope.json", "python-function__entry.bpftrace.txt", "python", "python:function__entry", "hits"),
    ("python-line.hpcscope.json", "python-line.bpftrace.txt", "python", "python:line", "hits"),
    ("python-gc__start.hpcscope.json", "python-gc__start.bpftrace.txt", "python", "python:gc__start", "hits"),
]:
    if not os.path.exists(f"{out}/{j}"):
        continue
    h, r = usdt(load(j), comm, probe), bt(b, var)
    line(f"usdt {probe} hits", h, r, "bpftrace", r is not None and h == r)
# Rates.
rep = load("phases.hpcscope.json")
s = rep["rates"]
cols = {c["name"]: c["counts"] for c in s["series"]}
bt_rows = [list(map(int, l.split()[1:])) for l in open(f"{out}/phases.bpftrace.txt") if l.startswith("interval ")]
names = ["syscalls", "page_faults", "read_bytes", "write_bytes", "context_switches"]
for k in range(1, 5):
    if k >= len(bt_rows):
        line(f"rate interval {k}", "-", "-", "bpftrace", False)
        continue
    for i, n in enumerate(names):
        h, r = cols[n][k], bt_rows[k][i]
        if n == "context_switches":
            # Two runs: the preemptions of a shared machine differ between them.
            print(f"{'rate interval %d (%.1f s) %s' % (k, s['interval_s'], n):44s} {h:>14} {r:>14} {'bpftrace':10s} info (two runs)")
            continue
        tol = 0 if n.endswith("bytes") else 2
        line(f"rate interval {k} ({s['interval_s']:.1f} s) {n}", h, r, "bpftrace", abs(h - r) <= tol)
# Sizes.
def bt_hist(text, var):
    block = re.search(rf"^@{var}:\s*\n((?:\[.*\n)+)", text, re.M)
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    out_ = {}
    for l in (block.group(1).splitlines() if block else []):
        m = re.match(r"\[(\d+)([KMG]?)(?:, [^)\]]*)?[)\]]\s+(\d+)", l)
        if m:
            out_[int(m.group(1)) * units[m.group(2)]] = int(m.group(3))
    return out_
text = open(f"{out}/dd.bpftrace.txt").read()
empty = open(f"{out}/empty.bpftrace.txt").read()
rep = load("dd.hpcscope.json")
dd = [p for p in rep["processes"] if p["comm"] == "dd"][0]
for op in ["read", "write"]:
    h = {b["lo"]: b["count"] for x in dd["io_sizes"] if x["op"] == op for b in x["size_bytes"]["buckets"]}
    r = bt_hist(text, op)
    for lo, n in bt_hist(empty, op).items():
        r[lo] = r.get(lo, 0) - n
    r = {k: v for k, v in r.items() if v}
    for lo in sorted(set(h) | set(r)):
        line(f"{op} sizes [{lo}, {2 * lo if lo else 1})", h.get(lo, 0), r.get(lo, 0), "bpftrace", h.get(lo, 0) == r.get(lo, 0))
# OpenMP.
rep = load("omp_eff.hpcscope.json")
o = rep["openmp"][0]
own = dict(zip(*[iter(open(f"{out}/omp_eff.own.txt").read().split())] * 2))
own = {k: float(v) for k, v in own.items()}
rt = o["runtime_s"]
want = ((rt - own["wall_s"] + own["region0_s"]) + own["region1_s"]) / (2 * rt)
got = o["efficiency"]["parallel_efficiency"]
line("openmp parallel efficiency (eq. 3.7, threads)", f"{got:.4f}", f"{want:.4f}", "omp_wtime", abs(got - want) <= 0.01)
sys.exit(1 if failed else 0)
EOF
cat "$report"
exit "$status"
