// python_hook: runs a TensorFlow 1.x-style Python SessionRunHook class (hookhost.SessionRunHook,
// tf.train.SessionRunHook, or any object with those methods) inside an embedded CPython. One
// interpreter per process, started by the first instance and shared by all; each call holds the
// GIL only while it runs. The Python side (the `hookhost` package, compiled in) does the TF
// semantics; this file moves values, feeds, log lines, stops and state across the C ABI.
#include <dlfcn.h>
#include <pybind11/embed.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <hookhost/hook.hpp>
#include <mutex>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace pybind11::literals;

namespace {

const char kHookhostPackageSource[] = {
#include "hookhost_py_source.inc"
    0};

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
  sys.attr("modules")["hookhost"] = module;
  py::module_ builtins = py::module_::import("builtins");
  py::object code =
      builtins.attr("compile")(kHookhostPackageSource, module.attr("__file__"), "exec");
  builtins.attr("exec")(code, module.attr("__dict__"));
}

// Starts the interpreter once per process; the caller does not hold the GIL before or after.
void ensure_interpreter() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    make_libpython_global();
    if (Py_IsInitialized()) {
      // Someone else embeds Python in this process: use theirs.
      py::gil_scoped_acquire gil;
      if (!py::module_::import("sys").attr("modules").contains("hookhost"))
        install_hookhost_package();
      return;
    }
    // No signal handlers: SIGINT and SIGTERM stay the host's. No program folder on sys.path.
    py::initialize_interpreter(false, 0, nullptr, false);
    try {
      install_hookhost_package();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    PyEval_SaveThread();  // release the GIL for good; each call takes it back
  });
  if (!failure.empty())
    throw hookhost::Error("the embedded Python could not set up the hookhost package: " + failure);
}

// A fetched value as a read-only NumPy array (0-d for a scalar). Copied: the host's view is only
// valid during after_run, and a hook may keep what it gets.
py::object to_numpy(const py::module_& np, const hookhost::TensorView& t) {
  const hh_tensor& raw = t.raw();
  py::tuple shape(raw.rank);
  for (uint32_t d = 0; d < raw.rank; ++d) shape[d] = py::int_(raw.shape[d]);
  const std::size_t count = t.size();
  py::object array;
  if (raw.dtype == HH_DTYPE_STRING) {
    py::list items;
    for (std::size_t i = 0; i < count; ++i) {
      const std::string_view s = t.string_at(i);
      items.append(py::bytes(s.data(), s.size()));
    }
    array = np.attr("array")(items, "dtype"_a = "object").attr("reshape")(shape);
    array.attr("setflags")("write"_a = false);
    return array;
  }
  const char* dtype = nullptr;
  switch (raw.dtype) {
    case HH_DTYPE_F32: dtype = "float32"; break;
    case HH_DTYPE_F64: dtype = "float64"; break;
    case HH_DTYPE_I32: dtype = "int32"; break;
    case HH_DTYPE_I64: dtype = "int64"; break;
    case HH_DTYPE_U8: dtype = "uint8"; break;
    case HH_DTYPE_BOOL: dtype = "bool"; break;
    case HH_DTYPE_F16: dtype = "float16"; break;
    case HH_DTYPE_I8: dtype = "int8"; break;
    case HH_DTYPE_I16: dtype = "int16"; break;
    default: break;  // bfloat16 and unknown codes: converted to float32 below
  }
  std::string bytes;
  if (dtype) {
    const std::size_t element = hh_dtype_size(raw.dtype);
    bytes.resize(count * element);
    const char* data = static_cast<const char*>(raw.data);
    if (!raw.strides) {
      if (count) std::memcpy(bytes.data(), data, bytes.size());
    } else {
      for (std::size_t i = 0; i < count; ++i)
        std::memcpy(bytes.data() + i * element, data + hh_tensor_element_offset(&raw, i) * element,
                    element);
    }
  } else {
    dtype = "float32";
    bytes.resize(count * sizeof(float));
    for (std::size_t i = 0; i < count; ++i) {
      const auto v = static_cast<float>(t.at(i));
      std::memcpy(bytes.data() + i * sizeof v, &v, sizeof v);
    }
  }
  // frombuffer over immutable bytes gives a read-only array that keeps the bytes alive.
  array = np.attr("frombuffer")(py::bytes(bytes), "dtype"_a = dtype).attr("reshape")(shape);
  return array;
}

