#include "runner_group.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>
#include <system_error>
#include <tuple>

#include <spdlog/spdlog.h>

#include "confine/kernel_support.hpp"
#include "confine/policy.hpp"
#include "confine/violation.hpp"
#include "runner_registry.hpp"
#include "service_requests.hpp"
#include "support/text.hpp"

namespace hookhost::sandbox {

namespace {

// How long a runner that closed its channel may take to finish dying before it counts as alive.
constexpr auto kDeathGrace = std::chrono::milliseconds(1000);
// How long a runner that crashed may take to write its core dump before it is killed.
constexpr auto kCoreDumpGrace = std::chrono::seconds(30);

// The words of one denied call are cut to this many bytes (a path's end kept), and a runner's
// first kMaxKeptViolations different ones are kept to log each once; past that none are kept.
constexpr size_t kMaxViolationWordsBytes = 600;
constexpr size_t kMaxKeptViolations = 64;

std::string cut_violation_words(std::string words) {
  if (words.size() <= kMaxViolationWordsBytes) return words;
  const size_t keep_end = kMaxViolationWordsBytes / 2;
  return words.substr(0, kMaxViolationWordsBytes - keep_end - 5) + " ... " +
         words.substr(words.size() - keep_end);
}

std::pair<UniqueFd, UniqueFd> make_pipe() {
  auto ends = open_pipe();
  if (!ends.first) throw std::system_error(errno, std::generic_category(), "pipe");
  return ends;
}

}  // namespace

// The members as the I/O thread sees them: output goes to the member whose request is in
// progress (else the first one), side requests to the member they name.
class RunnerGroup::Routing final : public RunnerIo::Routing {
 public:
  explicit Routing(RunnerGroup& group) : group_(group) {}

  void log(int level, std::string_view line) override {
    std::lock_guard lock(group_.members_mutex_);
    auto it = group_.members_.find(group_.current_);
    if (it == group_.members_.end()) it = group_.members_.begin();
    if (it == group_.members_.end()) return;  // nobody left to tell
    const hh_host& host = *it->second.host;
    host.log(&host, level, line.data(), line.size());
  }

  bool serve(uint32_t instance, Reader& in, Writer& reply, std::string* why) override {
    std::lock_guard lock(group_.members_mutex_);
    const auto it = group_.members_.find(instance);
    if (it == group_.members_.end()) {
      *why = "a request for instance " + std::to_string(instance) + ", which it does not hold";
      return false;
    }
    return serve_request(*it->second.host, nullptr, in, reply, why);
  }

  void violation(const confine::Violation& violation) override {
    std::lock_guard lock(group_.members_mutex_);
    group_.report_violation(violation);
  }

  void violations_suppressed(uint64_t count, int per_second) override {
    std::lock_guard lock(group_.members_mutex_);
    group_.violation_log(HH_LOG_WARN, group_.violation_subject() + ": " + std::to_string(count) +
                                          " more records of denied calls suppressed (more than " +
                                          std::to_string(per_second) + " a second)");
  }

