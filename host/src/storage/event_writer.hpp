// TensorBoard event files: TFRecord framing with masked CRC-32C around serialized Event messages.
// One writer per folder per job, shared by every hook that writes summaries. A record costs the
// calling thread one clock read, its encoding into a memory buffer and two uncontended locks; the
// thread that writes (a writer thread per file, every few seconds or once the buffer is large; or
// a flush, from any thread; or the end of the job) computes the checksums and puts it on disk.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "support/unique_fd.hpp"

namespace hookhost {

// CRC-32C (Castagnoli) of `data`, and TensorFlow's mask of it: rotate right 15, add 0xa282ead8.
uint32_t crc32c(std::string_view data);
uint32_t masked_crc32c(std::string_view data);

// One TFRecord: uint64 length, uint32 masked CRC of the length bytes, data, uint32 masked CRC of
// the data; all little-endian.
std::string frame_record(std::string_view data);

// Serialized Event messages (the record payloads).
std::string encode_file_version_event(double wall_time);
std::string encode_scalar_event(double wall_time, int64_t step, std::string_view tag, float value);
std::string encode_session_log_event(double wall_time, int64_t step, int status,
                                     std::string_view checkpoint_path);

// Cuts `file` back to its last whole record (a crash in the middle of a write leaves a torn
// tail, which would hide every record appended after it). Returns the bytes removed. The second
// form cuts the file open as `fd` (writable), named `file` in errors.
uint64_t truncate_to_last_whole_record(const std::filesystem::path& file);
uint64_t truncate_to_last_whole_record(int fd, const std::filesystem::path& file);

// When buffered records go to disk.
struct EventWriteSchedule {
  // The writer thread writes at least this often while records wait (TensorFlow flushes every
  // few seconds too): a killed process loses at most about this much.
  std::chrono::milliseconds interval{5000};
  // ... and as soon as this many bytes wait, so writes stay large but memory stays small.
  std::size_t wake_bytes = 64 * 1024;
  // A caller that finds this many bytes still waiting (a stalled disk) writes them itself, so
  // memory stays bounded.
  std::size_t max_buffered_bytes = 16 * 1024 * 1024;
};

class EventFileWriter {
 public:
  // Opens <dir>/events.out.tfevents.<seconds, 10 digits>.<hostname> for appending (creating `dir`
  // too; an existing file of that name, from a job restarted within the same second, is first cut
  // back to its last whole record), writes the file_version record at once, so readers see a
  // valid file, and starts the writer thread. Throws std::runtime_error naming the file. The file
  // is opened without following a link: a symbolic link (or a hard link, or anything but a file)
  // of that name is refused with PathRefused (storage/folder_beneath.hpp), never written through.
  explicit EventFileWriter(const std::filesystem::path& dir, EventWriteSchedule schedule = {});
  // The same in the open folder `folder` (named `dir` in messages), which `dir` is not opened
  // again to find: a sandboxed hook's, resolved beneath what it may write.
  EventFileWriter(UniqueFd folder, const std::filesystem::path& dir,
                  EventWriteSchedule schedule = {});
  // Stops the writer thread and writes what is still buffered.
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  // Appends one record to the buffer. [thread-safe] A failure of an earlier background write is
  // thrown here (once), and then this record is not appended.
  // `wall_time` (seconds since the Unix epoch) stamps the record; 0 stamps it now.
  void add_scalar(int64_t step, std::string_view tag, float value, double wall_time = 0);
  void add_session_log(int64_t step, int status, std::string_view checkpoint_path,
                       double wall_time = 0);
  // Puts every record appended before the call on disk before it returns. [thread-safe] A write
  // that fails part-way (a full disk) is rolled back to the last whole record, so the file stays
  // readable and later records land after good ones; the failure (or one of the writer thread's)
  // is thrown.
  void flush();
  const std::filesystem::path& file() const { return file_; }

 private:
  struct Encoder;  // reused Event messages: no allocation per record
  void wake_or_write(std::unique_lock<std::mutex>& lock);
  void throw_background_failure(std::unique_lock<std::mutex>& lock);
  void write_buffered();  // takes io_mutex_, then the buffer; throws on a failed write
  void run_writer_thread();

  const EventWriteSchedule schedule_;
  std::filesystem::path file_;

  // Guards what the calling threads touch: the buffer, the encoder and the thread's signals.
  std::mutex mutex_;
  std::condition_variable wake_;
  std::unique_ptr<Encoder> encoder_;
  std::string buffer_;              // framed records not yet taken by a write
  bool wake_requested_ = false;     // buffer_ reached wake_bytes
  bool stopping_ = false;           // the destructor runs
  std::string background_failure_;  // the writer thread's last failed write, not yet reported

  // Guards the file. Held for a whole write, so a flush that gets it knows every earlier write of
  // taken records has finished.
  std::mutex io_mutex_;
  UniqueFd fd_;
  uint64_t good_size_ = 0;  // the file's size after its last whole record
  std::string writing_;     // the records being written (keeps its capacity for the next swap)

  std::thread thread_;  // last: starts once everything above exists
};

// The writers of one job: one per folder, shared by every hook writing there (as TensorFlow's
// writer cache). Owned by the runtime, so two jobs in one process never share one. [thread-safe]
class EventWriters {
 public:
  // The writer of folder `dir`, created on first use. A spelling asked for before is found without
  // touching the file system; a new one is resolved (the folder created, the path made canonical),
  // so "tb", "tb/" and "tb/." share one writer.
  EventFileWriter& for_folder(std::string_view dir);
  EventFileWriter& for_folder(const std::filesystem::path& dir) {
    return for_folder(std::string_view(dir.native()));
  }
  // The writer of folder `relative` beneath the folder `root`, for a sandboxed hook that may write
  // only there: resolved by open_folder_beneath (never above `root`, never through a symbolic
  // link; `root_name` names `root` in a refusal), created on first use. A spelling resolved before
  // is found without touching the file system. Throws PathRefused.
  EventFileWriter& for_folder_beneath(const std::string& root, std::string_view relative,
                                      std::string_view root_name);
  // Puts every record appended to any writer before the call on disk before it returns, without
  // holding up callers appending meanwhile. [thread-safe] Throws the failures, joined.
  void flush_all();

 private:
  std::mutex mutex_;
  std::map<std::filesystem::path, std::unique_ptr<EventFileWriter>> writers_;  // canonical folder
  std::map<std::string, EventFileWriter*, std::less<>> by_spelling_;  // each folder text asked for
  // Each root and relative folder a sandboxed hook asked for ("root\0relative"), apart from
  // by_spelling_: an unconfined hook's spelling may lead through a link this route refuses.
  std::map<std::string, EventFileWriter*, std::less<>> beneath_by_spelling_;
};

}  // namespace hookhost
