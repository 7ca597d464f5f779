// The run's record and the run report (host/src/report/): the record written and read back (a
// torn last line included), scalars read from real event files, curves downsampled to the bound,
// NaN and inf, hostile text, an empty run, and the report's atomic write.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>

#include "report/downsample.hpp"
#include "report/event_series.hpp"
#include "report/report_html.hpp"
#include "report/run_record.hpp"
#include "report/svg_chart.hpp"
#include "storage/event_writer.hpp"
#include "storage/tfrecord_reader.hpp"
#include "test_support.hpp"

namespace hookhost {
namespace {
namespace HOOKHOST_TEST_FILE {
namespace fs = std::filesystem;

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::read_file;
using testing::TempDir;
using testing::write_file;

RecordedStart a_start(bool resume, int64_t step, std::string configuration = "[run] x = 1") {
  RecordedStart s;
  s.wall_time = 1700000000.5;
  s.resume = resume;
  s.global_step = step;
  s.configuration = std::move(configuration);
  s.plugins = {{"stop_at_step",
                "1.2.3",
                "/plugins/stop_at_step.so",
                std::string(64, 'a'),
                {"stop", "stop2"}}};
  s.hookhost_version = "1.0.0";
  return s;
}

RecordedCost a_cost(const std::string& hook) {
  RecordedCost c;
  c.wall_time = 1700000100;
  c.outcome = "stopped";
  c.reason = "hook 'stop': reached the step limit";
  c.global_step = 300;
  c.steps_run = 300;
  c.wall_time_s = 2.0;
  c.hooks = {{hook,
              "stop_at_step",
              true,
              "after_run failed: <boom>",
              {{"after_run", 300, 5, 1, 5000, 900, 1500, 1600},
               {"begin", 1, 1, 0, 40000, 40000, 40000, 40000}}}};
  return c;
}

// The N of every chart's <path ... data-points="N">, in page order.
std::vector<std::size_t> drawn_counts(const std::string& html) {
  std::vector<std::size_t> out;
  const std::regex re(R"re(<path class="curve" data-points="(\d+)")re");
  for (std::sregex_iterator it(html.begin(), html.end(), re), end; it != end; ++it)
    out.push_back(std::stoul((*it)[1]));
  return out;
}

// The N each curve's note states it draws: "N points, all shown" or "shown as N:".
std::vector<std::size_t> stated_counts(const std::string& html) {
  std::vector<std::size_t> out;
  const std::regex re(R"re(<p class="note">([\d,]+) points?, (all shown|shown as ([\d,]+):))re");
  for (std::sregex_iterator it(html.begin(), html.end(), re), end; it != end; ++it) {
    std::string n = (*it)[3].matched ? (*it)[3].str() : (*it)[1].str();
    n.erase(std::remove(n.begin(), n.end(), ','), n.end());
    out.push_back(std::stoul(n));
  }
  return out;
}

// ---- the record ---------------------------------------------------------------------------------

TEST(RunRecord, RoundTripKeepsEveryFieldAndIgnoresATornLastLine) {
  TempDir dir;
  const auto file = dir / kRunRecordFile;
  {
    RunRecordWriter writer(file);
    writer.write(a_start(false, 0, "line one\n  [hook.a] x = \"<&>\"'"));
    writer.write(RecordedEvent{1700000001, "checkpoint", 100, "", "ckpt-100\nsecond line"});
    writer.write(RecordedEvent{1700000002, "disable", 150, "h\"ook", "before_run failed: x"});
    writer.write(a_cost("stop"));
  }
  // A job killed in the middle of its next line.
  {
    std::ofstream out(file, std::ios::app | std::ios::binary);
    out << R"({"wall_time":1700000200,"event":{"kind":"stop","glo)";
  }
  const RunRecord record = read_run_record(file);
  EXPECT_TRUE(record.torn_last_line);
  EXPECT_TRUE(record.bad_lines.empty());
  EXPECT_EQ(record.lines, 5u);
  ASSERT_EQ(record.starts.size(), 1u);
  EXPECT_FALSE(record.starts[0].resume);
  EXPECT_EQ(record.starts[0].configuration, "line one\n  [hook.a] x = \"<&>\"'");
  EXPECT_DOUBLE_EQ(record.starts[0].wall_time, 1700000000.5);
  ASSERT_EQ(record.starts[0].plugins.size(), 1u);
  EXPECT_EQ(record.starts[0].plugins[0].sha256, std::string(64, 'a'));
  EXPECT_THAT(record.starts[0].plugins[0].hooks, ::testing::ElementsAre("stop", "stop2"));
  ASSERT_EQ(record.events.size(), 2u);
  EXPECT_EQ(record.events[0].kind, "checkpoint");
  EXPECT_EQ(record.events[0].global_step, 100);
  EXPECT_EQ(record.events[0].text, "ckpt-100\nsecond line");
  EXPECT_EQ(record.events[1].hook, "h\"ook");
  ASSERT_EQ(record.costs.size(), 1u);
  const RecordedCallbackCost& after_run = record.costs[0].hooks[0].callbacks[0];
  EXPECT_EQ(after_run.calls, 300u);
  EXPECT_EQ(after_run.timed_calls, 5u);
  EXPECT_EQ(after_run.p50_ns, 900);
  EXPECT_EQ(after_run.p99_ns, 1500);
  EXPECT_EQ(after_run.max_ns, 1600);
  EXPECT_TRUE(record.costs[0].hooks[0].disabled);
  // One JSON object per line: the newline inside a text is escaped.
  EXPECT_EQ(testing::lines_of(file).size(), 5u);

