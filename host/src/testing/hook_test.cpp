// hookhost::testing::HookTest: one plugin file through the real runtime around a scripted
// workload. The hook's calls are observed without touching the runtime: in process, the plugin's
// entry is copied with a create() that wraps the hh_hook it returns in one that records each call
// and forwards it; in a runner process, the dispatcher is wrapped the same way. Everything else
// (create, validation, policies, services, checkpoints) is the runtime's own path.
#include "hookhost/testing.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <type_traits>

#include <hookhost/ext/device_values.h>

#include "hookhost/host/job.hpp"
#include "hookhost/host/loader.hpp"
#include "job/display_text.hpp"
#include "plugins/elf_note.hpp"
#include "plugins/trust.hpp"
#include "sandbox/process_dispatch.hpp"
#include "storage/checkpoint.hpp"

namespace hookhost::testing {

namespace fs = std::filesystem;

namespace {

constexpr const char* kCheckpointFolder = "checkpoints";
constexpr const char* kCheckpointBasename = "model.ckpt";  // the program's

// The hook keys of a [hook.NAME] section this harness cannot apply to its one hook (`ranks`: a
// test runs one process, so there is no rank to choose).
const std::set<std::string>& unapplied_hook_keys() {
  static const std::set<std::string> keys{"plugin",          "enabled", "order",
                                          "isolation_group", "sha256",  "ranks"};
  return keys;
}

bool valid_log_level(const std::string& level) {
  static const std::set<std::string> levels{"trace", "debug",    "info", "warn",
                                            "error", "critical", "off"};
  return levels.count(level) != 0;
}

// The level names of the configuration's log_level (spdlog says "warning").
std::string level_name(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::trace: return "trace";
    case spdlog::level::debug: return "debug";
    case spdlog::level::info: return "info";
    case spdlog::level::warn: return "warn";
    case spdlog::level::err: return "error";
    case spdlog::level::critical: return "critical";
    default: return "off";
  }
}

// Every line the runtime and the hook log, kept in order.
class CaptureSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  struct Line {
    std::string logger;
    std::string level;
    std::string text;
  };
  std::vector<Line> lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    lines_.push_back({std::string(msg.logger_name.begin(), msg.logger_name.end()),
                      level_name(msg.level), std::string(msg.payload.begin(), msg.payload.end())});
  }
  void flush_() override {}

 private:
  std::vector<Line> lines_;
};

// A folder of its own under the system's temporary folder.
fs::path make_run_dir() {
  std::string pattern = (fs::temp_directory_path() / "hookhost-hooktest-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw std::system_error(errno, std::generic_category(),
                            "hookhost::testing: cannot create a run directory " + pattern);
  return pattern;
}

// The values of the built-in workload's names that a script did not replace.
std::optional<Tensor> builtin_value(const std::string& name, int64_t step) {
  if (name == "global_step") return Tensor::scalar_i64(step);
  if (name == "loss") return Tensor::scalar_f32(1.0f / static_cast<float>(step));
  if (name == "learning_rate") return Tensor::scalar_f32(0.1f);
  if (name == "weights") return Tensor::vector_f32({1.0f, 2.0f, 3.0f});
  if (name == "bias") return Tensor::scalar_f32(0.0f);
  return std::nullopt;
}
constexpr std::array<const char*, 5> kBuiltinNames = {"global_step", "loss", "learning_rate",
                                                      "weights", "bias"};

// The scripted workload.
class ScriptedWorkload final : public Session {
 public:
  ScriptedWorkload(const detail::Script& script, std::vector<SessionRun>& runs)
      : script_(script),
        runs_(runs),
        step_(script.start_step),
        recoverable_left_(script.recoverable_errors),
        stops_left_(script.stops) {}

  Runtime* runtime = nullptr;  // for the stops the script requests

  void create(int /*creation*/) override {}
  int64_t global_step() const override { return step_; }

