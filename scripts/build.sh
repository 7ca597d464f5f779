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
cmake -S . -B "$build_dir" "${generator[@]}" -DHOOKHOST_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
