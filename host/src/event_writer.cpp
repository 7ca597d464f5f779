#include "hookhost/host/event_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <boost/crc.hpp>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

#include "proto/tensorboard_event.pb.h"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kMaskDelta = 0xa282ead8u;

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

std::string serialize(const tb::Event& event) {
  std::string out;
  if (!event.SerializeToString(&out)) throw std::runtime_error("cannot serialize an event");
  return out;
}

void append_le(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  // CRC-32C (Castagnoli), reflected: Boost.CRC's parameterised CRC with polynomial 0x1EDC6F41.
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
  crc.process_bytes(data.data(), data.size());
  return crc.checksum();
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  append_le(out, data.size(), 8);
  append_le(out, masked_crc32c(std::string_view(out.data(), 8)), 4);
  out.append(data);
  append_le(out, masked_crc32c(data), 4);
  return out;
}

std::string encode_file_version_event(double wall_time) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  return serialize(event);
}

std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag,
                                float value) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tb::SummaryValue* v = event.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(value);
  return serialize(event);
}

std::string encode_session_log_event(double wall_time, int64_t step, int status,
                                     const std::string& checkpoint_path) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tb::SessionLog* log = event.mutable_session_log();
  log->set_status(static_cast<tb::SessionLog::SessionStatus>(status));
  if (!checkpoint_path.empty()) log->set_checkpoint_path(checkpoint_path);
  return serialize(event);
}

EventFileWriter::EventFileWriter(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create summary folder " + dir.string() + ": " + ec.message());
  const double created = now_seconds();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(std::floor(created)));
  file_ = dir / ("events.out.tfevents." + std::string(stamp) + "." + hostname());
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("cannot create event file " + file_.string() + ": " +
                             std::strerror(errno));
  write_record(encode_file_version_event(std::floor(created)));
  flush_locked();  // TensorFlow flushes the version record at once, so readers see a valid file
}

EventFileWriter::~EventFileWriter() {
  try {
    flush();
  } catch (...) {
    // Nothing to report to during shutdown; every writer was flushed at the end of the job.
  }
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::add_scalar(int64_t step, const std::string& tag, float value) {
  std::lock_guard lock(mutex_);
  write_record(encode_scalar_event(now_seconds(), step, tag, value));
}

void EventFileWriter::add_session_log(int64_t step, int status, const std::string& path) {
  std::lock_guard lock(mutex_);
  write_record(encode_session_log_event(now_seconds(), step, status, path));
}

void EventFileWriter::write_record(const std::string& event) {
  buffer_ += frame_record(event);
  // Like TensorFlow's writer, reach the disk every few seconds even if nobody flushes.
  if (std::chrono::steady_clock::now() - last_flush_ >= kFlushInterval) flush_locked();
}

void EventFileWriter::flush() {
  std::lock_guard lock(mutex_);
  flush_locked();
}

void EventFileWriter::flush_locked() {
  last_flush_ = std::chrono::steady_clock::now();
  std::string pending;
  pending.swap(buffer_);
  size_t done = 0;
  while (done < pending.size()) {
    ssize_t n = ::write(fd_, pending.data() + done, pending.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      throw std::runtime_error("cannot write event file " + file_.string() + ": " +
                               std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

namespace {
std::mutex& writers_mutex() {
  static std::mutex m;
  return m;
}
std::map<fs::path, std::unique_ptr<EventFileWriter>>& writers() {
  static std::map<fs::path, std::unique_ptr<EventFileWriter>> w;
  return w;
}
}  // namespace

EventFileWriter& event_writer_for(const fs::path& dir) {
  // The folder must exist before it is canonicalised, or "tb/" and "tb" would be two keys.
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path key = fs::weakly_canonical(dir, ec);
  if (ec) key = dir;
  if (!key.has_filename()) key = key.parent_path();
  std::lock_guard lock(writers_mutex());
  auto& w = writers()[key];
  if (!w) w = std::make_unique<EventFileWriter>(dir);
  return *w;
}

void flush_event_writers() {
  std::lock_guard lock(writers_mutex());
  for (auto& [_, w] : writers()) w->flush();
}

}  // namespace hookhost
