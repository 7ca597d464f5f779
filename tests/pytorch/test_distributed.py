"""MonitoredSession in a job of two processes over torch.distributed (gloo on the CPU), each a real
process running a DDP step (tests/pytorch/dist_worker.py): chief-only hooks and outputs, one
global step, a stop or failure on rank 1 seen by both ranks after the same step, hh.dist/1 over
the process group, checkpoints holding each rank's own random generator, and a live-control
attach and stop on the chief made on both ranks at one step boundary."""
import json
import os
import socket
import subprocess
import sys

import pytest

from conftest import FIXTURES, PYTHON_DIR, read_trace

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist_worker.py")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


SCENARIOS = ["placement", "stop", "fail_after", "fail_before", "step_raises", "dist",
             "dist_alone", "checkpoint", "resume", "control"]


def run_jobs(folder, scenarios, world=2):
    """Both processes, as torchrun would start them, running one job per scenario."""
    port = free_port()
    processes = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   HOOKHOST_PYTHON_DIR=PYTHON_DIR, HOOKHOST_FIXTURE_DIR=FIXTURES)
        processes.append(subprocess.Popen([sys.executable, WORKER, str(folder)] + scenarios,
                                          env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    outputs = []
    for p in processes:
        try:
            outputs.append(p.communicate(timeout=300)[0])
        except subprocess.TimeoutExpired:
            for q in processes:
                q.kill()
            raise
    for rank, (p, out) in enumerate(zip(processes, outputs)):
        assert p.returncode == 0, "rank %d:\n%s" % (rank, out)


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("jobs")
    run_jobs(folder, SCENARIOS)
    return folder


def job(jobs, scenario):
    """The scenario's folder and its results by rank."""
    folder = jobs / ("checkpoint" if scenario == "resume" else scenario)
    results = []
    for rank in range(2):
        with open(folder / ("result-%s-%d.json" % (scenario, rank))) as f:
            results.append(json.load(f))
    return folder, results


def lines(folder, name, rank):
    path = os.path.join(str(folder), "%s-%d.txt" % (name, rank))
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return f.read().splitlines()


def test_chief_only_hooks_and_outputs_run_on_rank_0_and_every_rank_shares_the_step(jobs):
    tmp_path, results = job(jobs, "placement")
    for rank, r in enumerate(results):
        assert r["outcome"] == "stopped" and r["global_step"] == 5, r
        assert r["is_chief"] == (rank == 0) and r["world_size"] == 2
    run = tmp_path / "run"
    assert results[0]["run_dir"] == str(run)
    assert results[1]["run_dir"] == str(run / "rank-1")
    # history_saver and summary_saver declare placement = chief: one history, one event file.
    # One history, one TensorBoard file, one run record (hookhost report's), all the chief's.
    assert (run / "history.csv").is_file()
    assert (run / "run-record.jsonl").is_file()
    assert [f for f in os.listdir(run / "rank-1") if not f.startswith(".")] == ["trace.jsonl"]
    assert len(list(run.rglob("events.out.tfevents.*"))) == 1
    assert not list((run / "rank-1").rglob("events.out.tfevents.*"))
    # lifecycle_trace runs on every rank, in each rank's own folder, at the same global steps.
    steps = [[r["global_step"] for r in read_trace(folder / "trace.jsonl")
              if r["callback"] == "after_run"] for folder in (run, run / "rank-1")]
    assert steps[0] == steps[1] == [0, 1, 2, 3, 4]
    # A Python hook object with ranks = "chief" runs on the chief only.
    assert lines(tmp_path, "chiefonly", 0)[-1].startswith("end 5 stopped")
    assert lines(tmp_path, "chiefonly", 1) == []
    assert lines(tmp_path, "everywhere", 0) == lines(tmp_path, "everywhere", 1)
    # DDP kept the replicas identical.
    assert results[0]["weights"] == results[1]["weights"]


def test_a_stop_on_rank_1_stops_every_rank_after_the_same_step(jobs):
    tmp_path, results = job(jobs, "stop")
    for rank, r in enumerate(results):
        assert r["outcome"] == "stopped", r
        # Rank 1's hook asked in after_run at global step 2 (two steps done).
        assert r["global_step"] == 2 and r["steps_run_here"] == 2, r
        assert "request_stop() at global step 2 (rank 1)" in r["reason"], r
        end = lines(tmp_path, "rec", rank)[-1]
        assert end.startswith("end 2 stopped") and "(rank 1)" in end, end
    assert results[0]["weights"] == results[1]["weights"]


@pytest.mark.parametrize("where", ["after", "before"])
def test_a_failure_on_rank_1_ends_every_rank_failed_at_the_same_step_with_its_reason(jobs, where):
    tmp_path, results = job(jobs, "fail_" + where)
    for rank, r in enumerate(results):
        assert r["outcome"] == "failed", r
        assert "broken on rank 1" in r["reason"] and "(rank 1)" in r["reason"], r
        end = lines(tmp_path, "rec", rank)[-1]
        assert end.startswith("end %d failed" % r["global_step"]), end
    # after_run at global step 2 (two steps done), or before_run of the step at global step 2,
    # which is then called off on both ranks: rank 0's before_run ran, its DDP step did not.
    assert [r["global_step"] for r in results] == [2, 2]
    assert [r["steps_run_here"] for r in results] == [2, 2]
    if where == "before":
        assert "before_run 2" in lines(tmp_path, "rec", 0)
        assert "before_run 2" not in lines(tmp_path, "rec", 1)
        assert "after_run 3" not in lines(tmp_path, "rec", 0)
    assert results[0]["weights"] == results[1]["weights"]


def test_the_steps_exception_on_rank_1_ends_every_rank_failed_after_that_step(jobs):
    tmp_path, results = job(jobs, "step_raises")
    assert results[1]["raised"] == "the step broke on rank 1"
    assert "raised" not in results[0]  # rank 0's loop ended on should_stop()
    for rank, r in enumerate(results):
        assert r["outcome"] == "failed", r
        assert "the step raised ValueError: the step broke on rank 1 (rank 1)" in r["reason"], r
        assert r["steps_run_here"] == 3, r  # the step at global step 2 ran on both; no later one
        assert lines(tmp_path, "rec", rank)[-1].startswith("end"), rank
    # Rank 0's step counted, rank 1's did not.
    assert [r["global_step"] for r in results] == [3, 2]


def test_a_native_hooks_allreduce_averages_over_the_process_group(jobs):
    tmp_path, _ = job(jobs, "dist")
    run = tmp_path / "run"
    probes = [(run / "dist.txt").read_text().splitlines(),
              (run / "rank-1" / "dist.txt").read_text().splitlines()]
    for rank, probe in enumerate(probes):
        assert "begin rank=%d world=2 chief=%d" % (rank, rank == 0) in probe
        ops = [line for line in probe if line.startswith("ops ")]
        assert len(ops) == 5
        for line in ops:
            assert "sum=3 mean=1.5 min=1 max=2 bcast=101,201" in line
        assert any(line.startswith("end barrier ok outcome=stopped") for line in probe)
    means = [[line.split("mean=")[1] for line in probe if line.startswith("step=")]
             for probe in probes]
    assert means[0] == means[1] and len(means[0]) == 5
    losses = [[float(line.split("loss=")[1].split()[0]) for line in probe
               if line.startswith("step=")] for probe in probes]
    assert losses[0] != losses[1]  # each rank's own shard


def test_a_native_hooks_allreduce_on_the_chief_alone_times_out_naming_it_and_the_job_goes_on(jobs):
    tmp_path, results = job(jobs, "dist_alone")
    run = tmp_path / "run"
    chief = (run / "dist.txt").read_text().splitlines()
    errors = [line for line in chief if line.startswith("error ")]
    assert len(errors) == 6, chief  # five after_run calls and the one in end
    assert ("hh.dist/1 allreduce: hook 'avg' (plugin 'dist_probe') in after_run at global step"
            in errors[0]), errors[0]
    assert "did not join within 500 ms" in errors[0], errors[0]
    for line in errors[1:]:
        assert "refused, the service is unusable for this hook since" in line, line
    other = (run / "rank-1" / "dist.txt").read_text().splitlines()
    assert not [line for line in other if line.startswith("error ")], other
    for rank, r in enumerate(results):
        assert r["outcome"] == "stopped" and r["global_step"] == 5, r


def test_a_resumed_job_gives_each_rank_its_own_random_generator_and_the_chiefs_model(jobs):
    _, first = job(jobs, "checkpoint")
    assert [r["global_step"] for r in first] == [5, 5]
    assert first[0]["last_draw"] != first[1]["last_draw"]
    _, resumed = job(jobs, "resume")
    for rank, r in enumerate(resumed):
        assert r["start_step"] == 5, r
        # The generator continues where this rank's left off (the final checkpoint, after end).
        assert r["first_draw"] == first[rank]["last_draw"], (rank, r, first[rank])
        assert r["global_step"] == 7 and r["steps_run_here"] == 2
    assert resumed[0]["weights"] == resumed[1]["weights"]


def test_a_live_attach_and_stop_on_the_chief_are_made_on_every_rank_at_the_same_step(jobs):
    tmp_path, results = job(jobs, "control")
    chief = results[0]
    assert chief["attach"].startswith("on all 2 ranks: attached hook 'late'"), chief["attach"]
    run = tmp_path / "run"
    firsts = []
    for folder in (run, run / "rank-1"):
        trace = read_trace(folder / "late.jsonl")
        firsts.append([r["global_step"] for r in trace if r["callback"] == "before_run"][0])
        assert trace[-1]["callback"] == "end"
    assert firsts[0] == firsts[1] and firsts[0] >= 2, firsts  # asked in after_run at step 2
    for r in results:
        assert r["outcome"] == "stopped" and "enough" in r["reason"], r
    assert results[0]["global_step"] == results[1]["global_step"] < 5000
    assert results[0]["weights"] == results[1]["weights"]
