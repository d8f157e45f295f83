#!/usr/bin/env bash
# Validate hpcscope-cachesim against valgrind's cachegrind.
#
# For each kernel of kernels.c and each LL geometry, runs the kernel once under
# cachegrind (D1/LL miss counts) and once under lackey (the memory trace), replays the
# trace through hpcscope-cachesim with the same geometry (crates/cachesim/examples/
# lackey_replay.rs) and prints both miss counts and their relative difference.
#
# Usage: bench/cachesim/vs_cachegrind.sh [N_TRIAD [N_STENCIL [REPS]]]
# CACHESIM_REPLAY=path/to/lackey_replay skips building the replay example.
# Needs: valgrind, gcc, cargo. Exit 3 when valgrind or gcc is missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
n_triad="${1:-200000}"
n_stencil="${2:-300000}"
reps="${3:-3}"

for tool in valgrind gcc cargo; do
    if ! command -v "$tool" >/dev/null; then
        echo "vs_cachegrind: '$tool' not found; install it (e.g. apt-get install -y valgrind gcc)" >&2
        exit 3
    fi
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

gcc -O2 -o "$work/kernels" "$here/kernels.c"
if [[ -n "${CACHESIM_REPLAY:-}" ]]; then
    replay="$CACHESIM_REPLAY" # a prebuilt lackey_replay
else
    (cd "$root" && cargo build --release -q -p hpcscope-cachesim --example lackey_replay)
    replay="${CARGO_TARGET_DIR:-$root/target}/release/examples/lackey_replay"
fi

# D1 and LL geometries (SIZE,ASSOC,LINE): a common core, an LL larger than the working
# set, and small low-associativity caches where conflicts and replacement decide.
configs=("32768,8,64 1048576,16,64" "32768,8,64 8388608,16,64" "8192,2,64 262144,4,64")
echo "valgrind $(valgrind --version | sed 's/^valgrind-//'), gcc $(gcc -dumpversion), kernels built with -O2"
for kernel in "triad $n_triad $reps" "stencil $n_stencil $reps"; do
    for config in "${configs[@]}"; do
        read -r d1 ll <<<"$config"
        echo
        echo "== kernel: $kernel   D1=$d1   LL=$ll"
        # shellcheck disable=SC2086 # $kernel holds the kernel's arguments
        valgrind --tool=cachegrind --cache-sim=yes --I1=32768,8,64 --D1="$d1" --LL="$ll" \
            --cachegrind-out-file="$work/cg.out" "$work/kernels" $kernel >/dev/null 2>&1
        # Lackey writes its trace to fd 3, which goes down the pipe; the kernel's own
        # output is dropped.
        # shellcheck disable=SC2086
        valgrind --tool=lackey --trace-mem=yes --log-fd=3 "$work/kernels" $kernel \
            3>&1 >/dev/null 2>/dev/null |
            "$replay" --D1 "$d1" --LL "$ll" --cachegrind "$work/cg.out"
    done
done