  std::vector<std::string> fetchable() const override {
    std::set<std::string> names(kBuiltinNames.begin(), kBuiltinNames.end());
    for (const auto& [name, _] : script_.values) names.insert(name);
    for (const auto& [key, _] : script_.values_at) names.insert(key.first);
    return {names.begin(), names.end()};
  }
  std::vector<std::string> feedable() const override {
    std::set<std::string> names = script_.feedable;
    names.insert("learning_rate");
    return {names.begin(), names.end()};
  }

  StepResult run(const std::vector<std::string>& fetches, const TensorMap& feeds) override {
    const int64_t step = step_ + 1;
    const size_t index = runs_.size();
    runs_.push_back(SessionRun{step, fetches, feeds, {}, StepStatus::error});
    StepResult result;
    const auto fail = [&](StepStatus status, std::string message) {
      runs_[index].status = result.status = status;
      result.message = std::move(message);
      return result;
    };
    if (step >= script_.end_of_data_step)
      return fail(StepStatus::end_of_data,
                  "the script has no data for step " + std::to_string(step));
    if (script_.workload_errors.count(step))
      return fail(StepStatus::error, "scripted workload error at step " + std::to_string(step));
    if (auto it = recoverable_left_.find(step); it != recoverable_left_.end() && it->second > 0) {
      --it->second;
      return fail(StepStatus::aborted,
                  "scripted recoverable error at step " + std::to_string(step));
    }
    for (const auto& name : fetches)
      result.values.insert_or_assign(name, value_of(name, step, feeds));
    step_ = step;
    runs_[index].status = StepStatus::ok;
    runs_[index].returned = result.values;
    if (auto it = stops_left_.find(step); it != stops_left_.end()) {
      if (runtime) runtime->request_stop(it->second.second, it->second.first);
      stops_left_.erase(it);
    }
    return result;
  }

  std::string save_state() const override { return std::to_string(step_); }
  void restore_state(std::string_view bytes) override {
    int64_t step = 0;
    const auto [end, ec] = std::from_chars(bytes.data(), bytes.data() + bytes.size(), step);
    if (ec != std::errc() || end != bytes.data() + bytes.size())
      throw std::runtime_error("not a state of the harness's workload: '" + std::string(bytes) +
                               "'");
    step_ = step;
  }
  std::optional<int64_t> last_step() const override { return script_.end_of_data_step - 1; }

 private:
  // A fed value first (as a session returns what was fed), then the script, then the defaults.
  Tensor value_of(const std::string& name, int64_t step, const TensorMap& feeds) const {
    if (auto fed = feeds.find(name); fed != feeds.end()) return fed->second;
    if (auto at = script_.values_at.find({name, step}); at != script_.values_at.end())
      return at->second.tensor();
    if (auto fn = script_.values.find(name); fn != script_.values.end())
      return fn->second(step).tensor();
    if (auto builtin = builtin_value(name, step)) return *builtin;
    throw std::logic_error("no value for '" + name + "'");  // fetchable() lists only known names
  }

  const detail::Script& script_;
  std::vector<SessionRun>& runs_;
  int64_t step_;
  std::map<int64_t, int> recoverable_left_;
  std::map<int64_t, std::pair<std::string, hh_stop_cause>> stops_left_;
};

// --- Recording the calls. ---

std::string error_message(const hh_error* err) {
  if (!err) return {};
  return std::string(err->message, ::strnlen(err->message, HH_ERROR_MESSAGE_SIZE));
}

bool failed(hh_status status) {
  return status != HH_OK && status != HH_STOP_REQUESTED;
}

// Appends `call`, makes it, and fills in what it returned; an escaping exception is recorded and
// passed on to the runtime, which handles it as for any plugin.
template <typename Fn>
hh_status record(std::vector<Call>& calls, Call call, hh_error* err, Fn&& make_call) {
  const size_t index = calls.size();
  calls.push_back(std::move(call));
  try {
    const hh_status status = make_call();
    calls[index].status = status;
    if (failed(status)) calls[index].message = error_message(err);
    return status;
  } catch (...) {
    calls[index].status = HH_ERROR;
    calls[index].message = "an exception escaped the plugin";
    throw;
  }
}

Call make_call(Callback callback, int64_t step) {
  Call call;
  call.callback = callback;
  call.step = step;
  return call;
}