  // A resumed job appends after the torn line, which then reads as a bad line in the middle.
  {
    RunRecordWriter writer(file);
    writer.write(a_start(true, 300));
  }
  const RunRecord resumed = read_run_record(file);
  EXPECT_FALSE(resumed.torn_last_line);
  ASSERT_EQ(resumed.bad_lines.size(), 1u);
  EXPECT_THAT(resumed.bad_lines[0], HasSubstr(kRunRecordFile + std::string(":5:")));
  ASSERT_EQ(resumed.starts.size(), 2u);
  EXPECT_TRUE(resumed.starts[1].resume);
  EXPECT_EQ(resumed.starts[1].global_step, 300);
  EXPECT_EQ(resumed.events.size(), 2u);
}

TEST(RunRecord, EmptyFileReadsAsNothingAndAMissingOneNamesItself) {
  TempDir dir;
  write_file(dir / kRunRecordFile, "");
  const RunRecord record = read_run_record(dir / kRunRecordFile);
  EXPECT_EQ(record.lines, 0u);
  EXPECT_FALSE(record.torn_last_line);
  try {
    read_run_record(dir / "missing.jsonl");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("missing.jsonl"));
  }
}

// ---- scalars from event files
// --------------------------------------------------------------------

TEST(EventSeries, ReadsScalarsOfEveryFolderFromRealEventFilesAndStopsAtATornTail) {
  TempDir dir;
  fs::path sub_file;
  {
    EventFileWriter top(dir.path());
    EventFileWriter sub(dir / "hooks" / "eval");
    for (int step = 99; step >= 0; --step)  // out of order: read back in step order
      top.add_scalar(step, "loss", static_cast<float>(step) * 0.5f);
    top.add_scalar(7, "learning_rate", 0.1f);
    sub.add_scalar(3, "accuracy", 0.75f);
    top.add_session_log(100, 3, "checkpoints/model.ckpt-100");
    top.flush();
    sub.flush();
    sub_file = sub.file();
  }
  {
    std::ofstream out(sub_file, std::ios::app | std::ios::binary);
    out << std::string("\x30\x00\x00\x00\x00", 5);  // half a record's header
  }
  const EventScan scan = read_scalar_series(dir.path());
  EXPECT_EQ(scan.files, 2u);
  ASSERT_EQ(scan.series.size(), 3u);
  EXPECT_EQ(scan.series[0].tag, "loss");  // the loss first
  ASSERT_EQ(scan.series[0].points.size(), 100u);
  EXPECT_EQ(scan.series[0].points.front().step, 0);
  EXPECT_EQ(scan.series[0].points.back().step, 99);
  EXPECT_FLOAT_EQ(scan.series[0].points.back().value, 49.5f);
  EXPECT_EQ(scan.series[1].title(), "learning_rate");
  EXPECT_EQ(scan.series[2].title(), "accuracy (hooks/eval)");
  EXPECT_FLOAT_EQ(scan.series[2].points.at(0).value, 0.75f);
  ASSERT_EQ(scan.problems.size(), 1u);
  EXPECT_THAT(scan.problems[0], AllOf(HasSubstr(sub_file.string()), HasSubstr("torn")));
}

// The report reads with the host's rights: a link a hook planted in its folder, to a file or to a
// folder, is not followed, so the events it names stay out of the report.
TEST(EventSeries, ALinkedEventFileOrFolderIsNotRead) {
  TempDir dir;
  TempDir elsewhere;  // another run's events, say, which the hook may not read
  fs::path theirs;
  {
    EventFileWriter own(dir / "hooks" / "h");
    own.add_scalar(1, "loss", 0.5f);
    own.flush();
    EventFileWriter other(elsewhere.path());
    other.add_scalar(1, "secret", 42.0f);
    other.flush();
    theirs = other.file();
  }
  fs::create_symlink(theirs, dir / "hooks" / "h" / "events.out.tfevents.1.linked");
  fs::create_directory_symlink(elsewhere.path(), dir / "hooks" / "h" / "linked_folder");
  const EventScan scan = read_scalar_series(dir.path());
  EXPECT_EQ(scan.files, 1u);
  ASSERT_EQ(scan.series.size(), 1u);
  EXPECT_EQ(scan.series[0].tag, "loss");
  EXPECT_TRUE(scan.problems.empty());
  // A file named as one, opened directly, is not read through a link either.
  EventScan direct;
  read_event_file(dir / "hooks" / "h" / "events.out.tfevents.1.linked", "h", direct);
  EXPECT_TRUE(direct.series.empty());
  EXPECT_EQ(direct.problems.size(), 1u);
}

// A record header declaring `length` bytes, with the length's checksum right, so only the length
// itself is wrong.
std::string header_declaring(uint64_t length) {
  std::string header;
  for (int i = 0; i < 8; ++i) header.push_back(static_cast<char>(length >> (8 * i)));
  const uint32_t crc = masked_crc32c(header);
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>(crc >> (8 * i)));
  return header;
}

