#!/usr/bin/env bash
# Builds DynamoRIO 11.90 and hpcscope's DynamoRIO client (crates/dr-client) into hpcscope's
# cache directory, where `hpcscope mix`'s native engine and its tests find them:
#   $HPCSCOPE_CACHE_DIR/dynamorio-11.90   (default ~/.cache/hpcscope/dynamorio-11.90)
#     lib64/release/      libdynamorio.so, libdrpreload.so
#     ext/lib64/release/  the extensions (drmgr, drreg, drutil, drx...)
#     client/             libhpcscope_dr_client.so (and _noavx512.so: CPUs without AVX-512)
#     target/             the cargo target directory (DynamoRIO's cmake build inside it)
#
# Why: QEMU has no AVX-512 and runs a program 11 to 34 times slower than the machine;
# DynamoRIO runs it natively with the client's counters inlined in its code cache. The
# Rust crate `dynamorio-sys` vendors DynamoRIO's source and builds it with cmake from its
# build script (minutes: it is the slow part); the client crate is not a member of the
# main workspace, so `cargo build --workspace` never does this.
#
# Needs cmake, a C compiler and libclang (bindgen): installed from apt when missing.
#
# Safe to run again: when the libraries and a client built from the current source are
# there it does nothing; after a change to the client's source it rebuilds the client only
# (cargo keeps DynamoRIO's build). Exit status 0 when built or present, 1 when a step failed
# (the message says which). Options: --jobs N (default: all CPUs), --force (rebuild the
# client), --print-dir (print the directory, and exit).
# HPCSCOPE_SKIP_DYNAMORIO_BUILD=1 makes it do nothing.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

VERSION=11.90
jobs=$(nproc 2>/dev/null || echo 2)
force=0
print_dir=0
while (($#)); do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --force) force=1; shift ;;
    --print-dir) print_dir=1; shift ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "build-dynamorio: unknown option $1 (use --jobs N, --force or --print-dir)" >&2; exit 2 ;;
  esac
done

cache=$(hpcscope_cache_dir)
dest="$cache/dynamorio-$VERSION"
if ((print_dir)); then
  echo "$dest"
  exit 0
fi
if [ "${HPCSCOPE_SKIP_DYNAMORIO_BUILD:-0}" = 1 ]; then
  echo "build-dynamorio: skipped (HPCSCOPE_SKIP_DYNAMORIO_BUILD=1)"
  exit 0
fi

root="$(cd "$(dirname "$0")/.." && pwd)"
crate="$root/crates/dr-client"
# The client's source (and the report format it serializes, the FLOP rule for reductions it
# shares with the QEMU plugin, and the plugin's x86-64 table it reads its integer class
# from): its checksum marks the build.
src_sum=$(cd "$root" && cat crates/dr-client/Cargo.toml crates/dr-client/Cargo.lock \
  crates/dr-client/src/*.rs crates/plugin-format/src/*.rs crates/x86-lanes/Cargo.toml \
  crates/x86-lanes/src/*.rs crates/qemu-plugin/data/x86_64.toml \
  | sha256sum | cut -c1-16)

present() {
  [ -f "$dest/lib64/release/libdynamorio.so" ] && [ -f "$dest/lib64/release/libdrpreload.so" ] \
    && [ -f "$dest/client/libhpcscope_dr_client.so" ] \
    && [ -f "$dest/client/libhpcscope_dr_client_noavx512.so" ] \
    && grep -qx "client: $src_sum" "$dest/README" 2>/dev/null
}
if ((force == 0)) && present; then
  echo "build-dynamorio: DynamoRIO $VERSION and the client are already in $dest"
  exit 0
fi

fail() { echo "build-dynamorio: $*" >&2; exit 1; }
started=$(date +%s)

deps=(cmake gcc g++ make libclang-dev)
missing=()
for p in "${deps[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  echo "build-dynamorio: installing ${missing[*]}" >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || fail "cannot install ${missing[*]} (apt-get install failed); install them and run again"
fi
command -v cargo >/dev/null || fail "cargo is not on the PATH"

mkdir -p "$dest"
log="$dest/build.log"
echo "build-dynamorio: building DynamoRIO $VERSION and the client (log: $log)" >&2
if ! (cd "$crate" && CARGO_INCREMENTAL=0 CMAKE_BUILD_PARALLEL_LEVEL="$jobs" \
      cargo build --release --locked -j "$jobs" --target-dir "$dest/target") >"$log" 2>&1; then
  tail -20 "$log" >&2
  fail "cargo build of crates/dr-client failed (log: $log)"
fi

# DynamoRIO's cmake build, inside the dynamorio-sys build script's output directory (the
# newest one, should an older build of another configuration be there too).
build=$(ls -td "$dest"/target/release/build/dynamorio-sys-*/out/build 2>/dev/null | while read -r d; do
  [ -f "$d/lib64/release/libdynamorio.so" ] && { echo "$d"; break; }
done)
[ -n "$build" ] || fail "DynamoRIO's libraries are not in the cargo build's output"
mkdir -p "$dest/lib64/release" "$dest/ext/lib64/release" "$dest/client"
cp -f "$build"/lib64/release/libdynamorio.so "$build"/lib64/release/libdrpreload.so "$dest/lib64/release/"
cp -f "$build"/ext/lib64/release/*.so "$dest/ext/lib64/release/"
cp -f "$dest/target/release/libhpcscope_dr_client.so" "$dest/client/"
# The same client for CPUs without AVX-512 state: DynamoRIO takes the client's
# _DR_CLIENT_AVX512_CODE_IN_USE_ as it is and would save ZMM registers there (SIGILL). Only
# the client crate is compiled again (seconds).
if ! (cd "$crate" && CARGO_INCREMENTAL=0 cargo build --release --locked -j "$jobs" \
      --features no-avx512-state --target-dir "$dest/target") >>"$log" 2>&1; then
  tail -20 "$log" >&2
  fail "cargo build of crates/dr-client (no-avx512-state) failed (log: $log)"
fi
cp -f "$dest/target/release/libhpcscope_dr_client.so" "$dest/client/libhpcscope_dr_client_noavx512.so"
cat >"$dest/README" <<EOF
DynamoRIO $VERSION (from the dynamorio-sys crate's vendored source) and hpcscope's client,
built by scripts/build-dynamorio.sh in $(($(date +%s) - started)) s.
client: $src_sum
EOF
echo "build-dynamorio: DynamoRIO $VERSION and the client are in $dest ($(($(date +%s) - started)) s)"
