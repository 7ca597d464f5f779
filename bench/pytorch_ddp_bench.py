"""What hookhost.MonitoredSession adds to each step of a DDP loop on two processes (gloo, on the
CPU), against floors measured in the same run by the same processes: the DDP step alone, and the
same loop calling a plain Python callback.

    /usr/bin/python3 bench/pytorch_ddp_bench.py BUILD_DIR      (scripts/bench.sh runs it)

It starts its two processes itself (as torchrun would: RANK, WORLD_SIZE, MASTER_ADDR,
MASTER_PORT); rank 0 prints the table and one "goal NAME measured=X limit=Y PASS|MISS" line per
goal:
- pytorch_ddp_session_x_plain_callback: a step of the session with one no-op Python hook over a
  step of the same DDP loop with one plain no-op callback (goal <= 1.2);
- pytorch_ddp_agreement_us_per_step: what the processes' agreement costs a step, on top of DDP's
  own allreduce: the session's step on two processes minus the same session's step as two jobs of
  one process (distributed="none") (goal <= 2 us).
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
STEPS = int(os.environ.get("HOOKHOST_BENCH_DDP_STEPS", "500"))
REPETITIONS = int(os.environ.get("HOOKHOST_BENCH_REPETITIONS", "3")) * 2 + 1


def launch():
    """Both processes; returns rank 0's exit status after both ended."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    work = tempfile.mkdtemp(prefix="hookhost-ddp-bench-")
    processes = [subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), BUILD],
        env=dict(os.environ, RANK=str(rank), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                 MASTER_PORT=str(port), OMP_NUM_THREADS="1", HOOKHOST_BENCH_WORK=work),
        stdout=None if rank == 0 else subprocess.DEVNULL) for rank in range(2)]
    codes = [p.wait() for p in processes]
    return max(codes)


class NoopHook:
    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass


def main():
    sys.path.insert(0, os.path.join(BUILD, "python"))
    import torch
    import torch.distributed as dist
    import hookhost

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    work = os.environ["HOOKHOST_BENCH_WORK"]
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(8, 16), torch.randn(8, 1)

    def step(feeds):
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        loss.backward()  # DDP's gradient allreduce
        optimizer.step()
        return {"loss": loss}

    def bare(n):
        feeds = {}
        for _ in range(n):
            step(feeds)

    def plain(n):
        hook, feeds = NoopHook(), {}
        for _ in range(n):
            hook.before_run(None)
            values = step(feeds)
            hook.after_run(None, values)

    counter = [0]

    def session(hooks, distributed):
        def loop(n):
            counter[0] += 1
            run_dir = os.path.join(work, "run-%d" % counter[0])
            if distributed == "none":
                run_dir += "-rank%d" % rank  # two jobs of one process each
            with hookhost.MonitoredSession(hooks=hooks, run_dir=run_dir, distributed=distributed,
                                           set=["run.log_level=warn"]) as s:
                run = s.run
                for _ in range(n):
                    run(step)
        return loop

    loops = {"bare": bare, "plain": plain,
             "python": session([NoopHook()], None),
             "none_two": session([], None),
             "none_apart": session([], "none")}
    times = {name: [] for name in loops}
    for repetition in range(REPETITIONS + 1):  # the first a warm-up
        for name, loop in loops.items():
            dist.barrier()
            t0 = time.perf_counter()
            loop(STEPS)
            if repetition:
                times[name].append((time.perf_counter() - t0) / STEPS)
    t = {name: statistics.median(v) for name, v in times.items()}
    if rank == 0:
        us = 1e6
        print("%-60s %12s" % ("DDP loop on 2 processes (%d steps, median of %d)" % (
            STEPS, REPETITIONS), "us/step"))
        for label, name in [("the DDP step alone (floor)", "bare"),
                            ("+ 1 no-op plain Python callback (floor)", "plain"),
                            ("MonitoredSession, 1 no-op Python hook", "python"),
                            ("MonitoredSession, no hook, one job of 2 processes", "none_two"),
                            ("MonitoredSession, no hook, 2 jobs of 1 process", "none_apart")]:
            print("%-60s %12.3f" % (label, t[name] * us))
        print()
        goal("pytorch_ddp_session_x_plain_callback", t["python"] / t["plain"], 1.2)
        goal("pytorch_ddp_agreement_us_per_step", (t["none_two"] - t["none_apart"]) * us, 2.0)
    dist.destroy_process_group()


def goal(name, measured, limit):
    print("goal %s measured=%.3f limit=%.3f %s" % (name, measured, limit,
                                                   "PASS" if measured <= limit else "MISS"))


if __name__ == "__main__":
    if "RANK" in os.environ:
        main()
    else:
        sys.exit(launch())