 private:
  RunnerGroup& group_;
};

RunnerGroup::RunnerGroup(std::string name, SandboxOptions options)
    : name_(std::move(name)), options_(std::move(options)) {}

RunnerGroup::~RunnerGroup() {
  kill();
}

uint32_t RunnerGroup::join(const hh_host& host, std::string hook_name, std::string plugin_id) {
  std::lock_guard lock(members_mutex_);
  const uint32_t id = next_id_++;
  members_.emplace(id, Member{&host, std::move(hook_name), std::move(plugin_id)});
  return id;
}

// The runner a record came from is all the host knows of who made the call: the record's
// instance field is written by the runner's process, which its plugins own, so a hook could name
// another member with it. A hook's private runner names that hook; a group's runner names the group
// (whoever is left in it), through the job's logger rather than a member's.
void RunnerGroup::violation_log(int level, const std::string& line) const {
  if (name_.empty() && !members_.empty()) {
    const hh_host& host = *members_.begin()->second.host;
    host.log(&host, level, line.data(), line.size());
  } else if (!name_.empty()) {
    spdlog::default_logger()->log(static_cast<spdlog::level::level_enum>(level), line);
  }
}

std::string RunnerGroup::violation_subject() const {
  if (name_.empty() && !members_.empty()) {
    const Member& sole = members_.begin()->second;
    return describe_hook(sole.hook_name, sole.plugin_id);
  }
  return "a hook in " + runner_words(false);
}

void RunnerGroup::report_violation(const confine::Violation& read) {
  if (members_.empty()) return;  // nobody left to tell
  if (!confine::plausible_violation(read.record)) {
    // No SIGSYS handler wrote it: a plugin did, on the runner's descriptor 5. Said once per
    // runner, and nothing in it is taken as a call.
    if (!malformed_violation_said_)
      violation_log(HH_LOG_WARN,
                    violation_subject() +
                        " wrote something that is not a record of a denied call to its violation "
                        "pipe (descriptor " +
                        std::to_string(confine::kRunnerViolationFd) + "): ignored" +
                        (read.record.magic == confine::kViolationMagic
                             ? ""
                             : ", with what follows it (nothing after it can be framed)"));
    malformed_violation_said_ = true;
    return;
  }
  confine::Violation violation = read;
  confine::ViolationRecord& record = violation.record;
  // The record's claim that the call ends the runner is the runner's word: the table decides.
  record.fatal = confine::is_fatal(record.nr, record.args) ? 1 : 0;
  const bool file_call = record.path_bytes > 0 && confine::find_file_call(record.nr);
  // An EACCES on a path the policy gives was the file's own permissions, not the policy.
  if (file_call && options_.policy &&
      confine::policy_allows(*options_.policy, process_.pid(), violation.path, record.writes) &&
      (violation.second_path.empty() ||
       confine::policy_allows(*options_.policy, process_.pid(), violation.second_path, true)))
    return;
  const confine::ViolationText text = confine::describe_violation(violation);
  std::string words = violation_subject() + " tried to " + text.what + " (" + text.call;
  if (!text.detail.empty()) words += ", " + text.detail;
  words += ")";
  words = cut_violation_words(std::move(words));
  if (record.fatal) fatal_violation_ = words;
  if (violations_seen_.count(words)) return;
  if (violations_seen_.size() >= kMaxKeptViolations) {
    // Past the cap nothing more is kept: one note, then the attempts go unnamed.
    if (!violations_capped_)
      violation_log(HH_LOG_WARN, violation_subject() + ": more than " +
                                     std::to_string(kMaxKeptViolations) +
                                     " different denied calls; further ones are not named");
    violations_capped_ = true;
    return;
  }
  violations_seen_.insert(words);
  words += record.fatal ? ": denied by its capability policy; the calling process was stopped "
                          "(SIGSYS)"
           : file_call  ? ": denied by its capability policy (the call failed with EACCES)"
                        : ": denied by its capability policy (the call failed with EPERM)";
  violation_log(HH_LOG_ERROR, words);
}

size_t RunnerGroup::member_count() const {
  std::lock_guard lock(members_mutex_);
  return members_.size();
}

std::string RunnerGroup::runner_words(bool with_pid) const {
  std::string words = name_.empty() ? std::string("the hook's runner process")
                                    : "the runner process of isolation group '" + name_ + "'";
  if (with_pid) words += " (pid " + std::to_string(process_.pid()) + ")";
  return words;
}

uint64_t RunnerGroup::ensure_running() {
  if (running()) return generation_;
  kill();
  spawn();
  return generation_;
}

void RunnerGroup::spawn() {
  std::string tried;
  const std::filesystem::path program = find_runner_program(options_, &tried);
  if (program.empty())
    throw std::runtime_error(
        "cannot start the sandbox: hookhost-runner was not found (looked " + tried +
        "); install it next to the program, set the environment variable HOOKHOST_RUNNER to its "
        "path, or set SandboxOptions::runner_program");
  if (options_.confine && options_.confine_required && options_.policy) {
    const std::vector<std::string> missing =
        confine::not_enforced(*options_.policy, confine::detect_kernel_support());
    if (!missing.empty())
      throw std::runtime_error(
          "cannot start the sandbox: confine = required, but this kernel "
          "cannot enforce " +
          hookhost::join(missing, ", ") +
          "; run the job on a kernel that can, or set confine = sandboxed "
          "for this hook");
  }
  auto [host_end, runner_end] = Channel::make_pair();
  auto [side_host_end, side_runner_end] = Channel::make_pair();
  auto [out_read, out_write] = make_pipe();
  auto [err_read, err_write] = make_pipe();
  SpawnSpec spec;
  spec.program = program;
  spec.args = {"--parent-pid", std::to_string(::getpid())};
  if (options_.confine && options_.policy) {
    // The policy carries the memory limit with the others.
    spec.args.push_back("--confine");
    if (options_.confine_required) spec.args.push_back("--confine-required");
    const std::vector<std::string> policy = confine::runner_args(*options_.policy);
    spec.args.insert(spec.args.end(), policy.begin(), policy.end());
  } else {
    if (options_.memory_limit_mb > 0)
      spec.args.insert(spec.args.end(),
                       {"--memory-limit-mb", std::to_string(options_.memory_limit_mb)});
    if (options_.confine) {
      // No policy: the seccomp filter alone, files, the network and processes open.
      confine::CapabilityPolicy baseline;
      baseline.network = baseline.processes = true;
      baseline.restrict_files = false;
      spec.args.push_back("--confine");
      const std::vector<std::string> args = confine::runner_args(baseline);
      spec.args.insert(spec.args.end(), args.begin(), args.end());
    }
  }
  spec.fds = {-1, out_write.get(), err_write.get(), runner_end.get(), side_runner_end.get()};
  static_assert(kRunnerChannelFd == 3 && kRunnerSideChannelFd == 4);
  // A confined runner reports the calls its policy denies on a pipe of their own (a signal
  // handler's fixed records, kept out of the protocol and of the hook's stdout and stderr).
  UniqueFd violations_read, violations_write;
  if (options_.confine) {
    std::tie(violations_read, violations_write) = make_pipe();
    spec.fds.push_back(violations_write.get());
    static_assert(confine::kRunnerViolationFd == 5);
  }
  try {
    process_ = RunnerProcess::spawn(spec);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("cannot start the sandbox: ") + e.what());
  }
  {
    std::lock_guard lock(members_mutex_);
    fatal_violation_.clear();  // a record of an earlier runner never names this one's end
    register_runner(process_.pid(),
                    name_.empty() && !members_.empty()
                        ? "hook '" + members_.begin()->second.hook_name + "''s runner"
                        : "isolation group '" + name_ + "''s runner");
  }
  {
    std::lock_guard lock(interrupt_mutex_);
    interrupt_handle_ = process_.kill_handle();
    interrupt_reason_.clear();
  }
  ++generation_;
  lost_ = false;
  lost_message_.clear();
  lost_during_hook_.clear();
  mapped_generation_ = 0;
  channel_ = Channel(std::move(host_end));
  if (!routing_) routing_ = std::make_unique<Routing>(*this);
  io_ = std::make_unique<RunnerIo>(*routing_, std::move(out_read), std::move(err_read),
                                   std::move(side_host_end), std::move(violations_read));
  const std::string started = "started " + runner_words() + ", " + program.string();
  routing_->log(HH_LOG_DEBUG, started);
}