class PythonHook : public hookhost::Hook {
 public:
  explicit PythonHook(const hookhost::CreateContext& ctx) : Hook(ctx) {
    params().require_exactly_one("script", "module");
    const std::string& class_name = params().get_string("class");
    if (class_name.empty()) throw hookhost::Error("'class' must name a class or function");
    std::string script, module;
    if (params().has("script")) {
      script = params().get_string("script");
      if (script.empty()) throw hookhost::Error("'script' must name a .py file");
      // The host gives plugins no config-file folder: relative paths are the working directory's.
      script = std::filesystem::absolute(script).lexically_normal().string();
    } else {
      module = params().get_string("module");
      if (module.empty()) throw hookhost::Error("'module' must name an importable module");
    }
    std::vector<std::string> python_path;
    if (params().has("python_path")) python_path = params().get_string_list("python_path");
    const std::string state = host().load_state();

    ensure_interpreter();
    py::gil_scoped_acquire gil;
    try {
      py::module_ bridge = py::module_::import("hookhost");
      numpy_ = py::module_::import("numpy");
      py::object script_arg = script.empty() ? py::none() : py::object(py::str(script));
      py::object module_arg = module.empty() ? py::none() : py::object(py::str(module));
      py::object state_arg = state.empty() ? py::none() : py::object(py::str(state));
      instance_ = bridge.attr("_create")(instance_name(), script_arg, module_arg, class_name,
                                         params().get_string("args"), py::cast(python_path),
                                         host().run_dir().string(), state_arg);
      drain_logs(instance_.attr("_logs"));
      instance_.attr("_logs") = py::list();
    } catch (py::error_already_set& e) {
      throw hookhost::Error(config_message(e));
    }
  }

  ~PythonHook() override {
    py::gil_scoped_acquire gil;
    instance_ = py::object();
    numpy_ = py::module_();
  }

  void begin() override {
    py::gil_scoped_acquire gil;
    finish(call("begin", host().global_step()));
  }

  void after_create_session(const hh_session_info& session) override {
    py::gil_scoped_acquire gil;
    finish(call("after_create_session", session.global_step, session.creation));
  }

  void before_run(const hh_run_context& ctx, hookhost::RunRequest& request) override {
    py::gil_scoped_acquire gil;
    const py::object payload = finish(call("before_run", ctx.global_step, ctx.stop_requested != 0));
    if (payload.is_none()) return;
    const auto names = payload.cast<py::tuple>()[0].cast<std::vector<std::string>>();
    for (const std::string& name : names) request.fetch(name);
    for (const py::handle feed : payload.cast<py::tuple>()[1]) {
      const auto item = feed.cast<py::tuple>();
      const auto name = item[0].cast<std::string>();
      const auto shape = item[2].cast<std::vector<int64_t>>();
      const auto bytes = item[3].cast<std::string>();
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

  void after_run(const hh_run_context& ctx, const hookhost::RunValues& values) override {
    py::gil_scoped_acquire gil;
    py::dict by_name;
    for (std::size_t i = 0; i < values.size(); ++i) {
      const hookhost::TensorView t = values[i];
      by_name[py::str(std::string(t.name()))] = to_numpy(numpy_, t);
    }
    finish(call("after_run", host().global_step(), ctx.stop_requested != 0, by_name));
    save_state();
  }

  void end(const hh_end_info& info) override {
    py::gil_scoped_acquire gil;
    finish(call("end", info.global_step, hh_outcome_name(info.outcome), info.reason));
    save_state();
  }

 private:
  template <typename... Args>
  py::tuple call(const char* callback, Args&&... args) {
    try {
      return instance_.attr(callback)(std::forward<Args>(args)...).template cast<py::tuple>();
    } catch (py::error_already_set& e) {
      throw hookhost::Error(std::string("the python_hook bridge failed in ") + callback + ": " +
                            e.what());
    }
  }

  // Logs, then the stop, then the error: a hook that logs and raises shows both. Returns the
  // payload, or throws the hook's error.
  py::object finish(const py::tuple& result) {
    drain_logs(result[2]);
    if (!result[1].is_none()) host().request_stop(result[1].cast<std::string>());
    if (!result[0].is_none()) throw hookhost::Error(result[0].cast<std::string>());
    return result[3];
  }

  void drain_logs(const py::handle& lines) const {
    for (const py::handle line : lines) {
      const auto pair = line.cast<py::tuple>();
      const auto level = pair[0].cast<std::string>();
      const auto text = pair[1].cast<std::string>();
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

  void save_state() const {
    py::object text;
    try {
      text = instance_.attr("state_json")();
    } catch (py::error_already_set& e) {
      throw hookhost::Error(e.what());
    }
    if (!text.is_none()) host().save_state(text.cast<std::string>());
  }

  // The bridge's _ConfigError carries a message that names the parameter; anything else is a bug
  // in the bridge, shown with Python's words.
  static std::string config_message(py::error_already_set& e) {
    if (py::hasattr(e.type(), "__name__") &&
        e.type().attr("__name__").cast<std::string>() == "_ConfigError")
      return py::str(e.value()).cast<std::string>();
    return std::string("the embedded Python failed: ") + e.what();
  }

  py::module_ numpy_;
  py::object instance_;
};

}  // namespace

#define PYTHON_HOOK_PARAMS(P)                                                                    \
  P(script, STRING, OPTIONAL, "",                                                                \
    "the .py file defining the hook class (relative: to the working directory); or module")      \
  P(module, STRING, OPTIONAL, "", "an importable module defining the hook class; or script")     \
  P(class, STRING, REQUIRED, "", "the hook class (or a function returning a hook) to construct") \
  P(args, STRING, DEFAULT, "{}", "a JSON object of keyword arguments for the constructor")       \
  P(python_path, STRING_LIST, OPTIONAL, "", "folders put first on sys.path")

HOOKHOST_PLUGIN(PythonHook, "python_hook", "0.1.0",
                "Runs a TensorFlow-style Python SessionRunHook class in an embedded CPython",
                PYTHON_HOOK_PARAMS)
