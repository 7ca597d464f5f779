#include "hookhost/host/runtime.hpp"

#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/steps.h>
#include <hookhost/ext/summary.h>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "hookhost/host/checkpoint.hpp"
#include "hookhost/host/event_writer.hpp"

namespace hookhost {

const char* policy_name(FailurePolicy policy) {
  switch (policy) {
    case FailurePolicy::disable: return "disable";
    case FailurePolicy::stop: return "stop";
    case FailurePolicy::fail: return "fail";
  }
  return "?";
}

std::optional<FailurePolicy> parse_policy(const std::string& text) {
  if (text == "disable") return FailurePolicy::disable;
  if (text == "stop") return FailurePolicy::stop;
  if (text == "fail") return FailurePolicy::fail;
  return std::nullopt;
}

const char* outcome_name(Outcome outcome) {
  switch (outcome) {
    case Outcome::completed: return "completed";
    case Outcome::stopped: return "stopped";
    case Outcome::failed: return "failed";
  }
  return "?";
}

namespace {

// The five lifecycle callbacks; an index, so per-call accounting needs no string lookup.
enum class Callback : size_t { begin, after_create_session, before_run, after_run, end };
constexpr std::array<const char*, 5> kCallbackNames = {"begin", "after_create_session",
                                                       "before_run", "after_run", "end"};
const char* name_of(Callback cb) {
  return kCallbackNames[static_cast<size_t>(cb)];
}

// Where an instance is in its lifecycle. The runtime checks every call against it.
enum class HookState { created, begun, in_session, in_step, ended, destroyed };

const char* state_name(HookState s) {
  switch (s) {
    case HookState::created: return "created";
    case HookState::begun: return "begun";
    case HookState::in_session: return "in session";
    case HookState::in_step: return "in step";
    case HookState::ended: return "ended";
    case HookState::destroyed: return "destroyed";
  }
  return "?";
}

std::shared_ptr<spdlog::logger> default_logger() {
  if (auto existing = spdlog::get("hookhost")) return existing;
  auto logger = std::make_shared<spdlog::logger>(
      "hookhost", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  return logger;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "(none)" : out;
}

}  // namespace

// The services one instance sees through hh_host.
struct HostServices {
  hh_host c{};
  Runtime::Impl* owner = nullptr;
  std::string instance_name;
  std::string run_dir;
  std::shared_ptr<spdlog::logger> logger;
  mutable std::mutex state_mutex;
  std::string state;
  bool has_state = false;

  static HostServices& self(const hh_host* h) { return *static_cast<HostServices*>(h->host_data); }
};

// Collects one hook's fetches and feeds during its before_run.
struct RequestBuilder {
  hh_run_request c{};
  Runtime::Impl* owner = nullptr;
  struct Slot* slot = nullptr;
};

struct Slot {
  HookSettings settings;
  size_t added_index = 0;
  std::shared_ptr<const LoadedPlugin> plugin;  // keeps metadata alive; libraries never unload
  std::unique_ptr<HostServices> services;
  std::unique_ptr<HookDispatch> dispatch;
  HookState state = HookState::created;
  bool begin_called = false;
  bool disabled = false;
  std::string failure;
  std::array<CallStats, kCallbackNames.size()> stats{};
  // This step's request.
  std::vector<std::string> fetches;
  TensorMap feeds;
  std::string request_error;
};

struct Runtime::Impl {
  Session& session;
  RuntimeOptions options;
  std::shared_ptr<spdlog::logger> log;
  std::vector<std::unique_ptr<Slot>> slots;  // in resolved order after start()
  std::set<std::string> fetchable;
  std::set<std::string> feedable;

  bool started = false;
  bool closed = false;
  bool end_of_data = false;
  bool failed = false;
  int creation = 0;
  int64_t steps_run = 0;
  std::atomic<int64_t> live_step{0};
  std::atomic<bool> stop_requested{false};
  mutable std::mutex stop_mutex;
  hh_stop_cause stop_cause = HH_STOP_CAUSE_NONE;
  std::string stop_reason;
  std::string failure_reason;
  JobResult result;

  std::vector<hh_tensor> views_buffer;

  // This step's merged feeds and who gave them ("the caller" or a hook instance).
  TensorMap merged_feeds;
  std::map<std::string, std::string> feed_owner;

  Impl(Session& s, RuntimeOptions o) : session(s), options(std::move(o)) {
    log = options.logger ? options.logger : default_logger();
  }

