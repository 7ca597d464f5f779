"""hookhost: TensorFlow 1.x's SessionRunHook API for hooks run by hookhost's python_hook plugin.

A class written against tf.train.SessionRunHook runs with its import changed to
``import hookhost as tf`` (``hookhost.train`` holds the same names as ``tf.train``), or
``import hookhost`` and ``hookhost.SessionRunHook``. Any object with the methods works.

The names starting with ``_`` are the bridge's side of the plugin, not part of the API.
"""

import collections
import importlib
import importlib.util
import json
import logging
import os
import sys
import traceback
import types

import numpy as np

__all__ = [
    "SessionRunHook", "SessionRunArgs", "SessionRunContext", "SessionRunValues",
    "session_run_hook", "global_step", "run_dir", "train", "NotAvailableInHookhost",
]


class SessionRunHook:
    """TF's base class: every method does nothing."""

    def begin(self):
        pass

    def after_create_session(self, session, coord):
        pass

    def before_run(self, run_context):
        return None

    def after_run(self, run_context, run_values):
        pass

    def end(self, session):
        pass


class SessionRunArgs(collections.namedtuple("SessionRunArgs", ["fetches", "feed_dict", "options"])):
    """What before_run returns: fetches (a name or any nesting of lists, tuples and dicts of
    names), feed_dict (name -> number or array), options (accepted, unused)."""

    def __new__(cls, fetches, feed_dict=None, options=None):
        return super().__new__(cls, fetches, feed_dict, options)


class SessionRunValues(collections.namedtuple("SessionRunValues",
                                              ["results", "options", "run_metadata"])):
    """What after_run gets: results has the structure of the fetches."""


class SessionRunContext:
    """Given to before_run and after_run of one step."""

    # Slots, so the plugin reads and resets them without dict lookups; a hook may still set
    # attributes of its own.
    __slots__ = ("_original_args", "_session", "_stop_requested", "_stop_asked", "__dict__",
                 "__weakref__")

    def __init__(self, original_args, session, stop_requested=False):
        self._original_args = original_args
        self._session = session
        self._stop_requested = bool(stop_requested)
        self._stop_asked = False

    @property
    def original_args(self):
        return self._original_args

    @property
    def session(self):
        return self._session

    @property
    def stop_requested(self):
        return self._stop_requested or self._stop_asked

    def request_stop(self):
        self._stop_asked = True


class _FunctionHook(SessionRunHook):
    def __init__(self, functions):
        for name, fn in functions.items():
            if fn is not None:
                setattr(self, name, fn)


def session_run_hook(begin=None, after_create_session=None, before_run=None, after_run=None,
                     end=None):
    """A hook from functions, as R tfestimators' session_run_hook()."""
    return _FunctionHook(dict(begin=begin, after_create_session=after_create_session,
                              before_run=before_run, after_run=after_run, end=end))


class NotAvailableInHookhost(AttributeError):
    """A TensorFlow name hookhost does not provide: there is no graph, so no global-step tensor
    (tf.train.get_global_step()) and no session.graph or session.run(). An AttributeError, so
    hasattr() and getattr(obj, name, default) still answer as for any missing attribute."""


_USE_INSTEAD = "not available in hookhost: use hookhost.global_step()"


class _Train(types.SimpleNamespace):
    """hookhost.train: the tf.train names hookhost has; any other is NotAvailableInHookhost."""

    def __getattr__(self, name):  # called only for a name not set below
        raise NotAvailableInHookhost("tf.train.%s is %s (the live global step; hookhost has no "
                                     "graph and no global-step tensor)" % (name, _USE_INSTEAD))


train = _Train(
    SessionRunHook=SessionRunHook, SessionRunArgs=SessionRunArgs,
    SessionRunContext=SessionRunContext, SessionRunValues=SessionRunValues)

# ---- the bridge ------------------------------------------------------------------------------

# The plugin puts _current() (the _Instance whose call runs on this thread, or None) and
# _current_step() (that call's global step, or None) into this module before running it. They read
# a C++ thread-local the plugin sets around each call: a threading.local set and cleared per call
# would cost more than the hook's own calls.
if "_current" not in globals():  # imported outside the plugin, e.g. to test a hook on its own
    def _current():
        return None

    def _current_step():
        return None


def global_step():
    """The live global step of the job (in after_run it already counts the step that ran)."""
    step = _current_step()
    return 0 if step is None else step


