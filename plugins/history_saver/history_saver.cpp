// history_saver: the tfestimators history hook as a CSV file. Every `every_n_steps` global steps
// (and at the first step) it records the step, the wall time and each recorded tensor (mean and
// total for non-scalar tensors). A resumed job continues the same file: rows for steps already
// recorded are skipped and the header is written once.
//
// Rows are kept in memory and appended to the file in chunks (once 4 KiB wait or the oldest
// waiting row is flush_secs old, checked when a row is recorded, and in end()), so recording a
// row costs the step no system call.
// The rows not yet in the file are the hook's state, which the host saves with every checkpoint:
// a job killed before it wrote them and resumed from that checkpoint writes them then, and the
// steps after the checkpoint run again and record their own rows, so the file ends with the rows
// an uninterrupted job leaves.
// Confined, it writes the CSV file its path parameter names (default: history.csv in its run
// folder).
#define HH_PLUGIN_NEEDS HH_NEEDS_WRITE_PARAM(path)
// Its rows are stamped with the step's time (hookhost::step_wall_time), so with mode = observe
// they read the same as on the step. It needs its per-step calls only at the first step and where
// a row may fall (will_record): its cadence says so, and the host skips the other steps' calls.
#define HH_PLUGIN_CADENCE HH_CADENCE_EVERY_N_STEPS(every_n_steps)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <hookhost/hook.hpp>

