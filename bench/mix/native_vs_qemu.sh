#!/bin/sh
# The native engine's counts against the QEMU plugin's, and the cost of each.
#
#   bench/mix/native_vs_qemu.sh [OUTDIR]     (env: KERNELS, RUNS=3, QEMU, PLUGIN,
#                                             EXTRA_CFLAGS, e.g. -ffast-math)
#
# Every kernel of the bundled workloads in KERNELS (default: triad daxpy dot stencil gemm
# spmv nbody montecarlo) is built as workloads/build.sh builds its AVX2 variant (gcc -O3
# -march=x86-64-v3, plus EXTRA_CFLAGS: -ffast-math vectorizes the reductions, whose tails
# the FLOP rule leaves out) and run three ways: natively; under DynamoRIO with hpcscope's client
# (scripts/build-dynamorio.sh), counting only; under QEMU with the hpcscope plugin,
# counting only (QEMU 10 from scripts/build-qemu.sh with the API v4 plugin when built,
# else qemu-x86_64 on the PATH with the API v1 plugin; QEMU and PLUGIN override). Both
# count the kernel's function (`region=` of `kernel_<name>`, the link-time range from
# `nm -S`): the C library the program calls is not the same code natively and under QEMU
# (its ifuncs pick the AVX-512 or ERMS variants the host has), so only the kernel's counts
# can be equal. Printed per kernel: FLOPs, FP instructions, FP instructions, FLOPs,
# divides and square roots per precision and width, loads, stores and bytes per access
# width, side by side, `=` when equal; the whole-program instructions; and the mean wall
# time of RUNS runs of each (the ratios to native).
#
# Then the OpenMP workloads with 2 threads, per thread (OMP_KERNELS), and the same kernels
# built for AVX-512 (native FLOPs against QEMU's of the AVX2 build),
# and an AVX-512 triad with a masked tail (bench/mix/triad_masked.c, n = 1000003, not a
# multiple of 8; QEMU cannot run it: no AVX-512) under the native engine, against its
# analytical counts (2 n FLOPs, 24 n bytes per repetition).
#
# Last, the steady-state cost on longer runs (STEADY: kernel:args pairs; each runs 0.2 to
# 2 s natively): native, DynamoRIO alone (no client) and DynamoRIO with the client; QEMU
# is left out there (minutes).
#
# Exit status 1 when a count compared differs. Needs gcc, nm, python3, the DynamoRIO build
# and a qemu-x86_64 with a plugin.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-native"}
runs=${RUNS:-3}
kernels=${KERNELS:-"triad daxpy dot stencil gemm spmv nbody montecarlo"}
mkdir -p "$out"

dr=$(bash "$root/scripts/build-dynamorio.sh" --print-dir)
client=$(dr_client "$dr")
[ -f "$client" ] || { echo "no DynamoRIO client in $dr: run scripts/build-dynamorio.sh" >&2; exit 3; }

. "$here/lib.sh"
mix_qemu10
if [ -n "${QEMU:-}" ]; then
  qemu=$QEMU
  plugin=${PLUGIN:?PLUGIN (the plugin for QEMU) is needed with QEMU}
elif [ -n "$q10" ]; then
  qemu=$q10
  plugin=$plugin4
else
  (cd "$root" && cargo build --release --quiet -p hpcscope-qemu-plugin)
  qemu=qemu-x86_64
  plugin=${PLUGIN:-"$root/target/release/libhpcscope_qemu_plugin.so"}
fi

# run_dr OUT.json ARGS -- PROGRAM ARGS: the program under DynamoRIO with the client.
run_dr() {
  json=$1
  cargs=$2
  shift 3
  DYNAMORIO_RUNUNDER=1 \
    DYNAMORIO_OPTIONS="-code_api -client_lib '$client;0;out=$json$cargs'" \
    LD_LIBRARY_PATH="$dr/lib64/release:$dr/ext/lib64/release" \
    LD_PRELOAD="libdrpreload.so libdynamorio.so" "$@"
}

