#!/bin/sh
# The two engines of `hpcscope mix` side by side, with cachegrind as the reference of the
# cache simulation, in one run per workload.
#
#   bench/mix/engines.sh [OUTDIR]   (env: RUNS=3
#                                    WORKLOADS="cg edge montecarlo triad_stencil eigen"
#                                    SAMPLE=8 HPCSCOPE=path/to/hpcscope
#                                    PLACEMENTS="0 16 32 48")
#
# Workloads: the bundled CG, edge loop, Monte-Carlo transport and triad+stencil kernels, and
# a real C++ code: Eigen 3.4.0's dense Cholesky and LU (bench/mix/eigen_solve.cpp, a driver
# of Eigen's templates, Eigen fetched from Debian's eigen3 source package), with
# bench/mix/lib.sh's arguments, built for AVX2 (-O3 -march=x86-64-v3), the build both
# engines run (QEMU has no AVX-512).
#
# Per workload, one hyperfine run (RUNS runs each, so the cases share the machine's load):
#   native            the program alone
#   dr counts         under DynamoRIO with hpcscope's client, counting only
#   qemu              bare qemu-x86_64 (QEMU 10 from scripts/build-qemu.sh when built)
#   cachegrind        valgrind --tool=cachegrind --cache-sim=yes, D1 as the L1 of cascadelake-8260
#   mix qemu          hpcscope mix --engine qemu -m cascadelake-8260 -m graviton2 (two 3-level
#                     hierarchies, every access)
#   mix native        the same, --engine native
#   mix native sampled  --engine native --sample SAMPLE
#   native x10, dr counts x10   the same two with 10 times the repetitions
# Printed: the mean wall times, the ratios of the criteria of the native engine (counts only
# at most 1.5x native; full simulation at most 1.0x cachegrind; sampled at most 4x native),
# counts only at 10 times the repetitions, split into the cost per second of native run (the
# slope between the two lengths) and the start-up (what is left of the short run),
# the L1 data misses: cachegrind's D1 misses, and the cascadelake-8260 L1 misses of mix
# under each engine, with their differences to cachegrind (whole program: the C library's
# start-up and ifunc choices differ a little between valgrind's CPU, QEMU's and the
# machine's, so a difference of the order of a start-up's misses is expected), and the
# throughput of each simulator over its mean wall time: data accesses per second, and
# lookups per second in its cache levels (cachegrind: I refs + D refs + LL refs; mix
# native: every level's accesses, both hierarchies, each level's own rate beside).
#
# Where the stack lies changes a program's L1 misses a little: triad_stencil's D1 misses
# under cachegrind are 6,757,997 or 6,766,557 (0.13 % apart) depending on the size of the
# environment above the stack alone, and so are the native engine's. A difference between
# two tools run once each can be that and nothing else. So cachegrind and the native engine
# count the misses with address-space randomization off (setarch -R) at PLACEMENTS stack
# placements each (an environment variable of 0, 16, 32 and 48 bytes: both placements of
# triad_stencil among them), and each tool's lowest and highest counts are compared with the
# other's lowest and highest; the QEMU engine's count is of one run.
#
# Needs gcc, valgrind, hyperfine, python3, the DynamoRIO build (scripts/build-dynamorio.sh)
# and a release build of hpcscope (built here unless HPCSCOPE is given).
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix-engines"}
runs=${RUNS:-3}
sample=${SAMPLE:-8}
workloads=${WORKLOADS:-"cg edge montecarlo triad_stencil eigen"}
mkdir -p "$out"
. "$here/lib.sh"
need_tools gcc g++ valgrind hyperfine python3 apt-get bash setarch -- gcc g++ valgrind hyperfine python3 apt bash util-linux
placements=${PLACEMENTS:-"0 16 32 48"}
if [ -z "${HPCSCOPE:-}" ]; then
  cargo_release -p hpcscope
fi
hs=${HPCSCOPE:-"$root/target/release/hpcscope"}
dr=$(bash "$root/scripts/build-dynamorio.sh" --print-dir)
client=$(dr_client "$dr")
[ -f "$client" ] || { echo "no DynamoRIO client in $dr: run scripts/build-dynamorio.sh" >&2; exit 3; }
mix_qemu10
qemu=${q10:-qemu-x86_64}
command -v "$qemu" >/dev/null || { echo "no $qemu: install qemu-user or run scripts/build-qemu.sh" >&2; exit 3; }
qenv=""
[ -n "$q10" ] && qenv="HPCSCOPE_QEMU=$q10 HPCSCOPE_QEMU_PLUGIN=$plugin4"
MIX_CFLAGS_EXTRA="-march=x86-64-v3" mix_build "$out" $workloads

