// The Communicator over torch.distributed, called from C++ through its Python API: small CPU
// tensors on a gloo group of hookhost's own. Numbers travel as int64 and float64 tensors, bytes as
// uint8 tensors after their sizes. The runtime calls it without the GIL (the training thread
// released it for the step), so every operation takes it.
#include "torch_communicator.hpp"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace py = pybind11;
using namespace pybind11::literals;

namespace hookhost_python {
namespace {

using hookhost::Communicator;
using hookhost::ReduceOp;

void* data_of(const py::object& tensor) {
  return reinterpret_cast<void*>(tensor.attr("data_ptr")().cast<uintptr_t>());
}

class TorchCommunicator final : public Communicator {
 public:
  // `group`: a gloo group of the processes `members` (their ranks in the default group, in this
  // communicator's rank order), of which this process is one.
  TorchCommunicator(py::object group, std::vector<int> members, int rank,
                    std::chrono::milliseconds split_timeout)
      : split_timeout_(split_timeout),
        torch_(py::module_::import("torch")),
        dist_(py::module_::import("torch.distributed")),
        group_(std::move(group)),
        members_(std::move(members)),
        rank_(rank) {
    py::object ops = dist_.attr("ReduceOp");
    sum_ = ops.attr("SUM");
    min_ = ops.attr("MIN");
    max_ = ops.attr("MAX");
    timedelta_ = py::module_::import("datetime").attr("timedelta");
  }
  ~TorchCommunicator() override {
    if (!Py_IsInitialized()) {  // the interpreter is gone: its objects cannot be released
      for (py::object* o : {&torch_, &dist_, &group_, &sum_, &min_, &max_, &timedelta_})
        o->release();
      for (auto* cache : {&int64_tensors_, &double_tensors_})
        for (auto& [_, t] : *cache) t.release();
      return;
    }
    py::gil_scoped_acquire gil;
    torch_ = dist_ = group_ = sum_ = min_ = max_ = timedelta_ = py::object();
    int64_tensors_.clear();
    double_tensors_.clear();
  }

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(members_.size()); }

  void allreduce(int64_t* values, std::size_t count, ReduceOp op) override {
    py::gil_scoped_acquire gil;
    usable();
    reduce(values, count, op, torch_.attr("int64"), int64_tensors_, false, {});
  }
  void allreduce(double* values, std::size_t count, ReduceOp op) override {
    py::gil_scoped_acquire gil;
    usable();
    reduce(values, count, op, torch_.attr("float64"), double_tensors_, false, {});
  }

  void broadcast(std::string& bytes, int root) override {
    py::gil_scoped_acquire gil;
    usable();
    py::object size = torch_.attr("tensor")(py::make_tuple(static_cast<int64_t>(bytes.size())),
                                            "dtype"_a = torch_.attr("int64"));
    dist_.attr("broadcast")(size, "src"_a = members_.at(static_cast<std::size_t>(root)),
                            "group"_a = group_);
    const auto count = static_cast<std::size_t>(size[py::int_(0)].attr("item")().cast<int64_t>());
    if (rank_ != root) bytes.assign(count, '\0');
    if (count == 0) return;
    py::object data = bytes_tensor(count);
    if (rank_ == root) std::memcpy(data_of(data), bytes.data(), count);
    dist_.attr("broadcast")(data, "src"_a = members_.at(static_cast<std::size_t>(root)),
                            "group"_a = group_);
    if (rank_ != root) std::memcpy(bytes.data(), data_of(data), count);
  }

  std::vector<std::string> gather(const std::string& bytes, int root) override {
    // Every size on every process (one allreduce), then the bytes padded to the largest.
    std::vector<int64_t> sizes(members_.size(), 0);
    sizes[static_cast<std::size_t>(rank_)] = static_cast<int64_t>(bytes.size());
    allreduce(sizes.data(), sizes.size(), ReduceOp::sum);
    py::gil_scoped_acquire gil;
    int64_t largest = 0;
    for (int64_t s : sizes) largest = std::max(largest, s);
    std::vector<std::string> out;
    if (largest == 0) {
      if (rank_ == root) out.assign(members_.size(), std::string());
      return out;
    }
    py::object mine = bytes_tensor(static_cast<std::size_t>(largest));
    std::memcpy(data_of(mine), bytes.data(), bytes.size());
    py::object list = py::none();
    if (rank_ == root) {
      py::list tensors;
      for (std::size_t r = 0; r < members_.size(); ++r)
        tensors.append(bytes_tensor(static_cast<std::size_t>(largest)));
      list = tensors;
    }
    dist_.attr("gather")(mine, list, "dst"_a = members_.at(static_cast<std::size_t>(root)),
                         "group"_a = group_);
    if (rank_ == root) {
      py::list tensors = list;
      for (std::size_t r = 0; r < members_.size(); ++r)
        out.emplace_back(static_cast<const char*>(data_of(tensors[r])),
                         static_cast<std::size_t>(sizes[r]));
    }
    return out;
  }

  void barrier() override {
    py::gil_scoped_acquire gil;
    usable();
    dist_.attr("barrier")("group"_a = group_);
  }

