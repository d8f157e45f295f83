#!/bin/sh
# Every legacy and VEX x86-64 instruction form with a memory operand that QEMU 7.2 runs with
# -cpu max (about 1,500 forms: SSE to SSE4.2, AVX, AVX2, FMA, F16C, BMI, x87, MMX), each
# executed three times under qemu-x86_64 with the plugin's audit (audit=): for every
# instruction, the bytes its memory operand gives (the counts) against the bytes passed to
# the memory stream (the cache simulator's input). Prints the number of forms, how their
# bytes are known (exact: from the operand, QEMU reports the same; clipped: QEMU reads more,
# cut to the operand; dynamic: only QEMU knows, rep strings, gathers, masked stores, xsave)
# and every mismatch; exits 1 if there is one.
#
#   bench/mix/x86_forms.sh [OUTDIR]
#
# Needs gcc, qemu-user, python3 and cargo.
set -eu
. "$(dirname "$0")/../../scripts/lib/common.sh"
out=${1:-"$root/target/bench-mix"}/x86-forms
mkdir -p "$out"
need_tools gcc qemu-x86_64 python3 -- gcc qemu-user python3
cargo_release -p hpcscope-qemu-plugin
(cd "$root" && cargo run --release --quiet -p hpcscope-qemu-plugin --example x86_forms -- "$out")
plugin="$root/target/release/libhpcscope_qemu_plugin.so"
gcc -O1 -mavx2 -o "$out/harness" "$here/x86_forms_harness.c"
qemu-x86_64 -cpu max -plugin "$plugin,out=$out/counts.json,audit=$out/audit.json" \
  "$out/harness" "$out/forms.bin" 3
python3 - "$out/audit.json" <<'PY'
import json, sys
from collections import Counter
rows = json.load(open(sys.argv[1]))["instructions"]
bad = [r for r in rows if r["kind"] in ("exact", "clipped")
       and (r["streamed_loaded"] != r["executions"] * r["load_bytes"]
            or r["streamed_stored"] != r["executions"] * r["store_bytes"])]
print(f"{len(rows)} instructions executed (the stubs and the harness), by kind: {dict(Counter(r['kind'] for r in rows))}")
clipped = sorted({r["disas"].split()[0] for r in rows if r["kind"] == "clipped"})
dynamic = sorted({r["disas"].split()[0] for r in rows if r["kind"] == "dynamic"})
print(f"clipped (QEMU reads beyond the operand): {', '.join(clipped)}")
print(f"dynamic (bytes from QEMU's reports): {', '.join(dynamic)}")
for r in bad:
    print(f"MISMATCH {r['disas']}: {r['executions']} executions x ({r['load_bytes']}, {r['store_bytes']}) bytes, stream ({r['streamed_loaded']}, {r['streamed_stored']})")
print(f"{len(bad)} mismatches")
sys.exit(1 if bad else 0)
PY
