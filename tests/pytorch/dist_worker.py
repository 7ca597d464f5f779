"""One process of two-process MonitoredSession jobs over torch.distributed (gloo), for
test_distributed.py: `dist_worker.py FOLDER SCENARIO...`, with RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set as torchrun sets them. One job per scenario, one after the other in the same
processes (PyTorch's import is the slow part), each in FOLDER/SCENARIO ("resume" in the folder of
"checkpoint", which it resumes); writes what it saw to FOLDER/SCENARIO/result-RANK.json."""
import gc
import json
import os
import sys
import textwrap
import threading
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.environ["HOOKHOST_PYTHON_DIR"])
import hookhost  # noqa: E402

torch.set_num_threads(1)
FIXTURES = os.environ.get("HOOKHOST_FIXTURE_DIR", "")


class Recorder(hookhost.SessionRunHook):
    """Appends its calls to FOLDER/NAME-RANK.txt; on `stop_rank` asks to stop after step
    `at`, on `fail_rank` raises in `fail_in` at step `at`."""

    def __init__(self, name, ranks=None, stop_rank=None, fail_rank=None, fail_in="after_run",
                 at=2):
        self.name = name
        self.folder = FOLDER
        if ranks is not None:
            self.ranks = ranks
        self.stop_rank, self.fail_rank, self.fail_in, self.at = stop_rank, fail_rank, fail_in, at

    def _line(self, text):
        with open(os.path.join(self.folder, "%s-%d.txt" % (self.name, dist.get_rank())), "a") as f:
            f.write(text + "\n")

    def _maybe_fail(self, where):
        if (self.fail_rank == dist.get_rank() and self.fail_in == where
                and hookhost.global_step() == self.at):
            raise RuntimeError("broken on rank %d" % dist.get_rank())

    def before_run(self, run_context):
        self._maybe_fail("before_run")
        self._line("before_run %d" % hookhost.global_step())

    def after_run(self, run_context, run_values):
        self._line("after_run %d" % hookhost.global_step())
        self._maybe_fail("after_run")
        if self.stop_rank == dist.get_rank() and hookhost.global_step() == self.at:
            run_context.request_stop()

    def end(self, session):
        self._line("end %d %s %s" % (session.global_step, session.outcome, session.reason))


class Operator(hookhost.SessionRunHook):
    """On the chief, after global step 2: an operator's thread attaches hook 'late' through the
    session's live control, then stops the job, as `hookhost ctl RUN_DIR` would."""

    ranks = "chief"

    def __init__(self, result):
        self.result = result
        self.thread = None

    def after_run(self, run_context, run_values):
        if hookhost.global_step() == 2 and self.thread is None:
            self.thread = threading.Thread(target=self._operate)
            self.thread.start()

    def _operate(self):
        self.result["attach"] = SESSION.control("attach", "late", "lifecycle_trace",
                                                "path=late.jsonl")
        self.result["stop"] = SESSION.control("stop", "enough")


def main():
    global FOLDER
    dist.init_process_group("gloo")
    top = sys.argv[1]
    for scenario in sys.argv[2:]:
        FOLDER = os.path.join(top, "checkpoint" if scenario == "resume" else scenario)
        os.makedirs(FOLDER, exist_ok=True)
        run_scenario(scenario)
        gc.collect()  # the session's job holds its run directory until it is collected
    dist.destroy_process_group()


def run_scenario(SCENARIO):
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    steps_run = []

    def step(feeds):
        steps_run.append(1)
        # Each rank its own shard: a DDP step whose gradient allreduce needs both processes.
        x = torch.full((4, 3), float(rank + 1))
        loss = (model(x) - 1.0).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if SCENARIO == "control":
            time.sleep(0.005)  # steps the operator's thread can keep up with
        if SCENARIO == "step_raises" and rank == 1 and len(steps_run) == 3:
            raise ValueError("the step broke on rank 1")  # after DDP's allreduce: no one waits
        return {"loss": loss.detach()}

    run_dir = os.path.join(FOLDER, "run")
    hooks, overrides, state, extra = [], [], None, {}
    result = {"rank": rank}
    config = textwrap.dedent(f"""\
        [run]
        run_dir = {run_dir}
        log_level = warn
        [hook.stop]
        plugin = stop_at_step
        last_step = 5
        """)
    if SCENARIO == "placement":
        config += textwrap.dedent(f"""\
            [hook.history]
            plugin = history_saver
            tensors = loss
            [hook.summaries]
            plugin = summary_saver
            tensors = loss
            save_steps = 1
            [hook.trace]
            plugin = lifecycle_trace
            path = trace.jsonl
            """)
        hooks = [Recorder("everywhere"), Recorder("chiefonly", ranks="chief")]
    elif SCENARIO == "stop":
        hooks = [Recorder("rec", stop_rank=1, at=2)]
    elif SCENARIO in ("fail_after", "fail_before"):
        hooks = [Recorder("rec", fail_rank=1, fail_in=SCENARIO[5:] + "_run", at=2)]
        overrides = ["hook.rec.on_error=fail"]
    elif SCENARIO == "step_raises":
        hooks = [Recorder("rec")]
    elif SCENARIO == "dist":
        config += "[hook.avg]\nplugin = dist_probe\n"
        extra["plugin_dirs"] = [FIXTURES]
    elif SCENARIO == "dist_alone":  # only the chief calls allreduce: the other never joins
        config = config.replace("log_level = warn\n",
                                "log_level = warn\ncollective_timeout_ms = 500\n")
        config += "[hook.avg]\nplugin = dist_probe\nmode = chief_only\n"
        extra["plugin_dirs"] = [FIXTURES]
    elif SCENARIO == "control":
        config = config.replace("last_step = 5", "last_step = 5000")
        hooks = [Operator(result)]  # on every rank, as every hook: it runs on the chief alone
    elif SCENARIO in ("checkpoint", "resume"):
        # A seed per rank: the random generators differ, and each must come back as it was.
        torch.manual_seed(100 + rank if SCENARIO == "checkpoint" else 999)
        state = {"model": model, "optimizer": optimizer, "rng": hookhost.TorchRandomState()}
        extra["save_checkpoint_steps"] = 2
        if SCENARIO == "resume":
            config = config.replace("last_step = 5", "last_step = 7")
    session = hookhost.MonitoredSession(config=_write(config), hooks=hooks, outputs=["loss"],
                                        set=overrides, state=state, **extra)
    global SESSION
    SESSION = session  # the operator's thread's; let go below (the job locks its run directory)
    try:
        with session:
            result["start_step"] = session.global_step
            result["first_draw"] = torch.rand(1).item()
            result["is_chief"] = session.is_chief
            result["world_size"] = session.world_size
            result["run_dir"] = session.run_dir
            while not session.should_stop():
                session.run(step)
    except ValueError as e:  # the step's own, passed on once the job ended
        result["raised"] = str(e)
    result["last_draw"] = torch.rand(1).item()
    result.update(session.result)
    result["steps_run_here"] = len(steps_run)
    result["weights"] = [p.detach().flatten().tolist() for p in model.parameters()]
    SESSION = None
    with open(os.path.join(FOLDER, "result-%s-%d.json" % (SCENARIO, rank)), "w") as f:
        json.dump(result, f)


def _write(text):
    path = os.path.join(FOLDER, "hooks-%d.ini" % int(os.environ["RANK"]))
    with open(path, "w") as f:
        f.write(text)
    return path


if __name__ == "__main__":
    main()
