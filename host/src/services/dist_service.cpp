// hh.dist/1: a hook's collectives over the processes that run it (HostServices::group), each
// bounded by the job's collective timeout. Every call first agrees with the others on what is
// being called (the function, the callback, the step, the count, the op or root), so processes
// that call differently fail together with a message instead of mixing their values; a call the
// others never join fails once the timeout passes. Either way the service is then unusable for
// the instance: its processes are out of step, and an abandoned operation may still be pending.
#include <hookhost/ext/dist.h>

#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"
#include "support/text.hpp"

namespace hookhost {

template <>
DistService& service_detail::service_for<DistService>(HostServices& caller) {
  return caller.context->services().dist;
}

namespace {

enum class Kind { allreduce = 1, broadcast = 2, barrier = 3 };

const char* function_name(Kind kind) {
  // Indexed by Kind; a value of no kind (a peer's garbled word) names the extension alone.
  static constexpr const char* kNames[] = {"hh.dist/1", "hh.dist/1 allreduce",
                                           "hh.dist/1 broadcast", "hh.dist/1 barrier"};
  const auto index = static_cast<size_t>(kind);
  return index < std::size(kNames) ? kNames[index] : kNames[0];
}

// A buffer handed to a collective that timed out stays MPI's: a process that joins late still
// writes into it. It is never freed (and stays reachable, so it is no leak either).
void abandon(std::unique_ptr<double[]> buffer) {
  static std::mutex mutex;
  static auto* kept = new std::vector<std::unique_ptr<double[]>>;
  std::lock_guard lock(mutex);
  kept->push_back(std::move(buffer));
}

// One collective call of one instance, once its arguments are known to be valid.
class Collective {
 public:
  Collective(HostServices& caller, Kind kind) : caller_(caller), kind_(kind) {
    // An observer's calls run on its worker after their step, in no order with the collectives
    // the other processes' hooks make on the step: joining them would pair unrelated calls.
    if (t_observed_step != kNoObservedStep)
      throw Misuse(
          "from an observer (mode = observe), whose calls run behind the step on a thread of "
          "their own; call collectives from a hook that runs on the step");
    ServiceContext& context = *caller.context;
    const RunningCall& running = context.running_call();
    const int callback = running.callback();
    const bool own_call = running.instance() == &caller && callback >= 0;
    if (!own_call || t_current_call != &caller)
      throw Misuse(own_call ? "from another thread than the lifecycle call running it"
                            : "outside the instance's lifecycle calls (a collective is called from "
                              "begin, after_create_session, before_run, after_run or end, on the "
                              "thread that runs them)");
    callback_ = static_cast<Callback>(callback);
    step_ = context.global_step();
    timeout_ = context.collective_timeout();
    if (!caller.dist_unusable.empty())
      // Not logged again: the failure that made it unusable was.
      throw std::runtime_error(where() + ": refused, the service is unusable for this hook since " +
                               caller.dist_unusable + " failed");
  }

  // No other process to wait for.
  bool alone() const { return !caller_.group || caller_.group->size() == 1; }
  Communicator& group() const { return *caller_.group; }

  // Agrees with the others on the call; `count` and `detail` (the op or the root) are this
  // process's. Throws Refusal when they called something else or did not join in time.
  void agree(std::size_t count, int32_t detail) {
    const std::array<double, 5> mine = {static_cast<double>(kind_), static_cast<double>(callback_),
                                        static_cast<double>(step_), static_cast<double>(count),
                                        static_cast<double>(detail)};
    // The maximum of each field and of its negation: equal everywhere when max == -max(-x).
    auto both = std::make_unique<double[]>(2 * mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
      both[i] = mine[i];
      both[mine.size() + i] = -mine[i];
    }
    if (!within(both, [&](double* values) {
          return group().allreduce_within(values, 2 * mine.size(), ReduceOp::max, timeout_);
        }))
      timed_out();
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (both[i] != -both[mine.size() + i]) disagree(i, -both[mine.size() + i], both[i]);
  }

  // Runs `collective` on a copy of `values` that outlives a timeout; copies the result back only
  // when it completed.
  template <typename Fn>
  void run(double* values, std::size_t count, Fn&& collective) {
    auto buffer = std::make_unique<double[]>(count > 0 ? count : 1);
    if (count > 0) std::memcpy(buffer.get(), values, count * sizeof(double));
    if (!within(buffer, collective)) timed_out();
    if (count > 0) std::memcpy(values, buffer.get(), count * sizeof(double));
  }

  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  template <typename Fn>
  static bool within(std::unique_ptr<double[]>& buffer, Fn&& collective) {
    if (collective(buffer.get())) return true;
    abandon(std::move(buffer));
    return false;
  }

  // "hh.dist/1 allreduce: hook 'avg' (plugin 'x') in after_run at global step 12"
  std::string where() const {
    return std::string(function_name(kind_)) + ": " +
           describe_hook(caller_.instance_name, caller_.plugin_id) + " in " + name_of(callback_) +
           " at global step " + std::to_string(step_);
  }
  std::string what_failed() const {
    return std::string(function_name(kind_)) + " in " + name_of(callback_) + " at global step " +
           std::to_string(step_);
  }

