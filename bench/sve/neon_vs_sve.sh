#!/usr/bin/env bash
# The SVE build's own cache simulation (QEMU 10, plugin API v4: SVE loads and stores reach
# the memory stream, one access per active element) against the NEON build of the same
# source (the reference: what `--cache-binary` substitutes under QEMU 7.2), on the bundled
# triad and stencil (streaming), spmv (gathers of x[col[k]]) and gather (a random-permutation
# gather, y[i] += a * x[p[i]]) at several SVE lengths, for one machine's caches (default
# a64fx).
#
# Per level, two quantities side by side with their ratio (SVE / NEON):
#   share    the level's part of the bytes served, as the profiles' bytes_per_level split
#            them (the simulated split of the accesses, applied to the counted bytes; as
#            shares, since the two builds' code need not move the same bytes);
#   traffic  the lines moved between a cache level and the one below, (fills + writebacks)
#            x line size, from mix-report.json.
#   accesses the line accesses reaching L1 (the program's accesses, a straddling one counted
#            per line): the plugin merges the per-element reports of a contiguous SVE load or
#            store into one access, so the SVE build's count falls as the vector grows.
# Verdict per kernel and length: "agree" when every judged level's ratio is within 2 %
# (levels serving under 1 % of the bytes in both builds are shown, not judged); the traffic
# verdict also says whether the difference is above the noise floor (the NEON build's own
# difference between its two runs, the largest over the levels).
#
# The runs are made with address-space randomization off (setarch -R), so that each
# simulation is repeatable; the NEON build is run once more with it on, and the difference
# between its two runs (the data's placement alone) is printed as the noise floor.
#
# Needs aarch64-linux-gnu-gcc and QEMU 10 from scripts/build-qemu.sh; exits 0 with a
# "skipping:" line when either is missing. Usage: bench/sve/neon_vs_sve.sh [MACHINE]
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib/common.sh"
cd "$root"
machine=${1:-a64fx}
lengths="128 256 512 2048"
cache=${HPCSCOPE_CACHE_DIR:-${XDG_CACHE_HOME:+$XDG_CACHE_HOME/hpcscope}}
cache=${cache:-$HOME/.cache/hpcscope}
q10="$cache/qemu-10.0.2/bin/qemu-aarch64"

command -v setarch >/dev/null || { echo "skipping: setarch (util-linux) not found"; exit 0; }
command -v aarch64-linux-gnu-gcc >/dev/null || { echo "skipping: aarch64-linux-gnu-gcc not found"; exit 0; }
[ -x "$q10" ] || { echo "skipping: QEMU 10 is not built ($q10; scripts/build-qemu.sh builds it)"; exit 0; }
cargo_release -p hpcscope
build_plugin_v4
hpcscope=target/release/hpcscope
export HPCSCOPE_QEMU="$q10"
HPCSCOPE_QEMU_PLUGIN="$(pwd)/target/plugin-v4/release/libhpcscope_qemu_plugin.so"
export HPCSCOPE_QEMU_PLUGIN
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# kernel, arguments (sizes past a64fx's 8 MiB L2, so that memory serves a share).
runs=("triad 1000000 3" "stencil 1000 3" "spmv 250000 2" "gather 1000000 2")
for r in "${runs[@]}"; do
  read -r kernel n reps <<<"$r"
  for isa in neon:armv8-a sve:armv8.2-a+sve; do
    aarch64-linux-gnu-gcc -O3 -std=c11 -D_POSIX_C_SOURCE=200809L -fno-omit-frame-pointer \
      -march="${isa#*:}" -static -o "$tmp/$kernel-${isa%%:*}" "workloads/src/$kernel.c" -lm
  done
  setarch -R "$hpcscope" mix -m "$machine" --function "kernel_$kernel" \
    -o "$tmp/$kernel-neon.out" -- "$tmp/$kernel-neon" "$n" "$reps" >/dev/null
  "$hpcscope" mix -m "$machine" --function "kernel_$kernel" \
    -o "$tmp/$kernel-neon-aslr.out" -- "$tmp/$kernel-neon" "$n" "$reps" >/dev/null
  setarch -R "$hpcscope" mix -m "$machine" --function "kernel_$kernel" --sve-bits "${lengths// /,}" \
    -o "$tmp/$kernel-sve.out" -- "$tmp/$kernel-sve" "$n" "$reps" >/dev/null
done

python3 - "$tmp" "${runs[@]}" <<'PY'
import json, os, sys
tmp, runs = sys.argv[1], sys.argv[2:]

