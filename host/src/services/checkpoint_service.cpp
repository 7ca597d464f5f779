// hh.checkpoint/1: a hook asks for a checkpoint and reads where the newest completed one went.
// The request is recorded at once; the runtime takes the snapshot at the next step boundary and
// writes it in the background (runtime/checkpoints.cpp).
#include <hookhost/ext/checkpoint.h>

#include "context/host_services.hpp"
#include "context/service_context.hpp"
#include "services.hpp"

namespace hookhost {

template <>
CheckpointService& service_detail::service_for<CheckpointService>(HostServices& caller) {
  return caller.context->services().checkpoints;
}

hh_status CheckpointService::request(HostServices& caller, const char* reason) {
  const std::string text = bounded_text(reason, HH_MAX_STOP_REASON);
  caller.context->record_checkpoint_request("hook '" + caller.instance_name + "'" +
                                            (text.empty() ? "" : ": " + text));
  return HH_OK;
}

int32_t CheckpointService::last_written(HostServices& caller, char* out_path, size_t capacity,
                                        int64_t* step) {
  // The newest completed checkpoint, without waiting for a save in flight: a hook may call this
  // on the training thread every step, and the background writer must not slow the step down. In
  // a distributed job the other processes hold the chief's, as shared at a step boundary.
  const auto written = caller.context->last_checkpoint();
  if (!written) return 0;
  if (out_path && capacity > 0) copy_cut(written->file.string(), out_path, capacity);
  if (step) *step = written->global_step;
  return 1;
}

namespace {
const hh_checkpoint_service kCheckpoint =
    in_process_table<CheckpointFunctions, &CheckpointService::request,
                     &CheckpointService::last_written>();
}  // namespace

const void* CheckpointService::table() const {
  return &kCheckpoint;
}

}  // namespace hookhost
