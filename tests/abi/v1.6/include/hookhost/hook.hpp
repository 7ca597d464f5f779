// hookhost C++ SDK: a thin, header-only layer over the C ABI.
//
// An author derives from hookhost::Hook, overrides only the callbacks it needs, and exports the
// class with HOOKHOST_PLUGIN. The SDK implements the C ABI: it turns every exception into an error
// status with its message (hookhost::FatalError into HH_ERROR_FATAL) and never lets one escape.
//
//   #define PARAMS(P) P(threshold, FLOAT, DEFAULT, "0.01", "stop below this loss")
//   class LossThreshold : public hookhost::Hook {
//    public:
//     explicit LossThreshold(const hookhost::CreateContext& ctx)
//         : Hook(ctx), threshold_(params().get_float("threshold")) {}
//     void before_run(const hh_run_context&, hookhost::RunRequest& request) override {
//       request.fetch("loss");
//     }
//     void after_run(const hh_run_context&, const hookhost::RunValues& values) override {
//       if (values.scalar("loss") < threshold_) host().request_stop("loss below threshold");
//     }
//    private:
//     double threshold_;
//   };
//   HOOKHOST_PLUGIN(LossThreshold, "loss_threshold", "1.0.0", "Stops below a loss", PARAMS)
#ifndef HOOKHOST_HOOK_HPP
#define HOOKHOST_HOOK_HPP

// The SDK needs C++20 (std::span, ...): say so at once instead of failing deep inside this header.
// GCC 12 and Clang 14 set __cplusplus to 202002L for -std=c++20 and -std=gnu++20, and higher for
// later standards. (MSVC, which needs /Zc:__cplusplus for a true value, is not supported.)
#if !defined(__cplusplus) || __cplusplus < 202002L
#error "hookhost/hook.hpp (the hookhost C++ SDK) needs C++20: compile with -std=c++20 (CMake: set CMAKE_CXX_STANDARD to 20). A C plugin includes <hookhost/hookhost.h> instead, which needs only C99."
#else

#include <cxxabi.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "hookhost.h"
#include "sdk/callback.hpp"

namespace hookhost {

// Thrown by a hook: the call fails with HH_ERROR and this message; the host applies on_error.
// Any other exception fails the call too, its message led by its type ("std::out_of_range:
// map::at"), since a library's what() alone rarely says where it came from.
// Thrown from the constructor (create), any exception refuses the instance: a configuration
// error, and the job does not start.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown by a hook whose state is broken: the call fails with HH_ERROR_FATAL and the host
// disables the instance whatever its on_error (`stop` and `fail` still stop or fail the job).
// Not derived from Error: catch (const Error&) does not catch it.
class FatalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An hh_error ready to hand to a host service (hh.summary/1).
inline hh_error make_error() {
  hh_error err;
  hh_error_init(&err);
  return err;
}

// A read-only view of one tensor; valid only during the call that received it, and so is
// everything it returns (name, shape, strides, string_at, raw).
class TensorView {
 public:
  explicit TensorView(const hh_tensor& t) : t_(&t) {}
  std::string_view name() const { return t_->name; }
  hh_dtype dtype() const { return t_->dtype; }
  // `rank` extents; empty for a scalar.
  std::span<const int64_t> shape() const { return {t_->shape, t_->rank}; }
  // Strides in elements; empty when the view is contiguous row-major.
  std::span<const int64_t> strides() const {
    return t_->strides ? std::span<const int64_t>(t_->strides, t_->rank)
                       : std::span<const int64_t>();
  }
  hh_device device() const { return t_->device; }
  bool on_cpu() const { return t_->device.type == HH_DEVICE_CPU; }
  // The number of elements (1 for a scalar).
  std::size_t size() const { return hh_tensor_element_count(t_); }
  bool is_numeric() const { return t_->dtype != HH_DTYPE_STRING; }
  // Element i (row-major order, strides applied) of a numeric CPU tensor as a double; 0 for a
  // string tensor, for data not on the CPU and for i >= size(). Never throws.
  double at(std::size_t i) const { return hh_tensor_get_double(t_, i); }
  // Element i of a string tensor, pointing into the host's data; empty for other dtypes and for
  // i >= size().
  std::string_view string_at(std::size_t i) const {
    if (t_->dtype != HH_DTYPE_STRING || i >= size()) return {};
    const auto& s = static_cast<const hh_str*>(t_->data)[i];
    return {s.data, s.size};
  }
  const hh_tensor& raw() const { return *t_; }

