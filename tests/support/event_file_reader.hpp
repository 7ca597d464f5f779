// Reads TensorBoard event files back without the host's protobuf code: TFRecord framing with both
// masked CRCs checked, and the Event fields the host writes decoded by hand (reference §4).
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include "storage/event_writer.hpp"
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "test_support.hpp"

namespace hookhost::testing {

inline uint64_t read_le(std::string_view bytes, std::size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return value;
}

// Splits TFRecord framing and checks both masked CRCs of every record; a bad frame fails the test.
inline std::vector<std::string> read_records(std::string_view bytes) {
  std::vector<std::string> records;
  std::size_t at = 0;
  while (at < bytes.size()) {
    if (bytes.size() - at < 12) {
      ADD_FAILURE() << "truncated record header at byte " << at;
      break;
    }
    const uint64_t length = read_le(bytes, at, 8);
    EXPECT_EQ(read_le(bytes, at + 8, 4), masked_crc32c(bytes.substr(at, 8)))
        << "length CRC of the record at byte " << at;
    if (bytes.size() - at - 12 < length + 4) {
      ADD_FAILURE() << "truncated record at byte " << at;
      break;
    }
    const std::string_view data = bytes.substr(at + 12, length);
    EXPECT_EQ(read_le(bytes, at + 12 + length, 4), masked_crc32c(data))
        << "data CRC of the record at byte " << at;
    records.emplace_back(data);
    at += 12 + length + 4;
  }
  return records;
}

// Protobuf wire format, just enough for the Event fields the host writes.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return at_ >= bytes_.size(); }
  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      const auto byte = static_cast<unsigned char>(take(1)[0]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return value;
    }
    throw std::runtime_error("varint longer than 10 bytes");
  }
  std::string_view length_delimited() { return take(varint()); }
  double f64() {
    const uint64_t bits = read_le(take(8), 0, 8);
    double value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  float f32() {
    const auto bits = static_cast<uint32_t>(read_le(take(4), 0, 4));
    float value;
    std::memcpy(&value, &bits, sizeof value);
    return value;
  }
  void skip(uint64_t wire_type) {
    switch (wire_type) {
      case 0: varint(); break;
      case 1: take(8); break;
      case 2: length_delimited(); break;
      case 5: take(4); break;
      default: throw std::runtime_error("unknown wire type " + std::to_string(wire_type));
    }
  }

 private:
  std::string_view take(std::size_t n) {
    if (bytes_.size() - at_ < n) throw std::runtime_error("message truncated");
    const std::string_view out = bytes_.substr(at_, n);
    at_ += n;
    return out;
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

struct Event {
  double wall_time = 0;
  int64_t step = 0;
  std::string file_version;
  std::vector<std::pair<std::string, float>> scalars;  // summary values: tag, simple_value
  std::optional<int> session_log_status;               // set when the event is a SessionLog
  std::string checkpoint_path;
};

// Keys are field number << 3 | wire type, as listed in the reference §4.
inline Event decode_event(std::string_view data) {
  Event event;
  WireReader reader(data);
  while (!reader.done()) {
    const uint64_t key = reader.varint();
    if (key == 0x09) {
      event.wall_time = reader.f64();
    } else if (key == 0x10) {
      event.step = static_cast<int64_t>(reader.varint());
    } else if (key == 0x1A) {
      event.file_version = reader.length_delimited();
    } else if (key == 0x2A) {
      WireReader summary(reader.length_delimited());
      while (!summary.done()) {
        const uint64_t summary_key = summary.varint();
        if (summary_key != 0x0A) {
          summary.skip(summary_key & 7);
          continue;
        }
        WireReader value(summary.length_delimited());
        std::pair<std::string, float> scalar;
        while (!value.done()) {
          const uint64_t value_key = value.varint();
          if (value_key == 0x0A)
            scalar.first = value.length_delimited();
          else if (value_key == 0x15)
            scalar.second = value.f32();
          else
            value.skip(value_key & 7);
        }
        event.scalars.push_back(scalar);
      }
    } else if (key == 0x3A) {
      WireReader log(reader.length_delimited());
      event.session_log_status = 0;
      while (!log.done()) {
        const uint64_t log_key = log.varint();
        if (log_key == 0x08)
          event.session_log_status = static_cast<int>(log.varint());
        else if (log_key == 0x12)
          event.checkpoint_path = log.length_delimited();
        else
          log.skip(log_key & 7);
      }
    } else {
      reader.skip(key & 7);
    }
  }
  return event;
}

inline std::vector<Event> read_events(const fs::path& file) {
  std::vector<Event> events;
  for (const auto& record : read_records(read_file(file))) events.push_back(decode_event(record));
  return events;
}

inline std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      files.push_back(entry.path());
  return files;
}

// The events file of `dir` (exactly one is expected), read back.
inline std::vector<Event> events_in(const fs::path& dir) {
  const std::vector<fs::path> files = event_files(dir);
  EXPECT_THAT(files, ::testing::SizeIs(1)) << "events files in " << dir;
  return files.size() == 1 ? read_events(files[0]) : std::vector<Event>{};
}

// (step, value) of every scalar summary tagged `tag`, in file order.
inline std::vector<std::pair<int64_t, float>> scalars(const std::vector<Event>& events,
                                                      const std::string& tag) {
  std::vector<std::pair<int64_t, float>> out;
  for (const Event& event : events)
    for (const auto& [name, value] : event.scalars)
      if (name == tag) out.emplace_back(event.step, value);
  return out;
}

}  // namespace hookhost::testing