// The hh_hook the runtime gets in process: each callback the plugin implements, recorded and
// forwarded to the plugin's own hh_hook.
struct RecordedHook {
  hh_hook outer;        // first: the hh_hook* the runtime passes back converts to this object
  hh_hook* inner;       // the plugin's
  hh_hook inner_calls;  // its callback pointers, copied once as the host copies them
  std::vector<Call>* calls;
  int64_t start_step;
  decltype(hh_device_values_extension::accepts) inner_accepts;
  hh_device_values_extension device_values;
};
static_assert(std::is_standard_layout_v<RecordedHook>);

RecordedHook& recorded(const hh_hook* hook) {
  return *reinterpret_cast<RecordedHook*>(const_cast<hh_hook*>(hook));
}

hh_status recorded_begin(hh_hook* hook, hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.calls, make_call(Callback::begin, r.start_step), err,
                [&] { return r.inner_calls.begin(r.inner, err); });
}

hh_status recorded_after_create_session(hh_hook* hook, const hh_session_info* session,
                                        hh_error* err) {
  RecordedHook& r = recorded(hook);
  Call call = make_call(Callback::after_create_session, session->global_step);
  call.creation = session->creation;
  return record(*r.calls, std::move(call), err,
                [&] { return r.inner_calls.after_create_session(r.inner, session, err); });
}

Call step_call(Callback callback, const hh_run_context& context) {
  Call call = make_call(callback, context.global_step + 1);
  call.stop_requested = context.stop_requested != 0;
  return call;
}

hh_status recorded_before_run(hh_hook* hook, const hh_run_context* context, hh_run_request* request,
                              hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.calls, step_call(Callback::before_run, *context), err,
                [&] { return r.inner_calls.before_run(r.inner, context, request, err); });
}

hh_status recorded_after_run(hh_hook* hook, const hh_run_context* context,
                             const hh_run_values* values, hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.calls, step_call(Callback::after_run, *context), err,
                [&] { return r.inner_calls.after_run(r.inner, context, values, err); });
}

Call end_call(const hh_end_info& info) {
  Call call = make_call(Callback::end, info.global_step);
  call.outcome = info.outcome;
  call.reason = info.reason ? info.reason : "";
  return call;
}

hh_status recorded_end(hh_hook* hook, const hh_end_info* info, hh_error* err) {
  RecordedHook& r = recorded(hook);
  return record(*r.calls, end_call(*info), err,
                [&] { return r.inner_calls.end(r.inner, info, err); });
}

void recorded_destroy(hh_hook* hook) {
  std::unique_ptr<RecordedHook> owned(&recorded(hook));
  owned->inner_calls.destroy(owned->inner);
}

int32_t recorded_accepts(const hh_hook* hook, hh_device device) {
  RecordedHook& r = recorded(hook);
  return r.inner_accepts(r.inner, device);
}

// The extension tables the host asks for take the hh_hook it knows: the device-values table is
// given one that passes the plugin its own hh_hook. Other tables are passed on unchanged.
const void* recorded_get_extension(const hh_hook* hook, const char* id) {
  RecordedHook& r = recorded(hook);
  const void* table = r.inner_calls.get_extension(r.inner, id);
  if (!table || !id || std::strcmp(id, HH_EXTENSION_DEVICE_VALUES) != 0) return table;
  const auto* ext = static_cast<const hh_device_values_extension*>(table);
  if (ext->struct_size < HH_DEVICE_VALUES_EXTENSION_SIZE_1_0 || !ext->accepts)
    return table;  // the host refuses it, naming why, as it would the plugin's
  r.inner_accepts = ext->accepts;
  r.device_values = {HH_DEVICE_VALUES_EXTENSION_SIZE, &recorded_accepts};
  return &r.device_values;
}

