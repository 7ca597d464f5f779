#include "job/live_control.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <optional>
#include <thread>

#include "hookhost/host/checkpoint.hpp"
#include "job/instantiate.hpp"
#include "job/run_directory.hpp"
#include "job/widening.hpp"
#include "support/display_text.hpp"
#include "support/text.hpp"

namespace hookhost {
namespace fs = std::filesystem;
using control::Reply;

namespace {

constexpr const char* kVerbs = "status, attach, detach, set, checkpoint or stop";

// "hook.NAME.KEY=VALUE" -> NAME ("" when it is not a hook override).
std::string hook_of_override(const std::string& text) {
  if (!text.starts_with("hook.")) return {};
  const std::size_t eq = text.find('=');
  const std::size_t dot = text.rfind('.', eq);
  return dot == std::string::npos || dot < 5 ? std::string() : text.substr(5, dot - 5);
}

// "hook.NAME.KEY" of an override ("" when there is no '=').
std::string key_path_of(const std::string& text) {
  const std::size_t eq = text.find('=');
  return eq == std::string::npos ? std::string() : text.substr(0, eq);
}

std::string micros(std::chrono::nanoseconds ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", std::chrono::duration<double, std::micro>(ns).count());
  return text;
}

std::string duration_text(double seconds) {
  char text[48];
  const long long s = static_cast<long long>(seconds + 0.5);
  std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  return text;
}

}  // namespace

std::vector<std::string> take_live_changes(std::map<std::string, SavedHookState>& states) {
  std::vector<std::string> changes;
  auto it = states.find(kLiveChangesEntry);
  if (it == states.end()) return changes;
  const std::string& bytes = it->second.bytes;
  for (std::size_t start = 0; start < bytes.size();) {
    std::size_t end = bytes.find('\n', start);
    if (end == std::string::npos) end = bytes.size();
    if (end > start) changes.push_back(bytes.substr(start, end - start));
    start = end + 1;
  }
  states.erase(it);
  return changes;
}

std::vector<std::string> live_changes_to_resume(const JobConfig& cfg) {
  const fs::path dir =
      cfg.checkpoint_dir.is_relative() ? cfg.run_dir / cfg.checkpoint_dir : cfg.checkpoint_dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  // The checkpoint the resume will take; one that does not read is the resume's to report.
  std::optional<RestoredCheckpoint> newest;
  try {
    newest = restore_latest_checkpoint(dir, kCheckpointBasename);
  } catch (const std::exception&) {
    return {};
  }
  if (!newest || newest->file.empty()) return {};
  return take_live_changes(newest->checkpoint.hook_states);
}

struct LiveControl::Planned {
  JobConfig config;
  JobPlan plan;
};

struct LiveControl::Pending {
  std::mutex mutex;
  std::condition_variable done;
  std::optional<Reply> reply;
};

LiveControl::LiveControl(Setup setup) : setup_(std::move(setup)) {
  for (const HookConfig& hook : setup_.config->hooks) config_sections_.insert(hook.name);
  changes_ = setup_.changes;
  last_progress_ = std::chrono::steady_clock::now();
}

LiveControl::~LiveControl() = default;

std::vector<std::string> LiveControl::changes() const {
  std::lock_guard lock(mutex_);
  return changes_;
}

std::string LiveControl::emit(RunEvent::Kind kind, const std::string& hook,
                              const std::string& text) {
  setup_.log->info("hookhost ctl: {}", text);
  if (!setup_.record) return "";
  // The change is made whatever happens to the record (a full disk): the client is told both.
  try {
    setup_.record(RunEvent{kind, setup_.runtime->progress().global_step, hook, text});
  } catch (const std::exception& e) {
    setup_.log->warn("the run record missed a '{}' event: {}", run_event_kind_name(kind), e.what());
    return std::string("\nwarning: the run record missed this change (") + e.what() +
           "); the change was made";
  }
  return "";
}

void LiveControl::tick() {
  std::lock_guard lock(rate_mutex_);
  const auto now = std::chrono::steady_clock::now();
  const int64_t steps = setup_.runtime->progress().steps_run;
  if (steps != last_steps_run_) {
    last_steps_run_ = steps;
    last_progress_ = now;
  }
  samples_.emplace_back(now, steps);
  while (samples_.size() > 2 && now - samples_.front().first > std::chrono::seconds(10))
    samples_.pop_front();
}

std::string LiveControl::step_text() {
  tick();
  const Runtime::Progress p = setup_.runtime->progress();
  std::string text = "global step " + std::to_string(p.global_step);
  double idle = 0;
  {
    std::lock_guard lock(rate_mutex_);
    idle = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_progress_).count();
  }
  if (idle >= 1.0) {
    char line[96];
    std::snprintf(line, sizeof line, "; no step has ended for %.1f s", idle);
    text += line;
    if (const std::string call = setup_.runtime->running_call(); !call.empty())
      text += " (running: " + call + ")";
  }
  return text;
}

