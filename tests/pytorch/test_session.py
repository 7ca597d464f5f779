"""hookhost.MonitoredSession around a PyTorch loop: lifecycle, fetches, feeds, stops, endings,
configuration errors and contained failures. Every hook is real: .so plugins from the build tree
and Python hook objects, in one job."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import hookhost
from conftest import FIXTURES, PYTHON_DIR, TraceHook, read_trace, write_ini

# A module path as deep as real models' (`layer4.1.conv2.weight`), past any small-string buffer.
LONG = "encoder.layers.0.self_attention.in_projection"


def make_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential()
    inner = torch.nn.Sequential()
    inner.add_module("in_projection", torch.nn.Linear(4, 3))
    model.add_module("encoder_layers_0_self_attention", inner)
    return model


def long_model():
    torch.manual_seed(0)
    root = torch.nn.Module()
    node = root
    for part in LONG.split(".")[:-1]:
        child = torch.nn.Module()
        node.add_module(part, child)
        node = child
    node.add_module("in_projection", torch.nn.Linear(4, 3))
    return root


def test_native_and_python_hooks_run_in_lifecycle_order(tmp_path):
    trace = tmp_path / "trace.jsonl"
    ini = write_ini(tmp_path, textwrap.dedent(f"""\
        [run]
        run_dir = {tmp_path / 'run'}
        [hook.native]
        plugin = lifecycle_trace
        path = {trace}
        fetch = loss
        [hook.stop]
        plugin = stop_at_step
        last_step = 3
        """))
    model = make_model()
    py = TraceHook(str(trace), name="py", fetch=["loss"])
    with hookhost.MonitoredSession(ini, hooks={"py": py}, parameters=model) as session:
        while not session.should_stop():
            session.run(lambda feeds: {"loss": model(torch.ones(4)).sum()})
    assert session.result["outcome"] == "stopped"
    assert session.result["global_step"] == 3
    calls = [(r["instance"], r["callback"], r["global_step"]) for r in read_trace(trace)]
    expected = [("native", "begin", None), ("py", "begin", None),
                ("native", "after_create_session", 0), ("py", "after_create_session", 0)]
    for step in range(3):
        expected += [("native", "before_run", step), ("py", "before_run", step),
                     ("native", "after_run", step), ("py", "after_run", step)]
    expected += [("native", "end", 3), ("py", "end", 3)]
    assert calls == expected
    ends = [r for r in read_trace(trace) if r["callback"] == "end"]
    assert [r["outcome"] for r in ends] == ["stopped", "stopped"]
    # The native hook saw the loss the step returned.
    loss = float(model(torch.ones(4)).sum())
    native_after = [r for r in read_trace(trace) if r["instance"] == "native"
                    and r["callback"] == "after_run"]
    assert native_after[-1]["fetched"]["loss"] == pytest.approx(loss, rel=1e-6)
    assert py.values[-1][0] == pytest.approx(loss, rel=1e-6)


AT_MAX = 1024 - len("encoder.layers.0.self_attention.") - len(".weight")


@pytest.mark.parametrize("extra", [0, 1, 2, AT_MAX])
def test_hooks_fetch_parameters_by_long_names(tmp_path, extra):
    # Names of 47 to 50 bytes, and one of exactly HH_MAX_NAME_LENGTH (1024) bytes.
    model = long_model()
    if extra:
        model.encoder.layers.get_submodule("0").self_attention.add_module(
            "p" * extra, torch.nn.Linear(2, 2))
    names = [n for n, _ in model.named_parameters()]
    trace = tmp_path / "trace.jsonl"
    ini = write_ini(tmp_path, textwrap.dedent(f"""\
        [hook.native]
        plugin = lifecycle_trace
        path = {trace}
        fetch = {", ".join(names)}
        """))
    py = TraceHook(str(tmp_path / "py.jsonl"), fetch=names)
    with hookhost.MonitoredSession(ini, hooks=[py], parameters=model, outputs=(),
                                   run_dir=tmp_path / "run") as session:
        for _ in range(2):
            session.run(lambda feeds: {})
    if extra == AT_MAX:
        assert max(len(n) for n in names) == 1024
    params = dict(model.named_parameters())
    after = [r for r in read_trace(trace) if r["callback"] == "after_run"]
    assert len(after) == 2
    for name in names:
        expected = params[name].detach().numpy().reshape(-1).tolist()
        got = np.array(after[-1]["fetched"][name], dtype=np.float64).reshape(-1)
        np.testing.assert_allclose(got, expected, rtol=1e-6)
        value = py.values[-1][names.index(name)]
        np.testing.assert_array_equal(value, params[name].detach().numpy())
        assert not value.flags.writeable
        # A view of the parameter itself, not a copy; the parameter stays writable.
        assert np.shares_memory(value, params[name].detach().numpy())
        assert params[name].detach().numpy().flags.writeable


def test_a_name_longer_than_the_maximum_is_refused_with_its_hook(tmp_path):
    model = torch.nn.Module()
    model.add_module("m" * 1020, torch.nn.Linear(1, 1))  # "<1020 m>.weight": 1027 bytes
    py = TraceHook(str(tmp_path / "py.jsonl"), fetch=[n for n, _ in model.named_parameters()])
    with hookhost.MonitoredSession(hooks={"long": py}, parameters=model, outputs=(),
                                   run_dir=tmp_path / "run") as session:
        session.run(lambda feeds: {})
    report = {r["name"]: r for r in session.reports()}["long"]
    assert report["disabled"]
    assert "1024" in report["failure"] or "long" in report["failure"], report["failure"]


def test_a_hook_feeds_the_step(tmp_path):
    seen = []
    py = TraceHook(str(tmp_path / "py.jsonl"), feed={"learning_rate": np.float32(0.25)})
    with hookhost.MonitoredSession(hooks=[py], feedable=["learning_rate"], outputs=(),
                                   run_dir=tmp_path / "run") as session:
        for _ in range(2):
            session.run(lambda feeds: seen.append(feeds) or {})
    assert len(seen) == 2
    assert isinstance(seen[0]["learning_rate"], torch.Tensor)
    assert float(seen[0]["learning_rate"]) == 0.25


def test_a_feed_the_session_does_not_take_fails_that_hook_only(tmp_path):
    bad = TraceHook(str(tmp_path / "bad.jsonl"), feed={"momentum": 0.9})
    good = TraceHook(str(tmp_path / "good.jsonl"))
    with hookhost.MonitoredSession(hooks={"bad": bad, "good": good}, outputs=(),
                                   feedable=["learning_rate"], run_dir=tmp_path / "run") as s:
        for _ in range(3):
            s.run(lambda feeds: {})
    reports = {r["name"]: r for r in s.reports()}
    assert reports["bad"]["disabled"] and "momentum" in reports["bad"]["failure"]
    assert "learning_rate" in reports["bad"]["failure"]
    assert not reports["good"]["disabled"]
    assert len([r for r in read_trace(tmp_path / "good.jsonl")
                if r["callback"] == "after_run"]) == 3


def test_the_step_exception_is_raised_and_end_says_failed(tmp_path):
    trace = tmp_path / "py.jsonl"
    py = TraceHook(str(trace))
    session = hookhost.MonitoredSession(hooks=[py], outputs=(), run_dir=tmp_path / "run")

    def step(feeds):
        if session.global_step == 2:
            raise ValueError("bad batch")
        return {}
    with pytest.raises(ValueError, match="bad batch"):
        with session:
            while not session.should_stop():
                session.run(step)
    assert session.result["outcome"] == "failed"
    assert "ValueError: bad batch" in session.result["reason"]
    end = read_trace(trace)[-1]
    assert end["callback"] == "end" and end["outcome"] == "failed"
    assert end["global_step"] == 2


def test_an_exception_in_the_loop_body_ends_the_hooks_as_failed(tmp_path):
    trace = tmp_path / "py.jsonl"
    with pytest.raises(RuntimeError):
        with hookhost.MonitoredSession(hooks=[TraceHook(str(trace))], outputs=(),
                                       run_dir=tmp_path / "run") as session:
            session.run(lambda feeds: {})
            raise RuntimeError("the loader broke")
    assert session.result["outcome"] == "failed"
    assert "RuntimeError: the loader broke" in session.result["reason"]
    assert read_trace(trace)[-1]["outcome"] == "failed"


@pytest.mark.parametrize("where", ["step", "loop"])
def test_keyboard_interrupt_stops_the_job_and_end_says_stopped(tmp_path, where):
    trace = tmp_path / "py.jsonl"
    session = hookhost.MonitoredSession(hooks=[TraceHook(str(trace))], outputs=(),
                                        run_dir=tmp_path / "run")

    def step(feeds):
        if where == "step" and session.global_step == 1:
            raise KeyboardInterrupt
        return {}
    with pytest.raises(KeyboardInterrupt):
        with session:
            while True:
                session.run(step)
                if where == "loop" and session.global_step == 1:
                    raise KeyboardInterrupt
    assert session.result["outcome"] == "stopped"
    assert "KeyboardInterrupt" in session.result["reason"]
    assert session.result["global_step"] == 1
    assert read_trace(trace)[-1] == {"instance": "py", "callback": "end", "global_step": 1,
                                     "outcome": "stopped"}


def test_ctrl_c_on_a_real_process_delivers_end(tmp_path):
    trace = tmp_path / "py.jsonl"
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {PYTHON_DIR!r})
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import hookhost
        from conftest import TraceHook
        with hookhost.MonitoredSession(hooks=[TraceHook({str(trace)!r})], outputs=(),
                                       run_dir={str(tmp_path / 'run')!r}) as s:
            while not s.should_stop():
                s.run(lambda feeds: time.sleep(0.01) or {{}})
                print(s.global_step, flush=True)
        """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if int(line) >= 5:
            break
    proc.send_signal(2)  # SIGINT, as Ctrl-C
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    end = read_trace(trace)[-1]
    assert end["callback"] == "end" and end["outcome"] == "stopped"
    assert end["global_step"] >= 5


