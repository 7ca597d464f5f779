// hookhost report RUN_DIR: writes the run report (report.html) from a run directory's record and
// event files (host/src/report/).
#include <boost/program_options.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "command_line.hpp"
#include "report/report_html.hpp"
#include "report/run_record.hpp"
#include "support/display_text.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace {

using hookhost::app::kExitFailed;
using hookhost::app::kExitOk;
using hookhost::app::kExitUsage;

const char* const kReportAbout =
    R"help(Writes RUN_DIR/report.html, one self-contained page (no script, nothing fetched: it opens
from disk and can be mailed) about a job's run directory:
  - the loss and every scalar summary as curves, from the TensorBoard event files
    (events.out.tfevents.*) anywhere under RUN_DIR; a curve of more than 2,000 points is drawn
    as the min and max of each run of consecutive points, and the page says so
  - what each hook cost: p50, p99 and max per callback, and its share of the wall time
  - the timeline: starts, resumes, checkpoints, stops, failures, hooks disabled or restarted
  - the configuration as run, and the plugins with their versions and SHA-256 hashes
It is built from RUN_DIR/run-record.jsonl, which 'hookhost run' writes, and it is what
'hookhost run' writes at the end of every job; run this to regenerate it (a running job's
report shows what has happened so far).

)help";

const char* const kReportFooter = R"help(
Exit status:
  0  the report was written
  1  it could not be written (the message names the file)
  2  usage error: no such run directory, or no run-record.jsonl in it

Examples:
  hookhost report runs/demo
  hookhost report runs/demo --output /tmp/demo-report.html
)help";

}  // namespace

int cmd_report(const std::vector<std::string>& args) {
  po::options_description desc("Options", 100, 50);
  desc.add_options()("help,h", "show this help")(
      "output,o", po::value<std::string>()->value_name("FILE"),
      "where to write the page (default: RUN_DIR/report.html)");
  const auto parsed = hookhost::app::parse_command_line(args, desc, "run-dir", -1, "report ");
  if (!parsed) return kExitUsage;
  const po::variables_map& vm = *parsed;
  if (vm.count("help")) {
    std::cout << "Usage: hookhost report RUN_DIR [--output FILE]\n\n"
              << kReportAbout << desc << kReportFooter;
    return kExitOk;
  }
  std::vector<std::string> dirs;
  if (vm.count("run-dir")) dirs = vm["run-dir"].as<std::vector<std::string>>();
  if (dirs.size() != 1)
    return hookhost::app::usage_error(
        dirs.empty() ? "report needs a run directory (RUN_DIR, the [run] run_dir of a job)"
                     : "report takes one run directory, got " + std::to_string(dirs.size()),
        "report ");
  const fs::path run_dir = dirs[0];
  const std::string shown = hookhost::display_text(run_dir.string(), 1024);
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) {
    std::fprintf(stderr,
                 "hookhost: report: %s is not a directory; give the run directory of a job (its "
                 "[run] run_dir, or hookhost run's --run-dir)\n",
                 shown.c_str());
    return kExitUsage;
  }
  const fs::path record = run_dir / hookhost::kRunRecordFile;
  if (!fs::exists(record, ec)) {
    std::fprintf(stderr,
                 "hookhost: report: %s has no %s: it is not the run directory of a job run by "
                 "this hookhost (run the job with 'hookhost run', which writes it, then run this "
                 "again)\n",
                 shown.c_str(), hookhost::display_text(record.string(), 1024).c_str());
    return kExitUsage;
  }
  fs::path output;
  if (vm.count("output")) output = vm["output"].as<std::string>();
  try {
    const hookhost::WrittenReport written = hookhost::write_run_report(run_dir, output);
    for (const auto& note : written.notes)
      std::fprintf(stderr, "hookhost: report: note: %s\n",
                   hookhost::display_text(note, 1024).c_str());
    std::cout << "report: " << hookhost::display_text(written.file.string(), 1024) << "\n";
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hookhost: report: %s\n", hookhost::display_text(e.what(), 2048).c_str());
    return kExitFailed;
  }
  return kExitOk;
}
