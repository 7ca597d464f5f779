// step_counter driven through the real runtime: how often the rate is logged, the summary it
// writes (and shares with summary_saver), the stuck-step warning, and configuration errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <hookhost/host/event_writer.hpp>
#include <optional>
#include <regex>
#include <sstream>
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
using ::testing::Each;
using ::testing::ElementsAre;
using ::testing::Gt;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
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

// A second writer for the same folder would add its own version record.
long version_records(const std::vector<Event>& events) {
  long count = 0;
  for (const Event& event : events) count += event.file_version.empty() ? 0 : 1;
  return count;
}

std::vector<int64_t> steps_of(const std::vector<std::pair<int64_t, float>>& values) {
  std::vector<int64_t> steps;
  for (const auto& value : values) steps.push_back(value.first);
  return steps;
}

// The rates logged by instance `instance`, in order; the whole line must be the rate.
std::vector<double> logged_rates(const std::string& log, const std::string& instance) {
  const std::regex line_pattern("\\[" + instance +
                                R"(\] \[info\] global_step/sec: ([0-9.]+(e[+-][0-9]+)?))");
  std::vector<double> rates;
  std::istringstream in(log);
  std::smatch match;
  for (std::string line; std::getline(in, line);)
    if (std::regex_match(line, match, line_pattern)) rates.push_back(std::stod(match[1].str()));
  return rates;
}

long count_lines_containing(const std::string& log, const std::string& text) {
  long count = 0;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);)
    if (line.find(text) != std::string::npos) ++count;
  return count;
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

// A workload whose train step never moves the global step (like a SyncReplicasOptimizer worker):
// it stays at 7 for `steps` runs, then the data ends.
class StuckStepSession : public Session {
 public:
  explicit StuckStepSession(int steps) : runs_left_(steps) {}
  void create(int) override {}
  int64_t global_step() const override { return 7; }
  std::vector<std::string> fetchable() const override { return {"loss"}; }
  std::vector<std::string> feedable() const override { return {}; }
  StepResult run(const std::vector<std::string>&, const TensorMap&) override {
    StepResult result;
    if (runs_left_-- <= 0) {
      result.status = StepStatus::end_of_data;
      result.message = "input exhausted";
    }
    return result;
  }

 private:
  int runs_left_;
};

TEST(StepCounter, FirstTriggerOnlySetsTheBaselineThenLogsEveryNSteps) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}});
  EXPECT_EQ(h.run().outcome, Outcome::completed);
  // Triggers at global steps 1 (baseline, silent), 3, 5, 7 and 9 of the 10-step job.
  EXPECT_THAT(logged_rates(h.log(), "counter"), AllOf(SizeIs(4), Each(Gt(0.0))));
}

TEST(StepCounter, DefaultsToEvery100Steps) {
  PluginHarness h({"step_counter"});
  h.session.end_at = 250;
  h.add("counter", "step_counter");
  h.run();
  // Baseline at step 1, logs at 101 and 201.
  EXPECT_THAT(logged_rates(h.log(), "counter"), SizeIs(2));
}

TEST(StepCounter, EveryNSecsLogsEachStepOnceTheIntervalHasPassed) {
  PluginHarness h({"step_counter"});
  h.session.end_at = 4;
  h.add("counter", "step_counter", {{"every_n_secs", "0.001"}});
  run_with_pauses(h, std::chrono::milliseconds(5));
  EXPECT_THAT(logged_rates(h.log(), "counter"), SizeIs(3));
}

TEST(StepCounter, EveryNSecsLogsNothingBeforeTheIntervalPasses) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_secs", "3600"}});
  h.run();
  EXPECT_THAT(logged_rates(h.log(), "counter"), IsEmpty());
}

TEST(StepCounter, WritesNoSummaryUnlessAsked) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
}

TEST(StepCounter, SummariesWritesTheLoggedRateAtTheLiveStepIntoTheRunDirectory) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"summaries", "true"}});
  h.run();
  const std::vector<std::pair<int64_t, float>> rates =
      scalars(events_in(h.run_dir()), "global_step/sec");
  EXPECT_THAT(steps_of(rates), ElementsAre(3, 5, 7, 9));
  // The summary holds the same rate as the log line (printed with %g: 6 significant digits).
  const std::vector<double> logged = logged_rates(h.log(), "counter");
  ASSERT_THAT(logged, SizeIs(rates.size()));
  for (std::size_t i = 0; i < rates.size(); ++i) {
    EXPECT_GT(rates[i].second, 0.0f);
    EXPECT_NEAR(rates[i].second, logged[i], 1e-5 * logged[i]) << "trigger " << i;
  }
}

TEST(StepCounter, OutputDirWritesTheSummaryThere) {
  PluginHarness h({"step_counter"});
  const fs::path output = h.root() / "rates";
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"output_dir", output.string()}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  EXPECT_THAT(steps_of(scalars(events_in(output), "global_step/sec")), ElementsAre(3, 5, 7, 9));
}

