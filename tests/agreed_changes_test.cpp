// A distributed job's live changes over the Communicator interface alone: two processes played by
// two threads over an in-memory communicator. The step agreement stays one collective per
// boundary without a change, agrees on the chief's change when there is one, and AgreedChanges
// makes each change on every process and hands the chief every process's outcome.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/null_sink.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "runtime/agreed_changes.hpp"
#include "runtime/step_agreement.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::ElementsAre;

// What the threads share: each collective deposits every rank's bytes, then each reads them all.
struct Exchange {
  explicit Exchange(int size) : slots(static_cast<std::size_t>(size)) {}
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> slots;
  int arrived = 0;
  int left = 0;
  long generation = 0;
  int collectives = 0;  // counted once per collective (by rank 0)
};

class ThreadCommunicator : public Communicator {
 public:
  ThreadCommunicator(Exchange& exchange, int rank) : x_(exchange), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(x_.slots.size()); }

  void allreduce(int64_t* values, std::size_t count, ReduceOp op) override {
    const std::vector<std::string> all =
        everyone(std::string(reinterpret_cast<const char*>(values), count * sizeof(int64_t)));
    for (std::size_t i = 0; i < count; ++i) {
      int64_t result = 0;
      for (std::size_t r = 0; r < all.size(); ++r) {
        int64_t v;
        std::memcpy(&v, all[r].data() + i * sizeof v, sizeof v);
        result = r == 0                ? v
                 : op == ReduceOp::sum ? result + v
                 : op == ReduceOp::min ? std::min(result, v)
                                       : std::max(result, v);
      }
      values[i] = result;
    }
  }
  void allreduce(double*, std::size_t, ReduceOp) override { ADD_FAILURE() << "not used"; }
  void broadcast(std::string& bytes, int root) override {
    bytes = everyone(bytes)[static_cast<std::size_t>(root)];
  }
  std::vector<std::string> gather(const std::string& bytes, int root) override {
    std::vector<std::string> all = everyone(bytes);
    return rank_ == root ? all : std::vector<std::string>{};
  }
  void barrier() override { everyone({}); }
  bool allreduce_within(double*, std::size_t, ReduceOp, std::chrono::milliseconds) override {
    return false;
  }
  bool broadcast_within(double*, std::size_t, int, std::chrono::milliseconds) override {
    return false;
  }
  bool barrier_within(std::chrono::milliseconds) override { return false; }
  std::unique_ptr<Communicator> split(bool) override { return nullptr; }
  [[noreturn]] void abort(int) override { std::abort(); }

 private:
  // Every rank's `mine`, by rank, once every rank has given its own.
  std::vector<std::string> everyone(const std::string& mine) {
    std::unique_lock lock(x_.mutex);
    x_.changed.wait(lock, [&] { return x_.left == 0; });  // the previous one is read by all
    x_.slots[static_cast<std::size_t>(rank_)] = mine;
    const long generation = x_.generation;
    if (++x_.arrived == size()) {
      x_.arrived = 0;
      x_.left = size();
      ++x_.generation;
      ++x_.collectives;
      x_.changed.notify_all();
    } else {
      x_.changed.wait(lock, [&] { return x_.generation != generation; });
    }
    std::vector<std::string> all = x_.slots;
    if (--x_.left == 0) x_.changed.notify_all();
    return all;
  }
  Exchange& x_;
  int rank_;
};

std::shared_ptr<spdlog::logger> quiet() {
  return std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::null_sink_mt>());
}

// Runs `body(rank, communicator)` on two threads, one per rank.
void on_two_ranks(Exchange& exchange, const std::function<void(int, ThreadCommunicator&)>& body) {
  std::vector<std::thread> threads;
  for (int rank = 0; rank < 2; ++rank)
    threads.emplace_back([&, rank] {
      ThreadCommunicator comm(exchange, rank);
      body(rank, comm);
    });
  for (auto& t : threads) t.join();
}

