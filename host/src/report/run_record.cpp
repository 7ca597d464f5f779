#include "report/run_record.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <utility>

#include "proto/run_record.pb.h"

namespace hookhost {
namespace fs = std::filesystem;
namespace pb = hookhost::record;

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

namespace {

std::string errno_text() {
  return std::strerror(errno);
}

// The file's last byte, or '\n' for an empty file.
char last_byte(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size == 0) return '\n';
  char c = '\n';
  if (::pread(fd, &c, 1, st.st_size - 1) != 1) return '\n';
  return c;
}

std::string to_json(const pb::RecordLine& line) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(line, &json, options);
  if (!status.ok())
    throw std::runtime_error("cannot encode a run record line: " + std::string(status.message()));
  return json;
}

RecordedStart from_proto(double wall_time, const pb::Start& s) {
  RecordedStart out;
  out.wall_time = wall_time;
  out.resume = s.resume();
  out.global_step = s.global_step();
  out.configuration = s.configuration();
  out.hookhost_version = s.hookhost_version();
  out.rank = s.rank();
  out.world = s.world();
  for (const auto& p : s.plugins())
    out.plugins.push_back(RecordedPlugin{
        p.id(), p.version(), p.file(), p.sha256(), {p.hooks().begin(), p.hooks().end()}});
  return out;
}

RecordedCost from_proto(double wall_time, const pb::Cost& c) {
  RecordedCost out;
  out.wall_time = wall_time;
  out.outcome = c.outcome();
  out.reason = c.reason();
  out.global_step = c.global_step();
  out.steps_run = c.steps_run();
  out.wall_time_s = c.wall_time_s();
  out.checkpoint_waits = c.checkpoint_waits();
  out.checkpoint_wait_ns = c.checkpoint_wait_ns();
  for (const auto& h : c.hooks()) {
    RecordedHookCost hook{h.hook(), h.plugin_id(), h.disabled(), h.failure(), {}};
    for (const auto& cb : h.callbacks())
      hook.callbacks.push_back(RecordedCallbackCost{cb.callback(), cb.calls(), cb.timed_calls(),
                                                    cb.failures(), cb.total_ns(), cb.p50_ns(),
                                                    cb.p99_ns(), cb.max_ns()});
    out.hooks.push_back(std::move(hook));
  }
  return out;
}

}  // namespace