  // ---- stop and failure ------------------------------------------------------------------

  void request_stop(hh_stop_cause cause, const std::string& reason) {
    std::lock_guard lock(stop_mutex);
    if (!stop_requested.exchange(true)) {
      stop_cause = cause;
      stop_reason = reason;
      log->info("stop requested: {}", reason);
    }
  }

  void fail_job(const std::string& reason) {
    if (failed) return;
    failed = true;
    failure_reason = reason;
    log->error("job failed: {}", reason);
  }

  bool should_stop() const { return closed || failed || end_of_data || stop_requested.load(); }

  // ---- calling hooks ---------------------------------------------------------------------

  template <typename Fn>
  CallResult timed(Slot& slot, Callback callback, Fn&& fn) {
    auto t0 = std::chrono::steady_clock::now();
    CallResult r = fn();
    auto dt = std::chrono::steady_clock::now() - t0;
    CallStats& st = slot.stats[static_cast<size_t>(callback)];
    ++st.calls;
    st.total += std::chrono::duration_cast<std::chrono::nanoseconds>(dt);
    st.max = std::max(st.max, std::chrono::duration_cast<std::chrono::nanoseconds>(dt));
    return r;
  }

  void check_state(const Slot& slot, Callback callback, std::initializer_list<HookState> ok) {
    for (HookState s : ok)
      if (slot.state == s) return;
    // A runtime bug, never a plugin's: calling out of order would break the ABI's promise.
    throw std::logic_error("hookhost internal error: " + std::string(name_of(callback)) +
                           " on hook '" + slot.settings.instance_name + "' in state " +
                           state_name(slot.state));
  }

  void handle_result(Slot& slot, Callback cb, const CallResult& r) {
    const char* callback = name_of(cb);
    if (r.status == HH_STOP_REQUESTED) {
      request_stop(HH_STOP_CAUSE_HOOK,
                   "hook '" + slot.settings.instance_name + "' requested a stop in " + callback);
      return;
    }
    if (r.ok()) return;
    ++slot.stats[static_cast<size_t>(cb)].failures;
    const std::string what = "hook '" + slot.settings.instance_name + "' (plugin '" +
                             slot.dispatch->plugin_id() + "', " + slot.dispatch->plugin_file() +
                             ") failed in " + callback + " at global step " +
                             std::to_string(live_step.load()) + ": " + r.message;
    const FailurePolicy policy = slot.settings.on_error;
    switch (policy) {
      case FailurePolicy::disable:
        log->error("{} [on_error=disable: the hook is disabled, the job continues]", what);
        break;
      case FailurePolicy::stop:
        log->error("{} [on_error=stop: the job stops after this step]", what);
        break;
      case FailurePolicy::fail: log->error("{} [on_error=fail: the job fails]", what); break;
    }
    if (!slot.disabled) {
      slot.disabled = true;
      slot.failure = std::string(callback) + " failed: " + r.message;
    }
    if (policy == FailurePolicy::stop) request_stop(HH_STOP_CAUSE_HOOK, what);
    if (policy == FailurePolicy::fail) fail_job(what);
  }

  bool active(const Slot& slot) const { return !slot.disabled; }

  // ---- lifecycle ---------------------------------------------------------------------------

  void after_create_session_all() {
    hh_session_info info{};
    info.struct_size = HH_SESSION_INFO_SIZE;
    info.global_step = live_step.load();
    info.creation = static_cast<uint32_t>(creation);
    for (auto& sp : slots) {
      Slot& slot = *sp;
      if (!active(slot)) continue;
      check_state(slot, Callback::after_create_session, {HookState::begun, HookState::in_session});
      CallResult r = timed(slot, Callback::after_create_session,
                           [&] { return slot.dispatch->after_create_session(info); });
      slot.state = HookState::in_session;
      handle_result(slot, Callback::after_create_session, r);
    }
  }

  bool create_session() {
    ++creation;
    try {
      session.create(creation);
    } catch (const std::exception& e) {
      fail_job(std::string("the workload could not create its session: ") + e.what());
      return false;
    }
    live_step = session.global_step();
    return true;
  }

