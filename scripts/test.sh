#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole suite, then builds and runs
# it again under AddressSanitizer + UndefinedBehaviorSanitizer.
#   scripts/test.sh            both runs
#   HOOKHOST_SKIP_SANITIZE=1 scripts/test.sh   only the normal run (for a quick local check)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

scripts/install-deps.sh

echo "== normal build =="
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo
ctest --test-dir build --output-on-failure -j "$jobs"

if [ "${HOOKHOST_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build =="
  scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DHOOKHOST_SANITIZE=ON \
    -DHOOKHOST_BUILD_BENCH=OFF
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs"
fi
echo "hookhost: all tests passed"
