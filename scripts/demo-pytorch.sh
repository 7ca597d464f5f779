#!/usr/bin/env bash
# The PyTorch demo: installs what is missing (Debian's python3-torch and python3-sklearn among
# it), builds what changed (the same build as scripts/demo.sh, with the Python package), and runs
# examples/pytorch/train_digits.py: a small CNN learns scikit-learn's 8x8 digits on the CPU, with
# the built-in hooks of examples/pytorch/digits.ini and one Python hook. Ends with the test
# accuracy and where the outputs went.
#   scripts/demo-pytorch.sh [--ranks N]
#   --ranks N (N > 1): the data-parallel version, examples/pytorch/train_digits_ddp.py, as N
#   processes started by torchrun (DistributedDataParallel over gloo, on the CPU).
#   HOOKHOST_BUILD_DIR=DIR picks another build folder (default: build).
set -euo pipefail
cd "$(dirname "$0")/.."

ranks=1
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) ranks=${2:?--ranks needs a number}; shift 2 ;;
    --ranks=*) ranks=${1#--ranks=}; shift ;;
    *) echo "demo-pytorch: unknown argument '$1' (usage: scripts/demo-pytorch.sh [--ranks N])" >&2
       exit 2 ;;
  esac
done
case $ranks in
  '' | *[!0-9]* | 0) echo "demo-pytorch: --ranks takes a positive number, not '$ranks'" >&2; exit 2 ;;
esac

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

out=$(mktemp)
trap 'rm -f "$out"' EXIT
export PYTHONPATH=$package PYTHONDONTWRITEBYTECODE=1
if [ "$ranks" -eq 1 ]; then
  run=runs/pytorch_digits  # the run_dir the config names, from its own folder
  rm -rf "$run"            # the demo starts over each time
  # Debian's interpreter, which python3-torch is installed for (a python3 earlier on PATH, from a
  # version manager, would not see it).
  echo "== /usr/bin/python3 examples/pytorch/train_digits.py =="
  /usr/bin/python3 examples/pytorch/train_digits.py | tee "$out"
else
  run=runs/pytorch_digits_ddp
  rm -rf "$run"
  # Debian's torchrun (PyTorch 1.13 on Python 3.11) fails on its default --redirects/--tee of 0
  # (AttributeError: 'NoneType' object has no attribute 'get'); 1 and 1 keep both streams on the
  # terminal. One thread per process: the processes share the CPU.
  echo "== torchrun --standalone --nproc_per_node=$ranks examples/pytorch/train_digits_ddp.py =="
  OMP_NUM_THREADS=1 /usr/bin/torchrun --standalone --nproc_per_node="$ranks" --redirects 1 \
    --tee 1 examples/pytorch/train_digits_ddp.py --run-dir "$run" | tee "$out"
fi

echo
accuracy=$(sed -n 's/.*test accuracy \([0-9.]*\)$/\1/p' "$out" | tail -n 1)
if [ -z "$accuracy" ]; then
  echo "demo-pytorch: the training did not report its test accuracy" >&2
  exit 1
fi
echo "test accuracy: $accuracy"
if [ "$ranks" -eq 1 ]; then
  echo "outputs:       $run (checkpoints/, the TensorBoard events file, final_model.pt)"
else
  echo "outputs:       $run (the chief's: checkpoints/, the TensorBoard events file, history.csv," \
    "final_model.pt; $run/rank-N holds what rank N's hooks write)"
fi