# range_of BIN FUNCTION: the function's link-time range, START-END in hex.
range_of() {
  # shellcheck disable=SC2046
  set -- $(nm -S "$1" | awk -v f="$2" '$4 == f { print $1, $2 }')
  [ $# -eq 2 ] && printf '0x%x-0x%x' $((0x$1)) $((0x$1 + 0x$2))
}

# mean_time N CMD...: mean wall seconds of N runs.
mean_time() {
  n=$1
  shift
  python3 - "$n" "$@" <<'PY'
import subprocess, sys, time
n = int(sys.argv[1]); cmd = sys.argv[2:]
t = []
for _ in range(n):
    s = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    t.append(time.perf_counter() - s)
print(f"{sum(t) / len(t):.4f}")
PY
}

cflags="-O3 -std=c11 -D_POSIX_C_SOURCE=200809L -Wall -fno-omit-frame-pointer -march=x86-64-v3 ${EXTRA_CFLAGS:-}"
status=0
summary="$out/summary.txt"
: >"$summary"
for k in $kernels; do
  bin="$out/$k"
  # shellcheck disable=SC2086
  gcc $cflags -o "$bin" "$root/workloads/src/$k.c" -lm
  range=$(range_of "$bin" "kernel_$k" || true)
  [ -n "$range" ] || { echo "$k: no kernel_$k in $bin" >&2; status=1; continue; }
  args=$(args_of "$k")
  # The program's own result (its `check=` value) is the same under DynamoRIO.
  # shellcheck disable=SC2086
  check_native=$("$bin" $args | grep -o 'check=[^ ]*' || true)
  # shellcheck disable=SC2086
  check_dr=$(run_dr "$out/$k.native.json" ",region=$range" -- "$bin" $args | grep -o 'check=[^ ]*' || true)
  if [ "$check_native" != "$check_dr" ]; then
    echo "$k: the program's result differs under DynamoRIO ($check_native natively, $check_dr)" >>"$summary"
    status=1
  fi
  # shellcheck disable=SC2086
  run_dr "$out/$k.native-all.json" "" -- "$bin" $args >/dev/null
  # shellcheck disable=SC2086
  "$qemu" -cpu max -plugin "$plugin,out=$out/$k.qemu.json,region=$range" "$bin" $args >/dev/null
  # shellcheck disable=SC2086
  "$qemu" -cpu max -plugin "$plugin,out=$out/$k.qemu-all.json" "$bin" $args >/dev/null
  # shellcheck disable=SC2086
  t_native=$(mean_time "$runs" "$bin" $args)
  # shellcheck disable=SC2086
  t_dr=$(mean_time "$runs" env DYNAMORIO_RUNUNDER=1 \
    DYNAMORIO_OPTIONS="-code_api -client_lib '$client;0;out=$out/$k.t.json'" \
    LD_LIBRARY_PATH="$dr/lib64/release:$dr/ext/lib64/release" \
    LD_PRELOAD="libdrpreload.so libdynamorio.so" "$bin" $args)
  # shellcheck disable=SC2086
  t_qemu=$(mean_time "$runs" "$qemu" -cpu max -plugin "$plugin,out=$out/$k.t.json" "$bin" $args)
  python3 - "$k" "$out" "$t_native" "$t_dr" "$t_qemu" >>"$summary" <<'PY' || status=1
import json, sys
k, out, tn, td, tq = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
n = json.load(open(f"{out}/{k}.native.json"))["totals"]
q = json.load(open(f"{out}/{k}.qemu.json"))["totals"]
na = json.load(open(f"{out}/{k}.native-all.json"))["totals"]
qa = json.load(open(f"{out}/{k}.qemu-all.json"))["totals"]
bad = []
def row(name, a, b, compare=True):
    eq = "=" if a == b else ("" if not compare else "DIFFERS")
    if compare and a != b:
        bad.append(name)
    print(f"  {name:34s} {a:>16,} {b:>16,}  {eq}")
import os
flags = " ".join(["-march=x86-64-v3"] + os.environ.get("EXTRA_CFLAGS", "").split())
print(f"{k} (kernel_{k}, gcc -O3 {flags})                      native             qemu")
row("flops", n["flops"], q["flops"])
row("flops_excluded (reduction tails)", n.get("flops_excluded", 0), q.get("flops_excluded", 0))
row("fp_instructions", n["fp_instructions"], q["fp_instructions"])
row("fma_instructions", n.get("fma_instructions", 0), q.get("fma_instructions", 0))
for w in sorted(set(n["fp_by_width"]) | set(q["fp_by_width"])):
    a = n["fp_by_width"].get(w, {"instructions": 0, "flops": 0})
    b = q["fp_by_width"].get(w, {"instructions": 0, "flops": 0})
    row(f"{w} instructions", a["instructions"], b["instructions"])
    row(f"{w} flops", a["flops"], b["flops"])
    # Divides and square roots (written when not 0).
    for f in ["div", "sqrt"]:
        if a.get(f, 0) or b.get(f, 0):
            row(f"{w} {f}", a.get(f, 0), b.get(f, 0))
for f in ["instructions", "loads", "stores", "bytes_loaded", "bytes_stored"]:
    row(f, n[f], q[f])
for c in ["fp", "int", "load", "store", "branch", "other"]:
    row(f"class {c}", n.get("classes", {}).get(c, 0), q.get("classes", {}).get(c, 0))
mw = lambda t: t.get("mem_by_width", {})
for w in sorted(set(mw(n)) | set(mw(q)), key=lambda x: (x == "other", int(x) if x.isdigit() else 0)):
    a = mw(n).get(w, {}); b = mw(q).get(w, {})
    for f in ["loads", "bytes_loaded", "stores", "bytes_stored"]:
        if a.get(f, 0) or b.get(f, 0):
            row(f"mem {w}-bit {f}", a.get(f, 0), b.get(f, 0))
row("whole program: instructions", na["instructions"], qa["instructions"], compare=False)
row("whole program: flops", na["flops"], qa["flops"], compare=False)
print(f"  wall s: native {tn:.3f}, DynamoRIO counts {td:.3f} (x{td/tn:.2f}), QEMU counts {tq:.3f} (x{tq/tn:.2f}); QEMU / DynamoRIO x{tq/td:.1f}")
# Both engines apply the FLOP rule for reduction tails: every count must agree.
if bad:
    print(f"  DIFFERENT: {', '.join(bad)}")
    sys.exit(1)
PY
done

# The OpenMP workloads with 2 threads (OMP_NUM_THREADS=2, OMP_PROC_BIND=true), AVX2 builds:
# the counts of the outlined parallel region (kernel_<name>._omp_fn.0) per thread, natively
# and under QEMU (threads in start order: 0 the main thread, 1 the worker; the static
# schedule gives each its own part).
echo "OpenMP builds, 2 threads, kernel_<name>._omp_fn.0 per thread: native | qemu" >>"$summary"
for k in ${OMP_KERNELS:-triad_omp stencil_omp cg_omp trmv_omp}; do
  bin="$out/$k"
  # shellcheck disable=SC2086
  gcc $cflags -fopenmp -o "$bin" "$root/workloads/src/$k.c" -lm
  range=$(range_of "$bin" "kernel_$k._omp_fn.0" || true)
  [ -n "$range" ] || { echo "$k: no kernel_$k._omp_fn.0 in $bin" >&2; status=1; continue; }
  case $k in
    triad_omp) args="200000 20" ;;
    stencil_omp) args="300 20" ;;
    cg_omp) args="20000 20" ;;
    *) args="1000 10" ;;
  esac
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=2 OMP_PROC_BIND=true run_dr "$out/$k.native.json" ",region=$range" -- "$bin" $args >/dev/null
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=2 OMP_PROC_BIND=true "$qemu" -cpu max -plugin "$plugin,out=$out/$k.qemu.json,region=$range" "$bin" $args >/dev/null
  python3 - "$k" "$out" >>"$summary" <<'PY' || status=1