  [[noreturn]] void timed_out() {
    caller_.dist_unusable = what_failed();
    throw Refusal(where() + ": the other processes did not join within " +
                  std::to_string(timeout_.count()) +
                  " ms (a collective must be called by every process running the hook, in the "
                  "same callback)");
  }

  [[noreturn]] void disagree(std::size_t field, double low, double high) {
    caller_.dist_unusable = what_failed();
    std::string differs;
    switch (field) {
      case 0:
        differs = std::string("another function (") +
                  function_name(static_cast<Kind>(static_cast<int>(low))) + " and " +
                  function_name(static_cast<Kind>(static_cast<int>(high))) + ")";
        break;
      case 1:
        differs = std::string("another callback (") +
                  name_of(static_cast<Callback>(static_cast<int>(low))) + " and " +
                  name_of(static_cast<Callback>(static_cast<int>(high))) + ")";
        break;
      case 2:
        differs = "another global step (" + std::to_string(static_cast<int64_t>(low)) + " and " +
                  std::to_string(static_cast<int64_t>(high)) + ")";
        break;
      case 3:
        differs = "another count (" + std::to_string(static_cast<int64_t>(low)) + " and " +
                  std::to_string(static_cast<int64_t>(high)) + ")";
        break;
      default:
        differs = std::string(kind_ == Kind::broadcast ? "another root" : "another op") + " (" +
                  std::to_string(static_cast<int64_t>(low)) + " and " +
                  std::to_string(static_cast<int64_t>(high)) + ")";
    }
    throw Refusal(where() + ": the processes running the hook called it differently: " + differs +
                  " (a collective must be called by every process running the hook, in the same "
                  "callback, in the same order, with the same arguments)");
  }

  HostServices& caller_;
  Kind kind_;
  Callback callback_ = Callback::begin;
  int64_t step_ = 0;
  std::chrono::milliseconds timeout_{0};
};

void check_values(const double* values, std::size_t count) {
  if (count > HH_DIST_MAX_COUNT)
    throw Misuse("with count " + std::to_string(count) + ", more than HH_DIST_MAX_COUNT (" +
                 std::to_string(HH_DIST_MAX_COUNT) + ")");
  if (!values && count > 0) throw Misuse("with NULL values and count " + std::to_string(count));
}

}  // namespace

int32_t DistService::rank(HostServices& caller) {
  return caller.group ? caller.group->rank() : 0;
}

int32_t DistService::world_size(HostServices& caller) {
  return caller.group ? caller.group->size() : 1;
}

int32_t DistService::is_chief(HostServices& caller) {
  const auto& job = caller.context->communicator();
  return !job || job->is_chief() ? 1 : 0;
}

hh_status DistService::allreduce(HostServices& caller, double* values, size_t count, int32_t op,
                                 hh_error*) {
  // The count is checked before anything reads the values.
  check_values(values, count);
  if (op < HH_DIST_SUM || op > HH_DIST_MAX)
    throw Misuse("with op " + std::to_string(op) +
                 ", not one of HH_DIST_SUM, HH_DIST_MEAN, HH_DIST_MIN, HH_DIST_MAX");
  Collective call(caller, Kind::allreduce);
  if (call.alone()) return HH_OK;  // every op of one value is that value
  call.agree(count, op);
  const ReduceOp reduce = op == HH_DIST_MIN   ? ReduceOp::min
                          : op == HH_DIST_MAX ? ReduceOp::max
                                              : ReduceOp::sum;
  call.run(values, count, [&](double* buffer) {
    return call.group().allreduce_within(buffer, count, reduce, call.timeout());
  });
  if (op == HH_DIST_MEAN) {
    const double size = call.group().size();
    for (std::size_t i = 0; i < count; ++i) values[i] /= size;
  }
  return HH_OK;
}

hh_status DistService::broadcast(HostServices& caller, double* values, size_t count, int32_t root,
                                 hh_error*) {
  check_values(values, count);
  const int32_t size = world_size(caller);
  if (root < 0 || root >= size)
    throw Misuse("with root " + std::to_string(root) + ", not a rank of the hook's group (0 to " +
                 std::to_string(size - 1) + ")");
  Collective call(caller, Kind::broadcast);
  if (call.alone()) return HH_OK;
  call.agree(count, root);
  call.run(values, count, [&](double* buffer) {
    return call.group().broadcast_within(buffer, count, root, call.timeout());
  });
  return HH_OK;
}

hh_status DistService::barrier(HostServices& caller, hh_error*) {
  Collective call(caller, Kind::barrier);
  if (call.alone()) return HH_OK;
  // The agreement is itself a barrier: every process has joined once it completes.
  call.agree(0, 0);
  return HH_OK;
}

namespace {
const hh_dist_service kDist =
    in_process_table<DistFunctions, &DistService::rank, &DistService::world_size,
                     &DistService::is_chief, &DistService::allreduce, &DistService::broadcast,
                     &DistService::barrier>();
}  // namespace

const void* DistService::table() const {
  return &kDist;
}

}  // namespace hookhost