  bool recover(int attempt, const std::string& message) {
    if (attempt > options.max_recoveries) {
      fail_job("the step failed with a recoverable error " + std::to_string(attempt) +
               " times in a row (max_recoveries=" + std::to_string(options.max_recoveries) +
               "): " + message);
      return false;
    }
    auto backoff = options.recovery_backoff * (1 << std::min(attempt - 1, 10));
    log->warn(
        "recoverable error at global step {}: {}; recreating the session in {} ms "
        "(attempt {} of {})",
        live_step.load(), message, backoff.count(), attempt, options.max_recoveries);
    std::this_thread::sleep_for(backoff);
    if (!create_session()) return false;
    if (options.on_recover) {
      try {
        options.on_recover(*owner_runtime);
      } catch (const std::exception& e) {
        fail_job(std::string("restoring after a recoverable error failed: ") + e.what());
        return false;
      }
      live_step = session.global_step();
    }
    after_create_session_all();
    return !failed;
  }

  Runtime* owner_runtime = nullptr;

  // Drops what the hooks asked for in an attempt that did not reach after_run.
  void abandon_step() {
    for (auto& sp : slots)
      if (sp->state == HookState::in_step) sp->state = HookState::in_session;
  }

  bool run_before(const hh_run_context& ctx, const std::vector<std::string>& caller_fetches,
                  const TensorMap& caller_feeds, std::vector<std::string>& all_fetches) {
    merged_feeds = caller_feeds;
    feed_owner.clear();
    for (const auto& [name, _] : caller_feeds) feed_owner[name] = "the caller";
    all_fetches = caller_fetches;
    for (auto& sp : slots) {
      Slot& slot = *sp;
      if (!active(slot)) continue;
      check_state(slot, Callback::before_run, {HookState::in_session});
      slot.fetches.clear();
      slot.feeds.clear();
      slot.request_error.clear();
      RequestBuilder builder;
      builder.c.struct_size = HH_RUN_REQUEST_SIZE;
      builder.c.host_data = &builder;
      builder.c.add_fetch = &add_fetch;
      builder.c.add_feed = &add_feed;
      builder.owner = this;
      builder.slot = &slot;
      CallResult r = timed(slot, Callback::before_run,
                           [&] { return slot.dispatch->before_run(ctx, builder.c); });
      // The host's own reason for a rejected fetch or feed is more precise than the plugin's.
      if (!slot.request_error.empty()) r = CallResult{HH_ERROR, slot.request_error};
      if (!r.ok()) {
        // A hook that failed in before_run contributes nothing to this step.
        slot.fetches.clear();
        slot.feeds.clear();
        handle_result(slot, Callback::before_run, r);
        if (failed) return false;
        continue;
      }
      handle_result(slot, Callback::before_run, r);
      for (const auto& name : slot.fetches)
        if (std::find(all_fetches.begin(), all_fetches.end(), name) == all_fetches.end())
          all_fetches.push_back(name);
      for (auto& [name, value] : slot.feeds) {
        feed_owner[name] = "hook '" + slot.settings.instance_name + "'";
        merged_feeds.insert_or_assign(name, std::move(value));
      }
      slot.feeds.clear();
      slot.state = HookState::in_step;
    }
    return true;
  }

  static hh_status add_fetch(hh_run_request* request, const char* name) {
    auto& b = *static_cast<RequestBuilder*>(request->host_data);
    if (!name || !b.owner->fetchable.count(name)) {
      b.slot->request_error = std::string("before_run asked to fetch '") +
                              (name ? name : "(null)") +
                              "', which the workload does not provide (it provides: " +
                              join({b.owner->fetchable.begin(), b.owner->fetchable.end()}) + ")";
      return HH_ERROR;
    }
    if (std::find(b.slot->fetches.begin(), b.slot->fetches.end(), name) == b.slot->fetches.end())
      b.slot->fetches.emplace_back(name);
    return HH_OK;
  }

  static hh_status add_feed(hh_run_request* request, const hh_tensor* value) {
    auto& b = *static_cast<RequestBuilder*>(request->host_data);
    Slot& slot = *b.slot;
    if (!value || !value->name) {
      slot.request_error = "before_run gave a feed without a name";
      return HH_ERROR;
    }
    const std::string name = value->name;
    if (!b.owner->feedable.count(name)) {
      slot.request_error = "before_run asked to feed '" + name +
                           "', which the workload does not accept (it accepts: " +
                           join({b.owner->feedable.begin(), b.owner->feedable.end()}) + ")";
      return HH_ERROR;
    }
    auto owner = b.owner->feed_owner.find(name);
    if (owner != b.owner->feed_owner.end() || slot.feeds.count(name)) {
      const std::string other =
          owner != b.owner->feed_owner.end() ? owner->second : "this hook itself";
      slot.request_error = "feed conflict: hook '" + slot.settings.instance_name + "' and " +
                           other + " both feed '" + name + "'";
      return HH_ERROR;
    }
    try {
      slot.feeds.emplace(name, Tensor::from_view(*value));
    } catch (const std::exception& e) {
      slot.request_error = "before_run gave an invalid feed for '" + name + "': " + e.what();
      return HH_ERROR;
    }
    return HH_OK;
  }

