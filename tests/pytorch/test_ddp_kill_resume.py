"""One process of the DDP example (two processes under torchrun) killed with SIGKILL at several
moments: torchrun ends the other, the same torchrun command resumes both ranks from the chief's
newest checkpoint, and the job ends with the very model, tensor for tensor, of an uninterrupted
run. One epoch (45 steps), a checkpoint every 10 steps, and a lifecycle_trace hook on each rank
whose file tells the test where that rank is."""
import json
import os
import signal
import subprocess
import time

import pytest

from test_ddp_example import EXAMPLE, torchrun_command
from conftest import PYTHON_DIR, assert_same_model, final_model


def command(run_dir):
    return torchrun_command() + [EXAMPLE, "--epochs", "1", "--run-dir", str(run_dir),
                       "--set", "hook.checkpoints.save_steps=10", "--set", "run.log_level=warn",
                       "--set", "hook.trace.plugin=lifecycle_trace",
                       "--set", "hook.trace.path=trace.jsonl"]


def environment():
    return dict(os.environ, PYTHONPATH=PYTHON_DIR, PYTHONDONTWRITEBYTECODE="1",
                OMP_NUM_THREADS="1")


def trace_of(run_dir, rank):
    return run_dir / ("trace.jsonl" if rank == 0 else "rank-%d/trace.jsonl" % rank)


def records(trace):
    try:
        with open(trace) as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:  # a line being written
            pass
    return out


def last_step(trace):
    steps = [r["global_step"] for r in records(trace) if r.get("callback") == "after_run"]
    return steps[-1] if steps else -1


def worker_of(agent_pid, rank):
    """The pid of torchrun's worker process of `rank`, or None while it has not started."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            if parent != agent_pid:
                continue
            with open("/proc/%s/environ" % entry, "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if b"RANK=%d" % rank in env:
            return int(entry)
    return None


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("whole") / "run"
    done = subprocess.run(command(run_dir), env=environment(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return final_model(run_dir)


# (the rank killed, the step after which): a rank that is not the chief before the first
# checkpoint (both start again from nothing), and the chief just after one.
MOMENTS = [(1, 4), (0, 21)]


@pytest.mark.parametrize("rank,moment", MOMENTS)
def test_a_rank_killed_then_the_job_resumed_ends_with_the_same_model(tmp_path, uninterrupted,
                                                                      rank, moment):
    run_dir = tmp_path / "run"
    trace = trace_of(run_dir, rank)
    agent = subprocess.Popen(command(run_dir), env=environment(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while last_step(trace) < moment and agent.poll() is None and time.monotonic() < deadline:
        time.sleep(0.001)
    victim = worker_of(agent.pid, rank)
    assert victim is not None and agent.poll() is None, "the job ended before it was killed"
    os.kill(victim, signal.SIGKILL)
    killed_at = last_step(trace)
    assert agent.wait(timeout=120) != 0  # torchrun ended the other rank and failed

    resumed = subprocess.run(command(run_dir), env=environment(), capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    # Both ranks began again at the same checkpoint's step (a multiple of 10), no later than the
    # kill.
    starts = [[r["global_step"] for r in records(trace_of(run_dir, r))
               if r.get("callback") == "after_create_session"] for r in (0, 1)]
    assert starts[0] == starts[1] and len(starts[0]) == 2 and starts[0][0] == 0, starts
    assert starts[0][1] % 10 == 0 and starts[0][1] <= killed_at + 1, (starts, killed_at)
    if killed_at >= 20:
        assert starts[0][1] > 0
    assert_same_model(final_model(run_dir), uninterrupted,
                      "after rank %d was killed at step %d" % (rank, killed_at))
