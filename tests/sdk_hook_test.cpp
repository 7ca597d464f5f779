// The C++ SDK (<hookhost/hook.hpp>) as a built plugin sees it: Hook::implements decides at run time
// which overridden callbacks the host calls, and an exception escaping a callback reaches the host
// with its type and message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hookhost/testing.hpp>
#include <string>
#include <vector>

namespace {
namespace HOOKHOST_TEST_FILE {

namespace fs = std::filesystem;
using hookhost::Callback;
using hookhost::testing::HookTest;
using hookhost::testing::RunResult;
using ::testing::HasSubstr;
using Names = std::vector<std::string>;

fs::path fixture(const std::string& name) {
  return fs::path(HOOKHOST_FIXTURE_DIR) / (name + ".so");
}

TEST(SdkImplements, EveryOverriddenCallbackIsCalledByDefault) {
  HookTest t(fixture("sdk_choices"));
  t.steps(1);
  const RunResult run = t.run();
  EXPECT_EQ(run.trace(), (Names{"begin", "after_create_session", "before_run@1", "after_run@1",
                                "before_run@2", "end"}))
      << run.log_text();
}

TEST(SdkImplements, ACallbackTheHookSaysItDoesNotImplementIsNeverCalled) {
  HookTest t(fixture("sdk_choices"));
  t.set("skip", "before_run,end").steps(2);
  const RunResult run = t.run();
  EXPECT_EQ(run.trace(), (Names{"begin", "after_create_session", "after_run@1", "after_run@2"}))
      << run.log_text();
}

TEST(SdkImplements, EachCallbackCanBeLeftOutAlone) {
  const Names full = {"begin",       "after_create_session", "before_run@1",
                      "after_run@1", "before_run@2",         "end"};
  for (const std::string skipped :
       {"begin", "after_create_session", "before_run", "after_run", "end"}) {
    Names expected;
    for (const std::string& call : full)
      if (call.substr(0, call.find('@')) != skipped) expected.push_back(call);
    HookTest t(fixture("sdk_choices"));
    t.set("skip", skipped).steps(1);
    EXPECT_EQ(t.run().trace(), expected) << "skip=" << skipped;
  }
}

TEST(SdkExceptions, ALibraryExceptionIsNamedByItsDemangledTypeAndMessage) {
  HookTest t(fixture("sdk_choices"));
  t.set("throw_in", "after_run").steps(2);
  const RunResult run = t.run();
  ASSERT_TRUE(run.failure.has_value()) << run.log_text();
  EXPECT_EQ(run.failure->callback, Callback::after_run);
  EXPECT_EQ(run.failure->message, "std::out_of_range: map::at");
  EXPECT_THAT(run.log_text(), HasSubstr("std::out_of_range: map::at"));
}

TEST(SdkExceptions, TheTypeIsNamedInEveryCallback) {
  for (const char* callback : {"begin", "after_create_session", "before_run", "end"}) {
    HookTest t(fixture("sdk_choices"));
    t.set("throw_in", callback).steps(1);
    const RunResult run = t.run();
    ASSERT_TRUE(run.failure.has_value()) << callback;
    EXPECT_EQ(run.failure->message, "std::out_of_range: map::at") << callback;
  }
}

TEST(SdkExceptions, AHookhostErrorKeepsItsOwnMessageAlone) {
  HookTest t(fixture("sdk_choices"));
  t.set("throw_in", "after_run").set("throw_what", "error").steps(1);
  const RunResult run = t.run();
  ASSERT_TRUE(run.failure.has_value());
  EXPECT_EQ(run.failure->message, "the hook's own message");
}

}  // namespace HOOKHOST_TEST_FILE
}  // namespace
