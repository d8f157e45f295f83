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

# QEMU 10 with plugins (plugin API v4: exact SVE counts and SVE traffic in the cache
# simulation), built once into hpcscope's cache; scripts/build-qemu.sh says what it does.
# Without it everything runs on the qemu-user above (7.2), with approximate SVE counts.
# HPCSCOPE_SKIP_QEMU_BUILD=1 skips it.
if [ "${HPCSCOPE_SKIP_QEMU_BUILD:-0}" != 1 ]; then
  qemu_started=$(date +%s)
  if bash "$(dirname "$0")/build-qemu.sh"; then
    echo "setup: QEMU 10 step took $(($(date +%s) - qemu_started)) s" >&2
  else
    echo "setup: building QEMU 10 failed (message above): hpcscope keeps using qemu-user 7.2, where predicated SVE instructions count every lane and SVE loads and stores are not simulated; run scripts/build-qemu.sh again to retry" >&2
  fi
fi
