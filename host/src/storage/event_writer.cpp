#include "storage/event_writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <vector>

#include "proto/tensorboard_event.pb.h"
#include "storage/crc32c.hpp"
#include "storage/folder_beneath.hpp"
#include "storage/tfrecord_reader.hpp"

namespace hookhost {
namespace fs = std::filesystem;

namespace {

constexpr uint32_t kMaskDelta = 0xa282ead8u;
constexpr std::size_t kHeaderBytes = 12;  // length and its CRC
constexpr std::size_t kFooterBytes = 4;   // CRC of the data

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  return name;
}

void store_le(char* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

// The inverse of store_le.
uint64_t load_le(const char* bytes, int count) {
  uint64_t value = 0;
  for (int i = 0; i < count; ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  return value;
}

// Appends one TFRecord holding `event`, serialized straight into `out`, with its two CRC fields
// left for seal_records: the checksums are computed by whichever thread writes the records.
void append_unsealed(std::string& out, const google::protobuf::MessageLite& event) {
  const std::size_t size = event.ByteSizeLong();
  const std::size_t at = out.size();
  out.resize(at + kHeaderBytes + size + kFooterBytes);
  char* record = out.data() + at;
  store_le(record, size, 8);
  event.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(record + kHeaderBytes));
}

// Fills in the CRC fields of every record in `records` (appended by append_unsealed).
void seal_records(std::string& records) {
  std::size_t at = 0;
  while (at < records.size()) {
    char* record = records.data() + at;
    const std::size_t size = load_le(record, 8);
    store_le(record + 8, masked_crc32c(std::string_view(record, 8)), 4);
    store_le(record + kHeaderBytes + size,
             masked_crc32c(std::string_view(record + kHeaderBytes, size)), 4);
    at += kHeaderBytes + size + kFooterBytes;
  }
}

std::string serialize(const tb::Event& event) {
  std::string out;
  if (!event.SerializeToString(&out)) throw std::runtime_error("cannot serialize an event");
  return out;
}

void set_scalar(tb::Event& event, tb::SummaryValue& value, double wall_time, int64_t step,
                std::string_view tag, float simple_value) {
  event.set_wall_time(wall_time);
  event.set_step(step);
  value.mutable_tag()->assign(tag.data(), tag.size());  // reuses the string's capacity
  value.set_simple_value(simple_value);
}

void set_session_log(tb::Event& event, double wall_time, int64_t step, int status,
                     std::string_view checkpoint_path) {
  event.set_wall_time(wall_time);
  event.set_step(step);
  tb::SessionLog* log = event.mutable_session_log();
  log->set_status(static_cast<tb::SessionLog::SessionStatus>(status));
  if (checkpoint_path.empty())
    log->clear_checkpoint_path();
  else
    log->mutable_checkpoint_path()->assign(checkpoint_path.data(), checkpoint_path.size());
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
  std::string out(kHeaderBytes + data.size() + kFooterBytes, '\0');
  store_le(out.data(), data.size(), 8);
  store_le(out.data() + 8, masked_crc32c(std::string_view(out.data(), 8)), 4);
  std::memcpy(out.data() + kHeaderBytes, data.data(), data.size());
  store_le(out.data() + kHeaderBytes + data.size(), masked_crc32c(data), 4);
  return out;
}

std::string encode_file_version_event(double wall_time) {
  tb::Event event;
  event.set_wall_time(wall_time);
  event.set_file_version("brain.Event:2");
  return serialize(event);
}

std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  tb::Event event;
  set_scalar(event, *event.mutable_summary()->add_value(), wall_time, step, tag, value);
  return serialize(event);
}

std::string encode_session_log_event(double wall_time, int64_t step, int status,
                                     std::string_view checkpoint_path) {
  tb::Event event;
  set_session_log(event, wall_time, step, status, checkpoint_path);
  return serialize(event);
}

// One message per kind of record, filled in place for every record: after the first record of a
// kind, encoding allocates nothing (unless a longer tag grows the tag's string).
struct EventFileWriter::Encoder {
  tb::Event scalar;
  tb::SummaryValue* scalar_value = scalar.mutable_summary()->add_value();
  tb::Event session_log;
};

namespace {

// An unconfined caller's folder, made and then opened by its path as the caller wrote it.
UniqueFd make_folder(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cannot create summary folder " + dir.string() + ": " + ec.message());
  UniqueFd folder(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!folder)
    throw std::runtime_error("cannot open summary folder " + dir.string() + ": " +
                             std::strerror(errno));
  return folder;
}

// The event file `name` in `folder`, opened for appending without following a link, and only if
// it is a file of its own: whatever a hook planted under that name is refused, not written.
UniqueFd open_event_file(int folder, const std::string& name, const fs::path& shown) {
  UniqueFd fd(
      ::openat(folder, name.c_str(), O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd && errno == ELOOP)
    throw PathRefused("ELOOP: the event file " + shown.string() +
                      " is a symbolic link: the host writes no event file through a link");
  if (!fd)
    throw std::runtime_error("cannot create event file " + shown.string() + ": " +
                             std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw std::runtime_error("cannot stat event file " + shown.string() + ": " +
                             std::strerror(errno));
  if (!S_ISREG(st.st_mode) || st.st_nlink != 1)
    throw PathRefused(std::string(S_ISREG(st.st_mode) ? "EMLINK" : "EINVAL") + ": the event file " +
                      shown.string() + " is " +
                      (S_ISREG(st.st_mode) ? "a hard link to another name" : "not a regular file") +
                      ": the host writes event files of their own only");
  return fd;
}

}  // namespace

EventFileWriter::EventFileWriter(const fs::path& dir, EventWriteSchedule schedule)
    : EventFileWriter(make_folder(dir), dir, schedule) {}

EventFileWriter::EventFileWriter(UniqueFd folder, const fs::path& dir, EventWriteSchedule schedule)
    : schedule_(schedule), encoder_(std::make_unique<Encoder>()) {
  const double created = now_seconds();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(std::floor(created)));
  const std::string name = "events.out.tfevents." + std::string(stamp) + "." + hostname();
  file_ = dir / name;
  fd_ = open_event_file(folder.get(), name, file_);
  // A file of that name from a job restarted within the same second: cut through the descriptor.
  truncate_to_last_whole_record(fd_.get(), file_);
  const off_t size = ::lseek(fd_.get(), 0, SEEK_END);
  good_size_ = size > 0 ? static_cast<uint64_t>(size) : 0;
  tb::Event version;
  version.set_wall_time(std::floor(created));
  version.set_file_version("brain.Event:2");
  append_unsealed(buffer_, version);
  write_buffered();  // TensorFlow writes the version record at once, so readers see a valid file
  thread_ = std::thread([this] { run_writer_thread(); });
}

EventFileWriter::~EventFileWriter() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  try {
    write_buffered();
  } catch (...) {
    // Nothing to report to during shutdown; every writer was flushed at the end of the job.
  }
}

void EventFileWriter::add_scalar(int64_t step, std::string_view tag, float value,
                                 double wall_time) {
  if (wall_time == 0) wall_time = now_seconds();  // the record's one clock read, outside the lock
  std::unique_lock lock(mutex_);
  throw_background_failure(lock);
  set_scalar(encoder_->scalar, *encoder_->scalar_value, wall_time, step, tag, value);
  append_unsealed(buffer_, encoder_->scalar);
  wake_or_write(lock);
}

void EventFileWriter::add_session_log(int64_t step, int status, std::string_view path,
                                      double wall_time) {
  if (wall_time == 0) wall_time = now_seconds();
  std::unique_lock lock(mutex_);
  throw_background_failure(lock);
  set_session_log(encoder_->session_log, wall_time, step, status, path);
  append_unsealed(buffer_, encoder_->session_log);
  wake_or_write(lock);
}

void EventFileWriter::throw_background_failure(std::unique_lock<std::mutex>& lock) {
  if (background_failure_.empty()) return;
  std::string failure;
  failure.swap(background_failure_);
  lock.unlock();
  throw std::runtime_error(failure);
}

// After an append: the writer thread is woken once the buffer is large (the wake is a system call
// only then); a buffer the thread has not kept up with is written here.
void EventFileWriter::wake_or_write(std::unique_lock<std::mutex>& lock) {
  if (buffer_.size() >= schedule_.max_buffered_bytes) {
    lock.unlock();
    write_buffered();
    return;
  }
  if (buffer_.size() >= schedule_.wake_bytes && !wake_requested_) {
    wake_requested_ = true;
    wake_.notify_one();
  }
}

void EventFileWriter::flush() {
  std::string failures;
  try {
    write_buffered();
  } catch (const std::exception& e) {
    failures = e.what();
  }
  {
    std::lock_guard lock(mutex_);
    if (!background_failure_.empty()) {
      failures = background_failure_ + (failures.empty() ? "" : "; " + failures);
      background_failure_.clear();
    }
  }
  if (!failures.empty()) throw std::runtime_error(failures);
}

void EventFileWriter::write_buffered() {
  std::lock_guard io(io_mutex_);
  {
    std::lock_guard lock(mutex_);
    writing_.swap(buffer_);
    wake_requested_ = false;
  }
  if (writing_.empty()) return;
  seal_records(writing_);
  const std::size_t total = writing_.size();
  std::size_t done = 0;
  while (done < total) {
    const ssize_t n = ::write(fd_.get(), writing_.data() + done, total - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      writing_.clear();
      // Roll back to the last whole record: a torn one would hide every record after it.
      const bool rolled_back = ::ftruncate(fd_.get(), static_cast<off_t>(good_size_)) == 0;
      throw std::runtime_error("cannot write event file " + file_.string() + ": " +
                               std::strerror(error) + " (" + std::to_string(done) + " of " +
                               std::to_string(total) + " bytes written" +
                               (rolled_back ? ", rolled back to the last whole record; those "
                                              "events are lost)"
                                            : "; the file could not be rolled back)"));
    }
    done += static_cast<std::size_t>(n);
  }
  good_size_ += total;
  writing_.clear();
}

void EventFileWriter::run_writer_thread() {
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, schedule_.interval, [&] { return stopping_ || wake_requested_; });
    if (stopping_ || buffer_.empty()) continue;
    lock.unlock();
    std::string failure;
    try {
      write_buffered();
    } catch (const std::exception& e) {
      failure = e.what();
    }
    lock.lock();
    // Reported by the next call on this writer (a record, a flush, the end of the job).
    if (!failure.empty()) background_failure_ = failure;
  }
}