 private:
  const hh_tensor* t_;
};

// When the step of a before_run or after_run ran, on the wall clock: the host's time of the step
// for a call behind it (an observer, ABI 1.4 hosts), else now, as a call on the step runs at the
// step's time. Rows and records stamped with it read the same in either mode.
inline std::chrono::system_clock::time_point step_wall_time(const hh_run_context& context) {
  if (HH_HAS_FIELD(&context, hh_run_context, wall_time_ns) && context.wall_time_ns != 0)
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::nanoseconds(context.wall_time_ns)));
  return std::chrono::system_clock::now();
}

// The values given to after_run: exactly what this hook fetched in this step's before_run, in
// the order asked. Valid only during that after_run.
class RunValues {
 public:
  explicit RunValues(const hh_run_values& v) : v_(&v) {}
  std::size_t size() const { return v_->count; }
  // Value i; i must be below size() (not checked).
  TensorView operator[](std::size_t i) const {
    return TensorView(*hh_run_value(v_, static_cast<uint32_t>(i)));
  }
  // The value named `name`, or nullptr when this hook did not fetch it in this step.
  const hh_tensor* find(const std::string& name) const { return hh_find_value(v_, name.c_str()); }
  // The value named `name`; throws Error when it is missing.
  TensorView get(const std::string& name) const {
    const hh_tensor* t = find(name);
    if (!t) throw Error("no fetched value named '" + name + "'");
    return TensorView(*t);
  }
  // The first element of a numeric CPU tensor, as a double. Throws Error when the value is
  // missing, is a string tensor, has no elements or is not on the CPU.
  double scalar(const std::string& name) const {
    TensorView t = get(name);
    if (!t.is_numeric() || t.size() == 0) throw Error("'" + name + "' is not a numeric value");
    if (!t.on_cpu()) throw Error("'" + name + "' is not on the CPU");
    return t.at(0);
  }

 private:
  const hh_run_values* v_;
};

// What before_run adds to the step; usable only during that before_run, on its thread. A rejected
// fetch or feed throws Error, and the host fails this before_run with its own message even when
// the hook catches the exception.
class RunRequest {
 public:
  explicit RunRequest(hh_run_request& r) : r_(&r) {}
  // Asks for the tensor `name`; its value arrives in this hook's after_run.
  void fetch(const std::string& name) {
    if (r_->add_fetch(r_, name.c_str()) != HH_OK) throw Error("fetch of '" + name + "' rejected");
  }
  // Replaces the tensor value.name for this step. The host checks the view and copies it, data
  // included.
  void feed(const hh_tensor& value) {
    if (r_->add_feed(r_, &value) != HH_OK)
      throw Error(std::string("feed of '") + value.name + "' rejected");
  }
  // Feeds a rank-0 tensor; T is float, double, int32_t or int64_t (deduced from the argument).
  template <typename T>
  void feed_scalar(const std::string& name, T value) {
    hh_tensor t;
    hh_tensor_init(&t);
    t.name = name.c_str();
    t.dtype = dtype_of<T>();
    t.data = &value;
    t.byte_size = sizeof(T);
    feed(t);
  }

 private:
  template <typename T>
  static constexpr hh_dtype dtype_of() {
    if constexpr (std::is_same_v<T, float>)
      return HH_DTYPE_F32;
    else if constexpr (std::is_same_v<T, double>)
      return HH_DTYPE_F64;
    else if constexpr (std::is_same_v<T, int32_t>)
      return HH_DTYPE_I32;
    else if constexpr (std::is_same_v<T, int64_t>)
      return HH_DTYPE_I64;
    else
      static_assert(sizeof(T) == 0, "feed_scalar supports float, double, int32_t, int64_t");
  }
  hh_run_request* r_;
};

