// summary_saver driven through the real runtime: which steps get summaries, the SessionLog START,
// tags and values read back from the events file, output_dir, and configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <hookhost/host/event_writer.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "plugin_harness.hpp"

namespace hookhost::testing {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Pair;
using ::testing::SizeIs;

// ---- reading event files back, without the host's protobuf code ------------------------------
// (A copy of the reader in event_writer_test.cpp; it belongs in tests/support once shared.)

uint64_t read_le(std::string_view bytes, std::size_t at, int width) {
  uint64_t value = 0;
  for (int i = width - 1; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<std::size_t>(i)]);
  return value;
}

// Splits TFRecord framing and checks both masked CRCs of every record; a bad frame fails the test.
std::vector<std::string> read_records(std::string_view bytes) {
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
Event decode_event(std::string_view data) {
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

std::vector<Event> read_events(const fs::path& file) {
  std::vector<Event> events;
  for (const auto& record : read_records(read_file(file))) events.push_back(decode_event(record));
  return events;
}

std::vector<fs::path> event_files(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      files.push_back(entry.path());
  return files;
}

// The events file of `dir` (exactly one is expected), read back.
std::vector<Event> events_in(const fs::path& dir) {
  const std::vector<fs::path> files = event_files(dir);
  EXPECT_THAT(files, SizeIs(1)) << "events files in " << dir;
  return files.size() == 1 ? read_events(files[0]) : std::vector<Event>{};
}

// (step, value) of every scalar summary tagged `tag`, in file order.
std::vector<std::pair<int64_t, float>> scalars(const std::vector<Event>& events,
                                               const std::string& tag) {
  std::vector<std::pair<int64_t, float>> out;
  for (const Event& event : events)
    for (const auto& [name, value] : event.scalars)
      if (name == tag) out.emplace_back(event.step, value);
  return out;
}

std::vector<int64_t> session_start_steps(const std::vector<Event>& events) {
  std::vector<int64_t> steps;
  for (const Event& event : events)
    if (event.session_log_status == 1) steps.push_back(event.step);
  return steps;
}

// Drives the job step by step, sleeping after each step (for the seconds-based timer).
void run_with_pauses(PluginHarness& h, std::chrono::milliseconds pause) {
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  while (!runtime.should_stop()) {
    runtime.run();
    std::this_thread::sleep_for(pause);
  }
  runtime.close();
}

TEST(SummarySaver, WritesAtTheFirstStepAndThenEveryNGlobalSteps) {
  PluginHarness h({"summary_saver"});
  h.session.end_at = 20;
  h.add("sums", "summary_saver", {{"save_steps", "8"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  EXPECT_THAT(scalars(events_in(h.run_dir()), "loss"),
              ElementsAre(Pair(1, FloatEq(10.0f)), Pair(9, FloatEq(10.0f / 9)),
                          Pair(17, FloatEq(10.0f / 17))));
}

TEST(SummarySaver, FetchesTheTensorsOnlyForTheStepsItWrites) {
  PluginHarness h({"summary_saver"});
  h.session.end_at = 20;
  h.add("sums", "summary_saver", {{"save_steps", "8"}});
  h.run();
  std::vector<std::size_t> runs_fetching_loss;
  for (std::size_t i = 0; i < h.session.fetches_seen.size(); ++i)
    for (const auto& name : h.session.fetches_seen[i])
      if (name == "loss") runs_fetching_loss.push_back(i);
  // Runs 0, 8 and 16 produce global steps 1, 9 and 17.
  EXPECT_THAT(runs_fetching_loss, ElementsAre(0u, 8u, 16u));
}

TEST(SummarySaver, FileStartsWithTheVersionThenASessionStartAtTheFirstStep) {
  PluginHarness h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_steps", "5"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  ASSERT_THAT(events, SizeIs(4));  // version, START, loss at 1, loss at 6
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(events[1].session_log_status, 1);
  EXPECT_EQ(events[1].step, 1);
  EXPECT_THAT(events[1].scalars, IsEmpty());
  EXPECT_THAT(session_start_steps(events), ElementsAre(1));
  EXPECT_THAT(scalars(events, "loss"),
              ElementsAre(Pair(1, FloatEq(10.0f)), Pair(6, FloatEq(10.0f / 6))));
}

TEST(SummarySaver, StepsAreGlobalStepsWhenTheSessionStartsFromARestoredStep) {
  PluginHarness h({"summary_saver"});
  h.session.restore_to = 30;
  h.session.end_at = 40;
  h.add("sums", "summary_saver", {{"save_steps", "4"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  EXPECT_THAT(session_start_steps(events), ElementsAre(31));
  EXPECT_THAT(scalars(events, "loss"),
              ElementsAre(Pair(31, FloatEq(10.0f / 31)), Pair(35, FloatEq(10.0f / 35)),
                          Pair(39, FloatEq(10.0f / 39))));
}

TEST(SummarySaver, WritesEveryTensorTaggedWithItsNameAndNonScalarsAsTheirMean) {
  PluginHarness h({"summary_saver"});
  h.session.end_at = 6;
  h.add("sums", "summary_saver",
        {{"save_steps", "5"}, {"tensors", "loss,learning_rate,weights,global_step"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  EXPECT_THAT(scalars(events, "loss"),
              ElementsAre(Pair(1, FloatEq(10.0f)), Pair(6, FloatEq(10.0f / 6))));
  EXPECT_THAT(scalars(events, "learning_rate"),
              ElementsAre(Pair(1, FloatEq(0.1f)), Pair(6, FloatEq(0.1f))));
  // weights is the vector [1, 2, 3].
  EXPECT_THAT(scalars(events, "weights"),
              ElementsAre(Pair(1, FloatEq(2.0f)), Pair(6, FloatEq(2.0f))));
  EXPECT_THAT(scalars(events, "global_step"),
              ElementsAre(Pair(1, FloatEq(1.0f)), Pair(6, FloatEq(6.0f))));
  // Within a step, the tensors appear in the configured order.
  std::vector<std::string> tags_at_step_1;
  for (const Event& event : events)
    if (event.step == 1)
      for (const auto& scalar : event.scalars) tags_at_step_1.push_back(scalar.first);
  EXPECT_THAT(tags_at_step_1, ElementsAre("loss", "learning_rate", "weights", "global_step"));
}

TEST(SummarySaver, WritesIntoOutputDirInsteadOfTheRunDirectory) {
  PluginHarness h({"summary_saver"});
  const fs::path output = h.root() / "tensorboard";
  h.add("sums", "summary_saver", {{"save_steps", "5"}, {"output_dir", output.string()}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  EXPECT_THAT(scalars(events_in(output), "loss"), SizeIs(2));
}

TEST(SummarySaver, RelativeOutputDirIsInsideTheRunDirectory) {
  PluginHarness h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_steps", "5"}, {"output_dir", "tb/train"}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  EXPECT_THAT(scalars(events_in(h.run_dir() / "tb/train"), "loss"), SizeIs(2));
}

TEST(SummarySaver, SaveSecsWritesEveryStepOnceTheIntervalHasPassed) {
  PluginHarness h({"summary_saver"});
  h.session.end_at = 3;
  h.add("sums", "summary_saver", {{"save_secs", "0.001"}});
  run_with_pauses(h, std::chrono::milliseconds(5));
  EXPECT_THAT(
      scalars(events_in(h.run_dir()), "loss"),
      ElementsAre(Pair(1, FloatEq(10.0f)), Pair(2, FloatEq(5.0f)), Pair(3, FloatEq(10.0f / 3))));
}

TEST(SummarySaver, SaveSecsWritesOnlyTheFirstStepBeforeTheIntervalPasses) {
  PluginHarness h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_secs", "3600"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());
  EXPECT_THAT(session_start_steps(events), ElementsAre(1));
  EXPECT_THAT(scalars(events, "loss"), ElementsAre(Pair(1, FloatEq(10.0f))));
}

TEST(SummarySaver, SummariesReachTheDiskWhileTheJobRuns) {
  PluginHarness h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_steps", "2"}});
  Runtime& runtime = h.runtime();
  ASSERT_TRUE(runtime.start());
  runtime.run();
  // Not closed yet: nothing has flushed the host's writers but the hook itself.
  EXPECT_THAT(scalars(events_in(h.run_dir()), "loss"), ElementsAre(Pair(1, FloatEq(10.0f))));
  runtime.close();
}

TEST(SummarySaver, TensorTheWorkloadDoesNotProvideDisablesTheHookNamingIt) {
  PluginHarness h({"summary_saver"});
  h.add("sums", "summary_saver", {{"save_steps", "2"}, {"tensors", "loss,accuracy"}});
  const JobResult result = h.run();
  EXPECT_EQ(result.outcome, Outcome::completed);  // on_error=disable: the job goes on
  EXPECT_THAT(h.log(), HasSubstr("'accuracy', which the workload does not provide"));
}

// ---- configuration errors name the hook instance and the keys --------------------------------

TEST(SummarySaverConfig, BothSaveStepsAndSaveSecsIsAnError) {
  PluginHarness h({"summary_saver"});
  EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_steps", "8"}, {"save_secs", "10"}}),
              AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"), HasSubstr("'save_steps'"),
                    HasSubstr("'save_secs'"), HasSubstr("not both")));
}

TEST(SummarySaverConfig, NeitherSaveStepsNorSaveSecsIsAnError) {
  PluginHarness h({"summary_saver"});
  EXPECT_THAT(h.config_error("sums", "summary_saver", {{"output_dir", "tb"}}),
              AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                    HasSubstr("give one of 'save_steps' or 'save_secs'")));
}

TEST(SummarySaverConfig, NonPositiveSaveStepsIsAnErrorNamingTheKey) {
  PluginHarness h({"summary_saver"});
  for (const std::string value : {"0", "-3"}) {
    SCOPED_TRACE("save_steps=" + value);
    EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_steps", value}}),
                AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                      HasSubstr("invalid save_steps=" + value + " (must be > 0)")));
  }
}

TEST(SummarySaverConfig, NonPositiveSaveSecsIsAnErrorNamingTheKey) {
  PluginHarness h({"summary_saver"});
  for (const std::string value : {"0", "-1.5"}) {
    SCOPED_TRACE("save_secs=" + value);
    EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_secs", value}}),
                AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                      HasSubstr("invalid save_secs=" + value + " (must be > 0)")));
  }
}

TEST(SummarySaverConfig, EmptyTensorListIsAnError) {
  PluginHarness h({"summary_saver"});
  EXPECT_THAT(h.config_error("sums", "summary_saver", {{"save_steps", "8"}, {"tensors", ""}}),
              AllOf(HasSubstr("hook 'sums' (plugin 'summary_saver'"),
                    HasSubstr("'tensors' must name at least one tensor")));
}

}  // namespace
}  // namespace hookhost::testing
