#!/usr/bin/env bash
# Installs what hpcscope's build, tests and demo need on a Debian machine (run as root or
# with sudo): the emulator and cross compiler for `hpcscope mix`, and the reference tools
# the tests and benchmarks compare against. Safe to run again.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

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
  golang-go                 # go tool pprof: reads the pprof files `profile export` writes
  python3-venv              # the virtual environment of the Python peer tools below
  python3-dev               # Python.h: Kerncraft's pycachesim has no wheel and is compiled
  libopenblas-dev           # OpenBLAS dgemm: reference for bench's DGEMM peak (bench/dgemm.sh)
  cmake libclang-dev        # build DynamoRIO and its Rust bindings (scripts/build-dynamorio.sh)
)
# npm fetches speedscope's package (its file-format schema); Debian's npm when no Node.js
# with npm is on the PATH already.
command -v npm >/dev/null || packages+=(npm)

apt_install_missing setup --update "${packages[@]}"
command -v cargo >/dev/null || { echo "setup: cargo is missing: install Rust (https://rustup.rs)" >&2; exit 3; }
# cargo-fuzz drives the fuzz targets of fuzz/ (scripts/fuzz.sh; it runs on the stable
# toolchain with RUSTC_BOOTSTRAP=1).
if ! command -v cargo-fuzz >/dev/null; then
  echo "setup: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --version 0.13.2 --locked --quiet
fi

# The peer tools of the format tests, each reading what hpcscope writes or writing what it
# reads: one Python virtual environment (jsonschema: `hpcscope schema`; Apache Otava:
# `history export --format otava`; Kerncraft: `machine import/export`; Hatchet: `profile
# export --to hatchet`), Kerncraft's source distribution for the machine files it ships, and
# speedscope's npm package for its file-format schema. All under target/, reused by the
# tests; a marker file skips the work when the pinned versions are already there.
peer_py=(jsonschema==4.26.0 apache-otava==0.8.0 kerncraft==0.8.18 llnl-hatchet==2026.2.0)
peer_npm=(speedscope@1.25.0)
target="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$target"
marker="$target/peer-tools.installed"
want="${peer_py[*]} ${peer_npm[*]}"
if [ "$(cat "$marker" 2>/dev/null)" != "$want" ]; then
  py=python3
  [ -x /usr/bin/python3 ] && py=/usr/bin/python3
  start=$SECONDS
  echo "setup: installing the peer tools of the format tests into $target (a few minutes, once)" >&2
  "$py" -m venv "$target/peer-venv"
  "$target/peer-venv/bin/pip" install -q --disable-pip-version-check "${peer_py[@]}"
  rm -rf "$target/peer-src" && mkdir -p "$target/peer-src"
  "$target/peer-venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
    -d "$target/peer-src" kerncraft==0.8.18
  tar -xzf "$target/peer-src"/kerncraft-0.8.18.tar.gz -C "$target/peer-src"
  npm install -s --no-audit --no-fund --prefix "$target/peer-npm" "${peer_npm[@]}" >/dev/null
  echo "$want" > "$marker"
  echo "setup: peer tools installed in $((SECONDS - start)) s" >&2
fi

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

# DynamoRIO 11.90 and hpcscope's client for it (the native engine of `hpcscope mix`: the
# program runs natively, AVX-512 included), built once into hpcscope's cache;
# scripts/build-dynamorio.sh says what it does. HPCSCOPE_SKIP_DYNAMORIO_BUILD=1 skips it.
if [ "${HPCSCOPE_SKIP_DYNAMORIO_BUILD:-0}" != 1 ]; then
  dr_started=$(date +%s)
  if bash "$(dirname "$0")/build-dynamorio.sh"; then
    echo "setup: DynamoRIO step took $(($(date +%s) - dr_started)) s" >&2
  else
    echo "setup: building DynamoRIO failed (message above): hpcscope mix keeps its QEMU engine; run scripts/build-dynamorio.sh again to retry" >&2
  fi
fi
