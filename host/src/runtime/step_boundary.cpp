// The step boundary of a distributed job. Every process runs its own runtime; after each phase
// (start, every step, a recovery, the end) they take part in one 8-byte allreduce that decides
// for all of them: the job ends when any process failed, stopped or ran out of data, with that
// process's outcome and reason (a failure first, then the lowest rank), and a checkpoint is taken
// when any process asked for one. No process leaves its loop before the others know, so none is
// left waiting in a collective.
#include "distributed/state_transfer.hpp"
#include "runtime_impl.hpp"

namespace hookhost {
namespace {

enum class Ending : int64_t { failed = 0, stopped = 1, end_of_data = 2, none = 3 };

}  // namespace

void Runtime::Impl::agree_across_processes() {
  // A request made from another thread after this point waits for the next boundary: every
  // process must decide on the same requests.
  const bool asked = checkpoint_requested.exchange(false);
  Communicator& comm = *options.communicator;
  const int64_t size = comm.size(), rank = comm.rank();
  const Ending mine = failed                  ? Ending::failed
                      : stop_requested.load() ? Ending::stopped
                      : end_of_data           ? Ending::end_of_data
                                              : Ending::none;
  // One allreduce of one integer, the minimum wins: the ending kind, then the lowest rank, then
  // a checkpoint asked for. While nobody ends the job (every step but the last) every process
  // votes the same ending and rank part, so the lowest bit is "anyone asked".
  int64_t vote = (static_cast<int64_t>(mine) * size + rank) * 2 + (asked ? 0 : 1);
  comm.allreduce(&vote, 1, ReduceOp::min);
  const auto ending = static_cast<Ending>(vote / 2 / size);
  int64_t nobody_asked = vote % 2;
  if (ending != Ending::none) {
    // The bit came from the winner alone: ask once more, at the one boundary that ends the job.
    nobody_asked = asked ? 0 : 1;
    comm.allreduce(&nobody_asked, 1, ReduceOp::min);
    const int winner = static_cast<int>(vote / 2 % size);
    // The winner's cause and reason, once per job: every process ends with the same words.
    std::string message;
    if (winner == rank) {
      std::lock_guard lock(stop_mutex);
      const std::string& reason = ending == Ending::failed    ? failure_reason
                                  : ending == Ending::stopped ? stop_reason
                                                              : result.reason;
      message = std::to_string(static_cast<int>(stop_cause)) + "\n" + reason;
    }
    comm.broadcast(message, winner);
    const std::size_t newline = message.find('\n');
    const auto cause = static_cast<hh_stop_cause>(std::stoi(message.substr(0, newline)));
    std::string reason = message.substr(newline + 1);
    const std::string where = " (rank " + std::to_string(winner) + ")";
    if (reason.size() < where.size() ||
        reason.compare(reason.size() - where.size(), where.size(), where) != 0)
      reason += where;
    switch (ending) {
      case Ending::failed:
        if (!failed || failure_reason != reason) {
          if (winner != rank) log->error("the job fails: {}", reason);
          failure_logged = true;
        }
        failed = true;
        failure_reason = reason;
        break;
      case Ending::stopped: {
        std::lock_guard lock(stop_mutex);
        if (!stop_requested.exchange(true) || stop_reason != reason)
          log->info("the job stops: {}", reason);
        stop_cause = cause;
        stop_reason = reason;
        break;
      }
      case Ending::end_of_data:
        end_of_data = true;
        result.reason = reason;
        break;
      case Ending::none: break;
    }
    agreed_stop = true;
  }
  if (nobody_asked == 0) {
    if (!asked) {
      std::lock_guard lock(checkpoint_mutex);
      if (checkpoint_reasons.empty()) checkpoint_reasons = "a hook on another process";
    }
    write_agreed_checkpoint();
  }
}

void Runtime::Impl::write_agreed_checkpoint() {
  Communicator& comm = *options.communicator;
  std::string reasons;
  {
    std::lock_guard lock(checkpoint_mutex);
    reasons.swap(checkpoint_reasons);
  }
  if (failed) {  // agreed: every process skips it
    if (comm.is_chief())
      log->warn(
          "not writing the checkpoint requested by {}: the job failed, and a failed job never "
          "replaces a good checkpoint",
          reasons);
    return;
  }
  // Every process's hook states travel to the chief, which writes one file for the job.
  std::vector<std::string> gathered;
  try {
    gathered = comm.gather(encode_hook_states(collect_hook_states()), 0);
  } catch (const std::exception& e) {
    log->error("could not gather the hook states for a checkpoint: {}", e.what());
    comm.abort(1);
  }
  if (!comm.is_chief()) return;
  submit_snapshot(std::move(reasons), [&] {
    HookStates all;
    for (int r = 0; r < static_cast<int>(gathered.size()); ++r)
      for (auto& [name, state] : decode_hook_states(gathered[static_cast<std::size_t>(r)]))
        all.emplace(rank_state_key(name, r), std::move(state));
    return all;
  });
}

}  // namespace hookhost
