#!/usr/bin/env bash
# Builds QEMU 10.0.2's user-mode emulators (qemu-aarch64, qemu-x86_64) with TCG plugins into
# hpcscope's cache directory, where `hpcscope mix` and the plugin's tests find them:
#   $HPCSCOPE_CACHE_DIR/qemu-10.0.2/bin   (default ~/.cache/hpcscope/qemu-10.0.2/bin)
#
# Why: Debian 12's qemu-user 7.2 (plugin API v1) does not report SVE loads and stores to
# plugins and gives them no register access, so SVE counts are approximate there (every lane
# of a predicated instruction counted, SVE traffic missing from the cache simulation).
# QEMU 10 (plugin API v4) reports each active element's access and lets the plugin read the
# predicate registers. Debian's own qemu-user of that version (bookworm-backports) is built
# without plugin support, so this script builds it from the source Debian ships.
#
# hpcscope's patches (scripts/qemu-patches/*.patch, each says what it does) are applied to
# the source: one adds a plugin API function that writes each memory access's record from
# QEMU's translated code, with no call into the plugin per access (the plugin's
# `meminline=`). The installed build is marked with the patches' checksum, and a build
# with other patches (or none) is built again.
#
# Steps: build dependencies from apt; the upstream tarball through `apt-get source
# --download-only` with a private source list for the backports suite (the mirror is the
# one this machine's apt configuration already uses; apt checks the tarball against the
# signed index); meson and pycotap in a virtual environment (the +ds tarball has no bundled
# wheels); the patches; configure, `ninja qemu-aarch64 qemu-x86_64`, install the two
# binaries.
#
# Safe to run again: it does nothing when the binaries are there. Exit status 0 when built
# or present, 1 when a step failed (the message says which); the machine's qemu-user is
# never touched. Options: --jobs N (default: all CPUs), --force (rebuild), --print-bin (print
# the directory the emulators go to, and exit).
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

