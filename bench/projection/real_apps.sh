#!/usr/bin/env bash
# The projection checked on real code nobody in this project wrote: the HPC Challenge
# benchmark (hpcc 1.5.0, Debian source package `hpcc`), whose FFT (FFTE) and STREAM parts
# are plain C. Each part is built as a one-rank program (a small driver calls hpcc's own
# HPCC_TestFFT / HPCC_Stream, which time, verify and report as in hpcc) at -march=x86-64 (SSE2) and -march=x86-64-v3 (AVX2), and
# `hpcscope validate --build sse2=... --build avx2=... -- PART MIB` projects each build onto
# the other (both directions), runs it and compares. Printed per pair: the measured GFLOP/s,
# the interval, inside or outside, the point estimate and its error, the Kwack baseline and
# its error; then the totals against the acceptance (>= 80 % inside, median width hi/lo
# <= 1.5, median point error <= 5 %), with the load average before and after.
#
# hpcc's DGEMM and HPL go through BLAS (a library built once, not by this compiler) and do
# not change with -march: they are left out. RandomAccess does no floating-point work (its
# figure is GUP/s) and the projection is in GFLOP/s: left out too. PTRANS and the MPI parts
# need several ranks.
#
#   bench/projection/real_apps.sh [OUTDIR]   (env: MACHINE=machine.toml NATIVE_RUNS=11
#                                             CASES="fft:64 fft:16 stream:128")
#
# A case is PART:MIB, the part (fft or stream) and its memory (hpcc's HPLMaxProcMem, which
# sizes the vectors); the default sizes run 0.1-0.3 s natively each, out of cache.
#
# Needs: gcc, Open MPI (apt-get install libopenmpi-dev openmpi-bin: hpcc's headers include
# mpi.h; the program runs as a singleton rank, without mpirun), qemu-user, python3, apt-get
# with deb-src access to the Debian archive this machine already uses, and a release build
# of hpcscope and the plugin (cargo build --release -p hpcscope -p hpcscope-qemu-plugin).
# The source is fetched with `apt-get source --download-only` through a private source list
# (the machine's apt configuration is not changed; apt checks the tarball against the
# signed index) and built in a scratch directory that is removed at the end: none of
# hpcc's code is kept. Without MACHINE, measures one first (hpcscope bench --cpu-clock
# --statistic best --kernels triad), as bench/projection/validate.sh does.
# Exit status: 0 when every part ran (whatever the verdict), 1 when a step failed, 3 when
# a tool is missing.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-projection-real"}
runs=${NATIVE_RUNS:-11}
cases=${CASES:-"fft:64 fft:16 stream:128"}
bin="$root/target/release/hpcscope"
mkdir -p "$out"
out=$(cd "$out" && pwd)

fail() { echo "real_apps: $*" >&2; exit 1; }
for tool in gcc mpicc qemu-x86_64 python3 apt-get; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "real_apps: missing $tool (apt-get install gcc libopenmpi-dev openmpi-bin qemu-user python3)" >&2
    exit 3
  }
done
[ -x "$bin" ] || {
  echo "real_apps: missing $bin (cargo build --release -p hpcscope -p hpcscope-qemu-plugin)" >&2
  exit 3
}
export HPCSCOPE_QEMU_PLUGIN=${HPCSCOPE_QEMU_PLUGIN:-"$root/target/release/libhpcscope_qemu_plugin.so"}
# Open MPI refuses to start as root unless told; a singleton rank needs no launcher.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