def test_configuration_errors_name_the_file_and_line(tmp_path):
    ini = write_ini(tmp_path, "[run]\nrun_dir = run\n\n[hook.log]\nplugin = logging_tensor\n"
                              "tensors = loss\nevery_n_iterr = 5\n")
    with pytest.raises(hookhost.ConfigError) as error:
        hookhost.MonitoredSession(ini)
    text = str(error.value)
    assert "hooks.ini:7" in text and "every_n_iterr" in text and "log" in text
    assert not os.path.exists(tmp_path / "run")  # nothing was started


def test_a_workload_section_is_refused_with_its_line(tmp_path):
    ini = write_ini(tmp_path, "[run]\nrun_dir = run\n[workload]\nname = linreg\n")
    with pytest.raises(hookhost.ConfigError, match=r"hooks.ini:3.*\[workload\]"):
        hookhost.MonitoredSession(ini)


def test_an_unknown_output_fetched_is_refused_before_the_step(tmp_path):
    py = TraceHook(str(tmp_path / "py.jsonl"), fetch=["accuracy"])
    ran = []
    with hookhost.MonitoredSession(hooks={"acc": py}, outputs=["loss"],
                                   run_dir=tmp_path / "run") as session:
        session.run(lambda feeds: ran.append(1) or {"loss": 1.0})
    report = {r["name"]: r for r in session.reports()}["acc"]
    assert report["disabled"] and "accuracy" in report["failure"] and "loss" in report["failure"]
    assert ran == [1]  # the other hooks' step ran


