// The services every job offers its hooks, as objects behind HostService (service.hpp): the
// hh_host table itself, hh.steps/1, hh.checkpoint/1 (requests only: the runtime writes at the
// step boundary), hh.summary/1, hh.job/1 and hh.dist/1. The registry answers get_service,
// embedder tables first.
#pragma once

#include <hookhost/ext/dist.h>
#include <hookhost/ext/job.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "service.hpp"

namespace hookhost {

// hh_host: logging, the step, stops, the run directory, state, get_service (host_table.cpp).
class HostTable final : public HostService {
 public:
  std::string_view id() const override { return {}; }
  const void* table() const override;
  // Points `services.c` at this host's functions, with `services` as their handle.
  static void fill(HostServices& services);

  const char* instance_name(HostServices& caller);
  void log(HostServices& caller, int32_t level, const char* message, size_t size);
  int32_t log_enabled(HostServices& caller, int32_t level);
  int64_t global_step(HostServices& caller);
  void request_stop(HostServices& caller, const char* reason);
  int32_t should_stop(HostServices& caller);
  const char* run_dir(HostServices& caller);
  hh_status state_put(HostServices& caller, const void* data, size_t size);
  int32_t state_info(HostServices& caller, size_t* size, uint32_t* version);
  hh_status state_get(HostServices& caller, void* buffer, size_t capacity, size_t* size);
  const void* get_service(HostServices& caller, const char* id);
};

// hh.steps/1: the smallest last step any hook published, or the workload's own (steps_service.cpp).
class StepsService final : public HostService {
 public:
  std::string_view id() const override { return HH_SERVICE_STEPS; }
  const void* table() const override;

  hh_status publish_last_step(HostServices& caller, int64_t step);
  int64_t last_step(HostServices& caller);
  // Sets the caller's HostServices::skip_until, which the step engine reads.
  hh_status skip_until(HostServices& caller, int64_t step);
  // The smallest last step a hook published, or -1. [thread-safe]
  int64_t published_last_step() const { return published_.load(); }

 private:
  std::atomic<int64_t> published_{-1};
};

// hh.checkpoint/1: a hook asks; the runtime writes at the next step boundary
// (checkpoint_service.cpp).
class CheckpointService final : public HostService {
 public:
  std::string_view id() const override { return HH_SERVICE_CHECKPOINT; }
  const void* table() const override;

  hh_status request(HostServices& caller, const char* reason);
  int32_t last_written(HostServices& caller, char* out_path, size_t capacity, int64_t* step);
};

// hh.summary/1: TensorBoard event files, one writer per folder, owned by the job
// (summary_service.cpp).
class SummaryService final : public HostService {
 public:
  std::string_view id() const override { return HH_SERVICE_SUMMARY; }
  const void* table() const override;

  hh_status add_scalar(HostServices& caller, const char* dir, const char* tag, double value,
                       int64_t step, hh_error* error);
  hh_status add_session_log(HostServices& caller, const char* dir, int32_t status,
                            const char* checkpoint_path, int64_t step, hh_error* error);
  hh_status flush(HostServices& caller, const char* dir, hh_error* error);
};

// hh.job/1: the configuration file's folder, from RuntimeOptions::config_dir (job_service.cpp).
class JobService final : public HostService {
 public:
  std::string_view id() const override { return HH_SERVICE_JOB; }
  const void* table() const override;

  const char* config_dir(HostServices& caller);

 private:
  std::string start_dir_ = working_directory();  // when the runtime was made
  std::once_flag once_;
  std::string config_dir_;
  static std::string working_directory();
};

// hh.dist/1: collectives over the processes that run the calling instance (HostServices::group),
// each bounded by RuntimeOptions::collective_timeout (dist_service.cpp).
class DistService final : public HostService {
 public:
  std::string_view id() const override { return HH_SERVICE_DIST; }
  const void* table() const override;

  int32_t rank(HostServices& caller);
  int32_t world_size(HostServices& caller);
  int32_t is_chief(HostServices& caller);
  hh_status allreduce(HostServices& caller, double* values, size_t count, int32_t op,
                      hh_error* error);
  hh_status broadcast(HostServices& caller, double* values, size_t count, int32_t root,
                      hh_error* error);
  hh_status barrier(HostServices& caller, hh_error* error);
};

// get_service's answers for one job.
class ServiceRegistry {
 public:
  explicit ServiceRegistry(const std::map<std::string, const void*>& embedder_services)
      : embedder_(embedder_services.begin(), embedder_services.end()) {}
  // The embedder's table for `id`, else a built-in one, else nullptr.
  const void* find(std::string_view id) const;
  // The ids of the embedder's tables (RuntimeOptions::services).
  std::vector<std::string> embedder_ids() const;

  HostTable host;
  StepsService steps;
  CheckpointService checkpoints;
  SummaryService summaries;
  JobService job;
  DistService dist;

 private:
  std::map<std::string, const void*, std::less<>> embedder_;
};

}  // namespace hookhost
