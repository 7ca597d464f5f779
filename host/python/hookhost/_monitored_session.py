"""hookhost.MonitoredSession: hookhost's hooks around your own training loop.

    with hookhost.MonitoredSession(config="hooks.ini", hooks=[MyHook()],
                                   outputs=["loss"], parameters=model,
                                   state={"model": model, "optimizer": optimizer}) as session:
        while not session.should_stop():
            session.run(train_step, next(batches))   # train_step(feeds, batch) -> {"loss": ...}

Native hooks (.so plugins, in process or sandboxed) come from the configuration's [hook.NAME]
sections, exactly as for `hookhost run`; Python hook objects (TensorFlow's SessionRunHook methods)
from `hooks`. The C++ host runs them all: lifecycle order, failure policies, checkpoints.
"""

import io
import json
import os
import struct
import sys
import threading
import weakref

import numpy as np

from . import _distributed
from . import _hook_objects
from . import _layout
from ._distributed import PerRank

__all__ = ["MonitoredSession", "TorchRandomState", "PerRank", "ConfigError", "ControlError"]

class _Shown:
    """A session's step values that its Python hooks may view without a copy. The host sets
    `running` to (the step's returned values, the session's parameters) when the step returns and
    back to None when run() returns; `thread` is the thread whose run() that is. Each session has
    its own, so two sessions on two threads never see each other's values."""

    __slots__ = ("running", "thread")

    def __init__(self):
        self.running = None
        self.thread = None


# A hook object's key (python_hook's `object`) -> its session's _Shown.
_shown_by_hook = {}


def _value_view(name):
    """A read-only NumPy view of the running step's value `name` (an output or a parameter, on the
    CPU), sharing its memory, for the hook whose call runs on this thread; None when there is none,
    and python_hook copies the value. Only the calls on the step's own thread while its hooks run
    get views: an observer's calls, on its worker and steps later, get the copy the host took when
    its step ended, not the tensor the optimizer has changed since."""
    inst = sys.modules[__package__]._current()
    shown = _shown_by_hook.get(getattr(inst, "_object_key", None))
    if shown is None or shown.running is None or shown.thread != threading.get_ident():
        return None
    outputs, parameters = shown.running
    value = outputs.get(name) if hasattr(outputs, "get") else None
    if value is None:
        value = parameters.get(name)
    if value is None:
        return None
    if hasattr(value, "detach"):  # a PyTorch tensor
        if value.device.type != "cpu":
            return None
        try:
            array = value.detach().numpy()
        except (TypeError, RuntimeError):  # a type NumPy has not (bfloat16)
            return None
    elif isinstance(value, np.ndarray):
        array = value
    else:
        return None
    view = array.view()  # its own flags: the program's array stays writable
    view.flags.writeable = False
    return view


_HERE = os.path.dirname(os.path.abspath(__file__))


def _installation(relative):
    return os.path.normpath(os.path.join(_HERE, relative))


# The host library; its import also makes sure hookhost-runner is found for sandboxed hooks.
os.environ.setdefault("HOOKHOST_RUNNER", os.path.join(_installation(_layout.BIN_DIR),
                                                      "hookhost-runner"))
from . import _host  # noqa: E402  (after HOOKHOST_RUNNER is set)

ConfigError = _host.ConfigError


class ControlError(Exception):
    """A live-control request the job refused (MonitoredSession.control): the job's answer."""


def _named_parameters(parameters):
    """name -> tensor, from a module (named_parameters()), a mapping, or (name, tensor) pairs."""
    if parameters is None:
        return {}
    if hasattr(parameters, "named_parameters"):
        parameters = parameters.named_parameters()
    items = parameters.items() if hasattr(parameters, "items") else parameters
    named = {}
    for name, tensor in items:
        if not isinstance(name, str):
            raise TypeError("parameters: names must be str, got %s" % type(name).__name__)
        named[name] = tensor
    return named


def _weakly(method):
    """`method` for the host to call without holding its object: a session the program has let go
    of is freed with its job, which then lets go of the run directory."""
    ref = weakref.WeakMethod(method)

    def call(*args):
        bound = ref()
        if bound is None:
            raise RuntimeError("the MonitoredSession whose state this is was already freed")
        return bound(*args)
    return call


def _hook_name(hook, taken):
    base = getattr(hook, "name", None)
    if not isinstance(base, str) or not base:
        base = type(hook).__name__
    name, n = base, 2
    while name in taken:
        name, n = "%s_%d" % (base, n), n + 1
    return name


class TorchRandomState:
    """PyTorch's CPU random generator as a checkpointed object: state={"rng": TorchRandomState()}
    restores it on resume, so dropout and shuffles continue as in an uninterrupted run. In a
    job of several processes each process saves and restores its own (hookhost_per_rank)."""

    hookhost_per_rank = True

    def state_dict(self):
        import torch
        return {"cpu": torch.get_rng_state()}

    def load_state_dict(self, state):
        import torch
        torch.set_rng_state(state["cpu"])


