// hookhost._host: the host library as a CPython extension, for the `hookhost` package's
// MonitoredSession. A Job (the configuration, plugins, run directory, resume, checkpoints) runs
// its hooks around StepSession, whose step is a Python callable. Values cross without copies:
// tensors through DLPack, arrays through the buffer protocol, each kept alive by the step's
// values until the hooks are done with them.
#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <hookhost/dlpack.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstring>
#include <functional>
#include <hookhost/host/job.hpp>
#include <hookhost/host/log_format.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "agreed_step_session.hpp"
#include "torch_communicator.hpp"

namespace py = pybind11;

namespace {

using hookhost::StepResult;
using hookhost::StepStatus;
using hookhost::Tensor;

// What a value's view points into is released with the GIL held (an exporter's deleter may touch
// Python objects), but the runtime drops a step's values on the training thread outside Python:
// they wait here, and the next entry into Python releases them all, without a GIL round trip each.
class Releases {
 public:
  using Release = void (*)(void*);
  void later(void* resource, Release release) {
    std::lock_guard lock(mutex_);
    pending_.emplace_back(resource, release);
  }
  void now() {  // with the GIL
    std::vector<std::pair<void*, Release>> due;
    {
      std::lock_guard lock(mutex_);
      due.swap(pending_);
    }
    for (auto& [resource, release] : due) release(resource);
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<void*, Release>> pending_;
};
Releases g_releases;

std::shared_ptr<const void> owner_of(void* resource, Releases::Release release) {
  return std::shared_ptr<const void>(
      resource, [release](const void* p) { g_releases.later(const_cast<void*>(p), release); });
}

// PyTorch's own DLPack export, looked up once torch is imported: a third of the cost of
// tensor.detach().__dlpack__(), and it takes a tensor that requires grad (the view shares its
// storage; hooks read, never write, it).
struct TorchExport {
  py::object tensor_type;
  py::object to_dlpack;
};
const TorchExport* torch_export() {
  // Never freed: its references would be dropped after the interpreter is gone.
  static const TorchExport* found = nullptr;
  if (!found) {
    py::dict modules = py::module_::import("sys").attr("modules");
    if (!modules.contains("torch")) return nullptr;
    py::module_ torch = py::reinterpret_borrow<py::module_>(modules["torch"]);
    found = new TorchExport{torch.attr("Tensor"), torch.attr("_C").attr("_to_dlpack")};
  }
  return found;
}

// A DLPack capsule's tensor, borrowed: the capsule is consumed ("used_dltensor"), and the managed
// tensor's deleter runs when the last view of it is gone.
Tensor from_dlpack_capsule(py::handle capsule, const std::string& name) {
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (!managed) throw py::error_already_set();
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  auto owner = owner_of(managed, [](void* p) {
    auto* m = static_cast<DLManagedTensor*>(p);
    if (m->deleter) m->deleter(m);
  });
  hh_tensor view;
  if (!hh_tensor_from_dlpack(&managed->dl_tensor, name.c_str(), &view))
    throw std::invalid_argument(
        "its DLPack tensor has a type, layout or device hookhost does not "
        "take (hookhost/dlpack.h lists them)");
  return Tensor::borrow(view, std::move(owner));
}

hh_dtype dtype_of_buffer(const Py_buffer& b) {
  const char* f = b.format ? b.format : "B";
  if (*f == '@' || *f == '=' || *f == '<') ++f;  // native order (the host is little-endian)
  const auto size = b.itemsize;
  switch (*f) {
    case 'f': return size == 4 ? HH_DTYPE_F32 : 0;
    case 'd': return size == 8 ? HH_DTYPE_F64 : 0;
    case 'e': return size == 2 ? HH_DTYPE_F16 : 0;
    case 'b': return HH_DTYPE_I8;
    case 'B': return HH_DTYPE_U8;
    case '?': return HH_DTYPE_BOOL;
    case 'h': return size == 2 ? HH_DTYPE_I16 : 0;
    case 'i':
    case 'l':
    case 'q': return size == 4 ? HH_DTYPE_I32 : size == 8 ? HH_DTYPE_I64 : 0;
    default: return 0;
  }
}

// An object with the buffer protocol (a NumPy array), borrowed; nullopt when its layout is one a
// view cannot describe (negative or unaligned strides), for the caller to copy.
std::optional<Tensor> from_buffer(py::handle value, const std::string& name) {
  auto* buffer = new Py_buffer{};
  if (PyObject_GetBuffer(value.ptr(), buffer, PyBUF_RECORDS_RO) != 0) {
    delete buffer;
    throw py::error_already_set();
  }
  auto owner = owner_of(buffer, [](void* p) {
    auto* b = static_cast<Py_buffer*>(p);
    PyBuffer_Release(b);
    delete b;
  });
  const hh_dtype dtype = dtype_of_buffer(*buffer);
  if (dtype == 0)
    throw std::invalid_argument(std::string("its element type '") +
                                (buffer->format ? buffer->format : "?") +
                                "' is not one hookhost takes (float16/32/64, int8/16/32/64, "
                                "uint8, bool)");
  if (buffer->ndim > HH_MAX_RANK)
    throw std::invalid_argument("its rank " + std::to_string(buffer->ndim) + " is above " +
                                std::to_string(HH_MAX_RANK));
  std::vector<int64_t> shape(buffer->shape, buffer->shape + buffer->ndim);
  std::vector<int64_t> strides(static_cast<size_t>(buffer->ndim));
  bool contiguous = true;
  int64_t expected = buffer->itemsize;
  for (int d = buffer->ndim - 1; d >= 0; --d) {
    const Py_ssize_t stride = buffer->strides[d];
    if (stride < 0 || stride % buffer->itemsize != 0) return std::nullopt;
    strides[static_cast<size_t>(d)] = stride / buffer->itemsize;
    if (shape[static_cast<size_t>(d)] > 1 && stride != expected) contiguous = false;
    expected *= shape[static_cast<size_t>(d)];
  }
  hh_tensor view;
  hh_tensor_init(&view);
  view.name = name.c_str();
  view.dtype = dtype;
  view.rank = static_cast<uint32_t>(buffer->ndim);
  view.shape = shape.data();
  view.strides = contiguous ? nullptr : strides.data();
  view.data = buffer->buf;
  std::size_t reach = 1;
  for (int d = 0; d < buffer->ndim && reach; ++d)
    reach = shape[static_cast<size_t>(d)] == 0
                ? 0
                : reach + static_cast<size_t>(shape[static_cast<size_t>(d)] - 1) *
                              static_cast<size_t>(strides[static_cast<size_t>(d)]);
  view.byte_size =
      contiguous ? static_cast<size_t>(buffer->len) : reach * static_cast<size_t>(buffer->itemsize);
  return Tensor::borrow(view, std::move(owner));
}

// A named value the step returned (or a parameter), as the hooks see it: a PyTorch tensor through
// DLPack (detached: the same storage), anything else with __dlpack__ the same way, an array
// through the buffer protocol, a Python number as a scalar. A CUDA tensor goes as its device view
// with a host copy made once per step for the hooks that do not take device values.
Tensor to_tensor(py::handle value, const std::string& name) {
  try {
    if (PyFloat_Check(value.ptr())) return Tensor::scalar_f64(PyFloat_AS_DOUBLE(value.ptr()));
    if (PyBool_Check(value.ptr())) return Tensor::scalar_bool(value.ptr() == Py_True);
    if (PyLong_Check(value.ptr())) return Tensor::scalar_i64(value.cast<int64_t>());
    if (const TorchExport* torch = torch_export();
        torch && PyObject_IsInstance(value.ptr(), torch->tensor_type.ptr()) == 1) {
      py::object tensor = py::reinterpret_borrow<py::object>(value);
      py::object capsule;
      try {
        capsule = torch->to_dlpack(tensor);
        const auto* exported =
            static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
        if (exported && exported->dl_tensor.device.device_type != kDLCPU) {
          // Hooks that declare hh.device-values/1 get the device's view; the others one host
          // copy, made once for all of them.
          Tensor on_device = from_dlpack_capsule(capsule, name);
          Tensor on_host =
              from_dlpack_capsule(torch->to_dlpack(tensor.attr("detach")().attr("cpu")()), name);
          return Tensor::with_host_copy(std::move(on_device), std::move(on_host));
        }
      } catch (py::error_already_set&) {
        // A type PyTorch 1.13 does not export (bool): its NumPy view, the same memory.
        py::object array = tensor.attr("detach")().attr("numpy")();
        if (auto borrowed = from_buffer(array, name)) return std::move(*borrowed);
        throw;
      }
      return from_dlpack_capsule(capsule, name);
    }
    if (PyObject_CheckBuffer(value.ptr())) {
      if (auto borrowed = from_buffer(value, name)) return std::move(*borrowed);
      py::object copy = py::module_::import("numpy").attr("ascontiguousarray")(value);
      return *from_buffer(copy, name);
    }
    if (py::hasattr(value, "__dlpack__")) {
      py::object tensor = py::reinterpret_borrow<py::object>(value);
      if (py::hasattr(tensor, "detach")) {  // PyTorch: no export of a tensor that needs grad
        tensor = tensor.attr("detach")();
        if (py::hasattr(tensor, "is_cuda") && tensor.attr("is_cuda").cast<bool>())
          tensor = tensor.attr("cpu")();
      }
      return from_dlpack_capsule(tensor.attr("__dlpack__")(), name);
    }
    py::object array = py::module_::import("numpy").attr("ascontiguousarray")(value);
    return *from_buffer(array, name);
  } catch (py::error_already_set& e) {
    if (e.matches(PyExc_KeyboardInterrupt)) throw;  // Ctrl-C: the caller stops the job
    throw std::invalid_argument(e.what());
  }
}

// A fed value for the step: a NumPy array of its own (feeds are small: a rate, a flag).
py::object to_numpy(const Tensor& t) {
  py::module_ np = py::module_::import("numpy");
  const hh_tensor v = t.view("");
  if (v.dtype == HH_DTYPE_STRING) {
    py::list items;
    for (const std::string& s : t.strings()) items.append(py::str(s));
    return np.attr("array")(items).attr("reshape")(py::cast(t.shape()));
  }
  const char* name = nullptr;
  bool convert = false;  // bfloat16 and unknown codes become float32
  switch (v.dtype) {
    case HH_DTYPE_F32: name = "float32"; break;
    case HH_DTYPE_F64: name = "float64"; break;
    case HH_DTYPE_I32: name = "int32"; break;
    case HH_DTYPE_I64: name = "int64"; break;
    case HH_DTYPE_U8: name = "uint8"; break;
    case HH_DTYPE_BOOL: name = "bool"; break;
    case HH_DTYPE_F16: name = "float16"; break;
    case HH_DTYPE_I8: name = "int8"; break;
    case HH_DTYPE_I16: name = "int16"; break;
    default: name = "float32"; convert = true;
  }
  py::object array = np.attr("empty")(py::cast(t.shape()), name);
  const std::size_t count = t.element_count();
  if (convert) {
    for (std::size_t i = 0; i < count; ++i)
      array.attr("flat")[py::int_(i)] = hh_tensor_get_double(&v, i);
    return array;
  }
  py::buffer_info info = py::buffer(array).request(true);
  if (count) std::memcpy(info.ptr, v.data, count * hh_dtype_size(v.dtype));
  return array;
}

std::string exception_text(py::error_already_set& e) {
  std::string type = py::str(e.type().attr("__name__"));
  std::string message = py::str(e.value());
  return message.empty() ? type : type + ": " + message;
}

// The user's training step as a hookhost session. The global step counts completed steps; the
// workload state is that count and the bytes the package's save function gives.
class StepSession final : public hookhost::Session {
 public:
  StepSession(std::vector<std::string> outputs, py::dict parameters,
              std::vector<std::string> feedable, py::object save, py::object restore,
              std::optional<int64_t> last_step, py::object shown_to)
      : shown_to_(std::move(shown_to)),
        outputs_(std::move(outputs)),
        parameters_(std::move(parameters)),
        feedable_(std::move(feedable)),
        save_(std::move(save)),
        restore_(std::move(restore)),
        last_step_(last_step) {
    for (const auto& name : outputs_) fetchable_.push_back(name);
    for (const auto item : parameters_) fetchable_.push_back(py::str(item.first));
    std::set<std::string> seen;
    for (const auto& name : fetchable_)
      if (!seen.insert(name).second)
        throw std::invalid_argument("'" + name +
                                    "' is both an output and a parameter name: rename the output");
  }