work=$(mktemp -d "${TMPDIR:-/tmp}/hpcscope-real-apps.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 1-2. hpcc's upstream tarball (the Debian packaging is not needed), from the Debian mirror
# this machine's apt configuration uses.
. "$root/scripts/lib/apt-source.sh"
apt_source_fetch "$work" "$APT_SOURCE_CODENAME" hpcc real_apps
tarball=$(ls "$work"/hpcc_*.orig.tar.* 2>/dev/null | head -1)
[ -n "$tarball" ] || { tail -5 "$work/apt.log" >&2; fail "the hpcc orig tarball was not fetched (log above)"; }
tar -C "$work" -xf "$tarball"
H=$(ls -d "$work"/hpcc-*/ | head -1)
H=${H%/}
[ -f "$H/FFT/tstfft.c" ] || fail "the tarball $(basename "$tarball") has no FFT/tstfft.c"

# 3. The driver: one part per run, sized by its memory (hpcc's HPLMaxProcMem).
cat >"$work/hpcc_part.c" <<'EOF'
/* Runs one HPC Challenge part as a one-rank program: hpcc_part fft|stream MIB */
#include <hpcc.h>

int HPCC_LocalVectorSize(HPCC_Params *params, int vecCnt, size_t size, int pow2) {
  /* As hpcc's src/io.c (the rest of io.c parses hpccinf.txt and pulls in HPL). */
  int flg2, maxIntBits2 = sizeof(int) * 8 - 2;
  for (flg2 = 1; params->HPLMaxProcMem / size / vecCnt >> flg2; ++flg2)
    ;
  --flg2;
  if (flg2 <= maxIntBits2) {
    if (pow2) return 1 << flg2;
    return params->HPLMaxProcMem / size / vecCnt;
  }
  return 1 << maxIntBits2;
}

int main(int argc, char **argv) {
  HPCC_Params p;
  int failure = 1, n = 0;
  double g = -1.0, c = 0, s = 0, a = 0, t = 0;
  if (argc != 3) { fprintf(stderr, "usage: %s fft|stream MIB\n", argv[0]); return 2; }
  MPI_Init(&argc, &argv);
  memset(&p, 0, sizeof p);
  p.HPLMaxProcMem = (long)atoi(argv[2]) << 20;
  p.test.thrsh = 16.0; /* hpcc's default residual threshold (_hpccinf.txt) */
  strcpy(p.outFname, "/dev/null");
  if (!strcmp(argv[1], "fft")) {
    HPCC_TestFFT(&p, 1, &g, &n, &failure);
    printf("FFT n=%d GFLOP/s %.4f failure %d\n", n, g, failure);
  } else if (!strcmp(argv[1], "stream")) {
    HPCC_Stream(&p, 1, MPI_COMM_WORLD, 0, &c, &s, &a, &t, &failure);
    printf("STREAM n=%ld copy %.3f scale %.3f add %.3f triad %.3f GB/s failure %d\n",
           (long)p.StreamVectorSize, c, s, a, t, failure);
  } else { fprintf(stderr, "unknown part %s\n", argv[1]); MPI_Finalize(); return 2; }
  MPI_Finalize();
  return failure != 0;
}
EOF
srcs=("$work/hpcc_part.c" "$H/FFT/tstfft.c" "$H/FFT/fft235.c" "$H/FFT/zfft1d.c"
      "$H/FFT/wrapfftw.c" "$H/FFT/bcnrand.c" "$H/STREAM/stream.c" "$H/hpl/src/auxil/HPL_dlamch.c" "$H/hpl/testing/timer/HPL_timer_cputime.c")
for march in x86-64 x86-64-v3; do
  mpicc -O3 -march="$march" -DLONG_IS_64BITS -I"$H/include" -I"$H/hpl/include" \
    -I"$H/FFT" "${srcs[@]}" -lm -o "$work/hpcc-$march" 2>"$work/cc-$march.log" \
    || { tail -10 "$work/cc-$march.log" >&2; fail "building hpcc at -march=$march failed (log above)"; }
done

# 4. The machine file.
machine=${MACHINE:-}
if [ -z "$machine" ]; then
  machine="$out/machine.toml"
  [ -f "$machine" ] || "$bin" bench --cpu-clock --statistic best --kernels triad -o "$machine"
fi

# 5. Each case: validate both builds, both directions.
names=()
for c in $cases; do
  part=${c%%:*}
  mib=${c#*:}
  case "$part" in fft|stream) ;; *) fail "case $c: the part must be fft or stream (CASES=\"fft:64 stream:128\")" ;; esac
  case "$mib" in ''|*[!0-9]*) fail "case $c: give the memory in MiB after the colon (fft:64)" ;; esac
  name="$part-$mib"
  names+=("$name")
  "$work/hpcc-x86-64" "$part" "$mib" >"$out/$name-check.txt" \
    || fail "hpcc $part $mib failed its own verification: $(cat "$out/$name-check.txt")"
  echo "real_apps: $part ($mib MiB), load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$bin" validate -m "$machine" --native-runs "$runs" -o "$out/$name" \
    --build "sse2=$work/hpcc-x86-64" --build "avx2=$work/hpcc-x86-64-v3" -- "$part" "$mib" \
    >"$out/$name.txt" 2>"$out/$name.err" \
    || { tail -5 "$out/$name.err" >&2; fail "hpcscope validate on hpcc $part $mib failed (log in $out/$name.err)"; }