  bool allreduce_within(double* values, std::size_t count, ReduceOp op,
                        std::chrono::milliseconds timeout) override {
    py::gil_scoped_acquire gil;
    if (broken_) return false;
    return reduce(values, count, op, torch_.attr("float64"), double_tensors_, true, timeout);
  }
  bool broadcast_within(double* values, std::size_t count, int root,
                        std::chrono::milliseconds timeout) override {
    py::gil_scoped_acquire gil;
    if (broken_) return false;
    py::object t = cached(double_tensors_, count, torch_.attr("float64"));
    std::memcpy(data_of(t), values, count * sizeof(double));
    const bool done =
        finish(dist_.attr("broadcast")(t, "src"_a = members_.at(static_cast<std::size_t>(root)),
                                       "group"_a = group_, "async_op"_a = true),
               timeout);
    if (done) std::memcpy(values, data_of(t), count * sizeof(double));
    return done;
  }
  bool barrier_within(std::chrono::milliseconds timeout) override {
    py::gil_scoped_acquire gil;
    if (broken_) return false;
    return finish(dist_.attr("barrier")("group"_a = group_, "async_op"_a = true), timeout);
  }

  std::unique_ptr<Communicator> split(bool member) override {
    // torch.distributed's new_group is collective over the default group: only a communicator
    // over all of it can split (the runtime splits the job's, once per hook).
    std::vector<int64_t> flags(members_.size(), 0);
    flags[static_cast<std::size_t>(rank_)] = member ? 1 : 0;
    allreduce(flags.data(), flags.size(), ReduceOp::sum);
    py::gil_scoped_acquire gil;
    if (static_cast<int>(members_.size()) != dist_.attr("get_world_size")().cast<int>())
      throw std::logic_error(
          "hookhost: a torch.distributed communicator splits only over the whole default group");
    std::vector<int> ranks;
    int my_rank = -1;
    for (std::size_t r = 0; r < flags.size(); ++r)
      if (flags[r]) {
        if (static_cast<int>(r) == rank_) my_rank = static_cast<int>(ranks.size());
        ranks.push_back(members_[r]);
      }
    if (ranks.empty()) return nullptr;  // new_group(ranks=[]) would be the whole world
    py::object group = dist_.attr("new_group")(
        "ranks"_a = ranks, "backend"_a = "gloo",
        "timeout"_a = timedelta_("milliseconds"_a = split_timeout_.count()));
    if (!member) return nullptr;
    return std::make_unique<TorchCommunicator>(std::move(group), std::move(ranks), my_rank,
                                               split_timeout_);
  }

  [[noreturn]] void abort(int exit_code) override {
    // torchrun's agent ends the other processes when one exits with an error.
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(exit_code);
  }

 private:
  void usable() const {
    if (broken_)
      throw std::logic_error("hookhost: a communicator was used after a collective timed out");
  }

  py::object op_of(ReduceOp op) const {
    switch (op) {
      case ReduceOp::sum: return sum_;
      case ReduceOp::min: return min_;
      case ReduceOp::max: return max_;
    }
    return sum_;
  }

  // One tensor per element count and type, reused: the per-step agreement sends the same one.
  py::object cached(std::map<std::size_t, py::object>& cache, std::size_t count,
                    const py::object& dtype) {
    auto it = cache.find(count);
    if (it == cache.end())
      it = cache.emplace(count, torch_.attr("empty")(count, "dtype"_a = dtype)).first;
    return it->second;
  }
  py::object bytes_tensor(std::size_t count) {
    return torch_.attr("zeros")(count, "dtype"_a = torch_.attr("uint8"));
  }

  template <typename T>
  bool reduce(T* values, std::size_t count, ReduceOp op, const py::object& dtype,
              std::map<std::size_t, py::object>& cache, bool within,
              std::chrono::milliseconds timeout) {
    if (count == 0) return true;
    py::object t = cached(cache, count, dtype);
    std::memcpy(data_of(t), values, count * sizeof(T));
    if (within) {
      if (!finish(dist_.attr("all_reduce")(t, "op"_a = op_of(op), "group"_a = group_,
                                           "async_op"_a = true),
                  timeout))
        return false;
    } else {
      dist_.attr("all_reduce")(t, "op"_a = op_of(op), "group"_a = group_);
    }
    std::memcpy(values, data_of(t), count * sizeof(T));
    return true;
  }

  // Waits for an asynchronous collective at most `timeout`; after a timeout (or a lost peer) the
  // operation stays pending and nothing may use this communicator again.
  bool finish(const py::object& work, std::chrono::milliseconds timeout) {
    try {
      work.attr("wait")("timeout"_a = timedelta_("milliseconds"_a = timeout.count()));
      return true;
    } catch (py::error_already_set&) {
      broken_ = true;
      return false;
    }
  }

  std::chrono::milliseconds split_timeout_;
  py::object torch_, dist_, group_;
  py::object sum_, min_, max_, timedelta_;
  std::vector<int> members_;  // default-group rank of each rank of this communicator
  int rank_ = 0;
  bool broken_ = false;
  std::map<std::size_t, py::object> int64_tensors_, double_tensors_;
};

}  // namespace

std::shared_ptr<Communicator> torch_communicator(std::chrono::milliseconds split_timeout) {
  py::module_ dist = py::module_::import("torch.distributed");
  if (!dist.attr("is_available")().cast<bool>() || !dist.attr("is_initialized")().cast<bool>())
    throw std::runtime_error(
        "torch.distributed is not initialised: call torch.distributed.init_process_group() "
        "first, or pass distributed=\"torch\" to MonitoredSession");
  const int world = dist.attr("get_world_size")().cast<int>();
  const int rank = dist.attr("get_rank")().cast<int>();
  std::vector<int> members;
  for (int r = 0; r < world; ++r) members.push_back(r);
  py::object group = dist.attr("new_group")("backend"_a = "gloo");
  return std::make_shared<TorchCommunicator>(std::move(group), std::move(members), rank,
                                             split_timeout);
}

}  // namespace hookhost_python