  void create(int) override {}
  int64_t global_step() const override { return global_step_; }
  std::vector<std::string> fetchable() const override { return fetchable_; }
  std::vector<std::string> feedable() const override { return feedable_; }
  std::optional<int64_t> last_step() const override { return last_step_; }

  // What the next run() calls: set by Job::run with the GIL held.
  void set_step(py::object step, py::tuple args, py::dict kwargs) {
    step_ = std::move(step);
    args_ = std::move(args);
    kwargs_ = std::move(kwargs);
  }
  py::object take_returned() { return std::exchange(returned_, py::object()); }
  // After the hooks' step: the step's values are no longer shown.
  void hide_values() {
    if (!shown_to_.is_none()) PyObject_SetAttr(shown_to_.ptr(), running_name_.ptr(), Py_None);
  }
  std::optional<py::error_already_set> take_error() { return std::exchange(error_, std::nullopt); }
  void on_interrupt(std::function<void(const std::string&)> stop) { stop_ = std::move(stop); }

  StepResult run(const std::vector<std::string>& fetches,
                 const hookhost::TensorMap& feeds) override {
    py::gil_scoped_acquire gil;
    g_releases.now();  // the previous step's values
    StepResult out;
    py::dict feed_dict;
    for (const auto& [name, value] : feeds) feed_dict[py::str(name)] = to_numpy(value);
    try {
      py::tuple args(args_.size() + 1);
      args[0] = feed_dict;
      for (std::size_t i = 0; i < args_.size(); ++i) args[i + 1] = args_[i];
      returned_ = step_(*args, **kwargs_);
    } catch (py::error_already_set& e) {
      return raised(e, "the step raised ", "in the step");
    }
    py::object mapping = returned_;
    // The Python hooks' views of the step's own values (hookhost._value_view), until run() ends.
    if (!shown_to_.is_none()) {
      py::tuple shown = py::make_tuple(returned_, parameters_);
      if (PyObject_SetAttr(shown_to_.ptr(), running_name_.ptr(), shown.ptr()) != 0)
        PyErr_Clear();  // hooks then get copies
    }
    if (!fetches.empty() && (mapping.is_none() || !py::hasattr(mapping, "get"))) {
      out.status = StepStatus::error;
      out.message = "the step returned " +
                    std::string(py::str(py::type::of(mapping).attr("__name__"))) +
                    ", and hooks fetch from it: return a dict of named tensors";
      return out;
    }
    for (const std::string& name : fetches) {
      py::str key(name);
      py::object value = parameters_.contains(key) ? parameters_[key] : mapping.attr("get")(key);
      if (value.is_none()) {
        out.status = StepStatus::error;
        out.message = "a hook fetches '" + name + "', and the step returned no value of that name";
        return out;
      }
      try {
        out.values.emplace(name, to_tensor(value, name));
      } catch (py::error_already_set& e) {  // a KeyboardInterrupt while it was converted
        return raised(e, "handing the step's value '" + name + "' to hooks raised ",
                      "while the step's value '" + name + "' was handed to hooks");
      } catch (const std::exception& e) {
        out.status = StepStatus::error;
        out.message = "the value '" + name + "' cannot be handed to hooks: " + e.what();
        return out;
      }
    }
    ++global_step_;
    return out;
  }

