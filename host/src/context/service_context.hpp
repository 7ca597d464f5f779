// What the job's services (services/) may see of the job: the step, stops, checkpoint requests and
// the newest checkpoint (JobState), the running call ([hook-thread] checks), the job's settings
// they apply, its event writers, and the registry of service objects. Services receive this, never
// the runtime's internals; a test builds one from small parts.
// Thread rules: those of the part each function reads (JobState's [thread-safe] functions, the
// RunningCall's lock-free reads, the settings fixed before the first hook is created); the event
// writers are thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "context/job_state.hpp"
#include "context/running_call.hpp"
#include "hookhost/host/communicator.hpp"
#include "storage/event_writer.hpp"

namespace hookhost {

class ServiceRegistry;

// The job's settings the services apply.
struct ServiceSettings {
  std::size_t max_state_bytes = 0;
  std::filesystem::path config_dir;
  std::shared_ptr<Communicator> communicator;  // null: not a distributed job
  std::chrono::milliseconds collective_timeout{0};
};

class ServiceContext {
 public:
  ServiceContext(JobState& job, const RunningCall& running, EventWriters& event_writers,
                 ServiceRegistry& registry, ServiceSettings settings)
      : job_(job),
        running_(running),
        event_writers_(event_writers),
        registry_(registry),
        settings_(std::move(settings)) {}
  ServiceContext(const ServiceContext&) = delete;
  ServiceContext& operator=(const ServiceContext&) = delete;

  int64_t global_step() const { return job_.global_step(); }
  int64_t workload_last_step() const { return job_.workload_last_step(); }
  void request_stop(hh_stop_cause cause, const std::string& reason) {
    job_.request_stop(cause, reason);
  }
  bool stop_requested() const { return job_.stop_requested(); }
  void record_checkpoint_request(const std::string& reason) {
    job_.record_checkpoint_request(reason);
  }
  std::optional<WrittenCheckpoint> last_checkpoint() const { return job_.last_checkpoint(); }

  const RunningCall& running_call() const { return running_; }
  EventWriters& event_writers() { return event_writers_; }
  ServiceRegistry& services() { return registry_; }

  std::size_t max_state_bytes() const { return settings_.max_state_bytes; }
  const std::filesystem::path& config_dir() const { return settings_.config_dir; }
  const std::shared_ptr<Communicator>& communicator() const { return settings_.communicator; }
  std::chrono::milliseconds collective_timeout() const { return settings_.collective_timeout; }

 private:
  JobState& job_;
  const RunningCall& running_;
  EventWriters& event_writers_;
  ServiceRegistry& registry_;
  const ServiceSettings settings_;
};

}  // namespace hookhost
