#!/bin/sh
# Cost per region start/stop pair (ns) of hpcscope's markers next to likwid's marker API and
# PAPI's high-level API, all counting software events where the API allows it.
# Needs: cc, cargo; optional Debian packages liblikwid-dev/likwid and libpapi-dev.
# Usage: bench/counters/marker_cost.sh [pairs]   (from the repository root)
set -eu
PAIRS=${1:-200000}
OUT=$(mktemp -d)
cargo build --release -q -p hpcscope-markers
LIB=target/release
cc -O2 -DUSE_HPCSCOPE bench/counters/marker_cost.c -I crates/markers/include -L "$LIB" -lhpcscope_markers -o "$OUT/hpcscope"
echo "# hpcscope markers, inactive (HPCSCOPE_MARKERS unset)"
LD_LIBRARY_PATH="$LIB" "$OUT/hpcscope" "$PAIRS"
echo "# hpcscope markers, 4 software events (task-clock,page-faults,context-switches,cpu-migrations)"
HPCSCOPE_MARKERS=1 HPCSCOPE_MARKERS_OUT="$OUT/m.json" LD_LIBRARY_PATH="$LIB" "$OUT/hpcscope" "$PAIRS"
echo "# hpcscope markers, wall time and call counts only (no event)"
HPCSCOPE_MARKERS=1 HPCSCOPE_MARKERS_EVENTS=none HPCSCOPE_MARKERS_OUT="$OUT/m.json" LD_LIBRARY_PATH="$LIB" "$OUT/hpcscope" "$PAIRS"
echo "# hpcscope markers, 1 software event (task-clock)"
HPCSCOPE_MARKERS=1 HPCSCOPE_MARKERS_EVENTS=task-clock HPCSCOPE_MARKERS_OUT="$OUT/m.json" LD_LIBRARY_PATH="$LIB" "$OUT/hpcscope" "$PAIRS"
if [ -f /usr/include/likwid-marker.h ]; then
  cc -O2 -DUSE_LIKWID bench/counters/marker_cost.c -llikwid -o "$OUT/likwid"
  echo "# likwid marker API without likwid-perfctr (markers inactive)"
  "$OUT/likwid" "$PAIRS" || true
  echo "# likwid marker API under likwid-perfctr -m (needs a PMU: fails in VMs without one)"
  likwid-perfctr -C 0 -g INSTR_RETIRED_ANY:FIXC0 -m "$OUT/likwid" "$PAIRS" 2>&1 | grep -E "^likwid|ERROR|rror" || true
fi
if [ -f /usr/include/papi.h ]; then
  cc -O2 -DUSE_PAPI bench/counters/marker_cost.c -lpapi -o "$OUT/papi"
  echo "# PAPI high-level API, 4 software events (perf::TASK-CLOCK,perf::PAGE-FAULTS,perf::CONTEXT-SWITCHES,perf::CPU-MIGRATIONS)"
  (cd "$OUT" && PAPI_EVENTS="perf::TASK-CLOCK,perf::PAGE-FAULTS,perf::CONTEXT-SWITCHES,perf::CPU-MIGRATIONS" ./papi "$PAIRS") 2>&1 | tail -3 || true
  echo "# PAPI high-level API, 1 software event (perf::TASK-CLOCK)"
  (cd "$OUT" && PAPI_EVENTS="perf::TASK-CLOCK" ./papi "$PAIRS") 2>&1 | tail -3 || true
  echo "# (PAPI-HL prints 'using default' when no requested event opens: it then measures time only)"
fi
if command -v cc >/dev/null; then
  cat > "$OUT/sys.c" <<'C'
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(void){struct timespec a,b;long n=200000;clock_gettime(CLOCK_MONOTONIC,&a);for(long i=0;i<n;i++)syscall(SYS_getppid);clock_gettime(CLOCK_MONOTONIC,&b);printf("syscall %.1f\n",((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/n);return 0;}
C
  cc -O2 "$OUT/sys.c" -o "$OUT/sys"
  echo "# floor: one bare system call (getppid), ns; a counted start/stop pair needs two read() calls"
  "$OUT/sys"
fi
rm -rf "$OUT"
