#!/usr/bin/env bash
# Compare `hpcscope bench` with likwid-bench on one core, in the same run.
#
# Prints hpcscope/likwid ratios for:
#   - peakflops_avx512_fma and peakflops_avx_fma (GFLOP/s, f64, one core) against
#     hpcscope's fma-f64-512 and fma-f64-256 peaks;
#   - triad_avx512 (likwid's four-stream triad A = B*C + D) against hpcscope's `triad4`
#     kernel (the same formula, 512-bit, normal stores) at 32 kB, 1 MB, 64 MB and 1 GB;
#   - stream_avx512 (likwid's STREAM triad A = B*c + C) against hpcscope's `triad`.
#
# Byte counting: likwid-bench's "MByte/s" uses its own "Bytes per element" (see
# `likwid-bench -l triad_avx512`: 32 = 24 loaded + 8 stored; `-l stream_avx512`: 24), the
# kernel's own traffic without write-allocate. hpcscope's `gbs` uses the same convention
# (its `gbs_with_write_allocate` is not compared). Sizes are totals over all streams, as in
# likwid's `-w S0:<size>:1`; kB/MB/GB are powers of 1000 in both tools.
#
# The two tools run in alternation, ROUNDS times, so both see the same background load;
# each side's figure is STAT over its runs.
#
# Installs nothing: needs likwid-bench (Debian package `likwid`), jq, and either an
# `hpcscope` binary with the `bench` subcommand or this repository's cargo workspace.
#
# Environment:
#   HPCSCOPE_BENCH  command that runs hpcscope's bench (default: `hpcscope bench` when on
#                   PATH, else `cargo run --release -q -p hpcscope -- bench`)
#   CPU             CPU to pin hpcscope to (default 0; likwid's S0:...:1 uses the first
#                   hardware thread of socket 0)
#   ROUNDS          alternations of the two tools (default 3)
#   LIKWID_SECONDS  minimal runtime of one likwid-bench test, whole seconds (default 1;
#                   likwid-bench 5.2 reads "0.5" as 0 and then times only 10 iterations)
#   STAT            median (default) or max (the best run, as STREAM reports: the fairer
#                   figure on a machine shared with other work)
#   SIZES           sizes to compare (default "32kB 1MB 64MB 1GB")
#   MIN_RATIO       ratio below which a line is marked LOW (default 0.97)
set -euo pipefail

CPU=${CPU:-0}
ROUNDS=${ROUNDS:-3}
LIKWID_SECONDS=${LIKWID_SECONDS:-1}
STAT=${STAT:-median}
SIZES=${SIZES:-"32kB 1MB 64MB 1GB"}
MIN_RATIO=${MIN_RATIO:-0.97}
. "$(dirname "$0")/../../scripts/lib/common.sh"

die() { echo "compare.sh: $1" >&2; exit "${2:-3}"; }

