// Runs the fuzzer fixture (tests/fixtures/fuzzer): a C plugin that calls every function a plugin
// can call with seeded random arguments, valid and invalid, and checks each answer against the
// headers. The plugin reports what it saw; these tests add what only the host side shows: how the
// job ended, the log lines every refusal and failure must produce, and that each function was
// called, and both accepted and refused where both are possible.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/hookhost.h>

#include <cstdio>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "plugin_harness.hpp"
#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::HasSubstr;
using ::testing::Not;

struct EntryCounts {
  long calls = 0, accepted = 0, refused = 0, mismatches = 0;
};

struct BeforeRunFailure {
  int64_t step = 0;
  std::vector<std::string> reasons;  // the host's line names at least one
};

// What the plugin's `report` file says (its format is described at the top of fuzzer.c).
struct FuzzReport {
  std::map<std::string, EntryCounts> entries;  // "host.log", "request.add_feed", ...
  std::map<std::string, long> tallies;  // "before_run.failed", "log.debug", "feed.dtype.calls"
  std::vector<BeforeRunFailure> failures;
  std::optional<long> mismatches;
  std::string text;

  long tally(const std::string& key) const {
    auto it = tallies.find(key);
    return it == tallies.end() ? -1 : it->second;
  }
};

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, separator)) out.push_back(item);
  return out;
}

FuzzReport read_report(const fs::path& file) {
  FuzzReport r;
  r.text = read_file(file);
  for (const std::string& line : lines_of(r.text)) {
    std::istringstream in(line);
    std::string word;
    in >> word;
    if (word == "mismatch") continue;  // shown with the whole text when a test fails
    if (word == "mismatches") {
      long n = -1;
      in >> n;
      r.mismatches = n;
    } else if (word == "before_run_failure") {
      BeforeRunFailure f;
      std::string step;
      in >> step;
      f.step = std::stoll(step.substr(step.find('=') + 1));
      f.reasons = split(line.substr(line.find("expect=") + 7), '|');  // reasons hold spaces
      r.failures.push_back(f);
    } else {
      std::string prefix = word;
      if (word == "entry" || word == "feed") {
        std::string name;
        in >> name;
        prefix = word == "entry" ? name : "feed." + name;
      }
      for (std::string pair; in >> pair;) {
        const auto eq = pair.find('=');
        if (eq == std::string::npos) continue;
        const long value = std::stol(pair.substr(eq + 1));
        const std::string key = pair.substr(0, eq);
        r.tallies[prefix + "." + key] = value;
        if (word == "entry") {
          EntryCounts& c = r.entries[prefix];
          if (key == "calls") c.calls = value;
          if (key == "accepted") c.accepted = value;
          if (key == "refused") c.refused = value;
          if (key == "mismatches") c.mismatches = value;
        }
      }
    }
  }
  return r;
}

// One unterminated message after_run returned (`report`.errors).
struct ReturnedError {
  int64_t step = 0;
  long code = 0;
  std::string message;  // the whole buffer
};

std::vector<ReturnedError> read_returned_errors(const fs::path& file) {
  std::vector<ReturnedError> out;
  const std::string bytes = fs::exists(file) ? read_file(file) : "";
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t eol = bytes.find('\n', pos);
    if (eol == std::string::npos) break;
    ReturnedError e;
    std::string word;
    std::istringstream(bytes.substr(pos, eol - pos)) >> word >> e.step >> e.code;
    e.message = bytes.substr(eol + 1, HH_ERROR_MESSAGE_SIZE);
    out.push_back(e);
    pos = eol + 1 + HH_ERROR_MESSAGE_SIZE + 1;
  }
  return out;
}

// What one instance's end() received (`report`.end).
struct EndSeen {
  int outcome = 0, cause = 0;
  int64_t step = -1;
  std::string reason;
};

EndSeen read_end(const fs::path& file) {
  EndSeen e;
  const std::string bytes = read_file(file);
  const size_t eol = bytes.find('\n');
  if (eol == std::string::npos) return e;
  std::string word;
  size_t size = 0;
  std::istringstream(bytes.substr(0, eol)) >> word >> e.outcome >> e.cause >> e.step >> size;
  e.reason = bytes.substr(eol + 1, size);
  return e;
}

// The stop reason the plugin requested (`report`.stop); nullopt for NULL.
std::optional<std::string> read_stop_reason(const fs::path& file) {
  const std::string bytes = read_file(file);
  const size_t eol = bytes.find('\n');
  if (bytes.rfind("null", 0) == 0 || eol == std::string::npos) return std::nullopt;
  return bytes.substr(eol + 1);
}

