#include "process_dispatch.hpp"

#include <unistd.h>

#include <hookhost/ext/job.h>

#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "plugins/trust.hpp"
#include "protocol.hpp"
#include "runner_group.hpp"
#include "runtime/call_result.hpp"
#include "runtime/create_verdict.hpp"
#include "runtime/observed_exchange.hpp"
#include "services/service.hpp"
#include "shared_values.hpp"
#include "support/find_on_path.hpp"
#include "support/text.hpp"

namespace hookhost {

namespace fs = std::filesystem;
using namespace sandbox;

namespace {

constexpr const char* kRunnerName = "hookhost-runner";
// destroy() waits this long for the plugin's destroy (unless call_timeout is set) and then for
// the runner to exit, before killing it.
constexpr auto kDestroyTimeout = std::chrono::seconds(5);
constexpr auto kExitTimeout = std::chrono::seconds(2);

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

// The create message: what create() receives in process, as values.
std::vector<std::byte> create_payload(const std::string& instance_name, const hh_host& host,
                                      const std::string& plugin_id, const ResolvedParams& params) {
  Writer w;
  w.put_text(instance_name);
  w.put_text(host.run_dir(&host));
  // hh.job/1 answers in the runner from this copy, without a round trip.
  const auto* job = static_cast<const hh_job_service*>(host.get_service(&host, HH_SERVICE_JOB));
  w.put_text(job ? job->config_dir(&host) : "");
  w.put_text(plugin_id);
  w.put<uint32_t>(offered_services(host));
  const ResolvedParams::CValues values = params.c_values();
  w.put<uint32_t>(static_cast<uint32_t>(values.values.size()));
  for (const hh_param_value& v : values.values) {
    w.put_text(v.name);
    w.put<int32_t>(v.type);
    w.put<int32_t>(v.is_set);
    w.put<int32_t>(v.bool_value);
    w.put<int64_t>(v.int_value);
    w.put<double>(v.float_value);
    w.put_text(v.string_value ? v.string_value : "");
    w.put<uint32_t>(v.list_count);
    for (uint32_t i = 0; i < v.list_count; ++i) w.put_text(v.list_items[i]);
  }
  const auto bytes = w.bytes();
  return {bytes.begin(), bytes.end()};
}

template <class... T>
bool is_builtin_service(const std::string& id, ServiceList<T...>) {
  return ((id == ServiceTable<T>::id) || ...);
}

// An embedder's service is a C table of pointers into this process: a runner cannot call it, and
// get_service there would answer NULL. Such a job is refused at start instead (an embedder's table
// for a built-in id has the built-in's functions and is forwarded as they are).
void refuse_embedder_services(const hh_host& host, const std::string& where) {
  std::string ids;
  for (const std::string& id : embedder_service_ids(host))
    if (!is_builtin_service(id, BuiltinServices{})) ids += (ids.empty() ? "" : ", ") + id;
  if (ids.empty()) return;
  throw ConfigError(
      where + ": isolation = process cannot offer the embedding program's services (" + ids +
      "): they are C tables in the host's process, which a hookhost-runner cannot "
      "call; run this hook with isolation = in_process, or leave those services out of "
      "RuntimeOptions::services");
}

class ProcessDispatchImpl final : public ProcessDispatch, public ObservedExchange {
 public:
  ProcessDispatchImpl(const LoadedPlugin& plugin, const std::string& instance_name,
                      const ResolvedParams& params, const hh_host& host,
                      const SandboxOptions& options, std::shared_ptr<RunnerGroup> group)
      : call_timeout_(options.call_timeout),
        group_(std::move(group)),
        plugin_id_(plugin.metadata().id),
        plugin_file_(plugin.file().string()),
        note_(plugin.metadata()),
        where_(describe_hook(instance_name, plugin_id_, plugin_file_)),
        create_payload_(create_payload(instance_name, host, plugin_id_, params)),
        id_(group_->join(host, instance_name, plugin_id_)) {
    // The bytes the runner opens: the host's verified copy. A plugin made without one (an
    // embedding program's own LoadedPlugin) is copied and checked here, once.
    std::shared_ptr<const LoadedPlugin> copied;
    const LoadedPlugin* source = &plugin;
    if (plugin.private_copy_fd() < 0) {
      try {
        copied = private_plugin_copy(DiscoveredPlugin{plugin.file(), plugin.metadata()});
      } catch (const LoadError& e) {
        group_->leave(id_, kExitTimeout);
        left_ = true;
        throw ConfigError(describe_hook(instance_name, plugin_id_) + ": " + e.what());
      }
      source = copied.get();
    }
    copy_ = source->private_copy();
    sha256_ = plugin.sha256().empty() ? source->sha256() : plugin.sha256();
  }

