// What happens to a job, as values: the events its run record keeps and the checkpoint file it
// wrote last. The job's state (context/) reports them and the runtime passes them on
// (RuntimeOptions::on_event, Runtime's last checkpoint), so they sit below both; runtime.hpp
// includes this header.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <string>

namespace hookhost {

// Something that happened to the job, for its run record.
struct RunEvent {
  enum class Kind {
    start,
    resume,
    checkpoint,
    stop,
    failure,
    disable,
    restart,
    attach,
    detach,
    set,
    end
  };
  Kind kind = Kind::start;
  int64_t global_step = 0;
  std::string hook;  // the instance, or "" for the job
  std::string text;  // human-readable: the reason, the checkpoint file, ...
  // When it happened: when the event is made, but a checkpoint's is when it was taken at its
  // boundary (it is reported once the background write is done).
  std::chrono::system_clock::time_point at = std::chrono::system_clock::now();
};

// A checkpoint file written to disk, and the step it holds.
struct WrittenCheckpoint {
  std::filesystem::path file;
  int64_t global_step = 0;
};

}  // namespace hookhost
