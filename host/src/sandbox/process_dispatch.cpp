#include "process_dispatch.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <hookhost/ext/checkpoint.h>
#include <hookhost/ext/steps.h>
#include <hookhost/ext/summary.h>

#include <optional>
#include <stdexcept>
#include <system_error>

#include "channel.hpp"
#include "protocol.hpp"
#include "runner_io.hpp"
#include "runner_process.hpp"
#include "runtime/create_verdict.hpp"
#include "service_requests.hpp"
#include "shared_values.hpp"

namespace hookhost {

namespace fs = std::filesystem;
using namespace sandbox;

namespace {

constexpr uint32_t kInstanceId = 1;  // one instance per runner for now; the protocol allows more
constexpr const char* kRunnerName = "hookhost-runner";
// How long a runner that closed its channel may take to finish dying before it counts as alive.
constexpr auto kDeathGrace = std::chrono::milliseconds(1000);
// How long a runner that crashed may take to write its core dump before it is killed.
constexpr auto kCoreDumpGrace = std::chrono::seconds(30);
// destroy() waits this long for the plugin's destroy (unless call_timeout is set) and then for
// the runner to exit, before killing it.
constexpr auto kDestroyTimeout = std::chrono::seconds(5);
constexpr auto kExitTimeout = std::chrono::seconds(2);

bool is_executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// The plugin's hh_error text as the in-process tier words it (inprocess_dispatch.cpp).
std::string plugin_message(std::string_view text, int32_t code) {
  std::string out = text.empty() ? "(the plugin gave no message)" : std::string(text);
  if (code != 0) out += " (code " + std::to_string(code) + ")";
  return out;
}

// The create message: what create() receives in process, as values.
std::vector<std::byte> create_payload(const std::string& instance_name, const hh_host& host,
                                      const std::string& plugin_id, const ResolvedParams& params) {
  Writer w;
  w.put_text(instance_name);
  w.put_text(host.run_dir(&host));
  w.put_text(plugin_id);
  uint32_t services = 0;
  if (host.get_service(&host, HH_SERVICE_CHECKPOINT)) services |= kOffersCheckpoint;
  if (host.get_service(&host, HH_SERVICE_SUMMARY)) services |= kOffersSummary;
  if (host.get_service(&host, HH_SERVICE_STEPS)) services |= kOffersSteps;
  w.put<uint32_t>(services);
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

class ProcessDispatchImpl final : public ProcessDispatch {
 public:
  ProcessDispatchImpl(const LoadedPlugin& plugin, const std::string& instance_name,
                      const ResolvedParams& params, const hh_host& host,
                      const SandboxOptions& options)
      : host_(host),
        options_(options),
        plugin_id_(plugin.metadata().id),
        plugin_version_(plugin.metadata().version),
        plugin_file_(plugin.file().string()),
        where_("hook '" + instance_name + "' (plugin '" + plugin_id_ + "', " + plugin_file_ + ")"),
        create_payload_(create_payload(instance_name, host, plugin_id_, params)) {}

  ~ProcessDispatchImpl() override { shut_down(); }

  // Spawns the runner, loads the plugin and creates the instance; throws ConfigError.
  void start() {
    shut_down();
    lost_ = false;
    lost_message_.clear();
    mapped_generation_ = 0;
    spawn_runner();
    Message reply;
    const auto deadline = call_deadline();
    Writer load;
    load.put<uint32_t>(kProtocolVersion);
    load.put_text(plugin_file_);
    load.put_text(plugin_id_);
    load.put_text(plugin_version_);
    if (!exchange(MessageType::load, load.bytes(), MessageType::loaded, reply, nullptr, deadline,
                  "while loading the plugin"))
      refuse(lost_message_);
    Reader loaded(reply.payload);
    const bool ok = loaded.get<uint8_t>() != 0;
    const std::string error(loaded.get_bytes());
    if (!loaded.complete())
      refuse(broke_protocol("a malformed loaded reply", "while loading the plugin"));
    if (!ok) refuse(error);

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
      refuse(broke_protocol("a malformed created reply", "during create()"));
    // The runtime's words for each way create() can fail.
    if (std::string why = create_refusal(status, message, has_hook, hook_size, has_destroy);
        !why.empty())
      refuse(why);
    implements_ = implements;
    created_ = true;
  }

  std::string plugin_id() const override { return plugin_id_; }
  std::string plugin_file() const override { return plugin_file_; }
  pid_t runner_pid() const override { return process_.pid(); }
  bool runner_lost() const override { return lost_; }

  bool implements(Callback callback) const override {
    return (implements_ >> static_cast<unsigned>(callback)) & 1u;
  }
  // Device memory cannot be mapped into another process: a sandboxed hook takes CPU values only,
  // and the runtime refuses it the others with its usual message.
  bool accepts_device(hh_device device) override { return device.type == HH_DEVICE_CPU; }

  CallResult begin() override {
    begin_called_ = true;
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::begin));
    return call(w, nullptr);
  }

