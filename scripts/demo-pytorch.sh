#!/usr/bin/env bash
# The PyTorch demo: installs what is missing (Debian's python3-torch and python3-sklearn among
# it), builds what changed (the same build as scripts/demo.sh, with the Python package), and runs
# examples/pytorch/train_digits.py: a small CNN learns scikit-learn's 8x8 digits on the CPU, with
# the built-in hooks of examples/pytorch/digits.ini and one Python hook. Ends with the test
# accuracy and where the outputs went.
#   HOOKHOST_BUILD_DIR=DIR picks another build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${HOOKHOST_BUILD_DIR:-build}
scripts/install-deps.sh
echo "== building (first time: a few minutes) =="
scripts/build.sh "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHOOKHOST_BUILD_TESTS=OFF \
  -DHOOKHOST_BUILD_BENCH=OFF
package=$(cd "$build_dir" && pwd)/python
if ! ls "$package"/hookhost/_host.*.so >/dev/null 2>&1; then
  echo "demo-pytorch: $build_dir has no Python package (it is not built with HOOKHOST_SANITIZE);" \
    "use another HOOKHOST_BUILD_DIR" >&2
  exit 1
fi

run=runs/pytorch_digits  # the run_dir the config names, from its own folder
rm -rf "$run"            # the demo starts over each time
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Debian's interpreter, which python3-torch is installed for (a python3 earlier on PATH, from a
# version manager, would not see it).
echo "== /usr/bin/python3 examples/pytorch/train_digits.py =="
PYTHONPATH=$package PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 examples/pytorch/train_digits.py |
  tee "$out"

echo
accuracy=$(sed -n 's/.*test accuracy \([0-9.]*\)$/\1/p' "$out" | tail -n 1)
if [ -z "$accuracy" ]; then
  echo "demo-pytorch: the training did not report its test accuracy" >&2
  exit 1
fi
echo "test accuracy: $accuracy"
echo "outputs:       $run (checkpoints/, the TensorBoard events file, final_model.pt)"