hh_hook* wrap_hook(hh_hook* inner, std::vector<Call>& calls, int64_t start_step) {
  auto r = std::make_unique<RecordedHook>();
  r->inner = inner;
  r->inner_calls = hh_hook{};
  std::memcpy(&r->inner_calls, inner, std::min<size_t>(inner->struct_size, sizeof(hh_hook)));
  r->calls = &calls;
  r->start_step = start_step;
  r->inner_accepts = nullptr;
  r->device_values = {};
  hh_hook& outer = r->outer;
  outer = hh_hook{};
  outer.struct_size = HH_HOOK_SIZE;
  outer.hook_data = inner->hook_data;  // "reserved for the plugin": an extension may read it
  const hh_hook& in = r->inner_calls;
  if (in.begin) outer.begin = &recorded_begin;
  if (in.after_create_session) outer.after_create_session = &recorded_after_create_session;
  if (in.before_run) outer.before_run = &recorded_before_run;
  if (in.after_run) outer.after_run = &recorded_after_run;
  if (in.end) outer.end = &recorded_end;
  outer.destroy = &recorded_destroy;
  if (in.get_extension) outer.get_extension = &recorded_get_extension;
  return &r.release()->outer;
}

// create() has no user argument: HookTest sets this around the one add_hook that calls it.
struct RecordingCreate {
  const hh_plugin_entry* plugin_entry;
  std::vector<Call>* calls;
  int64_t start_step;
};
thread_local const RecordingCreate* t_create = nullptr;

hh_status recording_create(const hh_host* host, const hh_create_args* args, hh_hook** out,
                           hh_error* err) {
  const RecordingCreate* context = t_create;
  if (!context) return hh_fail(err, HH_ERROR, "hookhost::testing: create() outside a HookTest");
  const hh_status status = context->plugin_entry->create(host, args, out, err);
  // Only a hook the runtime accepts is wrapped; a refused one reaches the runtime as it is.
  if (status == HH_OK && out && *out && (*out)->struct_size >= HH_HOOK_SIZE_1_0 && (*out)->destroy)
    *out = wrap_hook(*out, *context->calls, context->start_step);
  return status;
}

// The same recording for a hook in a runner process, around its dispatcher.
class RecordedDispatch final : public HookDispatch {
 public:
  RecordedDispatch(std::unique_ptr<HookDispatch> inner, std::vector<Call>& calls,
                   int64_t start_step)
      : inner_(std::move(inner)), calls_(calls), start_step_(start_step) {}

  std::string plugin_id() const override { return inner_->plugin_id(); }
  std::string plugin_file() const override { return inner_->plugin_file(); }
  uint32_t state_version() const override { return inner_->state_version(); }
  bool implements(Callback callback) const override { return inner_->implements(callback); }
  bool accepts_device(hh_device device) override { return inner_->accepts_device(device); }
  CallResult begin() override {
    return record(make_call(Callback::begin, start_step_), [&] { return inner_->begin(); });
  }
  CallResult after_create_session(const hh_session_info& session) override {
    Call call = make_call(Callback::after_create_session, session.global_step);
    call.creation = session.creation;
    return record(std::move(call), [&] { return inner_->after_create_session(session); });
  }
  CallResult before_run(const hh_run_context& context, hh_run_request& request) override {
    return record(step_call(Callback::before_run, context),
                  [&] { return inner_->before_run(context, request); });
  }
  CallResult after_run(const hh_run_context& context, const hh_run_values& values) override {
    return record(step_call(Callback::after_run, context),
                  [&] { return inner_->after_run(context, values); });
  }
  CallResult end(const hh_end_info& info) override {
    return record(end_call(info), [&] { return inner_->end(info); });
  }
  std::string destroy() override { return inner_->destroy(); }
  bool restart(std::string* why) override { return inner_->restart(why); }

 private:
  template <typename Fn>
  CallResult record(Call call, Fn&& make_call) {
    const size_t index = calls_.size();
    calls_.push_back(std::move(call));
    CallResult result = make_call();
    calls_[index].status = result.status;
    if (!result.ok()) calls_[index].message = result.message;
    return result;
  }

  std::unique_ptr<HookDispatch> inner_;
  std::vector<Call>& calls_;
  int64_t start_step_;
};

