// The runtime at its edges, through the real runtime and real plugin files: tensor names of every
// length a hook may use (in process and with isolation = process), the global step create() sees
// on a resumed job, a C++ exception escaping create(), and a refused instance whose thread goes on
// calling the host after the runtime is gone.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/hookhost.h>

#include <hookhost/testing.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "process.hpp"
#include "test_support.hpp"

namespace hookhost::testing {
namespace {
namespace HOOKHOST_TEST_FILE {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::SizeIs;

// A name of exactly `length` bytes, starting with `lead`, that looks like a real model's.
std::string name_of_length(char lead, size_t length) {
  std::string name(1, lead);
  const std::string pattern = "/layer4.1.conv2.weight_norm";
  while (name.size() < length) name += pattern[name.size() % pattern.size()];
  name.resize(length);
  return name;
}

const char* tier_name(Isolation where) {
  return where == Isolation::process ? "process" : "in_process";
}

class TensorNames : public ::testing::TestWithParam<std::tuple<size_t, Isolation>> {};

// A hook fetches one value and feeds another by names of this length: after_run finds both by
// name, with the values of this step, and the views are named as asked.
TEST_P(TensorNames, AfterRunFindsFetchedAndFedValuesByName) {
  const auto [length, where] = GetParam();
  TempDir dir;
  const fs::path trace = dir / "trace.txt";
  const std::string fetched = name_of_length('f', length);
  const std::string fed = name_of_length('g', length);
  ASSERT_NE(fetched, fed);
  HookTest t(fixture_plugin("name_probe"), "probe");
  t.set("trace", trace.string())
      .set("fetch", fetched)
      .set("feed", fed)
      .set("fetch_base", "0")
      .isolation(where)
      .steps(3)
      .value(fetched, [](int64_t step) { return Value(static_cast<double>(step)); })
      .value(fed, 0.0f)
      .feedable(fed);
  RunResult run = t.run();
  ASSERT_EQ(run.outcome, Outcome::completed) << run.log_text();
  EXPECT_FALSE(run.failure) << run.log_text();
  const std::vector<std::string> lines = starting_with(lines_of(trace), "after_run");
  ASSERT_THAT(lines, SizeIs(3)) << run.log_text();
  for (size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(lines[i], "after_run gs=" + std::to_string(i) + " fetch=ok feed=ok names=1 count=2");
  // The workload saw the full names too.
  EXPECT_THAT(run.fetched(2), ::testing::Contains(fetched));
  EXPECT_EQ(run.fed(2).count(fed), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    EveryLength, TensorNames,
    ::testing::Combine(::testing::Values(size_t{1}, size_t{15}, size_t{16}, size_t{17}, size_t{26},
                                         size_t{255}, size_t{HH_MAX_NAME_LENGTH}),
                       ::testing::Values(Isolation::in_process, Isolation::process)),
    [](const auto& info) {
      return "length" + std::to_string(std::get<0>(info.param)) + "_" +
             tier_name(std::get<1>(info.param));
    });

class TooLongName : public ::testing::TestWithParam<std::tuple<const char*, Isolation>> {};

// One byte over HH_MAX_NAME_LENGTH is refused in before_run, and the job goes on without the hook.
TEST_P(TooLongName, IsRefusedInBeforeRun) {
  const auto [key, where] = GetParam();
  TempDir dir;
  const std::string name = name_of_length('x', HH_MAX_NAME_LENGTH + 1);
  HookTest t(fixture_plugin("name_probe"), "probe");
  t.set("trace", (dir / "trace.txt").string())
      .set(key, name)
      .isolation(where)
      .steps(3)
      .value(name, 1.0f)
      .feedable(name);
  RunResult run = t.run();
  EXPECT_EQ(run.outcome, Outcome::completed) << run.log_text();
  ASSERT_TRUE(run.failure) << run.log_text();
  EXPECT_EQ(run.failure->callback, Callback::before_run);
  EXPECT_THAT(run.failure->message, HasSubstr(std::to_string(HH_MAX_NAME_LENGTH)))
      << run.log_text();
  EXPECT_TRUE(run.disabled);
  EXPECT_THAT(starting_with(lines_of(dir / "trace.txt"), "after_run"), SizeIs(0))
      << "after_run ran with a refused name";
}

INSTANTIATE_TEST_SUITE_P(FetchAndFeed, TooLongName,
                         ::testing::Combine(::testing::Values("fetch", "feed"),
                                            ::testing::Values(Isolation::in_process,
                                                              Isolation::process)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_" +
                                  tier_name(std::get<1>(info.param));
                         });

// A resumed job's hooks see the step it resumes at from create() on, in both tiers.
TEST(ResumedJob, CreateSeesTheRestoredGlobalStep) {
  for (Isolation where : {Isolation::in_process, Isolation::process}) {
    SCOPED_TRACE(tier_name(where));
    TempDir dir;
    const fs::path trace = dir / "trace.txt";
    HookTest t(fixture_plugin("name_probe"), "probe");
    t.set("trace", trace.string()).isolation(where).steps(3);
    RunResult first = t.run();
    ASSERT_EQ(first.outcome, Outcome::completed) << first.log_text();
    ASSERT_EQ(first.global_step, 3);
    t.steps(6).resume_from(first);
    RunResult resumed = t.run();
    ASSERT_EQ(resumed.outcome, Outcome::completed) << resumed.log_text();
    EXPECT_EQ(starting_with(lines_of(trace), "create"),
              (std::vector<std::string>{"create live=0", "create live=3"}));
  }
}

// A hand-written C++ plugin whose create() lets an exception escape: the refusal keeps its text
// and names its type, in both tiers.
TEST(CreateException, TheRefusalKeepsTheTextAndNamesTheType) {
  for (Isolation where : {Isolation::in_process, Isolation::process}) {
    SCOPED_TRACE(tier_name(where));
    HookTest t(fixture_plugin("create_thrower"), "thrower");
    t.isolation(where);
    EXPECT_THAT(t.configuration_error(),
                AllOf(HasSubstr("hook 'thrower' (plugin 'create_thrower'"),
                      HasSubstr("create_thrower: index 7 is past the end of 3 layers"),
                      HasSubstr("std::out_of_range")));
    t.set("what", "int");
    EXPECT_THAT(t.configuration_error(),
                AllOf(HasSubstr("unknown exception escaped create()"), HasSubstr("'int'")));
  }
}

// What the polling thread of orphan_poller last wrote, as "step=.. stop=.. service=.. run_dir=..",
// and how many polls it had made.
struct Poll {
  long polls = -1;
  std::string seen;
};
Poll last_poll(const fs::path& report) {
  std::error_code ec;
  if (!fs::exists(report, ec)) return {};
  const std::string text = read_file(report);
  const size_t space = text.find(' ');
  if (text.rfind("polls=", 0) != 0 || space == std::string::npos || text.back() != '\n') return {};
  return {std::stol(text.substr(6, space - 6)), text.substr(space + 1, text.size() - space - 2)};
}

// create() starts a thread that keeps calling the host and returns a hook the host refuses (no
// destroy), or an error. The runtime is gone once run() has thrown; the thread's calls are refused
// from then on (no step, no stop, no service, no run_dir) and never reach the freed runtime.
class OrphanedHost : public ::testing::TestWithParam<bool> {};

TEST_P(OrphanedHost, AThreadOfARefusedInstanceIsRefusedAfterTheRuntimeIsGone) {
  const bool create_fails = GetParam();
  TempDir dir;
  const fs::path report = dir / "report.txt";
  HookTest t(fixture_plugin("orphan_poller"), "poller");
  t.set("report", report.string()).set("fail", create_fails ? "true" : "false");
  t.start_at(7).steps(10);
  try {
    t.run();
    ADD_FAILURE() << "the instance was accepted";
  } catch (const ConfigError& e) {
    EXPECT_THAT(e.what(), HasSubstr(create_fails ? "create failed on purpose" : "without destroy"));
  }
  // Polls made after the runtime was destroyed.
  const long before = last_poll(report).polls;
  ASSERT_TRUE(
      wait_until([&] { return last_poll(report).polls > before + 3; }, std::chrono::seconds(30)));
  EXPECT_EQ(last_poll(report).seen, "step=0 stop=0 service=0 run_dir=0");
  write_file(report.string() + ".stop", "");
  EXPECT_TRUE(
      wait_until([&] { return fs::exists(report.string() + ".done"); }, std::chrono::seconds(30)));
}

INSTANTIATE_TEST_SUITE_P(CreateReturns, OrphanedHost, ::testing::Bool(), [](const auto& info) {
  return info.param ? std::string("an_error") : std::string("a_hook_without_destroy");
});

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
}  // namespace hookhost::testing
