"""What the hooks of a MonitoredSession see of its steps, and what a checkpoint keeps of its state:
observers get their step's value, not the tensor the loop has changed since; sessions on two
threads never see each other's values; nothing of a step stays visible after it; Ctrl-C while a
value is handed over stops the job; plugin text is escaped in the log; NumPy state is
checkpointed."""
import gc
import threading
import weakref

import numpy as np
import pytest
import torch

import hookhost
from conftest import TraceHook, read_trace

WAIT = 30  # seconds a hook waits for the other thread before the test fails instead of hanging


def test_an_observer_sees_each_steps_parameter_though_the_loop_changes_it_in_place(tmp_path):
    weight = torch.zeros(3)
    loop_ahead = threading.Event()

    class Recorder(hookhost.SessionRunHook):
        def __init__(self):
            self.seen = []

        def before_run(self, run_context):
            return hookhost.SessionRunArgs(["weight"])

        def after_run(self, run_context, run_values):
            if not self.seen:
                # The worker holds its first step while the loop runs ahead and adds to the weight
                # in place: the value must still be that step's.
                assert loop_ahead.wait(WAIT)
            self.seen.append((hookhost.global_step(), run_values.results[0].tolist()))

    def step(feeds):
        with torch.no_grad():
            weight.add_(1)  # in place, as optimizer.step() updates parameters
        return {}

    recorder = Recorder()
    with hookhost.MonitoredSession(hooks={"observer": recorder}, outputs=(),
                                   parameters={"weight": weight},
                                   set=["hook.observer.mode=observe", "hook.observer.queue=4"],
                                   run_dir=tmp_path / "run") as session:
        for i in range(6):
            session.run(step)
            if i == 2:
                loop_ahead.set()  # three steps done, the observer still on the first
    # after_run's global step is the step after the one it concerns: weight == that step's count.
    assert [step for step, _ in recorder.seen] == [1, 2, 3, 4, 5, 6]
    assert recorder.seen == [(n, [float(n)] * 3) for n in range(1, 7)]


