// TensorBoard event files: TFRecord framing with masked CRC-32C around serialized Event messages.
// One writer per folder per process, shared by every hook that writes summaries.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>

namespace hookhost {

// CRC-32C (Castagnoli) of `data`, and TensorFlow's mask of it: rotate right 15, add 0xa282ead8.
uint32_t crc32c(std::string_view data);
uint32_t masked_crc32c(std::string_view data);

// One TFRecord: uint64 length, uint32 masked CRC of the length bytes, data, uint32 masked CRC of
// the data; all little-endian.
std::string frame_record(std::string_view data);

// Serialized Event messages (the record payloads).
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(double wall_time, int64_t step, const std::string& tag,
                                float value);
std::string encode_session_log_event(double wall_time, int64_t step, int status,
                                     const std::string& checkpoint_path);

class EventFileWriter {
 public:
  // Creates <dir>/events.out.tfevents.<seconds, 10 digits>.<hostname> (creating `dir` too) and
  // writes and flushes the file_version record. Throws std::runtime_error naming the file.
  explicit EventFileWriter(const std::filesystem::path& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void add_scalar(int64_t step, const std::string& tag, float value);
  void add_session_log(int64_t step, int status, const std::string& checkpoint_path);
  void flush();
  const std::filesystem::path& file() const { return file_; }

 private:
  static constexpr std::chrono::seconds kFlushInterval{5};
  void write_record(const std::string& event);  // with mutex_ held
  void flush_locked();
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_flush_{};
  std::filesystem::path file_;
  int fd_ = -1;
  std::string buffer_;
};

// The process-wide writer for a folder (created on first use). [thread-safe]
EventFileWriter& event_writer_for(const std::filesystem::path& dir);
// Flushes every writer created so far. [thread-safe]
void flush_event_writers();

}  // namespace hookhost
