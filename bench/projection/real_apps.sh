#!/usr/bin/env bash
# The projection checked on real code nobody in this project wrote, on changes of build whose
# effect is large and known: three outside codes, each fetched from its Debian source package
# into a scratch directory and built four ways, and `hpcscope validate --build ...` projecting
# every build onto every other (12 ordered pairs per case), running it and comparing.
#
#   hpcc     the HPC Challenge benchmark (hpcc 1.5.0, package `hpcc`): its FFT (FFTE) and
#            STREAM parts, plain C, each run as a one-rank program (a small driver calls
#            hpcc's own HPCC_TestFFT / HPCC_Stream, which time, verify and report as in hpcc)
#   eigen    Eigen 3.4.0 (package `eigen3`), templated C++ with its own SIMD packets: the
#            dense Cholesky (LLT) and LU of bench/mix/eigen_solve.cpp, which checks the
#            residuals of its solves
#   lapack   the reference BLAS and LAPACK 3.11 in Fortran 77 (package `lapack`): DGEMM and
#            DGETRF/DGETRS driven by lapack_solve.c here, which times itself, counts its
#            FLOPs and checks the residual of its solve
#
# The four builds (gcc/g++/gfortran 12):
#   scalar   -O3 -march=x86-64-v3 -fno-tree-vectorize (Eigen: and -DEIGEN_DONT_VECTORIZE,
#            its packets being intrinsics): every FP instruction scalar, checked below
#   sse2     -O3 -march=x86-64
#   avx2     -O3 -march=x86-64-v3
#   O1       -O1 -march=x86-64-v3
# so the pairs are vector-width changes (scalar, SSE2, AVX2 at -O3), an optimization-level
# change (-O1 <-> -O3 at AVX2), and both at once (-O1 AVX2 <-> -O3 SSE2 or scalar).
#
# Printed per pair: the kind of change, the measured GFLOP/s of the target (each build's
# GFLOP/s is its own FLOPs over its CPU time: where the builds' FLOPs differ, the measured
# speed-up, source time over target time, says what changed), the interval, inside or not,
# the point estimate and its error, the Kwack baseline and its error, and whether the pair
# changed (measured change above twice the runs' spread, validate's `summary.changed`); per
# build, its FP instructions by width and its FLOPs beside the program's own figure; then
# totals over all pairs, per kind, per code and over the changed pairs, with the skill
# 1 - point error / Kwack error, against the goals (changed pairs: >= 80 % inside and a
# point error at most half the Kwack error; all pairs: >= 80 % inside, median width <= 1.5,
# median point error <= 5 %), and the load average before and after each case.
#
# hpcc's DGEMM and HPL go through an optimized BLAS (built once, not by this compiler),
# RandomAccess does no floating-point work, PTRANS and the MPI parts need several ranks:
# left out.
#
#   bench/projection/real_apps.sh [OUTDIR]   (env: MACHINE=machine.toml NATIVE_RUNS=11 HPCSCOPE=bin
#       CASES="fft:64 fft:16 stream:128 eigen:800 lapack:600")
#
# A case is PART:SIZE: fft or stream and hpcc's memory in MiB (HPLMaxProcMem, which sizes
# the vectors), eigen and N (N x N matrices, 4 repetitions), lapack and N (2 repetitions).
# The default sizes run 0.1-0.5 s natively per build, out of the L2.
#
# Needs: gcc, g++, gfortran, Open MPI (apt-get install libopenmpi-dev openmpi-bin: hpcc's
# headers include mpi.h; the program runs as a singleton rank, without mpirun), python3,
# apt-get with access to the Debian archive this machine already uses, a release build of
# hpcscope and the plugin (cargo build --release -p hpcscope -p hpcscope-qemu-plugin), and
# for x86-64 programs the native engine (DynamoRIO, scripts/build-dynamorio.sh; without it
# `--engine auto` falls back on qemu-user, tens of times slower).
# The sources are fetched with `apt-get source --download-only` through a private source
# list (the machine's apt configuration is not changed; apt checks each tarball against the
# signed index) and built in a scratch directory that is removed at the end: none of the
# outside code is kept. Without MACHINE, measures one first (hpcscope bench --cpu-clock
# --statistic best --kernels triad), as bench/projection/validate.sh does.
# Exit status: 0 when every case ran (whatever the verdict), 1 when a step failed (a build,
# a program's own verification, validate), 3 when a tool is missing.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-projection-real"}
runs=${NATIVE_RUNS:-11}
cases=${CASES:-"fft:64 fft:16 stream:128 eigen:800 lapack:600"}
bin=${HPCSCOPE:-"$root/target/release/hpcscope"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
started=$(date +%s)

fail() { echo "real_apps: $*" >&2; exit 1; }

[ -x "$bin" ] || {
  echo "real_apps: missing $bin (cargo build --release -p hpcscope -p hpcscope-qemu-plugin)" >&2
  exit 3
}
export HPCSCOPE_QEMU_PLUGIN=${HPCSCOPE_QEMU_PLUGIN:-"$root/target/release/libhpcscope_qemu_plugin.so"}
# Open MPI refuses to start as root unless told; a singleton rank needs no launcher.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Check the cases before fetching anything.
need_hpcc=0 need_eigen=0 need_lapack=0
for c in $cases; do
  part=${c%%:*}
  size=${c#*:}
  case "$part" in
    fft|stream) need_hpcc=1 ;;
    eigen) need_eigen=1 ;;
    lapack) need_lapack=1 ;;
    *) fail "case $c: the part must be fft, stream, eigen or lapack (CASES=\"fft:64 eigen:800\")" ;;
  esac
  case "$size" in ''|*[!0-9]*|0) fail "case $c: give a positive size after the colon (fft:64, eigen:800)" ;; esac