def test_two_sessions_on_two_threads_each_see_their_own_loss(tmp_path):
    # B's first hook waits in after_run until A's step has returned and A's hooks run; then B's
    # second hook fetches B's loss. With one shared record of "the running step", it got A's.
    b_waits, a_shown, b_checked = threading.Event(), threading.Event(), threading.Event()

    class Gate(hookhost.SessionRunHook):
        def __init__(self, signal, wait_for):
            self.signal, self.wait_for = signal, wait_for

        def after_run(self, run_context, run_values):
            self.signal.set()
            assert self.wait_for.wait(WAIT)

    losses = {"a": torch.tensor(1.0), "b": torch.tensor(2.0)}

    class Check(hookhost.SessionRunHook):
        def __init__(self, name, done=None):
            self.name, self.done, self.losses = name, done, []

        def before_run(self, run_context):
            return hookhost.SessionRunArgs("loss")

        def after_run(self, run_context, run_values):
            # Its own session's tensor, viewed without a copy.
            own = np.shares_memory(run_values.results, losses[self.name].numpy())
            self.losses.append((float(run_values.results), own))
            if self.done is not None:
                self.done.set()

    check_a, check_b = Check("a"), Check("b", done=b_checked)
    sessions = {
        "a": hookhost.MonitoredSession(hooks={"check": check_a, "gate": Gate(a_shown, b_checked)},
                                       run_dir=tmp_path / "a"),
        "b": hookhost.MonitoredSession(hooks={"gate": Gate(b_waits, a_shown), "check": check_b},
                                       run_dir=tmp_path / "b"),
    }
    failures = []

    def loop(name):
        try:
            if name == "a":
                assert b_waits.wait(WAIT)
            with sessions[name] as session:
                session.run(lambda feeds: {"loss": losses[name]})
        except BaseException as e:  # noqa: B902  (reported by the test's thread)
            failures.append("%s: %r" % (name, e))
    threads = [threading.Thread(target=loop, args=(name,)) for name in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(2 * WAIT)
    assert not failures
    assert check_a.losses == [(1.0, True)]
    assert check_b.losses == [(2.0, True)]
    for session in sessions.values():
        assert session.result["outcome"] == "completed", session.result


def test_nothing_of_a_step_stays_visible_after_a_step_that_raises(tmp_path):
    made = []

    def good(feeds):
        made.append(torch.tensor(1.5))
        return {"loss": made[-1]}

    class Argument:
        pass

    def bad(feeds, argument):
        raise ValueError("bad batch")

    trace = tmp_path / "trace.jsonl"
    session = hookhost.MonitoredSession(hooks=[TraceHook(str(trace))], run_dir=tmp_path / "run")
    with pytest.raises(ValueError, match="bad batch"):
        with session:
            session.run(good)
            argument = Argument()
            watched = [weakref.ref(made.pop()), weakref.ref(argument)]
            session.run(bad, argument)
    del argument
    gc.collect()
    # No view of any step's values is left for the Python hooks, and neither the last values nor
    # the raising step's arguments are held.
    assert session._shown.running is None
    assert [w() for w in watched] == [None, None]
    assert session.result["outcome"] == "failed"
    assert read_trace(trace)[-1]["outcome"] == "failed"


def test_run_from_inside_a_hook_is_refused_and_leaves_the_step_as_it_was(tmp_path):
    class Reenter(hookhost.SessionRunHook):
        error = None

        def after_run(self, run_context, run_values):
            try:
                session.run(lambda feeds: {"loss": torch.tensor(9.0)})
            except RuntimeError as e:
                self.error = str(e)

    loss = torch.tensor([4.0])
    check = TraceHook(str(tmp_path / "trace.jsonl"), fetch=["loss"])
    reenter = Reenter()
    with hookhost.MonitoredSession(hooks={"reenter": reenter, "check": check},
                                   run_dir=tmp_path / "run") as session:
        session.run(lambda feeds: {"loss": loss})
        session.run(lambda feeds: {"loss": loss})
    assert "run() called while this session's run() runs" in reenter.error
    # The later hook still viewed the step's own tensor: the refused call hid nothing.
    assert len(check.values) == 2
    assert all(np.shares_memory(v[0], loss.numpy()) for v in check.values)
    assert session.result["outcome"] == "completed"


def test_ctrl_c_while_a_value_is_handed_to_hooks_stops_the_job(tmp_path):
    class Interrupting:
        def __array__(self, dtype=None):
            raise KeyboardInterrupt

    trace = tmp_path / "trace.jsonl"
    session = hookhost.MonitoredSession(hooks=[TraceHook(str(trace), fetch=["loss"])],
                                        run_dir=tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):
        with session:
            session.run(lambda feeds: {"loss": 1.0})
            session.run(lambda feeds: {"loss": Interrupting()})
    assert session.result["outcome"] == "stopped", session.result
    assert "KeyboardInterrupt" in session.result["reason"]
    assert session.result["global_step"] == 1
    assert read_trace(trace)[-1]["outcome"] == "stopped"


def test_plugin_text_reaches_the_log_escaped(tmp_path, capfd):
    class Noisy(hookhost.SessionRunHook):
        def after_run(self, run_context, run_values):
            print("title \x1b]0;pwned\x07 set")

    with hookhost.MonitoredSession(hooks={"noisy": Noisy()}, outputs=(),
                                   run_dir=tmp_path / "run") as session:
        session.run(lambda feeds: {})
    err = capfd.readouterr().err
    assert "title \\e]0;pwned\\x07 set" in err
    assert "\x1b" not in err and "\x07" not in err


class NumpyState:
    """A sampler's state as NumPy keeps it: the global generator's tuple, an array, scalars."""

    def __init__(self):
        self.counts = np.zeros(3, dtype=np.uint16)
        self.rate = np.float32(0.5)

    def state_dict(self):
        return {"rng": np.random.get_state(), "counts": self.counts, "rate": self.rate,
                "seen": np.int64(3), "flag": np.bool_(True)}

    def load_state_dict(self, state):
        np.random.set_state(state["rng"])
        self.counts, self.rate = state["counts"], state["rate"]
        self.loaded = state


def test_numpy_state_is_checkpointed_and_restored_as_numpy(tmp_path, capfd):
    np.random.seed(7)
    saved = NumpyState()
    saved.counts[:] = [1, 2, 65535]
    with hookhost.MonitoredSession(outputs=(), state={"sampler": saved},
                                   run_dir=tmp_path / "run") as session:
        session.run(lambda feeds: {})
        session.request_checkpoint()
        session.run(lambda feeds: {})
    assert session.result["checkpoint_failures"] == 0, session.result["checkpoint_error"]
    assert "model.ckpt-2 (requested by the training loop)" in capfd.readouterr().err
    del session  # its job holds the run directory until it is gone
    expected = np.random.random(4)  # what the generator draws next from the saved state

    np.random.seed(0)
    restored = NumpyState()
    with hookhost.MonitoredSession(outputs=(), state={"sampler": restored},
                                   run_dir=tmp_path / "run") as session:
        assert np.random.random(4).tolist() == expected.tolist()
    state = restored.loaded
    assert state["counts"].dtype == np.uint16 and state["counts"].tolist() == [1, 2, 65535]
    assert state["counts"].flags.writeable
    assert type(state["rate"]) is np.float32 and state["rate"] == np.float32(0.5)
    assert type(state["seen"]) is np.int64 and state["seen"] == 3
    assert type(state["flag"]) is np.bool_ and state["flag"]
    assert isinstance(state["rng"], tuple) and state["rng"][0] == "MT19937"


def test_a_state_type_no_checkpoint_keeps_is_refused_when_the_session_is_made(tmp_path):
    class Sampler:
        def state_dict(self):
            return {"epoch": 1, "seen": {3, 4}}

        def load_state_dict(self, state):
            pass

    with pytest.raises(TypeError) as refused:
        hookhost.MonitoredSession(outputs=(), state={"sampler": Sampler()},
                                  run_dir=tmp_path / "run")
    message = str(refused.value)
    assert message.startswith("state['sampler']['seen']: a set cannot be checkpointed")
    assert "convert it in state_dict()" in message
    assert not (tmp_path / "run").exists()  # refused before the job was made