class MonitoredSession:
    """Hooks around a training loop, as TensorFlow 1.x's MonitoredTrainingSession.

    config       an INI file: [run] and [hook.NAME] sections as for `hookhost run` (no [workload]:
                 the step is yours); errors name the file and line (hookhost.ConfigError)
    hooks        Python hook objects (begin, after_create_session, before_run, after_run, end),
                 run in this process by python_hook; a list, or a dict of instance name -> hook
    outputs      the names the step returns that hooks may fetch
    parameters   a torch.nn.Module (its named_parameters()), a dict or (name, tensor) pairs:
                 hooks fetch them by name, without a copy
    feedable     names hooks may feed; the step gets them in its `feeds` dict
    state        name -> object with state_dict()/load_state_dict() (model, optimizer, scheduler,
                 TorchRandomState()): saved in every checkpoint, restored on resume
    run_dir      the run directory (default: the config's [run] run_dir, else hookhost-run)
    save_checkpoint_steps   adds the built-in checkpoint_saver every N steps
    last_step    the step the loop ends at, for progress displays
    set          "section.key=value" overrides, as `hookhost run --set`
    plugin_dirs  folders searched for plugins before the config's
    fresh        move an existing run directory aside instead of resuming it
    feeds_as     "torch" (default when torch is imported) or "numpy": the type of feeds' values
    distributed  None: one process of a job of several when torch.distributed is initialised
                 (torchrun); "torch": initialise it from torchrun's environment first; "none":
                 one process regardless (docs/pytorch.md, "Several processes")
    A hook object with a `ranks` attribute ("chief", "all", "0,2") runs on those ranks only.
    """

    def __init__(self, config=None, hooks=(), *, outputs=("loss",), parameters=None, feedable=(),
                 state=None, run_dir=None, save_checkpoint_steps=None, last_step=None, set=(),
                 plugin_dirs=(), fresh=False, feeds_as=None, distributed=None):
        self._state = dict(state or {})
        for name, obj in self._state.items():
            if not (hasattr(obj, "state_dict") and hasattr(obj, "load_state_dict")):
                raise TypeError("state['%s']: %s has no state_dict()/load_state_dict()" % (
                    name, type(obj).__name__))
        self._distributed = _distributed.resolve(distributed)
        # Several processes: the chief's state is saved once, the per-rank objects by every rank.
        self._rank_objects = {name: obj for name, obj in self._state.items()
                              if self._distributed and _distributed.is_per_rank(obj)}
        if self._state and "torch" not in sys.modules:
            import torch  # noqa: F401  (checkpoints of state use torch.save and torch.load)
        # A type a checkpoint cannot keep is named now, not at every checkpoint (each of which
        # would fail): the walk only collects the tensors, it does not copy or write them.
        _encode_structure({name: obj.state_dict() for name, obj in self._state.items()}, [])
        overrides = []
        if run_dir is not None:
            overrides.append("run.run_dir=%s" % os.fspath(run_dir))
        if save_checkpoint_steps is not None:
            overrides += ["hook.checkpoint_saver.plugin=checkpoint_saver",
                          "hook.checkpoint_saver.save_steps=%d" % int(save_checkpoint_steps)]
        overrides += list(set)
        self._keys = []
        named_hooks = hooks.items() if hasattr(hooks, "items") else None
        taken = {}
        for hook in (hooks if named_hooks is None else []):
            taken[_hook_name(hook, taken)] = hook
        for name, hook in (named_hooks or []):
            taken[name] = hook
        self._shown = _Shown()
        for name, hook in taken.items():
            key = "%x:%s" % (id(self), name)
            _hook_objects[key] = hook
            _shown_by_hook[key] = self._shown
            self._keys.append(key)
            overrides += ["hook.%s.plugin=python_hook" % name, "hook.%s.object=%s" % (name, key)]
            ranks = getattr(hook, "ranks", None)
            if ranks is not None:  # Lightning's rank_zero_only, TensorFlow's chief_only_hooks
                overrides.append("hook.%s.ranks=%s" % (name, ranks))
        self._feedable = list(feedable)
        self._parameters = _named_parameters(parameters)
        self._feeds_as = feeds_as or ("torch" if "torch" in sys.modules else "numpy")
        dirs = [os.fspath(d) for d in plugin_dirs]
        self.result = None
        self._entered = False
        try:
            self._job = _host.Job(
                config=None if config is None else os.fspath(config), overrides=overrides,
                plugin_dirs=dirs, builtin_plugin_dir=_installation(_layout.PLUGIN_DIR), fresh=fresh, outputs=list(outputs),
                parameters=self._parameters, feedable=list(feedable),
                save=_weakly(self._save_state) if self._state else None,
                restore=_weakly(self._restore_state) if self._state else None, last_step=last_step,
                # The Python hooks see the step's own values (_value_view), set by the host.
                shown_to=self._shown if self._keys else None,
                distributed=_distributed.RankState(self._rank_objects, _encode_state,
                                                   _decode_state) if self._distributed else None)
        except BaseException:
            self._forget_hooks()
            raise

    # ---- the loop ---------------------------------------------------------------------------

    def __enter__(self):
        self._entered = True
        self._job.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self._job.request_stop("KeyboardInterrupt at global step %d" % self.global_step,
                                   signal=True)
        elif exc_type is not None:
            self._job.fail("the training loop raised %s: %s" % (exc_type.__name__, exc))
        else:
            self._job.complete("the training loop ended")
        self.close()
        return False

    def run(self, step, *args, **kwargs):
        """One step: the hooks' before_run, then step(feeds, *args, **kwargs), then their
        after_run. Returns what step returned: a dict of named tensors (the `outputs` hooks
        fetch). An exception of the step is raised here once the hooks' step has ended."""
        if not self._entered:
            raise RuntimeError("use the session in a `with` block (it calls begin and end)")
        if self._feedable and self._feeds_as == "torch":
            step = self._torch_feeds(step)
        self._shown.thread = threading.get_ident()
        return self._job.run(step, args, kwargs)

    def should_stop(self):
        """True once a hook asked to stop, a stop was requested, or the job failed."""
        return self._job.should_stop()

    @property
    def global_step(self):
        """Steps completed, counting those of the run this one resumed."""
        return self._job.global_step

    @property
    def run_dir(self):
        """This process's run directory: the job's on the chief, run_dir/rank-R on rank R."""
        return self._job.run_dir

    @property
    def rank(self):
        """This process's rank in torch.distributed's default group (0 with one process)."""
        return _distributed.rank_and_size()[0] if self._distributed else 0

    @property
    def world_size(self):
        return _distributed.rank_and_size()[1] if self._distributed else 1

    @property
    def is_chief(self):
        """Rank 0: the process that writes the job's checkpoints and runs chief-only hooks."""
        return self.rank == 0

    def request_stop(self, reason="requested by the training loop"):
        self._job.request_stop(reason)

    def request_checkpoint(self, reason="the training loop"):
        """A checkpoint (hooks' states and `state`) at the next step boundary."""
        self._job.request_checkpoint(reason)

    def control(self, *request):
        """A live-control request, as `hookhost ctl RUN_DIR` sends it: control("status"),
        control("attach", "NAME", "PLUGIN", "KEY=VALUE", ...), control("detach", "NAME"),
        control("set", "NAME.KEY=VALUE"), control("checkpoint"), control("stop", "REASON")
        (docs/operations.md). A set that widens what a hook may do needs control("set",
        "--allow-widen", "NAME.KEY=VALUE"). The request goes to the job in this process, not
        through its control socket, so no control token is needed. The change is made at the next step boundary: call it from another
        thread than the loop's, which would otherwise wait for itself (and be told "queued").
        Returns the job's answer; raises hookhost.ControlError with it when the job refuses."""
        ok, text = self._job.control([str(word) for word in request])
        if not ok:
            raise ControlError(text.rstrip("\n"))
        return text

    def last_checkpoint(self):
        return self._job.last_checkpoint()

    def reports(self):
        """Per hook: calls, failures and time per callback."""
        return self._job.reports()

    def close(self):
        """Delivers end() to every hook (once) and returns how the job ended: a dict with outcome
        ("completed", "stopped" or "failed"), reason, global_step and steps_run."""
        if self.result is None:
            try:
                self.result = self._job.close()
            finally:
                self._forget_hooks()
        return self.result

    # ---- the package's side -----------------------------------------------------------------

    @staticmethod
    def _torch_feeds(step):
        import torch

        def with_tensors(feeds, *args, **kwargs):
            if feeds:
                feeds = {k: torch.from_numpy(v) for k, v in feeds.items()}
            return step(feeds, *args, **kwargs)
        return with_tensors

    def _forget_hooks(self):
        for key in self._keys:
            _hook_objects.pop(key, None)
            _shown_by_hook.pop(key, None)
        self._keys = []

    def _save_state(self):
        return _encode_state({name: obj.state_dict() for name, obj in self._state.items()
                              if name not in self._rank_objects})

    def _restore_state(self, data):
        saved = _decode_state(data)
        # Per-rank objects come from this rank's own entry (a checkpoint of a job of several
        # processes has them there, not in the chief's state).
        missing = [name for name in self._state if name not in saved and
                   not _distributed.is_per_rank(self._state[name])]
        if missing:
            raise ValueError("the checkpoint holds no state for %s (it has: %s)" % (
                ", ".join(missing), ", ".join(sorted(saved)) or "nothing"))
        for name, obj in self._state.items():
            if name in saved and name not in self._rank_objects:
                obj.load_state_dict(saved[name])


