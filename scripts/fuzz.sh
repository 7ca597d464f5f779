#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, a small CMake project of its own) with clang into
# build-fuzz/ and runs each for a bounded time, starting from the seed corpora in
# tests/fuzz/corpus/. New inputs are kept in build-fuzz/corpus/, so each run continues where the
# last one stopped.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]    (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
jobs=$(nproc 2>/dev/null || echo 2)
build=build-fuzz

generator=()
[ -f "$build/CMakeCache.txt" ] || generator=(-G Ninja)
source scripts/ccache.sh
# -O1 with line tables: fast enough to fuzz, quicker to compile than -O2, and a crash names its line.
cmake -S tests/fuzz -B "$build" "${generator[@]}" "${launcher[@]}" -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" >/dev/null
cmake --build "$build" -j "$jobs"

mkdir -p "$build/artifacts"
targets=(config_parser plugin_note runner_protocol control_protocol)
# The targets run side by side: each for its own bounded time, so the script takes `seconds`, not
# four times that.
echo "== $(printf 'fuzz_%s, ' "${targets[@]}" | sed 's/, $//'): ${seconds}s each, side by side =="
pids=()
for target in "${targets[@]}"; do
  corpus="$build/corpus/$target"
  mkdir -p "$corpus"
  # Freshly built plugins, when there are any, are the best seeds for the note reader.
  if [ "$target" = plugin_note ] && [ -d build/lib/hookhost/plugins ]; then
    cp build/lib/hookhost/plugins/*.so "$corpus/"
  fi
  # The first folder receives new inputs; the seeds in the repo are only read. A crash leaves its
  # input in $build/artifacts/ and fails this script.
  "$build/fuzz_$target" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$target-" "$corpus" "tests/fuzz/corpus/$target" \
    >"$build/fuzz_$target.log" 2>&1 &
  pids+=($!)
done
status=0
for i in "${!targets[@]}"; do
  target=${targets[$i]}
  log="$build/fuzz_$target.log"
  if ! wait "${pids[$i]}"; then
    tail -60 "$log" >&2
    echo "hookhost: fuzz_$target found a crash; the input is in $build/artifacts/" >&2
    status=1
    continue
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz_$target: $runs executions in ${seconds}s, corpus $(ls "$build/corpus/$target" | wc -l) inputs, no crash"
done
exit $status