# The DynamoRIO client counting only, as the native engine starts it.
drrun="env DYNAMORIO_RUNUNDER=1 LD_LIBRARY_PATH=$dr/lib64/release:$dr/ext/lib64/release"
drrun="$drrun LD_PRELOAD=libdrpreload.so:libdynamorio.so"
d1="--D1=32768,8,64"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); CPUs: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); bare QEMU: $($qemu --version | head -1); mix --sample $sample"
status=0
for w in $workloads; do
  bin="$out/$w"
  a=$(args_of "$w")
  # The same run with 10 times the repetitions (the second argument): the start-up of
  # DynamoRIO and of the client is paid once, so the two lengths give it apart from the
  # cost per second of the program's own run.
  a10=$(echo "$a" | awk '{ $2 = $2 * 10; print }')
  mix="$hs mix -m cascadelake-8260 -m graviton2 --native-runs 0"
  set -- -n native "$bin $a" \
    -n "dr counts" "$drrun DYNAMORIO_OPTIONS=-code_api\ -client_lib\ '$client;0;out=$out/$w.dr.json' $bin $a" \
    -n "native x10" "$bin $a10" \
    -n "dr counts x10" "$drrun DYNAMORIO_OPTIONS=-code_api\ -client_lib\ '$client;0;out=$out/$w.dr10.json' $bin $a10" \
    -n qemu "$qemu $bin $a" \
    -n cachegrind "valgrind --tool=cachegrind --cache-sim=yes $d1 --cachegrind-out-file=/dev/null $bin $a" \
    -n "mix qemu" "env $qenv $mix --engine qemu -- $bin $a" \
    -n "mix native" "$mix --engine native -- $bin $a" \
    -n "mix native sampled" "$mix --engine native --sample $sample -- $bin $a"
  hyperfine -N --warmup 1 --runs "$runs" --export-json "$out/$w.times.json" "$@" >/dev/null 2>&1 || {
    echo "$w: hyperfine failed; rerun with --show-output to see why" >&2
    exit 1
  }
  # The misses, at each stack placement (the environment variable's length), without
  # address-space randomization; the first placement's runs are the ones whose other
  # figures (accesses, throughput) are printed.
  for p in $placements; do
    pad=$(head -c "$p" /dev/zero | tr '\0' x)
    HPCSCOPE_BENCH_PAD=$pad setarch -R valgrind --tool=cachegrind --cache-sim=yes $d1 \
      --cachegrind-out-file=/dev/null "$bin" $a >/dev/null 2>"$out/$w.cachegrind.$p.txt"
    # shellcheck disable=SC2086
    HPCSCOPE_BENCH_PAD=$pad setarch -R $mix --engine native --format json -- "$bin" $a \
      >"$out/$w.native.$p.json" || true
  done
  first=${placements%% *}
  # shellcheck disable=SC2086
  env $qenv $mix --engine qemu --format json -- "$bin" $a >"$out/$w.qemu.json" || true
  python3 - "$w" "$out/$w.times.json" "$out/$w" "$first" "$out/$w.qemu.json" $placements <<'PY' || status=1
import json, re, sys
w, times, stem, first, q = sys.argv[1:6]
placements = sys.argv[6:]
cg, n = f"{stem}.cachegrind.{first}.txt", f"{stem}.native.{first}.json"
r = {x["command"]: x["mean"] for x in json.load(open(times))["results"]}
def ratio(a, b):
    return r[a] / r[b]
def ok(c):
    return "PASS" if c else "FAIL"
cells = ", ".join(f"{k} {v:.3f} s" for k, v in r.items())
print(f"{w}: {cells}")
c1, c2, c3 = ratio("dr counts", "native"), ratio("mix native", "cachegrind"), ratio("mix native sampled", "native")
print(f"  native engine: counts only x{c1:.2f} native (<= 1.5: {ok(c1 <= 1.5)}); "
      f"full simulation x{c2:.2f} cachegrind (<= 1.0: {ok(c2 <= 1.0)}); "
      f"sampled x{c3:.2f} native (<= 4: {ok(c3 <= 4.0)}); "
      f"mix native x{ratio('mix native', 'mix qemu'):.2f} mix qemu")
