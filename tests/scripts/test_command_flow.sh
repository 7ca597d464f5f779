#!/usr/bin/env bash
# The test command's documented switches, without building anything: scripts/test.sh and
# scripts/fuzz.sh are copied into a small tree of their own whose other scripts, ctest, cmake and
# fuzz targets are stubs that record how they were called.
#   - HOOKHOST_SKIP_SANITIZE=1 skips the sanitizer pass: no sanitized build, no suite run on it;
#     unset (or 0), both run.
#   - The fuzzers run 30 s each unless HOOKHOST_FUZZ_SECONDS says otherwise, with or without the
#     sanitizer pass; scripts/fuzz.sh runs every target it builds for that long (30 s without an
#     argument).
#   tests/scripts/test_command_flow.sh SOURCE_DIR
set -euo pipefail
root=$(cd "${1:?usage: test_command_flow.sh SOURCE_DIR}" && pwd)
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
calls=$tree/calls.log
export HOOKHOST_TEST_CALLS=$calls

fail() {
  echo "test_command_flow: $*" >&2
  echo "--- calls recorded:" >&2
  cat "$calls" >&2 2>/dev/null || true
  exit 1
}

# A stub that records "NAME ARGS..." (one line per call) and does what $2 adds.
stub() {
  local file=$1 extra=${2:-}
  mkdir -p "$(dirname "$file")"
  printf '#!/usr/bin/env bash\nprintf "%%s\\n" "$(basename "$0")${*:+ $*}" >>"$HOOKHOST_TEST_CALLS"\n%s\n' \
    "$extra" >"$file"
  chmod +x "$file"
}

# The tree scripts/test.sh runs in: the real test.sh and ccache.sh, everything else a stub.
mkdir -p "$tree/scripts" "$tree/tests" "$tree/build/bin" "$tree/bin"
cp "$root/scripts/test.sh" "$root/scripts/ccache.sh" "$tree/scripts/"
cp "$root"/tests/ctest-costs*.txt "$tree/tests/"
for script in install-deps.sh build.sh install-check.sh; do stub "$tree/scripts/$script"; done
# test.sh collects the fuzzers' summary lines (fuzz_NAME: ...) from fuzz.sh's output.
stub "$tree/scripts/fuzz.sh" 'echo "fuzz_stub: 1 executions in ${1}s, no crash"'
stub "$tree/build/bin/hookhost"
# `ctest -N` counts the tests; every other call runs them (and passes).
stub "$tree/bin/ctest" 'for a in "$@"; do [ "$a" = -N ] && echo "Total Tests: 3"; done; exit 0'
stub "$tree/bin/cmake"
# The background steps run at the lowest priority, which on a busy machine would only slow this
# test down: its nice runs the command as it is.
cat >"$tree/bin/nice" <<'NICE'
#!/usr/bin/env bash
[ "$1" = -n ] && shift 2
exec "$@"
NICE
chmod +x "$tree/bin/nice"

# Runs the copied test.sh with the environment given as NAME=VALUE arguments (neither switch is
# inherited from the environment this test runs in).
run_test_sh() {
  : >"$calls"
  local out
  if ! out=$(env -u HOOKHOST_SKIP_SANITIZE -u HOOKHOST_FUZZ_SECONDS "$@" \
    PATH="$tree/bin:$PATH" bash "$tree/scripts/test.sh" 2>&1); then
    fail "scripts/test.sh with '$*' failed: $out"
  fi
  grep -q '^hookhost: all tests passed$' <<<"$out" || fail "no final line with '$*': $out"
}
ran() { grep -qxF -- "$1" "$calls"; }
ran_like() { grep -qE -- "$1" "$calls"; }