// The host's services for this instance. Every call is thread-safe: any thread, from the hook's
// constructor until its destructor returns, but never from the destructor itself (destroy must
// not call the host; a thread the destructor joins may call it until joined). After end() the
// calls that change something are refused (host.h): request_stop does nothing, save_state throws.
class Host {
 public:
  explicit Host(const hh_host* h) : h_(h) {}
  std::string instance_name() const { return h_->instance_name(h_); }
  // Writes to this instance's logger; level HH_LOG_TRACE..HH_LOG_ERROR (others are clamped).
  void log(int32_t level, std::string_view message) const {
    h_->log(h_, level, message.data(), message.size());
  }
  bool log_enabled(int32_t level) const { return h_->log_enabled(h_, level) != 0; }
  void debug(std::string_view m) const { log(HH_LOG_DEBUG, m); }
  void info(std::string_view m) const { log(HH_LOG_INFO, m); }
  void warn(std::string_view m) const { log(HH_LOG_WARN, m); }
  void error(std::string_view m) const { log(HH_LOG_ERROR, m); }
  // The live global step; in after_run it already counts the step that just ran.
  int64_t global_step() const { return h_->global_step(h_); }
  // Stops the job after the current step; the first request of the job wins.
  void request_stop(const std::string& reason) const { h_->request_stop(h_, reason.c_str()); }
  // True once anyone (a hook, a signal, the embedding program) requested a stop.
  bool should_stop() const { return h_->should_stop(h_) != 0; }
  std::filesystem::path run_dir() const { return h_->run_dir(h_); }
  // A path parameter as the plugin should use it: relative paths are taken from run_dir(), the
  // result is lexically normal without a trailing separator (so "tb/" and "tb" give the same
  // text, which keys the host's per-folder services); empty stays empty.
  std::filesystem::path resolve_path(const std::string& path) const {
    if (path.empty()) return {};
    std::filesystem::path out(path);
    if (out.is_relative()) out = run_dir() / out;
    out = out.lexically_normal();
    if (!out.has_filename() && out != out.root_path()) out = out.parent_path();
    return out;
  }
  // Stores this instance's state (saved with the next checkpoint, tagged with the plugin's
  // HH_PLUGIN_STATE_VERSION). Throws Error when the host refuses it (too large, after end()).
  void save_state(std::string_view bytes) const {
    if (h_->state_put(h_, bytes.data(), bytes.size()) != HH_OK)
      throw Error("the host refused the state (" + std::to_string(bytes.size()) +
                  " bytes): larger than the job's state limit, or saved after end()");
  }
  // State as key=value lines, through save_state (throws the same way). Keys must not contain '='
  // or newlines, values no newlines: this is not checked, and such a key or value corrupts the map.
  void save_state_map(const std::map<std::string, std::string>& values) const {
    std::string text;
    for (const auto& [k, v] : values) text += k + "=" + v + "\n";
    save_state(text);
  }
  // The map saved with save_state_map, read through load_state; lines without '=' are skipped.
  std::map<std::string, std::string> load_state_map() const {
    std::map<std::string, std::string> out;
    const std::string text = load_state();
    std::size_t start = 0;
    while (start < text.size()) {
      std::size_t end = text.find('\n', start);
      if (end == std::string::npos) end = text.size();
      const std::string line = text.substr(start, end - start);
      const std::size_t eq = line.find('=');
      if (eq != std::string::npos) out[line.substr(0, eq)] = line.substr(eq + 1);
      start = end + 1;
    }
    return out;
  }
  // The stored state (restored from a checkpoint, or saved last) when it has this plugin's state
  // version; empty when there is none (or it is empty). Available from the constructor on. A state
  // of another version is logged and ignored: read it with load_state_any to convert it.
  std::string load_state() const {
    uint32_t version = 0;
    std::string bytes = load_state_any(&version);
    if (!bytes.empty() && version != HH_PLUGIN_STATE_VERSION) {
      warn("ignoring the stored state: it has state version " + std::to_string(version) +
           ", this plugin reads version " + std::to_string(HH_PLUGIN_STATE_VERSION));
      return {};
    }
    return bytes;
  }
  // The stored state whatever its version (written to *version; 0 when there is none).
  std::string load_state_any(uint32_t* version) const {
    *version = 0;
    for (;;) {
      std::size_t size = 0;
      uint32_t stored_version = 0;
      if (!h_->state_info(h_, &size, &stored_version)) return {};
      std::string bytes(size, '\0');
      std::size_t copied = 0;
      if (h_->state_get(h_, bytes.data(), bytes.size(), &copied) == HH_OK) {
        bytes.resize(copied);
        *version = stored_version;
        return bytes;
      }
      if (copied <= size) return {};  // the state vanished meanwhile
      // It grew between the two calls (a put from another thread): ask again.
    }
  }
  // hh.steps/1 skip_until (ABI 1.5): the host need not call before_run and after_run for the steps
  // whose context's global_step is below `global_step` (0: every step again). False when the host
  // does not offer it: an older host calls every step, which a hook keeping its own schedule
  // handles alike.
  bool skip_until(int64_t global_step) const {
    const auto* steps = service<hh_steps_service>(HH_SERVICE_STEPS);
    return steps && HH_HAS_FIELD(steps, hh_steps_service, skip_until) && steps->skip_until &&
           steps->skip_until(h_, global_step) == HH_OK;
  }
  // The host's optional service `id` (HH_SERVICE_CHECKPOINT, ...) as its C table, or nullptr when
  // the host has none: check it and its struct_size. Call its functions with raw() as the host.
  template <typename Service>
  const Service* service(const char* id) const {
    return static_cast<const Service*>(h_->get_service(h_, id));
  }
  const hh_host* raw() const { return h_; }