def run_dir():
    """The job's run directory."""
    inst = _current()
    return inst._run_dir if inst is not None else ""


class _Session:
    """The session given to after_create_session, run contexts and end; one per session creation,
    as TF passes its session. There is no graph: no run()."""

    def __init__(self, creation=0, global_step=0, outcome=None, reason=None):
        self.creation = creation
        self._global_step = global_step
        self.outcome = outcome
        self.reason = reason

    @property
    def global_step(self):
        """The live global step during a hook call, else the step the session was made at."""
        step = _current_step()
        return self._global_step if step is None else step

    def __repr__(self):
        return "hookhost session(creation=%r, global_step=%r, outcome=%r)" % (
            self.creation, self.global_step, self.outcome)

    def __getattr__(self, name):  # called only for a name the session does not have
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotAvailableInHookhost("session.%s is %s (or session.global_step; a hookhost "
                                     "session has no graph and no run())" % (name, _USE_INSTEAD))


class _Coordinator:
    def __init__(self, context):
        self._context = context

    def request_stop(self, ex=None):
        self._context.request_stop()

    def should_stop(self):
        return self._context.stop_requested


class _StreamToLog:
    """sys.stdout / sys.stderr: inside a hook call, complete lines go to the instance's logger."""

    def __init__(self, original, level):
        self._original = original
        self._level = level

    def write(self, text):
        inst = _current()
        if inst is None:
            return self._original.write(text) if self._original is not None else len(text)
        inst._write(self._level, text)
        return len(text)

    def flush(self):
        if self._original is not None and _current() is None:
            self._original.flush()

    def isatty(self):
        if _current() is None and self._original is not None:
            return self._original.isatty()  # the program's own output is what it was
        return False

    def __getattr__(self, name):
        return getattr(self._original, name)


class _LogHandler(logging.Handler):
    def emit(self, record):
        inst = _current()
        if inst is None:
            return
        if record.levelno >= logging.ERROR:
            level = "error"
        elif record.levelno >= logging.WARNING:
            level = "warn"
        elif record.levelno >= logging.INFO:
            level = "info"
        else:
            level = "debug"
        try:
            inst._logs.append((level, self.format(record)))
        except Exception:
            self.handleError(record)


def _install_streams():
    if not isinstance(sys.stdout, _StreamToLog):
        sys.stdout = _StreamToLog(sys.stdout, "info")
    if not isinstance(sys.stderr, _StreamToLog):
        sys.stderr = _StreamToLog(sys.stderr, "warn")
    root = logging.getLogger()
    if not any(isinstance(h, _LogHandler) for h in root.handlers):
        handler = _LogHandler()
        handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
        root.addHandler(handler)
        if root.level == logging.WARNING:  # the default: let the host's log level filter
            root.setLevel(logging.DEBUG)


class _ConfigError(Exception):
    """A create() failure; the message names the parameter."""


def _describe(exc, frames=5, skip=0):
    """'Type: message' and the last frames of the traceback, without the bridge's own frames."""
    tb = exc.__traceback__
    for _ in range(skip):
        if tb is not None:
            tb = tb.tb_next
    text = "%s: %s" % (type(exc).__name__, exc)
    stack = traceback.format_tb(tb)[-frames:] if tb is not None else []
    if stack:
        text += "\nTraceback (most recent call last, last %d frames):\n%s" % (
            len(stack), "".join(stack).rstrip("\n"))
    return text


_scripts = {}  # path -> (mtime, size, module): instances of one script share its classes


def _load_script(path, given):
    if not os.path.isfile(path):
        if os.path.isabs(given):
            raise _ConfigError("script: no such file %s" % path)
        raise _ConfigError("script: no such file %s (tried %s: a relative path is taken from the "
                           "configuration file's folder, or from the working directory when the "
                           "job has no configuration file)" % (given, path))
    stat = os.stat(path)
    loaded = _scripts.get(path)
    if loaded is not None and loaded[:2] == (stat.st_mtime_ns, stat.st_size):
        return loaded[2]
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # so the script imports the modules beside it
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        # Compiled here rather than by the loader, which would write __pycache__ into the
        # configuration's folder.
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except SyntaxError as e:
        raise _ConfigError("script: syntax error in %s, line %s: %s%s" % (
            e.filename, e.lineno, e.msg,
            ("\n    " + e.text.strip()) if e.text else "")) from None
    except BaseException as e:
        raise _ConfigError("script: importing %s failed: %s" % (
            path, _describe(e, skip=1))) from None
    sys.modules[name] = module
    _scripts[path] = (stat.st_mtime_ns, stat.st_size, module)
    return module