TEST(AgreedChanges, ABoundaryWithoutAChangeIsOneCollectiveAndTheChiefsChangeIsAgreedEverywhere) {
  Exchange exchange(2);
  StepAgreement::Decision quiet_boundary[2], busy_boundary[2];
  int collectives_quiet = -1;
  on_two_ranks(exchange, [&](int rank, ThreadCommunicator& comm) {
    JobState job(quiet());
    StepAgreement agreement(comm, job, quiet());
    quiet_boundary[rank] = agreement.agree(true, /*chief_has_changes=*/false);
    comm.barrier();  // counted apart
    if (rank == 0) collectives_quiet = exchange.collectives - 1;
    comm.barrier();
    // Only the chief's own word counts: another process saying it holds changes is ignored.
    busy_boundary[rank] = agreement.agree(true, /*chief_has_changes=*/rank == 0);
  });
  EXPECT_EQ(collectives_quiet, 1);
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_FALSE(quiet_boundary[rank].changes) << rank;
    EXPECT_FALSE(quiet_boundary[rank].checkpoint) << rank;
    EXPECT_TRUE(busy_boundary[rank].changes) << rank;
    EXPECT_FALSE(busy_boundary[rank].checkpoint) << rank;
  }

  StepAgreement::Decision from_rank_1[2];
  on_two_ranks(exchange, [&](int rank, ThreadCommunicator& comm) {
    JobState job(quiet());
    StepAgreement agreement(comm, job, quiet());
    from_rank_1[rank] = agreement.agree(true, /*chief_has_changes=*/rank == 1);
  });
  EXPECT_FALSE(from_rank_1[0].changes);
  EXPECT_FALSE(from_rank_1[1].changes);
}

TEST(AgreedChanges, EveryProcessMakesTheChiefsChangesInOrderAndTheChiefHearsEveryOutcome) {
  Exchange exchange(2);
  AgreedChanges chief_changes;
  std::vector<std::vector<ChangeOutcome>> answers;
  for (const std::string change : {"attach\ta", "detach\tb"})
    ASSERT_TRUE(chief_changes.propose(
        change, [&](std::vector<ChangeOutcome> outcomes) { answers.push_back(outcomes); }));
  EXPECT_TRUE(chief_changes.waiting());
  std::vector<std::string> made[2];
  on_two_ranks(exchange, [&](int rank, ThreadCommunicator& comm) {
    AgreedChanges none;  // another process holds none of its own
    AgreedChanges& mine = rank == 0 ? chief_changes : none;
    mine.share(comm, [&](const std::string& change) -> ChangeOutcome {
      made[rank].push_back(change);
      if (rank == 1 && change == "detach\tb") throw std::runtime_error("no such hook");
      return {true, "rank " + std::to_string(rank) + " made " + change};
    });
  });
  EXPECT_FALSE(chief_changes.waiting());
  EXPECT_THAT(made[0], ElementsAre("attach\ta", "detach\tb"));
  EXPECT_THAT(made[1], ElementsAre("attach\ta", "detach\tb"));
  ASSERT_EQ(answers.size(), 2u);
  ASSERT_EQ(answers[0].size(), 2u);
  EXPECT_TRUE(answers[0][0].ok);
  EXPECT_EQ(answers[0][0].text, "rank 0 made attach\ta");
  EXPECT_EQ(answers[0][1].text, "rank 1 made attach\ta");
  ASSERT_EQ(answers[1].size(), 2u);
  EXPECT_TRUE(answers[1][0].ok);
  EXPECT_FALSE(answers[1][1].ok);
  EXPECT_EQ(answers[1][1].text, "the change failed: no such hook");

  // Closed: a change still waiting is answered, and no new one is taken.
  std::vector<ChangeOutcome> last;
  ASSERT_TRUE(chief_changes.propose("set\tx.k=1", [&](auto outcomes) { last = outcomes; }));
  chief_changes.close("the job is ending");
  ASSERT_EQ(last.size(), 1u);
  EXPECT_FALSE(last[0].ok);
  EXPECT_EQ(last[0].text, "the job is ending");
  EXPECT_FALSE(chief_changes.propose("detach\tx", nullptr));
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