  ~ProcessDispatchImpl() override {
    if (!left_) group_->leave(id_, kExitTimeout);
  }

  // Starts the runner unless the group's runs, loads the plugin there and creates the instance;
  // throws ConfigError.
  void start() {
    lost_ = false;
    lost_message_.clear();
    created_ = false;
    // The pin, checked at every (re)start on the bytes the runner is about to open.
    const std::string copy_path = "/proc/self/fd/" + std::to_string(*copy_);
    std::string sha256;
    try {
      sha256 = sha256_of_file(copy_path);
    } catch (const std::exception& e) {
      refuse(std::string("cannot read the plugin's private copy: ") + e.what());
    }
    if (sha256 != sha256_)
      refuse("the plugin's bytes (copied from the file) have SHA-256 " + sha256 +
             ", not the approved " + sha256_ +
             ": the file is not the one that was approved; restore it, or pin the new hash after "
             "reviewing the plugin");
    try {
      generation_ = group_->ensure_running();
    } catch (const std::exception& e) {
      refuse(e.what());
    }
    Message reply;
    Writer load;
    load.put<uint32_t>(kProtocolVersion);
    put_metadata(load, note_);
    load.put_text(sha256_);
    if (!exchange(MessageType::load, load.bytes(), MessageType::loaded, reply, nullptr,
                  call_deadline(), "while loading the plugin", *copy_))
      refuse(lost_message_);
    Reader loaded(reply.payload);
    const bool ok = loaded.get<uint8_t>() != 0;
    const std::string error(loaded.get_bytes());
    const auto state_version = loaded.get<uint32_t>();
    if (!loaded.complete())
      refuse(group_->broke_protocol("a malformed loaded reply", "while loading the plugin"));
    if (!ok) refuse(error);
    state_version_ = state_version;

    if (!exchange(MessageType::create, create_payload_, MessageType::created, reply, nullptr,
                  call_deadline(), "during create()"))
      refuse(lost_message_);
    Reader created(reply.payload);
    const auto status = created.get<int32_t>();
    const std::string message(created.get_bytes());
    const bool has_hook = created.get<uint8_t>() != 0;
    const auto hook_size = created.get<uint32_t>();
    const bool has_destroy = created.get<uint8_t>() != 0;
    const auto implements = created.get<uint8_t>();
    if (!created.complete() || message.size() > HH_ERROR_MESSAGE_SIZE)
      refuse(group_->broke_protocol("a malformed created reply", "during create()"));
    // The runtime's words for each way create() can fail.
    if (std::string why = create_refusal(status, message, has_hook, hook_size, has_destroy);
        !why.empty())
      refuse(why);
    implements_ = implements;
    created_ = true;
  }

  std::string plugin_id() const override { return plugin_id_; }
  std::string plugin_file() const override { return plugin_file_; }
  uint32_t state_version() const override { return state_version_; }
  pid_t runner_pid() const override { return group_->pid(); }
  uint32_t plugin_abi_minor() const override { return note_.abi_minor; }
  // Only a runner of its own: killing a group's would take the other members with it.
  bool interrupt(const std::string& why) override {
    return group_->name().empty() && group_->interrupt(why);
  }
  bool runner_lost() const override { return lost_; }

  bool implements(Callback callback) const override {
    return (implements_ >> static_cast<unsigned>(callback)) & 1u;
  }
  // Device memory cannot be mapped into another process: a sandboxed hook takes CPU values only,
  // whatever its plugin declares, and the runtime's refusal says so.
  bool accepts_device(hh_device device) override { return device.type == HH_DEVICE_CPU; }
  std::string device_limit(hh_device) const override {
    return "a sandboxed hook takes values in host memory only (device memory cannot be mapped "
           "into its runner process): run it with isolation = in_process, or have the workload "
           "hand a host copy of the value";
  }

  CallResult begin() override {
    std::lock_guard calls(group_->calls_mutex());
    begin_called_ = true;
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::begin));
    return call(w, nullptr);
  }