  // The step's Python raised `e` (in the step, or while its values were handed to hooks): Ctrl-C
  // stops the job (end() says so) and calls the step off, its hooks do not see it; anything else
  // fails the job. PyJob::run raises `e` again once the hooks' step has ended.
  StepResult raised(py::error_already_set& e, const std::string& what, const std::string& where) {
    StepResult out;
    const bool interrupted = e.matches(PyExc_KeyboardInterrupt);
    out.message = what + exception_text(e);
    error_.emplace(std::move(e));
    if (interrupted && stop_) {
      stop_("KeyboardInterrupt " + where + " at global step " + std::to_string(global_step_));
      out.status = StepStatus::cancelled;
    } else {
      out.status = StepStatus::error;
    }
    return out;
  }

  std::string save_state() const override {
    std::string bytes(sizeof(int64_t), '\0');
    std::memcpy(bytes.data(), &global_step_, sizeof global_step_);
    py::gil_scoped_acquire gil;
    if (!save_.is_none()) bytes += py::bytes(save_()).cast<std::string>();
    return bytes;
  }

  void restore_state(std::string_view bytes) override {
    if (bytes.size() < sizeof(int64_t))
      throw std::runtime_error("its workload state is not one a hookhost MonitoredSession wrote");
    std::memcpy(&global_step_, bytes.data(), sizeof global_step_);
    py::gil_scoped_acquire gil;
    if (!restore_.is_none())
      restore_(py::bytes(bytes.data() + sizeof(int64_t), bytes.size() - sizeof(int64_t)));
  }

