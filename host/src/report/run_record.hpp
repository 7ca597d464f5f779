// The run's record, RUN_DIR/run-record.jsonl: how the job started (its configuration and plugins),
// what happened to it (hookhost::RunEvent), and what each hook cost. One JSON object per line
// (host/proto/run_record.proto's RecordLine through protobuf's JSON mapping), each appended with
// one write() as it happens, so a killed job keeps every line before the kill; a resumed job
// appends to the same file. The types here are plain C++: only run_record.cpp sees protobuf.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "support/unique_fd.hpp"

namespace hookhost {

inline constexpr const char* kRunRecordFile = "run-record.jsonl";

struct RecordedPlugin {
  std::string id;
  std::string version;
  std::string file;
  std::string sha256;
  std::vector<std::string> hooks;  // the instances that run it
};

struct RecordedStart {
  double wall_time = 0;  // seconds since the Unix epoch
  bool resume = false;
  int64_t global_step = 0;
  std::string configuration;  // the effective configuration, one line per section
  std::vector<RecordedPlugin> plugins;
  std::string hookhost_version;
  int rank = 0;
  int world = 1;
};

struct RecordedEvent {
  double wall_time = 0;
  std::string kind;  // run_event_kind_name()
  int64_t global_step = 0;
  std::string hook;  // "" for the job
  std::string text;
};

struct RecordedCallbackCost {
  std::string callback;
  uint64_t calls = 0;
  uint64_t timed_calls = 0;
  uint64_t failures = 0;
  int64_t total_ns = 0;
  int64_t p50_ns = 0;
  int64_t p99_ns = 0;
  int64_t max_ns = 0;
  // The time all calls took, estimated from the timed ones' mean.
  double estimated_total_ns() const {
    return timed_calls ? static_cast<double>(total_ns) / static_cast<double>(timed_calls) *
                             static_cast<double>(calls)
                       : 0.0;
  }
};

struct RecordedHookCost {
  std::string hook;
  std::string plugin_id;
  bool disabled = false;
  std::string failure;
  std::vector<RecordedCallbackCost> callbacks;
};

struct RecordedCost {
  double wall_time = 0;
  std::string outcome;
  std::string reason;
  int64_t global_step = 0;
  int64_t steps_run = 0;
  double wall_time_s = 0;
  std::vector<RecordedHookCost> hooks;
  uint64_t checkpoint_waits = 0;  // checkpoints whose step waited for the previous write
  int64_t checkpoint_wait_ns = 0;
};

// A record read back: every start (the first, then each resume), every event, the cost lines (one
// per run that reached its end), and what could not be read.
struct RunRecord {
  std::vector<RecordedStart> starts;
  std::vector<RecordedEvent> events;
  std::vector<RecordedCost> costs;
  std::size_t lines = 0;  // lines read
  // The last line was cut short (the job was killed while writing it): it is ignored.
  bool torn_last_line = false;
  // Lines before the last that are not a record line, as "FILE:LINE: why" (ignored too).
  std::vector<std::string> bad_lines;
};

// Appends record lines to RUN_DIR/run-record.jsonl. [thread-safe]: events come from the training
// thread and the checkpoint writer's thread.
class RunRecordWriter {
 public:
  // Opens (creates) `file` for appending. A torn last line left by a killed job is ended with a
  // newline first, so the next line is whole. Throws std::runtime_error naming the file.
  explicit RunRecordWriter(std::filesystem::path file);
  RunRecordWriter(const RunRecordWriter&) = delete;
  RunRecordWriter& operator=(const RunRecordWriter&) = delete;

  void write(const RecordedStart& start);
  void write(const RecordedEvent& event);
  void write(const RecordedCost& cost);
  const std::filesystem::path& file() const { return file_; }

 private:
  void append_line(const std::string& json);

  std::filesystem::path file_;
  std::mutex mutex_;
  UniqueFd fd_;
};

// Reads `file` back. A last line that does not parse is the torn tail of a killed job
// (RunRecord::torn_last_line); any other line that does not parse is listed in bad_lines. Throws
// std::runtime_error naming the file when it cannot be opened.
RunRecord read_run_record(const std::filesystem::path& file);

// Seconds since the Unix epoch, now.
double wall_time_now();

}  // namespace hookhost
