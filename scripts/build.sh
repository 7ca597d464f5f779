#!/usr/bin/env bash
# Configures and builds hookhost into a build folder.
#   scripts/build.sh [BUILD_DIR] [extra cmake arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}
shift || true
jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B "$build_dir" -G Ninja -DHOOKHOST_WERROR=ON "$@" >/dev/null
cmake --build "$build_dir" -j "$jobs"