// Every length an event file declares is checked against the bytes left in the file and a
// maximum before anything is allocated (a hook can write an event file in its own folder): each
// hostile length is a problem naming the file and the record's byte, and the records before it
// are read.
TEST(EventSeries, AHostileRecordLengthIsAProblemNamingFileAndOffsetNeverAnAllocation) {
  struct Case {
    const char* name;
    uint64_t length;      // 0: the file's size + 1, known once it is written
    uint64_t pad;         // bytes after the header (sparse)
    const char* problem;  // what the problem says
  };
  const Case cases[] = {
      {"2^63", uint64_t{1} << 63, 16, "more than a record may hold"},
      {"2^64 - 1", ~uint64_t{0}, 16, "more than a record may hold"},
      {"the file's size + 1", 0, 16, "is torn: it declares "},
      {"one byte past the end", 17, 16, "is torn: it declares 17 bytes of data, 16 are left"},
      {"over the maximum, in a file that holds it", kMaxTfRecordBytes + 1, kMaxTfRecordBytes + 64,
       "more than a record may hold"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    TempDir dir;
    fs::path file;
    {
      EventFileWriter writer(dir / "hooks" / "x");
      writer.add_scalar(1, "loss", 0.5f);
      writer.add_scalar(2, "loss", 0.25f);
      writer.flush();
      file = writer.file();
    }
    const uint64_t at = fs::file_size(file);
    {
      std::ofstream out(file, std::ios::app | std::ios::binary);
      out << header_declaring(c.length ? c.length : at + 12 + c.pad + 1);
    }
    fs::resize_file(file, at + 12 + c.pad);  // sparse: no disk for the big one
    const EventScan scan = read_scalar_series(dir.path());
    ASSERT_EQ(scan.series.size(), 1u);
    EXPECT_EQ(scan.series[0].points.size(), 2u);
    ASSERT_EQ(scan.problems.size(), 1u);
    EXPECT_THAT(scan.problems[0],
                AllOf(HasSubstr(file.string()),
                      HasSubstr("the record at byte " + std::to_string(at)), HasSubstr(c.problem)));
    // The writer that reopens such a file cuts it back to its whole records.
    EXPECT_EQ(truncate_to_last_whole_record(file), 12 + c.pad);
    EXPECT_EQ(fs::file_size(file), at);
  }
}

// A run record's line is read up to a bound: a longer one is skipped, named by its line and byte,
// and the lines around it are read.
TEST(RunRecord, ALineOverTheBoundIsSkippedAndNamedWithItsOffset) {
  TempDir dir;
  const fs::path file = dir / "run-record.jsonl";
  { RunRecordWriter(file).write(a_start(false, 0)); }
  const uint64_t at = fs::file_size(file);
  {
    std::ofstream out(file, std::ios::app | std::ios::binary);
    out << "{\"event\":{\"text\":\"" << std::string(3 << 20, 'x') << "\"}}\n";
  }
  { RunRecordWriter(file).write(a_start(true, 5)); }
  const RunRecord record = read_run_record(file);
  ASSERT_EQ(record.starts.size(), 2u);
  EXPECT_EQ(record.starts[1].global_step, 5);
  ASSERT_EQ(record.bad_lines.size(), 1u);
  EXPECT_THAT(record.bad_lines[0],
              AllOf(HasSubstr(file.string() + ":2: a line of more than 1048576 bytes at byte " +
                              std::to_string(at)),
                    HasSubstr("skipped")));
  EXPECT_FALSE(record.torn_last_line);
}

// ---- downsampling
// ---------------------------------------------------------------------------------

TEST(Downsample, TenMillionPointsFitTheBoundAndKeepTheirSpikes) {
  constexpr std::size_t kPoints = 10'000'000;
  std::vector<ScalarPoint> points(kPoints);
  for (std::size_t i = 0; i < kPoints; ++i)
    points[i] = ScalarPoint{static_cast<int64_t>(i), static_cast<float>(i % 97) * 0.01f};
  points[7'654'321].value = 1e6f;  // one step's spike
  points[1'234'567].value = -1e6f;
  points[kPoints - 1].value = 5e5f;  // the very last point, alone at its bucket's end
  const DownsampledCurve curve = downsample_min_max(points);
  EXPECT_EQ(curve.points.size(), kMaxCurvePoints);
  EXPECT_EQ(curve.finite_points, kPoints);
  EXPECT_EQ(curve.bucket_size, 10'000u);
  EXPECT_EQ(curve.description(),
            "10,000,000 points, shown as 2,000: min and max of each 10,000 consecutive points");
  auto has = [&](int64_t step, float value) {
    return std::any_of(curve.points.begin(), curve.points.end(),
                       [&](const ScalarPoint& p) { return p.step == step && p.value == value; });
  };
  EXPECT_TRUE(has(7'654'321, 1e6f));
  EXPECT_TRUE(has(1'234'567, -1e6f));
  EXPECT_TRUE(has(kPoints - 1, 5e5f));
  EXPECT_TRUE(std::is_sorted(curve.points.begin(), curve.points.end(),
                             [](const auto& a, const auto& b) { return a.step < b.step; }));
  // The chart draws what the note states.
  const std::string svg = curve_svg(curve, "loss");
  EXPECT_EQ(drawn_counts(svg), std::vector<std::size_t>{kMaxCurvePoints});
}

TEST(Downsample, AtTheBoundEveryPointIsDrawnAndOneMoreIsBucketed) {
  std::vector<ScalarPoint> points;
  for (int i = 0; i < 2000; ++i) points.push_back({i, static_cast<float>(i)});
  const DownsampledCurve exact = downsample_min_max(points);
  EXPECT_EQ(exact.points.size(), 2000u);
  EXPECT_EQ(exact.bucket_size, 0u);
  EXPECT_EQ(exact.description(), "2,000 points, all shown");
  points.push_back({2000, 2000.0f});
  const DownsampledCurve over = downsample_min_max(points);
  EXPECT_LE(over.points.size(), 2000u);
  EXPECT_GT(over.bucket_size, 1u);
  EXPECT_EQ(over.points.back().value, 2000.0f);  // the last point survives
  const DownsampledCurve one = downsample_min_max(std::vector<ScalarPoint>{{5, 1.0f}});
  EXPECT_EQ(one.description(), "1 point, shown");
  EXPECT_EQ(drawn_counts(curve_svg(one, "x")), std::vector<std::size_t>{1});
}

TEST(Downsample, NanAndInfinityAreSkippedCountedAndNeverReachTheSvg) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<ScalarPoint> points = {{0, 1.0f}, {1, nan}, {2, inf}, {3, -inf}, {4, 2.0f}};
  const DownsampledCurve curve = downsample_min_max(points);
  EXPECT_EQ(curve.points.size(), 2u);
  EXPECT_EQ(curve.skipped_non_finite, 3u);
  EXPECT_EQ(curve.description(), "2 points, all shown; 3 NaN or infinite values skipped");
  const std::string svg = curve_svg(curve, "loss");
  EXPECT_THAT(svg, AllOf(Not(HasSubstr("nan")), Not(HasSubstr("inf")), HasSubstr("<path")));

  const DownsampledCurve none = downsample_min_max(std::vector<ScalarPoint>{{0, nan}});
  RunRecord record;
  EventScan scan;
  scan.series.push_back(ScalarSeries{".", "loss", {{0, nan}, {1, inf}}});
  const std::string html = render_report_html("run", record, scan);
  EXPECT_THAT(html, AllOf(HasSubstr("every value is NaN or infinite"),
                          HasSubstr("2 NaN or infinite values skipped"), Not(HasSubstr("<path"))));
  EXPECT_TRUE(none.points.empty());
}

// ---- the page
// ------------------------------------------------------------------------------------

TEST(ReportHtml, EverythingFromTheRunIsEscaped) {
  const std::string hostile = "<script>alert('x')</script>&\"";
  RunRecord record;
  record.starts.push_back(a_start(false, 0, "[hook." + hostile + "] plugin = x"));
  record.starts[0].plugins[0].id = hostile;
  record.starts[0].plugins[0].hooks = {hostile};
  record.events.push_back(RecordedEvent{1700000001, "disable", 5, hostile, hostile});
  record.events.push_back(RecordedEvent{1700000002, hostile, 6, "", ""});
  record.costs.push_back(a_cost(hostile));
  EventScan scan;
  scan.series.push_back(ScalarSeries{hostile, hostile, {{0, 1.0f}, {1, 2.0f}}});
  const std::string html = render_report_html(hostile, record, scan);
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("alert('x')")));
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"));
  EXPECT_GE(testing::count_occurrences(html, "&lt;script&gt;"), 8);
  EXPECT_EQ(drawn_counts(html), stated_counts(html));
}