RunRecordWriter::RunRecordWriter(fs::path file) : file_(std::move(file)) {
  fd_.reset(::open(file_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd_)
    throw std::runtime_error("cannot open the run record " + file_.string() + ": " + errno_text() +
                             " (check that the run directory is writable)");
  // A killed job's half line must not swallow this job's first one.
  if (last_byte(fd_.get()) != '\n') append_line("");
}

void RunRecordWriter::append_line(const std::string& json) {
  const std::string line = json + "\n";
  std::lock_guard lock(mutex_);
  // One write() per line: with O_APPEND a line lands whole after the previous one, and once
  // write() returns the kernel has it, so a kill -9 of this process loses no line written.
  std::size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(fd_.get(), line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw std::runtime_error("cannot append to the run record " + file_.string() + ": " +
                               errno_text());
    done += static_cast<std::size_t>(n);
  }
}

void RunRecordWriter::write(const RecordedStart& start) {
  pb::RecordLine line;
  line.set_wall_time(start.wall_time);
  pb::Start& s = *line.mutable_start();
  s.set_resume(start.resume);
  s.set_global_step(start.global_step);
  s.set_configuration(start.configuration);
  s.set_hookhost_version(start.hookhost_version);
  s.set_rank(start.rank);
  s.set_world(start.world);
  for (const auto& p : start.plugins) {
    pb::Plugin& out = *s.add_plugins();
    out.set_id(p.id);
    out.set_version(p.version);
    out.set_file(p.file);
    out.set_sha256(p.sha256);
    for (const auto& hook : p.hooks) out.add_hooks(hook);
  }
  append_line(to_json(line));
}

void RunRecordWriter::write(const RecordedEvent& event) {
  pb::RecordLine line;
  line.set_wall_time(event.wall_time);
  pb::Event& e = *line.mutable_event();
  e.set_kind(event.kind);
  e.set_global_step(event.global_step);
  e.set_hook(event.hook);
  e.set_text(event.text);
  append_line(to_json(line));
}

void RunRecordWriter::write(const RecordedCost& cost) {
  pb::RecordLine line;
  line.set_wall_time(cost.wall_time);
  pb::Cost& c = *line.mutable_cost();
  c.set_outcome(cost.outcome);
  c.set_reason(cost.reason);
  c.set_global_step(cost.global_step);
  c.set_steps_run(cost.steps_run);
  c.set_wall_time_s(cost.wall_time_s);
  c.set_checkpoint_waits(cost.checkpoint_waits);
  c.set_checkpoint_wait_ns(cost.checkpoint_wait_ns);
  for (const auto& hook : cost.hooks) {
    pb::HookCost& h = *c.add_hooks();
    h.set_hook(hook.hook);
    h.set_plugin_id(hook.plugin_id);
    h.set_disabled(hook.disabled);
    h.set_failure(hook.failure);
    for (const auto& cb : hook.callbacks) {
      pb::CallbackCost& out = *h.add_callbacks();
      out.set_callback(cb.callback);
      out.set_calls(cb.calls);
      out.set_timed_calls(cb.timed_calls);
      out.set_failures(cb.failures);
      out.set_total_ns(cb.total_ns);
      out.set_p50_ns(cb.p50_ns);
      out.set_p99_ns(cb.p99_ns);
      out.set_max_ns(cb.max_ns);
    }
  }
  append_line(to_json(line));
}

namespace {

// A record line is a few hundred bytes; a longer one is no line this host wrote, and is skipped
// without being kept. At most so many bad lines are listed, then how many more there were.
constexpr std::size_t kMaxRecordLineBytes = 1 << 20;
constexpr std::size_t kMaxBadLinesListed = 100;

// The next line of `in` without its newline, at most kMaxRecordLineBytes of it kept (*cut: more
// were skipped). False at the end of the file.
bool next_line(std::streambuf& in, std::string& line, uint64_t* bytes, bool* cut) {
  line.clear();
  *bytes = 0;
  *cut = false;
  using Traits = std::streambuf::traits_type;
  for (Traits::int_type c; !Traits::eq_int_type(c = in.sbumpc(), Traits::eof());) {
    ++*bytes;
    if (c == '\n') return true;
    if (line.size() < kMaxRecordLineBytes)
      line.push_back(Traits::to_char_type(c));
    else
      *cut = true;
  }
  return *bytes > 0;
}

}  // namespace

RunRecord read_run_record(const fs::path& file) {
  // A device or a FIFO in its place (/dev/zero reads without end) is refused, not read.
  std::error_code ec;
  if (fs::exists(file, ec) && !fs::is_regular_file(file, ec))
    throw std::runtime_error("cannot read the run record " + file.string() +
                             ": not a regular file");
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read the run record " + file.string() + ": " + errno_text());

  RunRecord record;
  std::size_t unlisted = 0;
  auto bad = [&](std::string why) {
    if (record.bad_lines.size() < kMaxBadLinesListed)
      record.bad_lines.push_back(std::move(why));
    else
      ++unlisted;
  };
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;  // a newer hookhost's lines still read
  std::string text, failed;  // failed: why the last line read did not parse, until one follows
  uint64_t offset = 0, bytes = 0;
  bool cut = false;
  for (std::size_t number = 1; next_line(*in.rdbuf(), text, &bytes, &cut);
       ++number, offset += bytes) {
    if (text.empty() && !cut) continue;  // the newline a writer put after a torn line
    if (!failed.empty()) bad(std::exchange(failed, {}));
    ++record.lines;
    const std::string where = file.string() + ":" + std::to_string(number);
    if (cut) {
      bad(where + ": a line of more than " + std::to_string(kMaxRecordLineBytes) +
          " bytes at byte " + std::to_string(offset) + "; skipped");
      continue;
    }
    pb::RecordLine line;
    const auto status = google::protobuf::util::JsonStringToMessage(text, &line, options);
    if (!status.ok() || line.what_case() == pb::RecordLine::WHAT_NOT_SET) {
      failed =
          where + ": " +
          (status.ok() ? std::string("no start, event or cost") : std::string(status.message()));
      continue;
    }
    switch (line.what_case()) {
      case pb::RecordLine::kStart:
        record.starts.push_back(from_proto(line.wall_time(), line.start()));
        break;
      case pb::RecordLine::kEvent: {
        const pb::Event& e = line.event();
        record.events.push_back(
            RecordedEvent{line.wall_time(), e.kind(), e.global_step(), e.hook(), e.text()});
        break;
      }
      case pb::RecordLine::kCost:
        record.costs.push_back(from_proto(line.wall_time(), line.cost()));
        break;
      case pb::RecordLine::WHAT_NOT_SET: break;
    }
  }
  record.torn_last_line = !failed.empty();  // the last line: torn by a killed job
  if (unlisted > 0)
    record.bad_lines.push_back(file.string() + ": " + std::to_string(unlisted) +
                               " more lines that are not record lines");
  return record;
}

}  // namespace hookhost
