"""What hookhost.MonitoredSession adds to each step of a PyTorch loop, against floors measured in
the same run: the bare loop (the step alone) and the same loop calling plain Python callbacks.

    /usr/bin/python3 bench/pytorch_bench.py BUILD_DIR      (scripts/bench.sh runs it)

Each figure is the median over repetitions of the time per step of a loop of many steps, with a
step that does almost nothing (it returns tensors made once), so what is measured is the loop's
own cost. Prints one "goal NAME measured=X limit=Y PASS|MISS" line per goal, as the C++
benchmarks do.
"""
import math
import os
import statistics
import sys
import tempfile
import time

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
sys.path.insert(0, os.path.join(BUILD, "python"))
SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import hookhost  # noqa: E402

torch.set_num_threads(1)
STEPS = int(os.environ.get("HOOKHOST_BENCH_STEPS", "20000"))
REPETITIONS = int(os.environ.get("HOOKHOST_BENCH_REPETITIONS", "3")) * 2 + 1
BENCH_PLUGINS = os.path.join(BUILD, "bench_plugins")
WORK = tempfile.mkdtemp(prefix="hookhost-pytorch-bench-")

LOSS = torch.tensor(0.5)
OUTPUTS = {"loss": LOSS, "accuracy": torch.tensor(0.75), "epoch_loss": torch.tensor(0.5),
           "small": torch.tensor(1.0), "big": torch.zeros(16 * 1024 * 1024)}  # 64 MiB of float32


def step(feeds):
    return OUTPUTS


def per_step(loops):
    """Median seconds per step of each `loop(n)`, over the repetitions (the first a warm-up). The
    loops take turns, repetition by repetition, so a drift of the machine's speed reaches every
    figure alike instead of the ones measured last."""
    times = {name: [] for name in loops}
    for repetition in range(REPETITIONS + 1):
        for name, loop in loops.items():
            t0 = time.perf_counter()
            loop(STEPS)
            if repetition:
                times[name].append((time.perf_counter() - t0) / STEPS)
    return {name: statistics.median(t) for name, t in times.items()}


def bare(n):
    feeds = {}
    for _ in range(n):
        step(feeds)


class NoopCallback:
    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass


def with_callbacks(callbacks):
    def loop(n):
        feeds, context = {}, object()
        for _ in range(n):
            for cb in callbacks:
                cb.before_run(context)
            values = step(feeds)
            for cb in callbacks:
                cb.after_run(context, values)
    return loop


class PlainExampleHooks:
    """examples/pytorch/digits.ini's hooks as a hand-written loop would do them: a progress line
    every 5 s, a log line every 100 steps, two scalars appended to a file every 20 steps, a
    checkpoint file every 100, a NaN check every step, an early-stopping check every 45. (The
    native hooks write TensorBoard records and checkpoints of their states: a little more.)"""

    def __init__(self, folder):
        self.folder, self.step, self.last_line = folder, 0, time.monotonic()
        self.summaries = open(os.path.join(folder, "summaries.csv"), "a")
        self.best, self.bad = math.inf, 0
        self.out = open(os.devnull, "w")

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, values):
        self.step += 1
        loss = float(values["loss"])
        if not math.isfinite(loss):
            raise SystemExit("NaN loss")
        if time.monotonic() - self.last_line >= 5:
            self.last_line = time.monotonic()
            print("digits %d - loss %.4f" % (self.step, loss), file=self.out)
        if self.step % 100 == 0:
            print("step loss %g batch accuracy %g" % (loss, float(values["accuracy"])),
                  file=self.out)
            path = os.path.join(self.folder, "ckpt")
            with open(path + ".tmp", "wb") as f:
                f.write(b"%d" % self.step)
            os.replace(path + ".tmp", path)
        if self.step % 20 == 0:
            self.summaries.write("%d,%r,%r\n" % (self.step, loss, float(values["accuracy"])))
        if self.step % 45 == 0:
            epoch_loss = float(values["epoch_loss"])
            if epoch_loss < self.best:
                self.best, self.bad = epoch_loss, 0
            else:
                self.bad += 1