TEST(ReportHtml, StatesWhatItDrawsForEveryCurve) {
  RunRecord record;
  record.starts.push_back(a_start(false, 0));
  EventScan scan;
  std::vector<ScalarPoint> long_curve;
  for (int i = 0; i < 12345; ++i) long_curve.push_back({i, static_cast<float>(i % 10)});
  scan.series.push_back(ScalarSeries{".", "loss", long_curve});
  scan.series.push_back(ScalarSeries{".", "lr", {{0, 0.1f}, {10, 0.2f}, {20, 0.3f}}});
  const std::string html = render_report_html("run", record, scan);
  const auto drawn = drawn_counts(html);
  ASSERT_EQ(drawn.size(), 2u);
  EXPECT_EQ(drawn, stated_counts(html));
  EXPECT_LE(drawn[0], kMaxCurvePoints);
  EXPECT_EQ(drawn[1], 3u);
  EXPECT_THAT(html, HasSubstr("12,345 points, shown as"));
  // Self-contained: nothing is fetched and nothing runs.
  EXPECT_THAT(html, AllOf(Not(HasSubstr("<script")), Not(HasSubstr("src=")),
                          Not(HasSubstr("@import")), Not(HasSubstr("url("))));
}

TEST(ReportHtml, AnEmptyRunSaysWhatIsMissing) {
  TempDir dir;
  {
    RunRecordWriter writer(dir / kRunRecordFile);
    writer.write(a_start(false, 0));
  }
  const WrittenReport written = write_run_report(dir.path());
  EXPECT_EQ(written.curves, 0u);
  const std::string html = read_file(dir / kReportFile);
  EXPECT_THAT(html, AllOf(HasSubstr("No scalar summaries"), HasSubstr("has no cost line"),
                          HasSubstr("started at global step 0"), Not(HasSubstr("<path"))));
}