  CallResult after_create_session(const hh_session_info& session) override {
    std::lock_guard calls(group_->calls_mutex());
    last_session_ = session;
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::after_create_session));
    w.put<uint32_t>(session.creation);
    w.put<int64_t>(session.global_step);
    return call(w, nullptr);
  }

  CallResult before_run(const hh_run_context& context, hh_run_request& request) override {
    std::lock_guard calls(group_->calls_mutex());
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::before_run));
    put_context(w, context);
    return call(w, &request);
  }

  CallResult after_run(const hh_run_context& context, const hh_run_values& values) override {
    std::lock_guard calls(group_->calls_mutex());
    if (const auto lost = check_runner()) return *lost;
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::after_run));
    put_context(w, context);
    const auto deadline = call_deadline();
    std::string failure;
    bool runner_lost = false;
    const auto placements = group_->place_values(id_, values, deadline, &failure, &runner_lost);
    if (!placements) {
      if (!runner_lost) return CallResult{HH_ERROR, 0, failure};
      lost_ = true;
      lost_message_ = failure;
      return lose_call();
    }
    put_placements(w, *placements);
    return call(w, nullptr, deadline);
  }

  const void* runner() const override { return group_.get(); }

  // One observe message (protocol.hpp): before_run's call_result comes first, with the names it
  // asked for, which are added to the host's request here; then the observed reply.
  ObservedResults observe_step(const ObservedCalls& calls) override {
    std::lock_guard lock(group_->calls_mutex());
    ObservedResults out;
    const bool call_before = calls.before != nullptr;
    // What ends the exchange early is the first call's outcome.
    auto fail = [&](CallResult r) {
      (call_before && !out.before_called ? out.before_called : out.after_called) = true;
      (out.after_called ? out.after : out.before) = std::move(r);
      return out;
    };
    if (const auto lost = check_runner()) return fail(*lost);
    if (const std::string problem = group_->side_channel_problem(); !problem.empty())
      return fail(broke_protocol(problem));
    Writer w;
    w.put<uint8_t>(call_before ? 1 : 0);
    put_context(w, call_before ? *calls.before : calls.after);
    put_context(w, calls.after);
    if (!call_before) {
      w.put<uint32_t>(static_cast<uint32_t>(calls.asked->size()));
      for (const std::string& name : *calls.asked) w.put_text(name);
    }
    Clock::time_point deadline = call_deadline();
    std::string failure;
    bool runner_lost = false;
    const auto placements =
        group_->place_values(id_, calls.values, deadline, &failure, &runner_lost);
    if (!placements) {
      if (!runner_lost) return fail(CallResult{HH_ERROR, 0, failure});
      lost_ = true;
      lost_message_ = failure;
      return fail(lose_call());
    }
    put_placements(w, *placements);
    const RunnerGroup::Interim before_returned = [&](const Message& message,
                                                     Clock::time_point& next_deadline) {
      if (!call_before || out.before_called) return false;
      Reader in(message.payload);
      std::optional<CallResult> result = read_returned(in);
      const auto count = in.get<uint32_t>();
      std::vector<std::string> asked;
      for (uint32_t i = 0; i < count && !in.failed(); ++i) asked.emplace_back(in.get_bytes());
      if (!result || !in.complete()) return false;
      out.before_called = true;
      out.before = std::move(*result);
      // The host checks each name as if the plugin had called add_fetch here: a runner cannot
      // make the job fetch what the workload does not have.
      for (const std::string& name : asked) calls.request->add_fetch(calls.request, name.c_str());
      if (calls.before_returned) calls.before_returned(out.before);
      next_deadline = call_deadline();
      return true;
    };
    Message reply;
    if (!exchange(MessageType::observe, w.bytes(), MessageType::observed, reply, calls.request,
                  deadline, nullptr, -1, &before_returned))
      return fail(lose_call());
    if (call_before && !out.before_called)
      return fail(broke_protocol("an observed reply without before_run's call_result"));
    Reader in(reply.payload);
    const bool after_called = in.get<uint8_t>() != 0;
    std::optional<CallResult> after;
    if (after_called) after = read_returned(in);
    if (!in.complete() || (after_called && !after))
      return fail(broke_protocol("a malformed observed reply"));
    out.after_called = after_called;
    if (after) out.after = std::move(*after);
    return out;
  }

  CallResult end(const hh_end_info& info) override {
    std::lock_guard calls(group_->calls_mutex());
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::end));
    w.put<int32_t>(info.outcome);
    w.put<int32_t>(info.stop_cause);
    w.put_text(info.reason ? info.reason : "");
    w.put<int64_t>(info.global_step);
    return call(w, nullptr);
  }

  std::string destroy() override {
    std::lock_guard calls(group_->calls_mutex());
    if (destroyed_) return {};
    destroyed_ = true;
    std::string error;
    if (created_ && !check_runner()) {
      const auto deadline =
          Clock::now() + (call_timeout_.count() > 0
                              ? std::chrono::duration_cast<Clock::duration>(call_timeout_)
                              : std::chrono::duration_cast<Clock::duration>(kDestroyTimeout));
      Message reply;
      if (exchange(MessageType::destroy, {}, MessageType::destroyed, reply, nullptr, deadline,
                   "during destroy()")) {
        Reader in(reply.payload);
        error = std::string(in.get_bytes());
      } else {
        error = lost_message_;
      }
    }
    group_->leave(id_, kExitTimeout);
    left_ = true;
    return error;
  }

  bool restart(std::string* why) override {
    std::lock_guard calls(group_->calls_mutex());
    auto fail = [&](const std::string& reason) {
      if (why) *why = reason;
      return false;
    };
    if (destroyed_) return fail("the hook was destroyed");
    try {
      start();
    } catch (const std::exception& e) {
      lost_ = true;
      if (lost_message_.empty()) lost_message_ = e.what();
      return fail(std::string("restarting failed: ") + e.what());
    }
    if (begin_called_ && implements(Callback::begin)) {
      const CallResult r = begin();
      if (!r.ok()) return fail("begin() failed after the restart: " + r.message);
    }
    if (last_session_ && implements(Callback::after_create_session)) {
      const CallResult r = after_create_session(*last_session_);
      if (!r.ok()) return fail("after_create_session() failed after the restart: " + r.message);
    }
    return true;
  }

 private:
  Clock::time_point call_deadline() const {
    if (call_timeout_.count() <= 0) return kNoDeadline;
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(call_timeout_);
  }

  // Another member of the group may have lost the runner this instance lived in (or the group
  // replaced it since): the instance is gone with it.
  std::optional<CallResult> check_runner() {
    if (lost_) return lost_result();
    if (generation_ != group_->generation() || !group_->running()) {
      lost_ = true;
      lost_message_ = group_->loss_for_others(generation_);
      return lost_result();
    }
    return std::nullopt;
  }

  [[noreturn]] void refuse(const std::string& why) {
    // A runner of its own goes with it; a group's runner keeps serving the other members.
    if (group_->member_count() == 1) group_->kill();
    throw ConfigError(where_ + ": " + why);
  }

  static void put_context(Writer& w, const hh_run_context& context) {
    w.put<int32_t>(context.stop_requested);
    w.put<int64_t>(context.global_step);
    w.put<int64_t>(context.iteration);
    w.put<int64_t>(context.wall_time_ns);
  }

  CallResult lost_result() const {
    CallResult r;
    r.status = HH_ERROR_FATAL;
    r.runner_lost = true;
    r.message = "not called: " + lost_message_ + " earlier";
    return r;
  }

  CallResult lose_call() const {
    CallResult r;
    r.status = HH_ERROR_FATAL;
    r.runner_lost = true;
    r.message = lost_message_;
    return r;
  }

  bool exchange(MessageType type, std::span<const std::byte> payload, MessageType expected,
                Message& reply, hh_run_request* request, Clock::time_point deadline,
                const char* during, int attach = -1,
                const RunnerGroup::Interim* interim = nullptr) {
    if (group_->exchange(id_, type, payload, expected, reply, request, deadline, during, attach,
                         interim))
      return true;
    lost_ = true;
    lost_message_ = group_->lost_message();
    return false;
  }

  CallResult broke_protocol(const std::string& detail) {
    lost_ = true;
    lost_message_ = group_->broke_protocol(detail, nullptr);
    return lose_call();
  }

  CallResult call(const Writer& message, hh_run_request* request,
                  Clock::time_point deadline = Clock::time_point::min()) {
    if (const auto lost = check_runner()) return *lost;
    if (const std::string problem = group_->side_channel_problem(); !problem.empty())
      return broke_protocol(problem);
    if (deadline == Clock::time_point::min()) deadline = call_deadline();
    Message reply;
    if (!exchange(MessageType::call, message.bytes(), MessageType::call_result, reply, request,
                  deadline, nullptr))
      return lose_call();
    Reader in(reply.payload);
    std::optional<CallResult> result = read_returned(in);
    if (!in.complete() || !result) return broke_protocol("a malformed call_result");
    return std::move(*result);
  }

  // The fields of a call_result at `in`'s position, in the in-process tier's words for each
  // outcome (inprocess_dispatch.cpp); nothing when they are malformed.
  static std::optional<CallResult> read_returned(Reader& in) {
    const auto end = static_cast<CallEnd>(in.get<uint8_t>());
    const auto status = in.get<int32_t>();
    const auto code = in.get<int32_t>();
    const std::string_view text = in.get_bytes();
    if (in.failed() || text.size() > HH_ERROR_MESSAGE_SIZE) return std::nullopt;
    CallResult result;
    switch (end) {
      case CallEnd::returned: return returned_result(status, code, text);
      case CallEnd::exception:
        // The runner words it as the in-process tier does (runtime/exception_text.hpp).
        result.status = HH_ERROR;
        result.message = std::string(text);
        return result;
      case CallEnd::unknown_exception:
        result.status = HH_ERROR;
        result.message = "unknown exception escaped the plugin";
        return result;
    }
    return std::nullopt;
  }

  const std::chrono::milliseconds call_timeout_;
  const std::shared_ptr<RunnerGroup> group_;
  const std::string plugin_id_;
  const std::string plugin_file_;
  const PluginMetadata note_;
  std::shared_ptr<const int> copy_;  // the sealed memfd of the plugin's bytes
  std::string sha256_;               // what they must hash to (the configuration's pin, if any)
  const std::string where_;
  const std::vector<std::byte> create_payload_;
  const uint32_t id_;        // this instance's id in the group
  uint64_t generation_ = 0;  // the group's runner it was created in
  uint32_t state_version_ = 0;

  uint8_t implements_ = 0;
  bool created_ = false;
  bool begin_called_ = false;
  std::optional<hh_session_info> last_session_;
  bool lost_ = false;
  std::string lost_message_;
  bool destroyed_ = false;
  bool left_ = false;  // the group
};

}  // namespace

namespace {

fs::path& installed_runner_program() {
  static fs::path program;
  return program;
}

}  // namespace

void set_installed_runner_program(const fs::path& program) {
  installed_runner_program() = program;
}

fs::path find_runner_program(const SandboxOptions& options, std::string* tried) {
  if (!options.runner_program.empty()) {
    if (is_executable(options.runner_program)) return options.runner_program;
    if (tried) *tried = "at " + options.runner_program.string();
    return {};
  }
  std::vector<fs::path> candidates;
  // A program that is not installed beside the runner names it (the Python package does).
  if (const char* named = std::getenv("HOOKHOST_RUNNER"); named && *named)
    candidates.emplace_back(named);
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(self.parent_path() / kRunnerName);
  // A test program built against the installed package (its CMake configuration names the runner).
  if (!installed_runner_program().empty()) candidates.push_back(installed_runner_program());
  // An embedding program is not installed beside the runner; the installed bin/ is on PATH.
  if (const auto on_path = find_on_path(kRunnerName)) candidates.push_back(*on_path);
  std::string places;
  for (const fs::path& candidate : candidates) {
    if (is_executable(candidate)) return candidate;
    places += (places.empty() ? "at " : " and ") + candidate.string();
  }
  if (tried) *tried = places.empty() ? "nowhere" : places;
  return {};
}

std::shared_ptr<RunnerGroup> make_runner_group(const std::string& name,
                                               const SandboxOptions& options) {
  return std::make_shared<RunnerGroup>(name, options);
}

std::unique_ptr<HookDispatch> make_process_dispatch(
    const LoadedPlugin& plugin, const std::string& instance_name, const ResolvedParams& params,
    const hh_host& host, const SandboxOptions& options, std::shared_ptr<RunnerGroup> group) {
  refuse_embedder_services(
      host, describe_hook(instance_name, plugin.metadata().id, plugin.file().string()));
  if (!group) group = make_runner_group("", options);
  // A group's runner may be running already, with another member in a call (an observer's worker,
  // for a hook attached while the job runs): the create() exchange takes its turn.
  std::lock_guard calls(group->calls_mutex());
  auto dispatch =
      std::make_unique<ProcessDispatchImpl>(plugin, instance_name, params, host, options, group);
  dispatch->start();
  return dispatch;
}

}  // namespace hookhost
