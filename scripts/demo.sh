#!/usr/bin/env bash
# The first command: installs what is missing, builds, and runs the demo job on the built-in
# mtcars data, then shows where every output went.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
echo "== building (first time: a few minutes) =="
# The test command's configuration (Release), so either command after the other reuses the build;
# a new folder leaves the tests and benchmarks out.
parts=()
[ -f build/CMakeCache.txt ] || parts=(-DHOOKHOST_BUILD_TESTS=OFF -DHOOKHOST_BUILD_BENCH=OFF)
scripts/build.sh build -DCMAKE_BUILD_TYPE=Release -DHOOKHOST_SANITIZE=OFF "${parts[@]}"

echo "== hookhost run --config examples/demo.ini =="
rm -rf runs/demo  # the demo starts over each time; real jobs resume from their checkpoints
build/bin/hookhost run --config examples/demo.ini

run=runs/demo
echo
echo "== outputs in $run =="
echo "checkpoints:      $(ls "$run/checkpoints" | tr '\n' ' ')"
echo "history (CSV):    $run/history.csv ($(($(wc -l < "$run/history.csv") - 1)) rows)"
head -3 "$run/history.csv" | sed 's/^/                  /'
echo "TensorBoard:      $(ls "$run"/events.out.tfevents.* | head -1)  (tensorboard --logdir $run)"
echo "run report:       $run/report.html  (open it in a browser; hookhost report $run regenerates it)"