// "after_run failed: MESSAGE" (HookReport::failure) as a callback and a message.
std::optional<HookFailure> parse_failure(const std::string& text) {
  if (text.empty()) return std::nullopt;
  for (size_t i = 0; i < kCallbackNames.size(); ++i) {
    const std::string prefix = std::string(kCallbackNames[i]) + " failed: ";
    if (text.rfind(prefix, 0) == 0)
      return HookFailure{static_cast<Callback>(i), text.substr(prefix.size())};
  }
  return HookFailure{Callback::begin, text};
}

// The runtime's checkpoint lines: "wrote checkpoint FILE (requested by WHO)" and "not writing
// the checkpoint requested by WHO: the job failed, ...".
void collect_checkpoints(RunResult& run) {
  const std::string wrote = "wrote checkpoint ";
  const std::string by = " (requested by ";
  const std::string not_written = "not writing the checkpoint requested by ";
  const std::string because_failed = ": the job failed";
  for (const LogLine& line : run.host_log) {
    const std::string& text = line.text;
    if (text.rfind(wrote, 0) == 0) {
      const size_t open = text.find(by);
      if (open == std::string::npos || text.back() != ')') continue;
      RequestedCheckpoint c;
      c.file = text.substr(wrote.size(), open - wrote.size());
      c.requested_by = text.substr(open + by.size(), text.size() - 1 - open - by.size());
      c.written = true;
      const std::string name = c.file.filename().string();
      const auto dash = name.rfind('-');
      if (dash != std::string::npos)
        std::from_chars(name.data() + dash + 1, name.data() + name.size(), c.global_step);
      run.checkpoints.push_back(std::move(c));
    } else if (text.rfind(not_written, 0) == 0) {
      const size_t end = text.find(because_failed, not_written.size());
      RequestedCheckpoint c;
      c.requested_by = text.substr(not_written.size(), end - not_written.size());
      c.global_step = run.global_step;
      run.checkpoints.push_back(std::move(c));
    }
  }
}

// Whether the job stopped because the hook asked, and in its words.
void find_hook_stop(RunResult& run, const std::string& instance) {
  if (run.outcome != Outcome::stopped || run.stop_cause != HH_STOP_CAUSE_HOOK) return;
  const std::string asked = "hook '" + instance + "': ";
  const std::string returned = "hook '" + instance + "' requested a stop in ";
  if (run.reason.rfind(asked, 0) == 0) {
    run.stopped_by_hook = true;
    run.hook_stop_reason = run.reason.substr(asked.size());
  } else if (run.reason.rfind(returned, 0) == 0) {
    run.stopped_by_hook = true;
    run.hook_stop_reason = run.reason.substr(std::string("hook '" + instance + "' ").size());
  }
}

}  // namespace

// --- Call and RunResult. ---

std::string Call::name() const {
  const std::string base = name_of(callback);
  if (callback == Callback::before_run || callback == Callback::after_run)
    return base + "@" + std::to_string(step);
  return base;
}

std::vector<std::string> RunResult::trace() const {
  std::vector<std::string> names;
  for (const Call& call : calls) names.push_back(call.name());
  return names;
}

std::vector<std::string> RunResult::fetched(int64_t step) const {
  for (auto it = session_runs.rbegin(); it != session_runs.rend(); ++it)
    if (it->step == step) return it->fetched;
  return {};
}

TensorMap RunResult::fed(int64_t step) const {
  for (auto it = session_runs.rbegin(); it != session_runs.rend(); ++it)
    if (it->step == step) return it->fed;
  return {};
}

std::vector<std::string> RunResult::log_lines(std::string_view level) const {
  std::vector<std::string> texts;
  for (const LogLine& line : log)
    if (line.level == level) texts.push_back(line.text);
  return texts;
}

std::string RunResult::log_text() const {
  std::string text;
  for (const LoggedLine& l : all_log_)
    text += "[" + l.logger + "] [" + l.line.level + "] " + l.line.text + "\n";
  return text;
}

std::string RunResult::state_bytes() const {
  return saved_state ? saved_state->bytes : std::string();
}

// --- HookTest. ---