done
# The tools the chosen cases need (gfortran only for lapack, mpicc only for hpcc's parts).
tools="gcc python3 apt-get"
[ "$need_hpcc" = 1 ] && tools="$tools mpicc"
[ "$need_eigen" = 1 ] && tools="$tools g++"
[ "$need_lapack" = 1 ] && tools="$tools gfortran"
for tool in $tools; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "real_apps: missing $tool (apt-get install gcc g++ gfortran libopenmpi-dev openmpi-bin python3)" >&2
    exit 3
  }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/hpcscope-real-apps.XXXXXX")
trap 'rm -rf "$work"' EXIT
. "$root/scripts/lib/apt-source.sh"

# fetch PACKAGE: its upstream tarball unpacked into $work/PACKAGE; prints the top directory.
fetch() {
  local pkg=$1 tarball dir
  mkdir -p "$work/$pkg"
  apt_source_fetch "$work/$pkg" "$APT_SOURCE_CODENAME" "$pkg" real_apps
  tarball=$(ls "$work/$pkg/${pkg}"_*.orig.tar.* 2>/dev/null | head -1)
  [ -n "$tarball" ] || { tail -5 "$work/$pkg/apt.log" >&2; fail "the $pkg orig tarball was not fetched (log above)"; }
  tar -C "$work/$pkg" -xf "$tarball"
  dir=$(find "$work/$pkg" -mindepth 1 -maxdepth 1 -type d ! -name lists ! -name parts | head -1)
  [ -n "$dir" ] || fail "the $pkg tarball $(basename "$tarball") unpacked nothing"
  echo "$dir"
}

# The four builds: label and flags (the same for every code).
labels=(scalar sse2 avx2 O1)
flags_of() {
  case $1 in
    scalar) echo "-O3 -march=x86-64-v3 -fno-tree-vectorize" ;;
    sse2) echo "-O3 -march=x86-64" ;;
    avx2) echo "-O3 -march=x86-64-v3" ;;
    O1) echo "-O1 -march=x86-64-v3" ;;
  esac
}
build_log() { tail -10 "$work/cc.log" >&2; fail "$*: build failed (log above)"; }