 private:
  py::object shown_to_;  // the session's _Shown, whose `running` shows the step's values, or None
  py::str running_name_{"running"};
  std::vector<std::string> outputs_;
  py::dict parameters_;
  std::vector<std::string> feedable_;
  std::vector<std::string> fetchable_;
  py::object save_, restore_;
  std::optional<int64_t> last_step_;
  int64_t global_step_ = 0;
  py::object step_;
  py::tuple args_;
  py::dict kwargs_;
  py::object returned_;
  std::optional<py::error_already_set> error_;
  std::function<void(const std::string&)> stop_;
};

std::shared_ptr<spdlog::logger> make_logger(const std::string& level, const std::string& tag = "") {
  auto logger = std::make_shared<spdlog::logger>(
      "hookhost", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  // Plugin text (a hook's log(), a runner's output) escaped, as `hookhost run` writes it.
  logger->set_formatter(hookhost::escaped_log_formatter("[%H:%M:%S.%e] [%^%l%$] " + tag + "%*"));
  logger->set_level(spdlog::level::from_str(level));
  logger->flush_on(spdlog::level::warn);
  return logger;
}

py::dict result_dict(const hookhost::JobResult& r) {
  py::dict d;
  d["outcome"] = hookhost::outcome_name(r.outcome);
  d["reason"] = r.reason;
  d["global_step"] = r.global_step;
  d["steps_run"] = r.steps_run;
  d["checkpoint_failures"] = r.checkpoint_failures;
  d["checkpoint_error"] = r.checkpoint_error;
  return d;
}

// The job: hooks from the configuration (file and overrides) around a StepSession.
class PyJob {
 public:
  PyJob(std::optional<std::string> config, std::vector<std::string> overrides,
        std::vector<std::string> plugin_dirs, std::string builtin_plugin_dir, bool fresh,
        std::vector<std::string> outputs, py::dict parameters, std::vector<std::string> feedable,
        py::object save, py::object restore, std::optional<int64_t> last_step, py::object shown_to,
        py::object distributed) {
    std::optional<std::filesystem::path> file;
    if (config) file = *config;
    hookhost::JobOptions options;
    options.config = hookhost::load_job_config(file, overrides);
    for (const auto& dir : plugin_dirs) options.plugin_dirs.emplace_back(dir);
    options.builtin_plugin_dir = builtin_plugin_dir;
    options.fresh = fresh;
    // A job of several processes (torch.distributed): `distributed` holds the per-rank state.
    if (!distributed.is_none())
      options.communicator = hookhost_python::torch_communicator(
          std::chrono::milliseconds(options.config.collective_timeout_ms));
    const bool several = options.communicator && options.communicator->size() > 1;
    logger_ = make_logger(
        options.config.log_level,
        several ? "[rank " + std::to_string(options.communicator->rank()) + "] " : std::string());
    options.logger = logger_;
    spdlog::set_default_logger(logger_);  // the plugin loader's messages, in the same format
    session_ = std::make_unique<StepSession>(std::move(outputs), std::move(parameters),
                                             std::move(feedable), std::move(save),
                                             std::move(restore), last_step, std::move(shown_to));
    options.session = session_.get();
    if (several) {
      agreed_ = std::make_unique<hookhost_python::AgreedStepSession>(
          *session_, options.communicator, std::move(distributed));
      options.session = agreed_.get();
    }
    {
      // Creating hooks may run Python hooks (python_hook takes the GIL itself) and wait for
      // runners: without the GIL.
      py::gil_scoped_release release;
      job_ = std::make_unique<hookhost::Job>(std::move(options));
    }
    session_->on_interrupt([this](const std::string& why) {
      if (job_) job_->runtime().request_stop(HH_STOP_CAUSE_SIGNAL, why);
    });
  }

  ~PyJob() {
    {
      py::gil_scoped_release release;
      job_.reset();
    }
    g_releases.now();
  }

  bool start() {
    hookhost::Job& running = job();
    py::gil_scoped_release release;
    return running.runtime().start();
  }

  // One step around `step(feeds, *args, **kwargs)`; returns what it returned. The step's own
  // exception is raised again here, after the hooks' step has ended.
  py::object run(py::object step, py::tuple args, py::dict kwargs) {
    hookhost::Runtime& runtime = job().runtime();
    if (in_run_)
      throw std::logic_error(
          "run() called while this session's run() runs (from its step, one of its hooks or "
          "another thread): one step at a time; call run() from the training loop only");
    if (runtime.should_stop())
      throw std::logic_error("run() called after the session should stop (should_stop() is True)");
    session_->take_error();  // what a run() that threw left behind
    session_->take_returned();
    {
      OneRun one(*this, std::move(step), std::move(args), std::move(kwargs));
      py::gil_scoped_release release;
      runtime.run();
    }
    if (auto error = session_->take_error()) throw std::move(*error);
    py::object returned = session_->take_returned();
    return returned ? returned : py::none();  // None: the step was called off
  }

  bool should_stop() const { return !job_ || job_->runtime().should_stop(); }
  int64_t global_step() const { return job_ ? job_->session().global_step() : closed_.global_step; }
  std::string run_dir() const { return job_ ? job_->run_dir().string() : closed_.run_dir; }

  void request_stop(const std::string& reason, bool signal) {
    job().runtime().request_stop(signal ? HH_STOP_CAUSE_SIGNAL : HH_STOP_CAUSE_HOOK, reason);
  }
  void request_checkpoint(const std::string& reason) { job().runtime().request_checkpoint(reason); }
  // hookhost ctl's requests; waits for the step boundary without the GIL the loop needs.
  std::pair<bool, std::string> control(const std::vector<std::string>& words) {
    hookhost::ControlReply reply;
    hookhost::Job& running = job();
    {
      py::gil_scoped_release release;
      reply = running.control(words);
    }
    return {reply.ok, reply.text};
  }
  void fail(const std::string& reason) { job().runtime().fail_job(reason); }
  void complete(const std::string& reason) { job().runtime().complete(reason); }

  // Ends the job, and lets it go at once: the run folder's lock and the control socket are free
  // when close() returns, not when Python collects the session. What a closed session still
  // answers (reports, the last checkpoint, the step, the folder) is kept.
  py::dict close() {
    hookhost::Job& running = job();
    hookhost::JobResult result;
    {
      py::gil_scoped_release release;
      result = running.runtime().close();
    }
    g_releases.now();
    closed_.reports = reports();
    closed_.last_checkpoint = last_checkpoint();
    closed_.global_step = global_step();
    closed_.run_dir = run_dir();
    {
      py::gil_scoped_release release;
      job_.reset();
    }
    g_releases.now();
    return result_dict(result);
  }

  py::list reports() const {
    if (!job_) return closed_.reports;
    py::list out;
    for (const auto& r : job_->runtime().reports()) {
      py::dict d;
      d["name"] = r.instance_name;
      d["plugin"] = r.plugin_id;
      d["disabled"] = r.disabled;
      d["failure"] = r.failure;
      py::dict callbacks;
      for (const auto& [callback, stats] : r.callbacks) {
        py::dict c;
        c["calls"] = stats.calls;
        c["failures"] = stats.failures;
        c["mean_ns"] = stats.mean().count();
        c["max_ns"] = stats.max.count();
        callbacks[py::str(callback)] = c;
      }
      d["callbacks"] = callbacks;
      out.append(d);
    }
    return out;
  }

  // The step of one run(), from before runtime.run() until after it, however it ends (returns or
  // throws): then the step and its arguments are dropped, its values hidden from the Python hooks
  // and released. Made and ended with the GIL held.
  class OneRun {
   public:
    OneRun(PyJob& job, py::object step, py::tuple args, py::dict kwargs) : job_(job) {
      job_.in_run_ = true;
      job_.session_->set_step(std::move(step), std::move(args), std::move(kwargs));
    }
    OneRun(const OneRun&) = delete;
    OneRun& operator=(const OneRun&) = delete;
    ~OneRun() {
      job_.in_run_ = false;
      try {
        job_.session_->set_step(py::none(), py::tuple(), py::dict());
        job_.session_->hide_values();
        g_releases.now();
      } catch (...) {  // a failed allocation: nothing else to do in a destructor
      }
    }

   private:
    PyJob& job_;
  };

  std::optional<std::string> last_checkpoint() const {
    if (!job_) return closed_.last_checkpoint;
    auto written = job_->runtime().last_checkpoint();
    if (!written) return std::nullopt;
    return written->file.string();
  }

 private:
  std::shared_ptr<spdlog::logger> logger_;
  std::unique_ptr<StepSession> session_;  // outlives the job, which runs around it
  std::unique_ptr<hookhost_python::AgreedStepSession> agreed_;  // around session_, when several
  std::unique_ptr<hookhost::Job> job_;                          // null once closed
  struct Closed {
    py::list reports;
    std::optional<std::string> last_checkpoint;
    int64_t global_step = 0;
    std::string run_dir;
  } closed_;
  bool in_run_ = false;

  hookhost::Job& job() const {
    if (!job_) throw std::logic_error("the session is closed");
    return *job_;
  }  // in run(), on the thread that holds the GIL when it checks
};

}  // namespace

PYBIND11_MODULE(_host, m) {
  m.doc() = "hookhost's host library: the part of hookhost.MonitoredSession written in C++";
  py::register_exception<hookhost::ConfigError>(m, "ConfigError", PyExc_ValueError);
  py::class_<PyJob>(m, "Job")
      .def(py::init<std::optional<std::string>, std::vector<std::string>, std::vector<std::string>,
                    std::string, bool, std::vector<std::string>, py::dict, std::vector<std::string>,
                    py::object, py::object, std::optional<int64_t>, py::object, py::object>(),
           py::arg("config"), py::arg("overrides"), py::arg("plugin_dirs"),
           py::arg("builtin_plugin_dir"), py::arg("fresh"), py::arg("outputs"),
           py::arg("parameters"), py::arg("feedable"), py::arg("save"), py::arg("restore"),
           py::arg("last_step"), py::arg("shown_to"), py::arg("distributed") = py::none())
      .def("start", &PyJob::start)
      .def("run", &PyJob::run)
      .def("should_stop", &PyJob::should_stop)
      .def_property_readonly("global_step", &PyJob::global_step)
      .def_property_readonly("run_dir", &PyJob::run_dir)
      .def("request_stop", &PyJob::request_stop, py::arg("reason"), py::arg("signal") = false)
      .def("request_checkpoint", &PyJob::request_checkpoint)
      .def("control", &PyJob::control)
      .def("fail", &PyJob::fail)
      .def("complete", &PyJob::complete)
      .def("close", &PyJob::close)
      .def("reports", &PyJob::reports)
      .def("last_checkpoint", &PyJob::last_checkpoint);
}