def _implements(hook, name):
    """Whether the hook has its own `name`: SessionRunHook's no-op is never called."""
    method = getattr(hook, name, None)
    if method is None:
        return False
    return getattr(method, "__func__", None) is not getattr(SessionRunHook, name)


# Hook objects a MonitoredSession passes to python_hook instances of this process (`object = KEY`).
_hook_objects = {}


def _value_view(name):
    """For a hook object: a read-only NumPy view of the running step's own value `name`, or None
    (the plugin then fills an array of its own). The installed package's MonitoredSession has
    the step's values; this copy of the file alone has none."""
    return None


def _create(inst, script, script_given, module_name, class_name, object_key, args_json,
            python_path, state_json):
    """Called by the plugin's create(), with `inst` as the running instance: makes the hook or
    raises _ConfigError. `script` and `python_path` are absolute already."""
    _install_streams()
    if object_key:
        hook = _hook_objects.get(object_key)
        if hook is None:
            raise _ConfigError("object: no hook object '%s' in this process (hook objects are "
                               "given to hookhost.MonitoredSession(hooks=...), which runs them "
                               "in its own process; a sandboxed hook needs script or module)"
                               % object_key)
        inst._object_key = object_key
        _set_hook(inst, hook, type(hook).__name__, state_json)
        return
    for folder, given in reversed(python_path):
        if not os.path.isdir(folder):
            inst._logs.append(("warn", "python_path: no folder %s%s" % (
                folder, "" if given == folder else " (from '%s')" % given)))
        if folder not in sys.path:
            sys.path.insert(0, folder)
    try:
        args = json.loads(args_json)
    except ValueError as e:
        raise _ConfigError("args: not valid JSON: %s" % e) from None
    if not isinstance(args, dict):
        raise _ConfigError("args: must be a JSON object of keyword arguments, not %s" %
                           type(args).__name__)
    if script:
        source = script
        module = _load_script(script, script_given)
    else:
        source = module_name
        try:
            module = importlib.import_module(module_name)
        except SyntaxError as e:
            raise _ConfigError("module: syntax error in %s, line %s: %s" % (
                e.filename, e.lineno, e.msg)) from None
        except BaseException as e:
            raise _ConfigError("module: importing %s failed: %s" % (
                module_name, _describe(e, skip=1))) from None
    cls = getattr(module, class_name, None)
    if cls is None:
        raise _ConfigError("class: %s defines no '%s'" % (source, class_name))
    if not callable(cls):
        raise _ConfigError("class: '%s' in %s is not callable" % (class_name, source))
    try:
        hook = cls(**args)
    except BaseException as e:
        raise _ConfigError("args: %s(**%s) failed: %s" % (class_name, args_json.strip(),
                                                          _describe(e, skip=1))) from None
    _set_hook(inst, hook, class_name, state_json)


def _set_hook(inst, hook, class_name, state_json):
    inst._hook = hook
    if state_json:
        loader = getattr(hook, "load_state_dict", None)
        if loader is None:
            inst._logs.append(("warn", "ignoring the saved state: %s has no load_state_dict"
                               % class_name))
        else:
            try:
                loader(json.loads(state_json))
            except BaseException as e:
                raise _ConfigError("state: %s.load_state_dict failed: %s" % (
                    class_name, _describe(e, skip=1))) from None
    inst._implements = (_implements(hook, "before_run"), _implements(hook, "after_run"),
                        getattr(hook, "state_dict", None) is not None)


def _flatten(fetches, names):
    """The names in a fetch structure, in order (each once)."""
    if isinstance(fetches, str):
        if fetches not in names:
            names.append(fetches)
    elif isinstance(fetches, dict):
        for value in fetches.values():
            _flatten(value, names)
    elif isinstance(fetches, (list, tuple)):
        for value in fetches:
            _flatten(value, names)
    elif fetches is not None:
        raise TypeError("fetches must be tensor names (str), or lists, tuples and dicts of them; "
                        "got %s" % type(fetches).__name__)
    return names


def _rebuild(fetches, values):
    if fetches is None:
        return None
    if isinstance(fetches, str):
        return values[fetches]
    if isinstance(fetches, dict):
        return type(fetches)((k, _rebuild(v, values)) for k, v in fetches.items())
    if isinstance(fetches, tuple) and hasattr(fetches, "_fields"):  # a namedtuple
        return type(fetches)(*(_rebuild(v, values) for v in fetches))
    if isinstance(fetches, tuple):
        return tuple(_rebuild(v, values) for v in fetches)
    return [_rebuild(v, values) for v in fetches]