def test_a_step_that_does_not_return_a_fetched_output_fails_the_job_clearly(tmp_path):
    py = TraceHook(str(tmp_path / "py.jsonl"), fetch=["loss"])
    with hookhost.MonitoredSession(hooks=[py], outputs=["loss"],
                                   run_dir=tmp_path / "run") as session:
        session.run(lambda feeds: {"los": 1.0})
    assert session.result["outcome"] == "failed"
    assert "'loss'" in session.result["reason"]


def test_a_sandboxed_hook_that_segfaults_does_not_stop_the_loop(tmp_path):
    ini = write_ini(tmp_path, textwrap.dedent(f"""\
        [run]
        run_dir = {tmp_path / 'run'}
        plugin_dir = {FIXTURES}
        [hook.crash]
        plugin = crasher
        isolation = process
        on_crash = disable
        how = segv
        at_step = 2
        """))
    with hookhost.MonitoredSession(ini, outputs=()) as session:
        for _ in range(6):
            session.run(lambda feeds: {})
    assert session.result["outcome"] == "completed" and session.result["steps_run"] == 6
    assert session.global_step == 6
    report = {r["name"]: r for r in session.reports()}["crash"]
    assert report["disabled"] and "SIGSEGV" in report["failure"]


class Raises(hookhost.SessionRunHook):
    def after_run(self, run_context, run_values):
        raise ZeroDivisionError("hook bug")