# ---- the training state in a checkpoint -------------------------------------------------------
# What state_dict()s hold (containers, numbers, strings, tensors, NumPy arrays and scalars): the
# structure as JSON, with every tensor replaced by its index in a list of tensors that torch.save
# writes and torch.load(weights_only=True), PyTorch's restricted unpickler, reads (it builds
# tensors and containers and refuses any other object; PyTorch 1.13's takes tensors but not Python
# floats, which optimizers' state_dicts are full of). A NumPy array goes as its bytes in a uint8
# tensor (torch has no uint16/32/64), with its dtype and shape in the structure.
_STATE_MAGIC = b"hookhost-python-state/1\n"
# The NumPy dtype kinds a checkpoint keeps: bool, signed and unsigned ints, floats, complex.
_NUMPY_KINDS = "biufc"


def _encode_array(array, tensors, path):
    import torch
    if array.dtype.kind not in _NUMPY_KINDS or array.dtype.fields is not None:
        raise TypeError("%s: a NumPy %s of dtype %s cannot be checkpointed (NumPy arrays and "
                        "scalars of bool, integer, float and complex dtypes can): convert it in "
                        "state_dict()" % (path, type(array).__name__, array.dtype))
    data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    tensors.append(torch.from_numpy(data.copy()))
    return {"dtype": array.dtype.str, "shape": list(array.shape), "bytes": len(tensors) - 1}


