// The Communicator over MPI's C API. hookhost works on a duplicate of the communicator it is
// given, so its collectives never match a message of the embedding program's.
#include "hookhost/host/mpi.hpp"

#include <climits>
#include <cstdlib>
#include <stdexcept>
#include <thread>

namespace hookhost {
namespace {

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
  }
  return MPI_SUM;
}

int mpi_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw std::length_error("hookhost: a collective of " + std::to_string(count) +
                            " elements is larger than MPI's int count");
  return static_cast<int>(count);
}

// Polls a non-blocking collective until it completes or `timeout` passes. Short spins first (a
// collective between processes on one machine completes in microseconds), then short sleeps.
bool wait_within(MPI_Request& request, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int spins = 0;; ++spins) {
    int done = 0;
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    if (spins < 1000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm owned) : comm_(owned) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    // A communicator with an operation left pending by a timeout is not freed: freeing it would
    // wait for that operation.
    if (!finalized && !broken_) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce(int64_t* values, std::size_t count, ReduceOp op) override {
    usable();
    MPI_Allreduce(MPI_IN_PLACE, values, mpi_count(count), MPI_INT64_T, mpi_op(op), comm_);
  }
  void allreduce(double* values, std::size_t count, ReduceOp op) override {
    usable();
    MPI_Allreduce(MPI_IN_PLACE, values, mpi_count(count), MPI_DOUBLE, mpi_op(op), comm_);
  }

  void broadcast(std::string& bytes, int root) override {
    usable();
    int64_t size = static_cast<int64_t>(bytes.size());
    MPI_Bcast(&size, 1, MPI_INT64_T, root, comm_);
    bytes.resize(static_cast<std::size_t>(size));
    // In pieces below MPI's int count, so a large checkpoint still travels.
    constexpr std::size_t kPiece = 1u << 30;
    for (std::size_t at = 0; at < bytes.size(); at += kPiece)
      MPI_Bcast(bytes.data() + at, mpi_count(std::min(kPiece, bytes.size() - at)), MPI_BYTE, root,
                comm_);
  }

  std::vector<std::string> gather(const std::string& bytes, int root) override {
    usable();
    const int64_t mine = static_cast<int64_t>(bytes.size());
    std::vector<int64_t> sizes(rank_ == root ? static_cast<std::size_t>(size_) : 0);
    MPI_Gather(&mine, 1, MPI_INT64_T, sizes.data(), 1, MPI_INT64_T, root, comm_);
    std::vector<int> counts, offsets;
    std::string all;
    if (rank_ == root) {
      int64_t total = 0;
      for (int64_t s : sizes) {
        offsets.push_back(static_cast<int>(total));
        counts.push_back(static_cast<int>(s));
        total += s;
        if (total > INT_MAX) throw std::length_error("hookhost: the gathered states exceed 2 GiB");
      }
      all.resize(static_cast<std::size_t>(total));
    }
    MPI_Gatherv(bytes.data(), mpi_count(bytes.size()), MPI_BYTE, all.data(), counts.data(),
                offsets.data(), MPI_BYTE, root, comm_);
    std::vector<std::string> out;
    for (std::size_t r = 0; r < sizes.size(); ++r)
      out.push_back(
          all.substr(static_cast<std::size_t>(offsets[r]), static_cast<std::size_t>(counts[r])));
    return out;
  }

  void barrier() override {
    usable();
    MPI_Barrier(comm_);
  }

  bool allreduce_within(double* values, std::size_t count, ReduceOp op,
                        std::chrono::milliseconds timeout) override {
    if (broken_) return false;
    MPI_Request request;
    MPI_Iallreduce(MPI_IN_PLACE, values, mpi_count(count), MPI_DOUBLE, mpi_op(op), comm_, &request);
    return finish(request, timeout);
  }
  bool broadcast_within(double* values, std::size_t count, int root,
                        std::chrono::milliseconds timeout) override {
    if (broken_) return false;
    MPI_Request request;
    MPI_Ibcast(values, mpi_count(count), MPI_DOUBLE, root, comm_, &request);
    return finish(request, timeout);
  }
  bool barrier_within(std::chrono::milliseconds timeout) override {
    if (broken_) return false;
    MPI_Request request;
    MPI_Ibarrier(comm_, &request);
    return finish(request, timeout);
  }

  std::unique_ptr<Communicator> split(bool member) override {
    usable();
    MPI_Comm part = MPI_COMM_NULL;
    MPI_Comm_split(comm_, member ? 0 : MPI_UNDEFINED, rank_, &part);
    if (part == MPI_COMM_NULL) return nullptr;
    return std::make_unique<MpiCommunicator>(part);
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(comm_, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
  }

 private:
  void usable() const {
    if (broken_)
      throw std::logic_error("hookhost: a communicator was used after a collective timed out");
  }
  bool finish(MPI_Request& request, std::chrono::milliseconds timeout) {
    if (wait_within(request, timeout)) return true;
    broken_ = true;  // the operation stays pending; nothing may use this communicator again
    return false;
  }

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  bool broken_ = false;
};

}  // namespace

std::shared_ptr<Communicator> mpi_communicator(MPI_Comm comm) {
  MPI_Comm own = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &own);
  return std::make_shared<MpiCommunicator>(own);
}

MpiEnvironment::MpiEnvironment() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  if (provided < MPI_THREAD_FUNNELED) {
    MPI_Finalize();
    throw std::runtime_error("hookhost: this MPI does not offer MPI_THREAD_FUNNELED");
  }
}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::optional<std::string> mpi_launcher_evidence() {
  // Open MPI's mpirun, then the PMIx and PMI variables other launchers (MPICH's Hydra, Slurm) set.
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (const char* value = std::getenv(name)) return std::string(name) + "=" + value;
  return std::nullopt;
}

}  // namespace hookhost
