#!/usr/bin/env bash
# The benchmark command: installs what is missing, makes a Release build of the benchmarks, runs
# each one, and ends with one line per goal of the performance work:
#   goal NAME measured=X limit=Y PASS      (or MISS)
# and writes those lines into docs/benchmark-figures.md (scripts/bench_figures.py).
#   scripts/bench.sh                    every benchmark
#   scripts/bench.sh dispatch_bench     some of them
# HOOKHOST_BENCH_REPETITIONS=N runs each benchmark N times and keeps the median (default 3).
# Timings drift 10-20 % on shared machines; bench/README.md says how to count instructions with
# callgrind instead, which repeats exactly.
set -euo pipefail
cd "$(dirname "$0")/.."

all=(dispatch_bench sandbox_bench observer_bench checkpoint_bench record_bench job_bench discovery_bench
  python_bench mpi_bench pytorch_bench pytorch_ddp_bench)
selected=("$@")
[ ${#selected[@]} -gt 0 ] || selected=("${all[@]}")
repetitions=${HOOKHOST_BENCH_REPETITIONS:-3}

scripts/install-deps.sh
echo "== building the benchmarks (Release) =="
# The one Release build the test command and scripts/demo.sh use too (build/): after either, only
# what is missing is built. A new folder leaves the tests out.
parts=()
[ -f build/CMakeCache.txt ] || parts=(-DHOOKHOST_BUILD_TESTS=OFF -DHOOKHOST_BUILD_EXAMPLES=OFF)
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DHOOKHOST_SANITIZE=OFF -DHOOKHOST_BUILD_BENCH=ON \
  "${parts[@]}"

results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
for bench in "${selected[@]}"; do
  echo "== $bench =="
  if [ "$bench" = pytorch_bench ] || [ "$bench" = pytorch_ddp_bench ]; then
    # The Python package around a PyTorch loop; the DDP one starts its two processes itself.
    if ls build/python/hookhost/_host.*.so >/dev/null 2>&1; then
      HOOKHOST_BENCH_REPETITIONS=$repetitions PYTHONDONTWRITEBYTECODE=1 \
        /usr/bin/python3 "bench/$bench.py" build 2>"$results/$bench.log" |
        tee "$results/$bench.txt" || { tail -n 20 "$results/$bench.log" >&2; exit 1; }
    else
      echo "$bench: the Python package was not built" | tee "$results/$bench.txt"
    fi
    continue
  fi
  if [ ! -x "build/bin/$bench" ]; then  # python_bench exists only where python_hook is built
    echo "$bench was not built" | tee "$results/$bench.txt"
    continue
  fi
  "build/bin/$bench" --benchmark_repetitions="$repetitions" \
    --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 | tee "$results/$bench.txt"
done

echo
echo "== goals =="
for bench in "${selected[@]}"; do grep '^goal ' "$results/$bench.txt" || true; done |
  tee "$results/goals.txt"
grep -q '^goal ' "$results/goals.txt" || { echo "no goal lines were printed" >&2; exit 1; }
# docs/benchmark-figures.md is the one page that states the goals' figures: this run's replace
# theirs there, each row saying which build, date and commit it came from.
/usr/bin/python3 scripts/bench_figures.py \
  --run "Release, $(date -u +%Y-%m-%d), $(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  <"$results/goals.txt"