 private:
  const hh_host* h_;
};

// Validated parameters, copied out of the create arguments. Each get_* throws Error when `name`
// is not declared, is declared with another type, or is an OPTIONAL parameter that is not set
// (check has()); the message names the parameter and the fix.
class Params {
 public:
  Params() = default;
  explicit Params(const hh_create_args& args) {
    for (uint32_t i = 0; i < args.param_count; ++i) {
      const hh_param_value& p = *hh_create_param(&args, i);
      Value v;
      v.type = p.type;
      v.is_set = p.is_set != 0;
      v.b = p.bool_value != 0;
      v.i = p.int_value;
      v.f = p.float_value;
      if (p.string_value) v.s = p.string_value;
      for (uint32_t k = 0; k < p.list_count; ++k) v.list.emplace_back(p.list_items[k]);
      values_.emplace(p.name, std::move(v));
    }
  }
  // True when `name` is declared and set: false for an absent OPTIONAL parameter, and also for a
  // name that is not declared at all.
  bool has(const std::string& name) const {
    auto it = values_.find(name);
    return it != values_.end() && it->second.is_set;
  }
  // Throws Error naming both keys unless exactly one of them is set.
  void require_exactly_one(const std::string& a, const std::string& b) const {
    if (has(a) && has(b)) throw Error("give only one of '" + a + "' and '" + b + "', not both");
    if (!has(a) && !has(b)) throw Error("give one of '" + a + "' or '" + b + "'");
  }
  bool get_bool(const std::string& name) const { return at(name, HH_PARAM_TYPE_BOOL).b; }
  int64_t get_int(const std::string& name) const { return at(name, HH_PARAM_TYPE_INT).i; }
  double get_float(const std::string& name) const { return at(name, HH_PARAM_TYPE_FLOAT).f; }
  const std::string& get_string(const std::string& name) const {
    return at(name, HH_PARAM_TYPE_STRING).s;
  }
  const std::vector<std::string>& get_string_list(const std::string& name) const {
    return at(name, HH_PARAM_TYPE_STRING_LIST).list;
  }

 private:
  struct Value {
    hh_param_type type = 0;
    bool is_set = false;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<std::string> list;
  };
  static const char* type_name(hh_param_type type) {
    switch (type) {
      case HH_PARAM_TYPE_BOOL: return "BOOL";
      case HH_PARAM_TYPE_INT: return "INT";
      case HH_PARAM_TYPE_FLOAT: return "FLOAT";
      case HH_PARAM_TYPE_STRING: return "STRING";
      case HH_PARAM_TYPE_STRING_LIST: return "STRING_LIST";
      default: return "an unknown type";
    }
  }
  static const char* getter_for(hh_param_type type) {
    switch (type) {
      case HH_PARAM_TYPE_BOOL: return "get_bool";
      case HH_PARAM_TYPE_INT: return "get_int";
      case HH_PARAM_TYPE_FLOAT: return "get_float";
      case HH_PARAM_TYPE_STRING: return "get_string";
      default: return "get_string_list";
    }
  }
  // The messages are the plugin author's: they say which of the three mistakes it is and the fix.
  const Value& at(const std::string& name, hh_param_type type) const {
    auto it = values_.find(name);
    if (it == values_.end())
      throw Error("the plugin reads parameter '" + name +
                  "', which is not in the plugin's parameter list: declare it there (e.g. P(" +
                  name + ", " + type_name(type) + ", DEFAULT, \"...\", \"...\"))");
    if (it->second.type != type)
      throw Error("the plugin reads parameter '" + name + "' as " + type_name(type) +
                  ", but the plugin's parameter list declares it " + type_name(it->second.type) +
                  ": read it with " + getter_for(it->second.type) +
                  "(), or change its type in the plugin's parameter list");
    if (!it->second.is_set)
      throw Error("parameter '" + name +
                  "' is OPTIONAL and not set in the configuration: check has() before reading it");
    return it->second;
  }
  std::map<std::string, Value> values_;
};

