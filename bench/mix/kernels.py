#!/usr/bin/env python3
"""Plugin counts vs the analytic counts of every reference kernel, for every build variant.

    bench/mix/kernels.py PLUGIN.so BUILD_DIR      (BUILD_DIR from workloads/build.sh)

For each kernel binary, runs it under qemu-user with the plugin restricted to
`kernel_<name>` (region = the ELF symbol's range, read with `nm`), at two sizes, and prints
the difference of FLOPs and bytes against the difference the program reports. Kernels
whose "bytes" count every array reference as written (stencil, gemm, spmv, edge) can load
fewer bytes when the compiler keeps a value in a register; FLOPs should match exactly.
SVE variants run at 128, 512 and 2048 bits. x86-64-v4 (AVX-512) is skipped: QEMU 7.2
does not emulate it.
"""
import json
import os
import subprocess
import sys
import tempfile

SIZES = {"triad": (4096, 8192), "daxpy": (4096, 8192), "dot": (4096, 8192),
         "stencil": (64, 96), "gemm": (32, 64), "spmv": (4096, 16384), "edge": (4096, 16384),
         "cg": (4096, 16384), "nbody": (64, 128), "montecarlo": (500, 1000)}
REPS = 2


def symbol(binary, name):
    out = subprocess.run(["nm", "-S", binary], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == name:
            start = int(f[0], 16)
            return start, start + int(f[1], 16)
    raise SystemExit(f"{name} not in {binary}")


def run(qemu, plugin, args, binary, n, out):
    p = subprocess.run(qemu + ["-plugin", f"{plugin},out={out},{args}", binary, str(n), str(REPS)],
                       capture_output=True, text=True, check=True)
    kv = dict(x.split("=", 1) for x in p.stdout.split())
    t = json.load(open(out))["totals"]
    return t, float(kv["flops"]), float(kv["bytes"])


def main():
    plugin, build = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp()
    print(f"{'variant':<14}{'vl':>5} {'kernel':<8}{'flops meas/analytic':>22}{'bytes meas/analytic':>22}")
    for variant in sorted(os.listdir(build)):
        if variant == "x86-64-v4":
            continue
        aarch64 = variant.startswith("aarch64")
        vls = [128, 512, 2048] if variant == "aarch64-sve" else [None]
        for kernel, (n1, n2) in SIZES.items():
            binary = os.path.join(build, variant, kernel)
            if not os.path.exists(binary):
                continue
            s, e = symbol(binary, f"kernel_{kernel}")
            for vl in vls:
                qemu = ["qemu-aarch64"] if aarch64 else ["qemu-x86_64", "-cpu", "max"]
                args = f"region={s:#x}-{e:#x}"
                if vl:
                    qemu = ["qemu-aarch64", "-cpu", f"max,sve-default-vector-length={vl // 8}"]
                    args += f",vl={vl}"
                a = run(qemu, plugin, args, binary, n1, os.path.join(tmp, "a.json"))
                b = run(qemu, plugin, args, binary, n2, os.path.join(tmp, "b.json"))
                fl = b[0]["flops"] - a[0]["flops"], b[1] - a[1]
                by = (b[0]["bytes_loaded"] + b[0]["bytes_stored"]
                      - a[0]["bytes_loaded"] - a[0]["bytes_stored"]), b[2] - a[2]
                print(f"{variant:<14}{vl or '':>5} {kernel:<8}{fl[0] / fl[1]:>22.4f}{by[0] / by[1]:>22.4f}")


if __name__ == "__main__":
    main()