def _decode_array(node, tensors):
    data = tensors[node["bytes"]].numpy()
    array = np.frombuffer(data.tobytes(), dtype=np.dtype(node["dtype"]))
    return array.reshape(node["shape"]).copy()  # writable, as the array saved was


def _encode(value, tensors, path):
    import torch
    if isinstance(value, torch.Tensor):
        tensors.append(value.detach())
        return {"tensor": len(tensors) - 1}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"v": value}
    if isinstance(value, np.ndarray):
        return {"ndarray": _encode_array(value, tensors, path)}
    if isinstance(value, np.generic):  # a NumPy scalar (np.float32(1), np.int64(3))
        return {"npscalar": _encode_array(np.asarray(value), tensors, path)}
    if isinstance(value, dict):
        return {"dict": [[_encode(k, tensors, path + "[key]"),
                          _encode(v, tensors, "%s[%r]" % (path, k))] for k, v in value.items()]}
    if type(value) in (list, tuple):
        return {type(value).__name__: [_encode(v, tensors, "%s[%d]" % (path, i))
                                       for i, v in enumerate(value)]}
    raise TypeError("%s: a %s cannot be checkpointed (state_dict() values may be tensors, NumPy "
                    "arrays and scalars, numbers, strings, None, and dicts, lists and tuples of "
                    "them): convert it in state_dict(), and back in load_state_dict()" % (
                        path, "%s.%s" % (type(value).__module__, type(value).__qualname__)
                        if type(value).__module__ != "builtins" else type(value).__name__))


def _decode(node, tensors):
    if "tensor" in node:
        return tensors[node["tensor"]]
    if "v" in node:
        return node["v"]
    if "ndarray" in node:
        return _decode_array(node["ndarray"], tensors)
    if "npscalar" in node:
        return _decode_array(node["npscalar"], tensors)[()]
    if "dict" in node:
        return {_decode(k, tensors): _decode(v, tensors) for k, v in node["dict"]}
    if "list" in node:
        return [_decode(v, tensors) for v in node["list"]]
    return tuple(_decode(v, tensors) for v in node["tuple"])


def _encode_structure(state, tensors):
    return {name: _encode(value, tensors, "state[%r]" % name) for name, value in state.items()}


def _encode_state(state):
    import torch
    tensors = []
    structure = json.dumps(_encode_structure(state, tensors)).encode()
    buffer = io.BytesIO()
    torch.save(tensors, buffer)
    return _STATE_MAGIC + struct.pack("<Q", len(structure)) + structure + buffer.getvalue()


def _decode_state(data):
    import torch
    if not data.startswith(_STATE_MAGIC):
        raise ValueError("the checkpoint's training state was not written by hookhost's "
                         "MonitoredSession")
    at = len(_STATE_MAGIC)
    (size,) = struct.unpack_from("<Q", data, at)
    structure = json.loads(data[at + 8:at + 8 + size])
    tensors = torch.load(io.BytesIO(data[at + 8 + size:]), weights_only=True)
    return {name: _decode(node, tensors) for name, node in structure.items()}
