#include "report/event_series.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string_view>
#include <system_error>

#include "proto/tensorboard_event.pb.h"
#include "storage/tfrecord_reader.hpp"
#include "support/unique_fd.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

bool is_loss(const std::string& tag) {
  return tag == "loss" || (tag.size() > 5 && tag.ends_with("/loss"));
}

// Where each (folder, tag) series lives in scan.series.
using SeriesIndex = std::map<std::pair<std::string, std::string>, std::size_t>;

void read_into(const fs::path& file, const std::string& folder, EventScan& scan,
               SeriesIndex& index) {
  // Never through a link: a hook could plant one in its folder to make the report, which reads
  // with the host's rights, read a file its policy denies it.
  const UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0) {
    scan.problems.push_back(file.string() + ": cannot be opened: " + std::strerror(errno));
    return;
  }
  if (!S_ISREG(st.st_mode)) {  // swapped for something else since it was listed
    scan.problems.push_back(file.string() + ": is not a regular file");
    return;
  }
  ++scan.files;
  // The framing's lengths are checked against the file before anything is allocated.
  TfRecordReader reader(fd.get(), static_cast<uint64_t>(st.st_size));
  std::string data;
  hookhost::tb::Event event;
  for (;;) {
    const TfRecordReader::Status status = reader.next(data);
    if (status == TfRecordReader::Status::end) break;
    if (status != TfRecordReader::Status::record) {
      const bool torn = status == TfRecordReader::Status::torn;
      scan.problems.push_back(file.string() + ": " + reader.why(status) +
                              (torn ? " (the job was killed while writing it, or the file is "
                                      "corrupt); it is ignored"
                                    : "; the rest of the file is ignored"));
      break;
    }
    if (!event.ParseFromString(data)) {
      scan.problems.push_back(file.string() + ": the record at byte " +
                              std::to_string(reader.offset()) + " is not an Event; skipped");
      continue;
    }
    ++scan.records;
    if (!event.has_summary()) continue;
    for (const auto& value : event.summary().value()) {
      if (value.value_case() != hookhost::tb::SummaryValue::kSimpleValue) continue;
      auto [it, added] = index.try_emplace({folder, value.tag()}, scan.series.size());
      if (added) scan.series.push_back(ScalarSeries{folder, value.tag(), {}});
      scan.series[it->second].points.push_back(ScalarPoint{event.step(), value.simple_value()});
    }
  }
}

void sort_points(ScalarSeries& series) {
  std::stable_sort(series.points.begin(), series.points.end(),
                   [](const ScalarPoint& a, const ScalarPoint& b) { return a.step < b.step; });
}

}  // namespace

void read_event_file(const fs::path& file, const std::string& folder, EventScan& scan) {
  SeriesIndex index;
  for (std::size_t i = 0; i < scan.series.size(); ++i)
    index[{scan.series[i].folder, scan.series[i].tag}] = i;
  read_into(file, folder, scan, index);
  for (auto& series : scan.series) sort_points(series);
}

EventScan read_scalar_series(const fs::path& run_dir) {
  std::error_code ec;
  fs::recursive_directory_iterator it(run_dir, fs::directory_options::skip_permission_denied, ec);
  if (ec)
    throw std::runtime_error("cannot list the run directory " + run_dir.string() + ": " +
                             ec.message());
  std::vector<fs::path> files;
  for (const fs::recursive_directory_iterator end; it != end; it.increment(ec)) {
    if (ec) break;
    // The entry itself, not what a link names: links are neither followed nor read (folders'
    // links are not entered either).
    if (it->symlink_status(ec).type() == fs::file_type::regular &&
        it->path().filename().string().starts_with("events.out.tfevents."))
      files.push_back(it->path());
  }
  // Files of one folder in the order they were started (their names carry the time).
  std::sort(files.begin(), files.end());
  EventScan scan;
  SeriesIndex index;
  for (const auto& file : files) {
    // Constructed, not assigned: GCC 12 at -O3 warns falsely (-Wrestrict) on assigning ".".
    const fs::path relative = file.parent_path().lexically_relative(run_dir);
    const std::string folder = relative.empty() ? std::string(".") : relative.generic_string();
    read_into(file, folder, scan, index);
  }
  for (auto& series : scan.series) sort_points(series);
  std::stable_sort(scan.series.begin(), scan.series.end(),
                   [](const ScalarSeries& a, const ScalarSeries& b) {
                     const bool la = is_loss(a.tag), lb = is_loss(b.tag);
                     if (la != lb) return la;
                     return std::tie(a.folder, a.tag) < std::tie(b.folder, b.tag);
                   });
  return scan;
}

}  // namespace hookhost
