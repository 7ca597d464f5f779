"""Promises of docs/pytorch.md about MonitoredSession's arguments and methods that the other files
do not check: save_checkpoint_steps, fresh, run after should_stop, request_checkpoint,
last_checkpoint and result's keys, a state_dict() value of a type it cannot save that appears
after the session was made, and a Python
hook's original_args (departures-from-tensorflow.md)."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import hookhost
from conftest import PYTHON_DIR, write_ini


def config(tmp_path, extra=""):
    return write_ini(tmp_path, "[run]\nrun_dir = %s\n%s" % (tmp_path / "run", extra))


def step(feeds):
    return {"loss": torch.tensor(1.0)}


def checkpoints(run_dir):
    folder = os.path.join(str(run_dir), "checkpoints")
    if not os.path.isdir(folder):
        return []
    return sorted(int(name[len("model.ckpt-"):]) for name in os.listdir(folder)
                  if name.startswith("model.ckpt-") and name[len("model.ckpt-"):].isdigit())


def test_save_checkpoint_steps_adds_a_checkpoint_saver_with_those_steps(tmp_path):
    ini = config(tmp_path)
    with hookhost.MonitoredSession(ini, save_checkpoint_steps=3) as session:
        for _ in range(7):
            session.run(step)
    session.close()
    assert "checkpoint_saver" in str(session.reports())
    # At the session's creation, every 3 steps, and at the end, as TensorFlow's saver writes.
    assert checkpoints(tmp_path / "run") == [0, 3, 6, 7]


def test_fresh_moves_the_run_directory_aside_and_starts_again(tmp_path):
    ini = config(tmp_path)
    with hookhost.MonitoredSession(ini, save_checkpoint_steps=1) as session:
        for _ in range(3):
            session.run(step)
    # The closed session lets its run directory go at once, though the object lives on, and still
    # answers what it did.
    with hookhost.MonitoredSession(ini) as resumed:
        assert resumed.global_step == 3  # resumed, not fresh
    assert session.global_step == 3 and session.should_stop()
    assert session.run_dir == resumed.run_dir
    assert "model.ckpt-3" in session.last_checkpoint()
    assert "checkpoint_saver" in str(session.reports())
    with pytest.raises(RuntimeError, match="the session is closed"):
        session.request_checkpoint("too late")
    with hookhost.MonitoredSession(ini, fresh=True) as again:
        assert again.global_step == 0
        again.run(step)
    assert again.result["global_step"] == 1
    moved = [name for name in os.listdir(tmp_path) if name.startswith("run") and name != "run"]
    assert moved, os.listdir(tmp_path)


def test_run_after_should_stop_raises_runtime_error(tmp_path):
    ini = config(tmp_path)
    with hookhost.MonitoredSession(ini) as session:
        session.run(step)
        assert not session.should_stop()
        session.request_stop("enough")
        assert session.should_stop()
        with pytest.raises(RuntimeError, match="should_stop"):
            session.run(step)
    session.close()
    assert session.result["outcome"] == "stopped"
    assert session.result["steps_run"] == 1


def test_request_checkpoint_is_taken_at_the_next_boundary_and_result_has_every_key(tmp_path):
    ini = config(tmp_path)
    with hookhost.MonitoredSession(ini) as session:
        session.run(step)
        session.run(step)
        assert session.last_checkpoint() is None  # none was asked for
        session.request_checkpoint("asked by the test")
        session.run(step)
        session.run(step)
    session.close()
    # Taken at the end of the step after the request (global step 3), not at the job's end (4).
    assert checkpoints(tmp_path / "run") == [3]
    assert "model.ckpt-3" in session.last_checkpoint()
    assert set(session.result) == {"outcome", "reason", "global_step", "steps_run",
                                   "checkpoint_failures", "checkpoint_error"}
    assert session.result["outcome"] == "completed"
    assert session.result["steps_run"] == 4
    assert session.result["checkpoint_failures"] == 0


class Odd:
    """A state object whose state_dict() holds a set, which no checkpoint keeps, only once `odd`
    is set: the session, made before, cannot refuse it then."""

    def __init__(self):
        self.odd = False

    def state_dict(self):
        return {"ok": 1, "seen": {3, 4}} if self.odd else {"ok": 1}

    def load_state_dict(self, state):
        pass


def test_a_state_value_of_another_type_that_appears_later_fails_the_checkpoint_naming_where(
        tmp_path):
    ini = config(tmp_path)
    odd = Odd()
    with hookhost.MonitoredSession(ini, state={"odd": odd}) as session:
        session.run(step)
        odd.odd = True
        session.request_checkpoint("asked by the test")
        session.run(step)
    session.close()
    assert session.result["checkpoint_failures"] >= 1
    error = session.result["checkpoint_error"]
    assert "['seen']" in error and "set" in error, error


class ArgsHook(hookhost.SessionRunHook):
    def __init__(self):
        self.seen = []

    def before_run(self, run_context):
        self.seen.append(run_context.original_args)


def test_a_python_hooks_original_args_carries_no_fetches_or_feeds(tmp_path):
    ini = config(tmp_path)
    hook = ArgsHook()
    with hookhost.MonitoredSession(ini, hooks={"args": hook}) as session:
        session.run(step)
        session.run(step)
    session.close()
    assert len(hook.seen) == 2
    for args in hook.seen:
        assert isinstance(args, hookhost.SessionRunArgs)
        assert args.fetches is None and args.feed_dict is None


def test_the_package_imports_no_torch_for_a_program_that_has_not_and_gives_no_state(tmp_path):
    # (The state= case imports torch by design; importing it here would cost seconds.)
    ini = config(tmp_path)
    program = (
        "import sys\n"
        "sys.path.insert(0, %r)\n"
        "import numpy as np\n"
        "import hookhost\n"
        "with hookhost.MonitoredSession(%r) as session:\n"
        "    session.run(lambda feeds: {'loss': np.float32(1.0)})\n"
        "session.close()\n"
        "print(session.result['outcome'], 'torch' in sys.modules)\n") % (PYTHON_DIR, ini)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "completed False", done.stdout