Reply LiveControl::handle(const std::vector<std::string>& words) {
  if (words.empty() || words[0].empty()) return {false, std::string("expected ") + kVerbs + "\n"};
  const std::string& verb = words[0];
  try {
    if (setup_.communicator && making_ == Making::posted &&
        (verb == "attach" || verb == "detach" || verb == "set"))
      return share(words);  // made on every process at one boundary
    if (verb == "status") return status(words.size() > 1 && words[1] == "--quick");
    if (verb == "attach") return attach(words);
    if (verb == "detach") return detach(words);
    if (verb == "set") return set(words);
    if (verb == "checkpoint") return checkpoint();
    if (verb == "stop") return stop(words);
  } catch (const ConfigError& e) {
    return {false, std::string(e.what()) + "\nNothing was changed.\n"};
  }
  return {false, "unknown request '" + display_text(verb) + "' (expected " + kVerbs + ")\n"};
}

std::optional<Reply> LiveControl::post_and_wait(const std::function<Reply(Runtime&)>& change,
                                                std::chrono::milliseconds wait, bool* posted,
                                                const WhenLate& late) {
  auto pending = std::make_shared<Pending>();
  *posted = setup_.runtime->at_next_boundary([pending, change](Runtime& runtime) {
    Reply reply = change(runtime);
    std::lock_guard lock(pending->mutex);
    pending->reply = std::move(reply);
    pending->done.notify_all();
  });
  if (!*posted) return std::nullopt;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  const auto replied = [&] { return pending->reply.has_value(); };
  std::unique_lock lock(pending->mutex);
  if (late.act && !pending->done.wait_for(lock, std::min(late.after, wait), replied)) {
    lock.unlock();  // the change may reply meanwhile
    late.act();
    lock.lock();
  }
  if (!pending->done.wait_until(lock, deadline, replied)) return std::nullopt;
  return pending->reply;
}

Reply LiveControl::apply(const std::function<Reply(Runtime&)>& change,
                         std::chrono::milliseconds wait, const std::string& queued_text,
                         const WhenLate& late) {
  if (making_ == Making::checked_only) return {true, {}};       // the chief proposes it next
  if (making_ == Making::here) return change(*setup_.runtime);  // at the agreed boundary
  bool posted = false;
  if (std::optional<Reply> reply = post_and_wait(change, wait, &posted, late)) return *reply;
  if (!posted) return {false, "the job is ending: it takes no more changes\n"};
  return {true, queued_text + " (" + step_text() + ")\n"};
}

std::string LiveControl::widened_text(const std::string& name, const Planned& before,
                                      const Planned& after) {
  if (before.plan.hooks.empty() || after.plan.hooks.empty()) return {};
  std::string keys;
  for (const std::string& key : widened_keys(before.plan.hooks.front(), after.plan.hooks.front()))
    keys += (keys.empty() ? "" : ", ") + name + "." + key;
  return keys;
}

std::vector<std::string> LiveControl::changes_of(const std::string& name) const {
  std::vector<std::string> out;
  for (const std::string& change : changes())
    if (hook_of_override(change) == name) out.push_back(change);
  return out;
}