void RunnerGroup::kill() {
  channel_.close();
  if (process_.started() && !process_.reaped()) process_.kill_and_reap();
  // The I/O thread stops after it forwarded the last output.
  if (io_) io_->stop();
  io_.reset();
}

bool RunnerGroup::interrupt(const std::string& why) {
  std::lock_guard lock(interrupt_mutex_);
  if (!RunnerProcess::kill_through(interrupt_handle_)) return false;
  interrupt_reason_ = why;
  return true;
}

void RunnerGroup::leave(uint32_t id, std::chrono::milliseconds timeout) {
  bool last;
  {
    std::lock_guard lock(members_mutex_);
    last = members_.size() == 1 && members_.count(id) == 1;
  }
  if (last) {
    // Still a member while the runner ends, so its last output and the note of dropped lines
    // reach this member's logger.
    if (running()) {
      channel_.send(MessageType::shutdown, 0, {}, Clock::now() + timeout, process_.pidfd());
      if (!process_.wait_for_exit(timeout)) process_.kill_and_reap();
    }
    kill();
  }
  std::lock_guard lock(members_mutex_);
  members_.erase(id);
  if (current_ == id) current_ = 0;
}

std::string RunnerGroup::loss_for_others(uint64_t generation) const {
  if (generation != generation_ || !lost_)
    return runner_words(false) + " was replaced after it was lost";
  std::string text = lost_message_;
  if (!lost_during_hook_.empty()) text += " while hook '" + lost_during_hook_ + "' was running";
  return text;
}