VERSION=10.0.2
jobs=$(nproc 2>/dev/null || echo 2)
force=0
print_bin=0
while (($#)); do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --force) force=1; shift ;;
    --print-bin) print_bin=1; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "build-qemu: unknown option $1 (use --jobs N, --force or --print-bin)" >&2; exit 2 ;;
  esac
done

cache=$(hpcscope_cache_dir)
dest="$cache/qemu-$VERSION"
patch_dir="$(cd "$(dirname "$0")" && pwd)/qemu-patches"
patches=("$patch_dir"/*.patch)
[ -e "${patches[0]}" ] || patches=()
# The patches' checksum, recorded in the installed build's README.
patch_sum=$( ((${#patches[@]})) && cat "${patches[@]}" | sha256sum | cut -c1-16 || echo none)
if ((print_bin)); then
  echo "$dest/bin"
  exit 0
fi

present() {
  local v
  for arch in aarch64 x86_64; do
    v=$("$dest/bin/qemu-$arch" --version 2>/dev/null || true)
    grep -q "version $VERSION" <<<"$v" || return 1
  done
  grep -qx "patches: $patch_sum" "$dest/README" 2>/dev/null
}
if ((force == 0)) && present; then
  echo "build-qemu: QEMU $VERSION with plugins is already in $dest/bin"
  exit 0
fi

fail() { echo "build-qemu: $*" >&2; exit 1; }
started=$(date +%s)

# 1. Build dependencies.
deps=(ninja-build libglib2.0-dev pkg-config python3-venv flex bison xz-utils gcc make patch)
apt_install_missing build-qemu "${deps[@]}" \
  || fail "cannot install $apt_missing (apt-get install failed); install them and run again"

work=$(mktemp -d "${TMPDIR:-/tmp}/hpcscope-qemu-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

# 2. The source, from the Debian mirror this machine's apt configuration uses.
. "$(dirname "$0")/lib/apt-source.sh"
codename=$APT_SOURCE_CODENAME
apt_source_fetch "$work" "$codename-backports" "qemu/$codename-backports" build-qemu
tarball=$(ls "$work"/qemu_"$VERSION"+ds.orig.tar.* 2>/dev/null | head -1)
if [ -z "$tarball" ]; then
  tail -5 "$work/apt.log" >&2
  got=$(grep -o "qemu_[^ ]*orig.tar[^ ]*" "$work/apt.log" | head -1)
  fail "the qemu_$VERSION+ds.orig tarball was not fetched${got:+ (the suite offers $got)}"
fi
tar -C "$work" -xf "$tarball"
src="$work/qemu-$VERSION"
[ -x "$src/configure" ] || fail "the tarball has no qemu-$VERSION/configure"

# QEMU 10.0.2's linux-user/meson.build adds plugin-api.c under CONFIG_TCG_PLUGINS, a symbol
# its meson.build never sets: qemu_plugin_path_to_binary and qemu_plugin_start_code (plugin
# API functions for user mode) are then missing from the binaries. Build the file whenever
# plugins are enabled; it also needs loader.h (struct linux_binprm), which it does not
# include.
old="linux_user_ss.add(when: 'CONFIG_TCG_PLUGINS', if_true: files('plugin-api.c'))"
if grep -qF "$old" "$src/linux-user/meson.build"; then
  python3 - "$src/linux-user" "$old" <<'EOF'
import sys
d, old = sys.argv[1], sys.argv[2]
text = open(d + "/meson.build").read()
new = "if get_option('plugins')\n  linux_user_ss.add(files('plugin-api.c'))\nendif"
open(d + "/meson.build", "w").write(text.replace(old, new))
inc = '#include "common-user/plugin-api.c.inc"'
text = open(d + "/plugin-api.c").read()
if '#include "loader.h"' not in text:
    open(d + "/plugin-api.c", "w").write(text.replace(inc, '#include "loader.h"\n' + inc))
EOF
fi

for p in "${patches[@]}"; do
  patch -p1 -d "$src" --forward --quiet <"$p" >"$work/patch.log" 2>&1 \
    || { tail -5 "$work/patch.log" >&2; fail "$(basename "$p") does not apply to QEMU $VERSION"; }
done

# 3. Python build tools.
python3 -m venv "$work/venv" || fail "python3 -m venv failed (apt-get install python3-venv)"
"$work/venv/bin/pip" install -q 'meson>=1.5' 'pycotap==1.3.1' >"$work/pip.log" 2>&1 \
  || { tail -5 "$work/pip.log" >&2; fail "pip could not install meson>=1.5 and pycotap 1.3.1"; }

# 4. Configure and build.
mkdir -p "$src/build"
(cd "$src/build" && ../configure --python="$work/venv/bin/python3" \
    --target-list=aarch64-linux-user,x86_64-linux-user --enable-plugins \
    --disable-system --disable-tools --disable-docs --disable-werror \
    --disable-install-blobs >"$work/configure.log" 2>&1) \
  || { tail -15 "$work/configure.log" >&2; fail "QEMU's configure failed (log above)"; }
echo "build-qemu: building qemu-aarch64 and qemu-x86_64 with $jobs jobs" >&2
ninja -C "$src/build" -j "$jobs" qemu-aarch64 qemu-x86_64 >"$work/ninja.log" 2>&1 \
  || { tail -15 "$work/ninja.log" >&2; fail "ninja failed (log above)"; }
syms=$(nm -D "$src/build/qemu-aarch64" 2>/dev/null || true)
for sym in qemu_plugin_path_to_binary qemu_plugin_start_code qemu_plugin_read_register \
  qemu_plugin_register_vcpu_mem_record_per_vcpu; do
  grep -q " T $sym\$" <<<"$syms" || fail "the built qemu-aarch64 does not export $sym"
done

# 5. Install (atomically: a half-copied directory is never taken for a build).
mkdir -p "$cache"
stage="$cache/.qemu-$VERSION.partial"
rm -rf "$stage"
mkdir -p "$stage/bin"
install -m 755 "$src/build/qemu-aarch64" "$src/build/qemu-x86_64" "$stage/bin/"
printf 'QEMU %s user mode with TCG plugins (plugin API v4), built by hpcscope scripts/build-qemu.sh\nsource: %s\npatches: %s\n' \
  "$VERSION" "$(basename "$tarball")" "$patch_sum" >"$stage/README"
rm -rf "$dest"
mv "$stage" "$dest"
present || fail "the installed binaries in $dest/bin do not run"
echo "build-qemu: QEMU $VERSION with plugins installed in $dest/bin ($(($(date +%s) - started)) s)"