if [ "$need_hpcc" = 1 ]; then
  H=$(fetch hpcc)
  [ -f "$H/FFT/tstfft.c" ] || fail "the hpcc tarball has no FFT/tstfft.c"
  # The driver: one part per run, sized by its memory (hpcc's HPLMaxProcMem).
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
        "$H/FFT/wrapfftw.c" "$H/FFT/bcnrand.c" "$H/STREAM/stream.c" "$H/hpl/src/auxil/HPL_dlamch.c"
        "$H/hpl/testing/timer/HPL_timer_cputime.c")
  for l in "${labels[@]}"; do
    # shellcheck disable=SC2046
    mpicc $(flags_of "$l") -DLONG_IS_64BITS -I"$H/include" -I"$H/hpl/include" -I"$H/FFT" \
      "${srcs[@]}" -lm -o "$work/hpcc-$l" >"$work/cc.log" 2>&1 || build_log "hpcc ($l)"
  done
fi
if [ "$need_eigen" = 1 ]; then
  E=$(fetch eigen3)
  [ -f "$E/Eigen/Dense" ] || fail "the eigen3 tarball has no Eigen/Dense"
  for l in "${labels[@]}"; do
    extra=""
    [ "$l" = scalar ] && extra="-DEIGEN_DONT_VECTORIZE"
    # shellcheck disable=SC2046,SC2086
    g++ $(flags_of "$l") $extra -DNDEBUG -I"$E" -o "$work/eigen-$l" "$root/bench/mix/eigen_solve.cpp" \
      >"$work/cc.log" 2>&1 || build_log "eigen_solve ($l)"
  done
fi
if [ "$need_lapack" = 1 ]; then
  L=$(fetch lapack)
  [ -f "$L/BLAS/SRC/dgemm.f" ] || fail "the lapack tarball has no BLAS/SRC/dgemm.f"
  # What DGEMM, DGETRF and DGETRS call, and nothing else.
  fsrcs=()
  for f in dgemm dtrsm dscal idamax dswap lsame xerbla; do fsrcs+=("$L/BLAS/SRC/$f.f"); done
  for f in dgetrf dgetrf2 dgetrs dlaswp ilaenv ieeeck iparmq disnan dlaisnan; do fsrcs+=("$L/SRC/$f.f"); done
  fsrcs+=("$L/INSTALL/dlamch.f")
  for l in "${labels[@]}"; do
    mkdir -p "$work/lapack-obj-$l"
    # shellcheck disable=SC2046
    (cd "$work/lapack-obj-$l" && gfortran $(flags_of "$l") -c "${fsrcs[@]}" \
      && gcc $(flags_of "$l") -c "$here/lapack_solve.c" \
      && gfortran -o "$work/lapack-$l" ./*.o -lm) >"$work/cc.log" 2>&1 || build_log "lapack_solve ($l)"
  done
fi

# The machine file.
machine=${MACHINE:-}
if [ -z "$machine" ]; then
  machine="$out/machine.toml"
  [ -f "$machine" ] || "$bin" bench --cpu-clock --statistic best --kernels triad -o "$machine"
fi

# Each case: every build run once with the program's own check, then validate (every
# ordered pair of the four builds).
names=()
for c in $cases; do
  part=${c%%:*}
  size=${c#*:}
  case "$part" in
    fft|stream) prog=hpcc; args=("$part" "$size") ;;
    eigen) prog=eigen; args=("$size" 4) ;;
    lapack) prog=lapack; args=("$size" 2) ;;
  esac
  name="$part-$size"
  names+=("$name")
  builds=()
  : >"$out/$name-check.txt"
  for l in "${labels[@]}"; do
    { printf '%s: ' "$l"; "$work/$prog-$l" "${args[@]}"; } >>"$out/$name-check.txt" 2>&1 \
      || fail "$prog $l ${args[*]} failed its own verification: $(tail -3 "$out/$name-check.txt")"
    builds+=(--build "$l=$work/$prog-$l")
  done
  echo "real_apps: $name, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  "$bin" validate -m "$machine" --native-runs "$runs" -o "$out/$name" "${builds[@]}" -- "${args[@]}" \
    >"$out/$name.txt" 2>"$out/$name.err" \
    || { tail -5 "$out/$name.err" >&2; fail "hpcscope validate on $name failed (log in $out/$name.err)"; }
done

python3 "$here/real_apps_report.py" "$out" "${names[@]}"
echo "real_apps: $(( $(date +%s) - started )) s in all (${#names[@]} cases, $runs timed runs per build)"