  void run_after(const hh_run_context& ctx, const TensorMap& values) {
    for (auto& sp : slots) {
      Slot& slot = *sp;
      if (!active(slot) || slot.state != HookState::in_step) continue;
      std::vector<hh_tensor>& views = views_buffer;  // reused: no allocation per hook per step
      views.clear();
      for (const auto& name : slot.fetches) {
        auto it = values.find(name);
        if (it == values.end()) {
          fail_job("the workload did not return the fetched tensor '" + name + "'");
          abandon_step();
          return;
        }
        views.push_back(it->second.view(name.c_str()));
      }
      hh_run_values rv{};
      rv.struct_size = HH_RUN_VALUES_SIZE;
      rv.tensors = views.empty() ? nullptr : views.data();
      rv.count = static_cast<uint32_t>(views.size());
      hh_run_context after_ctx = ctx;
      after_ctx.stop_requested = stop_requested.load() ? 1 : 0;
      CallResult r =
          timed(slot, Callback::after_run, [&] { return slot.dispatch->after_run(after_ctx, rv); });
      slot.state = HookState::in_session;
      handle_result(slot, Callback::after_run, r);
    }
  }

  void deliver_end() {
    hh_end_info job{};
    job.struct_size = HH_END_INFO_SIZE;
    job.global_step = live_step.load();
    std::string job_reason;
    if (failed) {
      result.outcome = Outcome::failed;
      job_reason = failure_reason;
    } else if (stop_requested.load()) {
      std::lock_guard lock(stop_mutex);
      result.outcome = Outcome::stopped;
      result.stop_cause = stop_cause;
      job_reason = stop_reason;
    } else if (end_of_data) {
      result.outcome = Outcome::completed;
      job_reason = result.reason.empty() ? "end of data" : result.reason;
    } else {
      result.outcome = Outcome::stopped;
      result.stop_cause = HH_STOP_CAUSE_HOST;
      job_reason = "closed by the host program";
    }
    result.reason = job_reason;
    result.global_step = live_step.load();
    result.steps_run = steps_run;
    job.outcome = result.outcome == Outcome::completed ? HH_OUTCOME_COMPLETED
                  : result.outcome == Outcome::stopped ? HH_OUTCOME_STOPPED
                                                       : HH_OUTCOME_FAILED;
    job.stop_cause = result.stop_cause;
    job.reason = job_reason.c_str();

    for (auto& sp : slots) {
      Slot& slot = *sp;
      if (!slot.begin_called || slot.state == HookState::ended) continue;
      check_state(slot, Callback::end,
                  {HookState::begun, HookState::in_session, HookState::in_step});
      hh_end_info info = job;
      std::string own_reason;
      if (slot.disabled) {
        own_reason = "this hook was disabled: " + slot.failure;
        info.outcome = HH_OUTCOME_FAILED;
        info.stop_cause = HH_STOP_CAUSE_NONE;
        info.reason = own_reason.c_str();
      }
      CallResult r = timed(slot, Callback::end, [&] { return slot.dispatch->end(info); });
      slot.state = HookState::ended;
      if (!r.ok()) {
        ++slot.stats[static_cast<size_t>(Callback::end)].failures;
        log->error("hook '{}' (plugin '{}', {}) failed in end: {}", slot.settings.instance_name,
                   slot.dispatch->plugin_id(), slot.dispatch->plugin_file(), r.message);
        if (slot.failure.empty()) slot.failure = "end failed: " + r.message;
      }
    }
  }

  void destroy_all() {
    for (auto& sp : slots) {
      Slot& slot = *sp;
      if (slot.state == HookState::destroyed) continue;
      slot.dispatch->destroy();
      slot.state = HookState::destroyed;
    }
  }

