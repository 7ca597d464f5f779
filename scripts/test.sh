#!/usr/bin/env bash
# The test command: installs what is missing, makes the one Release build (program, plugins, tests,
# benchmarks, examples) and runs the whole suite on it, checks the installed package as a
# third-party author uses it, and runs the suite again under AddressSanitizer +
# UndefinedBehaviorSanitizer, and each fuzzer for a short bounded time. The sanitized build runs
# beside the first suite and the fuzzers beside the second, at the lowest CPU priority. Ends with
# the wall time of each phase.
#   scripts/test.sh                             everything
#   HOOKHOST_SKIP_SANITIZE=1 scripts/test.sh    no sanitizer pass (for a quick local check)
#   HOOKHOST_FUZZ_SECONDS=N scripts/test.sh     run each fuzzer N seconds (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc 2>/dev/null || echo 2)
# Tests spend much of their time waiting on the processes they start: two per core.
test_jobs=$((jobs * 2))

phases=()
phase_start=$(date +%s)
total_start=$phase_start
# Closes the running phase (its name in $1) and records its wall time.
phase_done() {
  local now
  now=$(date +%s)
  phases+=("$(printf '%-58s %4ds' "$1" $((now - phase_start)))")
  phase_start=$now
}

scripts/install-deps.sh
phase_done "install what is missing"

# One configuration serves the suite, scripts/demo.sh and scripts/bench.sh: Release (-O3, the
# optimiser's warnings under -Werror), no debug info nobody reads. Every option the suite needs is
# forced: `build/` may have been configured by scripts/demo.sh or scripts/bench.sh (tests off) or
# by hand, and keeps the generator it has; a new one is made with Ninja, which keeps both cores
# busier than CMake's Makefiles (the scripts' default, what plain `cmake -S . -B build` picks).
echo "== build (Release: program, plugins, tests, benchmarks, examples) =="
HOOKHOST_GENERATOR=Ninja scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DHOOKHOST_SANITIZE=OFF \
  -DHOOKHOST_BUILD_TESTS=ON -DHOOKHOST_BUILD_BENCH=ON -DHOOKHOST_BUILD_EXAMPLES=ON
build/bin/hookhost plugins list >/dev/null
phase_done "build (Release, tests, benchmarks, examples)"

# A build folder whose ctest has no timings yet starts the tests known to be long first (the
# timings in $2, as ctest writes its own CTestCostData.txt), so none starts last.
seed_test_costs() {
  local costs="$1/Testing/Temporary/CTestCostData.txt"
  [ -f "$costs" ] || { mkdir -p "$(dirname "$costs")" && cp "$2" "$costs"; }
}

# The test command's two other builds run beside the phases before them, at the lowest CPU
# priority: the suite and the sanitized suite spend about half their time waiting on the processes
# they start, and a niced build takes only the cores they leave idle (the tests keep theirs).
logs=build-logs
mkdir -p "$logs"
# Each background step in a process group of its own (job control), so that when the script ends
# early (a failed test) the whole step ends with it, compilers and fuzzers included.
set -m
background=()
trap 'for pid in "${background[@]}"; do kill -- "-$pid" 2>/dev/null || true; done' EXIT
sanitize=$([ "${HOOKHOST_SKIP_SANITIZE:-0}" != 1 ] && echo 1 || echo 0)
fuzz_seconds=${HOOKHOST_FUZZ_SECONDS:-30}

# Built with clang (Debian's, which the fuzzers use too): it compiles sanitized code about twice
# as fast as GCC 12, and its warnings are a second compiler's. Line tables only (-g1): enough for
# the sanitizers' reports to name file:line. Ninja and lld: this folder is the test command's own,
# and lld links a sanitized test executable in half the time of ld. A folder configured with
# another compiler is made anew.
build_sanitized() {
  if [ -f build-asan/CMakeCache.txt ] &&
    ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++' build-asan/CMakeCache.txt; then
    rm -rf build-asan
  fi
  HOOKHOST_GENERATOR=Ninja nice -n 19 scripts/build.sh build-asan \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=Debug -DHOOKHOST_SANITIZE=ON \
    -DCMAKE_C_FLAGS_DEBUG=-g1 -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
    -DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld \
    -DHOOKHOST_BUILD_TESTS=ON -DHOOKHOST_BUILD_EXAMPLES=ON -DHOOKHOST_BUILD_BENCH=OFF
}
# Waits for a background step started with its log in $2; on failure shows the log's end.
wait_for() {
  local pid=$1 log=$2 what=$3
  if ! wait "$pid"; then
    tail -80 "$log" >&2
    echo "hookhost: $what failed (the whole log: $log)" >&2
    exit 1
  fi
}

if [ "$sanitize" = 1 ]; then
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer build (clang), beside the suite: $logs/asan-build.log =="
  build_sanitized >"$logs/asan-build.log" 2>&1 &
  asan_build=$!
  background+=("$asan_build")
fi

echo "== the suite =="
seed_test_costs build tests/ctest-costs.txt
ctest --test-dir build --output-on-failure --no-tests=error -j "$test_jobs"
phase_done "the suite ($(ctest --test-dir build -N | sed -n 's/^Total Tests: //p') tests)"

echo "== the installed package, as a third-party author uses it =="
scripts/install-check.sh build
phase_done "the installed package (install-check.sh)"

if [ "$sanitize" = 1 ]; then
  wait_for "$asan_build" "$logs/asan-build.log" "the ASan + UBSan build"
  tail -1 "$logs/asan-build.log"
  phase_done "the ASan + UBSan build (clang): what remained of it"
  echo "== fuzzers (clang, libFuzzer, ${fuzz_seconds}s each), beside the sanitized suite: $logs/fuzz.log =="
  nice -n 19 scripts/fuzz.sh "$fuzz_seconds" >"$logs/fuzz.log" 2>&1 &
  fuzzers=$!
  background+=("$fuzzers")
  echo "== the suite under AddressSanitizer + UndefinedBehaviorSanitizer =="
  # One test per GoogleTest suite in this build (cmake/gtest_suites.cmake): timings of its own.
  seed_test_costs build-asan tests/ctest-costs-sanitized.txt
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure --no-tests=error -j "$test_jobs"
  phase_done "the suite under ASan + UBSan ($(ctest --test-dir build-asan -N | sed -n 's/^Total Tests: //p') tests)"
  wait_for "$fuzzers" "$logs/fuzz.log" "a fuzzer"
  grep '^fuzz_' "$logs/fuzz.log"
  phase_done "fuzzers (build and ${fuzz_seconds}s each): what remained of them"
else
  echo "== fuzzers (clang, libFuzzer, ${fuzz_seconds}s each) =="
  scripts/fuzz.sh "$fuzz_seconds"
  phase_done "fuzzers (build and ${fuzz_seconds}s each)"
fi

echo "== wall time of each phase =="
printf '%s\n' "${phases[@]}"
printf '%-58s %4ds\n' "total" $(($(date +%s) - total_start))
echo "hookhost: all tests passed"