// A share estimated from too few timed calls can exceed the run: the page says so, for that hook
// alone, and how to time every call.
TEST(ReportHtml, AnEstimateAboveTheRunsWallTimeIsExplained) {
  TempDir dir;
  {
    RunRecordWriter writer(dir / kRunRecordFile);
    writer.write(a_start(false, 0));
    RecordedCost cost = a_cost("modest");  // 300 x 900 ns: well inside 2 s
    cost.hooks.push_back({"first_call_slow",
                          "summary_saver",
                          false,
                          "",
                          {{"after_run", 60, 1, 0, 964'000'000, 964'000'000, 964'000'000,
                            964'000'000}}});  // 60 x 0.964 s estimated, in a 2 s run
    writer.write(cost);
  }
  write_run_report(dir.path());
  const std::string html = read_file(dir / kReportFile);
  EXPECT_THAT(html, HasSubstr("first_call_slow: the estimate exceeds the run's wall time, from 1 "
                              "timed calls of 60 ([run] time_every_n_steps = 1 times every "
                              "call)"));
  EXPECT_THAT(html, Not(HasSubstr("modest: the estimate exceeds")));
}

// The time the steps waited for the disk (checkpoint_wait) is kept in the record and shown apart
// from the hooks' cost; a run that never waited says nothing of it.
TEST(ReportHtml, TheStepsWaitForCheckpointWritesIsShownApartFromTheHooks) {
  TempDir dir;
  {
    RunRecordWriter writer(dir / kRunRecordFile);
    writer.write(a_start(false, 0));
    RecordedCost cost = a_cost("modest");
    cost.checkpoint_waits = 3;
    cost.checkpoint_wait_ns = 1'500'000'000;
    writer.write(cost);
  }
  const RunRecord record = read_run_record(dir / kRunRecordFile);
  ASSERT_EQ(record.costs.size(), 1u);
  EXPECT_EQ(record.costs[0].checkpoint_waits, 3u);
  EXPECT_EQ(record.costs[0].checkpoint_wait_ns, 1'500'000'000);
  write_run_report(dir.path());
  const std::string html = read_file(dir / kReportFile);
  EXPECT_THAT(html, HasSubstr("Checkpoints: the step waited for the previous write 3 times, "));
  EXPECT_THAT(html, HasSubstr(" in all: the disk's time, not the hooks'."));

  TempDir none;
  {
    RunRecordWriter writer(none / kRunRecordFile);
    writer.write(a_start(false, 0));
    writer.write(a_cost("modest"));
  }
  write_run_report(none.path());
  EXPECT_THAT(read_file(none / kReportFile), Not(HasSubstr("waited for the previous write")));
}

// A timeline of more than 500 events shows the first 200 and the last 300 and says how many it
// leaves out (operations.md); one of 500 shows them all.
TEST(ReportHtml, ALongTimelineShowsItsFirst200AndLast300EventsAndCountsTheRest) {
  auto page_of = [](int checkpoints) {
    RunRecord record;
    record.starts.push_back(a_start(false, 0));  // the timeline's first row
    for (int i = 1; i <= checkpoints; ++i)
      record.events.push_back(
          RecordedEvent{1700000001.0 + i, "checkpoint", i, "", "ckpt-" + std::to_string(i) + "."});
    return render_report_html("run", record, EventScan{});
  };
  const std::string html = page_of(1000);  // 1001 rows
  EXPECT_THAT(html, HasSubstr("501 more events not shown (all are in run-record.jsonl)"));
  EXPECT_THAT(html,
              AllOf(HasSubstr("ckpt-1."), HasSubstr("ckpt-199."), Not(HasSubstr("ckpt-200.")),
                    Not(HasSubstr("ckpt-700.")), HasSubstr("ckpt-701."), HasSubstr("ckpt-1000.")));
  const std::string all = page_of(499);  // 500 rows
  EXPECT_THAT(all, AllOf(HasSubstr("ckpt-499."), Not(HasSubstr("more events not shown"))));
}

// The configuration as run appears once for each start whose configuration differs from the one
// before; the plugins are listed with the SHA-256 of their bytes.
TEST(ReportHtml, EachDifferentConfigurationOnceAndThePluginsWithTheirSha256) {
  RunRecord record;
  record.starts.push_back(a_start(false, 0, "[run] first = 1"));
  record.starts.push_back(a_start(true, 10, "[run] first = 1"));  // the same: not again
  record.starts.push_back(a_start(true, 20, "[run] second = 2"));
  record.starts.push_back(a_start(true, 30, "[run] first = 1"));  // differs from the one before
  const std::string html = render_report_html("run", record, EventScan{});
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto at = html.find(needle); at != std::string::npos; at = html.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("<pre>[run] first = 1</pre>"), 2u);
  EXPECT_EQ(count("<pre>[run] second = 2</pre>"), 1u);
  EXPECT_THAT(html, Not(HasSubstr("at global step 10</h3>")));
  EXPECT_THAT(html,
              AllOf(HasSubstr("at global step 20</h3>"), HasSubstr("at global step 30</h3>")));
  EXPECT_THAT(html, AllOf(HasSubstr(std::string(64, 'a')), HasSubstr("/plugins/stop_at_step.so"),
                          HasSubstr("stop, stop2")));
}