  // ---- host services ---------------------------------------------------------------------

  static const char* svc_instance_name(const hh_host* h) {
    return HostServices::self(h).instance_name.c_str();
  }
  static void svc_log(const hh_host* h, int32_t level, const char* message, size_t size) {
    auto& s = HostServices::self(h);
    level = std::clamp<int32_t>(level, HH_LOG_TRACE, HH_LOG_ERROR);
    s.logger->log(static_cast<spdlog::level::level_enum>(level),
                  std::string_view(message ? message : "", message ? size : 0));
  }
  static int32_t svc_log_enabled(const hh_host* h, int32_t level) {
    level = std::clamp<int32_t>(level, HH_LOG_TRACE, HH_LOG_ERROR);
    return HostServices::self(h).logger->should_log(static_cast<spdlog::level::level_enum>(level));
  }
  static int64_t svc_global_step(const hh_host* h) {
    return HostServices::self(h).owner->live_step.load();
  }
  static void svc_request_stop(const hh_host* h, const char* reason) {
    auto& s = HostServices::self(h);
    s.owner->request_stop(HH_STOP_CAUSE_HOOK, "hook '" + s.instance_name + "': " +
                                                  (reason && *reason ? reason : "stop requested"));
  }
  static int32_t svc_should_stop(const hh_host* h) {
    return HostServices::self(h).owner->stop_requested.load() ? 1 : 0;
  }
  static const char* svc_run_dir(const hh_host* h) { return HostServices::self(h).run_dir.c_str(); }
  static hh_status svc_state_put(const hh_host* h, const void* data, size_t size) {
    auto& s = HostServices::self(h);
    try {
      std::lock_guard lock(s.state_mutex);
      s.state.assign(static_cast<const char*>(data), data ? size : 0);
      s.has_state = true;
      return HH_OK;
    } catch (...) {
      return HH_ERROR;
    }
  }
  static void svc_state_get(const hh_host* h, const void** data, size_t* size) {
    auto& s = HostServices::self(h);
    std::lock_guard lock(s.state_mutex);
    *data = s.has_state ? s.state.data() : nullptr;
    *size = s.has_state ? s.state.size() : 0;
  }
  static const void* svc_get_service(const hh_host* h, const char* id) {
    if (!id) return nullptr;
    auto& services = HostServices::self(h).owner->options.services;
    if (auto it = services.find(id); it != services.end()) return it->second;
    if (std::strcmp(id, HH_SERVICE_STEPS) == 0) return &kStepsService;
    if (std::strcmp(id, HH_SERVICE_CHECKPOINT) == 0) return &kCheckpointService;
    if (std::strcmp(id, HH_SERVICE_SUMMARY) == 0) return &kSummaryService;
    return nullptr;
  }

  // ---- built-in services: hh.steps/1, hh.checkpoint/1, hh.summary/1 ------------------------

  std::atomic<int64_t> published_last_step{-1};

  static void svc_publish_last_step(const hh_host* h, int64_t step) {
    auto& published = HostServices::self(h).owner->published_last_step;
    int64_t current = published.load();
    while ((current < 0 || step < current) && !published.compare_exchange_weak(current, step)) {
    }
  }
  static int64_t svc_last_step(const hh_host* h) {
    Impl& m = *HostServices::self(h).owner;
    int64_t published = m.published_last_step.load();
    std::optional<int64_t> own = m.session.last_step();
    if (own && (published < 0 || *own < published)) return *own;
    return published;
  }

  std::map<std::string, std::string> collect_hook_states() const {
    std::map<std::string, std::string> out;
    for (const auto& sp : slots) {
      std::lock_guard lock(sp->services->state_mutex);
      if (sp->services->has_state) out.emplace(sp->settings.instance_name, sp->services->state);
    }
    return out;
  }

  static hh_status svc_checkpoint_save(const hh_host* h, const char* dir, const char* basename,
                                       uint32_t max_to_keep, char* out_path, size_t capacity,
                                       hh_error* err) {
    Impl& m = *HostServices::self(h).owner;
    try {
      Checkpoint checkpoint;
      checkpoint.global_step = m.live_step.load();
      checkpoint.workload_state = m.session.save_state();
      checkpoint.hook_states = m.collect_hook_states();
      std::filesystem::path folder =
          (dir && *dir) ? std::filesystem::path(dir) : m.options.run_dir / "checkpoints";
      std::filesystem::path written = write_checkpoint(
          folder, basename && *basename ? basename : "model.ckpt", checkpoint, max_to_keep);
      if (out_path && capacity > 0) {
        std::string text = written.string();
        size_t n = std::min(text.size(), capacity - 1);
        std::memcpy(out_path, text.data(), n);
        out_path[n] = '\0';
      }
      return HH_OK;
    } catch (const std::exception& e) {
      return hh_fail(err, HH_ERROR, e.what());
    }
  }