def test_a_python_hook_exception_follows_its_on_error_policy(tmp_path):
    with hookhost.MonitoredSession(hooks={"bad": Raises()}, outputs=(),
                                   run_dir=tmp_path / "a") as session:
        for _ in range(3):
            session.run(lambda feeds: {})
    report = {r["name"]: r for r in session.reports()}["bad"]
    assert report["disabled"] and "ZeroDivisionError: hook bug" in report["failure"]
    assert session.result["outcome"] == "completed" and session.global_step == 3

    with hookhost.MonitoredSession(hooks={"bad": Raises()}, outputs=(), run_dir=tmp_path / "b",
                                   set=["hook.bad.on_error=fail"]) as session:
        session.run(lambda feeds: {})
        assert session.should_stop()
    assert session.result["outcome"] == "failed"
    assert "hook bug" in session.result["reason"]


def test_outputs_of_every_kind_reach_native_hooks(tmp_path):
    trace = tmp_path / "trace.jsonl"
    ini = write_ini(tmp_path, textwrap.dedent(f"""\
        [hook.native]
        plugin = lifecycle_trace
        path = {trace}
        fetch = t, strided, array, readonly, number, count, flag
        """))
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    readonly = np.arange(3, dtype=np.int64)
    readonly.setflags(write=False)
    outputs = {"t": base, "strided": base.t(), "array": np.ones(2, dtype=np.float64),
               "readonly": readonly, "number": 2.5, "count": 7, "flag": True}
    with hookhost.MonitoredSession(ini, outputs=list(outputs), run_dir=tmp_path / "run") as s:
        s.run(lambda feeds: outputs)
    fetched = [r for r in read_trace(trace) if r["callback"] == "after_run"][0]["fetched"]
    assert np.array(fetched["t"]).reshape(-1).tolist() == list(range(12))
    assert np.array(fetched["strided"]).reshape(-1).tolist() == \
        base.t().contiguous().reshape(-1).tolist()
    assert fetched["array"] == [1.0, 1.0]
    assert fetched["readonly"] == [0, 1, 2]
    assert fetched["number"] == 2.5 and fetched["count"] == 7
    assert fetched["flag"] in (True, 1)


def test_tensors_of_every_dtype_and_the_empty_one_reach_native_hooks(tmp_path):
    # bool is one PyTorch 1.13 cannot export through DLPack: it goes through its NumPy view.
    outputs = {"f16": torch.tensor([1.5], dtype=torch.float16),
               "bf16": torch.tensor([2.5], dtype=torch.bfloat16),
               "i8": torch.tensor([-3], dtype=torch.int8), "i16": torch.tensor([4], dtype=torch.int16),
               "i32": torch.tensor([5], dtype=torch.int32), "i64": torch.tensor([-6]),
               "u8": torch.tensor([7], dtype=torch.uint8), "b": torch.tensor([True, False]),
               "f64": torch.tensor(7.25, dtype=torch.float64), "empty": torch.zeros(0, 3),
               "grad": torch.ones(2, requires_grad=True) * 2}
    trace = tmp_path / "trace.jsonl"
    with hookhost.MonitoredSession(outputs=list(outputs), run_dir=tmp_path / "run", set=[
            "hook.t.plugin=lifecycle_trace", "hook.t.path=%s" % trace,
            "hook.t.fetch=" + ",".join(outputs)]) as s:
        s.run(lambda feeds: outputs)
    assert s.result["outcome"] == "completed", s.result
    fetched = [r for r in read_trace(trace) if r["callback"] == "after_run"][0]["fetched"]
    assert fetched == {"f16": [1.5], "bf16": [2.5], "i8": [-3], "i16": [4], "i32": [5],
                       "i64": [-6], "u8": [7], "b": [True, False], "f64": 7.25, "empty": [],
                       "grad": [2.0, 2.0]}


