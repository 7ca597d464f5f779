#include "services/event_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>

#include "crc32c.hpp"
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

// The inverse of append_le.
uint64_t load_le(const char* bytes, int count) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return value;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  Crc32c crc;
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
  if (fs::exists(file_, ec)) truncate_to_last_whole_record(file_);
  fd_ = ::open(file_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error("cannot create event file " + file_.string() + ": " +
                             std::strerror(errno));
  const off_t size = ::lseek(fd_, 0, SEEK_END);
  good_size_ = size > 0 ? static_cast<uint64_t>(size) : 0;
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
    if (n < 0) {
      const int error = errno;
      // Roll back to the last whole record: a torn one would hide every record after it.
      const bool rolled_back = ::ftruncate(fd_, static_cast<off_t>(good_size_)) == 0;
      throw std::runtime_error("cannot write event file " + file_.string() + ": " +
                               std::strerror(error) + " (" + std::to_string(done) + " of " +
                               std::to_string(pending.size()) + " bytes written" +
                               (rolled_back ? ", rolled back to the last whole record; those "
                                              "events are lost)"
                                            : "; the file could not be rolled back)"));
    }
    done += static_cast<size_t>(n);
  }
  good_size_ += pending.size();
}

uint64_t truncate_to_last_whole_record(const fs::path& file) {
  int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot open " + file.string() + ": " + std::strerror(errno));
  const off_t end = ::lseek(fd, 0, SEEK_END);
  uint64_t good = 0;
  // Walk the framing: 8-byte length, 4-byte CRC of it, data, 4-byte CRC of the data.
  while (true) {
    char header[12];
    if (::pread(fd, header, 12, static_cast<off_t>(good)) != 12) break;
    const uint64_t length = load_le(header, 8);
    if (masked_crc32c(std::string_view(header, 8)) != load_le(header + 8, 4)) break;
    if (length > static_cast<uint64_t>(end) - good - 12 ||
        static_cast<uint64_t>(end) - good - 12 - length < 4)
      break;
    std::string data(length + 4, '\0');
    if (::pread(fd, data.data(), data.size(), static_cast<off_t>(good + 12)) !=
        static_cast<ssize_t>(data.size()))
      break;
    if (masked_crc32c(std::string_view(data.data(), length)) != load_le(data.data() + length, 4))
      break;
    good += 12 + length + 4;
  }
  const uint64_t removed = static_cast<uint64_t>(end) - good;
  if (removed > 0 && ::ftruncate(fd, static_cast<off_t>(good)) != 0) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error("cannot cut the torn end off " + file.string() + ": " +
                             std::strerror(error));
  }
  ::close(fd);
  return removed;
}

EventFileWriter& EventWriters::for_folder(const fs::path& dir) {
  // The folder must exist before it is canonicalised, or "tb/" and "tb" would be two keys.
  std::error_code ec;
  fs::create_directories(dir, ec);
  fs::path key = fs::weakly_canonical(dir, ec);
  if (ec) key = dir;
  if (!key.has_filename()) key = key.parent_path();
  std::lock_guard lock(mutex_);
  auto& w = writers_[key];
  if (!w) w = std::make_unique<EventFileWriter>(dir);
  return *w;
}

void EventWriters::flush_all() {
  std::lock_guard lock(mutex_);
  std::string errors;
  for (auto& [_, w] : writers_) {
    try {
      w->flush();
    } catch (const std::exception& e) {
      errors += (errors.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (!errors.empty()) throw std::runtime_error(errors);
}

}  // namespace hookhost