import json, sys
k, out = sys.argv[1], sys.argv[2]
per = lambda f: {t["thread"]: t["totals"] for t in json.load(open(f))["regions"][0]["threads"]}
n, q = per(f"{out}/{k}.native.json"), per(f"{out}/{k}.qemu.json")
bad = []
for t in sorted(set(n) | set(q)):
    a, b = n.get(t, {}), q.get(t, {})
    cells = []
    # Divides and square roots, all precisions and widths together.
    for t_ in (a, b):
        for f in ["div", "sqrt"]:
            t_[f] = sum(c.get(f, 0) for c in t_.get("fp_by_width", {}).values())
    for f in ["flops", "fp_instructions", "div", "sqrt", "loads", "stores", "bytes_loaded", "bytes_stored"]:
        x, y = a.get(f, 0), b.get(f, 0)
        cells.append(f"{f} {x:,} {'=' if x == y else '!= ' + format(y, ',')}")
        if x != y:
            bad.append(f"thread {t} {f}")
    print(f"  {k:12s} thread {t}: " + "; ".join(cells))
if bad:
    print(f"  DIFFERENT: {', '.join(bad)}")
    sys.exit(1)
PY
done

# The same kernels built for AVX-512 (-march=x86-64-v4 -mprefer-vector-width=512), which
# QEMU cannot run: the native engine's FLOPs of kernel_<name> against QEMU's of the AVX2
# build (the source's FLOPs do not depend on the vector width). A CPU without AVX-512
# cannot run them either: skipped there, with a line saying so.
if grep -qw avx512f /proc/cpuinfo; then
echo "AVX-512 builds (native) against the AVX2 builds (QEMU), FLOPs of kernel_<name>" >>"$summary"
for k in $kernels; do
  [ -f "$out/$k.qemu.json" ] || continue
  bin="$out/v4_$k"
  # shellcheck disable=SC2086
  gcc $cflags -march=x86-64-v4 -mprefer-vector-width=512 -o "$bin" "$root/workloads/src/$k.c" -lm
  range=$(range_of "$bin" "kernel_$k" || true)
  args=$(args_of "$k")
  # shellcheck disable=SC2086
  run_dr "$out/v4_$k.native.json" ",region=$range" -- "$bin" $args >/dev/null
  python3 - "$k" "$out" >>"$summary" <<'PY' || status=1
