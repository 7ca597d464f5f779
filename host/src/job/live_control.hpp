// What `hookhost ctl` asks of a running job, carried out (docs/operations.md). A request is checked
// where it arrives, as the configuration is (the same keys, the same messages, naming the request
// where a file would have its line), then applied by the runtime at the next step boundary, in
// the order received. The changes are kept as [hook.NAME] overrides: logged, recorded in the run
// record, and saved with every checkpoint, so a resume runs the hooks the job had there. In a
// distributed job the chief's LiveControl checks a change and proposes it, and every process's
// LiveControl makes it at the boundary they agree on (shared_control.cpp).
#pragma once

#include <chrono>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "control/protocol.hpp"
#include "hookhost/host/config.hpp"
#include "hookhost/host/runtime.hpp"
#include "job/instantiate.hpp"
#include "job/job_plan.hpp"

namespace spdlog {
class logger;
}

namespace hookhost {

// The word before a set's changes that gives the operator's consent to widen what the hook may
// do (job/widening.hpp); `hookhost ctl set --allow-widen`.
inline constexpr const char* kAllowWiden = "--allow-widen";

// The checkpoint entry holding the live changes (a ':' keeps it apart from every instance name).
inline constexpr const char* kLiveChangesEntry = "hookhost:live-changes";

// The overrides a checkpoint's hook states carry ("hook.NAME.KEY=VALUE", in order), and the states
// without that entry.
std::vector<std::string> take_live_changes(std::map<std::string, SavedHookState>& states);

// The live changes the newest checkpoint of `cfg`'s run directory that reads carries (none when
// there is none, or it does not read: the resume reports that): what a resume most likely takes,
// read before the hooks are planned. The resume's own check of the workload state may still skip
// it; the Job then plans again with the changes of the checkpoint it took.
std::vector<std::string> live_changes_to_resume(const JobConfig& cfg);

// When a change's reply is later than `after`, `act` runs once (on the waiting thread) and the
// wait goes on.
struct WhenLate {
  std::chrono::milliseconds after{0};
  std::function<void()> act;
};

class LiveControl {
 public:
  struct Setup {
    const JobConfig* config = nullptr;  // the job's configuration, as given
    std::vector<std::string> changes;   // the changes its run resumed with, as overrides
    std::vector<std::filesystem::path> plugin_dirs;
    std::filesystem::path builtin_dir;
    std::filesystem::path run_dir;
    Runtime* runtime = nullptr;
    // The job's isolation groups (made by its start): a hook attached or recreated in one joins its
    // runner. Used on the training thread, in the changes.
    IsolationGroups* groups = nullptr;
    std::shared_ptr<spdlog::logger> log;
    std::function<void(const RunEvent&)> record;  // the run record's; may be empty
    // How long a request waits for the step boundary before it is answered "queued" (status:
    // answered from what other threads may read).
    std::chrono::milliseconds change_wait{10000};
    std::chrono::milliseconds status_wait{1000};
    // A detach whose hook is still in the same call after this is taken as stuck: a runner of
    // the hook's own is killed (Runtime::interrupt_call).
    std::chrono::milliseconds stuck_after{1000};
    // A distributed job's processes (null: one process): hooks are planned for this rank, and
    // attach, detach and set are made on every process at one boundary (Runtime::propose_change).
    std::shared_ptr<Communicator> communicator;
  };
  explicit LiveControl(Setup setup);
  ~LiveControl();

  // One request's words; on the control server's thread (or an embedder's).
  control::Reply handle(const std::vector<std::string>& words);
  // Called about every 200 ms on the server's thread: samples the step rate.
  void tick();
  // The changes made so far, as overrides, for a checkpoint. [thread-safe]
  std::vector<std::string> changes() const;
  // RuntimeOptions::on_agreed_change: a change the chief checked and proposed (a request's words,
  // encoded), made here now, at the boundary every process agreed on. On the training thread.
  ChangeOutcome apply_agreed(const std::string& change);

 private:
  struct Planned;
  struct Pending;
  // Where apply() makes a change, on the thread that asks: posted for the next boundary (one
  // process), checked only (the chief, before it proposes the change to every process), or now
  // (every process, at the agreed boundary).
  enum class Making { posted, checked_only, here };
  static thread_local Making making_;
  // A distributed job's attach, detach or set: checked here, then made on every process at one
  // boundary; the reply says each process's outcome (shared_control.cpp).
  control::Reply share(const std::vector<std::string>& words);
  control::Reply status(bool quick);
  control::Reply attach(const std::vector<std::string>& words);
  control::Reply detach(const std::vector<std::string>& words);
  control::Reply set(const std::vector<std::string>& words);
  control::Reply checkpoint();
  control::Reply stop(const std::vector<std::string>& words);
  // The hook `name` planned from the configuration's section (unless `fresh`), the changes made to
  // it (`earlier`: those of changes() that name it), and `extra` (read as from `via`). Throws
  // ConfigError. A plan lives as long as a request or its change holds it: a hook made from it
  // keeps what it needs (its plugin, its private copy), so nothing is kept per request.
  std::shared_ptr<Planned> plan_hook(const std::string& name, const std::vector<std::string>& extra,
                                     const std::string& via, bool fresh,
                                     const std::vector<std::string>& earlier) const;
  // The keys a change from `before` to `after` widens ("h.allow_write, h.grant"), or "".
  static std::string widened_text(const std::string& name, const Planned& before,
                                  const Planned& after);
  // The changes made so far to hook `name`, in order.
  std::vector<std::string> changes_of(const std::string& name) const;
  // Posts `change` to the runtime and waits up to `wait` for its reply: nothing when it did not
  // come in time or (`posted` false) the job takes no more changes.
  std::optional<control::Reply> post_and_wait(const std::function<control::Reply(Runtime&)>& change,
                                              std::chrono::milliseconds wait, bool* posted,
                                              const WhenLate& late = {});
  // post_and_wait, answered "queued" (with the step it waits for) when the reply is late.
  control::Reply apply(const std::function<control::Reply(Runtime&)>& change,
                       std::chrono::milliseconds wait, const std::string& queued_text,
                       const WhenLate& late = {});
  std::string step_text();  // "global step N" and, when no step ended for a while, for how long
  // Logs a change made and writes it to the run record; returns "" or, when the record could not
  // be written, a line the reply adds.
  std::string emit(RunEvent::Kind kind, const std::string& hook, const std::string& text);

  Setup setup_;
  std::set<std::string> config_sections_;  // the configuration's [hook.NAME] names
  mutable std::mutex mutex_;
  std::vector<std::string> changes_;  // guarded by mutex_
  std::mutex rate_mutex_;             // guards the three below
  // The step rate: (time, steps run) samples of the last seconds; when steps_run last changed.
  std::deque<std::pair<std::chrono::steady_clock::time_point, int64_t>> samples_;
  std::chrono::steady_clock::time_point last_progress_;
  int64_t last_steps_run_ = -1;
};

}  // namespace hookhost