// The text between `start` and the next `end` in `text`, or "" when `start` is absent.
std::string segment(const std::string& text, const std::string& start, const std::string& end) {
  const size_t from = text.find(start);
  if (from == std::string::npos) return {};
  const size_t to = text.find(end, from);
  return text.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

// Control characters as the hookhost program prints them (host/include/.../display_text.hpp).
std::string escaped(const std::string& raw) {
  std::string out;
  for (const char ch : raw) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == 0x1b) {
      out += "\\e";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string code_suffix(long code) {
  return code ? " (code " + std::to_string(code) + ")" : "";
}

const char* const kContinued = " [on_error=continue: the hook keeps getting calls]";
constexpr int64_t kSteps = 50;
constexpr size_t kStateLimit = 4096;

// Every function a plugin can call, as the report names them.
const std::vector<std::string> kFunctions = {"host.instance_name",
                                             "host.log",
                                             "host.log_enabled",
                                             "host.global_step",
                                             "host.request_stop",
                                             "host.should_stop",
                                             "host.run_dir",
                                             "host.state_put",
                                             "host.state_info",
                                             "host.state_get",
                                             "host.get_service",
                                             "request.add_fetch",
                                             "request.add_feed",
                                             "checkpoint.request",
                                             "checkpoint.last_written",
                                             "steps.publish_last_step",
                                             "steps.last_step",
                                             "summary.add_scalar",
                                             "summary.add_session_log",
                                             "summary.flush"};

// The functions with both verdicts possible: a fuzz run must have seen both.
const std::vector<std::string> kTwoWayFunctions = {"host.log",
                                                   "host.log_enabled",
                                                   "host.state_put",
                                                   "host.state_info",
                                                   "host.state_get",
                                                   "host.get_service",
                                                   "request.add_fetch",
                                                   "request.add_feed",
                                                   "checkpoint.last_written",
                                                   "steps.publish_last_step",
                                                   "summary.add_scalar",
                                                   "summary.add_session_log",
                                                   "summary.flush"};

// Every kind of feed the plugin builds; all but "valid" must be refused.
const std::vector<std::string> kFeedKinds = {"valid",
                                             "null_view",
                                             "struct_size",
                                             "dtype",
                                             "rank",
                                             "null_shape",
                                             "negative_extent",
                                             "count_overflow",
                                             "byte_size",
                                             "stride_reach",
                                             "negative_stride",
                                             "stride_overflow",
                                             "null_data",
                                             "null_string",
                                             "string_strides",
                                             "bool_value",
                                             "null_name",
                                             "long_name",
                                             "accelerator",
                                             "unknown_device",
                                             "negative_device_id",
                                             "not_accepted",
                                             "conflict"};

TEST(PluginFuzz, EveryCallMatchesTheContractAndEveryRefusalIsLogged) {
  constexpr int kSeeds = 16;
  std::map<std::string, EntryCounts> totals;
  std::map<std::string, long> feed_totals;
  long before_runs = 0, before_run_failures = 0, after_run_errors = 0, cut_logs = 0;

  for (int seed = 1; seed <= kSeeds; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    // Even seeds also stop the job from a hook (request_stop may only be called once).
    const int64_t stop_at = seed % 2 == 0 ? 30 + seed : -1;
    TempDir out;
    const fs::path report_file = out / "report.txt";
    JobResult result;
    HookReport host_view;
    std::string log;
    {
      PluginHarness h({}, {"fuzzer"});
      h.workload.script().end_of_data_step = kSteps + 1;
      h.options.max_state_bytes = kStateLimit;
      h.add("fuzz", "fuzzer",
            {{"seed", std::to_string(seed)},
             {"calls_per_step", "40"},
             {"report", report_file.string()},
             {"stop_at_step", std::to_string(stop_at)},
             {"state_limit", std::to_string(kStateLimit)},
             {"job_log_level", std::to_string(HH_LOG_DEBUG)},  // the harness logs at debug
             {"workload_last_step", std::to_string(kSteps)},
             {"checkpoints", "2"},
             {"error_percent", "20"}},
            0, FailurePolicy::keep_going);
      result = h.run();
      host_view = h.runtime().reports().at(0);
      h.finish();  // destroy() writes the report's table
      log = h.log();
    }
    const FuzzReport r = read_report(report_file);
    ASSERT_TRUE(r.mismatches.has_value()) << "no table in the report:\n" << r.text;
    EXPECT_EQ(*r.mismatches, 0) << r.text;

    if (stop_at < 0) {
      EXPECT_EQ(result.outcome, Outcome::completed) << result.reason;
      EXPECT_EQ(result.global_step, kSteps);
    } else {
      EXPECT_EQ(result.outcome, Outcome::stopped) << result.reason;
      EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
      EXPECT_EQ(result.global_step, stop_at);
    }
    EXPECT_FALSE(host_view.disabled) << host_view.failure;

    // on_error = continue: every failure is counted, logged once, and the calls keep coming.
    const long failed_before = r.tally("before_run.failed");
    const long failed_after = r.tally("after_run.failed");
    EXPECT_EQ(host_view.callbacks["before_run"].calls,
              static_cast<uint64_t>(r.tally("before_run.calls")));
    EXPECT_EQ(host_view.callbacks["after_run"].calls,
              static_cast<uint64_t>(r.tally("after_run.calls")));
    EXPECT_EQ(host_view.callbacks["before_run"].failures, static_cast<uint64_t>(failed_before));
    EXPECT_EQ(host_view.callbacks["after_run"].failures, static_cast<uint64_t>(failed_after));
    EXPECT_EQ(r.tally("after_run.calls"), result.steps_run);
    EXPECT_EQ(count_occurrences(log, ") failed in before_run at global step "), failed_before);
    EXPECT_EQ(count_occurrences(log, ") failed in after_run at global step "), failed_after);
    EXPECT_EQ(count_occurrences(log, kContinued), failed_before + failed_after);
    ASSERT_EQ(static_cast<long>(r.failures.size()), failed_before);

    // A failed before_run's line gives the host's reason, naming what a refused call got wrong.
    for (const BeforeRunFailure& f : r.failures) {
      const std::string line =
          segment(log, ") failed in before_run at global step " + std::to_string(f.step) + ": ",
                  kContinued);
      bool named = false;
      for (const std::string& reason : f.reasons)
        named = named || line.find(reason) != std::string::npos;
      EXPECT_TRUE(named) << "step " << f.step << ": the failure line names none of "
                         << ::testing::PrintToString(f.reasons) << ":\n"
                         << line.substr(0, 400);
    }

    // A message without a terminator is cut at the buffer's end: exactly its 1024 bytes, then
    // the host's own text.
    const std::vector<ReturnedError> errors = read_returned_errors(out / "report.txt.errors");
    EXPECT_EQ(static_cast<long>(errors.size()), failed_after);
    for (const ReturnedError& e : errors)
      EXPECT_THAT(log, HasSubstr(") failed in after_run at global step " + std::to_string(e.step) +
                                 ": " + e.message + code_suffix(e.code) + kContinued))
          << "step " << e.step;

    // Logged messages land at their clamped level, and only at levels the logger writes.
    const char* const kLevels[] = {"trace", "debug", "info", "warning", "error"};
    for (const char* level : kLevels)
      EXPECT_EQ(count_occurrences(log, std::string("[fuzz] [") + level + "] <fz-log>"),
                r.tally(std::string("log.") + level))
          << level;
    EXPECT_EQ(count_occurrences(log, "... [cut at 65536 of "), r.tally("log.cut"));

    // Refusals that have no status to carry a message are logged, naming what was wrong.
    EXPECT_EQ(count_occurrences(log, "state_put refused: "),
              r.tally("refusal_lines.state_put_over_limit"));
    EXPECT_EQ(count_occurrences(log, "state_put with NULL data and size "),
              r.tally("refusal_lines.state_put_null_data"));
    EXPECT_EQ(count_occurrences(log, "publish_last_step with a negative step "),
              r.tally("refusal_lines.publish_negative"));
    EXPECT_THAT(log, Not(HasSubstr("could not write the checkpoint")));
    EXPECT_THAT(log, Not(HasSubstr("internal error")));

    for (const auto& [name, c] : r.entries) {
      EntryCounts& t = totals[name];
      t.calls += c.calls;
      t.accepted += c.accepted;
      t.refused += c.refused;
      t.mismatches += c.mismatches;
    }
    for (const std::string& kind : kFeedKinds) {
      feed_totals[kind + ".calls"] += r.tally("feed." + kind + ".calls");
      feed_totals[kind + ".refused"] += r.tally("feed." + kind + ".refused");
    }
    before_runs += r.tally("before_run.calls");
    before_run_failures += failed_before;
    after_run_errors += failed_after;
    cut_logs += r.tally("log.cut");
  }

  std::cout << std::left << std::setw(26) << "function" << std::right << std::setw(8) << "calls"
            << std::setw(10) << "accepted" << std::setw(9) << "refused" << std::setw(12)
            << "mismatches\n";
  for (const auto& [name, c] : totals)
    std::cout << std::left << std::setw(26) << name << std::right << std::setw(8) << c.calls
              << std::setw(10) << c.accepted << std::setw(9) << c.refused << std::setw(11)
              << c.mismatches << "\n";
  std::cout << "before_run: " << before_runs << " calls, " << before_run_failures
            << " failed; after_run errors returned: " << after_run_errors
            << "; log messages cut: " << cut_logs << "\n";

  // Coverage: the run proves something only if it went everywhere.
  for (const std::string& name : kFunctions) EXPECT_GT(totals[name].calls, 0) << name;
  for (const std::string& name : kTwoWayFunctions) {
    EXPECT_GT(totals[name].accepted, 0) << name;
    EXPECT_GT(totals[name].refused, 0) << name;
  }
  for (const std::string& kind : kFeedKinds) {
    EXPECT_GT(feed_totals[kind + ".calls"], 0) << kind;
    const long expected_refused = kind == "valid" ? 0 : feed_totals[kind + ".calls"];
    EXPECT_EQ(feed_totals[kind + ".refused"], expected_refused) << kind;
  }
  EXPECT_GT(before_run_failures, 0);
  EXPECT_LT(before_run_failures, before_runs);  // some before_runs succeed: values get checked
  EXPECT_GT(after_run_errors, 0);
  EXPECT_GT(cut_logs, 0);
}

// A hook's stop reason of any length reaches every hook's end() and the job's result, with at most
// HH_MAX_STOP_REASON bytes of it kept.
TEST(PluginFuzz, AStopReasonReachesEveryHooksEndCutToTheLimit) {
  constexpr int64_t kStopAt = 7;
  // The plugin picks the reason's kind from the seed: NULL, "", short, 1024 bytes, longer.
  for (int seed = 0; seed < 5; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    TempDir out;
    JobResult result;
    {
      PluginHarness h({}, {"fuzzer"});
      h.workload.script().end_of_data_step = kSteps + 1;
      h.options.max_state_bytes = kStateLimit;
      auto add = [&](const std::string& name, int order, int calls, int64_t stop_at) {
        h.add(name, "fuzzer",
              {{"seed", std::to_string(seed)},
               {"calls_per_step", std::to_string(calls)},
               {"report", (out / (name + ".txt")).string()},
               {"stop_at_step", std::to_string(stop_at)},
               {"state_limit", std::to_string(kStateLimit)},
               {"workload_last_step", std::to_string(kSteps)},
               {"error_percent", "0"}},
              order, FailurePolicy::keep_going);
      };
      // Watchers make no random calls, so the stopper's calls are the only ones that change the
      // shared state (published steps, checkpoints).
      add("watch_before", -1, 0, -1);
      add("stopper", 0, 20, kStopAt);
      add("watch_after", 1, 0, -1);
      result = h.run();
    }
    EXPECT_EQ(result.outcome, Outcome::stopped) << result.reason;
    EXPECT_EQ(result.stop_cause, HH_STOP_CAUSE_HOOK);
    EXPECT_EQ(result.global_step, kStopAt);
    const FuzzReport stopper = read_report(out / "stopper.txt");
    ASSERT_TRUE(stopper.mismatches.has_value()) << stopper.text;
    EXPECT_EQ(*stopper.mismatches, 0) << stopper.text;
    EXPECT_EQ(stopper.entries.at("host.request_stop").calls, 1);

    const std::optional<std::string> asked = read_stop_reason(out / "stopper.txt.stop");
    ASSERT_FALSE(result.reason.empty());
    if (asked && !asked->empty()) {
      const size_t kept = std::min<size_t>(asked->size(), HH_MAX_STOP_REASON);
      const std::string cut = asked->substr(0, kept) + (asked->size() > kept ? "..." : "");
      EXPECT_THAT(result.reason, HasSubstr(cut)) << asked->size() << " bytes asked";
      if (asked->size() > kept) {
        EXPECT_THAT(result.reason, Not(HasSubstr(asked->substr(0, kept + 1))));
      }
      // Room for the host's naming of the hook, nothing like the reason's full length.
      EXPECT_LE(result.reason.size(), HH_MAX_STOP_REASON + 3 + 64u);
    }
    for (const char* name : {"watch_before", "stopper", "watch_after"}) {
      const EndSeen end = read_end(out / (std::string(name) + ".txt.end"));
      EXPECT_EQ(end.outcome, HH_OUTCOME_STOPPED) << name;
      EXPECT_EQ(end.cause, HH_STOP_CAUSE_HOOK) << name;
      EXPECT_EQ(end.step, kStopAt) << name;
      EXPECT_EQ(end.reason, result.reason) << name;
    }
  }
}

// Runs the fuzzer with views whose struct_size is below the ABI 1.0 size and which are only as long
// as they say, right before an unreadable page. Returns the exit status for the death test below.
int run_fuzzer_with_short_views() {
  TempDir out;
  const fs::path report_file = out / "report.txt";
  long short_feeds = 0, refused = 0;
  for (int seed = 1; seed <= 3; ++seed) {
    {
      PluginHarness h({}, {"fuzzer"});
      h.workload.script().end_of_data_step = kSteps + 1;
      h.options.max_state_bytes = kStateLimit;
      h.add("fuzz", "fuzzer",
            {{"seed", std::to_string(seed)},
             {"report", report_file.string()},
             {"state_limit", std::to_string(kStateLimit)},
             {"workload_last_step", std::to_string(kSteps)},
             {"short_views", "true"}},
            0, FailurePolicy::keep_going);
      h.run();
    }
    const FuzzReport r = read_report(report_file);
    if (r.mismatches.value_or(-1) != 0) {
      std::fprintf(stderr, "seed %d:\n%s", seed, r.text.c_str());
      return 1;
    }
    short_feeds += r.tally("feed.struct_size.calls");
    refused += r.tally("feed.struct_size.refused");
  }
  if (short_feeds == 0 || refused != short_feeds) {
    std::fprintf(stderr, "%ld short views fed, %ld refused\n", short_feeds, refused);
    return 1;
  }
  return 0;
}

// value.h and docs/abi.md: a view with a struct_size below HH_TENSOR_SIZE_1_0 is refused, and a
// reader reads only the fields struct_size covers (version.h). In a child process, so that a fault
// fails this test alone.
TEST(PluginFuzzDeathTest, AViewShorterThanAbi10IsRefusedWithoutReadingPastItsStructSize) {
  EXPECT_EXIT(std::exit(run_fuzzer_with_short_views()), ::testing::ExitedWithCode(0), "");
}

// The hookhost program prints what a plugin hands it with control characters escaped: the
// unterminated error messages after_run returns appear cut at the buffer's end and escaped, and
// nothing the plugin logged reaches the terminal raw.
TEST(PluginFuzz, TheProgramPrintsUnterminatedErrorMessagesEscapedAndCut) {
  TempDir dir;
  const fs::path plugins = dir / "plugins";
  fs::create_directories(plugins);
  copy_plugin(fixture_plugin("fuzzer"), plugins);
  const fs::path report_file = dir / "report.txt";
  write_file(dir / "job.ini",
             "[run]\n"
             "run_dir = run\n"
             "max_state_mb = 1\n"
             "\n"
             "[workload]\n"
             "name = linreg\n"
             "epochs = 5\n"
             "\n"
             "[hook.fuzz]\n"
             "plugin = fuzzer\n"
             "on_error = continue\n"
             "seed = 11\n"
             "calls_per_step = 12\n"
             "report = " +
                 report_file.string() +
                 "\n"
                 "state_limit = 1048576\n"
                 "job_log_level = 2\n"
                 "feedable = \"\"\n"  // the workload checks fed values: feed none
                 "workload_last_step = 20\n"
                 "checkpoints = 1\n"
                 "error_percent = 50\n");
  ProcessResult r = run_hookhost(
      {"run", "--config", (dir / "job.ini").string(), "--plugin-dir", plugins.string()},
      dir.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const FuzzReport report = read_report(report_file);
  ASSERT_TRUE(report.mismatches.has_value()) << report.text;
  EXPECT_EQ(*report.mismatches, 0) << report.text;

  const std::vector<ReturnedError> errors = read_returned_errors(dir / "report.txt.errors");
  ASSERT_FALSE(errors.empty());
  for (const ReturnedError& e : errors)
    EXPECT_THAT(r.err, HasSubstr("failed in after_run at global step " + std::to_string(e.step) +
                                 ": " + escaped(e.message) + code_suffix(e.code) + kContinued))
        << "step " << e.step;
  for (const char c : r.err) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7f) {
      ADD_FAILURE() << "a raw control character " << static_cast<int>(byte) << " in the output";
      break;
    }
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
