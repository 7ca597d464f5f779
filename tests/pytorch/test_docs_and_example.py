"""Every ```python block of the README and docs/pytorch.md runs as written, and the example trains
to the accuracy the docs state, leaving the outputs they name."""
import glob
import os
import re
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["README.md", "docs/pytorch.md"]


def python_blocks():
    for doc in DOCS:
        with open(os.path.join(SOURCE, doc)) as f:
            text = f.read()
        for n, block in enumerate(re.findall(r"\n```python\n(.*?)\n```\n", text, re.S)):
            yield pytest.param(block, id="%s-%d" % (doc, n))


def run_python(args, cwd, **kwargs):
    env = dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable] + args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, **kwargs)


def test_the_docs_have_python_examples():
    assert len(list(python_blocks())) >= 2


@pytest.mark.parametrize("block", python_blocks())
def test_a_python_block_of_the_docs_runs(tmp_path, block):
    script = tmp_path / "example.py"
    script.write_text(block)
    done = run_python([str(script)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    if "stop_at_step" in block:
        assert done.stdout.strip().endswith("stopped 50")


def test_the_example_reaches_the_stated_accuracy(tmp_path):
    run_dir = tmp_path / "run"
    done = run_python([os.path.join(SOURCE, "examples", "pytorch", "train_digits.py"),
                       "--run-dir", str(run_dir)], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    accuracy = float(re.search(r"test accuracy ([0-9.]+)$", done.stdout.strip()).group(1))
    assert accuracy >= 0.97, done.stdout  # the accuracy README.md and docs/pytorch.md state
    # The outputs the docs name: checkpoints, the TensorBoard events file, the final model; and
    # the Python hook's lines in the log.
    assert glob.glob(str(run_dir / "checkpoints" / "model.ckpt-*"))
    assert glob.glob(str(run_dir / "events.out.tfevents.*"))
    assert (run_dir / "final_model.pt").is_file()
    assert "epoch 1: test accuracy" in done.stderr
    # Run again in the same folder: it resumes at its last checkpoint and ends as it did.
    again = run_python([os.path.join(SOURCE, "examples", "pytorch", "train_digits.py"),
                        "--run-dir", str(run_dir)], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "resuming from" in again.stderr
    assert again.stdout.strip().endswith("test accuracy %.4f" % accuracy)