const std::string& RunnerGroup::record_loss(const std::string& what) {
  lost_ = true;
  lost_message_ = runner_words() + " " + what;
  {
    std::lock_guard lock(members_mutex_);
    const auto it = members_.find(current_);
    lost_during_hook_ = it == members_.end() ? "" : it->second.hook_name;
  }
  kill();
  return lost_message_;
}

std::string RunnerGroup::ended(const char* during) {
  const int status = process_.wait_status().value_or(0);
  std::string what = describe_wait_status(status);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) {
    std::lock_guard lock(interrupt_mutex_);
    if (!interrupt_reason_.empty()) what = "was killed by the host " + interrupt_reason_;
  }
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS && io_) {
    // The runner's SIGSYS handler wrote what it tried before it died: name it.
    io_->drain_violations();
    std::lock_guard lock(members_mutex_);
    if (!fatal_violation_.empty()) what += " after " + fatal_violation_;
    fatal_violation_.clear();
  }
  if (during)
    what += std::string(" ") + during;
  else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    what += " in the middle of a call";
  return record_loss(what);
}

const std::string& RunnerGroup::broke_protocol(const std::string& detail, const char* during) {
  if (process_.started() && !process_.reaped()) process_.kill_and_reap();
  return record_loss("broke the sandbox protocol (it sent " + detail + ")" +
                     (during ? std::string(" ") + during : "") + " and was killed");
}

const std::string& RunnerGroup::lose(ChannelStatus status, const char* during) {
  const std::string suffix = during ? std::string(" ") + during : "";
  switch (status) {
    case ChannelStatus::ok: break;
    case ChannelStatus::watch_ready:
      if (!process_.wait_for_exit(kDeathGrace)) process_.kill_and_reap();
      ended(during);
      return lost_message_;
    case ChannelStatus::closed:
      // A dying process closes its descriptors before it is a zombie: give it a moment, so a
      // crash is named as one.
      if (process_.wait_for_exit(kDeathGrace)) {
        ended(during);
        return lost_message_;
      }
      process_.kill_and_reap();
      return record_loss("closed its channel" + suffix + " and was killed");
    case ChannelStatus::timed_out:
      // A crash whose core dump is still being written is a crash, not a hang.
      if (process_.dumping_core() && process_.wait_for_exit(kCoreDumpGrace)) {
        ended(during);
        return lost_message_;
      }
      process_.kill_and_reap();
      return record_loss("did not answer within call_timeout_ms = " +
                         std::to_string(options_.call_timeout.count()) + suffix +
                         " and was killed");
    case ChannelStatus::malformed:
    case ChannelStatus::failed: return broke_protocol(channel_.error(), during);
  }
  return record_loss("was lost" + suffix);
}

