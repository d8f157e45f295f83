# Shared set-up of the bench/mix scripts (compare.sh, breakdown.sh, gate.sh); sourced after
# scripts/lib/common.sh (which sets `root` and `here`, and defines need_tools, cargo_release
# and build_plugin_v4).
#
#   mix_binaries                     hs and plugin: HPCSCOPE and PLUGIN, or a release build
#   mix_build OUT W...               the workloads built into OUT (-O3, x86-64 baseline;
#                                    MIX_CFLAGS_EXTRA adds flags; smallfn is C++; eigen is
#                                    eigen_solve.cpp on Eigen 3.4.0's dense solvers, Eigen
#                                    fetched from Debian's eigen3 source package into
#                                    OUT/eigen-src, kept there between runs, never committed)
#   args_of W                        the workload's arguments (each runs 0.03 to 0.2 s native)
#   mix_qemu10                       q10 and plugin4: QEMU 10 with plugins (scripts/build-qemu.sh)
#                                    and the API v4 plugin (QEMU10, PLUGIN_V4 override), or
#                                    both empty when either is missing

mix_binaries() {
  if [ -z "${HPCSCOPE:-}" ] || [ -z "${PLUGIN:-}" ]; then
    cargo_release -p hpcscope -p hpcscope-qemu-plugin
  fi
  hs=${HPCSCOPE:-"$root/target/release/hpcscope"}
  plugin=${PLUGIN:-"$root/target/release/libhpcscope_qemu_plugin.so"}
  [ -x "$hs" ] || { echo "HPCSCOPE=$hs is not an executable" >&2; exit 2; }
  [ -f "$plugin" ] || { echo "PLUGIN=$plugin is not a file" >&2; exit 2; }
}

mix_build() {
  out_dir=$1
  shift
  cflags="-O3 -march=x86-64 -std=c11 -D_POSIX_C_SOURCE=200809L ${MIX_CFLAGS_EXTRA:-}"
  for w in "$@"; do
    case $w in
      smallfn) g++ -O2 -march=x86-64 -std=c++17 ${MIX_CFLAGS_EXTRA:-} -o "$out_dir/$w" "$here/smallfn.cpp" ;;
      eigen)
        eigen_headers "$out_dir/eigen-src"
        g++ -O3 -march=x86-64 -DNDEBUG ${MIX_CFLAGS_EXTRA:-} -I "$out_dir/eigen-src/eigen" \
          -o "$out_dir/$w" "$here/eigen_solve.cpp"
        ;;
      *)
        [ -f "$root/workloads/src/$w.c" ] || { echo "no workload $w (workloads/src/$w.c)" >&2; exit 2; }
        gcc $cflags -o "$out_dir/$w" "$root/workloads/src/$w.c" -lm
        ;;
    esac
  done
}

# eigen_headers DIR: Eigen 3.4.0's headers in DIR/eigen, from Debian's eigen3 source
# package (apt checks the tarball against the signed index; scripts/lib/apt-source.sh).
eigen_headers() {
  [ -f "$1/eigen/Eigen/Dense" ] && return 0
  mkdir -p "$1"
  bash -c 'fail() { echo "eigen: $*" >&2; exit 1; }
    . "$1/scripts/lib/apt-source.sh"
    apt_source_fetch "$2" "$APT_SOURCE_CODENAME" eigen3 eigen3' _ "$root" "$1"
  tarball=$(ls "$1"/eigen3_*.orig.tar.* 2>/dev/null | head -n1)
  [ -n "$tarball" ] || { echo "eigen: no eigen3 source tarball arrived (see $1/apt.log)" >&2; exit 1; }
  rm -rf "$1/eigen" "$1/unpack"
  mkdir -p "$1/unpack"
  tar xf "$tarball" -C "$1/unpack"
  mv "$1"/unpack/eigen-* "$1/eigen"
  rm -rf "$1/unpack"
}

args_of() {
  case $1 in
    cg) echo "400000 10" ;;
    edge) echo "500000 10" ;;
    montecarlo) echo "200000 1" ;;
    smallfn) echo "50000 20" ;;
    eigen) echo "800 4" ;;
    triad_stencil) echo "1000 10" ;;
    *) echo "" ;;
  esac
}

mix_qemu10() {
  bin10=$(bash "$root/scripts/build-qemu.sh" --print-bin)
  q10=${QEMU10:-"$bin10/qemu-x86_64"}
  plugin4=${PLUGIN_V4:-"$root/target/plugin-v4/release/libhpcscope_qemu_plugin.so"}
  if [ -x "$q10" ] && [ -z "${PLUGIN_V4:-}" ]; then
    build_plugin_v4 || plugin4=""
  fi
  if [ ! -x "$q10" ] || [ ! -f "$plugin4" ]; then
    q10=""
    plugin4=""
  fi
}