  static std::filesystem::path summary_dir(const hh_host* h, const char* dir) {
    return (dir && *dir) ? std::filesystem::path(dir)
                         : HostServices::self(h).owner->options.run_dir;
  }
  static hh_status svc_add_scalar(const hh_host* h, const char* dir, const char* tag, double value,
                                  int64_t step, hh_error* err) {
    try {
      event_writer_for(summary_dir(h, dir))
          .add_scalar(step, tag ? tag : "", static_cast<float>(value));
      return HH_OK;
    } catch (const std::exception& e) {
      return hh_fail(err, HH_ERROR, e.what());
    }
  }
  static hh_status svc_add_session_log(const hh_host* h, const char* dir, int32_t status,
                                       const char* checkpoint_path, int64_t step, hh_error* err) {
    try {
      event_writer_for(summary_dir(h, dir))
          .add_session_log(step, status, checkpoint_path ? checkpoint_path : "");
      return HH_OK;
    } catch (const std::exception& e) {
      return hh_fail(err, HH_ERROR, e.what());
    }
  }
  static hh_status svc_summary_flush(const hh_host* h, const char* dir, hh_error* err) {
    try {
      event_writer_for(summary_dir(h, dir)).flush();
      return HH_OK;
    } catch (const std::exception& e) {
      return hh_fail(err, HH_ERROR, e.what());
    }
  }

  static const hh_steps_service kStepsService;
  static const hh_checkpoint_service kCheckpointService;
  static const hh_summary_service kSummaryService;

  std::unique_ptr<HostServices> make_services(const std::string& instance) {
    auto s = std::make_unique<HostServices>();
    s->owner = this;
    s->instance_name = instance;
    s->run_dir = options.run_dir.string();
    s->logger = log->clone(instance);
    hh_host& c = s->c;
    c.struct_size = HH_HOST_SIZE;
    c.host_data = s.get();
    c.instance_name = &svc_instance_name;
    c.log = &svc_log;
    c.log_enabled = &svc_log_enabled;
    c.global_step = &svc_global_step;
    c.request_stop = &svc_request_stop;
    c.should_stop = &svc_should_stop;
    c.run_dir = &svc_run_dir;
    c.state_put = &svc_state_put;
    c.state_get = &svc_state_get;
    c.get_service = &svc_get_service;
    return s;
  }

  // Checked before a plugin instance is created, so a refused hook is never created at all.
  void check_can_add(const std::string& instance_name) const {
    if (started) throw std::logic_error("add_hook after start()");
    for (const auto& other : slots)
      if (other->settings.instance_name == instance_name)
        throw ConfigError("two hooks are named '" + instance_name +
                          "'; instance names must be unique");
  }

