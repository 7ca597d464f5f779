#!/usr/bin/env bash
# Configures and builds hookhost into a build folder.
#   scripts/build.sh [BUILD_DIR] [extra cmake arguments...]
# A new folder uses Ninja (HOOKHOST_GENERATOR overrides it); an existing folder keeps the generator
# it was configured with, so a plain `cmake -S . -B build` before this script does not break it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Plugins must not be writable by group or others (hookhost refuses them): build with that umask.
umask 022
build_dir=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  generator=(-G "${HOOKHOST_GENERATOR:-Ninja}")
fi
# ccache (Debian's ccache), when installed: its cache outlives the build folder and the clone, so a
# second clone on the same machine compiles almost nothing. Paths are hashed relative to the
# checkout (base_dir) and -ffile-prefix-map already makes the objects path-free, so two clones in
# different folders share entries. HOOKHOST_CCACHE=0 turns it off.
launcher=()
if [ "${HOOKHOST_CCACHE:-1}" != 0 ] && command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_IGNOREOPTIONS='-ffile-prefix-map=*'
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
fi
cmake -S . -B "$build_dir" "${generator[@]}" "${launcher[@]}" -DHOOKHOST_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