import json, sys
k, out = sys.argv[1], sys.argv[2]
n = json.load(open(f"{out}/v4_{k}.native.json"))["totals"]
q = json.load(open(f"{out}/{k}.qemu.json"))["totals"]
widths = ", ".join(f"{w} {c['flops']:,}" for w, c in sorted(n["fp_by_width"].items()))
eq = "=" if n["flops"] == q["flops"] else "DIFFERS"
print(f"  {k:12s} {n['flops']:>16,} {q['flops']:>16,}  {eq}   ({widths})")
sys.exit(0 if n["flops"] == q["flops"] else 1)
PY
done

# The AVX-512 masked tail, native only.
tm="$out/triad_masked"
gcc -O3 -march=x86-64-v4 -mprefer-vector-width=512 -o "$tm" "$here/triad_masked.c"
range=$(range_of "$tm" kernel_triad)
n=1000003
reps=10
run_dr "$out/triad_masked.native.json" ",region=$range" -- "$tm" $n $reps >/dev/null
t_native=$(mean_time "$runs" "$tm" $n $reps)
t_dr=$(mean_time "$runs" env DYNAMORIO_RUNUNDER=1 \
  DYNAMORIO_OPTIONS="-code_api -client_lib '$client;0;out=$out/tm.t.json'" \
  LD_LIBRARY_PATH="$dr/lib64/release:$dr/ext/lib64/release" \
  LD_PRELOAD="libdrpreload.so libdynamorio.so" "$tm" $n $reps)