def test_cuda_tensors_reach_hooks(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device here (torch.cuda.is_available() is False)")
    model = torch.nn.Linear(2, 2).cuda()
    py = TraceHook(os.devnull, fetch=["weight"])
    with hookhost.MonitoredSession(hooks=[py], parameters=model, outputs=(),
                                   run_dir=tmp_path / "run") as s:
        s.run(lambda feeds: {})
    np.testing.assert_array_equal(py.values[-1][0], model.weight.detach().cpu().numpy())


class Interrupted(hookhost.SessionRunHook):
    """Ctrl-C while the hook's own Python runs (raised here as Python raises it from its handler)."""

    def __init__(self, at):
        self.at = at

    def after_run(self, run_context, run_values):
        if hookhost.global_step() == self.at:
            raise KeyboardInterrupt


def test_keyboard_interrupt_inside_a_python_hook_is_the_programs_not_the_hooks(tmp_path):
    trace = tmp_path / "py.jsonl"
    with pytest.raises(KeyboardInterrupt):
        with hookhost.MonitoredSession(hooks={"ctrl_c": Interrupted(at=2), "py": TraceHook(str(trace))},
                                       outputs=(), run_dir=tmp_path / "run") as session:
            for _ in range(10):
                session.run(lambda feeds: {})
    assert session.global_step == 2  # the loop did not go on
    assert session.result["outcome"] == "stopped"
    assert "KeyboardInterrupt" in session.result["reason"]
    report = {r["name"]: r for r in session.reports()}["ctrl_c"]
    assert not report["disabled"], report["failure"]  # not a failure of the hook
    assert read_trace(trace)[-1]["outcome"] == "stopped"


def test_ctrl_c_while_a_python_hook_sleeps_stops_the_loop(tmp_path):
    trace = tmp_path / "py.jsonl"
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent(f"""\
        import sys, time
        sys.path.insert(0, {PYTHON_DIR!r})
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        import hookhost
        from conftest import TraceHook

        class Slow(hookhost.SessionRunHook):
            def after_run(self, run_context, run_values):
                time.sleep(0.05)

        with hookhost.MonitoredSession(hooks={{"slow": Slow(), "py": TraceHook({str(trace)!r})}},
                                       outputs=(), run_dir={str(tmp_path / 'run')!r}) as s:
            while not s.should_stop():
                s.run(lambda feeds: {{}})
                print(s.global_step, flush=True)
        """))
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if int(line) >= 3:
            break
    proc.send_signal(2)  # most likely lands in the hook's sleep
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    assert "disabled" not in err
    end = read_trace(trace)[-1]
    assert end["callback"] == "end" and end["outcome"] == "stopped"


@pytest.mark.parametrize("fault", ["exit", "hang"])
def test_a_sandboxed_python_hook_that_exits_or_hangs_does_not_stop_the_loop(tmp_path, fault):
    (tmp_path / "faulty.py").write_text(textwrap.dedent("""\
        import os, time
        import hookhost

        class Faulty(hookhost.SessionRunHook):
            def __init__(self, fault):
                self.fault = fault

            def after_run(self, run_context, run_values):
                if hookhost.global_step() == 2:
                    if self.fault == "exit":
                        os._exit(3)
                    time.sleep(600)
        """))
    ini = write_ini(tmp_path, textwrap.dedent(f"""\
        [run]
        run_dir = run
        [hook.faulty]
        plugin = python_hook
        script = faulty.py
        class = Faulty
        args = {{"fault": "{fault}"}}
        isolation = process
        call_timeout_ms = 2000
        on_crash = disable
        """))
    trace = tmp_path / "py.jsonl"
    with hookhost.MonitoredSession(ini, hooks={"py": TraceHook(str(trace))}, outputs=()) as s:
        for _ in range(5):
            s.run(lambda feeds: {})
    assert s.result["outcome"] == "completed" and s.global_step == 5
    report = {r["name"]: r for r in s.reports()}["faulty"]
    assert report["disabled"]
    assert ("exited with status 3" if fault == "exit" else "2000") in report["failure"], \
        report["failure"]
    assert len([r for r in read_trace(trace) if r["callback"] == "after_run"]) == 5


def test_python_hooks_see_the_steps_own_values_as_read_only_views(tmp_path):
    made = []

    def step(feeds):
        out = {"loss": torch.tensor(3.0, requires_grad=True) * 1, "array": np.arange(4.0),
               "half": torch.tensor([1.5], dtype=torch.bfloat16)}
        made.append(out)
        return out
    py = TraceHook(str(tmp_path / "py.jsonl"), fetch=["loss", "array", "half"])
    with hookhost.MonitoredSession(hooks=[py], outputs=["loss", "array", "half"],
                                   run_dir=tmp_path / "run") as session:
        for _ in range(2):
            session.run(step)
    for out, (loss, array, half) in zip(made, py.values):
        assert np.shares_memory(loss, out["loss"].detach().numpy()) and float(loss) == 3.0
        assert np.shares_memory(array, out["array"]) and not array.flags.writeable
        assert out["array"].flags.writeable  # the program's own array is untouched
        # bfloat16 has no NumPy type: python_hook's own float32 copy.
        assert half.dtype == np.float32 and half.tolist() == [1.5]