HookTest::HookTest(fs::path plugin_file, std::string instance_name)
    : plugin_file_(std::move(plugin_file)), instance_name_(std::move(instance_name)) {
  NoteReadResult note = read_plugin_note(plugin_file_);
  if (!note.metadata)
    throw LoadError(plugin_file_.string() + ": not a usable hookhost plugin: " + note.error);
  plugin_ = std::move(*note.metadata);
  if (instance_name_.empty()) {
    // An id may hold '.', an instance name may not.
    instance_name_ = plugin_.id;
    std::replace(instance_name_.begin(), instance_name_.end(), '.', '_');
  }
}

HookTest& HookTest::set(const std::string& key, const std::string& value) {
  if (unapplied_hook_keys().count(key))
    throw std::invalid_argument("HookTest::set(\"" + key + "\", ...): '" + key +
                                "' is a [hook] key a test of one hook does not apply");
  auto it = std::find_if(settings_.begin(), settings_.end(),
                         [&](const auto& setting) { return setting.first == key; });
  if (it != settings_.end())
    it->second = value;
  else
    settings_.emplace_back(key, value);
  return *this;
}

HookTest& HookTest::on_error(FailurePolicy policy) {
  return set("on_error", policy_name(policy));
}

HookTest& HookTest::isolation(Isolation where) {
  return set("isolation", isolation_name(where));
}

HookTest& HookTest::log_level(const std::string& level) {
  if (!valid_log_level(level))
    throw std::invalid_argument("HookTest::log_level(\"" + level +
                                "\"): expected trace, debug, info, warn, error, critical or off");
  log_level_ = level;
  return *this;
}

HookTest& HookTest::steps(int64_t count) {
  return end_of_data_at(count + 1);
}

HookTest& HookTest::end_of_data_at(int64_t step) {
  script_.end_of_data_step = step;
  return *this;
}

HookTest& HookTest::value(const std::string& name, Value value) {
  return this->value(name, [value](int64_t) { return value; });
}

HookTest& HookTest::value(const std::string& name, std::function<Value(int64_t step)> per_step) {
  script_.values.insert_or_assign(name, std::move(per_step));
  return *this;
}

HookTest& HookTest::value_at(const std::string& name, int64_t step, Value value) {
  script_.values_at.insert_or_assign({name, step}, std::move(value));
  return *this;
}

HookTest& HookTest::feedable(const std::string& name) {
  script_.feedable.insert(name);
  return *this;
}

HookTest& HookTest::recoverable_error_at(int64_t step) {
  ++script_.recoverable_errors[step];
  return *this;
}

HookTest& HookTest::workload_error_at(int64_t step) {
  script_.workload_errors.insert(step);
  return *this;
}

HookTest& HookTest::stop_requested_at(int64_t step, std::string reason, hh_stop_cause cause) {
  script_.stops.insert_or_assign(step, std::make_pair(std::move(reason), cause));
  return *this;
}

HookTest& HookTest::start_at(int64_t global_step) {
  script_.start_step = global_step;
  return *this;
}

HookTest& HookTest::restore_state(SavedHookState state) {
  restored_state_ = std::move(state);
  restored_bytes_.reset();
  return *this;
}

HookTest& HookTest::restore_state(std::string bytes) {
  restored_bytes_ = std::move(bytes);
  restored_state_.reset();
  return *this;
}

HookTest& HookTest::resume_from(const RunResult& previous) {
  start_at(previous.global_step);
  restored_bytes_.reset();
  restored_state_ = previous.saved_state;
  return *this;
}

HookTest& HookTest::keep_run_dir(bool keep) {
  keep_run_dir_ = keep;
  return *this;
}

struct HookTest::Prepared {
  JobConfig config;  // for the program's "where" in messages
  HookConfig hook;
  ResolvedParams params;
  HookSettings settings;
  Isolation isolation = Isolation::in_process;
  std::chrono::milliseconds call_timeout{0};
  uint64_t memory_limit_mb = 0;
};