uint64_t truncate_to_last_whole_record(const fs::path& file) {
  const UniqueFd fd(::open(file.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd) throw std::runtime_error("cannot open " + file.string() + ": " + std::strerror(errno));
  return truncate_to_last_whole_record(fd.get(), file);
}

uint64_t truncate_to_last_whole_record(int fd, const fs::path& file) {
  const off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0)
    throw std::runtime_error("cannot read the size of " + file.string() + ": " +
                             std::strerror(errno));
  // Every whole record is kept; the first that is not (torn, corrupt) and all after it go.
  TfRecordReader reader(fd, static_cast<uint64_t>(end));
  std::string data;
  while (reader.next(data) == TfRecordReader::Status::record) {
  }
  const uint64_t good = reader.consumed();
  const uint64_t removed = static_cast<uint64_t>(end) - good;
  if (removed > 0 && ::ftruncate(fd, static_cast<off_t>(good)) != 0) {
    const int error = errno;
    throw std::runtime_error("cannot cut the torn end off " + file.string() + ": " +
                             std::strerror(error));
  }
  return removed;
}

EventFileWriter& EventWriters::for_folder(std::string_view dir) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_spelling_.find(dir); it != by_spelling_.end()) return *it->second;
  }
  // A new spelling: resolve it outside the lock (it touches the file system). The folder must
  // exist before it is canonicalised, or "tb/" and "tb" would be two keys.
  const fs::path folder = fs::path(dir).lexically_normal();
  std::error_code ec;
  fs::create_directories(folder, ec);
  fs::path key = fs::weakly_canonical(folder, ec);
  if (ec) key = folder;
  if (!key.has_filename()) key = key.parent_path();
  std::lock_guard lock(mutex_);
  // Made before it is inserted: a writer that cannot be made (a refused link) leaves no entry.
  auto it = writers_.find(key);
  if (it == writers_.end())
    it = writers_.emplace(key, std::make_unique<EventFileWriter>(folder)).first;
  by_spelling_.emplace(std::string(dir), it->second.get());
  return *it->second;
}