# Without the switch (or with it 0): the sanitized build (build-asan, HOOKHOST_SANITIZE=ON), the
# suite on both builds, the installed package, and the fuzzers for 30 s each, or
# HOOKHOST_FUZZ_SECONDS.
for case in ":30" "HOOKHOST_SKIP_SANITIZE=0 HOOKHOST_FUZZ_SECONDS=7:7"; do
  env_args=${case%:*} seconds=${case##*:}
  # shellcheck disable=SC2086  # each NAME=VALUE its own argument, none when empty
  run_test_sh $env_args
  ran "install-deps.sh" || fail "install-deps.sh did not run ($env_args)"
  ran_like '^build\.sh build -D.*-DHOOKHOST_SANITIZE=OFF' || fail "no Release build ($env_args)"
  ran_like '^build\.sh build-asan .*-DHOOKHOST_SANITIZE=ON' ||
    fail "no sanitized build without HOOKHOST_SKIP_SANITIZE=1 ($env_args)"
  ran_like '^ctest --test-dir build --output-on-failure' || fail "the suite did not run ($env_args)"
  ran_like '^ctest --test-dir build-asan --output-on-failure' ||
    fail "the suite did not run on the sanitized build ($env_args)"
  ran "install-check.sh build" || fail "install-check.sh did not run on build ($env_args)"
  ran "fuzz.sh $seconds" || fail "the fuzzers did not get $seconds s each ($env_args)"
  [ "$(grep -c '^fuzz\.sh' "$calls")" = 1 ] || fail "fuzz.sh ran more than once ($env_args)"
done

# HOOKHOST_SKIP_SANITIZE=1: the same without anything sanitized; the fuzzers still run, 30 s each
# or HOOKHOST_FUZZ_SECONDS.
for case in "HOOKHOST_SKIP_SANITIZE=1:30" "HOOKHOST_SKIP_SANITIZE=1 HOOKHOST_FUZZ_SECONDS=7:7"; do
  env_args=${case%:*} seconds=${case##*:}
  # shellcheck disable=SC2086
  run_test_sh $env_args
  ran_like '^build\.sh build -D.*-DHOOKHOST_SANITIZE=OFF' || fail "no Release build ($env_args)"
  ran_like '^ctest --test-dir build --output-on-failure' || fail "the suite did not run ($env_args)"
  ran "install-check.sh build" || fail "install-check.sh did not run ($env_args)"
  ! ran_like 'build-asan|HOOKHOST_SANITIZE=ON' ||
    fail "HOOKHOST_SKIP_SANITIZE=1 still built or ran the sanitized build ($env_args)"
  ran "fuzz.sh $seconds" || fail "the fuzzers did not get $seconds s each ($env_args)"
  [ "$(grep -c '^fuzz\.sh' "$calls")" = 1 ] || fail "fuzz.sh ran more than once ($env_args)"
done

# scripts/fuzz.sh itself: every target tests/fuzz builds runs for the seconds given, 30 without
# an argument (cmake and the targets are stubs; a target reports its executions as libFuzzer does).
fuzz_tree=$tree/fuzz-tree
mkdir -p "$fuzz_tree/scripts" "$fuzz_tree/tests/fuzz/corpus"
cp "$root/scripts/fuzz.sh" "$root/scripts/ccache.sh" "$fuzz_tree/scripts/"
targets=$(sed -n 's/^add_executable(fuzz_\([a-z_]*\) .*/\1/p' "$root/tests/fuzz/CMakeLists.txt")
[ -n "$targets" ] || fail "no fuzz target found in tests/fuzz/CMakeLists.txt"
for target in $targets; do
  stub "$fuzz_tree/build-fuzz/fuzz_$target" 'echo "stat::number_of_executed_units: 5" >&2'
done
for seconds in "" 7; do
  : >"$calls"
  # shellcheck disable=SC2086  # no argument at all when empty
  out=$(PATH="$tree/bin:$PATH" bash "$fuzz_tree/scripts/fuzz.sh" $seconds 2>&1) ||
    fail "scripts/fuzz.sh $seconds failed: $out"
  for target in $targets; do
    ran_like "^fuzz_$target -max_total_time=${seconds:-30} " ||
      fail "fuzz_$target did not run for ${seconds:-30} s (scripts/fuzz.sh $seconds): $out"
    grep -q "^fuzz_$target: 5 executions in ${seconds:-30}s" <<<"$out" ||
      fail "no summary line for fuzz_$target: $out"
  done
  [ "$(grep -c '^fuzz_' "$calls")" = "$(wc -w <<<"$targets")" ] ||
    fail "scripts/fuzz.sh $seconds ran a target more than once or one tests/fuzz does not build"
done

echo "test_command_flow: the skip switch and the fuzzers' seconds do what the README says"
