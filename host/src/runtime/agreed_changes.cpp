#include "runtime/agreed_changes.hpp"

#include <exception>
#include <stdexcept>

namespace hookhost {
namespace {

// Length-prefixed texts for the wire ("LENGTH:BYTES" each; both ends run the same program).
void put_text(std::string& out, const std::string& text) {
  out += std::to_string(text.size());
  out += ':';
  out += text;
}

std::vector<std::string> texts_of(const std::string& bytes) {
  std::vector<std::string> texts;
  for (std::size_t at = 0; at < bytes.size();) {
    const std::size_t colon = bytes.find(':', at);
    if (colon == std::string::npos) throw std::runtime_error("a shared change is cut short");
    const std::size_t size = std::stoul(bytes.substr(at, colon - at));
    if (size > bytes.size() - colon - 1) throw std::runtime_error("a shared change is cut short");
    texts.push_back(bytes.substr(colon + 1, size));
    at = colon + 1 + size;
  }
  return texts;
}

}  // namespace

bool AgreedChanges::propose(std::string change, Done done) {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  changes_.emplace_back(std::move(change), std::move(done));
  waiting_.store(true, std::memory_order_release);
  return true;
}

void AgreedChanges::close(const std::string& why) {
  std::vector<std::pair<std::string, Done>> left;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    left.swap(changes_);
    waiting_.store(false, std::memory_order_relaxed);
  }
  for (auto& [change, done] : left)
    if (done) done({ChangeOutcome{false, why}});
}

void AgreedChanges::share(Communicator& comm,
                          const std::function<ChangeOutcome(const std::string&)>& apply) {
  std::vector<std::pair<std::string, Done>> mine;
  std::string message;
  if (comm.is_chief()) {
    std::lock_guard lock(mutex_);
    mine.swap(changes_);
    waiting_.store(false, std::memory_order_relaxed);
    for (const auto& change : mine) put_text(message, change.first);
  }
  comm.broadcast(message, 0);
  // Every process applies every change, and answers for each, whatever happens: the gather below
  // is collective.
  std::string outcomes;
  std::vector<std::string> changes;
  try {
    changes = texts_of(message);
  } catch (const std::exception& e) {
    put_text(outcomes, std::string("0") + e.what());
  }
  for (const std::string& change : changes) {
    ChangeOutcome outcome;
    try {
      outcome = apply(change);
    } catch (const std::exception& e) {
      outcome = {false, std::string("the change failed: ") + e.what()};
    }
    put_text(outcomes, (outcome.ok ? "1" : "0") + outcome.text);
  }
  const std::vector<std::string> gathered = comm.gather(outcomes, 0);
  if (!comm.is_chief()) return;
  // By change, then by rank.
  std::vector<std::vector<ChangeOutcome>> answers(mine.size());
  for (const std::string& of_rank : gathered) {
    std::vector<std::string> texts;
    try {
      texts = texts_of(of_rank);
    } catch (const std::exception&) {
    }
    for (std::size_t i = 0; i < answers.size(); ++i) {
      ChangeOutcome outcome;
      if (i < texts.size() && !texts[i].empty()) {
        outcome.ok = texts[i][0] == '1';
        outcome.text = texts[i].substr(1);
      } else {
        outcome.text = "no outcome came back";
      }
      answers[i].push_back(std::move(outcome));
    }
  }
  for (std::size_t i = 0; i < mine.size(); ++i)
    if (mine[i].second) mine[i].second(std::move(answers[i]));
}

}  // namespace hookhost