EventFileWriter& EventWriters::for_folder_beneath(const std::string& root,
                                                  std::string_view relative,
                                                  std::string_view root_name) {
  thread_local std::string spelling;  // no allocation per record once a spelling was seen
  spelling.assign(root).push_back('\0');
  spelling.append(relative);
  {
    std::lock_guard lock(mutex_);
    if (auto it = beneath_by_spelling_.find(spelling); it != beneath_by_spelling_.end())
      return *it->second;
  }
  const UniqueFd root_fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root_fd) throw std::runtime_error("cannot open " + root + ": " + std::strerror(errno));
  UniqueFd folder = open_folder_beneath(root_fd.get(), relative, root_name);
  // The folder's one name, as the kernel has it, so every spelling of it shares one writer.
  const std::string fd_link = "/proc/self/fd/" + std::to_string(folder.get());
  std::error_code ec;
  fs::path key = fs::read_symlink(fd_link, ec);
  if (ec) key = (fs::path(root) / relative).lexically_normal();
  if (!key.has_filename()) key = key.parent_path();
  std::lock_guard lock(mutex_);
  auto it = writers_.find(key);
  if (it == writers_.end())
    it = writers_.emplace(key, std::make_unique<EventFileWriter>(std::move(folder), key)).first;
  beneath_by_spelling_.emplace(spelling, it->second.get());
  return *it->second;
}

void EventWriters::flush_all() {
  // Writers are never removed while the job lives, so the list can be flushed without the lock.
  std::vector<EventFileWriter*> writers;
  {
    std::lock_guard lock(mutex_);
    for (auto& [_, writer] : writers_) writers.push_back(writer.get());
  }
  std::string errors;
  for (EventFileWriter* writer : writers) {
    try {
      writer->flush();
    } catch (const std::exception& e) {
      errors += (errors.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (!errors.empty()) throw std::runtime_error(errors);
}

}  // namespace hookhost