// What create() passes to the hook's constructor, valid only during it: forward it to Hook(ctx),
// which copies all three members.
struct CreateContext {
  Host host;
  Params params;
  std::string instance_name;
};

// Base class of a C++ hook. Override what you need; each default does nothing, and a callback
// not overridden is never called (the C table keeps it NULL).
// Throw hookhost::Error (or any exception) to fail a call, hookhost::FatalError to be disabled.
// The derived constructor is create(): validate parameters there (an exception refuses the
// configuration). The destructor is destroy(): join your threads, do not call host(), do not throw.
// Calls on one instance never overlap, but may come from different threads.
class Hook {
 public:
  explicit Hook(const CreateContext& ctx)
      : host_(ctx.host), params_(ctx.params), instance_name_(ctx.instance_name) {}
  Hook(const Hook&) = delete;
  Hook& operator=(const Hook&) = delete;
  virtual ~Hook() = default;

  // Once, before the first session exists.
  virtual void begin() {}
  // After every session creation: session.creation is 1, then 2, 3, ... after each recovery.
  virtual void after_create_session(const hh_session_info& /*session*/) {}
  // Before each step: add fetches and feeds through `request`.
  virtual void before_run(const hh_run_context& /*context*/, RunRequest& /*request*/) {}
  // After each step that completed: `values` holds exactly this hook's fetches of the step.
  virtual void after_run(const hh_run_context& /*context*/, const RunValues& /*values*/) {}
  // Exactly once, last, also when the job failed: `info` says how it ended.
  virtual void end(const hh_end_info& /*info*/) {}
  // Whether this hook wants `callback` called, for a callback its class overrides (one it does not
  // override is never called). Asked once per callback, right after the constructor returns; the
  // default is true. Override it when only the run decides (a bridge to a script, a hook whose
  // parameters switch a callback off): false leaves the callback NULL, so it costs nothing.
  virtual bool implements(Callback /*callback*/) const { return true; }
  // An optional interface this hook offers the host ("hh.<name>/N", see hookhost/ext/), or
  // nullptr. Asked once per id, right after construction; the table must stay valid until the
  // destructor returns (use static storage). Its functions get the C hh_hook, not this object.
  virtual const void* extension(std::string_view /*id*/) const { return nullptr; }

 protected:
  const Host& host() const { return host_; }
  const Params& params() const { return params_; }
  const std::string& instance_name() const { return instance_name_; }

 private:
  Host host_;
  Params params_;
  std::string instance_name_;
};

namespace detail {

inline hh_status fail(hh_error* err, hh_status status, const char* message) noexcept {
  return hh_fail(err, status, message);
}

// "TYPE: what()" for an exception the hook did not throw on purpose (an Error's message stands
// alone): the demangled dynamic type, as C++ spells it.
inline std::string describe_exception(const std::exception& e) {
  if (dynamic_cast<const Error*>(&e)) return e.what();
  const char* mangled = typeid(e).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string text = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  return text + ": " + e.what();
}

// Runs `fn`, turning every exception into a status and a message.
template <typename Fn>
hh_status guarded(hh_error* err, Fn&& fn) noexcept {
  try {
    fn();
    return HH_OK;
  } catch (const FatalError& e) {
    return fail(err, HH_ERROR_FATAL, e.what());
  } catch (const std::exception& e) {
    try {
      return fail(err, HH_ERROR, describe_exception(e).c_str());
    } catch (...) {  // no memory for the text: the message alone
      return fail(err, HH_ERROR, e.what());
    }
  } catch (...) {
    return fail(err, HH_ERROR, "unknown exception (not derived from std::exception)");
  }
}

template <typename T>
struct Instance {
  hh_hook c{};
  std::unique_ptr<T> impl;

  static T& self(hh_hook* h) { return *static_cast<Instance*>(h->hook_data)->impl; }