TEST(StepCounter, SharesOneEventsFileWithSummarySaverInTheRunDirectory) {
  PluginHarness h({"step_counter", "summary_saver"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"summaries", "true"}});
  h.add("sums", "summary_saver", {{"save_steps", "5"}});
  h.run();
  const std::vector<Event> events = events_in(h.run_dir());  // expects exactly one file
  ASSERT_THAT(events, Not(IsEmpty()));
  EXPECT_EQ(events[0].file_version, "brain.Event:2");
  EXPECT_EQ(version_records(events), 1);
  EXPECT_THAT(steps_of(scalars(events, "global_step/sec")), ElementsAre(3, 5, 7, 9));
  EXPECT_THAT(steps_of(scalars(events, "loss")), ElementsAre(1, 6));
}

TEST(StepCounter, SharesOneEventsFileWithSummarySaverInAGivenOutputDir) {
  PluginHarness h({"step_counter", "summary_saver"});
  h.add("counter", "step_counter", {{"every_n_steps", "2"}, {"output_dir", "tb"}});
  // Spelled differently on purpose: one folder, one writer, one file.
  h.add("sums", "summary_saver", {{"save_steps", "5"}, {"output_dir", "tb/"}});
  h.run();
  EXPECT_THAT(event_files(h.run_dir()), IsEmpty());
  const std::vector<Event> events = events_in(h.run_dir() / "tb");
  EXPECT_EQ(version_records(events), 1);
  EXPECT_THAT(scalars(events, "global_step/sec"), SizeIs(4));
  EXPECT_THAT(scalars(events, "loss"), SizeIs(2));
}

TEST(StepCounter, WarnsAtMostFiveTimesWhenTheGlobalStepDoesNotIncrease) {
  PluginHarness h({"step_counter"});
  StuckStepSession stuck(8);
  std::ostringstream log;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  sink->set_pattern("[%n] [%l] %v");
  RuntimeOptions options;
  options.run_dir = h.run_dir();
  options.logger = std::make_shared<spdlog::logger>("hookhost", sink);
  Runtime runtime(stuck, options);
  const auto plugin = h.plugin("step_counter");
  runtime.add_hook(plugin, HookSettings{"counter"},
                   resolve_params(plugin->metadata(), "counter", {{"every_n_steps", "1"}}));
  EXPECT_EQ(runtime.run_to_end().steps_run, 8);
  // Steps 2 to 8 each see the step of the previous one (7 times); only the first 5 warn.
  EXPECT_EQ(count_lines_containing(log.str(),
                                   "[counter] [warning] global step has not increased since the "
                                   "last step (it is still 7)"),
            5);
  // Without progress there is no rate to report.
  EXPECT_THAT(logged_rates(log.str(), "counter"), IsEmpty());
}

TEST(StepCounter, DoesNotWarnWhileTheGlobalStepIncreases) {
  PluginHarness h({"step_counter"});
  h.add("counter", "step_counter", {{"every_n_steps", "1"}});
  h.run();
  EXPECT_THAT(h.log(), Not(HasSubstr("has not increased")));
  EXPECT_THAT(logged_rates(h.log(), "counter"), SizeIs(9));
}

// ---- configuration errors name the hook instance and the keys --------------------------------

TEST(StepCounterConfig, BothEveryNStepsAndEveryNSecsIsAnError) {
  PluginHarness h({"step_counter"});
  EXPECT_THAT(
      h.config_error("counter", "step_counter", {{"every_n_steps", "100"}, {"every_n_secs", "5"}}),
      AllOf(HasSubstr("hook 'counter' (plugin 'step_counter'"), HasSubstr("'every_n_steps'"),
            HasSubstr("'every_n_secs'"), HasSubstr("not both")));
}

TEST(StepCounterConfig, EitherOneAloneOrNeitherIsAccepted) {
  PluginHarness h({"step_counter"});
  EXPECT_EQ(h.config_error("steps", "step_counter", {{"every_n_steps", "10"}}), "");
  EXPECT_EQ(h.config_error("secs", "step_counter", {{"every_n_secs", "2.5"}}), "");
  EXPECT_EQ(h.config_error("neither", "step_counter", {}), "");
}

TEST(StepCounterConfig, NonPositiveEveryNStepsIsAnErrorNamingTheKey) {
  PluginHarness h({"step_counter"});
  for (const std::string value : {"0", "-1"}) {
    SCOPED_TRACE("every_n_steps=" + value);
    EXPECT_THAT(h.config_error("counter", "step_counter", {{"every_n_steps", value}}),
                AllOf(HasSubstr("hook 'counter' (plugin 'step_counter'"),
                      HasSubstr("invalid every_n_steps=" + value + " (must be > 0)")));
  }
}

TEST(StepCounterConfig, NonPositiveEveryNSecsIsAnErrorNamingTheKey) {
  PluginHarness h({"step_counter"});
  for (const std::string value : {"0", "-2.5"}) {
    SCOPED_TRACE("every_n_secs=" + value);
    EXPECT_THAT(h.config_error("counter", "step_counter", {{"every_n_secs", value}}),
                AllOf(HasSubstr("hook 'counter' (plugin 'step_counter'"),
                      HasSubstr("invalid every_n_secs=" + value + " (must be > 0)")));
  }
}

}  // namespace
}  // namespace hookhost::testing