  void add_slot(std::unique_ptr<Slot> slot) {
    slot->added_index = slots.size();
    slots.push_back(std::move(slot));
  }
};

const hh_steps_service Runtime::Impl::kStepsService = {
    HH_STEPS_SERVICE_SIZE, &Runtime::Impl::svc_publish_last_step, &Runtime::Impl::svc_last_step};
const hh_checkpoint_service Runtime::Impl::kCheckpointService = {
    HH_CHECKPOINT_SERVICE_SIZE, &Runtime::Impl::svc_checkpoint_save};
const hh_summary_service Runtime::Impl::kSummaryService = {
    HH_SUMMARY_SERVICE_SIZE, &Runtime::Impl::svc_add_scalar, &Runtime::Impl::svc_add_session_log,
    &Runtime::Impl::svc_summary_flush};

Runtime::Runtime(Session& session, RuntimeOptions options)
    : impl_(std::make_unique<Impl>(session, std::move(options))) {
  impl_->owner_runtime = this;
}

Runtime::~Runtime() {
  try {
    if (impl_->started && !impl_->closed) close();
    impl_->destroy_all();
  } catch (const std::exception& e) {
    impl_->log->error("error while shutting the runtime down: {}", e.what());
  }
}

void Runtime::add_hook(std::shared_ptr<const LoadedPlugin> plugin, HookSettings settings,
                       const ResolvedParams& params) {
  Impl& m = *impl_;
  const std::string where = "hook '" + settings.instance_name + "' (plugin '" +
                            plugin->metadata().id + "', " + plugin->file().string() + ")";
  m.check_can_add(settings.instance_name);
  auto services = m.make_services(settings.instance_name);
  std::vector<hh_param_value> values = params.c_values();
  hh_create_args args{};
  args.struct_size = HH_CREATE_ARGS_SIZE;
  args.instance_name = settings.instance_name.c_str();
  args.params = values.empty() ? nullptr : values.data();
  args.param_count = static_cast<uint32_t>(values.size());
  hh_hook* hook = nullptr;
  hh_error err;
  std::memset(&err, 0, sizeof err);
  err.struct_size = HH_STRUCT_SIZE(hh_error, message);
  hh_status status;
  try {
    status = plugin->entry().create(&services->c, &args, &hook, &err);
  } catch (...) {
    status = HH_ERROR;
    std::strcpy(err.message, "an exception escaped the plugin's create()");
  }
  err.message[HH_ERROR_MESSAGE_SIZE - 1] = '\0';
  if (status != HH_OK || !hook)
    throw ConfigError(where + ": " + (err.message[0] ? err.message : "create() failed"));
  if (hook->struct_size < HH_HOOK_SIZE || !hook->begin || !hook->after_create_session ||
      !hook->before_run || !hook->after_run || !hook->end || !hook->destroy) {
    if (hook->struct_size >= HH_HOOK_SIZE && hook->destroy) hook->destroy(hook);
    throw ConfigError(where + ": create() returned an incomplete hh_hook (struct_size " +
                      std::to_string(hook->struct_size) + ", every callback must be set)");
  }
  auto slot = std::make_unique<Slot>();
  slot->settings = std::move(settings);
  slot->plugin = plugin;
  slot->services = std::move(services);
  slot->dispatch = make_inprocess_dispatch(hook, plugin->metadata().id, plugin->file().string());
  m.add_slot(std::move(slot));
}

void Runtime::add_hook(std::unique_ptr<HookDispatch> hook, HookSettings settings) {
  impl_->check_can_add(settings.instance_name);
  auto slot = std::make_unique<Slot>();
  slot->services = impl_->make_services(settings.instance_name);
  slot->settings = std::move(settings);
  slot->dispatch = std::move(hook);
  impl_->add_slot(std::move(slot));
}

bool Runtime::start() {
  Impl& m = *impl_;
  if (m.started) throw std::logic_error("start() called twice");
  m.started = true;
  std::stable_sort(m.slots.begin(), m.slots.end(), [](const auto& a, const auto& b) {
    return a->settings.order < b->settings.order;
  });
  std::string order;
  for (const auto& s : m.slots)
    order += (order.empty() ? "" : ", ") + s->settings.instance_name + " (order " +
             std::to_string(s->settings.order) + ")";
  m.log->info("hook order: {}", order.empty() ? "(no hooks)" : order);
  for (const auto& n : m.session.fetchable()) m.fetchable.insert(n);
  for (const auto& n : m.session.feedable()) m.feedable.insert(n);

  for (auto& sp : m.slots) {
    Slot& slot = *sp;
    m.check_state(slot, Callback::begin, {HookState::created});
    slot.begin_called = true;
    CallResult r = m.timed(slot, Callback::begin, [&] { return slot.dispatch->begin(); });
    slot.state = HookState::begun;
    m.handle_result(slot, Callback::begin, r);
    if (m.failed) return false;
  }
  if (!m.create_session()) return false;
  m.after_create_session_all();
  return !m.failed;
}

RunOutput Runtime::run(const std::vector<std::string>& fetches, const TensorMap& feeds) {
  Impl& m = *impl_;
  if (!m.started) throw std::logic_error("run() called before start()");
  if (m.should_stop())
    throw std::logic_error("run() called after the job should stop; check should_stop() first");
  for (const auto& name : fetches)
    if (!m.fetchable.count(name))
      throw std::invalid_argument("the caller asked to fetch '" + name +
                                  "', which the workload does not provide");
  for (const auto& [name, _] : feeds)
    if (!m.feedable.count(name))
      throw std::invalid_argument("the caller asked to feed '" + name +
                                  "', which the workload does not accept");

  RunOutput out;
  for (int attempt = 1;; ++attempt) {
    hh_run_context ctx{};
    ctx.struct_size = HH_RUN_CONTEXT_SIZE;
    ctx.global_step = m.session.global_step();
    ctx.iteration = m.steps_run;
    ctx.stop_requested = m.stop_requested.load() ? 1 : 0;

    std::vector<std::string> all_fetches;
    if (!m.run_before(ctx, fetches, feeds, all_fetches)) {
      m.abandon_step();
      return out;
    }
    StepResult step;
    try {
      step = m.session.run(all_fetches, m.merged_feeds);
    } catch (const std::exception& e) {
      step.status = StepStatus::error;
      step.message = std::string("the workload threw: ") + e.what();
    }
    m.merged_feeds.clear();
    switch (step.status) {
      case StepStatus::ok: break;
      case StepStatus::end_of_data:
        m.abandon_step();
        m.end_of_data = true;
        m.result.reason = "end of data" + (step.message.empty() ? "" : ": " + step.message);
        m.log->info("{} after {} steps", m.result.reason, m.steps_run);
        return out;
      case StepStatus::aborted:
      case StepStatus::unavailable:
        m.abandon_step();
        if (!m.recover(attempt, step.message)) return out;
        continue;
      case StepStatus::error:
        m.abandon_step();
        m.fail_job("the workload failed at global step " + std::to_string(ctx.global_step) + ": " +
                   step.message);
        return out;
    }
    ++m.steps_run;
    m.live_step = m.session.global_step();
    m.run_after(ctx, step.values);
    if (m.failed) return out;
    out.ran = true;
    for (const auto& name : fetches) {
      auto it = step.values.find(name);
      if (it != step.values.end()) out.values.insert_or_assign(name, it->second);
    }
    return out;
  }
}

bool Runtime::should_stop() const {
  return impl_->should_stop();
}

void Runtime::request_stop(hh_stop_cause cause, const std::string& reason) {
  impl_->request_stop(cause, reason);
}

JobResult Runtime::close() {
  Impl& m = *impl_;
  if (m.closed) return m.result;
  m.deliver_end();
  m.closed = true;
  try {
    flush_event_writers();  // whatever hooks wrote reaches the disk even if they never flushed
  } catch (const std::exception& e) {
    m.log->error("{}", e.what());
  }
  m.log->info("job {}: {} (global step {}, {} steps run)", outcome_name(m.result.outcome),
              m.result.reason, m.result.global_step, m.result.steps_run);
  return m.result;
}

JobResult Runtime::run_to_end() {
  if (start())
    while (!should_stop()) run();
  return close();
}

std::vector<std::string> Runtime::hook_order() const {
  std::vector<std::string> names;
  for (const auto& s : impl_->slots) names.push_back(s->settings.instance_name);
  return names;
}

std::vector<HookReport> Runtime::reports() const {
  std::vector<HookReport> out;
  for (const auto& sp : impl_->slots) {
    HookReport r;
    r.instance_name = sp->settings.instance_name;
    r.plugin_id = sp->dispatch->plugin_id();
    r.plugin_file = sp->dispatch->plugin_file();
    r.disabled = sp->disabled;
    r.failure = sp->failure;
    for (size_t i = 0; i < kCallbackNames.size(); ++i)
      r.callbacks[kCallbackNames[i]] = sp->stats[i];
    out.push_back(std::move(r));
  }
  return out;
}

const JobResult& Runtime::result() const {
  return impl_->result;
}

Session& Runtime::session() {
  return impl_->session;
}

std::map<std::string, std::string> Runtime::hook_states() const {
  return impl_->collect_hook_states();
}

void Runtime::restore_hook_states(const std::map<std::string, std::string>& states) {
  for (const auto& [name, bytes] : states) {
    auto it = std::find_if(impl_->slots.begin(), impl_->slots.end(),
                           [&](const auto& s) { return s->settings.instance_name == name; });
    if (it == impl_->slots.end()) {
      impl_->log->warn(
          "the checkpoint holds state for hook '{}', which is not configured; "
          "ignoring it",
          name);
      continue;
    }
    std::lock_guard lock((*it)->services->state_mutex);
    (*it)->services->state = bytes;
    (*it)->services->has_state = true;
  }
}

}  // namespace hookhost
