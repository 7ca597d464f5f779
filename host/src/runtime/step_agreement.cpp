#include "runtime/step_agreement.hpp"

#include <cctype>
#include <string>
#include <string_view>

namespace hookhost {
namespace {

// Whether `reason` ends with " (rank N)", as an agreed ending's reason does.
bool names_a_rank(std::string_view reason) {
  if (reason.empty() || reason.back() != ')') return false;
  reason.remove_suffix(1);
  std::size_t digits = 0;
  while (digits < reason.size() &&
         std::isdigit(static_cast<unsigned char>(reason[reason.size() - 1 - digits])))
    ++digits;
  return digits > 0 && reason.substr(0, reason.size() - digits).ends_with(" (rank ");
}

enum class Ending : int64_t { failed = 0, stopped = 1, end_of_data = 2, none = 3 };

}  // namespace

StepAgreement::Decision StepAgreement::agree(bool decide_requests, bool chief_has_changes) {
  // A request made from another thread after this point waits for the next boundary: every
  // process must decide on the same requests. A boundary that does not decide on checkpoints
  // leaves the request for the next one.
  const bool asked = decide_requests && job_.take_checkpoint_flag();
  const int64_t size = comm_.size(), rank = comm_.rank();
  const bool chief_has_news = comm_.is_chief() && job_.checkpoint_unshared();
  const bool chief_changes = comm_.is_chief() && chief_has_changes;
  const Ending mine = job_.failed()           ? Ending::failed
                      : job_.stop_requested() ? Ending::stopped
                      : job_.end_of_data()    ? Ending::end_of_data
                                              : Ending::none;
  // One allreduce of one integer, the minimum wins: the ending kind, then the lowest rank of a
  // process that ends the job, then "more to agree on". A process that does not end the job votes
  // rank 0, so while nobody ends it every process votes the same upper part and the lowest bit is
  // the minimum over every process: 0 when anyone asked for a checkpoint or the chief has news
  // (a checkpoint written, or live changes).
  const int64_t rank_part = mine == Ending::none ? 0 : rank;
  const bool more = asked || chief_has_news || chief_changes;
  int64_t vote = (static_cast<int64_t>(mine) * size + rank_part) * 2 + (more ? 0 : 1);
  comm_.allreduce(&vote, 1, ReduceOp::min);
  const auto ending = static_cast<Ending>(vote / 2 / size);
  Decision decision;
  if (ending != Ending::none || vote % 2 == 0) {
    // At a boundary that ends the job the bit came from the winner alone, and elsewhere it does
    // not say which it was: ask every process for each.
    int64_t details[3] = {asked ? 1 : 0, chief_has_news ? 1 : 0, chief_changes ? 1 : 0};
    comm_.allreduce(details, 3, ReduceOp::max);
    decision.checkpoint = details[0] != 0;
    decision.changes = details[2] != 0;
    if (details[1] != 0) share_chief_checkpoint();
  }
  if (ending != Ending::none) {
    const int winner = static_cast<int>(vote / 2 % size);
    // The winner's cause and reason, once per job: every process ends with the same words.
    std::string message;
    if (winner == rank) {
      const JobState::Stop stop = job_.stop();
      const std::string& reason = ending == Ending::failed    ? job_.failure_reason()
                                  : ending == Ending::stopped ? stop.reason
                                                              : job_.end_of_data_reason();
      message = std::to_string(static_cast<int>(stop.cause)) + "\n" + reason;
    }
    comm_.broadcast(message, winner);
    const std::size_t newline = message.find('\n');
    const auto cause = static_cast<hh_stop_cause>(std::stoi(message.substr(0, newline)));
    std::string reason = message.substr(newline + 1);
    // Named once: a later agreement (the one at close) passes on a reason that already says
    // which process ended the job, and that process need not be the later winner.
    if (!names_a_rank(reason)) reason += " (rank " + std::to_string(winner) + ")";
    switch (ending) {
      case Ending::failed:
        if (!job_.failed() || job_.failure_reason() != reason) {
          if (winner != rank) log_->error("the job fails: {}", reason);
          job_.mark_failure_logged();
        }
        job_.replace_failure(reason);
        break;
      case Ending::stopped: job_.adopt_agreed_stop(cause, reason); break;
      case Ending::end_of_data: job_.set_end_of_data(reason); break;
      case Ending::none: break;
    }
    job_ends_ = true;
  }
  if (decision.checkpoint && !asked) job_.name_checkpoint_requester("a hook on another process");
  return decision;
}

void StepAgreement::share_chief_checkpoint() {
  std::string message;
  if (comm_.is_chief())
    if (const auto newest = job_.share_last_checkpoint())
      message = std::to_string(newest->global_step) + "\n" + newest->file.string();
  comm_.broadcast(message, 0);
  if (comm_.is_chief() || message.empty()) return;
  const std::size_t newline = message.find('\n');
  if (newline == std::string::npos) return;
  // The other processes name the chief's file, the job's one checkpoint at that step.
  job_.set_last_checkpoint(
      WrittenCheckpoint{message.substr(newline + 1), std::stoll(message.substr(0, newline))});
}

}  // namespace hookhost
