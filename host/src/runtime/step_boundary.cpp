// The step boundary of a distributed job. Every process runs its own runtime; after each phase
// (start, every step, a recovery, the end) they take part in one 8-byte allreduce that decides
// for all of them: the job ends when any process failed, stopped or ran out of data, with that
// process's outcome and reason (a failure first, then the lowest rank), and a checkpoint is taken
// when any process asked for one. No process leaves its loop before the others know, so none is
// left waiting in a collective. A second, small allreduce follows only at a boundary that ends the
// job, takes a checkpoint, or after the chief finished writing one (then the chief also broadcasts
// its newest checkpoint, which hh.checkpoint/1 last_written reports on every process).
#include "distributed/state_transfer.hpp"
#include "runtime_impl.hpp"

namespace hookhost {
namespace {

enum class Ending : int64_t { failed = 0, stopped = 1, end_of_data = 2, none = 3 };

}  // namespace

void Runtime::Impl::agree_across_processes(bool decide_checkpoint) {
  // A request made from another thread after this point waits for the next boundary: every
  // process must decide on the same requests. A boundary that does not decide on checkpoints
  // leaves the request for the next one.
  const bool asked = decide_checkpoint && job.take_checkpoint_flag();
  Communicator& comm = *options.communicator;
  const int64_t size = comm.size(), rank = comm.rank();
  const bool chief_has_news = comm.is_chief() && job.checkpoint_unshared();
  const Ending mine = job.failed()           ? Ending::failed
                      : job.stop_requested() ? Ending::stopped
                      : job.end_of_data()    ? Ending::end_of_data
                                             : Ending::none;
  // One allreduce of one integer, the minimum wins: the ending kind, then the lowest rank of a
  // process that ends the job, then "more to agree on". A process that does not end the job votes
  // rank 0, so while nobody ends it every process votes the same upper part and the lowest bit is
  // the minimum over every process: 0 when anyone asked for a checkpoint or the chief has news.
  const int64_t rank_part = mine == Ending::none ? 0 : rank;
  int64_t vote =
      (static_cast<int64_t>(mine) * size + rank_part) * 2 + (asked || chief_has_news ? 0 : 1);
  comm.allreduce(&vote, 1, ReduceOp::min);
  const auto ending = static_cast<Ending>(vote / 2 / size);
  bool anyone_asked = false;
  if (ending != Ending::none || vote % 2 == 0) {
    // At a boundary that ends the job the bit came from the winner alone, and elsewhere it does
    // not say which of the two it was: ask every process for both.
    int64_t details[2] = {asked ? 1 : 0, chief_has_news ? 1 : 0};
    comm.allreduce(details, 2, ReduceOp::max);
    anyone_asked = details[0] != 0;
    if (details[1] != 0) share_chief_checkpoint();
  }
  if (ending != Ending::none) {
    const int winner = static_cast<int>(vote / 2 % size);
    // The winner's cause and reason, once per job: every process ends with the same words.
    std::string message;
    if (winner == rank) {
      const JobState::Stop stop = job.stop();
      const std::string& reason = ending == Ending::failed    ? job.failure_reason()
                                  : ending == Ending::stopped ? stop.reason
                                                              : result.reason;
      message = std::to_string(static_cast<int>(stop.cause)) + "\n" + reason;
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
        if (!job.failed() || job.failure_reason() != reason) {
          if (winner != rank) log->error("the job fails: {}", reason);
          job.mark_failure_logged();
        }
        job.replace_failure(reason);
        break;
      case Ending::stopped: job.adopt_agreed_stop(cause, reason); break;
      case Ending::end_of_data:
        job.set_end_of_data();
        result.reason = reason;
        break;
      case Ending::none: break;
    }
    agreed_stop = true;
  }
  if (anyone_asked) {
    if (!asked) job.name_checkpoint_requester("a hook on another process");
    write_agreed_checkpoint();
  }
}

void Runtime::Impl::write_agreed_checkpoint() {
  Communicator& comm = *options.communicator;
  std::string reasons = job.take_checkpoint_reasons();
  if (job.failed()) {  // agreed: every process skips it
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

void Runtime::Impl::share_chief_checkpoint() {
  Communicator& comm = *options.communicator;
  std::string message;
  if (comm.is_chief())
    if (const auto newest = job.share_last_checkpoint())
      message = std::to_string(newest->global_step) + "\n" + newest->file.string();
  comm.broadcast(message, 0);
  if (comm.is_chief() || message.empty()) return;
  const std::size_t newline = message.find('\n');
  if (newline == std::string::npos) return;
  // The other processes name the chief's file, the job's one checkpoint at that step.
  job.set_last_checkpoint(
      WrittenCheckpoint{message.substr(newline + 1), std::stoll(message.substr(0, newline))});
}

}  // namespace hookhost
