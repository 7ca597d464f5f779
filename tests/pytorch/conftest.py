"""Shared pieces of the Python package's tests: the package from the build tree, the test plugins,
a recording Python hook and a small deterministic model."""
import json
import os
import sys

import pytest

BUILD = os.environ.get("HOOKHOST_BINARY_DIR", "")
PYTHON_DIR = os.environ.get("HOOKHOST_PYTHON_DIR", os.path.join(BUILD, "python"))
FIXTURES = os.environ.get("HOOKHOST_FIXTURE_DIR", os.path.join(BUILD, "test_plugins"))
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

import torch  # noqa: E402

import hookhost  # noqa: E402

torch.set_num_threads(1)


class TraceHook(hookhost.SessionRunHook):
    """Writes lifecycle_trace's lines into the same file, so one file shows the order of native and
    Python calls."""

    def __init__(self, path, name="py", fetch=(), feed=None, stop_at=None):
        self.path, self.name, self.fetch, self.feed, self.stop_at = path, name, list(fetch), feed, stop_at
        self.values = []

    def _line(self, callback, step, **extra):
        record = {"instance": self.name, "callback": callback, "global_step": step}
        record.update(extra)
        with open(self.path, "a") as f:
            f.write(json.dumps(record) + "\n")

    def begin(self):
        self._line("begin", None)

    def after_create_session(self, session, coord):
        self._line("after_create_session", session.global_step)

    def before_run(self, run_context):
        self._step = hookhost.global_step()
        self._line("before_run", self._step)
        return hookhost.SessionRunArgs(self.fetch or None, self.feed)

    def after_run(self, run_context, run_values):
        self.values.append(run_values.results)
        self._line("after_run", self._step)
        if self.stop_at is not None and hookhost.global_step() >= self.stop_at:
            run_context.request_stop()

    def end(self, session):
        self._line("end", session.global_step, outcome=session.outcome)


def read_trace(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def final_model(run_dir):
    """The state dict the example saves when its run ends (final_model.pt)."""
    return torch.load(os.path.join(str(run_dir), "final_model.pt"), weights_only=True)


def assert_same_model(model, expected, what):
    """Every tensor of `model` equals `expected`'s, bit for bit; `what` says which run differs."""
    assert model.keys() == expected.keys()
    for name in model:
        assert torch.equal(model[name], expected[name]), "%s differs %s" % (name, what)


def write_ini(folder, text, name="hooks.ini"):
    path = os.path.join(str(folder), name)
    with open(path, "w") as f:
        f.write(text)
    return path


@pytest.fixture
def fixtures_dir():
    return FIXTURES