[[ "$STAT" == median || "$STAT" == max ]] || die "STAT must be median or max, not '$STAT'" 2
[[ "$LIKWID_SECONDS" =~ ^[1-9][0-9]*$ ]] || die "LIKWID_SECONDS must be a whole number of seconds >= 1" 2
[[ "$ROUNDS" =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer" 2
command -v likwid-bench >/dev/null 2>&1 ||
    die "likwid-bench not found; install it (Debian/Ubuntu: apt-get install -y likwid) and re-run"
command -v jq >/dev/null 2>&1 || die "jq not found; install it (apt-get install -y jq)"

if [[ -n "${HPCSCOPE_BENCH:-}" ]]; then
    read -r -a hp <<<"$HPCSCOPE_BENCH"
elif command -v hpcscope >/dev/null 2>&1 && hpcscope bench --help >/dev/null 2>&1; then
    hp=(hpcscope bench)
else
    hp=(cargo run --release -q --manifest-path "$root/Cargo.toml" -p hpcscope -- bench)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# STAT of the numbers on stdin.
stat() {
    sort -g | awk -v stat="$STAT" '{ v[NR] = $1 } END {
        if (NR == 0) exit 1
        if (stat == "max") print v[NR]; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# One likwid-bench run: test, size, field (MFlops/s or MByte/s) -> G-units on stdout.
likwid_once() {
    local out
    if ! out=$(likwid-bench -s "$LIKWID_SECONDS" -t "$1" -w "S0:$2:1" 2>&1); then
        echo "likwid-bench -t $1 -w S0:$2:1 failed; it printed:" >&2
        echo "$out" | tail -20 >&2
        exit 3
    fi
    echo "$out" | awk -v f="$3:" '$1 == f { printf "%.6f\n", $2 / 1000 }'
}

bytes_of() { # 32kB -> 32000
    echo "$1" | awk '{ n = $0 + 0; u = $0; sub(/^[0-9.]+/, "", u);
        m = (u == "kB") ? 1e3 : (u == "MB") ? 1e6 : (u == "GB") ? 1e9 : 1; printf "%d\n", n * m }'
}

# Measurements: key, likwid test, likwid size, likwid field, jq filter on hpcscope's report.
# The jq filters use $st (median or max) and pick the kernel entry closest to the size.
peak_jq='[.peaks[] | select(.op == "fma" and .precision == "f64" and .width == $w) | .gflops[$st]] | first'
bw_jq='[.kernels[] | select(.kernel == $k and .width == "512" and (.nt | not))]
       | sort_by(.size_bytes / $s | log | fabs) | first | .gbs[$st]'
keys=()
declare -A L_TEST L_SIZE L_FIELD H_ARGS LABEL
add() { keys+=("$1"); L_TEST[$1]=$2; L_SIZE[$1]=$3; L_FIELD[$1]=$4; H_ARGS[$1]=$5; LABEL[$1]=$6; }
add p512 peakflops_avx512_fma 32kB MFlops/s "peak 512" "peakflops_avx512_fma (GFLOP/s)"
add p256 peakflops_avx_fma 32kB MFlops/s "peak 256" "peakflops_avx_fma (GFLOP/s)"
for s in $SIZES; do
    add "t4_$s" triad_avx512 "$s" MByte/s "bw triad4 $(bytes_of "$s")" "triad_avx512 $s (GB/s, 32 B/el)"
done
for s in $SIZES; do
    add "t3_$s" stream_avx512 "$s" MByte/s "bw triad $(bytes_of "$s")" "stream_avx512 $s (GB/s, 24 B/el)"
done

echo "likwid-bench: $(likwid-bench -h 2>&1 | head -1 | sed 's/^ *//')"
echo "hpcscope:     ${hp[*]}"
sizes_csv=$(echo "$SIZES" | tr ' ' ',')
for r in $(seq "$ROUNDS"); do
    echo "round $r/$ROUNDS: hpcscope..." >&2
    "${hp[@]}" --kernels triad,triad4,fma --sizes "$sizes_csv" --widths 256,512 --precision f64 \
        --cpus "$CPU" --repeat 7 --format json -o "$tmp/h$r.json" 2>"$tmp/h$r.err" ||
        { cat "$tmp/h$r.err" >&2; die "hpcscope bench failed"; }
    for st in median max; do
        for k in "${keys[@]}"; do
            read -r kind a b <<<"${H_ARGS[$k]}"
            if [[ $kind == peak ]]; then
                jq -r --arg w "$a" --arg st "$st" "$peak_jq // empty" "$tmp/h$r.json"
            else
                jq -r --arg k "$a" --argjson s "$b" --arg st "$st" "$bw_jq // empty" "$tmp/h$r.json"
            fi >>"$tmp/h_${st}_$k"
        done
    done
    echo "round $r/$ROUNDS: likwid-bench..." >&2
    for k in "${keys[@]}"; do
        likwid_once "${L_TEST[$k]}" "${L_SIZE[$k]}" "${L_FIELD[$k]}" >>"$tmp/l_$k"
    done
done

printf '\n%-34s %12s %12s %8s\n' "measurement (one core, $STAT)" "likwid" "hpcscope" "ratio"
low=0
for k in "${keys[@]}"; do
    l=$(stat <"$tmp/l_$k")
    # hpcscope: per-round median (or max) of 7 repetitions, then STAT over the rounds.
    h=$(stat <"$tmp/h_${STAT}_$k")
    r=$(awk -v a="$h" -v b="$l" 'BEGIN { printf "%.3f", a / b }')
    mark=""
    if awk -v r="$r" -v m="$MIN_RATIO" 'BEGIN { exit !(r < m) }'; then mark=" LOW"; low=$((low + 1)); fi
    printf '%-34s %12.2f %12.2f %8s%s\n' "${LABEL[$k]}" "$l" "$h" "$r" "$mark"
done
echo
echo "hpcscope: triad_avx512 <-> kernel triad4 (a = b*c + d), stream_avx512 <-> triad (a = b + s*c),"
echo "          512-bit, normal stores; per round the $STAT of 7 repetitions, then the $STAT of $ROUNDS rounds."
echo "likwid:   $STAT of $ROUNDS runs of >= ${LIKWID_SECONDS} s, alternating with hpcscope."
echo "bytes:    both tools count the kernel's own loads and stores (no write-allocate)."
if ((low > 0)); then
    echo "$low ratio(s) below $MIN_RATIO (a busy machine lowers either side: re-run when idle, or STAT=max)"
fi