def test_a_sandboxed_python_hook_that_exits_is_restarted_with_its_state(tmp_path, capfd):
    # The restart path: a new runner, create() with the last saved state_dict(), then the steps
    # after the lost one. The hook counts its after_run calls in its state.
    (tmp_path / "counting.py").write_text(textwrap.dedent("""\
        import os
        import hookhost

        class Counting(hookhost.SessionRunHook):
            def __init__(self):
                self.calls = 0
                self.restored = False

            def after_run(self, run_context, run_values):
                self.calls += 1
                if hookhost.global_step() == 3 and not self.restored:
                    os._exit(3)
                print("calls %d restored %s" % (self.calls, self.restored))

            def state_dict(self):
                return {"calls": self.calls}

            def load_state_dict(self, state):
                self.calls, self.restored = state["calls"], True
        """))
    ini = write_ini(tmp_path, textwrap.dedent("""\
        [run]
        run_dir = run
        [hook.counting]
        plugin = python_hook
        script = counting.py
        class = Counting
        isolation = process
        on_crash = restart
        """))
    with hookhost.MonitoredSession(ini, outputs=()) as s:
        for _ in range(6):
            s.run(lambda feeds: {})
    assert s.result["outcome"] == "completed" and s.global_step == 6
    report = {r["name"]: r for r in s.reports()}["counting"]
    assert not report["disabled"], report["failure"]
    assert report["callbacks"]["after_run"]["calls"] >= 5
    log = capfd.readouterr().err
    # Before the loss: its own count; after: the count its saved state held, then on from there.
    assert "calls 2 restored False" in log
    assert "calls 3 restored True" in log and "calls 5 restored True" in log, log


def test_control_from_another_thread_attaches_and_detaches_a_hook_at_step_boundaries(tmp_path):
    import threading
    import time
    trace = tmp_path / "trace.jsonl"
    ini = write_ini(tmp_path, textwrap.dedent(f"""\
        [run]
        run_dir = {tmp_path / 'run'}
        log_level = warn
        """))
    model = make_model()
    answers = {}

    def operator(session):
        while session.global_step < 3:
            time.sleep(0.005)
        answers["attach"] = session.control("attach", "late", "lifecycle_trace", "path=%s" % trace,
                                            "fetch=loss")
        with pytest.raises(hookhost.ControlError, match="unknown plugin 'nope'"):
            session.control("attach", "other", "nope")
        answers["status"] = session.control("status")
        answers["detach"] = session.control("detach", "late")
        session.control("stop", "the operator is done")

    with hookhost.MonitoredSession(ini, parameters=model) as session:
        thread = threading.Thread(target=operator, args=(session,))
        thread.start()
        while not session.should_stop():
            session.run(lambda feeds: {"loss": model(torch.ones(4)).sum()})
            time.sleep(0.002)
        thread.join()
    assert "attached hook 'late'" in answers["attach"]
    assert "late" in answers["status"] and "lifecycle_trace" in answers["status"]
    assert "detached hook 'late'" in answers["detach"]
    assert session.result["reason"] == "hookhost ctl: the operator is done"
    calls = [record["callback"] for record in read_trace(trace)]
    assert calls[:2] == ["begin", "after_create_session"]
    assert calls[-1] == "end" and calls.count("after_run") >= 1


def test_a_sandboxed_confined_native_hook_sees_what_it_sees_in_process(tmp_path, capfd):
    # confine = sandboxed is the default: the runner is under Landlock and the seccomp allow-list.
    base = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    outputs = {"t": base, "number": 2.5}
    fetched = {}
    for isolation in ("in_process", "process"):
        trace = tmp_path / isolation / "trace.jsonl"
        with hookhost.MonitoredSession(outputs=list(outputs), run_dir=tmp_path / isolation, set=[
                "hook.t.plugin=lifecycle_trace", "hook.t.isolation=" + isolation,
                "hook.t.fetch=t,number"]) as s:
            for _ in range(3):
                s.run(lambda feeds: outputs)
        assert s.result["outcome"] == "completed", s.result
        assert not {r["name"]: r for r in s.reports()}["t"]["disabled"]
        if isolation == "process":  # a confined hook's outputs are in its own run folder
            trace = tmp_path / isolation / "hooks" / "t" / "trace.jsonl"
        fetched[isolation] = [r["fetched"] for r in read_trace(trace)
                              if r["callback"] == "after_run"]
    assert len(fetched["process"]) == 3
    assert fetched["process"] == fetched["in_process"]
    log = capfd.readouterr()
    assert "confinement: sandboxed hooks run under a seccomp filter" in log.out + log.err
    assert "denied by its capability policy" not in log.out + log.err
    assert "could not be applied" not in log.out + log.err
