#!/usr/bin/env bash
# Configures and builds hookhost into a build folder.
#   scripts/build.sh [BUILD_DIR] [extra cmake arguments...]
# A new folder uses the generator plain `cmake -S . -B build` picks (Unix Makefiles), so every run
# of the scripts builds the way the README's plain-CMake path does; HOOKHOST_GENERATOR=Ninja (or
# any CMake generator) overrides it. An existing folder keeps the generator it was configured with.
set -euo pipefail
cd "$(dirname "$0")/.."
# Plugins must not be writable by group or others (hookhost refuses them): build with that umask.
umask 022
build_dir=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
generator=()
if [ ! -f "$build_dir/CMakeCache.txt" ] && [ -n "${HOOKHOST_GENERATOR:-}" ]; then
  generator=(-G "$HOOKHOST_GENERATOR")
fi
source scripts/ccache.sh
cmake -S . -B "$build_dir" "${generator[@]}" "${launcher[@]}" -DHOOKHOST_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
