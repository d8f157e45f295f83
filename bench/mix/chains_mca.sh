#!/bin/sh
# The loops' dependency chains the engines count, beside llvm-mca's simulation of the same
# loop bodies on a Zen 3 core (LLVM's znver3 scheduling model).
#
#   bench/mix/chains_mca.sh [OUTDIR]     (env: WORKLOADS, default: the eight bundled ones)
#
# Each bundled workload (workloads/src) is built as its AVX2 variant (gcc -O3
# -march=x86-64-v3, -fopenmp for the *_omp ones). In each of its kernel functions
# (`kernel_*`, their OpenMP outlined parts included), every loop closed by a backward
# branch within the function is taken from `objdump -d` and:
#   - given to the chain analysis the native engine runs (crates/x86-lanes/src/chain.rs,
#     through its `loop_chain` example): its longest loop-carried chain, timed with Zen 3's
#     published latencies (data/published/fp-latency.toml, divider.toml's latency_cycles;
#     one cycle per other step);
#   - given to `llvm-mca -mcpu=znver3` (the body without its closing branch, repeated 500
#     times): cycles per iteration, which count every limit LLVM models (latencies,
#     ports, the front end), so never fewer than the chain's when both are right.
# A loop with conditional branches inside is given to both without them (taken as not
# taken, as the chain analysis takes them; llvm-mca has no branches). Verdicts: `chain-bound` when llvm-mca's cycles are
# within 10 % of the chain's, `other limit` when above, and `CHAIN TOO LONG` when the
# chain's cycles exceed llvm-mca's by more than 10 % (the chain would overstate the
# bound): exit status 1 then.
#
# Needs gcc, objdump, llvm-mca and python3; builds the example with cargo.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-chains"}
workloads=${WORKLOADS:-"triad stencil gemm cg edge montecarlo nbody trmv_omp"}
need_tools gcc objdump llvm-mca python3 -- gcc binutils llvm python3
mkdir -p "$out"
(cd "$root" && cargo build --quiet --release -p hpcscope-x86-lanes --example loop_chain)
chain="$root/target/release/examples/loop_chain"
for w in $workloads; do
  omp=""
  case $w in *_omp) omp=-fopenmp ;; esac
  gcc -O3 -march=x86-64-v3 $omp -std=gnu11 -o "$out/$w" "$root/workloads/src/$w.c" -lm
done
PYTHONDONTWRITEBYTECODE=1 python3 - "$out" "$chain" "$root" $workloads <<'PY'
import re, subprocess, sys
out, chain_bin, root, workloads = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
sys.path.insert(0, f"{root}/bench/counters")
from published import by_id

fp = by_id(f"{root}/data/published/fp-latency.toml", "zen3")
div = by_id(f"{root}/data/published/divider.toml", "zen3")

def latency(op, prec, bits):
    cpu = div if op in ("div", "sqrt") else fp
    want = "evex" if bits == 512 else "vex"
    for i in cpu["instruction"]:
        if (i["op"], i["precision"], i["vector_bits"], i["encoding"]) == (op, prec, bits, want):
            return i["latency_cycles"]
    raise SystemExit(f"no published Zen 3 latency for {op} {prec} {bits}")

def functions(binary):
    text = subprocess.run(["objdump", "-d", "-w", "--no-show-raw-insn", binary],
                          capture_output=True, text=True, check=True).stdout
    raw = subprocess.run(["objdump", "-d", "-w", binary],
                         capture_output=True, text=True, check=True).stdout
    code = {}
    for line in raw.splitlines():
        m = re.match(r"\s+([0-9a-f]+):\t([0-9a-f ]+)\t", line)
        if m:
            code[int(m.group(1), 16)] = bytes.fromhex(m.group(2).replace(" ", ""))
    funcs, name = {}, None
    for line in text.splitlines():
        m = re.match(r"[0-9a-f]+ <(.+)>:", line)
        if m:
            name = m.group(1) if "kernel_" in m.group(1) else None
            if name:
                funcs[name] = []
            continue
        m = re.match(r"\s+([0-9a-f]+):\t(.*)", line)
        if name and m:
            funcs[name].append((int(m.group(1), 16), m.group(2).strip()))
    return funcs, code

def target_of(ins):
    m = re.match(r"(j\w+)\s+([0-9a-f]+)\b", ins)
    return (m.group(1), int(m.group(2), 16)) if m else (None, None)

def mca_cycles(lines):
    asm = "\n".join(lines) + "\n"
    r = subprocess.run(["llvm-mca", "-mcpu=znver3", "-iterations=500"], input=asm,
                       capture_output=True, text=True)
    m = re.search(r"Total Cycles:\s+(\d+)", r.stdout)
    return int(m.group(1)) / 500 if m else None

bad = 0
print(f"{'workload':<11} {'function':<28} {'loop':>12} {'body':>4}  {'chain (per iteration)':<34} "
      f"{'cycles':>6} {'llvm-mca':>8} {'ratio':>6}  verdict")
for w in workloads:
    funcs, code = functions(f"{out}/{w}")
    for fname, insns in funcs.items():
        addrs = [a for a, _ in insns]
        for k, (addr, ins) in enumerate(insns):
            mn, tgt = target_of(ins)
            if tgt is None or not (addrs[0] <= tgt <= addr):
                continue
            body = [(a, i) for a, i in insns if tgt <= a <= addr]
            blob = b"".join(code.get(a, b"") for a, _ in body)
            r = subprocess.run([chain_bin, f"{tgt:x}", f"{addr:x}", blob.hex()],
                               capture_output=True, text=True, check=True).stdout.split("\n")
            if r[0] == "none":
                continue
            other, steps = 0, []
            for line in r[1:]:
                f = line.split()
                if f[:1] == ["other"]:
                    other = int(f[1])
                elif f[:1] == ["fp"]:
                    op, elem, width, n = f[1], int(f[2]), f[3], int(f[4])
                    bits = elem if width == "scalar" else int(width)
                    steps.append((op, f"f{elem}", bits, n))
            if not steps and other == 0:
                continue
            cyc = other + sum(n * latency(op, p, b) for op, p, b, n in steps)
            words = ", ".join(f"{n} {op} {p}/{b}" for op, p, b, n in steps)
            words = (words + (", " if words else "") + f"{other} other") if other else words
            # Inner conditional branches are dropped (not taken), as the chain takes them.
            inner = any(target_of(i)[0] for _, i in body[:-1])
            mca = mca_cycles([re.sub(r"\s*<[^>]*>", "", i) for _, i in body[:-1]
                              if not target_of(i)[0]
                              and not i.startswith(("nop", "cs nop", "xchg   %ax,%ax"))])
            if mca is None:
                ratio, verdict = "-", "llvm-mca failed"
            else:
                ratio = f"{mca / cyc:6.2f}"
                if cyc > 1.1 * mca:
                    verdict, bad = "CHAIN TOO LONG", bad + 1
                elif mca <= 1.1 * cyc:
                    verdict = "chain-bound"
                else:
                    verdict = "other limit"
                if inner:
                    verdict += " (inner branches not taken)"
            print(f"{w:<11} {fname[:28]:<28} {tgt:>5x}-{addr:<6x} {len(body):>4}  {words[:34]:<34} "
                  f"{cyc:>6.1f} {('-' if mca is None else f'{mca:8.2f}'):>8} {ratio:>6}  {verdict}")
print(f"{bad} loop(s) whose chain is longer than llvm-mca's cycles")
sys.exit(1 if bad else 0)
PY