def load(d):
    rep = json.load(open(os.path.join(d, "mix-report.json")))
    out = {}
    for v in rep["variants"]:
        c = v["caches"][0]
        line = c["line_bytes"]
        th = v["profiles"][0]["regions"][0]["threads"][0]
        served = {l["level"]: l["bytes"] for l in th["memory"]["bytes_per_level"]}
        traffic = {l["name"]: (l["misses"] + l["writebacks"]) * line for l in c["levels"]}
        t = v["counts"]["totals"]
        notes = " ".join(rep.get("notes", []) + v["profiles"][0].get("notes", []))
        out[v["sve_bits"]] = dict(served=served, traffic=traffic, accesses=c["levels"][0]["accesses"],
                                  counted=t["bytes_loaded"] + t["bytes_stored"], notes=notes)
    return out

def ratio(a, b):
    return None if a == 0 else b / a

def fmt(x):
    return "-" if x is None else f"{x:.4f}"

def shares(d):
    t = sum(d.values())
    return {k: (v / t if t > 0 else 0.0) for k, v in d.items()}

print(f"{'kernel':<8} {'sve':>5} {'level':<5} | {'share_neon':>10} {'share_sve':>10} {'ratio':>7} | "
      f"{'traffic_neon':>13} {'traffic_sve':>13} {'ratio':>7}")
summary = []
noise = {}
for r in runs:
    kernel = r.split()[0]
    neon = load(os.path.join(tmp, f"{kernel}-neon.out"))[None]
    sve = load(os.path.join(tmp, f"{kernel}-sve.out"))
    sve["NEON*"] = load(os.path.join(tmp, f"{kernel}-neon-aslr.out"))[None]
    if "API v4" not in neon["notes"] or any("active_lanes" not in v["notes"] for b, v in sve.items() if b != "NEON*"):
        sys.exit(f"{kernel}: not counted under QEMU 10 with the API v4 plugin: {neon['notes']}")
    sn = shares(neon["served"])
    for bits, s in sorted(sve.items(), key=lambda kv: (isinstance(kv[0], str), kv[0])):
        ss = shares(s["served"])
        worst_served = worst_traffic = 0.0
        for level in neon["served"]:
            rs = ratio(sn[level], ss[level])
            line = f"{kernel:<8} {bits:>5} {level:<5} | {100 * sn[level]:>9.4f}% {100 * ss[level]:>9.4f}% {fmt(rs):>7} | "
            # Levels that serve under 1 % of the bytes in both builds are shown, not judged.
            if max(sn[level], ss[level]) >= 0.01:
                worst_served = max(worst_served, 1.0 if rs is None else abs(rs - 1))
            if level in neon["traffic"]:
                rt = ratio(neon["traffic"][level], s["traffic"][level])
                if rt is not None:
                    worst_traffic = max(worst_traffic, abs(rt - 1))
                elif s["traffic"][level] > 0:
                    worst_traffic = max(worst_traffic, 1.0)
                line += f"{neon['traffic'][level]:>13} {s['traffic'][level]:>13} {fmt(rt):>7}"
            else:
                line += f"{'':>13} {'':>13} {'':>7}"
            print(line)
        summary.append((kernel, bits, neon["counted"], s["counted"], neon["accesses"], s["accesses"],
                        worst_served, worst_traffic))
        if bits == "NEON*":
            noise[kernel] = worst_traffic
print()
print(f"{'kernel':<8} {'sve':>5} | {'bytes_neon':>11} {'bytes_sve':>11} | {'L1 acc neon':>11} {'L1 acc sve':>11} | "
      f"{'shares: max |ratio-1|':>22} | {'traffic: max |ratio-1|':>23} | verdict")
for kernel, bits, cn, cs, an, asv, ws, wt in summary:
    v = lambda w: "agree" if w <= 0.02 else "differ"
    above = "" if bits == "NEON*" else (", above the noise floor" if wt > noise[kernel] else ", within the noise floor")
    print(f"{kernel:<8} {bits:>5} | {cn:>11} {cs:>11} | {an:>11} {asv:>11} | {100 * ws:>20.2f} % | "
          f"{100 * wt:>21.4f} % | shares {v(ws)}, traffic {v(wt)}{above}")
print("NEON*: the NEON build again, with address-space randomization on: the noise floor. "
      "share: each level's part of the bytes served, as the profiles' bytes_per_level split them "
      "(what a projection uses; levels under 1 % in both builds are not judged); traffic: lines "
      "moved between a level and the one below, (fills + writebacks) x line size; L1 acc: line "
      "accesses reaching L1. agree: every judged level within 2 %; noise floor: NEON*'s traffic "
      "difference.")
PY