// The configuration as `hookhost run --set hook.NAME.KEY=VALUE ...` reads and checks it.
HookTest::Prepared HookTest::prepare() const {
  Prepared p;
  const std::string section = "hook." + instance_name_ + ".";
  std::vector<std::string> overrides{section + "plugin=" + plugin_.id};
  for (const auto& [key, value] : settings_) overrides.push_back(section + key + "=" + value);
  p.config = load_job_config(std::nullopt, overrides);
  p.hook = p.config.hooks.front();
  try {
    check_param_texts(plugin_, p.hook.params);
    p.params = resolve_params(plugin_, p.hook.name, p.hook.params);
  } catch (const ConfigError& e) {
    throw ConfigError(p.config.where(p.hook, e.key()) + e.what(), e.key());
  }
  const IsolationConfig& iso = p.hook.isolation;
  p.isolation = iso.isolation.value_or(Isolation::in_process);
  p.call_timeout = std::chrono::milliseconds(iso.call_timeout_ms.value_or(0));
  p.memory_limit_mb = iso.memory_limit_mb.value_or(0);
  p.settings.instance_name = p.hook.name;
  p.settings.on_error = p.hook.on_error.value_or(p.config.on_error);
  p.settings.on_crash = iso.on_crash.value_or(CrashPolicy::restart);
  p.settings.max_restarts = iso.max_restarts.value_or(3);
  p.settings.log_level = p.hook.log_level.value_or("");
  // The runtime's waits only slow a test down; what happens is the same.
  p.settings.restart_backoff = std::chrono::milliseconds(1);
  // In process the watchdog names a call over its limit; a runner enforces its own.
  if (p.isolation == Isolation::in_process) p.settings.call_timeout = p.call_timeout;
  return p;
}