  static hh_status begin(hh_hook* h, hh_error* err) {
    return guarded(err, [&] { self(h).begin(); });
  }
  static hh_status after_create_session(hh_hook* h, const hh_session_info* s, hh_error* err) {
    return guarded(err, [&] { self(h).after_create_session(*s); });
  }
  static hh_status before_run(hh_hook* h, const hh_run_context* ctx, hh_run_request* r,
                              hh_error* err) {
    return guarded(err, [&] {
      RunRequest request(*r);
      self(h).before_run(*ctx, request);
    });
  }
  static hh_status after_run(hh_hook* h, const hh_run_context* ctx, const hh_run_values* v,
                             hh_error* err) {
    return guarded(err, [&] { self(h).after_run(*ctx, RunValues(*v)); });
  }
  static hh_status end(hh_hook* h, const hh_end_info* info, hh_error* err) {
    return guarded(err, [&] { self(h).end(*info); });
  }
  static void destroy(hh_hook* h) { delete static_cast<Instance*>(h->hook_data); }
  static const void* get_extension(const hh_hook* h, const char* id) noexcept {
    try {
      return id ? static_cast<const Instance*>(h->hook_data)->impl->extension(id) : nullptr;
    } catch (...) {
      return nullptr;
    }
  }
};

// True when T (or a class between it and Hook) overrides the callback: a callback T does not
// override stays NULL in the hh_hook, so the host never calls it and it costs nothing per step.
#define HOOKHOST_OVERRIDES_(T, name) \
  (!std::is_same_v<decltype(&T::name), decltype(&::hookhost::Hook::name)>)

template <typename T>
hh_status create(const hh_host* host, const hh_create_args* args, hh_hook** out, hh_error* err) {
  return guarded(err, [&] {
    auto instance = std::make_unique<Instance<T> >();
    CreateContext ctx{Host(host), Params(*args), args->instance_name};
    instance->impl = std::make_unique<T>(ctx);
    hh_hook& c = instance->c;
    hh_hook_init(&c, instance.get());
    const T& made = *instance->impl;
    if constexpr (HOOKHOST_OVERRIDES_(T, begin))
      if (made.implements(Callback::begin)) c.begin = &Instance<T>::begin;
    if constexpr (HOOKHOST_OVERRIDES_(T, after_create_session))
      if (made.implements(Callback::after_create_session))
        c.after_create_session = &Instance<T>::after_create_session;
    if constexpr (HOOKHOST_OVERRIDES_(T, before_run))
      if (made.implements(Callback::before_run)) c.before_run = &Instance<T>::before_run;
    if constexpr (HOOKHOST_OVERRIDES_(T, after_run))
      if (made.implements(Callback::after_run)) c.after_run = &Instance<T>::after_run;
    if constexpr (HOOKHOST_OVERRIDES_(T, end))
      if (made.implements(Callback::end)) c.end = &Instance<T>::end;
    if constexpr (HOOKHOST_OVERRIDES_(T, extension)) c.get_extension = &Instance<T>::get_extension;
    c.destroy = &Instance<T>::destroy;
    *out = &instance.release()->c;
  });
}

}  // namespace detail
}  // namespace hookhost

// Exports CLASS (derived from hookhost::Hook, constructible from const CreateContext&) as this
// library's plugin. ID, VERSION and DESCRIPTION are string literals; PARAMS is an X-macro of
// P(name, TYPE, FLAG, "default", "help") entries, or HH_NO_PARAMS: TYPE is BOOL, INT, FLOAT,
// STRING or STRING_LIST; FLAG is REQUIRED, DEFAULT (the default text applies) or OPTIONAL (may be
// absent); the default is "" unless FLAG is DEFAULT. An optional last argument, the bare word
// chief or all (since ABI 1.1), declares where its hooks run in a distributed job when their
// section sets no `ranks` (without it: all). What its hooks need when confined (since ABI 1.2) is
// the HH_PLUGIN_NEEDS option, whether they only observe (since ABI 1.3) the HH_PLUGIN_MODE
// option, and which steps they need (since ABI 1.4) the HH_PLUGIN_CADENCE option, each defined
// before including any hookhost header (see entry.h). Use once per library,
// at global scope.
//   #define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path)
//   #define HH_PLUGIN_MODE HH_MODE_OBSERVE
//   #include <hookhost/hook.hpp>
//   ...
//   HOOKHOST_PLUGIN(CsvWriter, "csv_writer", "1.0.0", "Writes a CSV file", PARAMS, chief)
#define HOOKHOST_PLUGIN(CLASS, ID, VERSION, DESCRIPTION, PARAMS, ...) \
  HH_PLUGIN_DEFINE(ID, VERSION, DESCRIPTION, PARAMS,                  \
                   &::hookhost::detail::create<CLASS> __VA_OPT__(, ) __VA_ARGS__)

#endif  // C++20
#endif  // HOOKHOST_HOOK_HPP