namespace {

namespace fs = std::filesystem;

// Rows wait in memory until this many bytes of them are buffered (or flush_secs pass).
constexpr std::size_t kChunkBytes = 4096;

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

// The step at the start of a row ("12,1700000000.123,..."), if it has one.
std::optional<int64_t> step_of_row(std::string_view row) {
  const std::string_view text = row.substr(0, row.find(','));
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Appends the shortest text that reads back as the same value (f32 values as floats, so 10/3
// prints as 3.3333333, not as the double nearest to that float).
template <typename T>
void append_number(std::string& out, T value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, ec == std::errc() ? end : buffer);
  if (ec != std::errc()) out += "nan";
}

// Writes all of `text` at the end of `fd` (O_APPEND). A write that fails part-way is cut back off,
// so the file never ends in half a row. Returns an empty string or the reason of the failure.
std::string append_to_file(int fd, std::string_view text) {
  struct stat before {};
  if (::fstat(fd, &before) != 0) return std::strerror(errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string reason = n < 0 ? std::strerror(errno) : "nothing written";
      if (done > 0 && ::ftruncate(fd, before.st_size) != 0)
        return reason + "; the partly written rows could not be removed";
      return reason;
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

class HistorySaver : public hookhost::Hook {
 public:
  explicit HistorySaver(const hookhost::CreateContext& ctx)
      : Hook(ctx),
        every_n_steps_(params().get_int("every_n_steps")),
        flush_secs_(params().get_float("flush_secs")),
        tensors_(params().get_string_list("tensors")) {
    if (every_n_steps_ <= 0)
      throw hookhost::Error("parameter 'every_n_steps' must be > 0, got " +
                            std::to_string(every_n_steps_));
    if (!(flush_secs_ >= 0))
      throw hookhost::Error("parameter 'flush_secs' must be >= 0, got " +
                            std::to_string(flush_secs_));
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
    try {
      write_rows_saved_with_the_checkpoint();
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
  ~HistorySaver() override {
    // end() wrote everything unless its write failed; try once more rather than drop rows.
    if (has_pending_rows()) append_to_file(fd_, unwritten_text());
    if (fd_ >= 0) ::close(fd_);
  }

  void after_create_session(const hh_session_info& session) override {
    // A recovery put every hook's state back to the restored checkpoint's: store the rows that
    // wait now instead.
    if (session.creation > 1) {
      state_holds_rows_ = true;  // whatever the host holds, replace it
      save_pending_rows();
    }
  }

  void before_run(const hh_run_context& context, hookhost::RunRequest& request) override {
    // The step about to run is normally the stale step + 1 (after_run checks the real one).
    // "The first step" is the history's first row: a resumed job continues the file's schedule.
    recording_ = will_record(context.global_step, context.global_step + 1, !last_recorded_step_);
    // The first call asks even when it records nothing (a resumed file's schedule): behind the
    // step, the host fetches what an observer asked for from then on, so no row misses a value.
    if (recording_ || !asked_)
      for (const auto& name : tensors_) request.fetch(name);
    asked_ = true;
  }

  void after_run(const hh_run_context& context, const hookhost::RunValues& values) override {
    const bool first_step = !last_recorded_step_;
    if (!recording_) return;
    recording_ = false;
    const int64_t step = host().global_step();
    if (!will_record(context.global_step, step, first_step)) return;

    std::vector<hookhost::TensorView>& views = row_values_;
    std::vector<bool>& layout = row_layout_;
    views.clear();
    layout.clear();
    for (const auto& name : tensors_) {
      views.push_back(values.get(name));
      if (!views.back().is_numeric())
        throw hookhost::Error("tensor '" + name + "' holds strings; history_saver records numbers");
      layout.push_back(!views.back().shape().empty());
    }
    if (header_.empty()) start_pending(header_for(layout), layout);
    if (layout != non_scalar_) throw hookhost::Error(mismatch(header_for(layout)));

    using std::chrono::nanoseconds;
    const int64_t now = std::chrono::duration_cast<nanoseconds>(
                            hookhost::step_wall_time(context).time_since_epoch())
                            .count();
    if (!has_pending_rows()) oldest_pending_time_ = now;
    append_row(step, now, views);
    last_recorded_step_ = step;

    const double waited_secs = static_cast<double>(now - oldest_pending_time_) * 1e-9;
    if (pending_.size() - rows_at_ >= kChunkBytes || waited_secs >= flush_secs_)
      write_pending_rows();
    else
      save_pending_rows();
  }

  void end(const hh_end_info&) override { write_pending_rows(); }

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

  // The header for the columns a row of these tensors has (non-scalars get two).
  std::string header_for(const std::vector<bool>& non_scalar) const {
    std::string header = "step,wall_time";
    for (std::size_t i = 0; i < tensors_.size(); ++i)
      header +=
          non_scalar[i] ? "," + tensors_[i] + "_mean," + tensors_[i] + "_total" : "," + tensors_[i];
    return header;
  }

  // Fixes the header of every row of this job, which the pending text starts with.
  void start_pending(std::string header, std::vector<bool> non_scalar) {
    header_ = std::move(header);
    non_scalar_ = std::move(non_scalar);
    pending_ = header_ + "\n";
    rows_at_ = pending_.size();
  }

  // step,wall_time,values...: the wall time in seconds with three decimals (rounded to the
  // millisecond in integers: formatting a double that way costs ten times as much).
  void append_row(int64_t step, int64_t wall_time_ns,
                  const std::vector<hookhost::TensorView>& views) {
    std::string& out = pending_;
    append_number(out, step);
    out += ',';
    const int64_t millis = (wall_time_ns + 500'000) / 1'000'000;
    append_number(out, millis / 1000);
    const auto fraction = static_cast<int>(millis % 1000);
    const char decimals[] = {'.', static_cast<char>('0' + fraction / 100),
                             static_cast<char>('0' + fraction / 10 % 10),
                             static_cast<char>('0' + fraction % 10)};
    out.append(decimals, sizeof decimals);
    for (const hookhost::TensorView& value : views) {
      out += ',';
      if (value.shape().empty()) {
        if (value.dtype() == HH_DTYPE_F32)
          append_number(out, static_cast<float>(value.at(0)));
        else
          append_number(out, value.at(0));
      } else {
        double total = 0;
        for (std::size_t i = 0; i < value.size(); ++i) total += value.at(i);
        append_number(out, value.size() ? total / static_cast<double>(value.size()) : 0.0);
        out += ',';
        append_number(out, total);
      }
    }
    out += '\n';
  }

  bool has_pending_rows() const { return pending_.size() > rows_at_; }
  // What the file still lacks: the pending rows, after the header when the file has none yet.
  std::string_view unwritten_text() const {
    return std::string_view(pending_).substr(file_has_header_ ? rows_at_ : 0);
  }

  // The rows not yet in the file become the state the next checkpoint saves (with the header they
  // belong under); once none wait, the state is emptied.
  void save_pending_rows() {
    if (has_pending_rows()) {
      host().save_state(pending_);
      state_holds_rows_ = true;
    } else if (state_holds_rows_) {
      host().save_state({});
      state_holds_rows_ = false;
    }
  }

  // Appends the waiting rows to the file; they stay waiting (in memory and in the state) when the
  // write fails, and are tried again with the next chunk.
  void write_pending_rows() {
    const std::string failure = append_pending_rows();
    save_pending_rows();
    if (!failure.empty())
      throw hookhost::Error("cannot append to '" + path_.string() + "': " + failure);
  }
  // Returns the reason of a failed write, or an empty string.
  std::string append_pending_rows() {
    if (!has_pending_rows()) return {};
    std::string failure = append_to_file(fd_, unwritten_text());
    if (failure.empty()) {
      file_has_header_ = true;
      pending_.resize(rows_at_);
    }
    return failure;
  }

  // Reads a history left by an earlier run: its header and its last recorded step.
  void read_existing_file() {
    std::ifstream in(path_, std::ios::binary);
    if (!in) return;
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    // Every row this hook writes ends with a newline: a last line without one is what a write
    // cut short (a killed job) left. Its rows come back from the checkpoint or are recorded again.
    const std::size_t last_newline = content.rfind('\n');
    const std::size_t whole = last_newline == std::string::npos ? 0 : last_newline + 1;
    const std::string header = content.substr(0, content.find('\n'));
    if (whole > 0) check_header_names(header);  // before anything in the file changes
    if (whole < content.size()) {
      std::error_code ec;
      fs::resize_file(path_, whole, ec);
      if (ec)
        throw hookhost::Error("cannot remove the partly written last row of '" + path_.string() +
                              "': " + ec.message());
      host().warn("removed the partly written last row of " + path_.string() + " (" +
                  std::to_string(content.size() - whole) + " bytes)");
      content.resize(whole);
    }
    if (content.empty()) return;
    start_pending(header, layout_of(header));
    file_has_header_ = true;
    for (std::size_t at = header.size() + 1; at < content.size();) {
      const std::size_t end = content.find('\n', at);
      const std::optional<int64_t> step =
          step_of_row(std::string_view(content).substr(at, end - at));
      if (step && (!last_recorded_step_ || *step > *last_recorded_step_))
        last_recorded_step_ = step;
      at = end + 1;
    }
    if (last_recorded_step_)
      host().info("continuing " + path_.string() + " after step " +
                  std::to_string(*last_recorded_step_));
  }

  // Appends the rows the restored checkpoint holds (those that waited in memory when it was
  // written) that the file lacks, because the job ended before it wrote them.
  void write_rows_saved_with_the_checkpoint() {
    const std::string saved = host().load_state();
    if (saved.empty()) return;
    // The host keeps these rows as the state until the first row of this job replaces it: a
    // checkpoint taken before then holds what the restored one held (rows the file has by then,
    // which a later restore skips as it skips every step the file holds).
    state_holds_rows_ = true;
    const std::size_t header_end = saved.find('\n');
    const std::string header = saved.substr(0, header_end);
    if (header_end == std::string::npos || (!header_.empty() && header != header_)) {
      host().warn(
          "ignoring the rows saved with the checkpoint: they were recorded under the "
          "header '" +
          header + "', which " + path_.string() + " does not have");
      return;
    }
    if (header_.empty()) {
      try {
        check_header_names(header);
      } catch (const hookhost::Error& e) {
        host().warn(std::string("ignoring the rows saved with the checkpoint: ") + e.what());
        return;
      }
      start_pending(header, layout_of(header));
    }
    std::size_t restored = 0;
    for (std::size_t at = header_end + 1; at < saved.size();) {
      const std::size_t end = saved.find('\n', at);
      if (end == std::string::npos) break;
      const std::string_view row = std::string_view(saved).substr(at, end - at + 1);
      const std::optional<int64_t> step = step_of_row(row);
      if (step && (!last_recorded_step_ || *step > *last_recorded_step_)) {
        pending_ += row;
        last_recorded_step_ = step;
        ++restored;
      }
      at = end + 1;
    }
    if (const std::string failure = append_pending_rows(); !failure.empty())
      throw hookhost::Error("cannot append to '" + path_.string() + "': " + failure);
    if (restored > 0)
      host().info("wrote " + std::to_string(restored) + " rows up to step " +
                  std::to_string(*last_recorded_step_) +
                  " that the checkpoint held and the file lacked");
  }

  // Which tensors have two columns in a header that check_header_names accepted.
  std::vector<bool> layout_of(const std::string& header) const {
    const std::vector<std::string> columns = split(header, ',');
    std::vector<bool> non_scalar;
    std::size_t at = 2;
    for (const auto& name : tensors_) {
      non_scalar.push_back(columns[at] != name);
      at += non_scalar.back() ? 2 : 1;
    }
    return non_scalar;
  }

  // Fails at configuration time when the file was written for other tensors (a scalar tensor
  // has one column, a non-scalar one two: either is accepted until the first row shows which).
  void check_header_names(const std::string& header) const {
    const std::vector<std::string> columns = split(header, ',');
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
      throw hookhost::Error(mismatch_of(header, "step,wall_time," + join(tensors_, ",")));
  }

  std::string mismatch(const std::string& header) const { return mismatch_of(header_, header); }
  std::string mismatch_of(const std::string& existing, const std::string& header) const {
    return "history file '" + path_.string() + "' has the header '" + existing +
           "', but this hook writes '" + header +
           "'; record the same tensors or give another 'path'";
  }

  const int64_t every_n_steps_;
  const double flush_secs_;
  const std::vector<std::string> tensors_;
  fs::path path_;
  int fd_ = -1;
  std::string header_;            // the header of every row; empty until known
  std::vector<bool> non_scalar_;  // per tensor: two columns (mean, total) rather than one
  std::string pending_;           // header_, a newline, then the rows not yet in the file
  std::size_t rows_at_ = 0;       // where the rows start in pending_
  bool file_has_header_ = false;
  bool state_holds_rows_ = false;    // the host's copy of the state may hold rows
  bool asked_ = false;               // for its tensors, in a before_run of this process
  int64_t oldest_pending_time_ = 0;  // wall clock (ns) of the first row waiting
  std::optional<int64_t> last_recorded_step_;
  bool recording_ = false;
  // Reused by every row, so recording one allocates nothing once the buffers have grown.
  std::vector<hookhost::TensorView> row_values_;
  std::vector<bool> row_layout_;
};

}  // namespace

#define HISTORY_SAVER_PARAMS(P)                                                                   \
  P(every_n_steps, INT, DEFAULT, "10", "record every N global steps, and the first step")         \
  P(tensors, STRING_LIST, DEFAULT, "loss",                                                        \
    "tensors to record; a non-scalar tensor gets two columns, <name>_mean and <name>_total")      \
  P(path, STRING, OPTIONAL, "",                                                                   \
    "CSV file to append to; relative to the run directory; default <run dir>/history.csv")        \
  P(flush_secs, FLOAT, DEFAULT, "5",                                                              \
    "rows wait in memory (and in the hook's checkpointed state) until 4 KiB of them do, until "   \
    "the oldest is this many seconds old when a row is recorded, or until end(); 0 appends each " \
    "row at once")

HOOKHOST_PLUGIN(HistorySaver, "history_saver", "1.1.0",
                "Appends step, wall time and tensor values to a CSV history that survives resume",
                HISTORY_SAVER_PARAMS, chief)