// A record written by a newer hookhost, with fields this one does not know, is read: the unknown
// fields are ignored (operations.md), not a bad line.
TEST(RunRecord, UnknownFieldsOfANewerHookhostAreIgnored) {
  TempDir dir;
  const fs::path file = dir / kRunRecordFile;
  {
    RunRecordWriter writer(file);
    writer.write(a_start(false, 0));
    writer.write(RecordedEvent{1700000001, "checkpoint", 100, "", "ckpt-100"});
  }
  std::vector<std::string> lines = testing::lines_of(file);
  ASSERT_EQ(lines.size(), 2u);
  std::string text;
  for (std::string& line : lines) {
    ASSERT_EQ(line.front(), '{');
    text += "{\"a_field_from_the_future\":{\"x\":[1,2]},\"another\":\"y\"," + line.substr(1) + "\n";
  }
  write_file(file, text);
  const RunRecord record = read_run_record(file);
  EXPECT_TRUE(record.bad_lines.empty()) << ::testing::PrintToString(record.bad_lines);
  ASSERT_EQ(record.starts.size(), 1u);
  EXPECT_EQ(record.starts[0].plugins.at(0).sha256, std::string(64, 'a'));
  ASSERT_EQ(record.events.size(), 1u);
  EXPECT_EQ(record.events[0].text, "ckpt-100");
}