std::shared_ptr<LiveControl::Planned> LiveControl::plan_hook(
    const std::string& name, const std::vector<std::string>& extra, const std::string& via,
    bool fresh, const std::vector<std::string>& earlier) const {
  auto planned = std::make_shared<Planned>();
  JobConfig& cfg = planned->config;
  cfg = *setup_.config;
  std::erase_if(cfg.hooks, [&](const HookConfig& h) { return fresh || h.name != name; });
  cfg.workload_section.reset();  // the job's session exists: no workload is made again
  if (!fresh) apply_hook_overrides(cfg, earlier, "hookhost ctl (an earlier change)");
  apply_hook_overrides(cfg, extra, via);
  auto hook = std::find_if(cfg.hooks.begin(), cfg.hooks.end(),
                           [&](const HookConfig& h) { return h.name == name; });
  if (hook == cfg.hooks.end() || !hook->enabled)
    throw ConfigError(via + ": [hook." + name + "]: the hook is not enabled");
  planned->plan = plan_job(cfg, setup_.plugin_dirs, setup_.communicator, *setup_.log,
                           /*own_step=*/true, setup_.builtin_dir);
  return planned;
}

// ---- the requests
// --------------------------------------------------------------------------------

Reply LiveControl::attach(const std::vector<std::string>& words) {
  if (words.size() < 3) return {false, "usage: attach NAME PLUGIN [KEY=VALUE]...\n"};
  const std::string& name = words[1];
  const std::string& plugin = words[2];
  if (config_sections_.count(name))
    return {false, "the configuration has [hook." + display_text(name) +
                       "]: choose another name for a new hook, or change that one with set\n"};
  std::vector<std::string> overrides = {"hook." + name + ".plugin=" + plugin};
  for (std::size_t i = 3; i < words.size(); ++i) {
    if (words[i].find('=') == std::string::npos)
      return {false, "'" + display_text(words[i]) + "': expected KEY=VALUE\n"};
    overrides.push_back("hook." + name + "." + words[i]);
  }
  // Held by the change alone: dropped once it has run, whether the hook was attached or not.
  std::shared_ptr<const Planned> planned =
      plan_hook(name, overrides, "hookhost ctl attach", /*fresh=*/true, {});
  const std::filesystem::path run_dir = setup_.run_dir;
  Reply reply = apply(
      [this, planned, name, plugin, overrides, run_dir](Runtime& runtime) -> Reply {
        for (const HookReport& r : runtime.reports())
          if (r.instance_name == name && !r.detached)
            return {false, "a hook named '" + name +
                               "' runs already: detach it first, or choose "
                               "another name\n"};
        try {
          instantiate(planned->plan, {}, run_dir, runtime, setup_.groups);
        } catch (const ConfigError& e) {
          return {false, std::string(e.what()) + "\nThe hook was not attached; the job goes on.\n"};
        }
        for (const HookReport& r : runtime.reports())
          if (r.instance_name == name && !r.detached && r.disabled)
            return {false, "attached '" + name + "', but it failed at once and is disabled: " +
                               display_text(r.failure, 1024) + "\n"};
        {
          std::lock_guard lock(mutex_);
          changes_.insert(changes_.end(), overrides.begin(), overrides.end());
        }
        const std::string text = "attached hook '" + name + "' (plugin '" + plugin +
                                 "') at global step " +
                                 std::to_string(runtime.progress().global_step) +
                                 ": begin and after_create_session done; it runs from the next "
                                 "step";
        return {true, text + emit(RunEvent::Kind::attach, name, text) + "\n"};
      },
      setup_.change_wait, "queued: '" + name + "' is attached at the next step boundary");
  return reply;
}

