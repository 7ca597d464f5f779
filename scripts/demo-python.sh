#!/usr/bin/env bash
# The Python demo: installs what is missing, builds what changed (the same build as
# scripts/demo.sh), and runs examples/python/loss_hook.ini: TensorFlow 1.x's LossHook, in Python,
# stops the job once the loss falls below its threshold. Ends with the stop reason.
#   HOOKHOST_BUILD_DIR=DIR picks another build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${HOOKHOST_BUILD_DIR:-build}
scripts/install-deps.sh
echo "== building (first time: a few minutes) =="
scripts/build.sh "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOOKHOST_BUILD_TESTS=OFF \
  -DHOOKHOST_BUILD_BENCH=OFF
if [ ! -f "$build_dir/lib/hookhost/plugins/python_hook.so" ]; then
  echo "demo-python: $build_dir has no python_hook plugin (it is not built with" \
    "HOOKHOST_SANITIZE); use another HOOKHOST_BUILD_DIR" >&2
  exit 1
fi

run=runs/python_loss_hook  # the run_dir the config names, from its own folder
rm -rf "$run"              # the demo starts over each time
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
hookhost=$(cd "$build_dir" && pwd)/bin/hookhost
config=$PWD/examples/python/loss_hook.ini
# From another folder: the config's relative paths (its script included) are its folder's.
echo "== (cd /tmp && hookhost run --config $config) =="
(cd /tmp && "$hookhost" run --config "$config") | tee "$summary"

echo
reason=$(sed -n 's/^hookhost: job stopped (\(.*\))$/\1/p' "$summary")
if [ -z "$reason" ]; then
  echo "demo-python: the job did not stop at the hook's threshold" >&2
  exit 1
fi
echo "stopped by:   $reason"
echo "outputs:      $run"