RunResult HookTest::execute(const Prepared& p, bool run_steps) {
  RunResult run;
  const bool keep = keep_run_dir_;
  run.run_dir = fs::canonical(make_run_dir());  // as the program's
  run.run_dir_owner_ =
      std::shared_ptr<const fs::path>(new fs::path(run.run_dir), [keep](const fs::path* dir) {
        std::error_code ec;
        if (!keep) fs::remove_all(*dir, ec);
        delete dir;
      });

  auto sink = std::make_shared<CaptureSink>();
  auto logger = std::make_shared<spdlog::logger>("hookhost", sink);
  logger->set_level(spdlog::level::from_str(log_level_));

  ScriptedWorkload session(script_, run.session_runs);
  RuntimeOptions options;
  options.run_dir = run.run_dir;
  options.config_dir = fs::current_path();  // no configuration file: the working directory
  options.logger = logger;
  options.recovery_backoff = std::chrono::milliseconds(1);
  options.checkpoint_dir = kCheckpointFolder;
  options.checkpoint_basename = kCheckpointBasename;
  // As the program: a recovery continues from the newest checkpoint, hook states included.
  const fs::path checkpoint_dir = run.run_dir / kCheckpointFolder;
  options.on_recover = [checkpoint_dir, logger](Runtime& rt) {
    const auto restore_into_session = [&rt](const fs::path& file, const Checkpoint& c) {
      rt.session().restore_state(c.workload_state);
      if (rt.session().global_step() != c.global_step)
        throw std::runtime_error(file.string() + ": its workload state is not at its step");
    };
    if (auto restored =
            restore_latest_checkpoint(checkpoint_dir, kCheckpointBasename, restore_into_session);
        restored && !restored->file.empty()) {
      rt.restore_hook_states(restored->checkpoint.hook_states);
      logger->info("recovery: restored {} at global step {}", restored->file.string(),
                   restored->checkpoint.global_step);
    }
  };

  // The plugin's entry, copied with a create() that records; it must outlive the runtime.
  std::shared_ptr<const LoadedPlugin> loaded;
  auto entry = std::make_shared<hh_plugin_entry>();
  if (p.isolation == Isolation::in_process) {
    try {
      DiscoveredPlugin found;
      found.file = plugin_file_;
      found.metadata = plugin_;
      loaded = load_plugin(found);
    } catch (const LoadError& e) {
      throw ConfigError(p.config.where(p.hook, "plugin") + e.what(), "plugin");
    }
    const hh_plugin_entry& real = loaded->entry();
    std::memcpy(entry.get(), &real, std::min<size_t>(real.struct_size, sizeof(hh_plugin_entry)));
    entry->struct_size =
        static_cast<uint32_t>(std::min<size_t>(real.struct_size, sizeof(hh_plugin_entry)));
    entry->create = &recording_create;
  }
  const uint32_t state_version = loaded ? loaded->entry().state_version : 1;
  // As the program: under isolation = process the plugin's code runs in its runner only.
  std::optional<LoadedPlugin> unloaded;
  if (p.isolation == Isolation::process) {
    try {
      unloaded.emplace(plugin_file_, plugin_, nullptr, sha256_of_file(plugin_file_));
    } catch (const std::exception& e) {
      throw ConfigError(p.config.where(p.hook, "plugin") + display_text(e.what(), 1024));
    }
  }

  auto runtime = std::make_unique<Runtime>(session, options);
  session.runtime = runtime.get();
  if (restored_state_ || restored_bytes_) {
    SavedHookState state = restored_state_
                               ? *restored_state_
                               : SavedHookState{plugin_.id, state_version, *restored_bytes_};
    runtime->restore_hook_states(
        std::map<std::string, SavedHookState>{{p.settings.instance_name, std::move(state)}});
  }

  try {
    if (p.isolation == Isolation::in_process) {
      auto recording = std::make_shared<const LoadedPlugin>(loaded->file(), loaded->metadata(),
                                                            entry.get(), loaded->sha256());
      const RecordingCreate context{&loaded->entry(), &run.calls, script_.start_step};
      t_create = &context;
      try {
        runtime->add_hook(recording, p.settings, p.params);
      } catch (...) {
        t_create = nullptr;
        throw;
      }
      t_create = nullptr;
    } else {
      const LoadedPlugin& plugin = *unloaded;
      SandboxOptions sandbox;
      sandbox.call_timeout = p.call_timeout;
      sandbox.memory_limit_mb = p.memory_limit_mb;
      const int64_t start_step = script_.start_step;
      runtime->add_hook(plugin_.id, 1, p.settings, [&](const hh_host& host) {
        return std::make_unique<RecordedDispatch>(
            make_process_dispatch(plugin, p.settings.instance_name, p.params, host, sandbox),
            run.calls, start_step);
      });
    }
  } catch (const ConfigError& e) {
    // As the program: a plugin's refusal points at the key its message names.
    const std::string key = e.key().empty() ? key_named_in(e.what(), p.hook.params) : e.key();
    throw ConfigError(p.config.where(p.hook, key) + display_text(e.what(), 1024), key);
  }
  if (!run_steps) return run;  // the runtime destroys the instance, never begun

  // The program's loop (Job::run): nothing may skip the ending.
  try {
    if (runtime->start())
      while (!runtime->should_stop()) runtime->run();
  } catch (const std::exception& e) {
    logger->error("internal error: {}", e.what());
    runtime->fail_job(std::string("internal error: ") + e.what());
  }
  const JobResult result = runtime->close();
  run.outcome = result.outcome;
  run.stop_cause = result.stop_cause;
  run.reason = result.reason;
  run.global_step = result.global_step;
  run.steps_run = result.steps_run;
  const auto states = runtime->saved_hook_states();
  if (auto it = states.find(p.settings.instance_name); it != states.end())
    run.saved_state = it->second;
  const auto reports = runtime->reports();
  if (!reports.empty()) run.report = reports.front();
  runtime.reset();  // destroy() runs here; what it logs is kept too
  session.runtime = nullptr;

  run.disabled = run.report.disabled;
  run.failure = parse_failure(run.report.failure);
  for (const CaptureSink::Line& line : sink->lines()) {
    LogLine entry_line{line.level, line.text};
    if (line.logger == p.settings.instance_name)
      run.log.push_back(entry_line);
    else
      run.host_log.push_back(entry_line);
    run.all_log_.push_back({line.logger, std::move(entry_line)});
  }
  collect_checkpoints(run);
  find_hook_stop(run, p.settings.instance_name);
  return run;
}

RunResult HookTest::run() {
  return execute(prepare(), true);
}

std::string HookTest::configuration_error() {
  try {
    execute(prepare(), false);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return {};
}

}  // namespace hookhost::testing
