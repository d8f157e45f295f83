#!/usr/bin/env bash
# SVE FLOPs and bytes of the reference kernels at 128 to 2048 bits, counted by the plugin on
# QEMU 7.2 (plugin API v1: every lane of a predicated instruction counted, SVE loads and
# stores sized from the encoding) and on QEMU 10 (API v4: active lanes from the predicates,
# SVE accesses as QEMU reports them), side by side with the analytic counts each program
# prints (the reference). Verdict per row: exact when within 0.1 % of the analytic count.
# Kernels: spmv (rows of 3 to 5 non-zeros), triad and dot (N_VEC elements, by default a
# multiple of no vector length) and gather (a random-permutation gather, N_VEC elements).
#
# Needs qemu-user, aarch64-linux-gnu-gcc, and QEMU 10 from scripts/build-qemu.sh (rows for
# an emulator that is missing say so). Usage: bench/sve/exact.sh [N_SPMV N_VEC]
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"
cd "$root"
n_spmv=${1:-2500}
n_vec=${2:-4099}
cache=${HPCSCOPE_CACHE_DIR:-${XDG_CACHE_HOME:+$XDG_CACHE_HOME/hpcscope}}
cache=${cache:-$HOME/.cache/hpcscope}
q10="$cache/qemu-10.0.2/bin/qemu-aarch64"

command -v aarch64-linux-gnu-gcc >/dev/null || { echo "skipping: aarch64-linux-gnu-gcc not found"; exit 0; }
cargo_release -p hpcscope-qemu-plugin
build_plugin_v4
p1=target/release/libhpcscope_qemu_plugin.so
p4=target/plugin-v4/release/libhpcscope_qemu_plugin.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%-6s %5s | %12s %12s %7s | %12s %12s %7s | %12s %12s | %s\n' \
  kernel bits flops_7.2 bytes_7.2 x_7.2 flops_10 bytes_10 x_10 flops_ref bytes_ref verdict_10
for kernel in spmv triad dot gather; do
  n=$n_vec; [ "$kernel" = spmv ] && n=$n_spmv
  bin="$tmp/$kernel"
  aarch64-linux-gnu-gcc -O3 -std=gnu11 -D_POSIX_C_SOURCE=200809L -march=armv8.2-a+sve -static \
    -o "$bin" "workloads/src/$kernel.c" -lm
  read -r start size < <(nm -S "$bin" | awk -v f="kernel_$kernel" '$4 == f { print $1, $2 }')
  region=$(printf 'region=0x%x-0x%x' $((16#$start)) $((16#$start + 16#$size)))
  for bits in 128 256 512 1024 2048; do
    cpu="max,sve-default-vector-length=$((bits / 8))"
    count() { # qemu plugin -> "flops bytes"
      "$1" -cpu "$cpu" -plugin "$2,out=$tmp/o.json,$region" "$bin" "$n" 2 >"$tmp/stdout" 2>/dev/null || return 1
      python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; print(t["flops"], t["bytes_loaded"]+t["bytes_stored"])' "$tmp/o.json"
    }
    old="- -"; new="- -"
    command -v qemu-aarch64 >/dev/null && old=$(count qemu-aarch64 "$p1" || echo "- -")
    ref=$(grep -o 'flops=[0-9.e+]* bytes=[0-9.e+]*' "$tmp/stdout" | sed 's/flops=//; s/bytes=//')
    [ -x "$q10" ] && new=$(count "$q10" "$p4" || echo "- -")
    [ -n "$ref" ] || ref=$(grep -o 'flops=[0-9.e+]* bytes=[0-9.e+]*' "$tmp/stdout" | sed 's/flops=//; s/bytes=//')
    python3 - "$kernel" "$bits" $old $new $ref <<'PY'
import sys
k, bits, of, ob, nf, nb, rf, rb = sys.argv[1:9]
rf, rb = float(rf), float(rb)
def x(v, r):
    return "-" if v == "-" else f"{float(v) / r:.3f}"
def ok(v, r):
    return v != "-" and abs(float(v) - r) <= 1e-3 * r
verdict = "no QEMU 10" if nf == "-" else ("exact" if ok(nf, rf) and ok(nb, rb) else "OFF")
print(f"{k:<6} {bits:>5} | {of:>12} {ob:>12} {x(of, rf):>7} | {nf:>12} {nb:>12} {x(nf, rf):>7} | {rf:>12.0f} {rb:>12.0f} | {verdict}")
PY
  done
done
echo "x_7.2, x_10: counted FLOPs over the analytic FLOPs. QEMU 7.2 counts the bytes of SVE accesses from the encoding (all lanes); QEMU 10 counts what it reports, one access per active element."