TEST(ReportHtml, WrittenAtomicallyReplacingAnOldReportAndNamingAMissingRecord) {
  TempDir dir;
  write_file(dir / kReportFile, "old report");
  try {
    write_run_report(dir.path());
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr((dir / kRunRecordFile).string()));
  }
  EXPECT_EQ(read_file(dir / kReportFile), "old report");  // untouched by a failed write

  {
    RunRecordWriter writer(dir / kRunRecordFile);
    writer.write(a_start(false, 0));
    writer.write(a_cost("stop"));
  }
  {
    std::ofstream out(dir / kRunRecordFile, std::ios::app);
    out << "{\"wall_ti";  // torn
  }
  const WrittenReport written = write_run_report(dir.path());
  EXPECT_EQ(written.file, dir / kReportFile);
  const std::string html = read_file(dir / kReportFile);
  EXPECT_THAT(html, AllOf(HasSubstr("<!DOCTYPE html>"), HasSubstr("</html>"),
                          HasSubstr("last line was cut short"), HasSubstr("p99")));
  EXPECT_FALSE(fs::exists(dir / (std::string(kReportFile) + ".tmp")));
  ASSERT_EQ(written.notes.size(), 1u);
  EXPECT_THAT(written.notes[0], HasSubstr("torn"));

  // Another output file, in a folder that does not exist: the error names it.
  try {
    write_run_report(dir.path(), dir / "no" / "such" / "r.html");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("r.html.tmp"));
  }
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost
