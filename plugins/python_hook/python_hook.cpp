// python_hook: runs a TensorFlow 1.x-style Python SessionRunHook class (hookhost.SessionRunHook,
// tf.train.SessionRunHook, or any object with those methods) inside an embedded CPython. One
// interpreter per process, started by the first instance and shared by all; each call holds the
// GIL only while it runs. The Python side (the `hookhost` package, compiled in) holds the API
// classes and the lifecycle calls that run once; this file runs before_run and after_run itself,
// with the CPython and NumPy C APIs, because they run every step.
// Confined, it reads the hook's script and the folders on its python_path; a `module` is found on
// those or on the interpreter's own path, part of the system's runtime. The `hookhost` Python
// package is compiled in: no file of it is read. The system's CA certificates are public, and
// Python's startup may read them (a site .pth file that extends certifi's bundle does).
#define HH_PLUGIN_NEEDS \
  HH_NEEDS_READ_PARAM(script) HH_NEEDS_READ_PARAM(python_path) HH_NEEDS_READ("/etc/ssl/certs")
#include <dlfcn.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <structmember.h>  // PyMemberDef: where SessionRunContext keeps its slots

#include <hookhost/ext/job.h>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <hookhost/hook.hpp>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace pybind11::literals;
namespace fs = std::filesystem;

namespace {

const char kHookhostPackageSource[] = {
#include "hookhost_py_source.inc"
    0};

// ---- the call running on this thread -----------------------------------------------------------

// What print(), logging and hookhost.global_step() inside a hook call need to know. A C++
// thread-local costs two stores per call; a Python threading.local costs more than the hook's
// own calls.
struct CallFrame {
  PyObject* instance;          // the _Instance (borrowed: the PythonHook holds it)
  const hookhost::Host* host;  // for the live global step, read only when Python asks
  int64_t step;
  bool step_known;
};
// Per thread: its Python thread state (made on its first call) and the call running on it. One
// trivially constructed variable, so a call reaches it with one TLS lookup and no guard.
struct PerThread {
  PyThreadState* state = nullptr;
  CallFrame* frame = nullptr;
  bool interrupted = false;  // the last error take_error() took was a KeyboardInterrupt
};
constinit thread_local PerThread t_thread;

class FrameScope {
 public:
  FrameScope(PerThread& thread, PyObject* instance, const hookhost::Host& host, int64_t step,
             bool step_known)
      : thread_(thread), frame_{instance, &host, step, step_known}, previous_(thread.frame) {
    thread_.frame = &frame_;
  }
  ~FrameScope() { thread_.frame = previous_; }
  FrameScope(const FrameScope&) = delete;
  FrameScope& operator=(const FrameScope&) = delete;

  int64_t step() {
    if (!frame_.step_known) {
      frame_.step = frame_.host->global_step();
      frame_.step_known = true;
    }
    return frame_.step;
  }

 private:
  PerThread& thread_;
  CallFrame frame_;
  CallFrame* previous_;
};

PyObject* current_instance(PyObject*, PyObject*) {
  CallFrame* f = t_thread.frame;
  PyObject* out = f ? f->instance : Py_None;
  Py_INCREF(out);
  return out;
}

PyObject* current_step(PyObject*, PyObject*) {
  CallFrame* f = t_thread.frame;
  if (!f) Py_RETURN_NONE;
  if (!f->step_known) {
    f->step = f->host->global_step();
    f->step_known = true;
  }
  return PyLong_FromLongLong(f->step);
}

// The library is never unloaded, so these stay valid for the interpreter's life.
PyMethodDef kCurrentInstance = {"_current", current_instance, METH_NOARGS,
                                "The _Instance whose call runs on this thread, or None."};
PyMethodDef kCurrentStep = {"_current_step", current_step, METH_NOARGS,
                            "The global step of the call running on this thread, or None."};

// ---- the interpreter ----------------------------------------------------------------------------

// hookhost dlopens plugins RTLD_LOCAL, so libpython's symbols (loaded as our dependency) are not
// global, and extension modules that do not link libpython (NumPy's) fail with "undefined
// symbol". Re-opening it RTLD_GLOBAL | RTLD_NOLOAD promotes the already loaded copy.
void make_libpython_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Py_IsInitialized), &info) != 0 && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);  // never closed: stays loaded
}

// Registers the compiled-in package as the module `hookhost`. Needs the GIL.
void install_hookhost_package() {
  py::module_ sys = py::module_::import("sys");
  py::object module = py::module_::import("types").attr("ModuleType")("hookhost");
  module.attr("__file__") = "<python_hook plugin>/hookhost/__init__.py";
  module.attr("__path__") = py::list();
  module.attr("_current") =
      py::reinterpret_steal<py::object>(PyCFunction_New(&kCurrentInstance, nullptr));
  module.attr("_current_step") =
      py::reinterpret_steal<py::object>(PyCFunction_New(&kCurrentStep, nullptr));
  sys.attr("modules")["hookhost"] = module;
  py::module_ builtins = py::module_::import("builtins");
  py::object code =
      builtins.attr("compile")(kHookhostPackageSource, module.attr("__file__"), "exec");
  builtins.attr("exec")(code, module.attr("__dict__"));
}

// The program imported the `hookhost` package itself (a MonitoredSession's process): the
// plugin's calls go through that module, which needs the plugin's view of the running call.
void adopt_hookhost_package() {
  py::module_ module = py::module_::import("hookhost");
  module.attr("_current") =
      py::reinterpret_steal<py::object>(PyCFunction_New(&kCurrentInstance, nullptr));
  module.attr("_current_step") =
      py::reinterpret_steal<py::object>(PyCFunction_New(&kCurrentStep, nullptr));
}

// What the per-step calls use, looked up once: classes, functions, interned names, descriptors.
struct Bridge {
  PyObject* instance_type;  // _Instance
  PyObject* context_type;   // SessionRunContext
  PyObject* args_type;      // SessionRunArgs
  PyObject* values_type;    // SessionRunValues
  PyObject* no_args;        // SessionRunArgs(None): original_args before before_run returns
  PyObject* describe;       // _describe(exc, frames, skip)
  PyObject* feeds;          // _feeds(feed_dict)
  PyObject* create;         // _create(...)
  PyObject* before_run;
  PyObject* after_run;
  PyObject* take_logs;
  PyObject* value_view;  // _value_view(name)
  PyObject* args;     // "_args"
  PyObject* results;  // "_results"
  PyObject* state_json;
};
Bridge* g_bridge = nullptr;  // never freed: the interpreter is never finalized by this plugin
// The interpreter is the program's (it runs its loop in Python, with Python's SIGINT handling),
// not one this plugin started.
bool g_programs_interpreter = false;

// SessionRunContext's own attributes are __slots__: the bridge reads and writes them in place.
struct ContextSlots {
  Py_ssize_t original_args, session, stop_requested, stop_asked;
};
ContextSlots g_slots{};

Py_ssize_t slot_offset(PyObject* type, const char* name) {
  py::object descr = py::reinterpret_borrow<py::object>(type).attr(name);
  if (!Py_IS_TYPE(descr.ptr(), &PyMemberDescr_Type))
    throw hookhost::Error(std::string("SessionRunContext.") + name + " is not a slot");
  return reinterpret_cast<PyMemberDescrObject*>(descr.ptr())->d_member->offset;
}

PyObject*& slot(PyObject* object, Py_ssize_t offset) {
  return *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(object) + offset);
}

// Sets a slot (a new reference to `value`), releasing what it held.
void set_slot(PyObject* object, Py_ssize_t offset, PyObject* value) {
  Py_XSETREF(slot(object, offset), Py_NewRef(value));
}

PyObject* interned(const char* text) {
  PyObject* s = PyUnicode_InternFromString(text);
  if (!s) throw py::error_already_set();
  return s;
}

void load_bridge() {
  py::module_ m = py::module_::import("hookhost");
  auto take = [&](const char* name) { return py::object(m.attr(name)).release().ptr(); };
  auto* b = new Bridge{};
  b->instance_type = take("_Instance");
  b->context_type = take("SessionRunContext");
  b->args_type = take("SessionRunArgs");
  b->values_type = take("SessionRunValues");
  b->no_args = py::reinterpret_borrow<py::object>(b->args_type)(py::none()).release().ptr();
  b->describe = take("_describe");
  b->feeds = take("_feeds");
  b->create = take("_create");
  b->value_view = take("_value_view");
  b->before_run = interned("before_run");
  b->after_run = interned("after_run");
  b->take_logs = interned("_take_logs");
  b->args = interned("_args");
  b->results = interned("_results");
  b->state_json = interned("_state_json");
  g_slots = {
      slot_offset(b->context_type, "_original_args"), slot_offset(b->context_type, "_session"),
      slot_offset(b->context_type, "_stop_requested"), slot_offset(b->context_type, "_stop_asked")};
  g_bridge = b;
}

// Starts the interpreter once per process; the caller does not hold the GIL before or after.
void ensure_interpreter() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    make_libpython_global();
    const bool ours = !Py_IsInitialized();
    g_programs_interpreter = !ours;
    // No signal handlers: SIGINT and SIGTERM stay the host's. No program folder on sys.path.
    if (ours) py::initialize_interpreter(false, 0, nullptr, false);
    {
      PyGILState_STATE gil = PyGILState_Ensure();  // someone else may embed Python here: theirs
      try {
        if (!py::module_::import("sys").attr("modules").contains("hookhost"))
          install_hookhost_package();
        else
          adopt_hookhost_package();
        if (_import_array() < 0) throw py::error_already_set();
        load_bridge();
      } catch (const std::exception& e) {
        failure = e.what();
      }
      PyGILState_Release(gil);
    }
    if (ours) PyEval_SaveThread();  // release the GIL for good; each call takes it back
  });
  if (!failure.empty())
    throw hookhost::Error("the embedded Python could not set up the hookhost package: " + failure);
}

// A thread Python did not know gets a thread state on its first call, kept for the thread's life:
// PyGILState_Release would otherwise create and destroy one around every call. It is the thread's
// PyGILState one, so code inside a call that uses PyGILState on this thread finds it.
struct MadeThreadState {
  PyThreadState* state = nullptr;
  ~MadeThreadState() {
    if (!state || !Py_IsInitialized()) return;
    PyEval_RestoreThread(state);
    PyGILState_Release(PyGILState_UNLOCKED);  // the last reference: clears the thread state
  }
};

PyThreadState* this_thread_state() {
  if (PyThreadState* known = PyGILState_GetThisThreadState()) return known;
  thread_local MadeThreadState made;
  PyGILState_Ensure();
  made.state = PyEval_SaveThread();
  return made.state;
}

// Holds the GIL for a scope; a thread that holds it already (an embedder calling from Python)
// keeps it.
class Gil {
 public:
  Gil() : thread_(t_thread) {
    if (!thread_.state) thread_.state = this_thread_state();
#if PY_VERSION_HEX >= 0x030D0000
    if (PyThreadState_GetUnchecked() == thread_.state) return;
#else
    if (_PyThreadState_UncheckedGet() == thread_.state) return;
#endif
    PyEval_RestoreThread(thread_.state);
    taken_ = true;
  }
  ~Gil() {
    if (taken_) PyEval_SaveThread();
  }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;
  PerThread& thread() {
    return thread_;
  }

 private:
  PerThread& thread_;
  bool taken_ = false;
};

// ---- small helpers
// --------------------------------------------------------------------------------

py::object steal(PyObject* p) {
  return py::reinterpret_steal<py::object>(p);
}

std::string utf8(PyObject* text) {
  Py_ssize_t size = 0;
  const char* data = text ? PyUnicode_AsUTF8AndSize(text, &size) : nullptr;
  if (!data) {
    PyErr_Clear();
    return "(text that is not valid UTF-8)";
  }
  return std::string(data, static_cast<size_t>(size));
}

// The pending Python exception as "Type: message" and the last frames of its traceback (the
// first `skip` frames left out); clears it, and drops every frame it held.
std::string take_error(int skip) {
  t_thread.interrupted = PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) != 0;
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  if (trace && value) PyException_SetTraceback(value, trace);
  std::string text = "(an error without an exception)";
  if (value) {
    py::object frames = steal(PyLong_FromLong(5)), skipped = steal(PyLong_FromLong(skip));
    PyObject* args[3] = {value, frames.ptr(), skipped.ptr()};
    PyObject* described =
        frames && skipped ? PyObject_Vectorcall(g_bridge->describe, args, 3, nullptr) : nullptr;
    if (described) {
      text = utf8(described);
      Py_DECREF(described);
    } else {
      PyErr_Clear();
      text = "(an exception that could not be described)";
    }
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(trace);
  return text;
}

// The NumPy type of an hh dtype; bfloat16 and unknown codes are converted to float32.
int numpy_type(hh_dtype dtype, bool* convert) {
  *convert = false;
  switch (dtype) {
    case HH_DTYPE_F32: return NPY_FLOAT32;
    case HH_DTYPE_F64: return NPY_FLOAT64;
    case HH_DTYPE_I32: return NPY_INT32;
    case HH_DTYPE_I64: return NPY_INT64;
    case HH_DTYPE_U8: return NPY_UINT8;
    case HH_DTYPE_BOOL: return NPY_BOOL;
    case HH_DTYPE_F16: return NPY_FLOAT16;
    case HH_DTYPE_I8: return NPY_INT8;
    case HH_DTYPE_I16: return NPY_INT16;
    default: *convert = true; return NPY_FLOAT32;
  }
}

// A string tensor as a read-only object array of bytes, made anew every time.
py::object string_array(const hookhost::TensorView& t) {
  const hh_tensor& raw = t.raw();
  py::tuple shape(raw.rank);
  for (uint32_t d = 0; d < raw.rank; ++d) shape[d] = py::int_(raw.shape[d]);
  py::list items;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string_view s = t.string_at(i);
    items.append(py::bytes(s.data(), s.size()));
  }
  py::object array = py::module_::import("numpy")
                         .attr("array")(items, "dtype"_a = "object")
                         .attr("reshape")(shape);
  array.attr("setflags")("write"_a = false);
  return array;
}

// Whether `slot` holds an array nothing but the bridge can see, laid out as a new one of this
// type and shape would be: only then may it be written again and handed out as this step's value.
bool reusable(PyObject* slot, int type, int rank, const npy_intp* dims) {
  if (!slot || Py_REFCNT(slot) != 1 || !PyArray_CheckExact(slot)) return false;
  auto* a = reinterpret_cast<PyArrayObject*>(slot);
  const PyArray_Descr* descr = PyArray_DESCR(a);
  if (descr->type_num != type || !PyArray_ISNBO(descr->byteorder) || PyArray_NDIM(a) != rank ||
      !PyArray_CHKFLAGS(a, NPY_ARRAY_OWNDATA) || PyArray_BASE(a) != nullptr)
    return false;
  // A weak reference would see the old value change.
  if (Py_TYPE(slot)->tp_weaklistoffset &&
      *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(slot) +
                                    Py_TYPE(slot)->tp_weaklistoffset) != nullptr)
    return false;
  npy_intp stride = descr->elsize;
  for (int d = rank - 1; d >= 0; --d) {
    if (PyArray_DIM(a, d) != dims[d] || PyArray_STRIDE(a, d) != stride) return false;
    stride *= dims[d];
  }
  return true;
}

// ---- the hook
// ------------------------------------------------------------------------------------

class PythonHook : public hookhost::Hook {
 public:
  explicit PythonHook(const hookhost::CreateContext& ctx) : Hook(ctx) {
    const int sources = params().has("script") + params().has("module") + params().has("object");
    if (sources != 1)
      throw hookhost::Error(sources == 0 ? "give one of 'script', 'module' or 'object'"
                                         : "give only one of 'script', 'module' and 'object'");
    std::string object;
    if (params().has("object")) {
      object = params().get_string("object");
      if (object.empty()) throw hookhost::Error("'object' must name a registered hook object");
      if (params().has("class"))
        throw hookhost::Error("'class' is not used with 'object': the object is the hook");
      class_name_ = object;
    } else {
      if (!params().has("class")) throw hookhost::Error("give 'class' with 'script' or 'module'");
      class_name_ = params().get_string("class");
      if (class_name_.empty()) throw hookhost::Error("'class' must name a class or function");
    }
    const fs::path base = config_dir();
    std::string script_given, script, module;
    if (!object.empty()) {
    } else if (params().has("script")) {
      script_given = params().get_string("script");
      if (script_given.empty()) throw hookhost::Error("'script' must name a .py file");
      script = (base / script_given).string();  // an absolute script_given replaces base
    } else {
      module = params().get_string("module");
      if (module.empty()) throw hookhost::Error("'module' must name an importable module");
    }
    std::vector<std::pair<std::string, std::string>> python_path;  // (absolute, as given)
    if (params().has("python_path"))
      for (const std::string& folder : params().get_string_list("python_path"))
        python_path.emplace_back((base / folder).lexically_normal().string(), folder);
    const std::string state = host().load_state();

    ensure_interpreter();
    Gil gil;
    try {
      const Bridge& b = *g_bridge;
      inst_ = py::reinterpret_borrow<py::object>(b.instance_type)(instance_name(), class_name_,
                                                                  host().run_dir().string());
      logs_ = inst_.attr("_logs");
      FrameScope frame(gil.thread(), inst_.ptr(), host(), 0, false);
      py::object result = steal(PyObject_CallFunctionObjArgs(
          b.create, inst_.ptr(), py::str(script).ptr(), py::str(script_given).ptr(),
          py::str(module).ptr(), py::str(object.empty() ? class_name_ : std::string()).ptr(),
          py::str(object).ptr(), py::str(params().get_string("args")).ptr(),
          py::cast(python_path).ptr(), state.empty() ? Py_None : py::str(state).ptr(), nullptr));
      if (!result) throw py::error_already_set();
      drain_logs();
      hook_ = inst_.attr("_hook");
      if (!object.empty()) class_name_ = py::str(hook_.get_type().attr("__name__"));
      step_objects_ = !object.empty();
      const auto implements = inst_.attr("_implements").cast<std::tuple<bool, bool, bool>>();
      implements_before_run_ = std::get<0>(implements);
      implements_after_run_ = std::get<1>(implements);
      saves_state_ = std::get<2>(implements);
    } catch (py::error_already_set& e) {
      drain_logs_quietly();
      const std::string message = one_line(config_message(e));
      release();
      throw hookhost::Error(message);
    } catch (...) {
      release();  // with the GIL, which is gone once the members are destroyed
      throw;
    }
  }

  ~PythonHook() override {
    Gil gil;
    release();
  }

  // Whether the runtime needs to call before_run / after_run at all: a hook without its own
  // before_run costs the step nothing there; after_run also saves a hook's state_dict(). The
  // callbacks answered false stay NULL in the C table, so the runtime never calls them.
  bool implements(hookhost::Callback callback) const override {
    if (callback == hookhost::Callback::before_run) return implements_before_run_;
    if (callback == hookhost::Callback::after_run) return implements_after_run_ || saves_state_;
    return true;
  }

  void begin() override {
    Gil gil;
    FrameScope frame(gil.thread(), inst_.ptr(), host(), host().global_step(), true);
    std::string error;
    if (!steal(PyObject_CallMethod(inst_.ptr(), "_begin", nullptr))) error = take_error(1);
    finish(frame, "begin", false, error);
  }

  void after_create_session(const hh_session_info& session) override {
    Gil gil;
    FrameScope frame(gil.thread(), inst_.ptr(), host(), session.global_step, true);
    std::string error;
    bool stop = false;
    py::object asked = steal(PyObject_CallMethod(inst_.ptr(), "_after_create_session", "iL",
                                                 static_cast<int>(session.creation),
                                                 static_cast<long long>(session.global_step)));
    if (!asked)
      error = take_error(1);
    else
      stop = asked.ptr() == Py_True;
    session_ = inst_.attr("_session");
    finish(frame, "after_create_session", stop, error);
  }

  void before_run(const hh_run_context& ctx, hookhost::RunRequest& request) override {
    Gil gil;
    FrameScope frame(gil.thread(), inst_.ptr(), host(), ctx.global_step, true);
    const Bridge& b = *g_bridge;
    std::string error;
    bool stop = false;
    py::object feeds;
    fetches_ = Fetches::none;
    name_count_ = 0;
    PyObject* context = prepare_context(ctx.stop_requested != 0);
    step_context_ = context != nullptr;
    if (!context) {
      error = "the python_hook bridge failed in before_run: " + take_error(0);
    } else {
      PyObject* args[2] = {hook_.ptr(), context};
      py::object result = steal(PyObject_VectorcallMethod(
          b.before_run, args, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr));
      stop = stop_asked(context);
      if (!result) {
        error = take_error(0);
      } else if (result.ptr() != Py_None) {
        if (read_args(result.ptr(), feeds)) {
          set_slot(context, g_slots.original_args, result.ptr());
        } else {
          error = take_error(1);
          fetches_ = Fetches::none;  // nothing of this step's request reaches the host
          name_count_ = 0;
        }
      }
    }
    finish(frame, "before_run", stop, error);
    for (std::size_t i = 0; i < name_count_; ++i) request.fetch(names_[i]);
    if (feeds) add_feeds(feeds, request);
  }

  void after_run(const hh_run_context& ctx, const hookhost::RunValues& values) override {
    Gil gil;
    // The live step, read only when the hook asks for it.
    FrameScope frame(gil.thread(), inst_.ptr(), host(), 0, false);
    std::string error;
    bool stop = false;
    if (implements_after_run_) {
      PyObject* context = step_context_ ? context_.ptr() : prepare_context(false);
      if (!context) {
        error = "the python_hook bridge failed in after_run: " + take_error(0);
      } else if (PyObject* run_values = prepare_values(values, error)) {
        const Bridge& b = *g_bridge;
        restart_context(context, ctx.stop_requested != 0);
        PyObject* args[3] = {hook_.ptr(), context, run_values};
        py::object result = steal(PyObject_VectorcallMethod(
            b.after_run, args, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, nullptr));
        if (!result) error = take_error(0);
        stop = stop_asked(context);
        release_values();
      }
    }
    step_context_ = false;
    finish(frame, "after_run", stop, error);
    if (saves_state_) save_state();
  }

  void end(const hh_end_info& info) override {
    Gil gil;
    FrameScope frame(gil.thread(), inst_.ptr(), host(), info.global_step, true);
    std::string error;
    py::object done = steal(
        PyObject_CallMethod(inst_.ptr(), "_end", "Lss", static_cast<long long>(info.global_step),
                            hh_outcome_name(info.outcome), info.reason ? info.reason : ""));
    if (!done) error = take_error(1);
    finish(frame, "end", false, error);
    if (saves_state_) save_state();
  }

 private:
  enum class Fetches { none, plan, python };
  enum class Node : uint8_t { name, none, list, tuple, dict };
  struct PlanNode {
    Node kind;
    uint32_t value;  // name: index into names_; list, tuple, dict: number of children
  };

  // Drops every Python object this instance holds; needs the GIL.
  void release() {
    arrays_.clear();
    keys_.clear();
    values_ = py::object();
    context_ = py::object();
    session_ = py::object();
    hook_ = py::object();
    logs_ = py::object();
    inst_ = py::object();
  }

  // hh.job/1's folder, or the working directory on a host without it.
  fs::path config_dir() const {
    const auto* job = host().service<hh_job_service>(HH_SERVICE_JOB);
    if (job && job->struct_size >= HH_JOB_SERVICE_SIZE && job->config_dir) {
      const char* dir = job->config_dir(host().raw());
      if (dir && *dir) return dir;
    }
    return fs::current_path();
  }

  // This step's SessionRunContext: last step's when nothing but the bridge holds it and the hook
  // gave it no attributes of its own (so no one can tell it from a new one), else a new one.
  PyObject* prepare_context(bool stop_requested) {
    const Bridge& b = *g_bridge;
    PyObject* stop = stop_requested ? Py_True : Py_False;
    PyObject* session = session_ ? session_.ptr() : Py_None;
    if (context_ && Py_REFCNT(context_.ptr()) == 1) {
      py::object dict = steal(PyObject_GenericGetDict(context_.ptr(), nullptr));
      if (dict && PyDict_CheckExact(dict.ptr()) && PyDict_GET_SIZE(dict.ptr()) == 0) {
        PyObject* c = context_.ptr();
        set_slot(c, g_slots.stop_requested, stop);
        set_slot(c, g_slots.stop_asked, Py_False);
        set_slot(c, g_slots.original_args, b.no_args);
        set_slot(c, g_slots.session, session);
        return c;
      }
      if (!dict) return nullptr;
    }
    PyObject* args[3] = {b.no_args, session, stop};
    context_ = steal(PyObject_Vectorcall(b.context_type, args, 3, nullptr));
    return context_.ptr();
  }

  // after_run's view of the step's context: TF's stop flags for after_run.
  static void restart_context(PyObject* context, bool stop_requested) {
    set_slot(context, g_slots.stop_requested, stop_requested ? Py_True : Py_False);
    set_slot(context, g_slots.stop_asked, Py_False);
  }

  // Whether the hook called run_context.request_stop() in this call.
  static bool stop_asked(PyObject* context) {
    PyObject* asked = slot(context, g_slots.stop_asked);
    if (!asked || asked == Py_False) return false;
    const int yes = PyObject_IsTrue(asked);
    PyErr_Clear();
    return yes == 1;
  }

  // What before_run returned: the fetch names and their structure, and the feeds. An exact
  // SessionRunArgs of plain str, list, tuple and dict fetches is read here; anything else
  // (namedtuples, other classes, mistakes) by the Python side. False with a Python error set.
  bool read_args(PyObject* args, py::object& feeds) {
    const Bridge& b = *g_bridge;
    if (Py_IS_TYPE(args, reinterpret_cast<PyTypeObject*>(b.args_type))) {
      PyObject* feed_dict = PyTuple_GET_ITEM(args, 1);
      const bool plain_feeds =
          feed_dict == Py_None || (PyDict_CheckExact(feed_dict) && PyDict_GET_SIZE(feed_dict) == 0);
      plan_.clear();
      keys_.clear();
      name_count_ = 0;
      if ((plain_feeds || PyDict_CheckExact(feed_dict)) && plan(PyTuple_GET_ITEM(args, 0), 0)) {
        fetches_ = Fetches::plan;
        if (plain_feeds) return true;
        PyObject* call_args[1] = {feed_dict};
        feeds = steal(PyObject_Vectorcall(b.feeds, call_args, 1, nullptr));
        return static_cast<bool>(feeds);
      }
      if (PyErr_Occurred()) return false;
    }
    py::object parsed = steal(PyObject_CallMethodOneArg(inst_.ptr(), g_bridge->args, args));
    if (!parsed) return false;
    name_count_ = 0;
    for (const py::handle name : parsed.cast<py::tuple>()[0]) {
      if (add_name(name.ptr()) < 0) {
        PyErr_SetString(PyExc_TypeError, "fetch names must be str in valid UTF-8");
        return false;
      }
    }
    feeds = parsed.cast<py::tuple>()[1];
    fetches_ = Fetches::python;
    return !PyErr_Occurred();
  }

  // The names of a fetch structure in order, each once, and the structure as plan_; false for
  // anything the Python side must read (with no error set) or deeper than sensible.
  bool plan(PyObject* f, int depth) {
    if (depth > 32) return false;  // a list holding itself, or near enough
    if (PyUnicode_CheckExact(f)) {
      const int index = add_name(f);
      if (index < 0) return false;
      plan_.push_back({Node::name, static_cast<uint32_t>(index)});
      return true;
    }
    if (f == Py_None) {
      plan_.push_back({Node::none, 0});
      return true;
    }
    if (PyList_CheckExact(f) || PyTuple_CheckExact(f)) {
      const bool list = PyList_CheckExact(f);
      const Py_ssize_t n = list ? PyList_GET_SIZE(f) : PyTuple_GET_SIZE(f);
      plan_.push_back({list ? Node::list : Node::tuple, static_cast<uint32_t>(n)});
      for (Py_ssize_t i = 0; i < n; ++i)
        if (!plan(list ? PyList_GET_ITEM(f, i) : PyTuple_GET_ITEM(f, i), depth + 1)) return false;
      return true;
    }
    if (PyDict_CheckExact(f)) {
      plan_.push_back({Node::dict, static_cast<uint32_t>(PyDict_GET_SIZE(f))});
      Py_ssize_t pos = 0;
      PyObject *key, *value;
      while (PyDict_Next(f, &pos, &key, &value)) {
        keys_.push_back(py::reinterpret_borrow<py::object>(key));
        if (!plan(value, depth + 1)) return false;
      }
      return true;
    }
    return false;
  }

  // The index of a fetch name, added when new; -1 (no error set) for text that is not UTF-8.
  int add_name(PyObject* name) {
    Py_ssize_t size = 0;
    const char* data = PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &size) : nullptr;
    if (!data) {
      PyErr_Clear();
      return -1;
    }
    const std::string_view text(data, static_cast<size_t>(size));
    for (std::size_t i = 0; i < name_count_; ++i)
      if (names_[i] == text) return static_cast<int>(i);
    if (name_count_ == names_.size()) names_.emplace_back();
    names_[name_count_].assign(text);  // reuses the string's storage from earlier steps
    return static_cast<int>(name_count_++);
  }

  void add_feeds(const py::object& feeds, hookhost::RunRequest& request) {
    for (const py::handle feed : feeds) {
      const auto item = feed.cast<py::tuple>();
      const auto name = item[0].cast<std::string>();
      const auto shape = item[2].cast<std::vector<int64_t>>();
      const auto bytes = item[3].cast<std::string_view>();
      hh_tensor t;
      hh_tensor_init(&t);
      t.name = name.c_str();
      t.dtype = item[1].cast<hh_dtype>();
      t.rank = static_cast<uint32_t>(shape.size());
      t.shape = shape.empty() ? nullptr : shape.data();
      t.data = bytes.data();
      t.byte_size = bytes.size();
      request.feed(t);  // the host copies it
    }
  }

  // This step's SessionRunValues, or nullptr with `error` set.
  PyObject* prepare_values(const hookhost::RunValues& values, std::string& error) {
    py::object results;
    if (fetches_ == Fetches::none) {
      results = py::none();
    } else if (!fill_arrays(values, error)) {
      return nullptr;
    } else if (fetches_ == Fetches::plan) {
      std::size_t node = 0, key = 0;
      results = steal(build(node, key));
    } else {
      py::dict by_name;
      for (std::size_t i = 0; i < name_count_; ++i) by_name[py::str(names_[i])] = arrays_[i];
      results = steal(PyObject_CallMethodOneArg(inst_.ptr(), g_bridge->results, by_name.ptr()));
    }
    if (!results) {
      error = "the python_hook bridge failed in after_run: " + take_error(0);
      return nullptr;
    }
    const Bridge& b = *g_bridge;
    if (values_ && Py_REFCNT(values_.ptr()) == 1) {  // a tuple only we can see: refill it
      PyObject* old = PyTuple_GET_ITEM(values_.ptr(), 0);
      PyTuple_SET_ITEM(values_.ptr(), 0, results.release().ptr());
      Py_DECREF(old);
      if (!PyObject_GC_IsTracked(values_.ptr())) PyObject_GC_Track(values_.ptr());
      return values_.ptr();
    }
    PyObject* args[3] = {results.ptr(), Py_None, Py_None};
    values_ = steal(PyObject_Vectorcall(b.values_type, args, 3, nullptr));
    if (!values_) error = "the python_hook bridge failed in after_run: " + take_error(0);
    return values_.ptr();
  }

  // Lets go of this step's results, so that arrays the hook did not keep can be refilled.
  void release_values() {
    if (!values_) return;
    if (Py_REFCNT(values_.ptr()) != 1) {
      values_ = py::object();  // the hook kept it: it is the hook's now
      return;
    }
    PyObject* old = PyTuple_GET_ITEM(values_.ptr(), 0);
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(values_.ptr(), 0, Py_None);
    Py_DECREF(old);
  }

  PyObject* build(std::size_t& node, std::size_t& key) {
    const PlanNode n = plan_[node++];
    switch (n.kind) {
      case Node::name: return Py_NewRef(arrays_[n.value].ptr());
      case Node::none: return Py_NewRef(Py_None);
      case Node::list:
      case Node::tuple: {
        const bool list = n.kind == Node::list;
        PyObject* out = list ? PyList_New(n.value) : PyTuple_New(n.value);
        if (!out) return nullptr;
        for (uint32_t i = 0; i < n.value; ++i) {
          PyObject* item = build(node, key);
          if (!item) {
            Py_DECREF(out);
            return nullptr;
          }
          if (list)
            PyList_SET_ITEM(out, i, item);
          else
            PyTuple_SET_ITEM(out, i, item);
        }
        return out;
      }
      case Node::dict: {
        py::object out = steal(PyDict_New());
        if (!out) return nullptr;
        for (uint32_t i = 0; i < n.value; ++i) {
          PyObject* k = keys_[key++].ptr();
          py::object item = steal(build(node, key));
          if (!item || PyDict_SetItem(out.ptr(), k, item.ptr()) != 0) return nullptr;
        }
        return out.release().ptr();
      }
    }
    return nullptr;
  }

  // arrays_[i] becomes the value of names_[i]: one copy of the host's data into NumPy memory,
  // into last step's array when nothing but the bridge holds it (no new allocation).
  bool fill_arrays(const hookhost::RunValues& values, std::string& error) {
    if (arrays_.size() < name_count_) arrays_.resize(name_count_);
    for (std::size_t i = 0; i < name_count_; ++i) {
      const hh_tensor* t = nullptr;
      if (i < values.size() && values[i].name() == names_[i])
        t = &values[i].raw();  // the host gives them in the order asked
      else
        t = values.find(names_[i]);
      if (!t) {
        error = "KeyError: no value for the fetch '" + names_[i] + "'";
        return false;
      }
      if (step_objects_) {
        py::str name(names_[i]);
        PyObject* view = PyObject_CallOneArg(g_bridge->value_view, name.ptr());
        if (!view) {
          error = "the python_hook bridge failed in after_run: " + take_error(0);
          return false;
        }
        if (view != Py_None) {
          arrays_[i] = steal(view);
          continue;
        }
        Py_DECREF(view);
      }
      if (!fill_array(arrays_[i], hookhost::TensorView(*t))) {
        error = "the python_hook bridge failed in after_run: " + take_error(0);
        return false;
      }
    }
    return true;
  }

  static bool fill_array(py::object& slot, const hookhost::TensorView& t) {
    const hh_tensor& raw = t.raw();
    if (raw.dtype == HH_DTYPE_STRING) {
      try {
        slot = string_array(t);
      } catch (py::error_already_set& e) {
        e.restore();
        return false;
      }
      return true;
    }
    if (raw.rank > NPY_MAXDIMS) {
      PyErr_Format(PyExc_ValueError, "a value of rank %u", static_cast<unsigned>(raw.rank));
      return false;
    }
    bool convert = false;
    const int type = numpy_type(raw.dtype, &convert);
    npy_intp dims[NPY_MAXDIMS];
    for (uint32_t d = 0; d < raw.rank; ++d) dims[d] = static_cast<npy_intp>(raw.shape[d]);
    const int rank = static_cast<int>(raw.rank);
    if (!reusable(slot.ptr(), type, rank, dims)) {
      slot = steal(PyArray_SimpleNew(rank, dims, type));
      if (!slot) return false;
    }
    auto* a = reinterpret_cast<PyArrayObject*>(slot.ptr());
    PyArray_CLEARFLAGS(a, NPY_ARRAY_WRITEABLE);
    char* out = static_cast<char*>(PyArray_DATA(a));
    const std::size_t count = t.size();
    if (convert) {
      for (std::size_t i = 0; i < count; ++i) {
        const auto v = static_cast<float>(t.at(i));
        std::memcpy(out + i * sizeof v, &v, sizeof v);
      }
      return true;
    }
    const std::size_t element = hh_dtype_size(raw.dtype);
    const char* data = static_cast<const char*>(raw.data);
    if (!raw.strides) {
      if (count) std::memcpy(out, data, count * element);
    } else {
      for (std::size_t i = 0; i < count; ++i)
        std::memcpy(out + i * element, data + hh_tensor_element_offset(&raw, i) * element, element);
    }
    return true;
  }

  // Logs, then the stop, then the error: a hook that logs and raises shows both.
  void finish(FrameScope& frame, const char* callback, bool stop, const std::string& error) {
    drain_logs();
    if (!error.empty() && std::exchange(t_thread.interrupted, false) && g_programs_interpreter) {
      // Ctrl-C reached Python while this hook ran in a program that runs its loop in Python: it
      // is the program's, not the hook's failure. The job stops, and the program sees its
      // KeyboardInterrupt again at its next line of Python. (An interpreter this plugin started
      // has no SIGINT handler to raise it: there, a hook that raises it has failed.)
      PyErr_SetInterrupt();
      host().request_stop(class_name_ + "." + callback +
                          " was interrupted by KeyboardInterrupt at global step " +
                          std::to_string(frame.step()));
      return;
    }
    if (stop)
      host().request_stop(class_name_ + "." + callback + " called request_stop() at global step " +
                          std::to_string(frame.step()));
    if (!error.empty()) throw hookhost::Error(one_line(error));
  }

  // A Python error's first line, for the one-line message the host logs and shows in the summary.
  // Its other lines (the traceback, a syntax error's source line and caret) go to this instance's
  // log first, one line each, so they read as Python printed them and the caret stays aligned.
  std::string one_line(const std::string& error) const {
    const std::size_t newline = error.find('\n');
    if (newline == std::string::npos) return error;
    std::string_view rest(error);
    rest.remove_prefix(newline + 1);
    while (!rest.empty()) {
      const std::size_t end = rest.find('\n');
      host().error(rest.substr(0, end));
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    const bool traceback = error.find("\nTraceback (") != std::string::npos;
    return error.substr(0, newline) + (traceback ? " (traceback above)" : " (details above)");
  }

  void drain_logs() {
    if (!logs_ || PyList_GET_SIZE(logs_.ptr()) == 0) return;
    py::object lines = steal(PyObject_CallMethodNoArgs(inst_.ptr(), g_bridge->take_logs));
    if (!lines)
      throw hookhost::Error("the python_hook bridge failed to read the output: " + take_error(0));
    for (const py::handle line : lines) {
      const auto pair = line.cast<py::tuple>();
      const auto level = pair[0].cast<std::string_view>();
      const auto text = pair[1].cast<std::string_view>();
      if (level == "error")
        host().error(text);
      else if (level == "warn")
        host().warn(text);
      else if (level == "debug")
        host().debug(text);
      else
        host().info(text);
    }
  }

  void drain_logs_quietly() noexcept {
    try {
      drain_logs();
    } catch (...) {
    }
  }

  void save_state() {
    py::object text = steal(PyObject_CallMethodNoArgs(inst_.ptr(), g_bridge->state_json));
    if (!text) throw hookhost::Error(class_name_ + ".state_dict() failed: " + take_error(1));
    if (text.ptr() != Py_None) host().save_state(text.cast<std::string_view>());
  }

  // The bridge's _ConfigError carries a message that names the parameter; anything else is a bug
  // in the bridge, shown with Python's words.
  static std::string config_message(py::error_already_set& e) {
    if (py::hasattr(e.type(), "__name__") &&
        e.type().attr("__name__").cast<std::string>() == "_ConfigError")
      return py::str(e.value()).cast<std::string>();
    return std::string("the embedded Python failed: ") + e.what();
  }

  std::string class_name_;
  py::object inst_;     // the bridge's _Instance
  py::object hook_;     // the hook object
  py::object logs_;     // inst_._logs, the very list the Python side appends to
  py::object session_;  // the _Session of the last session creation
  py::object context_;  // the step's SessionRunContext
  py::object values_;   // the step's SessionRunValues
  bool implements_before_run_ = false;
  bool implements_after_run_ = false;
  bool saves_state_ = false;
  // A hook object of a MonitoredSession: its values are read-only NumPy views of the step's own
  // tensors where the session has them (hookhost._value_view), not copies.
  bool step_objects_ = false;
  bool step_context_ = false;  // before_run prepared context_ for this step

  Fetches fetches_ = Fetches::none;
  std::vector<std::string> names_;  // the first name_count_ are this step's
  std::size_t name_count_ = 0;
  std::vector<PlanNode> plan_;      // the fetch structure, depth first
  std::vector<py::object> keys_;    // the dict keys of plan_, in order
  std::vector<py::object> arrays_;  // the value of names_[i] handed out last
};

}  // namespace

#define PYTHON_HOOK_PARAMS(P)                                                                   \
  P(script, STRING, OPTIONAL, "",                                                               \
    "the .py file defining the hook class (relative: to the configuration file's folder); or "  \
    "module")                                                                                   \
  P(module, STRING, OPTIONAL, "", "an importable module defining the hook class; or script")    \
  P(object, STRING, OPTIONAL, "",                                                               \
    "a hook object registered in this process (hookhost.MonitoredSession's hooks=); or script " \
    "or module")                                                                                \
  P(class, STRING, OPTIONAL, "",                                                                \
    "the hook class (or a function returning a hook) to construct; with script or module")      \
  P(args, STRING, DEFAULT, "{}", "a JSON object of keyword arguments for the constructor")      \
  P(python_path, STRING_LIST, OPTIONAL, "",                                                     \
    "folders put first on sys.path (relative: to the configuration file's folder)")

HOOKHOST_PLUGIN(PythonHook, "python_hook", "0.3.0",
                "Runs a TensorFlow-style Python SessionRunHook class in an embedded CPython",
                PYTHON_HOOK_PARAMS)