def session_loop(name, ini_text=None, hooks=(), outputs=("loss",)):
    counter = [0]

    def loop(n):
        counter[0] += 1
        config = None
        if ini_text is not None:
            config = os.path.join(WORK, "%s.ini" % name)
            with open(config, "w") as f:
                f.write(ini_text)
        with hookhost.MonitoredSession(
                config, hooks=hooks, outputs=outputs, plugin_dirs=[BENCH_PLUGINS],
                run_dir=os.path.join(WORK, "%s-%d" % (name, counter[0])),
                set=["run.log_level=warn"]) as session:
            run = session.run
            for _ in range(n):
                run(step)
    return loop


def noop_native(fetch=""):
    return "[hook.noop]\nplugin = bench_noop\n" + ("fetch = %s\n" % fetch if fetch else "")


def example_hooks():
    with open(os.path.join(SOURCE, "examples", "pytorch", "digits.ini")) as f:
        text = f.read()
    # The bench's run folder, not the demo's; progress lines, not a bar, whatever stderr is.
    text = text.replace("run_dir = ../../runs/pytorch_digits", "")
    # The bench's loss never improves: early stopping keeps checking and never stops the loop.
    text = text.replace("patience = 4", "patience = 1000000000")
    return text.replace("label = digits", "label = digits\nmode = lines")


def goal(name, measured, limit):
    print("goal %s measured=%.3f limit=%.3f %s" % (name, measured, limit,
                                                   "PASS" if measured <= limit else "MISS"))


def main():
    us = 1e6
    folder = tempfile.mkdtemp(dir=WORK)
    outputs = ("loss", "accuracy", "epoch_loss", "small", "big")
    t = per_step({
        "bare": bare,
        "cb1": with_callbacks([NoopCallback()]),
        "plain_example": with_callbacks([PlainExampleHooks(folder)]),
        "none": session_loop("none"),
        "native": session_loop("native", noop_native()),
        "python": session_loop("python", hooks=[NoopCallback()]),
        "small": session_loop("small", noop_native("small"), outputs=outputs),
        "big": session_loop("big", noop_native("big"), outputs=outputs),
        "example": session_loop("example", example_hooks(),
                                outputs=("loss", "accuracy", "epoch_loss")),
    })
    t_bare, t_cb1, t_plain_example = t["bare"], t["cb1"], t["plain_example"]
    t_none, t_native, t_python = t["none"], t["native"], t["python"]
    t_small, t_big, t_example = t["small"], t["big"], t["example"]
    rows = [
        ("the step alone (floor)", t_bare),
        ("+ 1 no-op Python callback, plain loop (floor)", t_cb1),
        ("+ the example's hooks as plain Python callbacks (floor)", t_plain_example),
        ("MonitoredSession, no hook", t_none),
        ("MonitoredSession, 1 no-op native hook", t_native),
        ("MonitoredSession, 1 no-op Python hook", t_python),
        ("MonitoredSession, native hook fetching 4 bytes", t_small),
        ("MonitoredSession, native hook fetching 64 MiB", t_big),
        ("MonitoredSession, the example's hooks (digits.ini)", t_example),
    ]
    print("%-60s %12s" % ("loop (%d steps, median of %d)" % (STEPS, REPETITIONS), "us/step"))
    for label, t in rows:
        print("%-60s %12.3f" % (label, t * us))
    print()
    goal("pytorch_native_noop_hook_ns_per_step", (t_native - t_none) * 1e9, 1000)
    goal("pytorch_python_noop_hook_x_plain_callback", (t_python - t_bare) / (t_cb1 - t_bare), 1.2)
    goal("pytorch_example_hooks_x_plain_callbacks",
         (t_example - t_bare) / (t_plain_example - t_bare), 1.2)
    goal("pytorch_fetch_64mib_x_4b", t_big / t_small, 1.2)


if __name__ == "__main__":
    main()
