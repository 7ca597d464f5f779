// Reading TFRecord framing (storage/event_writer.hpp writes it) back from a file, for the event
// writer's repair of a torn tail and for the report. A file's lengths are untrusted (a hook can
// write an event file in its own folder): each is checked against the bytes left in the file and
// against kMaxTfRecordBytes before anything is allocated, so a record costs at most what the file
// really holds, and never more than that maximum.
#pragma once

#include <cstdint>
#include <string>

namespace hookhost {

// No record this host writes comes near it (summaries are scalars and short texts).
constexpr uint64_t kMaxTfRecordBytes = uint64_t{64} << 20;

class TfRecordReader {
 public:
  enum class Status {
    record,               // `data` holds the next record's bytes
    end,                  // the file ends where a record would start
    torn,                 // the header, data or footer runs past the end of the file
    bad_length_checksum,  // the length's checksum fails
    too_long,             // the length is over kMaxTfRecordBytes
    bad_data_checksum,    // the data's checksum fails
  };

  // Reads `fd` (not owned) from byte 0 to `size`.
  TfRecordReader(int fd, uint64_t size) : fd_(fd), size_(size) {}

  // The next record. After anything but `record`, what follows cannot be framed: stop there.
  Status next(std::string& data);

  uint64_t offset() const { return offset_; }        // where the record next() looked at starts
  uint64_t length() const { return length_; }        // the length its header declares
  uint64_t consumed() const { return next_; }        // the bytes of the whole records read so far
  uint64_t left() const { return size_ - offset_; }  // the bytes from offset() to the end

  // "the record at byte 12 declares 9223372036854775808 bytes, more than ..." for a status other
  // than `record` and `end`.
  std::string why(Status status) const;

 private:
  int fd_;
  uint64_t size_;
  uint64_t offset_ = 0;
  uint64_t next_ = 0;
  uint64_t length_ = 0;
};

}  // namespace hookhost