  CallResult after_create_session(const hh_session_info& session) override {
    last_session_ = session;
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::after_create_session));
    w.put<uint32_t>(session.creation);
    w.put<int64_t>(session.global_step);
    return call(w, nullptr);
  }

  CallResult before_run(const hh_run_context& context, hh_run_request& request) override {
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::before_run));
    put_context(w, context);
    return call(w, &request);
  }

  CallResult after_run(const hh_run_context& context, const hh_run_values& values) override {
    if (lost_) return lost_result();
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::after_run));
    put_context(w, context);
    const auto deadline = call_deadline();
    try {
      std::vector<ValuePlacement> placements;
      if (const size_t bytes = ValuesArena::measure(values); bytes > 0) {
        if (arena_.reserve(bytes) || mapped_generation_ != arena_.generation()) {
          if (std::optional<CallResult> failed = map_arena(deadline)) return *failed;
        }
        placements = arena_.write(values, runner_base_);
      }
      put_placements(w, placements);
    } catch (const std::invalid_argument& e) {
      return CallResult{HH_ERROR, 0, e.what()};
    } catch (const std::system_error& e) {
      return CallResult{HH_ERROR, 0, std::string("the values for the hook's runner: ") + e.what()};
    }
    return call(w, nullptr, deadline);
  }

  CallResult end(const hh_end_info& info) override {
    Writer w;
    w.put<uint8_t>(static_cast<uint8_t>(Callback::end));
    w.put<int32_t>(info.outcome);
    w.put<int32_t>(info.stop_cause);
    w.put_text(info.reason ? info.reason : "");
    w.put<int64_t>(info.global_step);
    return call(w, nullptr);
  }

  std::string destroy() override {
    if (destroyed_) return {};
    destroyed_ = true;
    std::string error;
    if (created_ && !lost_ && process_.started()) {
      const auto deadline =
          Clock::now() + (options_.call_timeout.count() > 0
                              ? std::chrono::duration_cast<Clock::duration>(options_.call_timeout)
                              : std::chrono::duration_cast<Clock::duration>(kDestroyTimeout));
      Message reply;
      if (exchange(MessageType::destroy, {}, MessageType::destroyed, reply, nullptr, deadline,
                   "during destroy()")) {
        Reader in(reply.payload);
        error = std::string(in.get_bytes());
        channel_.send(MessageType::shutdown, kInstanceId, {}, Clock::now() + kExitTimeout,
                      process_.pidfd());
        if (!process_.wait_for_exit(kExitTimeout)) process_.kill_and_reap();
      } else {
        error = lost_message_;
      }
    }
    shut_down();
    return error;
  }

  bool restart(std::string* why) override {
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
    if (options_.call_timeout.count() <= 0) return kNoDeadline;
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(options_.call_timeout);
  }

  [[noreturn]] void refuse(const std::string& why) {
    shut_down();
    throw ConfigError(where_ + ": " + why);
  }

  static void put_context(Writer& w, const hh_run_context& context) {
    w.put<int32_t>(context.stop_requested);
    w.put<int64_t>(context.global_step);
    w.put<int64_t>(context.iteration);
  }

  void spawn_runner() {
    std::string tried;
    const fs::path program = find_runner_program(options_, &tried);
    if (program.empty())
      refuse(std::string("cannot start the sandbox: ") + kRunnerName + " was not found (looked " +
             tried + "); set SandboxOptions::runner_program");
    auto [host_end, runner_end] = Channel::make_pair();
    auto [side_host_end, side_runner_end] = Channel::make_pair();
    auto [out_read, out_write] = make_pipe();
    auto [err_read, err_write] = make_pipe();
    SpawnSpec spec;
    spec.program = program;
    spec.args = {"--parent-pid", std::to_string(::getpid())};
    if (options_.memory_limit_mb > 0)
      spec.args.insert(spec.args.end(),
                       {"--memory-limit-mb", std::to_string(options_.memory_limit_mb)});
    spec.fds = {-1, out_write.get(), err_write.get(), runner_end.get(), side_runner_end.get()};
    static_assert(kRunnerChannelFd == 3 && kRunnerSideChannelFd == 4);
    try {
      process_ = RunnerProcess::spawn(spec);
    } catch (const std::exception& e) {
      refuse(std::string("cannot start the sandbox: ") + e.what());
    }
    channel_ = Channel(std::move(host_end));
    io_ = std::make_unique<RunnerIo>(host_, std::move(out_read), std::move(err_read),
                                     std::move(side_host_end));
    const std::string started = "started the hook's runner process (pid " +
                                std::to_string(process_.pid()) + ", " + program.string() + ")";
    host_.log(&host_, HH_LOG_DEBUG, started.data(), started.size());
  }

  // Ends the runner without ceremony (it may be gone already) and stops its I/O thread after it
  // forwarded the last output.
  void shut_down() {
    channel_.close();
    if (process_.started() && !process_.reaped()) process_.kill_and_reap();
    if (io_) io_->stop();
    io_.reset();
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

  // Records how the runner was lost and makes sure it is gone. `during` says what it was doing
  // when that is not a lifecycle call (where an exit with status 0 is worth a remark).
  std::string record_loss(const std::string& what) {
    lost_ = true;
    lost_message_ =
        "the hook's runner process (pid " + std::to_string(process_.pid()) + ") " + what;
    shut_down();
    return lost_message_;
  }

  std::string ended(const char* during) {
    const int status = process_.wait_status().value_or(0);
    std::string what = describe_wait_status(status);
    if (during)
      what += std::string(" ") + during;
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      what += " in the middle of a call";
    return record_loss(what);
  }

  std::string broke_protocol(const std::string& detail, const char* during) {
    process_.kill_and_reap();
    return record_loss("broke the sandbox protocol (it sent " + detail + ")" +
                       (during ? std::string(" ") + during : "") + " and was killed");
  }

  // What a channel status other than ok means for the runner.
  std::string lose(ChannelStatus status, const char* during) {
    const std::string suffix = during ? std::string(" ") + during : "";
    switch (status) {
      case ChannelStatus::ok: break;
      case ChannelStatus::watch_ready:
        if (!process_.wait_for_exit(kDeathGrace)) process_.kill_and_reap();
        return ended(during);
      case ChannelStatus::closed:
        // A dying process closes its descriptors before it is a zombie: give it a moment, so a
        // crash is named as one.
        if (process_.wait_for_exit(kDeathGrace)) return ended(during);
        process_.kill_and_reap();
        return record_loss("closed its channel" + suffix + " and was killed");
      case ChannelStatus::timed_out:
        // A crash whose core dump is still being written is a crash, not a hang.
        if (process_.dumping_core() && process_.wait_for_exit(kCoreDumpGrace)) return ended(during);
        process_.kill_and_reap();
        return record_loss("did not answer within call_timeout_ms = " +
                           std::to_string(options_.call_timeout.count()) + suffix +
                           " and was killed");
      case ChannelStatus::malformed:
      case ChannelStatus::failed: return broke_protocol(channel_.error(), during);
    }
    return record_loss("was lost" + suffix);
  }

  // Sends a request and serves the runner's service requests until the expected reply comes.
  // False when the runner was lost (lost_message_ says how).
  bool exchange(MessageType type, std::span<const std::byte> payload, MessageType expected,
                Message& reply, hh_run_request* request, Clock::time_point deadline,
                const char* during, int attach = -1) {
    if (!channel_) {
      record_loss("is not running");
      return false;
    }
    const int watch = process_.pidfd();
    ChannelStatus status = channel_.send(type, kInstanceId, payload, deadline, watch, attach);
    if (status != ChannelStatus::ok) {
      // It ended between calls (a plugin thread, say): this call never reached it.
      lose(status, during ? during : "before the call reached it");
      return false;
    }
    for (;;) {
      status = channel_.receive(reply, deadline, watch);
      if (status != ChannelStatus::ok) {
        lose(status, during);
        return false;
      }
      if (reply.instance != kInstanceId) {
        broke_protocol("a message for instance " + std::to_string(reply.instance), during);
        return false;
      }
      if (reply.type == expected) return true;
      if (reply.type != MessageType::service_request) {
        broke_protocol(std::string("an unexpected ") + message_type_name(reply.type) + " message",
                       during);
        return false;
      }
      Reader in(reply.payload);
      service_reply_.clear();
      std::string why;
      if (!serve_request(host_, request, in, service_reply_, &why)) {
        broke_protocol(why, during);
        return false;
      }
      status = channel_.send(MessageType::service_reply, kInstanceId, service_reply_.bytes(),
                             deadline, watch);
      if (status != ChannelStatus::ok) {
        lose(status, during);
        return false;
      }
    }
  }

  // Hands the runner a read-only descriptor of the (new) arena; nothing, or the call's failure.
  std::optional<CallResult> map_arena(Clock::time_point deadline) {
    UniqueFd fd = arena_.read_only_fd();
    Writer w;
    w.put<uint64_t>(arena_.capacity());
    w.put<uint64_t>(arena_.generation());
    Message reply;
    if (!exchange(MessageType::map_values, w.bytes(), MessageType::values_mapped, reply, nullptr,
                  deadline, nullptr, fd.get()))
      return lose_call();
    Reader in(reply.payload);
    const bool mapped = in.get<uint8_t>() != 0;
    const auto base = in.get<uint64_t>();
    const std::string error(in.get_bytes());
    if (!in.complete()) {
      broke_protocol("a malformed values_mapped reply", nullptr);
      return lose_call();
    }
    if (!mapped)
      return CallResult{HH_ERROR, 0,
                        "the hook's runner could not map the fetched values: " + error};
    mapped_generation_ = arena_.generation();
    runner_base_ = base;
    return std::nullopt;
  }

  CallResult call(const Writer& message, hh_run_request* request,
                  Clock::time_point deadline = Clock::time_point::min()) {
    if (lost_) return lost_result();
    if (const std::string problem = io_ ? io_->side_channel_problem() : ""; !problem.empty()) {
      broke_protocol(problem, nullptr);
      return lose_call();
    }
    if (deadline == Clock::time_point::min()) deadline = call_deadline();
    Message reply;
    if (!exchange(MessageType::call, message.bytes(), MessageType::call_result, reply, request,
                  deadline, nullptr))
      return lose_call();
    Reader in(reply.payload);
    const auto end = static_cast<CallEnd>(in.get<uint8_t>());
    const auto status = in.get<int32_t>();
    const auto code = in.get<int32_t>();
    const std::string_view text = in.get_bytes();
    if (!in.complete() || text.size() > HH_ERROR_MESSAGE_SIZE) {
      broke_protocol("a malformed call_result", nullptr);
      return lose_call();
    }
    // The in-process tier's words for each outcome (inprocess_dispatch.cpp).
    CallResult result;
    switch (end) {
      case CallEnd::returned: break;
      case CallEnd::exception:
        result.status = HH_ERROR;
        result.message = "exception escaped the plugin: " + std::string(text);
        return result;
      case CallEnd::unknown_exception:
        result.status = HH_ERROR;
        result.message = "unknown exception escaped the plugin";
        return result;
      default: broke_protocol("a call_result with an unknown ending", nullptr); return lose_call();
    }
    result.status = status;
    switch (status) {
      case HH_OK:
      case HH_STOP_REQUESTED: break;
      case HH_ERROR:
      case HH_ERROR_FATAL:
        result.code = code;
        result.message = plugin_message(text, code);
        break;
      default:
        result.message =
            "returned the undefined status " + std::to_string(status) + " (treated as HH_ERROR)";
        if (!text.empty()) result.message += ": " + plugin_message(text, code);
        result.status = HH_ERROR;
    }
    return result;
  }

  const hh_host& host_;
  const SandboxOptions options_;
  const std::string plugin_id_;
  const std::string plugin_version_;
  const std::string plugin_file_;
  const std::string where_;
  const std::vector<std::byte> create_payload_;

  RunnerProcess process_;
  Channel channel_;
  std::unique_ptr<RunnerIo> io_;
  Writer service_reply_;  // reused

  ValuesArena arena_;
  uint64_t mapped_generation_ = 0;  // the arena generation the runner has mapped
  uint64_t runner_base_ = 0;        // where it mapped it

  uint8_t implements_ = 0;
  bool created_ = false;
  bool begin_called_ = false;
  std::optional<hh_session_info> last_session_;
  bool lost_ = false;
  std::string lost_message_;
  bool destroyed_ = false;
};

}  // namespace

fs::path find_runner_program(const SandboxOptions& options, std::string* tried) {
  if (!options.runner_program.empty()) {
    if (is_executable(options.runner_program)) return options.runner_program;
    if (tried) *tried = "at " + options.runner_program.string();
    return {};
  }
  std::vector<fs::path> candidates;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back(self.parent_path() / kRunnerName);
#ifdef HOOKHOST_RUNNER_BUILD_DIR
  candidates.push_back(fs::path(HOOKHOST_RUNNER_BUILD_DIR) / kRunnerName);
#endif
  std::string places;
  for (const fs::path& candidate : candidates) {
    if (is_executable(candidate)) return candidate;
    places += (places.empty() ? "at " : " and ") + candidate.string();
  }
  if (tried) *tried = places.empty() ? "nowhere" : places;
  return {};
}

std::unique_ptr<HookDispatch> make_process_dispatch(const LoadedPlugin& plugin,
                                                    const std::string& instance_name,
                                                    const ResolvedParams& params,
                                                    const hh_host& host,
                                                    const SandboxOptions& options) {
  auto dispatch =
      std::make_unique<ProcessDispatchImpl>(plugin, instance_name, params, host, options);
  dispatch->start();
  return dispatch;
}

}  // namespace hookhost
