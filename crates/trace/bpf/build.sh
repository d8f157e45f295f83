#!/bin/sh
# Regenerates the committed BPF objects from their C sources.
#
# Needs clang (any version with the BPF target; the committed objects were built with the
# version recorded in objects.sha256) and the libbpf headers (Debian: libbpf-dev). The Rust
# crate itself never needs clang: it embeds the committed objects.
#
# Usage: bpf/build.sh [OUTDIR]    (default: the directory of this script)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here}
CLANG=${CLANG:-clang}
mkdir -p "$out"
out=$(cd "$out" && pwd)
# Compile from this directory with relative names, so no path of this machine (nor the
# caller's working directory) ends up in the object: the bytes depend on the sources only.
cd "$here"
for src in *.bpf.c; do
    name=$(basename "$src" .bpf.c)
    "$CLANG" -O2 -g -target bpf -D__TARGET_ARCH_x86 -Wall -Werror \
        -fdebug-prefix-map="$here"=. -I. \
        -c "$src" -o "$out/$name.bpf.o"
    # Drop DWARF (keeps .BTF and .BTF.ext, which carry the CO-RE relocations).
    if command -v llvm-strip >/dev/null 2>&1; then
        llvm-strip -g "$out/$name.bpf.o"
    fi
done
if [ "$out" = "$here" ]; then
    {
        echo "# clang: $("$CLANG" --version | head -n1)"
        sha256sum vmlinux_min.h hpcscope.h ./*.bpf.c ./*.bpf.o
    } > objects.sha256
fi
