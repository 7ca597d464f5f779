#!/usr/bin/env bash
# The test command: installs what is missing, builds, runs the whole suite, builds once more with
# Unix Makefiles in Release with the benchmarks (the plain-CMake default generator, and
# scripts/bench.sh's configuration), runs each fuzzer for a short bounded time,
# then builds and runs the suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
#   scripts/test.sh            everything
#   HOOKHOST_SKIP_SANITIZE=1 scripts/test.sh   no sanitizer pass (for a quick local check)
#   HOOKHOST_FUZZ_SECONDS=N scripts/test.sh    run each fuzzer N seconds (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)

scripts/install-deps.sh

# Every option the suite needs is forced: `build/` may have been configured by scripts/demo.sh
# (tests off) or by hand.
all_parts=(-DHOOKHOST_BUILD_TESTS=ON -DHOOKHOST_BUILD_BENCH=ON -DHOOKHOST_BUILD_EXAMPLES=ON)

echo "== normal build =="
scripts/build.sh build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOOKHOST_SANITIZE=OFF "${all_parts[@]}"
ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs"

echo "== the installed package, as a third-party author uses it =="
scripts/install-check.sh build

# The Release -O3 -Werror configuration of scripts/bench.sh, built with the plain-CMake default
# generator: GCC's optimiser warns about things the RelWithDebInfo build never sees, and
# scripts/bench.sh must build from a fresh clone.
echo "== Unix Makefiles Release build (program, plugins and benchmarks; build only) =="
HOOKHOST_GENERATOR="Unix Makefiles" scripts/build.sh build-make -DCMAKE_BUILD_TYPE=Release \
  -DHOOKHOST_SANITIZE=OFF -DHOOKHOST_BUILD_TESTS=OFF -DHOOKHOST_BUILD_BENCH=ON \
  -DHOOKHOST_BUILD_EXAMPLES=OFF
build-make/bin/hookhost plugins list >/dev/null

echo "== fuzzers (clang, libFuzzer, ${HOOKHOST_FUZZ_SECONDS:-30}s each) =="
scripts/fuzz.sh "${HOOKHOST_FUZZ_SECONDS:-30}"

if [ "${HOOKHOST_SKIP_SANITIZE:-0}" != 1 ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build =="
  scripts/build.sh build-asan -DCMAKE_BUILD_TYPE=Debug -DHOOKHOST_SANITIZE=ON \
    -DHOOKHOST_BUILD_TESTS=ON -DHOOKHOST_BUILD_EXAMPLES=ON -DHOOKHOST_BUILD_BENCH=OFF
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --no-tests=error -j "$jobs"
fi
echo "hookhost: all tests passed"
