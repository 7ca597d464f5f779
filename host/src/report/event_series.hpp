// The scalar summaries of a run, read back from its TensorBoard event files
// (events.out.tfevents.* anywhere under the run directory, hooks' own folders included): TFRecord
// framing as storage/event_writer.hpp writes it, each record's Event parsed by protobuf.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hookhost {

struct ScalarPoint {
  int64_t step = 0;
  float value = 0;
};

// One tag's values from the event files of one folder, in step order (a resumed run's repeated
// steps kept, in the order written).
struct ScalarSeries {
  std::string folder;  // relative to the run directory; "." for the run directory itself
  std::string tag;
  std::vector<ScalarPoint> points;
  // "loss" or "loss (summaries/train)": how the report names it.
  std::string title() const { return folder == "." ? tag : tag + " (" + folder + ")"; }
};

struct EventScan {
  std::vector<ScalarSeries> series;  // the loss curves first, then by folder and tag
  std::size_t files = 0;             // event files read
  std::size_t records = 0;
  // What could not be read, as "FILE: why" (a torn tail, a bad checksum): the rest is used.
  std::vector<std::string> problems;
};

// Reads every event file under `run_dir`. Never throws for a file's content; a run directory that
// cannot be listed throws std::runtime_error naming it.
EventScan read_scalar_series(const std::filesystem::path& run_dir);

// The records of one event file appended to `scan` (series merged by folder `folder` and tag).
void read_event_file(const std::filesystem::path& file, const std::string& folder, EventScan& scan);

}  // namespace hookhost