bool RunnerGroup::exchange(uint32_t id, MessageType type, std::span<const std::byte> payload,
                           MessageType expected, Message& reply, hh_run_request* request,
                           Clock::time_point deadline, const char* during, int attach,
                           const Interim* interim) {
  if (!running() || !channel_) {
    if (!lost_) record_loss("is not running");
    return false;
  }
  const hh_host* host;
  {
    std::lock_guard lock(members_mutex_);
    const auto it = members_.find(id);
    if (it == members_.end()) throw std::logic_error("a request of a hook that left its runner");
    host = it->second.host;
    current_ = id;
  }
  struct Done {
    RunnerGroup& group;
    ~Done() {
      std::lock_guard lock(group.members_mutex_);
      group.current_ = 0;
    }
  } done{*this};

  const int watch = process_.pidfd();
  ChannelStatus status = channel_.send(type, id, payload, deadline, watch, attach);
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
    if (reply.instance != id) {
      broke_protocol("a message for instance " + std::to_string(reply.instance) +
                         " in the middle of a request of instance " + std::to_string(id),
                     during);
      return false;
    }
    if (reply.type == expected) return true;
    if (interim && reply.type == MessageType::call_result) {
      if ((*interim)(reply, deadline)) continue;
      broke_protocol("a call_result out of place, or malformed, in the middle of an observe",
                     during);
      return false;
    }
    if (reply.type != MessageType::service_request) {
      broke_protocol(std::string("an unexpected ") + message_type_name(reply.type) + " message",
                     during);
      return false;
    }
    Reader in(reply.payload);
    service_reply_.clear();
    std::string why;
    if (!serve_request(*host, request, in, service_reply_, &why)) {
      broke_protocol(why, during);
      return false;
    }
    status = channel_.send(MessageType::service_reply, id, service_reply_.bytes(), deadline, watch);
    if (status != ChannelStatus::ok) {
      lose(status, during);
      return false;
    }
  }
}

std::optional<std::vector<ValuePlacement>> RunnerGroup::place_values(uint32_t id,
                                                                     const hh_run_values& values,
                                                                     Clock::time_point deadline,
                                                                     std::string* failure,
                                                                     bool* runner_lost) {
  *runner_lost = false;
  std::vector<ValuePlacement> placements;
  try {
    const size_t bytes = ValuesArena::measure(values);
    if (bytes == 0) return placements;
    if (arena_.reserve(bytes) || mapped_generation_ != arena_.generation()) {
      UniqueFd fd = arena_.read_only_fd();
      Writer w;
      w.put<uint64_t>(arena_.capacity());
      w.put<uint64_t>(arena_.generation());
      Message reply;
      if (!exchange(id, MessageType::map_values, w.bytes(), MessageType::values_mapped, reply,
                    nullptr, deadline, nullptr, fd.get())) {
        *runner_lost = true;
        *failure = lost_message_;
        return std::nullopt;
      }
      Reader in(reply.payload);
      const bool mapped = in.get<uint8_t>() != 0;
      const auto base = in.get<uint64_t>();
      const std::string error(in.get_bytes());
      if (!in.complete()) {
        *runner_lost = true;
        *failure = broke_protocol("a malformed values_mapped reply", nullptr);
        return std::nullopt;
      }
      if (!mapped) {
        *failure = "the hook's runner could not map the fetched values: " + error;
        return std::nullopt;
      }
      mapped_generation_ = arena_.generation();
      runner_base_ = base;
    }
    placements = arena_.write(values, runner_base_);
  } catch (const std::invalid_argument& e) {
    *failure = e.what();
    return std::nullopt;
  } catch (const std::system_error& e) {
    *failure = std::string("the values for the hook's runner: ") + e.what();
    return std::nullopt;
  }
  return placements;
}

}  // namespace hookhost::sandbox