# Counts only, start-up apart: the cost per second of native run is the slope between the
# two lengths, the start-up what is left of the short run.
dn, dd = r["native x10"] - r["native"], r["dr counts x10"] - r["dr counts"]
if dn > 0:
    slope = dd / dn
    start = r["dr counts"] - slope * r["native"]
    print(f"  counts only, 10x the repetitions: x{ratio('dr counts x10', 'native x10'):.2f} native "
          f"({r['native x10']:.3f} s native); per second of native run x{slope:.2f}, "
          f"start-up {start * 1000:.0f} ms")
def d1_misses(path):
    m = re.search(r"D1\s+misses:\s+([\d,]+)", open(path).read())
    return int(m.group(1).replace(",", "")) if m else None
def l1(path):
    t = open(path).read()
    v = json.loads(t[t.index("{"):])["variants"][0]
    c = next(c for c in v["caches"] if "cascade" in c["name"].lower() or "8260" in c["name"])
    lv = c["levels"][0]
    return lv["accesses"] - lv["hits"], lv["accesses"]
text = open(cg).read()
d1s = [d1_misses(f"{stem}.cachegrind.{p}.txt") for p in placements]
def l1_or_none(path):
    try:
        return l1(path)
    except (OSError, ValueError, KeyError, IndexError, StopIteration):
        return None
native = [l1_or_none(f"{stem}.native.{p}.json") for p in placements]
nats = [x and x[0] for x in native]
d1 = d1s[0]
mq, aq = l1(q)
mn, an = native[0] or l1(n)
def diff(x, ref=d1):
    return f"{(x - ref) / ref * 100:+.3f} %" if ref else "n/a"
print(f"  L1 data misses, stack placements {' '.join(placements)} (bytes of environment, "
      f"setarch -R): cachegrind {d1s}; mix native {nats}")
if None in d1s or None in nats:
    print("  L1 data misses: a run gave no count (see its output under the OUTDIR)")
else:
    lo, hi = diff(min(nats), min(d1s)), diff(max(nats), max(d1s))
    print(f"  L1 data misses, native against cachegrind: lowest {lo}, highest {hi}; "
          f"each tool's own spread over the placements: cachegrind "
          f"{(max(d1s) - min(d1s)) / min(d1s) * 100:.3f} %, native "
          f"{(max(nats) - min(nats)) / min(nats) * 100:.3f} %")
print(f"  L1 data misses, first placement: cachegrind {d1}; mix native {mn} ({diff(mn)}, "
      f"{an} accesses); mix qemu (one run, randomized) {mq} ({diff(mq)}, {aq} accesses)")
# Throughput of each simulator over the wall time of its whole run (start-up included):
# the program's data accesses per second, and lookups per second in all its cache levels
# (cachegrind: I1, D1 and LL, each reference one L1 lookup and each L1 miss one LL lookup;
# mix: the accesses every level of both hierarchies counted).
def count(name):
    m = re.search(name + r":\s+([\d,]+)", text)
    return int(m.group(1).replace(",", "")) if m else 0
def mps(n, s):
    return f"{n / s / 1e6:.1f} M/s"
irefs, drefs, llrefs = count(r"I\s+refs"), count(r"D\s+refs"), count(r"LL refs")
t = open(n).read()
caches = json.loads(t[t.index("{"):])["variants"][0]["caches"]
per_level = [(c["name"], lv["name"], lv["accesses"]) for c in caches for lv in c["levels"]]
lookups = sum(a for _, _, a in per_level)
tm = r["mix native"]
print(f"  simulator throughput: cachegrind {mps(drefs, r['cachegrind'])} data refs, "
      f"{mps(irefs + drefs + llrefs, r['cachegrind'])} lookups in I1+D1+LL; "
      f"mix native {mps(an, tm)} data accesses, {mps(lookups, tm)} lookups in "
      f"{len(per_level)} levels ("
      + ", ".join(f"{c} {lv} {mps(a, tm)}" for c, lv, a in per_level) + ")")
PY
done
exit $status