Reply LiveControl::detach(const std::vector<std::string>& words) {
  if (words.size() != 2) return {false, "usage: detach NAME\n"};
  const std::string name = words[1];
  const bool in_config = config_sections_.count(name) > 0;
  return apply(
      [this, name, in_config](Runtime& runtime) -> Reply {
        std::string told;
        if (!runtime.detach_hook(name, "by hookhost ctl", &told)) return {false, told + "\n"};
        {
          std::lock_guard lock(mutex_);
          std::erase_if(changes_,
                        [&](const std::string& c) { return hook_of_override(c) == name; });
          if (in_config) changes_.push_back("hook." + name + ".enabled=false");
        }
        const std::string text = "detached hook '" + name + "' at global step " +
                                 std::to_string(runtime.progress().global_step) + ": " + told;
        return {true, text + emit(RunEvent::Kind::detach, name, text) + "\n"};
      },
      setup_.change_wait,
      "queued: '" + name + "' is detached at the next step boundary, once its running call returns",
      // Still in a call a while later (the boundary has not come): stuck. A runner of its own
      // is killed; in the host's process (or a group's runner) the call is waited for.
      {setup_.stuck_after, [this, name] {
         std::string why_not;
         if (setup_.runtime->interrupt_call(name, "to detach it (hookhost ctl detach)", &why_not))
           setup_.log->warn(
               "hookhost ctl: hook '{}' was still in its call {} ms after the detach: its runner "
               "process was killed",
               name, setup_.stuck_after.count());
       }});
}

