#!/bin/sh
# Overhead of hpcscope's probes, side by side with bpftrace, as ratios to the untraced run.
#
# Each workload prints the time of its own timed region, so the tracers' start-up is not
# counted (seed 004, section 3.1.1.3: time the region with and without instrumentation).
# Configurations run interleaved, REPS times each; the summary gives each configuration's
# median time and its ratio to the median untraced time.
#
#   compute   all hpcscope probes + 99 Hz cpu-clock sampling        target <= 1.01
#   syscalls  2e6 64-byte writes to /dev/null:
#             hpcscope syscall probe, hpcscope all probes, and bpftrace's
#             'tracepoint:raw_syscalls:sys_enter { @[pid] = count(); }'
#                                                              target <= bpftrace's ratio
#             (hpcscope keeps its default 1 s rate series; hpcscope_syscalls_norates is the
#             syscall probe without it, to show what the series costs)
#
# Needs root, cc, and bpftrace for the comparison (tracefs is mounted for it if missing,
# and unmounted again). Usage: bench/trace/run.sh [REPS] [OUTDIR]
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
reps=${1:-5}
out=${2:-$here/results}
mkdir -p "$out"
cc -O2 -o "$out/compute" "$here/compute.c"
cc -O2 -o "$out/syscalls" "$here/syscalls.c"
cargo_release -p hpcscope-trace --example trace
tracer="$root/target/release/examples/trace"

mounted=0
if command -v bpftrace >/dev/null 2>&1 && [ ! -e /sys/kernel/tracing/events ]; then
    if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then mounted=1; fi
fi
cleanup() { if [ "$mounted" = 1 ]; then umount /sys/kernel/tracing || true; fi; }
trap cleanup EXIT

raw="$out/raw.csv"
echo "workload,config,rep,time_s,cpu_s" > "$raw"
t() { sed -n 's/^time_s \([0-9.]*\) cpu_s \([0-9.]*\).*/\1,\2/p'; }
run() { # workload config command...
    w=$1; c=$2; shift 2
    v=$("$@" 2>/dev/null | t | tail -n1)
    echo "$w,$c,$rep,$v" >> "$raw"
}
rep=1
while [ "$rep" -le "$reps" ]; do
    run compute untraced "$out/compute"
    run compute hpcscope_all_99hz "$tracer" --all --profile 99 -- "$out/compute"
    run syscalls untraced "$out/syscalls"
    run syscalls hpcscope_syscalls "$tracer" --probes syscalls -- "$out/syscalls"
    run syscalls hpcscope_syscalls_norates "$tracer" --probes syscalls --interval 0 -- "$out/syscalls"
    run syscalls hpcscope_all_99hz "$tracer" --all --profile 99 -- "$out/syscalls"
    if command -v bpftrace >/dev/null 2>&1; then
        run syscalls bpftrace_count bpftrace -e 'tracepoint:raw_syscalls:sys_enter { @[pid] = count(); }' -c "$out/syscalls"
    fi
    rep=$((rep + 1))
done

# Medians and ratios: wall time (median and minimum) and the process's CPU time (median).
# On a shared machine the wall time carries other tenants' load; the CPU time does not.
med() { sort -g | awk '{a[NR]=$1} END {if (NR==0) print "nan"; else print (NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2}'; }
col() { awk -F, -v w="$1" -v c="$2" -v k="$3" '$1==w && $2==c && $k!="" {print $k}' "$raw"; }
summary="$out/summary.txt"
{
    echo "# $(uname -r), $(nproc) CPUs, $reps repetitions, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# bpftrace: $(bpftrace --version 2>/dev/null || echo absent)"
    printf '%-9s %-18s %9s %9s %9s %10s %10s\n' workload config wall_med wall_min cpu_med ratio_wall ratio_cpu
    for w in compute syscalls; do
        bw=$(col $w untraced 4 | med); bm=$(col $w untraced 4 | sort -g | head -n1); bc=$(col $w untraced 5 | med)
        for c in $(awk -F, -v w=$w 'NR>1 && $1==w {print $2}' "$raw" | awk '!s[$0]++'); do
            mw=$(col $w $c 4 | med); mm=$(col $w $c 4 | sort -g | head -n1); mc=$(col $w $c 5 | med)
            awk -v w=$w -v c=$c -v mw=$mw -v mm=$mm -v mc=$mc -v bw=$bw -v bm=$bm -v bc=$bc 'BEGIN {
                printf "%-9s %-18s %9.4f %9.4f %9.4f %10.3f %10.3f\n", w, c, mw, mm, mc, mw/bw, mc/bc }'
        done
    done
} > "$summary"
cat "$summary"
