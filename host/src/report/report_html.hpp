// The run report, RUN_DIR/report.html: one self-contained page (inline CSS and SVG, no script,
// nothing fetched) built from the run's record (run_record.hpp) and its event files
// (event_series.hpp): the scalar curves, the hooks' cost, the timeline, the configuration as run
// and the plugins with their hashes.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "report/event_series.hpp"
#include "report/run_record.hpp"

namespace hookhost {

inline constexpr const char* kReportFile = "report.html";

// The page for a record and the scalars read from `run_dir_text`'s event files.
std::string render_report_html(const std::string& run_dir_text, const RunRecord& record,
                               const EventScan& scalars);

struct WrittenReport {
  std::filesystem::path file;
  std::size_t curves = 0;
  std::vector<std::string> notes;  // what could not be read (torn lines, bad event records)
};

// Reads RUN_DIR/run-record.jsonl and the event files under `run_dir` and writes the page to
// `output` (default RUN_DIR/report.html) atomically. Throws std::runtime_error naming the file
// that is missing or could not be read or written.
WrittenReport write_run_report(const std::filesystem::path& run_dir,
                               std::filesystem::path output = {});

}  // namespace hookhost
