#!/bin/sh
# Build the reference kernels for several ISAs and vector widths.
#
#   workloads/build.sh [OUTDIR] [KERNEL...]
#
# OUTDIR defaults to workloads/build. Each variant goes to OUTDIR/<variant>/<kernel>:
#   x86-64      gcc -O3 -march=x86-64      (SSE2, 128-bit)
#   x86-64-v3   gcc -O3 -march=x86-64-v3   (AVX2 + FMA, 256-bit)
#   x86-64-v4   gcc -O3 -march=x86-64-v4   (AVX-512, 512-bit)
#   aarch64-neon  aarch64-linux-gnu-gcc -O3 -march=armv8-a        (AdvSIMD, 128-bit)
#   aarch64-sve   aarch64-linux-gnu-gcc -O3 -march=armv8.2-a+sve  (vector-length agnostic)
# aarch64 binaries are static so that qemu-aarch64 runs them without a sysroot.
# A missing compiler skips its variants with a message. Override compilers with CC_X86 and
# CC_AARCH64, and add flags with EXTRA_CFLAGS.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/build"}
[ $# -gt 0 ] && shift
kernels=${*:-"triad daxpy dot stencil gemm spmv edge cg montecarlo nbody triad_stencil triad_omp stencil_omp cg_omp trmv_omp"}
cc_x86=${CC_X86:-gcc}
cc_a64=${CC_AARCH64:-aarch64-linux-gnu-gcc}
common="-O3 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -fno-omit-frame-pointer ${EXTRA_CFLAGS:-}"

build() { # variant compiler flags...
  variant=$1 cc=$2
  shift 2
  if ! command -v "$cc" >/dev/null 2>&1; then
    echo "skipping $variant: $cc not found" >&2
    return 0
  fi
  mkdir -p "$out/$variant"
  for k in $kernels; do
    # The OpenMP kernels (*_omp) need -fopenmp; threads come from OMP_NUM_THREADS.
    omp=
    case $k in *_omp) omp=-fopenmp ;; esac
    # shellcheck disable=SC2086
    "$cc" $common $omp "$@" -o "$out/$variant/$k" "$here/src/$k.c" -lm
  done
  echo "built $variant: $kernels -> $out/$variant"
}

case "$(uname -m)" in
  x86_64)
    build x86-64 "$cc_x86" -march=x86-64
    build x86-64-v3 "$cc_x86" -march=x86-64-v3
    build x86-64-v4 "$cc_x86" -march=x86-64-v4
    ;;
  *)
    command -v x86_64-linux-gnu-gcc >/dev/null 2>&1 && cc_x86=${CC_X86:-x86_64-linux-gnu-gcc}
    build x86-64 "$cc_x86" -march=x86-64 -static
    build x86-64-v3 "$cc_x86" -march=x86-64-v3 -static
    build x86-64-v4 "$cc_x86" -march=x86-64-v4 -static
    ;;
esac
build aarch64-neon "$cc_a64" -march=armv8-a -static
build aarch64-sve "$cc_a64" -march=armv8.2-a+sve -static