Reply LiveControl::set(const std::vector<std::string>& words) {
  // The operator's consent to give the hook more, as editing the configuration file would.
  const bool allow_widen = words.size() > 1 && words[1] == kAllowWiden;
  const std::size_t first = allow_widen ? 2 : 1;
  if (words.size() <= first)
    return {false, "usage: set [" + std::string(kAllowWiden) + "] NAME.KEY=VALUE...\n"};
  std::string name;
  std::vector<std::string> overrides;
  for (std::size_t i = first; i < words.size(); ++i) {
    const std::size_t dot = words[i].find('.');
    const std::size_t eq = words[i].find('=');
    if (dot == std::string::npos || eq == std::string::npos || dot > eq)
      return {false, "'" + display_text(words[i]) + "': expected NAME.KEY=VALUE\n"};
    const std::string hook = words[i].substr(0, dot);
    if (!name.empty() && hook != name) return {false, "one set changes one hook\n"};
    name = hook;
    overrides.push_back("hook." + words[i]);
  }
  for (const std::string& o : overrides)
    if (key_path_of(o) == "hook." + name + ".plugin" ||
        key_path_of(o) == "hook." + name + ".enabled")
      return {false, "set does not change a hook's plugin or enabled: use detach and attach\n"};
  // Checked now, against the changes made so far, so a mistake or a widening is answered at once.
  const std::vector<std::string> earlier = changes_of(name);
  std::shared_ptr<const Planned> previous =
      plan_hook(name, {}, "hookhost ctl set", /*fresh=*/false, earlier);
  std::shared_ptr<const Planned> next =
      plan_hook(name, overrides, "hookhost ctl set", /*fresh=*/false, earlier);
  if (const std::string keys = widened_text(name, *previous, *next); !keys.empty()) {
    if (!allow_widen) {
      setup_.log->warn("hookhost ctl: refused set {}: it widens {} and came without {}",
                       join(overrides, " "), keys, kAllowWiden);
      return {false,
              "refused: this set widens what hook '" + display_text(name) + "' may do (" + keys +
                  "); as in the configuration file, that is the operator's decision: repeat it "
                  "with hookhost ctl set " +
                  kAllowWiden + ". Nothing was changed.\n",
              /*needs_consent=*/true};
    }
    setup_.log->warn("hookhost ctl: set {} widens {} ({} given)", join(overrides, " "), keys,
                     kAllowWiden);
  }
  const std::filesystem::path run_dir = setup_.run_dir;
  const std::string change_text = join(
      std::vector<std::string>(words.begin() + static_cast<std::ptrdiff_t>(first), words.end()),
      " ");
  return apply(
      [this, previous, next, earlier, allow_widen, name, overrides, run_dir,
       change_text](Runtime& runtime) -> Reply {
        // Planned again when another change to this hook applied since the request was checked
        // (a set queued behind another): the new instance keeps what the earlier change made.
        std::shared_ptr<const Planned> before = previous, after = next;
        if (const std::vector<std::string> now = changes_of(name); now != earlier) {
          try {
            before = plan_hook(name, {}, "hookhost ctl set", /*fresh=*/false, now);
            after = plan_hook(name, overrides, "hookhost ctl set", /*fresh=*/false, now);
          } catch (const ConfigError& e) {
            return {false, std::string(e.what()) + "\nNothing was changed.\n"};
          }
          if (const std::string keys = widened_text(name, *before, *after);
              !keys.empty() && !allow_widen)
            return {false,
                    "refused: after the change made before it, this set widens what hook '" +
                        display_text(name) + "' may do (" + keys +
                        "): repeat it with hookhost ctl set " + kAllowWiden +
                        ". Nothing was changed.\n",
                    /*needs_consent=*/true};
        }
        // The state the old instance holds after its end: what it saved last.
        std::optional<SavedHookState> state;
        std::string why;
        if (!runtime.detach_hook(name, "reconfigured by hookhost ctl: " + change_text, &why,
                                 &state))
          return {false, why + "\n"};
        if (state) runtime.give_state_to(name, *state);
        try {
          instantiate(after->plan, {}, run_dir, runtime, setup_.groups);
        } catch (const ConfigError& refused) {
          // The hook runs on as it was: recreated with its old parameters and its state.
          if (state) runtime.give_state_to(name, *state);
          try {
            instantiate(before->plan, {}, run_dir, runtime, setup_.groups);
          } catch (const ConfigError& again) {
            {
              // What a resume recreates agrees with what runs: the hook is gone.
              std::lock_guard lock(mutex_);
              std::erase_if(changes_,
                            [&](const std::string& c) { return hook_of_override(c) == name; });
              if (config_sections_.count(name))
                changes_.push_back("hook." + name + ".enabled=false");
            }
            const std::string missed = emit(RunEvent::Kind::detach, name,
                                            "hook '" + name +
                                                "' is gone: the plugin refused the change and "
                                                "its old parameters too: " +
                                                again.what());
            return {false, std::string(refused.what()) +
                               "\nThe plugin refused its old parameters too: the hook is "
                               "detached." +
                               missed + "\n"};
          }
          return {false, std::string(refused.what()) +
                             "\nNothing was changed: the hook runs on with its previous "
                             "parameters and state.\n"};
        }
        {
          std::lock_guard lock(mutex_);
          for (const std::string& o : overrides) {
            std::erase_if(changes_,
                          [&](const std::string& c) { return key_path_of(c) == key_path_of(o); });
            changes_.push_back(o);
          }
        }
        const std::string text =
            "set " + change_text + ": hook '" + name + "' recreated " +
            (state ? "with its saved state" : "(its old instance had saved no state)") +
            " at global step " + std::to_string(runtime.progress().global_step);
        return {true, text + emit(RunEvent::Kind::set, name, text) + "\n"};
      },
      setup_.change_wait, "queued: '" + name + "' is recreated at the next step boundary");
}

Reply LiveControl::checkpoint() {
  Runtime& runtime = *setup_.runtime;
  const auto before = runtime.last_checkpoint();
  const int64_t step = runtime.progress().global_step;
  runtime.request_checkpoint("hookhost ctl");
  const auto deadline = std::chrono::steady_clock::now() + setup_.change_wait;
  while (std::chrono::steady_clock::now() < deadline) {
    const auto now = runtime.last_checkpoint();
    if (now && (!before || now->file != before->file || now->global_step != before->global_step) &&
        now->global_step >= step) {
      // The runtime records the checkpoint itself, as it does every one.
      return {true, "wrote " + now->file.string() + " at global step " +
                        std::to_string(now->global_step) + "\n"};
    }
    if (runtime.progress().closed) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {true,
          "requested: the checkpoint is taken at the next step boundary (" + step_text() + ")\n"};
}

Reply LiveControl::stop(const std::vector<std::string>& words) {
  std::string reason = words.size() > 1
                           ? join(std::vector<std::string>(words.begin() + 1, words.end()), " ")
                           : std::string("asked to stop");
  setup_.runtime->request_stop(HH_STOP_CAUSE_HOST, "hookhost ctl: " + reason);
  setup_.log->info("hookhost ctl: stop asked for: {}", reason);  // the runtime records the stop
  return {true, "stopping after the current step (" + step_text() + ")\n"};
}

Reply LiveControl::status(bool quick) {
  Runtime& runtime = *setup_.runtime;
  tick();
  // The rate over the last seconds sampled, and the ETA where a stop is known.
  double rate = 0;
  if (std::lock_guard lock(rate_mutex_); samples_.size() >= 2) {
    const double seconds =
        std::chrono::duration<double>(samples_.back().first - samples_.front().first).count();
    if (seconds > 0)
      rate = static_cast<double>(samples_.back().second - samples_.front().second) / seconds;
  }
  const Runtime::Progress p = runtime.progress();
  std::string head;
  char line[256];
  std::snprintf(line, sizeof line, "job: %s, global step %lld (%lld steps run), %.1f steps/s",
                p.closed ? "ending" : (p.started ? "running" : "starting"),
                static_cast<long long>(p.global_step), static_cast<long long>(p.steps_run), rate);
  head += line;
  if (p.last_step >= 0 && rate > 0 && p.last_step > p.global_step)
    head += ", ETA " + duration_text(static_cast<double>(p.last_step - p.global_step) / rate) +
            " to step " + std::to_string(p.last_step);
  head += "\n";
  if (const auto newest = runtime.last_checkpoint())
    head += "newest checkpoint: " + newest->file.string() + " (global step " +
            std::to_string(newest->global_step) + ")\n";
  else
    head += "newest checkpoint: none yet\n";
  if (setup_.communicator)
    head += fmt::format("distributed: {} processes; this is the chief's view (rank 0's hooks)\n",
                        setup_.communicator->size());
  // The hooks' table is read on the training thread, at the boundary.
  // fmt, not a fixed buffer: a name of any length keeps every column and the row's end.
  auto table = [](Runtime& rt) -> Reply {
    std::string out = fmt::format("{:<20} {:<20} {:<22} {:>9} {:>9} {:>9} {:>9}\n", "hook",
                                  "plugin", "callback", "calls", "p50 us", "p99 us", "max us");
    for (const HookReport& r : rt.reports()) {
      std::string state = r.detached   ? "detached (" + r.detach_reason + ")"
                          : r.disabled ? "disabled: " + r.failure
                                       : "running";
      if (r.restarts > 0)
        state += ", its runner was restarted " + std::to_string(r.restarts) +
                 (r.restarts == 1 ? " time" : " times") +
                 " (max_restarts = " + std::to_string(r.max_restarts) + ")";
      bool first = true;
      for (const char* cb : {"begin", "after_create_session", "before_run", "after_run", "end"}) {
        auto it = r.callbacks.find(cb);
        if (it == r.callbacks.end() || it->second.calls == 0) continue;
        const CallStats& s = it->second;
        out += fmt::format("{:<20} {:<20} {:<22} {:>9} {:>9} {:>9} {:>9}\n",
                           first ? display_text(r.instance_name) : "",
                           first ? display_text(r.plugin_id) : "", cb, s.calls,
                           micros(s.quantile(0.5)), micros(s.quantile(0.99)), micros(s.max));
        first = false;
      }
      if (first) {
        out += fmt::format("{:<20} {:<20} (no call yet)\n", display_text(r.instance_name),
                           display_text(r.plugin_id));
      }
      if (state != "running") out += std::string(21, ' ') + display_text(state, 300) + "\n";
    }
    return {true, out};
  };
  if (quick || p.closed) return {true, head};
  bool posted = false;
  if (std::optional<Reply> hooks = post_and_wait(table, setup_.status_wait, &posted))
    return {true, head + hooks->text};
  return {true, head + "hooks: not shown: the step is running (" + step_text() + ")\n"};
}

}  // namespace hookhost