# Feed dtypes: numpy's name -> hookhost's HH_DTYPE_* code.
_FEED_DTYPES = {"float32": 1, "float64": 2, "int32": 3, "int64": 4, "uint8": 5, "bool": 6,
                "float16": 8, "int8": 10, "int16": 11}


def _feeds(feed_dict):
    return [_feed(k, v) for k, v in feed_dict.items()]


def _feed(name, value):
    if not isinstance(name, str):
        raise TypeError("feed_dict keys must be tensor names (str), got %s" % type(name).__name__)
    array = np.ascontiguousarray(value)
    code = _FEED_DTYPES.get(array.dtype.name)
    if code is None:
        raise TypeError("feed_dict['%s']: dtype %s cannot be fed (use one of %s)" % (
            name, array.dtype.name, ", ".join(sorted(_FEED_DTYPES))))
    return (name, code, tuple(int(d) for d in array.shape), array.tobytes())


class _Instance:
    """One hook object and what the plugin reads back after each call. The plugin runs
    before_run and after_run itself; the rest goes through the methods below, which raise the
    hook's exception for the plugin to report."""

    def __init__(self, instance_name, class_name, run_dir_text):
        self._name = instance_name
        self._class_name = class_name
        self._run_dir = run_dir_text
        self._hook = None
        # (level, text) lines for the host's log; None marks output still without its newline.
        # The plugin keeps this very list and looks at its length after each call.
        self._logs = []
        self._partial = {"info": "", "warn": ""}
        self._pending = False
        self._fetches = None  # before_run's fetches, when the plugin left them to _args
        self._session = None
        self._implements = (False, False, False)  # before_run, after_run, state_dict
        self._object_key = None  # `object`: a MonitoredSession's hook object (_value_view)

    def _write(self, level, text):
        whole = self._partial[level] + text
        *lines, rest = whole.split("\n")
        self._partial[level] = rest
        for line in lines:
            self._logs.append((level, line))
        if rest and not self._pending:
            self._pending = True
            self._logs.append(None)

    def _take_logs(self):
        """The lines of the call that just ended, with output that had no final newline."""
        for level, rest in self._partial.items():
            if rest:
                self._logs.append((level, rest))
                self._partial[level] = ""
        self._pending = False
        lines = [line for line in self._logs if line is not None]
        del self._logs[:]
        return lines

    def _begin(self):
        method = getattr(self._hook, "begin", None)
        if method is not None:
            method()

    def _after_create_session(self, creation, step):
        """Returns whether the hook asked the coordinator to stop."""
        self._session = _Session(creation, step)
        context = SessionRunContext(None, None)
        method = getattr(self._hook, "after_create_session", None)
        if method is not None:
            method(self._session, _Coordinator(context))
        return context._stop_asked

    def _end(self, step, outcome, reason):
        session = self._session if self._session is not None else _Session(0, step)
        session.outcome = outcome
        session.reason = reason
        method = getattr(self._hook, "end", None)
        if method is not None:
            method(session)

    def _args(self, args):
        """What before_run returned, for the cases the plugin does not read itself: (fetch
        names, feeds); the fetches are kept for _results."""
        if not isinstance(args, SessionRunArgs) and not hasattr(args, "fetches"):
            raise TypeError("before_run must return None or SessionRunArgs, not %s"
                            % type(args).__name__)
        names = _flatten(args.fetches, [])
        feeds = [_feed(k, v) for k, v in (args.feed_dict or {}).items()]
        self._fetches = args.fetches
        return (names, feeds)

    def _results(self, values):
        return _rebuild(self._fetches, values)

    def _state_json(self):
        """The hook's state_dict() as JSON, or None when it has none."""
        getter = getattr(self._hook, "state_dict", None)
        if getter is None:
            return None
        return json.dumps(getter(), allow_nan=True)


# The training loop's side (hookhost.MonitoredSession), in the installed package only: the
# python_hook plugin compiles this file in alone, as a module without a package folder.
if globals().get("__path__"):
    from ._monitored_session import *  # noqa: E402,F401,F403
    from ._monitored_session import _value_view  # noqa: E402,F401,F811
    from ._monitored_session import __all__ as _loop_names
    __all__ += _loop_names