python3 - "$out/triad_masked.native.json" $n $reps "$t_native" "$t_dr" >>"$summary" <<'PY' || status=1
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
n, reps, tn, td = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
# The vector traffic: the 512-bit accesses and the masked ones (their active bytes); the
# function's other access is its `ret` (8 bytes a call).
vec = t["mem_by_width"].get("512", {})
want = {"flops": 2 * n * reps, "bytes of 512-bit and masked accesses": 24 * n * reps}
got = {"flops": t["flops"], "bytes of 512-bit and masked accesses":
       vec.get("bytes_loaded", 0) + vec.get("bytes_stored", 0) + t.get("bytes_dynamic", 0)}
print(f"triad_masked (AVX-512, n={n}, masked tail of {n % 8}), kernel_triad    native       analytical")
bad = False
for k in want:
    eq = "=" if want[k] == got[k] else "DIFFERS"
    bad |= want[k] != got[k]
    print(f"  {k:34s} {got[k]:>16,} {want[k]:>16,}  {eq}")
for w, c in sorted(t["fp_by_width"].items()):
    print(f"  {w:34s} {c['instructions']:>16,} instructions, {c['flops']:,} flops")
print(f"  bytes counted from masks: {t.get('bytes_dynamic', 0):,}")
print(f"  wall s: native {tn:.3f}, DynamoRIO counts {td:.3f} (x{td/tn:.2f}); QEMU: cannot run it (no AVX-512)")
sys.exit(1 if bad else 0)
PY
else
  echo "AVX-512 builds and the masked triad: skipped (this CPU has no AVX-512)" >>"$summary"
fi
# Steady state: longer runs, native against DynamoRIO without and with the client.
steady=${STEADY:-"triad:2000000,50 edge:2000000,20 stencil:2000,40 cg:400000,40 nbody:4000,10"}
echo "steady state (mean wall s of $runs runs): native, DynamoRIO without client, with the client (counts)" >>"$summary"
for spec in $steady; do
  k=${spec%%:*}
  args=$(echo "${spec#*:}" | tr , ' ')
  bin="$out/$k"
  [ -x "$bin" ] || gcc $cflags -o "$bin" "$root/workloads/src/$k.c" -lm
  # shellcheck disable=SC2086
  t_native=$(mean_time "$runs" "$bin" $args)
  # shellcheck disable=SC2086
  t_bare=$(mean_time "$runs" env DYNAMORIO_RUNUNDER=1 DYNAMORIO_OPTIONS="-code_api" \
    LD_LIBRARY_PATH="$dr/lib64/release:$dr/ext/lib64/release" \
    LD_PRELOAD="libdrpreload.so libdynamorio.so" "$bin" $args)
  # shellcheck disable=SC2086
  t_dr=$(mean_time "$runs" env DYNAMORIO_RUNUNDER=1 \
    DYNAMORIO_OPTIONS="-code_api -client_lib '$client;0;out=$out/$k.t.json'" \
    LD_LIBRARY_PATH="$dr/lib64/release:$dr/ext/lib64/release" \
    LD_PRELOAD="libdrpreload.so libdynamorio.so" "$bin" $args)
  python3 -c "import sys; k, a, n, b, d = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:]); print(f'  {k} {a}: native {n:.3f}, DynamoRIO {b:.3f} (x{b/n:.2f}), with the client {d:.3f} (x{d/n:.2f})')" \
    "$k" "$args" "$t_native" "$t_bare" "$t_dr" >>"$summary"
done
cat "$summary"
exit $status