done

python3 - "$out" "${names[@]}" <<'PY'
import json, statistics, sys
out, parts = sys.argv[1], sys.argv[2:]
def pct(x):
    return "-" if x is None else f"{x:+.1%}"
rows, loads = [], []
print("| part | pair | measured GFLOP/s | interval | width | inside | point (error) | Kwack (error) |")
print("|---|---|---|---|---|---|---|---|")
for part in parts:
    v = json.load(open(f"{out}/{part}/validation.json"))
    loads.append((part, v.get("load_average_before"), v.get("load_average_after")))
    pairs = v.get("pairs") or v.get("protocol", {}).get("pairs") or []
    for p in pairs:
        val, iv = p["validation"], p["interval"]
        point = (p.get("point") or {}).get("gflops")
        inside = val["inside_within_noise"]
        rows.append(dict(width=iv["hi"] / iv["lo"], inside=inside,
                         point_error=val.get("point_error"), kwack_error=val.get("kwack_error")))
        ps = "-" if point is None else f"{point:.3f} ({pct(val.get('point_error'))})"
        kw = p.get("kwack_gflops")
        ks = "-" if kw is None else f"{kw:.3f} ({pct(val.get('kwack_error'))})"
        print(f"| {part} | {p['source']} -> {p['target']} | {p['measured_gflops']:.3f} | "
              f"[{iv['lo']:.3f}, {iv['hi']:.3f}] | {iv['hi'] / iv['lo']:.2f} | "
              f"{'inside' if inside else 'outside'} | {ps} | {ks} |")
n = len(rows)
if not n:
    sys.exit("real_apps: no pairs in the validation files")
inside = sum(r["inside"] for r in rows) / n
width = statistics.median(r["width"] for r in rows)
pe = [abs(r["point_error"]) for r in rows if r["point_error"] is not None]
ke = [abs(r["kwack_error"]) for r in rows if r["kwack_error"] is not None]
mpe = statistics.median(pe) if pe else None
ok = (inside >= 0.8, width <= 1.5, mpe is not None and mpe <= 0.05)
names = ("inside", "width", "point error")
verdict = "meets all" if all(ok) else "misses " + ", ".join(m for m, o in zip(names, ok) if not o)
print()
print(f"{n} pairs: inside {inside:.0%} (goal >= 80 %), median width {width:.2f} (goal <= 1.5), "
      f"point error median {mpe:.1%} max {max(pe):.1%} (goal median <= 5 %)"
      + (f"; Kwack error median {statistics.median(ke):.1%} max {max(ke):.1%}" if ke else "")
      + f": {verdict}")
if len(pe) < n:
    print(f"pairs without a point estimate: {n - len(pe)} of {n}")
for part, lb, la in loads:
    print(f"load average during {part}: {lb} -> {la}")
PY
