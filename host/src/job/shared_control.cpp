// A distributed job's live changes (docs/operations.md, docs/distributed.md): the chief checks an
// attach, detach or set as a job of one process does, then proposes its words to every process
// (Runtime::propose_change, over the job's Communicator). At the boundary they agree on, each
// process's LiveControl makes it there, for the hooks placed on that process (their `ranks`), and
// the chief answers with every process's outcome.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "job/live_control.hpp"
#include "support/display_text.hpp"

namespace hookhost {
using control::Reply;

thread_local LiveControl::Making LiveControl::making_ = LiveControl::Making::posted;

namespace {

// Marks a process's outcome where the hook the change names runs neither before nor after it:
// the hook is placed on other processes (its `ranks`), so there was nothing to do there.
constexpr char kNotHere = '\x01';
// Marks a refusal for want of the operator's consent (a set that widens the hook there).
constexpr char kNeedsConsent = '\x02';

// The hook a request's words name ("" when they name none).
std::string hook_named(const std::vector<std::string>& words) {
  if (words.size() < 2) return {};
  if (words[0] != "set") return words[1];
  const std::string& first = words[1] == kAllowWiden && words.size() > 2 ? words[2] : words[1];
  return first.substr(0, first.find('.'));
}

// "rank 1" or "ranks 1, 3".
std::string ranks_text(const std::vector<int>& ranks) {
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}

std::string without_last_newline(std::string text) {
  if (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// Every process's outcome as one reply: one line when every process said the same, else a line
// per distinct outcome, naming its ranks. Done when every process where the hook runs made it.
Reply combined(const std::vector<ChangeOutcome>& outcomes, const std::string& hook, int world) {
  if (outcomes.size() == 1 && world > 1) return {outcomes[0].ok, outcomes[0].text};  // not shared
  std::vector<std::pair<ChangeOutcome, std::vector<int>>> groups;  // in order of the first rank
  std::vector<int> not_here;
  bool ok = true;
  bool needs_consent = false;
  for (int rank = 0; rank < static_cast<int>(outcomes.size()); ++rank) {
    ChangeOutcome o = outcomes[static_cast<std::size_t>(rank)];
    if (!o.text.empty() && o.text[0] == kNotHere) {
      not_here.push_back(rank);
      continue;
    }
    if (!o.text.empty() && o.text[0] == kNeedsConsent) {
      needs_consent = true;
      o.text.erase(0, 1);
    }
    ok = ok && o.ok;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.first.ok == o.ok && g.first.text == o.text;
    });
    if (it == groups.end())
      groups.push_back({o, {rank}});
    else
      it->second.push_back(rank);
  }
  // The hook runs on no process: the chief's answer, as a job of one process gives it.
  if (groups.empty()) return {false, outcomes.front().text.substr(1)};
  if (groups.size() == 1 && not_here.empty())
    return {ok, fmt::format("on all {} ranks: {}", world, groups.front().first.text),
            needs_consent};
  std::string text;
  for (const auto& [outcome, ranks] : groups)
    text += ranks_text(ranks) + ": " + without_last_newline(outcome.text) + "\n";
  if (!not_here.empty())
    text += ranks_text(not_here) + ": hook '" + display_text(hook) +
            "' is not placed there (its ranks): nothing to do\n";
  return {ok, text, needs_consent};
}

// The chief's answer to a shared change, filled in on the training thread.
struct Answer {
  std::mutex mutex;
  std::condition_variable done;
  std::optional<Reply> reply;
};

// Sets LiveControl's way of making changes on this thread, for its lifetime.
template <typename Making>
class MakingScope {
 public:
  MakingScope(Making& making, Making now) : making_(making), before_(making) { making_ = now; }
  ~MakingScope() { making_ = before_; }
  MakingScope(const MakingScope&) = delete;
  MakingScope& operator=(const MakingScope&) = delete;

 private:
  Making& making_;
  Making before_;
};

}  // namespace

Reply LiveControl::share(const std::vector<std::string>& words) {
  Communicator& comm = *setup_.communicator;
  if (!comm.is_chief())
    return {false, "this is rank " + std::to_string(comm.rank()) +
                       " of a distributed job: its live control is the chief's (rank 0's run "
                       "directory)\n"};
  for (std::size_t i = 1; i < words.size() && words[0] == "set"; ++i)
    if (const std::size_t dot = words[i].find('.');
        dot != std::string::npos && words[i].compare(dot, 7, ".ranks=") == 0)
      return {false,
              "set does not move a hook between processes: detach it, then attach it with "
              "ranks=...\n"};
  // Checked here as a job of one process checks it: a refused change goes nowhere.
  Reply checked;
  {
    MakingScope scope(making_, Making::checked_only);
    checked = handle(words);
  }
  if (!checked.ok) return checked;
  std::string change;
  try {
    change = control::encode_request(words);
  } catch (const std::invalid_argument& e) {
    return {false, std::string(e.what()) + "\n"};
  }
  auto pending = std::make_shared<Answer>();
  const bool proposed = setup_.runtime->propose_change(
      change, [pending, hook = hook_named(words),
               world = comm.size()](std::vector<ChangeOutcome> outcomes) {
        Reply reply = combined(outcomes, hook, world);
        std::lock_guard lock(pending->mutex);
        pending->reply = std::move(reply);
        pending->done.notify_all();
      });
  if (!proposed) return {false, "the job is ending: it takes no more changes\n"};
  std::unique_lock lock(pending->mutex);
  if (pending->done.wait_for(lock, setup_.change_wait, [&] { return pending->reply.has_value(); }))
    return *pending->reply;
  lock.unlock();
  return {true, "queued: " + words[0] + " is made on every rank at the next step boundary (" +
                    step_text() + ")\n"};
}

ChangeOutcome LiveControl::apply_agreed(const std::string& change) {
  std::string line = change;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  const std::optional<std::vector<std::string>> words = control::decode_request(line);
  if (!words) return {false, "an empty change came\n"};
  const std::string hook = hook_named(*words);
  const auto runs_here = [&] {
    for (const HookReport& r : setup_.runtime->reports())
      if (r.instance_name == hook && !r.detached) return true;
    return false;
  };
  const bool before = runs_here();
  Reply reply;
  {
    MakingScope scope(making_, Making::here);
    reply = handle(*words);
  }
  // An attach placed elsewhere is "done" with no hook here; a detach or set of a hook placed
  // elsewhere finds none.
  if (!before && !runs_here() && ((*words)[0] != "attach" || reply.ok)) {
    setup_.log->info("hookhost ctl: {} '{}': the hook is not placed on this rank (its ranks)",
                     (*words)[0], hook);
    return {true, kNotHere + reply.text};
  }
  return {reply.ok, reply.needs_consent ? kNeedsConsent + reply.text : reply.text};
}

}  // namespace hookhost
