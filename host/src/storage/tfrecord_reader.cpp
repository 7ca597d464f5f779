#include "storage/tfrecord_reader.hpp"

#include <unistd.h>

#include <cerrno>
#include <string_view>

#include "storage/event_writer.hpp"

namespace hookhost {

namespace {

constexpr uint64_t kHeaderBytes = 12;  // length and its CRC
constexpr uint64_t kFooterBytes = 4;   // CRC of the data

uint64_t little_endian(const char* bytes, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

// Reads exactly `n` bytes at `at`; false when fewer come (the file shrank, or an error).
bool read_at(int fd, char* out, uint64_t n, uint64_t at) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, out, n, static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<uint64_t>(got);
    at += static_cast<uint64_t>(got);
  }
  return true;
}

}  // namespace

TfRecordReader::Status TfRecordReader::next(std::string& data) {
  offset_ = next_;
  length_ = 0;
  if (offset_ >= size_) return Status::end;
  char header[kHeaderBytes];
  if (size_ - offset_ < kHeaderBytes || !read_at(fd_, header, kHeaderBytes, offset_))
    return Status::torn;
  length_ = little_endian(header, 8);
  if (masked_crc32c(std::string_view(header, 8)) != little_endian(header + 8, 4))
    return Status::bad_length_checksum;
  if (length_ > kMaxTfRecordBytes) return Status::too_long;
  // Checked before anything is allocated: the data and its footer must be in the file.
  if (length_ + kFooterBytes > size_ - offset_ - kHeaderBytes) return Status::torn;
  data.resize(length_ + kFooterBytes);
  if (!read_at(fd_, data.data(), data.size(), offset_ + kHeaderBytes)) return Status::torn;
  const uint64_t stored = little_endian(data.data() + length_, 4);
  data.resize(length_);
  if (masked_crc32c(data) != stored) return Status::bad_data_checksum;
  next_ = offset_ + kHeaderBytes + length_ + kFooterBytes;
  return Status::record;
}

std::string TfRecordReader::why(Status status) const {
  const std::string at = "the record at byte " + std::to_string(offset_);
  switch (status) {
    case Status::record:
    case Status::end: return {};
    case Status::torn:
      if (left() < kHeaderBytes)
        return at + " is torn: its header needs " + std::to_string(kHeaderBytes) + " bytes, " +
               std::to_string(left()) + " are left";
      return at + " is torn: it declares " + std::to_string(length_) + " bytes of data, " +
             std::to_string(left() - kHeaderBytes) + " are left with its checksum";
    case Status::bad_length_checksum: return at + ": its length fails its checksum";
    case Status::too_long:
      return at + " declares " + std::to_string(length_) + " bytes, more than a record may hold (" +
             std::to_string(kMaxTfRecordBytes) + ")";
    case Status::bad_data_checksum: return at + " fails its checksum";
  }
  return {};
}

}  // namespace hookhost
