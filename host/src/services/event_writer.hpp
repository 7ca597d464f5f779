// TensorBoard event files: TFRecord framing with masked CRC-32C around serialized Event messages.
// One writer per folder per job, shared by every hook that writes summaries.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
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

// Cuts `file` back to its last whole record (a crash in the middle of a write leaves a torn
// tail, which would hide every record appended after it). Returns the bytes removed.
uint64_t truncate_to_last_whole_record(const std::filesystem::path& file);

class EventFileWriter {
 public:
  // Opens <dir>/events.out.tfevents.<seconds, 10 digits>.<hostname> for appending (creating `dir`
  // too; an existing file of that name, from a job restarted within the same second, is first cut
  // back to its last whole record), and writes and flushes the file_version record. Throws
  // std::runtime_error naming the file.
  explicit EventFileWriter(const std::filesystem::path& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void add_scalar(int64_t step, const std::string& tag, float value);
  void add_session_log(int64_t step, int status, const std::string& checkpoint_path);
  // Writes what is buffered. A write that fails part-way (a full disk) is rolled back to the last
  // whole record, so the file stays readable and later records land after good ones.
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
  uint64_t good_size_ = 0;  // the file's size after its last whole record
  std::string buffer_;
};

// The writers of one job: one per folder, shared by every hook writing there (as TensorFlow's
// writer cache). Owned by the runtime, so two jobs in one process never share one. [thread-safe]
class EventWriters {
 public:
  EventFileWriter& for_folder(const std::filesystem::path& dir);
  void flush_all();

 private:
  std::mutex mutex_;
  std::map<std::filesystem::path, std::unique_ptr<EventFileWriter>> writers_;
};

}  // namespace hookhost
