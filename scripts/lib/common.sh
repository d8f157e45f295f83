# Shared by the shell scripts of scripts/ and bench/: where the script and the repository
# are, the tools a script needs, its release builds, and the Debian packages it installs.
# POSIX sh (most bench scripts run under /bin/sh). A script sources it right after its own
# `set -eu` (`set -euo pipefail` in bash), from bench/DIR:
#
#   . "$(dirname "$0")/../../scripts/lib/common.sh"
#
# and from scripts/: `. "$(dirname "$0")/lib/common.sh"`. Sourcing sets `here` (the
# script's directory) and `root` (the repository), both absolute; it changes neither the
# shell's options nor the working directory, and defines these functions:
#
#   need_tools TOOL... -- PACKAGE...   exit 3 naming the Debian packages when a tool is
#                                      missing (every missing tool in one line)
#   cargo_release ARG...               `cargo build --release --quiet ARG...` in the repository
#   build_plugin_v4                    the QEMU plugin for plugin API v4 (QEMU 10), release,
#                                      into target/plugin-v4 (the API features exclude each
#                                      other, so it is a build of its own)
#   apt_install_missing TAG [--update] PACKAGE...
#                                      the PACKAGEs dpkg does not list as installed, installed
#                                      with apt-get (non-interactive, no recommends, as root or
#                                      through sudo), after `apt-get update` with --update;
#                                      prints `TAG: installing ...` first; nothing when all are
#                                      there. Returns apt-get's status and leaves the missing
#                                      ones in `apt_missing` (space-separated) for a message.
#   median_wall RUNS CMD ARG...        prints the median wall time of RUNS runs of CMD, seconds
#                                      (hyperfine when installed, else Python's perf_counter)
#   hpcscope_cache_dir                 prints hpcscope's cache directory, as host::dirs finds
#                                      it: $HPCSCOPE_CACHE_DIR, else $XDG_CACHE_HOME/hpcscope,
#                                      else ~/.cache/hpcscope (QEMU 10 and DynamoRIO go there)

here=$(cd "$(dirname "$0")" && pwd)
root=$here
while [ ! -f "$root/scripts/lib/common.sh" ]; do
  [ "$root" != / ] || { echo "$0: not inside the hpcscope repository" >&2; exit 2; }
  root=$(dirname "$root")
done

need_tools() {
  need_missing=""
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    command -v "$1" >/dev/null 2>&1 || need_missing="$need_missing $1"
    shift
  done
  [ $# -gt 0 ] && shift
  [ -z "$need_missing" ] || {
    echo "missing$need_missing (apt-get install $*)" >&2
    exit 3
  }
}

cargo_release() {
  (cd "$root" && cargo build --release --quiet "$@")
}

build_plugin_v4() {
  cargo_release -p hpcscope-qemu-plugin --no-default-features --features api-v4 \
    --target-dir target/plugin-v4
}

apt_install_missing() {
  apt_tag=$1
  shift
  apt_update=0
  if [ "${1:-}" = --update ]; then
    apt_update=1
    shift
  fi
  apt_missing=""
  for apt_p in "$@"; do
    dpkg-query -W -f='${Status}' "$apt_p" 2>/dev/null | grep -q "install ok installed" \
      || apt_missing="${apt_missing:+$apt_missing }$apt_p"
  done
  [ -n "$apt_missing" ] || return 0
  apt_sudo=""
  if [ "$(id -u)" != 0 ]; then apt_sudo="sudo"; fi
  echo "$apt_tag: installing $apt_missing" >&2
  if [ "$apt_update" = 1 ]; then
    $apt_sudo apt-get update -qq || return
  fi
  # shellcheck disable=SC2086 # the package names are words
  DEBIAN_FRONTEND=noninteractive $apt_sudo apt-get install -y -qq --no-install-recommends \
    $apt_missing >/dev/null
}

hpcscope_cache_dir() {
  if [ -n "${HPCSCOPE_CACHE_DIR:-}" ]; then
    printf '%s\n' "$HPCSCOPE_CACHE_DIR"
  elif [ -n "${XDG_CACHE_HOME:-}" ]; then
    printf '%s\n' "$XDG_CACHE_HOME/hpcscope"
  else
    printf '%s\n' "$HOME/.cache/hpcscope"
  fi
}

median_wall() {
  _runs=$1
  shift
  if command -v hyperfine >/dev/null; then
    _json=$(mktemp)
    hyperfine -N -r "$_runs" --export-json "$_json" "$*" >/dev/null 2>&1
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['results'][0]['median'])" "$_json"
    rm -f "$_json"
  else
    python3 - "$_runs" "$@" <<'PY'
import subprocess, sys, time, statistics
ts = []
for _ in range(int(sys.argv[1])):
    t0 = time.perf_counter()
    subprocess.run(sys.argv[2:], check=True, capture_output=True)
    ts.append(time.perf_counter() - t0)
print(statistics.median(ts))
PY
  fi
}

# dr_client DIR: hpcscope's DynamoRIO client in DIR (scripts/build-dynamorio.sh) for this
# CPU: the build that keeps AVX-512 registers where the CPU has them, the other elsewhere
# (that one would make every program die of SIGILL there).
dr_client() {
  if grep -qw avx512f /proc/cpuinfo; then
    echo "$1/client/libhpcscope_dr_client.so"
  else
    echo "$1/client/libhpcscope_dr_client_noavx512.so"
  fi
}
