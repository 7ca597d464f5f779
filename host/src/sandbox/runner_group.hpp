// One hookhost-runner process and the hook instances that live in it: one instance normally, every
// instance of an isolation group when the configuration names one. The runner's life is shared:
// when it dies, every member is lost; the member whose call was running is told what happened,
// and every other member learns it at its next call (and may then restart into a new runner).
// Calls of the members are made one at a time (calls_mutex(): an observer's come from its worker).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <hookhost/hook.h>

#include "channel.hpp"
#include "process_dispatch.hpp"
#include "runner_io.hpp"
#include "runner_process.hpp"
#include "shared_values.hpp"

namespace hookhost::sandbox {

class RunnerGroup {
 public:
  // `name` is the isolation group's name, or empty for the private runner of one instance.
  RunnerGroup(std::string name, SandboxOptions options);
  ~RunnerGroup();  // kills a runner that still runs
  RunnerGroup(const RunnerGroup&) = delete;
  RunnerGroup& operator=(const RunnerGroup&) = delete;

  const std::string& name() const { return name_; }
  // Held around each member's call (and restart): an observer's calls come from its own worker
  // thread, and the members' calls must still reach the runner one at a time.
  std::recursive_mutex& calls_mutex() { return calls_mutex_; }
  const SandboxOptions& options() const { return options_; }

  // A new member; its id is the instance id in the protocol. `host` must outlive leave(id).
  uint32_t join(const hh_host& host, std::string hook_name, std::string plugin_id);
  // The last member to leave ends the runner: asks it to exit, waits up to `timeout`, then kills
  // it.
  void leave(uint32_t id, std::chrono::milliseconds timeout);
  size_t member_count() const;

  // The runner that runs now: started when there is none (or it was lost). Returns its
  // generation, which changes with every new runner. Throws std::runtime_error naming the cause.
  uint64_t ensure_running();
  uint64_t generation() const { return generation_; }
  bool running() const { return process_.started() && !lost_; }
  pid_t pid() const { return process_.pid(); }

  // How the runner of generation `generation` was lost, as a member other than the one that lost
  // it words it.
  std::string loss_for_others(uint64_t generation) const;
  // How the runner was lost (valid after exchange() returned false).
  const std::string& lost_message() const { return lost_message_; }

  // Sends a request of member `id` and serves the runner's service requests (through that
  // member's hh_host, and `request` for add_fetch/add_feed) until the `expected` reply comes.
  // False when the runner was lost: lost_message() says how, naming what it was doing.
  // `interim`, when given, takes each call_result that comes before the `expected` reply (an
  // observe message's before_run) and may move the deadline; false: the runner broke the protocol.
  using Interim = std::function<bool(const Message&, Clock::time_point& deadline)>;
  bool exchange(uint32_t id, MessageType type, std::span<const std::byte> payload,
                MessageType expected, Message& reply, hh_run_request* request,
                Clock::time_point deadline, const char* during, int attach = -1,
                const Interim* interim = nullptr);

  // Copies `values` into the shared arena (mapping it in the runner when it is new) and returns
  // where each went. Nothing with *failure set when it failed: `runner_lost` says whether the
  // runner was lost doing it.
  std::optional<std::vector<ValuePlacement>> place_values(uint32_t id, const hh_run_values& values,
                                                          Clock::time_point deadline,
                                                          std::string* failure, bool* runner_lost);

  // The runner sent something this protocol does not allow: it is killed. Returns lost_message().
  const std::string& broke_protocol(const std::string& detail, const char* during);

  // Why the side channel was closed because the runner broke the protocol there ("" when not).
  std::string side_channel_problem() const { return io_ ? io_->side_channel_problem() : ""; }

  // Ends the runner at once, if there is one.
  void kill();
  // Kills the running runner from another thread while a member's call waits on it: that call
  // then fails as a lost runner, its message saying the host killed it `why` ("to detach it").
  // False when no runner runs. [thread-safe]
  bool interrupt(const std::string& why);

 private:
  class Routing;
  void spawn();
  const std::string& record_loss(const std::string& what);
  std::string ended(const char* during);
  const std::string& lose(ChannelStatus status, const char* during);
  // "the hook's runner process (pid 12)", "the runner process of isolation group 'g' (pid 12)".
  std::string runner_words(bool with_pid = true) const;

  const std::string name_;
  const SandboxOptions options_;

  struct Member {
    const hh_host* host;
    std::string hook_name;
    std::string plugin_id;
  };
  // A denied call of the runner: attributed to the runner alone (its one hook, or "a hook in" the
  // group's runner), never to the instance the record names; logged once per distinct text (cut
  // to a fixed size), for at most a fixed number of texts per runner; a fatal one is kept for the
  // loss message. These three are called with members_mutex_ held.
  void report_violation(const confine::Violation& violation);
  void violation_log(int level, const std::string& line) const;
  std::string violation_subject() const;
  std::set<std::string> violations_seen_;  // across restarts: once per distinct attempt
  bool violations_capped_ = false;         // the cap on violations_seen_ was reached and said
  std::string fatal_violation_;            // the last fatal one's words, for the loss message
  bool malformed_violation_said_ = false;  // bytes that were no record were read and said
  mutable std::mutex members_mutex_;       // the I/O thread reads the members
  std::map<uint32_t, Member> members_;
  uint32_t next_id_ = 1;
  uint32_t current_ = 0;  // the member whose request is in progress (0: none)

  RunnerProcess process_;
  Channel channel_;
  std::unique_ptr<RunnerIo> io_;
  std::unique_ptr<Routing> routing_;
  Writer service_reply_;  // reused

  ValuesArena arena_;
  uint64_t mapped_generation_ = 0;  // the arena generation the runner has mapped
  uint64_t runner_base_ = 0;        // where it mapped it

  uint64_t generation_ = 0;
  bool lost_ = false;
  std::string lost_message_;
  std::string lost_during_hook_;  // the member whose request lost it
  std::recursive_mutex calls_mutex_;
  // For interrupt(): a handle on the current runner and why it was killed through it.
  std::mutex interrupt_mutex_;
  UniqueFd interrupt_handle_;
  std::string interrupt_reason_;
};

}  // namespace hookhost::sandbox
