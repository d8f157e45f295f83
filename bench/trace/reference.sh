#!/bin/sh
# The reference suite of hpcscope trace and profile: real programs nobody here wrote (tar,
# git, make -j2, xz -T2, sort --parallel=2, python, a shell loop of 2,000 forks, dd with
# O_DIRECT) measured by hpcscope and by the reference tools side by side, in the same run
# wherever the tool can be the traced command:
#
#   syscall counts        strace -f -c inside the trace           exact
#   on-CPU time           perf stat task-clock inside the trace   within 5 %
#   page faults           perf stat page-faults                   within 5 %
#   profile self shares   perf record -F 999 inside the trace     within 3 points
#   syscalls per command  bpftrace inside the trace               exact
#   2,000 forks           every process whole, nothing lost       0 processes with losses
#   dd bytes, block I/O   dd's own count, /sys/block/*/stat       exact / side by side
#   attached PID          /proc/<pid>/schedstat and status        inside the outer window
#
# One line per metric: hpcscope's figure, the reference's, the tool and the verdict; the
# script exits 1 when a verdict fails. Needs root, strace, perf (linux-perf), bpftrace
# (tracefs is mounted for it if missing, and unmounted again), python3, git, make, cc, xz.
# The cheap deterministic part (tar, 200 forks, dd against strace) also runs in
# crates/trace/tests/reference.rs.
#
# Usage: bench/trace/reference.sh [OUTDIR [WORKLOAD...]]   (WORKLOAD: tar, git, ...)
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-$here/results}
[ $# -gt 0 ] && shift
mkdir -p "$out/work"
cargo_release -p hpcscope-trace --example reference

mounted=0
if command -v bpftrace >/dev/null 2>&1 && [ ! -e /sys/kernel/tracing/events ]; then
    if mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null; then mounted=1; fi
fi
cleanup() { if [ "$mounted" = 1 ]; then umount /sys/kernel/tracing || true; fi; }
trap cleanup EXIT

{
    echo "# $(uname -r), $(nproc) CPUs, $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "# $(strace -V 2>/dev/null | head -n1 || echo 'strace absent'); $(perf version 2>/dev/null || echo 'perf absent'); $(bpftrace --version 2>/dev/null || echo 'bpftrace absent')"
} > "$out/reference.txt"
status=0
"$root/target/release/examples/reference" --dir "$out/work" "$@" >> "$out/reference.txt" || status=$?
cat "$out/reference.txt"
exit "$status"
