// history_saver: the tfestimators history hook as a CSV file. Every `every_n_steps` global steps
// (and at the first step) it appends the step, the wall time and each recorded tensor (mean and
// total for non-scalar tensors). A resumed job continues the same file: rows for steps already
// recorded are skipped and the header is written once.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <hookhost/hook.hpp>

namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

std::optional<int64_t> parse_step(const std::string& text) {
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Shortest text that reads back as the same value (f32 values as floats, so 10/3 prints as
// 3.3333333, not as the double nearest to that float).
template <typename T>
std::string format_number(T value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  return ec == std::errc() ? std::string(buffer, end) : std::string("nan");
}

class HistorySaver : public hookhost::Hook {
 public:
  explicit HistorySaver(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        every_n_steps_(params().get_int("every_n_steps")),
        tensors_(params().get_string_list("tensors")) {
    if (every_n_steps_ <= 0)
      throw hookhost::Error("parameter 'every_n_steps' must be > 0, got " +
                            std::to_string(every_n_steps_));
    if (tensors_.empty())
      throw hookhost::Error("parameter 'tensors' must name at least one tensor");
    path_ = host().resolve_path(params().has("path") ? params().get_string("path") : "history.csv");
    read_existing_file();
    std::error_code ec;
    if (path_.has_parent_path()) fs::create_directories(path_.parent_path(), ec);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw hookhost::Error("parameter 'path': cannot open '" + path_.string() +
                            "' for appending: " + std::strerror(errno));
  }
  ~HistorySaver() override {
    if (fd_ >= 0) ::close(fd_);
  }

  void before_run(const hh_run_context& context, hookhost::RunRequest& request) override {
    // The step about to run is normally the stale step + 1 (after_run checks the real one).
    // "The first step" is the history's first row: a resumed job continues the file's schedule.
    recording_ = will_record(context.global_step, context.global_step + 1, !last_recorded_step_);
    if (recording_)
      for (const auto& name : tensors_) request.fetch(name);
  }

  void after_run(const hh_run_context& context, const hookhost::RunValues& values) override {
    const bool first_step = !last_recorded_step_;
    if (!recording_) return;
    recording_ = false;
    const int64_t step = host().global_step();
    if (!will_record(context.global_step, step, first_step)) return;

    std::vector<std::string> columns = {"step", "wall_time"};
    std::string row = std::to_string(step);
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    char wall_time[32];
    std::snprintf(wall_time, sizeof wall_time, "%.3f", now);
    row += std::string(",") + wall_time;
    for (const auto& name : tensors_) {
      const hookhost::TensorView value = values.get(name);
      if (!value.is_numeric())
        throw hookhost::Error("tensor '" + name + "' holds strings; history_saver records numbers");
      if (value.shape().empty()) {
        columns.push_back(name);
        row += "," + (value.dtype() == HH_DTYPE_F32 ? format_number(static_cast<float>(value.at(0)))
                                                    : format_number(value.at(0)));
      } else {
        double total = 0;
        for (std::size_t i = 0; i < value.size(); ++i) total += value.at(i);
        const double mean = value.size() ? total / static_cast<double>(value.size()) : 0.0;
        columns.push_back(name + "_mean");
        columns.push_back(name + "_total");
        row += "," + format_number(mean) + "," + format_number(total);
      }
    }
    const std::string header = join(columns, ",");

    if (!existing_header_.empty() && existing_header_ != header)
      throw hookhost::Error(mismatch(header));
    std::string text = needs_newline_ ? "\n" : "";
    if (existing_header_.empty()) text += header + "\n";
    text += row + "\n";
    // One write per row on an O_APPEND descriptor: a row is on disk (in the page cache) as soon
    // as it is recorded, so a killed job loses nothing it reported.
    ssize_t written;
    do {
      written = ::write(fd_, text.data(), text.size());
    } while (written < 0 && errno == EINTR);
    if (written != static_cast<ssize_t>(text.size()))
      throw hookhost::Error("cannot append to '" + path_.string() +
                            "': " + (written < 0 ? std::strerror(errno) : "short write"));
    existing_header_ = header;
    needs_newline_ = false;
    last_recorded_step_ = step;
  }

 private:
  // Whether the step that moves the global step from `before` to `after` gets a row: the first
  // step of the job, and every step that reaches (or jumps past) a multiple of every_n_steps;
  // never a step the file already holds (a resumed job replaying steps from an older checkpoint
  // thus leaves the same rows as an uninterrupted one).
  bool will_record(int64_t before, int64_t after, bool first_step) const {
    if (last_recorded_step_ && after <= *last_recorded_step_) return false;
    return first_step || floor_div(after) > floor_div(before);
  }
  int64_t floor_div(int64_t step) const {
    return step >= 0 ? step / every_n_steps_ : -((-step + every_n_steps_ - 1) / every_n_steps_);
  }

  // Reads a history left by an earlier run: its header and its last recorded step.
  void read_existing_file() {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (content.empty()) return;
    // A row cut short (a full disk) is left alone; the next row starts on a line of its own.
    needs_newline_ = content.back() != '\n';
    std::istringstream lines(content);
    std::string line;
    std::getline(lines, line);
    existing_header_ = line;
    check_header_names();
    while (std::getline(lines, line)) {
      if (lines.eof() && needs_newline_) break;
      const std::optional<int64_t> step = parse_step(line.substr(0, line.find(',')));
      if (step && (!last_recorded_step_ || *step > *last_recorded_step_))
        last_recorded_step_ = step;
    }
    if (last_recorded_step_)
      host().info("continuing " + path_.string() + " after step " +
                  std::to_string(*last_recorded_step_));
  }

  // Fails at configuration time when the file was written for other tensors (a scalar tensor
  // has one column, a non-scalar one two: either is accepted until the first row shows which).
  void check_header_names() const {
    const std::vector<std::string> columns = split(existing_header_, ',');
    bool matches = columns.size() >= 2 && columns[0] == "step" && columns[1] == "wall_time";
    std::size_t at = 2;
    for (const auto& name : tensors_) {
      if (!matches) break;
      if (at < columns.size() && columns[at] == name) {
        at += 1;
      } else if (at + 1 < columns.size() && columns[at] == name + "_mean" &&
                 columns[at + 1] == name + "_total") {
        at += 2;
      } else {
        matches = false;
      }
    }
    if (!matches || at != columns.size())
      throw hookhost::Error(mismatch("step,wall_time," + join(tensors_, ",")));
  }

  std::string mismatch(const std::string& header) const {
    return "history file '" + path_.string() + "' has the header '" + existing_header_ +
           "', but this hook writes '" + header +
           "'; record the same tensors or give another 'path'";
  }

  const int64_t every_n_steps_;
  const std::vector<std::string> tensors_;
  fs::path path_;
  int fd_ = -1;
  std::string existing_header_;
  std::optional<int64_t> last_recorded_step_;
  bool needs_newline_ = false;
  bool recording_ = false;
};

}  // namespace

#define HISTORY_SAVER_PARAMS(P)                                                              \
  P(every_n_steps, INT, DEFAULT, "10", "record every N global steps, and the first step")    \
  P(tensors, STRING_LIST, DEFAULT, "loss",                                                   \
    "tensors to record; a non-scalar tensor gets two columns, <name>_mean and <name>_total") \
  P(path, STRING, OPTIONAL, "",                                                              \
    "CSV file to append to; relative to the run directory; default <run dir>/history.csv")

HOOKHOST_PLUGIN(HistorySaver, "history_saver", "1.0.0",
                "Appends step, wall time and tensor values to a CSV history that survives resume",
                HISTORY_SAVER_PARAMS)
