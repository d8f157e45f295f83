#!/usr/bin/env bash
# Installs what hpcscope's build, tests and demo need on a Debian machine (run as root or
# with sudo): the emulator and cross compiler for `hpcscope mix`, and the reference tools
# the tests and benchmarks compare against. Safe to run again.
set -euo pipefail

packages=(
  qemu-user                 # qemu-x86_64 / qemu-aarch64: hpcscope mix runs binaries under TCG plugins
  gcc-aarch64-linux-gnu     # cross-compiles the aarch64 NEON/SVE reference workloads
  binutils-aarch64-linux-gnu
  libc6-dev-arm64-cross
  valgrind                  # cachegrind: reference for the cache simulator
  likwid                    # likwid-bench: reference for hpcscope bench
  hyperfine                 # whole-command timing in bench/ scripts
  chromium                  # headless: the end-to-end test of the HTML report
  clang llvm                # compiles the eBPF programs (only to regenerate them)
  libbpf-dev                # bpf_helpers.h for that; the object test then rebuilds and compares bytes
  bpftrace                  # reference for the tracing overhead benchmark
  strace                    # strace -f -c: reference for the syscall counts (bench/trace, tests)
  linux-perf                # perf stat / perf record: reference for on-CPU time and profile shares
  libc6-dbg                 # libc's separate debug file: the profile symbol test names its static functions
  systemtap-sdt-dev         # <sys/sdt.h>: the USDT test program (trace --usdt)
  openmpi-bin libopenmpi-dev  # mpirun/mpicc: multi-rank tests, `hpcscope bench mpi`
  slurm-wlm                 # slurmctld/slurmd: the single-node job-array test
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "setup: cargo is missing: install Rust (https://rustup.rs)" >&2; exit 3; }
# cargo-fuzz drives the fuzz targets of fuzz/ (scripts/fuzz.sh; it runs on the stable
# toolchain with RUSTC_BOOTSTRAP=1).
if ! command -v cargo-fuzz >/dev/null; then
  echo "setup: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --version 0.13.2 --locked --quiet
fi
